/* scan's templates: their variables: and constants:, and the {{...}} of
 * their texts as nuclei reads them (its expressions.Evaluate). In a text,
 * each "{{" opens at most one part, closed by the first "}}" after it whose
 * enclosed text is either a name the template knows ({{BaseURL}}, a
 * variable, a constant, a -var), replaced by its value, or an expression
 * (one that compiles and calls a function or reads a variable), replaced
 * by its value. Anything else stays as written: {{2+2}} and {{"a"}} are
 * text to nuclei too. A part that stays and is not of literals alone
 * would be sent as written, which nuclei refuses ("unresolved
 * variables"). An expression that does not compile skips the template,
 * with the column. A name nobody gives (a -var the template expects, as
 * {{username}}) does not: nuclei loads such a template and refuses its
 * requests that read the name when it would send them, so here those
 * requests are not sent (t->unresolved) and the others are; a request
 * with skip-variables-check: true sends it as written, as nuclei does.
 *
 * Inside an expression's quoted strings, {{name}} is the name's value
 * (nuclei substitutes it, escaped): compiled as "..." + name + "...".
 *
 * A variable's value is a text of the same kind. Each may use the target
 * variables, the constants, -var names and the variables before it;
 * one that uses a later one (a cycle) is a skip; one that uses itself
 * ({{username}} for username, a value to give with -var) or a name nobody
 * gives keeps its text, and what reads it is not sent. Where a name is defined twice, constants win over
 * -var, -var over the target's variables, those over variables:.
 *
 * A matcher word is a text of the same kind, which nuclei renders with the
 * values its request was made with and the response's, just before it
 * looks for it: here each word is told which of them it reads (once in
 * the scan, or for each response: m->renders); a {{...}} that is none
 * stays as written, never a reason to skip. A regex is compiled as written
 * (nuclei's are); {{randstr_N}} is replaced in words and regexes too, as
 * nuclei replaces it in the whole template. */
#include "tpl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

const char *const tpl_target_names[] = {"BaseURL", "RootURL", "Hostname", "Host",
                                        "Port",    "Path",    "Scheme",   "randstr"};
const size_t tpl_ntarget_names = sizeof tpl_target_names / sizeof *tpl_target_names;

/* The "}}" after one "{{" that are tried, at most, and the bytes compiled
 * while a template is checked: bounds on the work a hostile text makes
 * (nuclei bounds the "{{" it tries at 250). */
#define CLOSERS_MAX     64
#define CHECK_BYTES_MAX (4u << 20)
/* The distinct expressions of one template, at most (each new one is
 * looked for among those before it; payload values may hold many). */
#define EXPRS_MAX 1024

static int named(const char *s, const char *name, size_t len)
{
  return strlen(s) == len && !memcmp(s, name, len);
}

tpl_source tpl_name(const tpl *t, const char *const *given, size_t ngiven, const char *name,
                    size_t len, size_t *index)
{
  size_t i;
  for (i = 0; i < t->nreqs; i++)
    if (tpl_payload_find(&t->reqs[i].payloads, name, len) < t->reqs[i].payloads.n)
      return *index = i, TS_PAYLOAD;
  for (i = 0; i < t->nconsts; i++)
    if (named(t->consts[i].name, name, len))
      return *index = i, TS_CONST;
  for (i = ngiven; i-- > 0;) /* the last of a name */
    if (!strncmp(given[i], name, len) && given[i][len] == '=')
      return *index = i, TS_GIVEN;
  for (i = 0; i < tpl_ntarget_names; i++)
    if (named(tpl_target_names[i], name, len))
      return *index = i, TS_TARGET;
  for (i = 0; i < t->nvars; i++)
    if (named(t->vars[i].name, name, len))
      return *index = i, TS_VAR;
  return tpl_extracted(t, name, len) ? (*index = 0, TS_DYNAMIC) : TS_NONE;
}

/* ---- Reading ------------------------------------------------------------ */

/* Whether s[0..n) holds the word w. */
static int has(const char *s, size_t n, const char *w)
{
  size_t m = strlen(w);
  for (size_t i = 0; i + m <= n; i++)
    if (!memcmp(s + i, w, m))
      return 1;
  return 0;
}

/* Whether s[0..n) may be a name: letters, digits, '_', and '-' and '.' as
 * nuclei's {{request-id}} (a placeholder, replaced by name, not read as an
 * expression). */
static int is_name(const char *s, size_t n)
{
  if (!n || !(isalpha((unsigned char)*s) || *s == '_'))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '.'))
      return 0;
  return 1;
}

