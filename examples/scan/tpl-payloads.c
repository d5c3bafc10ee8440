/* scan's templates: a request's payloads: and attack: as nuclei reads them
 * (its generators), a model of names, values and their combinations.
 *
 * A payload's values are a YAML list (each item as written); a text of
 * several lines (one value a line, empty ones kept); or a file, one value
 * a line: a line break is "\n" or "\r\n", empty lines are left out, the
 * rest is kept as it is (spaces too). A file is named by a relative path
 * without "..": looked for in the template's directory, then, for a path
 * under helpers/, in each directory above it, nearest first (where
 * nuclei-templates keeps its wordlists: nuclei looks in every directory
 * above the template). A file must be a regular file of text (no NUL
 * byte) inside the directory where it was found (a link that leads out of
 * it is refused: templates come from strangers), of at most
 * TPL_PAYLOAD_FILE_MAX bytes and TPL_PAYLOAD_LINES_MAX lines of at most
 * TPL_PAYLOAD_LINE_MAX bytes.
 *
 * The combinations: batteringram (nuclei's default) takes one payload,
 * each value in turn; pitchfork value k of every payload together, as
 * many as the shortest list has; clusterbomb every combination, the first
 * payload changing fastest (nuclei's order of names is its map's, which
 * varies). A payload none of the request's texts names is dropped first,
 * as nuclei does. Anything else, and more than TPL_PAYLOAD_MAX
 * combinations, is a skip with its reason; the count comes from the
 * lists' lengths, never from making the combinations. */
#define _DEFAULT_SOURCE /* realpath */
#include "tpl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

static const char *const ATTACKS[] = {"", "batteringram", "pitchfork", "clusterbomb"};

const char *tpl_attack_name(tpl_attack a)
{
  return a > TPL_ATTACK_NONE && a <= TPL_CLUSTERBOMB ? ATTACKS[a] : "none";
}

int tpl_attack_parse(const char *s, tpl_attack *a)
{
  s += strspn(s, " \t");
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  for (int i = TPL_BATTERINGRAM; i <= TPL_CLUSTERBOMB; i++)
    if (n == strlen(ATTACKS[i]) && !strncasecmp(s, ATTACKS[i], n))
      return *a = (tpl_attack)i, 0;
  return -1;
}

/* ---- Which payloads the request uses ------------------------------------ */

static int in(const char *text, const char *name) { return text && strstr(text, name); }

static int in_all(char *const *texts, size_t n, const char *name)
{
  for (size_t i = 0; texts && i < n; i++)
    if (in(texts[i], name))
      return 1;
  return 0;
}

static int in_regexes(const regex *re, size_t n, const char *name)
{
  for (size_t i = 0; re && i < n; i++)
    if (in(re[i].text, name))
      return 1;
  return 0;
}

static int in_dsl(const tpl_dsl *d, size_t n, const char *name)
{
  for (size_t i = 0; d && i < n; i++)
    if (in(d[i].text, name))
      return 1;
  return 0;
}

/* Whether any text of q holds name (nuclei looks in the request's path,
 * raw text, headers, body, matchers and extractors). */
static int used(const tpl_request *q, const char *name)
{
  if (in(q->method, name) || in(q->body, name) || in_all(q->paths, q->npaths, name) ||
      in_all(q->headers, q->nheaders, name))
    return 1;
  for (size_t i = 0; i < q->nraws; i++) /* several raw requests */
    if (used(&q->raws[i], name))
      return 1;
  for (size_t i = 0; i < q->nmatchers; i++) {
    const tpl_matcher *m = &q->matchers[i];
    if (in(m->name, name) || in(m->header, name) ||
        (m->type == TM_WORD && in_all(m->words, m->n, name)) ||
        (m->type == TM_REGEX && in_regexes(m->regexes, m->n, name)) ||
        (m->type == TM_DSL && in_dsl(m->dsl, m->n, name)))
      return 1;
  }
  for (size_t i = 0; i < q->nextractors; i++) {
    const tpl_extractor *x = &q->extractors[i];
    if (in(x->name, name) || in(x->header, name) ||
        (x->type == TX_KVAL && in_all(x->keys, x->n, name)) ||
        (x->type == TX_REGEX && in_regexes(x->regexes, x->n, name)) ||
        (x->type == TX_DSL && in_dsl(x->dsl, x->n, name)))
      return 1;
  }
  return 0;
}

