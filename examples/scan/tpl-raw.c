/* scan's templates: a raw request (scan(1), TEMPLATES) as nuclei reads one:
 * its @ lines (annotations), the request line, the header lines up to an
 * empty one, then the body. A text without a "\r\n" has its line breaks
 * made "\r\n" first, as nuclei does. Without unsafe: true, the request
 * line is split at its blanks (method, target, version), each header line
 * trimmed and split at its first colon (a later line of the same name
 * replaces an earlier one), and the body loses one final "\r\n" (not a
 * multipart one). With it, the request is what is written, and what curl
 * cannot send as written makes the template skipped. */
#include "tpl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One line of the text: [p, p + len) without its line break. bare: it
 * ends with "\n" alone in a text that has "\r\n" (nuclei sends it so). */
typedef struct text_line {
  const char *p, *next;
  size_t len;
  int broken, bare; /* broken: it has a line break */
} text_line;

static int next_line(const char *s, int crlf, text_line *l)
{
  if (!*s)
    return 0;
  size_t n = strcspn(s, "\n");
  l->p = s;
  l->broken = s[n] == '\n';
  l->next = s + n + l->broken;
  l->len = n && s[n - 1] == '\r' ? n - 1 : n;
  l->bare = crlf && l->broken && l->len == n;
  return 1;
}

/* p[0..*n) without leading and trailing blanks (Go's TrimSpace). */
static const char *trimmed(const char *p, size_t *n)
{
  while (*n && isspace((unsigned char)*p))
    p++, (*n)--;
  while (*n && isspace((unsigned char)p[*n - 1]))
    (*n)--;
  return p;
}

/* Whether p[0..n) is a token (RFC 9110), as Go wants of methods and
 * header names. */
static int token(const char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)p[i]) && !strchr("!#$%&'*+-.^_`|~", p[i]))
      return 0;
  return n > 0;
}

/* Whether word occurs in p[0..n), case aside when nocase. */
static int holds(const char *p, size_t n, const char *word, int nocase)
{
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= n; i++)
    if (nocase ? !strncasecmp(p + i, word, w) : !strncmp(p + i, word, w))
      return 1;
  return 0;
}

/* ---- Annotations -------------------------------------------------------- */

/* The @ lines nuclei acts on; it passes over any other. */
static const char *const ANNOTATIONS[] = {"Host", "tls-sni", "timeout"};

int tpl_annotation(const char *annotations, const char *name, const char **v, size_t *len)
{
  size_t n = strlen(name);
  for (const char *s = annotations; s && *s; s += strcspn(s, "\n"), s += *s == '\n')
    if (s[0] == '@' && !strncmp(s + 1, name, n) && s[n + 1] == ':') {
      *len = strcspn(s + n + 2, "\n");
      *v = trimmed(s + n + 2, len);
      return *len > 0;
    }
  return 0;
}

/* The leading @ lines: the first of each name nuclei reads (its regex
 * takes the first), onto out; @once into q. */
static const char *annotations(const char **s, int crlf, tpl_request *q, line *out)
{
  text_line l;
  while (**s == '@' && next_line(*s, crlf, &l)) {
    for (size_t i = 0; i < sizeof ANNOTATIONS / sizeof *ANNOTATIONS; i++) {
      size_t n = strlen(ANNOTATIONS[i]), len, seen;
      const char *v;
      if (l.len < n + 2 || strncmp(l.p + 1, ANNOTATIONS[i], n) || l.p[n + 1] != ':' ||
          tpl_annotation(out->p, ANNOTATIONS[i], &v, &seen))
        continue;
      len = l.len - n - 2;
      v = trimmed(l.p + n + 2, &len);
      if (!len)
        continue;
      if (!strcmp(ANNOTATIONS[i], "tls-sni") && len == 14 && !strncmp(v, "interactsh-url", 14))
        return "interactsh";
      printf_line(out, "@%s: %.*s\n", ANNOTATIONS[i], (int)len, v);
      put(out, "", 1);
      out->len--; /* terminated, for tpl_annotation */
    }
    size_t rest = l.len - 5;
    if (l.len >= 5 && !strncmp(l.p, "@once", 5) && (trimmed(l.p + 5, &rest), !rest))
      q->once = 1;
    *s = l.next;
  }
  return out->nomem ? "out of memory" : NULL;
}

