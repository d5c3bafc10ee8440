/* ASCII, whatever the locale: HTTP's header names, tokens and white space
 * (RFC 9110) are ASCII, while <ctype.h> and strncasecmp follow the locale
 * a program set (with setlocale, in tr_TR.ISO-8859-9 "I" lowers to a
 * dotless i, so "X-ID" and "x-id" differ there). Internal. */
#ifndef RC_ASCII_H
#define RC_ASCII_H

#include <stddef.h>

static inline char rc__ascii_lower(char c)
{
  return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether a[0..n) and b[0..n) are equal but for the case of ASCII
 * letters. */
static inline int rc__ascii_ieq(const char *a, const char *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (rc__ascii_lower(a[i]) != rc__ascii_lower(b[i]))
      return 0;
  return 1;
}

/* HTTP's optional white space (OWS): a space or a horizontal tab. */
static inline int rc__is_ows(char c) { return c == ' ' || c == '\t'; }

#endif
