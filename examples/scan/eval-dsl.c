/* scan's templates: nuclei's DSL over one response. The variables an
 * expression reads are the response's as nuclei names them (eval.h,
 * dsl_view); its atoms over the body are answered by the streaming
 * engine's verdict (eval-set.c made them matchers of the body), and
 * len(body) by the count of the body's bytes, so that the body is kept
 * only for what needs it whole. dsl matchers and extractors evaluate as
 * nuclei's do (pkg/operators/matchers, extractors): under and, an
 * expression that fails fails the matcher; under or, it is passed over; a
 * value that is not a bool matches nothing; an extractor reports each
 * expression's value as Go prints it, a missing variable giving none. */
#include "eval.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void dsl_view_init(dsl_view *v, const reading *r, const tpl_request *q, const eval_target *t)
{
  memset(v, 0, sizeof *v);
  v->r = r;
  v->q = q;
  v->t = t;
  expr_arena_init(&v->arena, 0);
}

void dsl_view_free(dsl_view *v)
{
  for (size_t i = 0; i < v->nown; i++)
    free(v->own[i]);
  free(v->own);
  expr_arena_free(&v->arena);
}

/* Keeps p (malloc'd) until the view is freed; NULL when out of memory. */
static void *keep(dsl_view *v, void *p)
{
  void **own = p ? realloc(v->own, (v->nown + 1) * sizeof *own) : NULL;
  if (!own) {
    free(p);
    v->nomem = 1;
    return NULL;
  }
  v->own = own;
  return own[v->nown++] = p;
}

static int is(const char *name, size_t len, const char *s)
{
  return strlen(s) == len && !memcmp(name, s, len);
}

/* The body of the response evaluated, and its length: the final one's,
 * else none (eval_target). */
static rc_view body_of(const dsl_view *v)
{
  return v->t->back ? (rc_view){"", 0} : rc_body(v->r->resp);
}

static size_t body_length(const dsl_view *v)
{
  return v->t->back ? 0 : (size_t)rc_body_length(v->r->resp);
}

/* The response's Content-Length, else the body's bytes (nuclei's
 * content_length). */
static size_t content_length(const dsl_view *v)
{
  rc_view h;
  if (rc_header(v->r->resp, eval_hop(v->t), "content-length", 0, &h) == RC_OK && h.len &&
      h.len < 20) {
    char n[24], *end;
    snprintf(n, sizeof n, "%.*s", (int)h.len, h.ptr);
    unsigned long long c = strtoull(n, &end, 10);
    if (!*end && isdigit((unsigned char)n[0]))
      return (size_t)c;
  }
  return body_length(v);
}

/* The header block, then the body, made once per view. */
static int response_text(dsl_view *v, rc_view *out)
{
  rc_hop_info h;
  rc_view head = rc_hop(v->r->resp, eval_hop(v->t), &h) == RC_OK ? h.raw : (rc_view){"", 0};
  rc_view body = body_of(v);
  char *p = keep(v, malloc(head.len + body.len + 1));
  if (!p)
    return 0;
  memcpy(p, head.ptr, head.len);
  if (body.len)
    memcpy(p + head.len, body.ptr, body.len);
  *out = (rc_view){p, head.len + body.len};
  return 1;
}

/* The values of the header a variable names (lower case, '_' for '-'),
 * joined by a space; 0 when it has none. */
static int header_text(dsl_view *v, const char *name, size_t len, rc_view *out)
{
  char h[128];
  if (!len || len >= sizeof h)
    return 0;
  for (size_t i = 0; i < len; i++) {
    if (isupper((unsigned char)name[i]))
      return 0; /* nuclei's names of headers are in lower case */
    h[i] = name[i] == '_' ? '-' : name[i];
  }
  h[len] = '\0';
  rc_view one;
  line all = {0};
  size_t n = 0;
  for (; rc_header(v->r->resp, eval_hop(v->t), h, n, &one) == RC_OK; n++) {
    if (n)
      put(&all, " ", 1);
    put(&all, one.ptr, one.len);
  }
  if (!n || all.nomem || (all.len == 0 && !(all.p = malloc(1)))) {
    v->nomem |= all.nomem;
    free(all.p);
    return 0;
  }
  if (!keep(v, all.p))
    return 0;
  *out = (rc_view){all.p, all.len};
  return 1;
}

