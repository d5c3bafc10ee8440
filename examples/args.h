/* The command-line values the example programs take (fetch, threads,
 * uvscan, scan and the benchmark), read one way everywhere: one copy, in
 * this header, so that no example accepts what another refuses. Each
 * function is static inline, so a program includes what it uses and
 * nothing more ("cc fetch.c ..." still builds fetch alone).
 *
 * The rules: a number is written in decimal digits, starting with a digit
 * (no white space, no sign unless said, no hex, no exponent, no "inf");
 * it must fit; a suffix is one letter right after the digits. Each
 * function returns 0 and sets *out, or returns -1 and leaves it. */
#ifndef EXAMPLES_ARGS_H
#define EXAMPLES_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "respchain.h"

/* Whether s is digits, with at most one '.' among or after them when
 * fraction is set ("1", "0.5", "2.", not ".5", "1e3", " 1" or "0x1"). */
static inline int args_decimal(const char *s, int fraction)
{
  size_t digits = strspn(s, "0123456789");
  if (digits == 0)
    return 0;
  if (fraction && s[digits] == '.')
    digits += 1 + strspn(s + digits + 1, "0123456789");
  return s[digits] == '\0';
}

/* A byte count: digits, then an optional k, m or g (powers of 1024). */
static inline int args_size(const char *s, size_t *out)
{
  size_t digits = strspn(s, "0123456789");
  unsigned shift = 0;
  switch (s[digits]) {
  case 'k':
  case 'K': shift = 10; break;
  case 'm':
  case 'M': shift = 20; break;
  case 'g':
  case 'G': shift = 30; break;
  default: break;
  }
  if (digits == 0 || s[digits + (shift ? 1 : 0)] != '\0')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, NULL, 10);
  if (errno || v > (unsigned long long)(SIZE_MAX >> shift))
    return -1;
  *out = (size_t)v << shift;
  return 0;
}

/* A whole number in [lo, hi]; a '-' may come first. */
static inline int args_long(const char *s, long lo, long hi, long *out)
{
  if (!args_decimal(s + (*s == '-'), 0))
    return -1;
  errno = 0;
  long v = strtol(s, NULL, 10);
  if (errno || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* A number in (0, hi], fractions allowed ("0.5"). */
static inline int args_positive(const char *s, double hi, double *out)
{
  if (!args_decimal(s, 1))
    return -1;
  double v = strtod(s, NULL);
  if (!(v > 0.0) || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Seconds, fractions allowed, as whole milliseconds, rounded up: a time
 * that is not 0 is at least 1 ms, since 0 means no limit to curl. */
static inline int args_seconds(const char *s, long *ms)
{
  if (!args_decimal(s, 1))
    return -1;
  double whole = strtod(s, NULL) * 1000.0;
  if (!(whole < (double)LONG_MAX))
    return -1;
  long v = (long)whole;
  *ms = v < whole ? v + 1 : v;
  return 0;
}

/* And one word the examples print: the name of a body's encoding
 * (rc_body_encoding), the same in every example, a word a script can
 * compare. */
static inline const char *example_encoding_name(rc_encoding e)
{
  switch (e) {
  case RC_ENC_DECODED: return "decoded";
  case RC_ENC_UNSUPPORTED: return "unsupported";
  case RC_ENC_NOT_DECODED: return "not-decoded";
  default: return "identity";
  }
}

#endif