/* ---- Reading ------------------------------------------------------------ */

/* A payload being read, and why not. */
typedef struct reading {
  const templates *ts;
  const char *path; /* the template's */
  char *why;
  size_t cap;
  int nomem;
  size_t *left; /* bytes the template's values may still take */
} reading;

static int fail(reading *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reading *r, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why, r->cap, fmt, ap);
  va_end(ap);
  return -1;
}

/* The template's payloads would hold more than TPL_PAYLOAD_TEMPLATE_MAX. */
static int over_total(reading *r, const tpl_payload *p)
{
  return fail(r, "payloads: %s: more than %u bytes of values in the template", p->name,
              TPL_PAYLOAD_TEMPLATE_MAX);
}

/* p's values from text (len bytes, each value ended by a NUL), which it
 * takes, within the template's bytes left. 0, or -1. */
static int take_values(reading *r, tpl_payload *p, char *text, size_t len, size_t n)
{
  if (len > *r->left) {
    free(text);
    return over_total(r, p);
  }
  *r->left -= len;
  p->text = text;
  if (!(p->values = calloc(n + 1, sizeof *p->values)))
    return r->nomem = 1, -1;
  for (size_t at = 0; at < len && p->n < n; at += strlen(text + at) + 1)
    p->values[p->n++] = text + at;
  return 0;
}

/* A YAML list: each item, as written. */
static int from_list(reading *r, tpl_payload *p, yaml_document_t *doc, yaml_node_t *v)
{
  line l = {0};
  size_t n = 0;
  for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
    yaml_node_t *item = yaml_document_get_node(doc, *i);
    if (!item || item->type != YAML_SCALAR_NODE ||
        memchr(item->data.scalar.value, '\0', item->data.scalar.length)) {
      free(l.p);
      return fail(r, "payloads: %s: not a list of strings", p->name);
    }
    if (n == TPL_PAYLOAD_LINES_MAX || l.len + item->data.scalar.length >= *r->left) {
      free(l.p); /* an alias repeated: the same text, each time */
      return n == TPL_PAYLOAD_LINES_MAX
                 ? fail(r, "payloads: %s: more than %u values", p->name, TPL_PAYLOAD_LINES_MAX)
                 : over_total(r, p);
    }
    put(&l, (const char *)item->data.scalar.value, item->data.scalar.length);
    put(&l, "", 1);
    n++;
  }
  if (!n)
    return fail(r, "payloads: %s: an empty list", p->name);
  if (l.nomem)
    return free(l.p), r->nomem = 1, -1;
  return take_values(r, p, l.p, l.len, n);
}

/* A text of several lines: one value each, empty ones too (nuclei's). */
static int from_lines(reading *r, tpl_payload *p, const char *s, size_t len)
{
  char *text = malloc(len + 1);
  size_t n = 1;
  if (!text)
    return r->nomem = 1, -1;
  memcpy(text, s, len);
  text[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') {
      text[i] = '\0';
      n++;
    }
  if (n > TPL_PAYLOAD_LINES_MAX) {
    free(text);
    return fail(r, "payloads: %s: more than %d lines", p->name, TPL_PAYLOAD_LINES_MAX);
  }
  return take_values(r, p, text, len + 1, n);
}

/* A file's lines as values: "\r\n" as "\n", empty lines left out, in
 * place in text (len bytes and a NUL). */
