/* scan's templates: the several requests of a template as nuclei orders
 * them (a block's paths, or its raw requests, block after block), the
 * values its internal extractors give its later requests ({{name}}), and
 * the variables X_N by which a block's matchers read its earlier
 * responses (req-condition); self-contained templates' requests. */
#include "tpl.h"

#include <stdlib.h>
#include <string.h>

size_t tpl_steps(const tpl_request *q) { return q->nraws ? q->nraws : q->npaths; }

const tpl_request *tpl_step(const tpl_request *q, size_t k, const char **path)
{
  if (q->nraws) {
    *path = q->raws[k].paths[0];
    return &q->raws[k];
  }
  *path = q->paths[k];
  return q;
}

int tpl_extracted(const tpl *t, const char *name, size_t len)
{
  for (size_t r = 0; r < t->nreqs; r++)
    for (size_t i = 0; i < t->reqs[r].nextractors; i++) {
      const tpl_extractor *x = &t->reqs[r].extractors[i];
      if (x->internal && x->name && strlen(x->name) == len && !memcmp(x->name, name, len))
        return 1;
    }
  return 0;
}

int tpl_indexed(const char *name, size_t len, size_t *base, unsigned long *n)
{
  size_t k = len;
  while (k && name[k - 1] >= '0' && name[k - 1] <= '9')
    k--;
  if (k == len || k < 2 || name[k - 1] != '_' || len - k > 6)
    return 0;
  *base = k - 1;
  *n = strtoul(name + k, NULL, 10);
  return *n > 0;
}

/* Calls fn over each variable of n expressions d that is an X_N. */
static int each_in(const tpl_dsl *d, size_t n, int (*fn)(void *, const char *, size_t), void *ud)
{
  size_t base;
  unsigned long k;
  for (size_t i = 0; i < n; i++)
    for (size_t v = 0; d[i].e && v < expr_var_count(d[i].e); v++) {
      size_t len;
      const char *name = expr_var_name(d[i].e, v, &len);
      int rc = tpl_indexed(name, len, &base, &k) ? fn(ud, name, len) : 0;
      if (rc)
        return rc;
    }
  return 0;
}

int tpl_each_indexed(const tpl_request *q, int (*fn)(void *ud, const char *name, size_t len),
                     void *ud)
{
  size_t base;
  unsigned long k;
  int rc = 0;
  for (size_t i = 0; !rc && i < q->nmatchers; i++) {
    const tpl_matcher *m = &q->matchers[i];
    if (m->type == TM_DSL)
      rc = each_in(m->dsl, m->n, fn, ud);
    else if (m->part == TP_VAR && tpl_indexed(m->header, strlen(m->header), &base, &k))
      rc = fn(ud, m->header, strlen(m->header));
  }
  for (size_t i = 0; !rc && i < q->nextractors; i++) {
    const tpl_extractor *x = &q->extractors[i];
    if (x->type == TX_DSL)
      rc = each_in(x->dsl, x->n, fn, ud);
    else if (x->part == TP_VAR && x->header && tpl_indexed(x->header, strlen(x->header), &base, &k))
      rc = fn(ud, x->header, strlen(x->header));
  }
  return rc;
}

/* Whether name is body_N or response_N of request *(unsigned long *)ud. */
static int reads_body(void *ud, const char *name, size_t len)
{
  size_t base;
  unsigned long n;
  if (!tpl_indexed(name, len, &base, &n))
    return 0;
  return n == *(unsigned long *)ud &&
         ((base == 4 && !memcmp(name, "body", 4)) || (base == 8 && !memcmp(name, "response", 8)));
}

int tpl_reads_body(const tpl_request *q, unsigned long n)
{
  return tpl_each_indexed(q, reads_body, &n);
}

/* A name X_N that block *ud cannot give: N past its requests. */
typedef struct index_check {
  const tpl_request *q;
  const char *name;
  size_t len;
} index_check;

static int past(void *ud, const char *name, size_t len)
{
  index_check *c = ud;
  size_t base;
  unsigned long n;
  if (!tpl_indexed(name, len, &base, &n))
    return 0;
  for (size_t i = 0; i < c->q->nextractors; i++)
    if (c->q->extractors[i].name && strlen(c->q->extractors[i].name) == len &&
        !memcmp(c->q->extractors[i].name, name, len))
      return 0; /* an extractor's name, not a response's */
  if (n <= tpl_steps(c->q) && n > 0)
    return 0;
  c->name = name;
  c->len = len;
  return 1;
}

static int any(void *ud, const char *name, size_t len)
{
  (void)ud, (void)name, (void)len;
  return 1;
}

const char *tpl_seq_check(tpl_request *q, char *why, size_t cap)
{
  if (tpl_steps(q) < 2) /* one request: X_1 is X (tpl_dsl_unalias) */
    return NULL;
  index_check c = {q, NULL, 0};
  if (tpl_each_indexed(q, past, &c)) {
    snprintf(why, cap, "req-condition: %.*s names no request of its block", (int)c.len, c.name);
    return why;
  }
  /* nuclei's rule: a matcher or extractor that names an X_N turns it on. */
  q->req_condition |= tpl_each_indexed(q, any, NULL);
  for (size_t i = 0; i < q->nmatchers; i++)
    for (size_t k = 0; q->matchers[i].type == TM_DSL && k < q->matchers[i].n; k++)
      tpl_dsl_several(&q->matchers[i].dsl[k]);
  for (size_t i = 0; i < q->nextractors; i++)
    for (size_t k = 0; q->extractors[i].type == TX_DSL && k < q->extractors[i].n; k++)
      tpl_dsl_several(&q->extractors[i].dsl[k]);
  return NULL;
}

/* Whether a URL is absolute over http or https, or begins with a {{name}}
 * that is no target variable (a -var, a template variable). */
static int absolute(const char *url)
{
  if (!strncmp(url, "{{", 2)) {
    for (size_t i = 0; i < tpl_ntarget_names; i++) {
      size_t n = strlen(tpl_target_names[i]);
      if (!strncmp(url + 2, tpl_target_names[i], n) && !strncmp(url + 2 + n, "}}", 2))
        return 0;
    }
    return 1;
  }
  return !strncmp(url, "http://", 7) || !strncmp(url, "https://", 8);
}

int tpl_self_check(const tpl *t, char *why, size_t cap)
{
  for (size_t q = 0; q < t->nreqs; q++)
    for (size_t k = 0; k < tpl_steps(&t->reqs[q]); k++) {
      const char *path;
      tpl_step(&t->reqs[q], k, &path);
      if (!absolute(path)) {
        snprintf(why, cap,
                 "self-contained: a request's URL not its own (absolute, or a variable's)");
        return -1;
      }
    }
  return 0;
}
