/* scan's templates: the two small additions to the subset that many
 * templates need, a plain raw request and DSL matchers that are only
 * contains(...) and status_code == N (scan(1), TEMPLATES). Anything more
 * in either makes the template skipped. */
#include "tpl.h"

#include <ctype.h>
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

/* ---- DSL ------------------------------------------------------------- */

/* The quoted string at *p ("..." with \" and \\ only), new; NULL when
 * it is not one. */
static char *quoted(const char **p)
{
  if (**p != '"')
    return NULL;
  char *out = malloc(strlen(*p) + 1);
  size_t n = 0;
  const char *s = *p + 1;
  for (; out && *s && *s != '"'; s++) {
    if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
      s++;
    else if (*s == '\\')
      break;
    out[n++] = *s;
  }
  if (!out || *s != '"') {
    free(out);
    return NULL;
  }
  out[n] = '\0';
  *p = s + 1;
  return out;
}

static const char *spaces(const char *p) { return p + strspn(p, " \t"); }

/* contains(PART, "text"): a word matcher of one word. */
static int dsl_contains(const char *p, tpl_matcher *m)
{
  static const struct {
    const char *arg;
    tpl_part part;
    int nocase;
  } ARGS[] = {{"body", TP_BODY, 0},
              {"header", TP_HEADER, 0},
              {"all_headers", TP_HEADER, 0},
              {"tolower(body)", TP_BODY, 1},
              {"tolower(header)", TP_HEADER, 1},
              {"tolower(all_headers)", TP_HEADER, 1}};
  size_t i = 0, n;
  p = spaces(p + strlen("contains("));
  while (i < sizeof ARGS / sizeof *ARGS &&
         (strncmp(p, ARGS[i].arg, n = strlen(ARGS[i].arg)) || *spaces(p + n) != ','))
    i++;
  if (i == sizeof ARGS / sizeof *ARGS)
    return -1;
  p = spaces(spaces(p + n) + 1);
  char *word = quoted(&p);
  if (!word || *spaces(p) != ')' || *spaces(spaces(p) + 1) || !*word ||
      !(m->words = calloc(1, sizeof *m->words))) {
    free(word);
    return -1;
  }
  for (char *c = word; ARGS[i].nocase && *c; c++)
    if (isupper((unsigned char)*c)) { /* tolower(...) never holds it: not this subset */
      free(word);
      return -1;
    }
  m->type = TM_WORD;
  m->part = ARGS[i].part;
  m->nocase = ARGS[i].nocase;
  m->words[0] = word;
  m->n = 1;
  return 0;
}

/* status_code == N, or !=: a status matcher of one code. */
static int dsl_status(const char *p, tpl_matcher *m)
{
  p = spaces(p + strlen("status_code"));
  int ne = !strncmp(p, "!=", 2);
  if (strncmp(p, "==", 2) && !ne)
    return -1;
  char *end;
  long code = strtol(spaces(p + 2), &end, 10);
  if (end == spaces(p + 2) || *spaces(end) || code < 100 || code > STATUS_MAX ||
      !(m->numbers = calloc(1, sizeof *m->numbers)))
    return -1;
  m->type = TM_STATUS;
  m->numbers[0] = code;
  m->n = 1;
  m->negative ^= ne;
  return 0;
}

int tpl_dsl(const char *text, tpl_matcher *m)
{
  const char *p = spaces(text);
  memset(m, 0, sizeof *m);
  while (*p == '!') { /* each ! inverts */
    m->negative = !m->negative;
    p = spaces(p + 1);
  }
  if (!strncmp(p, "contains(", 9))
    return dsl_contains(p, m);
  if (!strncmp(p, "status_code", 11))
    return dsl_status(p, m);
  return -1;
}