const char *tpl_vars_load(tpl *t, yaml_document_t *doc, yaml_node_t *map, int constants)
{
  tpl_var **list = constants ? &t->consts : &t->vars;
  size_t *n = constants ? &t->nconsts : &t->nvars;
  const char *what = constants ? "constants" : "variables";
  if (!map || map->type != YAML_MAPPING_NODE || *list)
    return what;
  size_t cap = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
  if (!(*list = calloc(cap + 1, sizeof **list)))
    return "";
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key),
                *v = yaml_document_get_node(doc, p->value);
    if (!k || k->type != YAML_SCALAR_NODE || !v || v->type != YAML_SCALAR_NODE)
      return constants ? "constants: not a string" : "variables: not a string";
    const char *name = (const char *)k->data.scalar.value;
    if (!is_name(name, strlen(name)))
      return constants ? "constants: not a name" : "variables: not a name";
    tpl_var *x = &(*list)[(*n)++];
    x->name = strdup(name);
    x->value = strdup((const char *)v->data.scalar.value);
    if (!x->name || !x->value)
      return "";
  }
  return NULL;
}

void tpl_vars_free(tpl *t)
{
  for (size_t i = 0; t->vars && i < t->nvars; i++)
    free(t->vars[i].name), free(t->vars[i].value), free(t->vars[i].unresolved);
  for (size_t i = 0; t->consts && i < t->nconsts; i++)
    free(t->consts[i].name), free(t->consts[i].value);
  for (size_t i = 0; t->exprs && i < t->nexprs; i++)
    free(t->exprs[i].src), expr_free(t->exprs[i].e);
  free(t->vars);
  free(t->consts);
  free(t->exprs);
  free(t->unresolved);
}

/* ---- Finding the parts of a text ---------------------------------------- */

/* What a "{{" opens: KIND_NAME, KIND_EXPR (t->exprs[*index]), or 0. */
enum { KIND_NAME = 1, KIND_EXPR = 2 };
typedef int (*classify_fn)(void *ud, const char *inner, size_t len, size_t *index);

/* A part of a text: [open, close + 2) with what it encloses. */
typedef struct part {
  const char *open, *inner;
  size_t len, index;
  int kind;
} part;

/* The next part of text from p on: 1 and *out, or 0 at the end. A "{{"
 * that opens none is text; with failed not NULL, the search stops there
 * instead (0, *failed the "{{"). */
static int next_part(const char *p, classify_fn cls, void *ud, part *out, const char **failed)
{
  for (const char *o = strstr(p, "{{"); o; o = strstr(o + 2, "{{")) {
    const char *c = strstr(o + 2, "}}");
    for (int tries = 0; c && tries < CLOSERS_MAX; tries++, c = strstr(c + 2, "}}")) {
      out->open = o;
      out->inner = o + 2;
      out->len = (size_t)(c - o - 2);
      if ((out->kind = cls(ud, out->inner, out->len, &out->index)) != 0)
        return 1;
    }
    if (failed) {
      *failed = o;
      return 0;
    }
  }
  return 0;
}

static size_t find_expr(const tpl *t, const char *inner, size_t len)
{
  size_t i = 0;
  while (i < t->nexprs && !named(t->exprs[i].src, inner, len))
    i++;
  return i;
}

/* ---- Checking, at load -------------------------------------------------- */

typedef struct checker {
  tpl *t;
  const char *const *given;
  size_t ngiven;
  size_t var; /* checking variable var's value; nvars: a request's text */
  size_t req; /* the request whose text (or payload value) it is */
  int value;  /* checking a payload's value */
  char *why;  /* the reason, when one is found */
  size_t cap;
  int nomem;
  int over;         /* more than EXPRS_MAX expressions: a reason that stays */
  expr_error first; /* the first compile error of the current "{{" */
  const char *first_at;
  size_t compiled; /* bytes given to expr_compile */
  /* Reading a matcher word of request q: no name or {{...}} is a reason
   * to skip (one that is none stays as written, as nuclei leaves it). */
  int in_word;
  const tpl_request *q;
  /* Reading a text of a request with skip-variables-check: tpl_vars_check
   * sets it for requests' texts alone, never a variable's or a payload's. */
  int skip;
} checker;