/* ---- The request line --------------------------------------------------- */

/* nuclei's reading: the blank-separated fields, METHOD TARGET VERSION
 * (METHOD VERSION: the target's own path). */
static const char *safe_line(const text_line *l, tpl_request *q)
{
  const char *f[3];
  size_t fl[3], nf = 0;
  for (size_t i = 0; i < l->len;) {
    while (i < l->len && isspace((unsigned char)l->p[i]))
      i++;
    size_t from = i;
    while (i < l->len && !isspace((unsigned char)l->p[i]))
      i++;
    if (i > from && nf < 3)
      f[nf] = l->p + from, fl[nf] = i - from;
    nf += i > from;
  }
  if (nf == 2 && holds(f[1], fl[1], "HTTP", 0))
    f[2] = f[1], fl[2] = fl[1], fl[1] = 0, nf = 3;
  if (nf < 3 || !token(f[0], fl[0]))
    return "raw: request line";
  if (!(q->method = strndup(f[0], fl[0])) || !(q->paths[0] = strndup(f[1], fl[1])))
    return "out of memory";
  return NULL;
}

/* As written: curl sends METHOD SP TARGET SP HTTP/1.1, the target any
 * bytes (CURLOPT_REQUEST_TARGET). */
static const char *unsafe_line(const text_line *l, tpl_request *q)
{
  const char *sp = memchr(l->p, ' ', l->len);
  size_t m = sp ? (size_t)(sp - l->p) : 0;
  if (!m || memchr(l->p, '\t', m) || l->len < m + 10 || l->bare ||
      strncmp(l->p + l->len - 9, " HTTP/1.1", 9))
    return "unsafe: request line (curl sends METHOD TARGET HTTP/1.1)";
  if (!(q->method = strndup(l->p, m)) ||
      !(q->paths[0] = strndup(sp + 1, l->len - m - 10)))
    return "out of memory";
  return NULL;
}

/* ---- The header lines --------------------------------------------------- */

/* Whether header h is name (case aside) as curl finds it: name, then ':'
 * or ';'. */
static int curl_header(const char *h, const char *name)
{
  size_t n = strlen(name);
  return !strncasecmp(h, name, n) && (h[n] == ':' || h[n] == ';');
}

/* Header line l, trimmed, as "Name: value" into q: a later one of a name
 * replaces it. *multipart: a multipart Content-Type. */
static const char *safe_header(const text_line *l, tpl_request *q, int *multipart)
{
  size_t n = l->len, vn;
  const char *p = trimmed(l->p, &n), *colon = memchr(p, ':', n);
  if (!colon || !token(p, (size_t)(colon - p)))
    return "raw: header line";
  size_t name = (size_t)(colon - p);
  const char *v = (vn = n - name - 1, trimmed(colon + 1, &vn));
  *multipart |= holds(p, name, "Content-Type", 0) && holds(v, vn, "multipart/", 0);
  char *h = malloc(name + vn + 3);
  if (!h)
    return "out of memory";
  /* "Name;": curl sends "Name:" (with "Name:" it would send none). */
  snprintf(h, name + vn + 3, vn ? "%.*s: %.*s" : "%.*s;%.*s", (int)name, p, (int)vn, v);
  size_t i = 0; /* an earlier line of the name (as written) */
  while (i < q->nheaders &&
         (strncmp(q->headers[i], h, name) ||
          (q->headers[i][name] != ':' && q->headers[i][name] != ';')))
    i++;
  if (i < q->nheaders)
    free(q->headers[i]);
  q->headers[i] = h;
  q->nheaders += i == q->nheaders;
  return NULL;
}