/* The value of the cookie a variable names (Set-Cookie: name=value),
 * its name compared in lower case; 0 when none is set. */
static int cookie_text(dsl_view *v, const char *name, size_t len, rc_view *out)
{
  rc_view c;
  int found = 0;
  int hop = eval_hop(v->t);
  for (size_t i = 0; rc_header(v->r->resp, hop, "set-cookie", i, &c) == RC_OK; i++) {
    const char *p = c.ptr, *end = c.ptr + c.len, *eq = memchr(p, '=', c.len);
    if (!eq)
      continue;
    const char *ns = p, *ne = eq;
    while (ns < ne && (*ns == ' ' || *ns == '\t'))
      ns++;
    while (ne > ns && (ne[-1] == ' ' || ne[-1] == '\t'))
      ne--;
    if ((size_t)(ne - ns) != len || strncasecmp(ns, name, len))
      continue;
    const char *vs = eq + 1, *ve = memchr(vs, ';', (size_t)(end - vs));
    ve = ve ? ve : end;
    while (vs < ve && *vs == ' ')
      vs++;
    while (ve > vs && ve[-1] == ' ')
      ve--;
    if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"')
      vs++, ve--;
    *out = (rc_view){vs, (size_t)(ve - vs)}; /* the last one set wins */
    found = 1;
  }
  return found;
}

/* A named extractor's values so far: one as a string, more as a list. */
static int extracted(dsl_view *v, const char *name, size_t len, expr_value *out)
{
  for (size_t i = v->nvalues; i-- > 0;) {
    const tpl_extractor *e = &v->q->extractors[i];
    const tpl_values *x = &v->values[i];
    if (!e->name || !is(name, len, e->name) || !x->n)
      continue;
    if (x->n == 1) {
      *out = expr_str(x->v[0], strlen(x->v[0]));
      return 1;
    }
    expr_value *items = keep(v, calloc(x->n, sizeof *items));
    if (!items)
      return 0;
    for (size_t k = 0; k < x->n; k++)
      items[k] = expr_str(x->v[k], strlen(x->v[k]));
    *out = (expr_value){.type = EXPR_LIST, .u.list = {items, x->n}};
    return 1;
  }
  return 0;
}

/* The response's own variables (tpl_response_var) and its headers'. */
static int response_var(dsl_view *v, const char *name, size_t len, expr_value *out)
{
  rc_hop_info h;
  int found = rc_hop(v->r->resp, eval_hop(v->t), &h) == RC_OK;
  rc_view text;
  if (is(name, len, "status_code"))
    *out = expr_num(found ? h.status : 0);
  else if (is(name, len, "content_length"))
    *out = expr_num((double)content_length(v));
  else if (is(name, len, "duration"))
    *out = expr_num(v->t->duration);
  else if (is(name, len, "body"))
    text = body_of(v), *out = expr_str(text.ptr ? text.ptr : "", text.len);
  else if (is(name, len, "all_headers") || is(name, len, "header"))
    *out = found ? expr_str(h.raw.ptr, h.raw.len) : expr_str("", 0);
  else if (is(name, len, "response") && response_text(v, &text))
    *out = expr_str(text.ptr, text.len);
  else if (is(name, len, "host"))
    *out = expr_str(v->t->host, strlen(v->t->host));
  else if (is(name, len, "matched"))
    *out = expr_str(v->t->matched, strlen(v->t->matched));
  else if (is(name, len, "type"))
    *out = expr_str("http", 4);
  else if (header_text(v, name, len, &text) || cookie_text(v, name, len, &text))
    *out = expr_str(text.ptr, text.len);
  else
    return 0;
  return 1;
}