static int from_text(reading *r, tpl_payload *p, const char *file, char *text, size_t len)
{
  size_t n = 0, kept = 0;
  if (memchr(text, '\0', len))
    return free(text), fail(r, "payloads: %s: %s: not text (a NUL byte)", p->name, file);
  for (size_t at = 0; at < len;) {
    char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len, stop = end;
    if (stop > at && text[stop - 1] == '\r')
      stop--;
    if (stop - at > TPL_PAYLOAD_LINE_MAX)
      return free(text), fail(r, "payloads: %s: %s: a line longer than %d bytes", p->name, file,
                              TPL_PAYLOAD_LINE_MAX);
    if (stop > at && ++n > TPL_PAYLOAD_LINES_MAX)
      return free(text),
             fail(r, "payloads: %s: %s: more than %d lines", p->name, file, TPL_PAYLOAD_LINES_MAX);
    if (stop > at) { /* moved down over the empty lines and line breaks */
      memmove(text + kept, text + at, stop - at);
      kept += stop - at;
      text[kept++] = '\0';
    }
    at = end + 1;
  }
  if (!n)
    return free(text), fail(r, "payloads: %s: %s: no values", p->name, file);
  return take_values(r, p, text, kept, n);
}

/* The file at real (found for name), whole: a regular file of at most
 * TPL_PAYLOAD_FILE_MAX bytes. */
static int from_file(reading *r, tpl_payload *p, const char *name, const char *real)
{
  int fd = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0)
    return fail(r, "payloads: %s: %s: %s", p->name, name, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(r, "payloads: %s: %s: not a regular file", p->name, name);
  }
  if (st.st_size > (off_t)TPL_PAYLOAD_FILE_MAX) {
    close(fd);
    return fail(r, "payloads: %s: %s: larger than %u bytes", p->name, name, TPL_PAYLOAD_FILE_MAX);
  }
  if ((size_t)st.st_size > *r->left) {
    close(fd);
    return over_total(r, p);
  }
  size_t len = 0, room = (size_t)st.st_size + 1; /* the size it says; more when it grows */
  char *text = malloc(room + 1);
  ssize_t got = 1;
  int nomem = !text;
  while (!nomem && got > 0 && len <= TPL_PAYLOAD_FILE_MAX) {
    if (len == room) {
      size_t grown = room * 2 > TPL_PAYLOAD_FILE_MAX ? TPL_PAYLOAD_FILE_MAX + 1 : room * 2;
      char *more = realloc(text, grown + 1);
      nomem = !more;
      text = more ? more : text;
      room = grown;
      continue;
    }
    if ((got = read(fd, text + len, room - len)) > 0)
      len += (size_t)got;
    else if (got < 0 && errno == EINTR)
      got = 1;
  }
  int err = errno;
  close(fd);
  if (nomem)
    return free(text), r->nomem = 1, -1;
  if (got < 0)
    return free(text), fail(r, "payloads: %s: %s: %s", p->name, name, strerror(err));
  if (len > TPL_PAYLOAD_FILE_MAX)
    return free(text),
           fail(r, "payloads: %s: %s: larger than %u bytes", p->name, name, TPL_PAYLOAD_FILE_MAX);
  text[len] = '\0';
  return from_text(r, p, name, text, len);
}

/* Whether the path is one a template may name: relative, without "..". */
static int allowed(const char *name)
{
  if (!name[0] || name[0] == '/')
    return 0;
  for (const char *c = name; *c; c += strcspn(c, "/"), c += *c == '/')
    if (!strncmp(c, "..", 2) && (c[2] == '/' || !c[2]))
      return 0;
  return 1;
}

/* dir/name's real path when it is inside dir (a real path): new, or NULL
 * (*found 0 when there is none, -1 with the reason when it is not one to
 * read). */