/* Header line l as written. curl sends a line with a colon after a name
 * as it is; one of a blank value as "Name;" (sent "Name:"). */
static const char *unsafe_header(const text_line *l, tpl_request *q)
{
  const char *colon = memchr(l->p, ':', l->len);
  if (!colon || colon == l->p || l->bare)
    return "unsafe: header line (curl sends Name: value)";
  size_t vn = l->len - (size_t)(colon + 1 - l->p);
  trimmed(colon + 1, &vn);
  char *h = vn ? strndup(l->p, l->len) : strndup(l->p, (size_t)(colon + 1 - l->p));
  if (!h)
    return "out of memory";
  if (!vn)
    h[colon - l->p] = ';';
  q->headers[q->nheaders++] = h;
  if (curl_header(h, "Transfer-Encoding") && holds(h, strlen(h), "chunked", 1))
    return "unsafe: Transfer-Encoding: chunked (curl would chunk the body itself)";
  size_t hosts = 0;
  for (size_t i = 0; i < q->nheaders; i++)
    hosts += curl_header(q->headers[i], "Host");
  return hosts > 1 ? "unsafe: several Host headers (curl sends the first)" : NULL;
}

/* The header lines up to an empty one (*s after it: the body), or to the
 * end (*s NULL: no body). */
static const char *headers(const char **s, int crlf, tpl_request *q, int *multipart)
{
  size_t cap = 1;
  for (const char *c = *s; *c; c += strcspn(c, "\n"), c += *c == '\n')
    cap++;
  if (!(q->headers = calloc(cap, sizeof *q->headers)))
    return "out of memory";
  text_line l;
  while (next_line(*s, crlf, &l)) {
    size_t n = l.len;
    trimmed(l.p, &n);
    *s = l.next;
    if (!n && l.broken) {
      if (q->unsafe && (l.len || l.bare))
        return "unsafe: the line ending the head (curl sends an empty one)";
      return NULL;
    }
    const char *why = !n ? NULL : q->unsafe ? unsafe_header(&l, q) : safe_header(&l, q, multipart);
    if (why)
      return why;
  }
  *s = NULL;
  return q->unsafe ? "unsafe: no empty line after the head (curl ends a head with one)" : NULL;
}

/* ---- The request -------------------------------------------------------- */

/* The body after the head: its line breaks as the text's were made; one
 * final "\r\n" dropped unless unsafe or multipart. */
static const char *body(const char *s, int crlf, int keep_end, tpl_request *q)
{
  line b = {0};
  for (; *s; s++)
    put(&b, !crlf && *s == '\n' ? "\r\n" : s, !crlf && *s == '\n' ? 2 : 1);
  if (!keep_end && b.len >= 2 && !memcmp(b.p + b.len - 2, "\r\n", 2))
    b.len -= 2;
  put(&b, "", 1);
  if (b.nomem) {
    free(b.p);
    return "out of memory";
  }
  if (b.len > 1)
    q->body = b.p;
  else
    free(b.p);
  return NULL;
}

const char *tpl_raw(const char *text, tpl_request *q)
{
  int crlf = strstr(text, "\r\n") != NULL, multipart = 0;
  const char *s = text, *why;
  line notes = {0};
  text_line l;
  q->raw = 1;
  if (q->unsafe && q->redirects)
    return "unsafe: redirects (curl would send the same request target again)";
  if ((why = annotations(&s, crlf, q, &notes)) == NULL && notes.len)
    q->annotations = notes.p;
  else
    free(notes.p);
  if (why)
    return why;
  if (!next_line(s, crlf, &l) || !l.broken)
    return "raw: request line";
  if (!(q->paths = calloc(2, sizeof *q->paths)))
    return "out of memory";
  q->npaths = 1;
  if ((why = q->unsafe ? unsafe_line(&l, q) : safe_line(&l, q)) != NULL)
    return why;
  s = l.next;
  if ((why = headers(&s, crlf, q, &multipart)) != NULL || !s)
    return why;
  return body(s, crlf, q->unsafe || multipart, q);
}