int dsl_lookup(void *ud, const char *name, size_t len, expr_value *out)
{
  dsl_view *v = ud;
  size_t base;
  unsigned long n;
  if (extracted(v, name, len, out))
    return 1;
  if (tpl_steps(v->q) > 1 && tpl_indexed(name, len, &base, &n)) /* X_N of a sequence */
    return v->t->seq && plan_seq_recall(v->t->seq, name, len, out);
  size_t plain = tpl_steps(v->q) == 1 ? tpl_dsl_unalias(name, len) : len;
  if (response_var(v, name, plain, out))
    return 1;
  const plan *p = v->r->g->plan;
  if (v->t->seq && plan_seq_payload(v->t->seq, p, name, len, out))
    return 1; /* a payload's value in the request's combination */
  if (v->t->seq && tpl_extracted(&p->ts->t[v->t->tpl], name, len))
    return plan_seq_value(v->t->seq, p, name, len, out);
  return v->t->vars.lookup && v->t->vars.lookup(v->t->vars.ud, v->t->tpl, name, len, out);
}

/* Keeps variable name (X_N) when N is this response's number. */
static int remember(void *ud, const char *name, size_t len)
{
  dsl_view *v = ud;
  size_t base;
  unsigned long n;
  expr_value val;
  tpl_indexed(name, len, &base, &n);
  if (n == v->t->step && response_var(v, name, base, &val) &&
      plan_seq_remember(v->t->seq, name, len, &val) != 0)
    v->nomem = 1;
  return 0;
}

void dsl_remember(dsl_view *v)
{
  if (v->t->seq && v->q->req_condition && tpl_steps(v->q) > 1)
    tpl_each_indexed(v->q, remember, v);
}

int dsl_var_text(dsl_view *v, const char *name, rc_view *out)
{
  expr_value val, s;
  if (!dsl_lookup(v, name, strlen(name), &val) || expr_format(&val, &v->arena, &s) != EXPR_OK)
    return 0;
  *out = (rc_view){s.u.str.ptr, s.u.str.len};
  return 1;
}

/* An atom of the expression being evaluated, from the stream's verdict. */
static int atom(void *ud, size_t i)
{
  const dsl_view *v = ud;
  const tpl_dsl *d = v->d;
  switch (d->atoms[i]) {
  case TA_TRUE: return 1;
  case TA_FALSE: return 0;
  case TA_WORD:
  case TA_REGEX:
    if (d->ids && d->ids[i] != SIZE_MAX)
      return verdict_has(&v->r->v, v->r->g->m, d->ids[i]) ? 1 : 0;
    return -1;
  default: return -1;
  }
}

/* len(body): the body's bytes, counted as it streamed. */
static int length(void *ud, const char *name, size_t len, size_t *out)
{
  const dsl_view *v = ud;
  if (!is(name, len, "body") && !(tpl_steps(v->q) == 1 && is(name, len, "body_1")))
    return 0;
  *out = body_length(v);
  return 1;
}

/* Evaluates d over the view. */
static expr_code evaluate(dsl_view *v, const tpl_dsl *d, int atoms, expr_value *out)
{
  expr_env env;
  expr_env_init(&env);
  env.lookup = dsl_lookup;
  env.atom = atoms && !v->t->back ? atom : NULL; /* atoms: of the final body */
  env.length = length;
  env.ud = v;
  v->d = d;
  expr_code rc = expr_eval(d->e, &env, &v->arena, out, NULL);
  v->nomem |= rc == EXPR_E_NOMEM;
  return rc;
}

int dsl_match(dsl_view *v, const tpl_matcher *m)
{
  for (size_t i = 0; i < m->n; i++) {
    expr_value out;
    if (evaluate(v, &m->dsl[i], 1, &out) != EXPR_OK) {
      if (m->cond_and)
        return 0;
      continue;
    }
    if (out.type != EXPR_BOOL)
      continue; /* nuclei: not a bool, passed over */
    if (!out.u.b && m->cond_and)
      return 0;
    if (out.u.b && (!m->cond_and || i == m->n - 1))
      return 1;
  }
  return 0;
}

void dsl_extract(dsl_view *v, const tpl_extractor *e, tpl_values *x)
{
  for (size_t i = 0; i < e->n; i++) {
    expr_value out, s;
    expr_code rc = evaluate(v, &e->dsl[i], 0, &out);
    if (rc == EXPR_E_VAR)
      continue; /* nuclei: a missing variable is no value */
    if (rc != EXPR_OK)
      return;
    if (out.type == EXPR_NIL || expr_format(&out, &v->arena, &s) != EXPR_OK)
      continue;
    if (s.u.str.len)
      tpl_values_add(x, s.u.str.ptr, s.u.str.len);
  }
}