static char *inside(reading *r, const char *dir, const char *name, const char *pname, int *found)
{
  size_t dn = strlen(dir);
  char *joined = malloc(dn + strlen(name) + 2), *real;
  if (!joined)
    return r->nomem = 1, *found = -1, NULL;
  sprintf(joined, "%s%s%s", dir, dn && dir[dn - 1] == '/' ? "" : "/", name);
  real = realpath(joined, NULL);
  int err = errno;
  free(joined);
  *found = 0;
  if (!real && err != ENOENT && err != ENOTDIR)
    return *found = -1, fail(r, "payloads: %s: %s: %s", pname, name, strerror(err)), NULL;
  if (real && (strncmp(real, dir, dn) || (real[dn] != '/' && dir[dn - 1] != '/'))) {
    free(real);
    return *found = -1, fail(r, "payloads: %s: %s: a link out of its directory", pname, name), NULL;
  }
  *found = real != NULL;
  return real;
}

/* The directory of path, real, new: NULL when out of memory or gone. */
static char *real_dir(reading *r, const char *path)
{
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  char *real = dir ? realpath(dir, NULL) : NULL;
  if (!dir || (!real && errno == ENOMEM))
    r->nomem = 1;
  free(dir);
  return real;
}

/* The payload file name of p: found as the header tells, and read. */
static int from_path(reading *r, tpl_payload *p, const char *name)
{
  if (!allowed(name))
    return fail(r, "payloads: %s: %s: an absolute path or one with .. (refused)", p->name, name);
  char *dir = real_dir(r, r->path), *root = NULL, *real = NULL;
  if (!dir)
    return r->nomem
               ? -1
               : fail(r, "payloads: %s: the template's directory: %s", p->name, strerror(errno));
  if (r->ts->files_root && !(root = realpath(r->ts->files_root, NULL)))
    r->nomem |= errno == ENOMEM;
  size_t rn = root ? strlen(root) : 0;
  int found = 0, helpers = !strncmp(name, "helpers/", 8);
  if (root && (strncmp(dir, root, rn) || (dir[rn] && dir[rn] != '/')))
    helpers = 0; /* a template outside the root looks beside itself only */
  for (;;) {
    real = inside(r, dir, name, p->name, &found);
    char *up = strrchr(dir, '/');
    if (found || !helpers || !up || !strcmp(dir, "/") || (root && !strcmp(dir, root)))
      break;
    up[up == dir] = '\0'; /* the parent; "/" stays */
  }
  free(dir);
  free(root);
  if (found < 0 || r->nomem)
    return -1;
  if (!real)
    return fail(r, "payloads: %s: %s: no such file beside the template%s", p->name, name,
                helpers ? " nor above it" : "");
  int rc = from_file(r, p, name, real);
  free(real);
  return rc;
}

/* One payload's values from its node. */
static int values(reading *r, tpl_payload *p, yaml_document_t *doc, yaml_node_t *v)
{
  if (v && v->type == YAML_SEQUENCE_NODE)
    return from_list(r, p, doc, v);
  if (v && v->type == YAML_MAPPING_NODE)
    return fail(r, "payloads: %s: levels of aggression (fuzzing)", p->name);
  if (!v || v->type != YAML_SCALAR_NODE)
    return fail(r, "payloads: %s: not a list of strings", p->name);
  const char *s = (const char *)v->data.scalar.value;
  size_t len = v->data.scalar.length;
  if (memchr(s, '\0', len)) /* a value ends at its NUL */
    return fail(r, "payloads: %s: not text (a NUL byte)", p->name);
  if (memchr(s, '\n', len))
    return from_lines(r, p, s, len);
  return from_path(r, p, s);
}

/* ---- Combinations ------------------------------------------------------- */

