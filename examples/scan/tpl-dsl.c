/* scan's templates: the DSL expressions of dsl matchers and extractors,
 * compiled by the expression engine (expr.h), and what each needs of a
 * response: which of its atoms over the body the streaming engine can
 * answer as words and regexes, whether it needs the body whole or only its
 * length, and whether every variable it reads can have a value. */
#include "tpl.h"

#include <stdlib.h>
#include <string.h>

/* The variables nuclei gives a response besides its headers and cookies
 * (the header ones, all_headers and header, being the header block). */
static const char *const RESPONSE_VARS[] = {"body", "all_headers",   "header",   "response",
                                            "host", "status_code",   "duration", "matched",
                                            "type", "content_length"};

static int is(const char *name, size_t len, const char *s)
{
  return strlen(s) == len && !memcmp(name, s, len);
}

int tpl_response_var(const char *name, size_t len)
{
  for (size_t i = 0; i < sizeof RESPONSE_VARS / sizeof *RESPONSE_VARS; i++)
    if (is(name, len, RESPONSE_VARS[i]))
      return 1;
  return 0;
}

int tpl_url_var(const char *name, size_t len)
{
  static const char *const URL_VARS[TPL_URL_VARS] = {"BaseURL", "RootURL", "Hostname", "Host",
                                                     "Port",    "Path",    "Scheme"};
  for (int i = 0; i < TPL_URL_VARS; i++)
    if (is(name, len, URL_VARS[i]))
      return i + 1;
  return 0;
}

/* Where the _N suffix of a name begins (nuclei's request number), or len
 * when it has none. */
static size_t suffix_at(const char *name, size_t len)
{
  size_t k = len;
  while (k && name[k - 1] >= '0' && name[k - 1] <= '9')
    k--;
  return k < len && k > 1 && name[k - 1] == '_' ? k - 1 : len;
}

size_t tpl_dsl_unalias(const char *name, size_t len)
{
  size_t at = suffix_at(name, len);
  return at < len && is(name + at, len - at, "_1") ? at : len;
}

static int is_body(const char *name, size_t len)
{
  return is(name, len, "body") || is(name, len, "body_1");
}

static int has_upper(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (s[i] >= 'A' && s[i] <= 'Z')
      return 1;
  return 0;
}

/* Whether a regex run over the body in lower case (ASCII, as the engine's
 * to_lower) matches where it matches the body caselessly: none of its
 * bytes is an upper-case letter, it names no byte by its code, and it sets
 * no options of its own. */
static int caseless_same(const char *p, size_t n)
{
  if (has_upper(p, n) || memchr(p, '\0', n))
    return 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] == '\\' && !strchr("dswbhvnrtfae.*+?()[]{}|^$/-\\", p[i + 1]))
      return 0;
    if (p[i] == '\\')
      i++;
    else if (p[i] == '(' && p[i + 1] == '?' && i + 2 < n && !strchr(":=!<>", p[i + 2]))
      return 0;
  }
  return 1;
}

/* Decides atom i of d: a word or a regex of the body, a constant, or
 * the engine's. 0, or -1 when out of memory. */
static int decide_atom(tpl_dsl *d, size_t i)
{
  const expr_atom *a = expr_atom_get(d->e, i);
  d->atoms[i] = TA_EVAL;
  if (!is_body(a->var, a->var_len))
    return 0;
  if (a->kind == EXPR_ATOM_WORD) {
    if (memchr(a->lit, '\0', a->lit_len))
      return 0;
    if (!a->lit_len) {
      d->atoms[i] = TA_TRUE;
      return 0;
    }
    if (a->lower && has_upper(a->lit, a->lit_len)) {
      d->atoms[i] = TA_FALSE; /* the body in lower case holds no upper case */
      return 0;
    }
    if (!(d->words[i] = strndup(a->lit, a->lit_len)))
      return -1;
    d->atoms[i] = TA_WORD;
    return 0;
  }
  if (memchr(a->lit, '\0', a->lit_len) || (a->lower && !caseless_same(a->lit, a->lit_len)))
    return 0;
  char *text = malloc(a->lit_len + 5), msg[160];
  if (!text)
    return -1;
  snprintf(text, a->lit_len + 5, "%s%.*s", a->lower ? "(?i)" : "", (int)a->lit_len, a->lit);
  if (regex_compile(&d->regexes[i], text, msg, sizeof msg) != 0) {
    free(text); /* the engine's own evaluation takes it */
    return 0;
  }
  d->atoms[i] = TA_REGEX;
  return 0;
}

static void body_needs(tpl_dsl *d, int first);

int tpl_dsl_compile(tpl_dsl *d, const char *text, char *why, size_t cap)
{
  expr_error err;
  memset(d, 0, sizeof *d);
  if (!(d->text = strdup(text))) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  if (expr_compile(text, strlen(text), &d->e, &err) != EXPR_OK) {
    snprintf(why, cap, "column %zu: %s", err.column, err.msg);
    return -1;
  }
  size_t n = expr_atom_count(d->e);
  d->atoms = calloc(n + 1, sizeof *d->atoms);
  d->words = calloc(n + 1, sizeof *d->words);
  d->regexes = calloc(n + 1, sizeof *d->regexes);
  int failed = !d->atoms || !d->words || !d->regexes;
  for (size_t i = 0; i < n && !failed; i++)
    failed = decide_atom(d, i) != 0;
  if (failed) {
    snprintf(why, cap, "out of memory");
    return -1;
  }
  body_needs(d, 1);
  return 0;
}

