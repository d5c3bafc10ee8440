/* scan's templates: a plain raw request (scan(1), TEMPLATES), its method,
 * path, headers and body. Anything more (annotations, several requests)
 * makes the template skipped. */
#include "tpl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The request line's target as a path of the template: "/x" is
 * {{RootURL}}/x; one that starts with {{BaseURL}} or {{RootURL}} is as
 * written. NULL when it is neither. */
static char *raw_path(const char *target, size_t n)
{
  char *p;
  if (n && target[0] == '/') {
    if ((p = malloc(n + 12)) != NULL)
      snprintf(p, n + 12, "{{RootURL}}%.*s", (int)n, target);
    return p;
  }
  if ((n >= 11 && !strncmp(target, "{{BaseURL}}", 11)) ||
      (n >= 11 && !strncmp(target, "{{RootURL}}", 11)))
    return strndup(target, n);
  return NULL;
}

/* The request line: METHOD SP target SP HTTP/x. */
static const char *raw_line(const char *text, size_t len, tpl_request *q)
{
  size_t m = strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
  if (!m || m >= len || text[m] != ' ')
    return "raw: request line";
  const char *target = text + m + 1, *sp = memchr(target, ' ', len - m - 1);
  if (!sp || strncmp(sp + 1, "HTTP/", 5))
    return "raw: request line";
  if (!(q->method = strndup(text, m)) || !(q->paths = calloc(2, sizeof *q->paths)))
    return "out of memory";
  if (!(q->paths[0] = raw_path(target, (size_t)(sp - target))))
    return "raw: request target";
  q->npaths = 1;
  return NULL;
}

/* The header lines, without Host and Content-Length (curl's own). */
static const char *raw_headers(const char **p, tpl_request *q)
{
  size_t cap = 0;
  for (const char *s = *p; *s && *s != '\n' && *s != '\r'; s += strcspn(s, "\n"), s += *s == '\n')
    cap++;
  if (!(q->headers = calloc(cap + 1, sizeof *q->headers)))
    return "out of memory";
  while (**p && **p != '\n' && **p != '\r') {
    size_t n = strcspn(*p, "\r\n");
    const char *colon = memchr(*p, ':', n);
    if (!colon || colon == *p)
      return "raw: header line";
    size_t name = (size_t)(colon - *p);
    if (!(name == 4 && !strncasecmp(*p, "Host", 4)) &&
        !(name == 14 && !strncasecmp(*p, "Content-Length", 14)) &&
        !(q->headers[q->nheaders++] = strndup(*p, n)))
      return "out of memory";
    *p += n;
    *p += **p == '\r';
    *p += **p == '\n';
  }
  return NULL;
}

const char *tpl_raw(const char *text, tpl_request *q)
{
  if (text[0] == '@' || strstr(text, "\n@"))
    return "raw: annotations";
  const char *p = text;
  size_t n = strcspn(p, "\r\n");
  const char *why = raw_line(p, n, q);
  if (why)
    return why;
  p += n;
  p += *p == '\r';
  p += *p == '\n';
  if ((why = raw_headers(&p, q)) != NULL)
    return why;
  p += *p == '\r';
  p += *p == '\n';
  size_t len = strlen(p);
  while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
    len--; /* the line break YAML's block ends with */
  if (len && !(q->body = strndup(p, len)))
    return "out of memory";
  return NULL;
}