/* Sets the reason (the first one found stays); returns 0. */
static int fail(checker *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(checker *k, const char *fmt, ...)
{
  if (!k->why[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->why, k->cap, fmt, ap);
    va_end(ap);
  }
  return 0;
}

/* The length of the name that a "{{name}}" of a quoted string encloses
 * at s (readable then says whether it may be read), or 0. */
static size_t string_name(const char *s, const char *end)
{
  if (strncmp(s, "{{", 2))
    return 0;
  const char *c = strstr(s + 2, "}}");
  if (!c || c > end || !is_name(s + 2, (size_t)(c - s - 2)))
    return 0;
  return (size_t)(c - s - 2);
}

/* inner with each {{name}} of its quoted strings as " + name + " (the
 * string in parentheses), new; NULL when out of memory. */
static char *rewrite(const char *inner, size_t len)
{
  line l = {0};
  const char *end = inner + len;
  for (const char *p = inner; p < end;) {
    if (*p != '"' && *p != '\'') {
      put(&l, p++, 1);
      continue;
    }
    char q = *p;
    const char *e = p + 1;
    int names = 0;
    for (; e < end && *e != q; e++)
      if (*e == '\\' && e + 1 < end)
        e++;
      else if (string_name(e, end))
        names = 1;
    if (!names || e == end) { /* as written */
      put(&l, p, (size_t)(e - p) + (e < end));
      p = e + (e < end);
      continue;
    }
    put(&l, "(", 1);
    put(&l, p, 1);
    for (const char *s = p + 1; s < e; s++) {
      size_t n = *s == '\\' ? 0 : string_name(s, end);
      if (*s == '\\') {
        put(&l, s, 2);
        s++;
      } else if (n) {
        printf_line(&l, "%c + %.*s + %c", q, (int)n, s + 2, q);
        s += n + 3;
      } else {
        put(&l, s, 1);
      }
    }
    put(&l, p, 1);
    put(&l, ")", 1);
    p = e + 1;
  }
  put(&l, "", 1);
  if (l.nomem) {
    free(l.p);
    return NULL;
  }
  return l.p;
}

/* Name, which nobody gives, read by variable k->var or by a text: the
 * variable keeps its text and the request is not sent (the first such
 * name noted), 1; a request's with skip-variables-check sends it as
 * written, 0 (not read as a name); in a payload's value, a reason. */
static int unresolved(checker *k, const char *name, size_t len)
{
  char **first = k->var < k->t->nvars ? &k->t->vars[k->var].unresolved : &k->t->unresolved;
  if (k->value)
    return fail(k, "variable: %.*s", (int)len, name);
  if (k->skip)
    return 0;
  if (!*first && !(*first = strndup(name, len)))
    return k->nomem = 1, 0;
  return 1;
}

/* Whether name (read by variable k->var, or by a text) may be read. */
static int readable(checker *k, const char *name, size_t len)
{
  size_t i;
  tpl_source s = tpl_name(k->t, k->given, k->ngiven, name, len, &i);
  if (k->in_word)
    return 1; /* word_renders says what it depends on */
  if (s == TS_NONE && has(name, len, "interactsh"))
    return fail(k, "interactsh");
  if (s == TS_NONE || (s == TS_VAR && k->var < k->t->nvars && i == k->var))
    return unresolved(k, name, len);
  if (s == TS_VAR && i < k->var && k->t->vars[i].unresolved)
    return unresolved(k, k->t->vars[i].unresolved, strlen(k->t->vars[i].unresolved));
  if (s == TS_DYNAMIC && k->var < k->t->nvars)
    return fail(k, "variables: %s uses %.*s, a value extracted (not evaluated with them)",
                k->t->vars[k->var].name, (int)len, name);
  if (s == TS_PAYLOAD && k->var < k->t->nvars) /* nuclei's variables see no payloads */
    return fail(k, "variables: %s uses the payload %.*s", k->t->vars[k->var].name, (int)len, name);
  if (s == TS_PAYLOAD && (k->value || tpl_payload_find(&k->t->reqs[k->req].payloads, name, len) ==
                                          k->t->reqs[k->req].payloads.n))
    return fail(k, "variable: %.*s (a payload of another request)", (int)len, name);
  if (s == TS_VAR && k->var < k->t->nvars && i > k->var)
    return fail(k, "variables: %s uses %s, defined after it (a cycle, or out of order)",
                k->t->vars[k->var].name, k->t->vars[i].name);
  if (s == TS_VAR && k->var < k->t->nvars && k->t->vars[i].per_target)
    k->t->vars[k->var].per_target = 1;
  if (s == TS_TARGET && k->var < k->t->nvars && strcmp(tpl_target_names[i], "randstr"))
    k->t->vars[k->var].per_target = 1;
  if (k->var < k->t->nvars && ((s == TS_VAR && k->t->vars[i].random) ||
                               (s == TS_TARGET && !strcmp(tpl_target_names[i], "randstr"))))
    k->t->vars[k->var].random = 1;
  return 1;
}

/* Whether every name expression x reads may be read (by variable k->var,
 * or by a text); one that calls rand_* makes the variable random. */
static int expr_readable(checker *k, const tpl_expr *x)
{
  if (k->var < k->t->nvars && (x->calls & EXPR_CALLS_VOLATILE))
    k->t->vars[k->var].random = 1;
  for (size_t v = 0; v < expr_var_count(x->e); v++) {
    size_t n;
    const char *name = expr_var_name(x->e, v, &n);
    if (!readable(k, name, n))
      return 0;
  }
  return 1;
}

/* Whether e reads a name nobody gives, or a variable that does. */
static int reads_unknown(const checker *k, const expr *e)
{
  for (size_t v = 0; v < expr_var_count(e); v++) {
    size_t n, i;
    const char *name = expr_var_name(e, v, &n);
    tpl_source s = tpl_name(k->t, k->given, k->ngiven, name, n, &i);
    if (s == TS_NONE || (s == TS_VAR && k->t->vars[i].unresolved))
      return 1;
  }
  return 0;
}

static int check_classify(void *ud, const char *inner, size_t len, size_t *index)
{
  checker *k = ud;
  size_t i;
  if (is_name(inner, len) && tpl_name(k->t, k->given, k->ngiven, inner, len, &i) != TS_NONE)
    return readable(k, inner, len) ? KIND_NAME : 0;
  if ((*index = find_expr(k->t, inner, len)) < k->t->nexprs) /* read before, by another */
    return expr_readable(k, &k->t->exprs[*index]) ? KIND_EXPR : 0;
  if (len > EXPR_MAX_SOURCE)
    return 0;
  if (k->t->nexprs >= EXPRS_MAX)
    return k->over = 1, fail(k, "expression: more than %d in the template", EXPRS_MAX);
  if ((k->compiled += len) > CHECK_BYTES_MAX)
    return fail(k, "expression: too many {{ to read");
  char *src = rewrite(inner, len);
  expr *e = NULL;
  expr_error err;
  if (!src)
    return k->nomem = 1, 0;
  if (expr_compile(src, strlen(src), &e, &err) != EXPR_OK) {
    free(src);
    if (err.code == EXPR_E_NOMEM)
      k->nomem = 1;
    else if (!k->first_at)
      k->first = err, k->first_at = inner;
    return 0;
  }
  free(src);
  unsigned calls = expr_calls(e);
  if ((!calls && !expr_var_count(e)) || /* literals: text to nuclei */
      (k->skip && reads_unknown(k, e))) { /* sent as written */
    expr_free(e);
    return 0;
  }
  tpl_expr *x = realloc(k->t->exprs, (k->t->nexprs + 1) * sizeof *x);
  char *copy = strndup(inner, len);
  if (!x || !copy) {
    free(copy);
    expr_free(e);
    if (x)
      k->t->exprs = x;
    return k->nomem = 1, 0;
  }
  k->t->exprs = x;
  x[k->t->nexprs] = (tpl_expr){copy, e, calls};
  *index = k->t->nexprs++;
  return expr_readable(k, &x[*index]) ? KIND_EXPR : 0;
}

/* Whether the "{{" at o, which opens no part, is text nuclei sends as it
 * is (not closed; of literals alone; without letters, as {{ - }}); else
 * the reason. */
static int stays(checker *k, const char *o)
{
  if (k->skip)
    return 1; /* skip-variables-check: sent as written */
  const char *c = strstr(o + 2, "}}");
  size_t len = c ? (size_t)(c - o - 2) : 0;
  if (!c || memchr(o + 2, '}', len) || memchr(o + 2, '{', len))
    return 1;       /* not a {{...}} nuclei looks at, or one of a later "{{" */
  size_t words = 0; /* nuclei lets through one without letters or '_' */
  for (size_t i = 0; i < len; i++)
    words += isalpha((unsigned char)o[2 + i]) || o[2 + i] == '_';
  if (!words)
    return 1;
  if ((k->compiled += len) > CHECK_BYTES_MAX)
    return fail(k, "expression: too many {{ to read");
  expr *e;
  if (expr_compile(o + 2, len, &e, NULL) == EXPR_OK) {
    size_t nvars = expr_var_count(e);
    expr_free(e);
    if (!nvars)
      return 1;
  }
  int shown = len > 60 ? 60 : (int)len;
  if (has(o + 2, len, "interactsh"))
    return fail(k, "interactsh");
  if (k->first_at == o + 2)
    return fail(k, "expression: %s at column %zu of \"%.*s\"", k->first.msg, k->first.column, shown,
                o + 2);
  return fail(k, "variable: %.*s", shown, o + 2);
}

static int check_text(checker *k, const char *text)
{
  part pt;
  for (const char *p = text; p && !k->why[0] && !k->nomem;) {
    const char *failed = NULL;
    k->first_at = NULL;
    if (next_part(p, check_classify, k, &pt, &failed))
      p = pt.inner + pt.len + 2;
    else if (failed && stays(k, failed))
      p = failed + 2;
    else
      break;
  }
  return k->why[0] || k->nomem ? -1 : 0;
}

/* ---- {{randstr_N}} ------------------------------------------------------ */

/* nuclei replaces each {{randstr_N}} (N letters, digits, _) of a template's
 * text by a KSUID of its own when it reads the template: the same
 * everywhere in the template, another for each N and each template. */

/* A KSUID's shape: 4 bytes of seconds since its epoch (1400000000), 16
 * random ones, the 20 in base62 as 27 digits, 0-9A-Za-z. */
void tpl_randstr(char out[TPL_RANDSTR_LEN + 1], uint64_t *seed)
{
  static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  unsigned char n[20];
  uint64_t t = (uint64_t)time(NULL) - 1400000000u;
  for (int i = 0; i < 4; i++)
    n[i] = (unsigned char)(t >> (24 - 8 * i));
  for (int i = 4; i < 20; i++) {
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    n[i] = (unsigned char)(*seed >> 33);
  }
  for (int d = TPL_RANDSTR_LEN - 1; d >= 0; d--) { /* n /= 62, its remainder the digit */
    unsigned rem = 0;
    for (int i = 0; i < 20; i++) {
      unsigned cur = rem << 8 | n[i];
      n[i] = (unsigned char)(cur / 62);
      rem = cur % 62;
    }
    out[d] = digits[rem];
  }
  out[TPL_RANDSTR_LEN] = '\0';
}

/* The name's value in t's table (names and values alternate in names),
 * made when new. NULL when out of memory. */
static const char *randstr_of(line *names, const char *name, size_t len, uint64_t *seed)
{
  for (size_t at = 0; at < names->len;) {
    size_t n = strlen(names->p + at);
    if (n == len && !memcmp(names->p + at, name, len))
      return names->p + at + n + 1;
    at += n + 1;
    at += strlen(names->p + at) + 1;
  }
  put(names, name, len);
  put(names, "", 1);
  size_t value = names->len;
  char v[TPL_RANDSTR_LEN + 1];
  tpl_randstr(v, seed);
  put(names, v, sizeof v);
  return names->nomem ? NULL : names->p + value;
}

/* *text with its {{randstr_N}} replaced (a new string for the old). 0, or
 * -1 when out of memory. */
static int replace_randstr(char **text, line *names, uint64_t *seed)
{
  if (!*text || !strstr(*text, "{{randstr_"))
    return 0;
  line l = {0};
  const char *p = *text;
  for (const char *o; (o = strstr(p, "{{randstr_")) != NULL;) {
    size_t n = strspn(o + 10, "abcdefghijklmnopqrstuvwxyz0123456789_");
    put(&l, p, (size_t)(o - p));
    if (n && !strncmp(o + 10 + n, "}}", 2)) {
      const char *v = randstr_of(names, o + 2, n + 8, seed);
      if (!v)
        break;
      puts_line(&l, v);
      p = o + 12 + n;
    } else {
      put(&l, o, 2);
      p = o + 2;
    }
  }
  puts_line(&l, p);
  put(&l, "", 1);
  if (l.nomem || names->nomem) {
    free(l.p);
    return -1;
  }
  free(*text);
  *text = l.p;
  return 0;
}

/* re with its {{randstr_N}} replaced, compiled again (where PCRE2 would
 * refuse the result, re stays as written). 0, or -1 when out of memory. */
static int replace_randstr_regex(regex *re, line *names, uint64_t *seed)
{
  if (!re->text || !strstr(re->text, "{{randstr_"))
    return 0;
  char *text = strdup(re->text), msg[160];
  regex fresh;
  if (!text || replace_randstr(&text, names, seed) != 0) {
    free(text);
    return -1;
  }
  if (regex_compile(&fresh, text, msg, sizeof msg) != 0) {
    regex_free(&fresh);
    free(text);
    return 0;
  }
  free((char *)re->text);
  regex_free(re);
  *re = fresh;
  return 0;
}

/* Value k of m (a word or a regex) says r (TPL_WORD_*), unless it says
 * more already. 0, or -1 when out of memory. */
static int mark(tpl_matcher *m, size_t k, unsigned char r)
{
  if (!r || (!m->renders && !(m->renders = calloc(m->n, 1))))
    return r ? -1 : 0;
  if (m->renders[k] < r)
    m->renders[k] = r;
  return 0;
}

/* Whether a matcher value holds a {{randstr_N}} (random: another in each
 * scan, so matched for each response, see m->renders). */
static int has_randstr_n(const char *text) { return text && strstr(text, "{{randstr_") != NULL; }

/* Every {{randstr_N}} of request q's matchers and extractors replaced, as
 * nuclei replaces them in the whole template. 0 or -1. */
static int randstr_operators(tpl_request *q, line *names, uint64_t *seed)
{
  int rc = 0;
  for (size_t i = 0; !rc && i < q->nmatchers; i++) {
    tpl_matcher *m = &q->matchers[i];
    for (size_t k = 0; !rc && m->type == TM_WORD && k < m->n; k++)
      rc = mark(m, k, has_randstr_n(m->words[k]) ? TPL_WORD_RESPONSE : 0) ||
           replace_randstr(&m->words[k], names, seed);
    for (size_t k = 0; !rc && m->type == TM_REGEX && k < m->n; k++)
      rc = mark(m, k, has_randstr_n(m->regexes[k].text) ? TPL_WORD_RESPONSE : 0) ||
           replace_randstr_regex(&m->regexes[k], names, seed);
  }
  for (size_t i = 0; !rc && i < q->nextractors; i++)
    for (size_t k = 0; !rc && q->extractors[i].regexes && k < q->extractors[i].n; k++)
      rc = replace_randstr_regex(&q->extractors[i].regexes[k], names, seed);
  return rc;
}

/* Every {{randstr_N}} of t's texts replaced. 0 or -1. */
static int randstr_texts(tpl *t)
{
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t seed = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 30 ^ (uint64_t)(uintptr_t)t;
  line names = {0};
  int rc = 0;
  for (size_t i = 0; !rc && i < t->nvars; i++) {
    t->vars[i].random = has_randstr_n(t->vars[i].value);
    rc = replace_randstr(&t->vars[i].value, &names, &seed);
  }
  for (size_t i = 0; !rc && i < t->nreqs; i++) {
    for (size_t r = 0; !rc && r <= t->reqs[i].nraws; r++) { /* the block, then its raws */
      tpl_request *q = r ? &t->reqs[i].raws[r - 1] : &t->reqs[i];
      for (size_t j = 0; !rc && j < q->npaths; j++)
        rc = replace_randstr(&q->paths[j], &names, &seed);
      for (size_t j = 0; !rc && j < q->nheaders; j++)
        rc = replace_randstr(&q->headers[j], &names, &seed);
      if (!rc)
        rc = replace_randstr(&q->body, &names, &seed);
      if (!rc)
        rc = replace_randstr(&q->annotations, &names, &seed);
    }
    if (!rc)
      rc = randstr_operators(&t->reqs[i], &names, &seed);
  }
  free(names.p);
  return rc;
}

/* Whether text holds a {{...}} with a letter inside: a name or an
 * expression, which nuclei replaces (without letters, as {{7*7}}, it is
 * text). */
static int renders(const char *text)
{
  for (const char *o = strstr(text, "{{"); o; o = strstr(o + 2, "{{")) {
    const char *c = strstr(o + 2, "}}");
    if (!c)
      return 0;
    for (const char *p = o + 2; p < c; p++)
      if (isalpha((unsigned char)*p))
        return 1;
  }
  return 0;
}

/* ---- Matcher words -------------------------------------------------- */

/* Whether name is a named extractor's of request q. */
static int extractor_named(const tpl_request *q, const char *name, size_t len)
{
  for (size_t i = 0; i < q->nextractors; i++)
    if (q->extractors[i].name && named(q->extractors[i].name, name, len))
      return 1;
  return 0;
}

/* When a name that a word reads has its value: TPL_WORD_SCAN for a
 * constant, a -var and a variable evaluated once in the scan that is not
 * random; TPL_WORD_RESPONSE for a target variable ({{randstr}} too: it is
 * random), a variable of the target or a random one, a response
 * variable, a named extractor's values, and a name the template does not
 * give (a header's, or none: then the word stays as written). */
static unsigned char depend(const checker *k, const char *name, size_t len)
{
  size_t i;
  tpl_source s = tpl_name(k->t, k->given, k->ngiven, name, len, &i);
  int scan = s == TS_CONST || s == TS_GIVEN ||
             (s == TS_VAR && !k->t->vars[i].per_target && !k->t->vars[i].random);
  return scan && !extractor_named(k->q, name, len) && !tpl_response_var(name, len)
             ? TPL_WORD_SCAN
             : TPL_WORD_RESPONSE;
}

/* The same for an expression: the names it reads; one that gives another
 * value each time (rand_*) is evaluated for each response, as nuclei
 * does. */
static unsigned char expr_depend(const checker *k, const tpl_expr *x)
{
  unsigned char r = x->calls & EXPR_CALLS_VOLATILE ? TPL_WORD_RESPONSE : TPL_WORD_SCAN;
  for (size_t v = 0; v < expr_var_count(x->e); v++) {
    size_t n;
    const char *name = expr_var_name(x->e, v, &n);
    r |= depend(k, name, n);
  }
  return r;
}

/* How word text of request q is replaced (TPL_WORD_*), 0 when it holds
 * nothing to replace. Its expressions are compiled into t->exprs as a
 * request's are; a {{...}} that is none stays as written, as nuclei
 * leaves it in a word. */
static unsigned char word_renders(checker *k, const tpl_request *q, const char *text)
{
  part pt;
  unsigned char r = 0;
  k->in_word = 1;
  k->q = q;
  for (const char *p = text; p && !k->why[0] && !k->nomem;) {
    const char *failed = NULL;
    if (next_part(p, check_classify, k, &pt, &failed)) {
      r |= pt.kind == KIND_NAME ? depend(k, pt.inner, pt.len)
                                : expr_depend(k, &k->t->exprs[pt.index]);
      p = pt.inner + pt.len + 2;
    } else {
      p = failed ? failed + 2 : NULL;
    }
  }
  k->in_word = 0;
  return r & TPL_WORD_RESPONSE ? TPL_WORD_RESPONSE : r;
}

/* Decides how each word of t's matchers is replaced, and which regexes
 * hold a {{randstr}} (m->renders). 0, or -1 when out of memory or a reason
 * was found. */
static int check_words(checker *k)
{
  for (size_t i = 0; i < k->t->nreqs; i++) {
    const tpl_request *q = &k->t->reqs[i];
    for (size_t j = 0; j < q->nmatchers; j++) {
      tpl_matcher *m = &q->matchers[j];
      for (size_t w = 0; m->type == TM_WORD && w < m->n; w++) {
        unsigned char r = renders(m->words[w]) ? word_renders(k, q, m->words[w]) : 0;
        if (k->why[0] || k->nomem)
          return -1;
        if (mark(m, w, r) != 0)
          return k->nomem = 1, -1;
      }
      for (size_t w = 0; m->type == TM_REGEX && w < m->n; w++)
        if (strstr(m->regexes[w].text, "{{randstr}}") && mark(m, w, TPL_WORD_RESPONSE) != 0)
          return k->nomem = 1, -1;
    }
  }
  return 0;
}

/* The expressions of the payloads' values, compiled where they compile
 * and read names a payload's value can (nuclei renders a value with every
 * name but the payloads). A value whose {{...}} stays is no reason to
 * skip: nuclei leaves its text unresolved and does not send the
 * combinations with it. */
static void check_payloads(checker *k)
{
  char *why = k->why;
  k->value = 1;
  for (k->req = 0; k->req < k->t->nreqs && !k->nomem; k->req++) {
    const tpl_payloads *ps = &k->t->reqs[k->req].payloads;
    for (size_t i = 0; i < ps->n && !k->nomem && !k->over; i++)
      for (size_t j = 0; j < ps->p[i].n && !k->nomem && !k->over; j++) {
        check_text(k, ps->p[i].values[j]);
        if (!k->over)
          why[0] = '\0';
      }
  }
  k->value = 0;
}

int tpl_vars_check(tpl *t, const char *const *given, size_t ngiven, char *why, size_t cap)
{
  if (randstr_texts(t) != 0)
    return -2;
  checker k = {.t = t, .given = given, .ngiven = ngiven, .why = why, .cap = cap};
  why[0] = '\0';
  for (k.var = 0; k.var < t->nvars; k.var++) {
    size_t i;
    if (tpl_name(t, given, ngiven, t->vars[k.var].name, strlen(t->vars[k.var].name), &i) != TS_VAR)
      continue; /* a constant, -var or target variable of that name is used instead */
    if (check_text(&k, t->vars[k.var].value) != 0)
      break;
  }
  k.var = t->nvars;
  for (k.req = 0; !why[0] && !k.nomem && k.req < t->nreqs; k.req++)
    for (size_t r = 0; r <= t->reqs[k.req].nraws; r++) { /* the block, then its raws */
      const tpl_request *q = r ? &t->reqs[k.req].raws[r - 1] : &t->reqs[k.req];
      k.skip = t->reqs[k.req].skip_vars_check;
      for (size_t j = 0; j < q->npaths; j++)
        check_text(&k, q->paths[j]);
      for (size_t j = 0; j < q->nheaders; j++)
        check_text(&k, q->headers[j]);
      if (q->body)
        check_text(&k, q->body);
      if (q->annotations)
        check_text(&k, q->annotations);
    }
  k.skip = 0;
  if (!why[0] && !k.nomem)
    check_payloads(&k);
  if (!why[0] && !k.nomem)
    check_words(&k);
  return k.nomem ? -2 : why[0] ? -1 : 0;
}

/* ---- Using ----------------------------------------------------------- */

typedef struct user {
  const tpl *t;
  const char *const *given;
  size_t ngiven;
  unsigned uses;
} user;

static void use(user *u, const char *name, size_t len)
{
  size_t i;
  tpl_source s = tpl_name(u->t, u->given, u->ngiven, name, len, &i);
  if (s == TS_CONST || s == TS_VAR || s == TS_PAYLOAD)
    u->uses |= TPL_USES_TEMPLATE;
  if (s == TS_DYNAMIC)
    u->uses |= TPL_USES_DYNAMIC;
  if (s == TS_NONE || (s == TS_VAR && u->t->vars[i].unresolved))
    u->uses |= TPL_USES_UNRESOLVED;
}

static int uses_classify(void *ud, const char *inner, size_t len, size_t *index)
{
  user *u = ud;
  size_t i;
  if (is_name(inner, len) && tpl_name(u->t, u->given, u->ngiven, inner, len, &i) != TS_NONE)
    return use(u, inner, len), KIND_NAME;
  if ((*index = find_expr(u->t, inner, len)) == u->t->nexprs)
    return 0;
  const tpl_expr *x = &u->t->exprs[*index];
  if (x->calls & EXPR_CALLS_VOLATILE)
    u->uses |= TPL_USES_VOLATILE;
  for (size_t v = 0; v < expr_var_count(x->e); v++) {
    size_t n;
    const char *name = expr_var_name(x->e, v, &n);
    use(u, name, n);
  }
  return KIND_EXPR;
}

unsigned tpl_text_uses(const tpl *t, const char *const *given, size_t ngiven, const char *text)
{
  user u = {t, given, ngiven, 0};
  part pt;
  for (const char *p = text; p && next_part(p, uses_classify, &u, &pt, NULL);)
    p = pt.inner + pt.len + 2;
  return u.uses;
}

/* ---- Rendering, per target ---------------------------------------------- */

typedef struct renderer {
  const tpl *t;
  const expr_env *env;
  expr_value v; /* the value of the name found */
} renderer;

static int render_classify(void *ud, const char *inner, size_t len, size_t *index)
{
  renderer *r = ud;
  if (is_name(inner, len) && r->env->lookup(r->env->ud, inner, len, &r->v))
    return KIND_NAME;
  return (*index = find_expr(r->t, inner, len)) < r->t->nexprs ? KIND_EXPR : 0;
}

expr_code tpl_render(const tpl *t, const char *text, const expr_env *env, expr_arena *a, line *out,
                     expr_error *err)
{
  renderer r = {t, env, {0}};
  part pt;
  const char *p = text;
  while (next_part(p, render_classify, &r, &pt, NULL)) {
    expr_value v = r.v, s;
    expr_code rc = EXPR_OK;
    put(out, p, (size_t)(pt.open - p));
    if (pt.kind == KIND_EXPR)
      rc = expr_eval(t->exprs[pt.index].e, env, a, &v, err);
    if (rc == EXPR_OK)
      rc = expr_text(&v, a, &s, NULL);
    if (rc != EXPR_OK)
      return rc;
    put(out, s.u.str.ptr, s.u.str.len);
    p = pt.inner + pt.len + 2;
  }
  puts_line(out, p);
  return out->nomem ? EXPR_E_NOMEM : EXPR_OK;
}