/* Whether d needs this response's body whole, or its length; first: body_1
 * and response_1 are this response's (a block of one request). */
static void body_needs(tpl_dsl *d, int first)
{
  unsigned body = expr_uses(d->e, "body", 4) | (first ? expr_uses(d->e, "body_1", 6) : 0);
  d->whole_body = (body & EXPR_USE_WHOLE) || expr_uses(d->e, "response", 8) ||
                  (first && expr_uses(d->e, "response_1", 10));
  for (size_t i = 0; i < expr_atom_count(d->e); i++) {
    const expr_atom *a = expr_atom_get(d->e, i);
    d->whole_body |= d->atoms[i] == TA_EVAL && (is(a->var, a->var_len, "body") ||
                                                (first && is(a->var, a->var_len, "body_1")));
  }
  d->body_len = (body & EXPR_USE_LEN) != 0;
}

void tpl_dsl_several(tpl_dsl *d)
{
  for (size_t i = 0; d->e && i < expr_atom_count(d->e); i++) {
    const expr_atom *a = expr_atom_get(d->e, i);
    if (!is(a->var, a->var_len, "body_1") || d->atoms[i] == TA_EVAL)
      continue;
    free(d->words[i]);
    d->words[i] = NULL;
    if (d->atoms[i] == TA_REGEX) {
      free((char *)d->regexes[i].text);
      regex_free(&d->regexes[i]);
    }
    d->atoms[i] = TA_EVAL;
  }
  if (d->e)
    body_needs(d, 0);
}

/* Whether name is one of q's extractors' names. */
static int extractor_name(const tpl_request *q, const char *name, size_t len)
{
  for (size_t i = 0; i < q->nextractors; i++)
    if (q->extractors[i].name && is(name, len, q->extractors[i].name))
      return 1;
  return 0;
}

/* Whether the variable name of an expression of q can have a value: 0, or
 * -1 with why. */
/* The names a template gives its expressions beside the response's: its
 * variables and constants, and the -var's. */
typedef struct names {
  const tpl *t;
  const char *const *given;
  size_t ngiven;
} names;

static int check_var(const names *k, const tpl_request *q, const char *name, size_t len, char *why,
                     size_t cap)
{
  size_t index;
  size_t at = suffix_at(name, len);
  if (at < len && !extractor_name(q, name, len) && tpl_steps(q) > 1)
    len = at; /* X_N of a block of several requests: its response N's X (tpl_seq_check) */
  else if (at < len && !extractor_name(q, name, len)) {
    if (tpl_steps(q) != 1 || !is(name + at, len - at, "_1")) {
      snprintf(why, cap, "dsl: several requests: %.*s", (int)len, name);
      return -1;
    }
    len = at; /* nuclei's X_1 is X when the request is the first */
  }
  if (len >= 10 && !memcmp(name, "interactsh", 10)) {
    snprintf(why, cap, "interactsh");
    return -1;
  }
  /* A header's or a cookie's name is in lower case, with '_' for '-';
   * anything else must be a variable scan knows. */
  tpl_source s = tpl_name(k->t, k->given, k->ngiven, name, len, &index);
  if (s == TS_PAYLOAD && tpl_payload_find(&q->payloads, name, len) == q->payloads.n)
    s = TS_NONE; /* another request's */
  if (tpl_response_var(name, len) || tpl_url_var(name, len) || extractor_name(q, name, len) ||
      s != TS_NONE || (!has_upper(name, len) && !is(name, len, "request")))
    return 0;
  snprintf(why, cap, "dsl: variable %.*s", (int)len, name);
  return -1;
}

static int check_exprs(const names *k, const tpl_request *q, const tpl_dsl *d, size_t n, char *why,
                       size_t cap)
{
  for (size_t i = 0; i < n; i++)
    for (size_t v = 0; v < expr_var_count(d[i].e); v++) {
      size_t len;
      const char *name = expr_var_name(d[i].e, v, &len);
      if (check_var(k, q, name, len, why, cap) != 0)
        return -1;
    }
  return 0;
}

int tpl_dsl_check(const tpl *t, const char *const *given, size_t ngiven, const tpl_request *q,
                  char *why, size_t cap)
{
  names k = {t, given, ngiven};
  for (size_t i = 0; i < q->nmatchers; i++)
    if (q->matchers[i].type == TM_DSL &&
        check_exprs(&k, q, q->matchers[i].dsl, q->matchers[i].n, why, cap) != 0)
      return -1;
  for (size_t i = 0; i < q->nextractors; i++)
    if (q->extractors[i].type == TX_DSL &&
        check_exprs(&k, q, q->extractors[i].dsl, q->extractors[i].n, why, cap) != 0)
      return -1;
  return 0;
}

void tpl_dsl_free(tpl_dsl *d)
{
  size_t n = d->e ? expr_atom_count(d->e) : 0;
  for (size_t i = 0; i < n; i++) {
    free(d->words ? d->words[i] : NULL);
    if (d->atoms && d->atoms[i] == TA_REGEX) {
      free((char *)d->regexes[i].text);
      regex_free(&d->regexes[i]);
    }
  }
  free(d->words);
  free(d->regexes);
  free(d->atoms);
  free(d->ids);
  free(d->text);
  expr_free(d->e);
}