/* ps->combos from the lengths, at most TPL_PAYLOAD_MAX. */
static int count(reading *r, tpl_payloads *ps)
{
  double all = ps->attack == TPL_CLUSTERBOMB ? 1 : (double)ps->p[0].n;
  for (size_t i = 0; i < ps->n; i++)
    if (ps->attack == TPL_CLUSTERBOMB)
      all *= (double)ps->p[i].n;
    else if ((double)ps->p[i].n < all)
      all = (double)ps->p[i].n; /* pitchfork: as far as the shortest */
  if (all > TPL_PAYLOAD_MAX)
    return fail(r, "payloads: %s of %.0f combinations, over %d", tpl_attack_name(ps->attack), all,
                TPL_PAYLOAD_MAX);
  ps->combos = (size_t)all;
  return 0;
}

int tpl_payloads_load(const templates *ts, const char *path, tpl_request *q, yaml_document_t *doc,
                      yaml_node_t *map, tpl_attack attack, size_t *left, char *why, size_t cap)
{
  reading r = {ts, path, why, cap, 0, left};
  tpl_payloads *ps = &q->payloads;
  if (!map || map->type != YAML_MAPPING_NODE || ps->p)
    return fail(&r, "payloads: not a mapping");
  size_t cap_n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
  if (!(ps->p = calloc(cap_n + 1, sizeof *ps->p)))
    return -2;
  int rc = 0;
  for (yaml_node_pair_t *kv = map->data.mapping.pairs.start;
       !rc && kv < map->data.mapping.pairs.top; kv++) {
    yaml_node_t *k = yaml_document_get_node(doc, kv->key);
    const char *name = k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : NULL;
    if (!name || !name[0])
      rc = fail(&r, "payloads: a name not a string");
    else if (!used(q, name))
      continue; /* nuclei drops it */
    else if (!(ps->p[ps->n].name = strdup(name)))
      rc = -1, r.nomem = 1;
    else if ((rc = values(&r, &ps->p[ps->n++], doc, yaml_document_get_node(doc, kv->value))) != 0)
      break;
  }
  if (!rc && ps->n) {
    tpl_attack own = attack ? attack : TPL_BATTERINGRAM;
    ps->attack = ts->attack ? ts->attack : own;
    if ((own == TPL_BATTERINGRAM || ps->attack == TPL_BATTERINGRAM) && ps->n > 1)
      rc = fail(&r, "payloads: batteringram of %zu payloads (it takes one)", ps->n);
    else
      rc = count(&r, ps);
  }
  return r.nomem ? -2 : rc;
}

/* ---- Using -------------------------------------------------------------- */

size_t tpl_payload_find(const tpl_payloads *ps, const char *name, size_t len)
{
  size_t i = 0;
  while (i < ps->n && (strlen(ps->p[i].name) != len || memcmp(ps->p[i].name, name, len)))
    i++;
  return i;
}

const char *tpl_payload_value(const tpl_payloads *ps, size_t i, size_t k)
{
  if (ps->attack != TPL_CLUSTERBOMB)
    return ps->p[i].values[k];
  for (size_t j = 0; j < i; j++)
    k /= ps->p[j].n; /* the earlier payloads change faster */
  return ps->p[i].values[k % ps->p[i].n];
}

void tpl_payloads_note(const tpl *t, line *out)
{
  const char *sep = "";
  for (size_t i = 0; i < t->nreqs; i++) {
    const tpl_payloads *ps = &t->reqs[i].payloads;
    if (!ps->n)
      continue;
    printf_line(out, "%srequest %zu: %s of ", sep, i + 1, tpl_attack_name(ps->attack));
    for (size_t j = 0; j < ps->n; j++)
      printf_line(out, "%s%s", j ? ", " : "", ps->p[j].name);
    printf_line(out, ": %zu combination%s", ps->combos, ps->combos == 1 ? "" : "s");
    sep = "; ";
  }
}

void tpl_payloads_free(tpl_payloads *ps)
{
  for (size_t i = 0; ps->p && i < ps->n; i++) {
    free(ps->p[i].name);
    free(ps->p[i].values);
    free(ps->p[i].text);
  }
  free(ps->p);
}
