/* scan's sequences: what one keeps while it runs for a target (plan.h,
 * plan_seq): the values its internal extractors found, for the {{name}}
 * of its later requests and the DSL, and with req-condition the variables
 * X_N of its block's earlier responses that the block's matchers read;
 * and the values of the running block's payloads in its combination.
 * Bounded: PLAN_SEQ_VALUES values of PLAN_SEQ_VALUE bytes per extractor;
 * a response's variable only when a matcher reads it (a body as
 * --max-body kept it). The evaluation writes them (it links this file
 * without curl). */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

size_t plan_seq_block(const plan_seq *seq, const plan *p) { return p->c[seq->at].members[0].req; }

static int named(const char *s, const char *name, size_t len)
{
  return strlen(s) == len && !memcmp(s, name, len);
}

int plan_seq_value(plan_seq *seq, const plan *p, const char *name, size_t len, expr_value *out)
{
  for (size_t i = 0; i < seq->nvalues; i++) {
    const plan_seq_values *v = &seq->values[i];
    if (!named(v->name, name, len) || !v->n)
      continue;
    const cluster *c = &p->c[seq->at];
    const tpl_request *q = &p->ts->t[c->members[0].tpl].reqs[c->members[0].req];
    if (v->list && v->block != plan_seq_block(seq, p)) {
      *out = expr_str(v->list, v->list_len);
      return 1;
    }
    size_t k = q->iterate_all && v->block == plan_seq_block(seq, p) ? seq->iter : 0;
    k = k < v->n ? k : v->n - 1;
    *out = expr_str(v->v[k], v->len[k]);
    return 1;
  }
  seq->missing = 1;
  return 0;
}

static void drop_values(plan_seq_values *v)
{
  for (size_t k = 0; k < v->n; k++)
    free(v->v[k]);
  v->n = 0;
  free(v->list);
  v->list = NULL;
}

/* x's values as the list a flow's later block reads: "[v1 v2 ...]". 0 or
 * -1. */
static int list_values(plan_seq_values *x)
{
  free(x->list);
  x->list = NULL;
  size_t n = 2;
  for (size_t k = 0; k < x->n; k++)
    n += x->len[k] + 1;
  if (!(x->list = malloc(n)))
    return -1;
  char *at = x->list;
  *at++ = '[';
  for (size_t k = 0; k < x->n; k++) {
    if (k)
      *at++ = ' ';
    memcpy(at, x->v[k], x->len[k]);
    at += x->len[k];
  }
  *at++ = ']';
  *at = '\0';
  x->list_len = (size_t)(at - x->list);
  return 0;
}

int plan_seq_extracted(plan_seq *seq, const plan *p, const char *name, char *const *v,
                       const size_t *len, size_t n)
{
  size_t i = 0;
  while (i < seq->nvalues && strcmp(seq->values[i].name, name))
    i++;
  if (i == seq->nvalues) {
    plan_seq_values *g = realloc(seq->values, (i + 1) * sizeof *g);
    if (!g)
      return -1;
    seq->values = g;
    memset(&g[i], 0, sizeof *g);
    g[i].name = name;
    if (!(g[i].v = calloc(PLAN_SEQ_VALUES, sizeof *g[i].v)) ||
        !(g[i].len = calloc(PLAN_SEQ_VALUES, sizeof *g[i].len))) {
      free(g[i].v);
      free(g[i].len);
      return -1;
    }
    seq->nvalues++;
  }
  plan_seq_values *x = &seq->values[i];
  /* The newest values first (nuclei's), but under iterate-all those of
   * the block after the ones it iterates over, which stay in place. */
  const cluster *c = &p->c[seq->at];
  int keep = x->block == plan_seq_block(seq, p) &&
             p->ts->t[c->members[0].tpl].reqs[c->members[0].req].iterate_all;
  if (!keep)
    drop_values(x);
  x->block = plan_seq_block(seq, p);
  for (size_t k = 0; k < n && x->n < PLAN_SEQ_VALUES; k++) {
    size_t l = len ? len[k] : strlen(v[k]), j = 0;
    l = l < PLAN_SEQ_VALUE ? l : PLAN_SEQ_VALUE;
    while (j < x->n && !(x->len[j] == l && !memcmp(x->v[j], v[k], l)))
      j++;
    if (j < x->n)
      continue; /* known */
    if (!(x->v[x->n] = malloc(l + 1)))
      return -1;
    memcpy(x->v[x->n], v[k], l);
    x->v[x->n][l] = '\0';
    x->len[x->n++] = l;
  }
  return x->n > 1 && p->ts->t[c->members[0].tpl].flow ? list_values(x) : 0;
}

int plan_seq_remember(plan_seq *seq, const char *name, size_t len, const expr_value *v)
{
  size_t i = 0;
  while (i < seq->nvars && !named(seq->vars[i].name, name, len))
    i++;
  if (i == seq->nvars) {
    plan_seq_var *g = realloc(seq->vars, (i + 1) * sizeof *g);
    if (!g)
      return -1;
    seq->vars = g;
    memset(&g[i], 0, sizeof *g);
    if (!(g[i].name = strndup(name, len)))
      return -1;
    seq->nvars++;
  }
  plan_seq_var *x = &seq->vars[i];
  free(x->p);
  x->p = NULL;
  x->len = 0;
  x->number = v->type == EXPR_NUM;
  x->num = x->number ? v->u.num : 0;
  if (!x->number && v->type == EXPR_STR) {
    if (!(x->p = malloc(v->u.str.len + 1)))
      return -1;
    memcpy(x->p, v->u.str.ptr, v->u.str.len);
    x->p[v->u.str.len] = '\0';
    x->len = v->u.str.len;
  }
  return 0;
}

int plan_seq_payload(const plan_seq *seq, const plan *p, const char *name, size_t len,
                     expr_value *out)
{
  const cluster *c = &p->c[seq->at];
  const tpl_payloads *ps = &p->ts->t[c->members[0].tpl].reqs[c->members[0].req].payloads;
  size_t i = tpl_payload_find(ps, name, len);
  if (i == ps->n || seq->combo >= ps->combos)
    return 0;
  const char *v = tpl_payload_value(ps, i, seq->combo);
  *out = expr_str(v, strlen(v));
  return 1;
}

int plan_seq_recall(const plan_seq *seq, const char *name, size_t len, expr_value *out)
{
  for (size_t i = 0; i < seq->nvars; i++)
    if (named(seq->vars[i].name, name, len)) {
      const plan_seq_var *x = &seq->vars[i];
      *out = x->number ? expr_num(x->num) : expr_str(x->p ? x->p : "", x->len);
      return 1;
    }
  return 0;
}

void plan_seq_forget(plan_seq *seq, int clear)
{
  for (size_t i = 0; i < seq->nvars; i++) {
    free(seq->vars[i].name);
    free(seq->vars[i].p);
  }
  seq->nvars = 0;
  for (size_t i = 0; clear && i < seq->nvalues; i++)
    drop_values(&seq->values[i]);
}

void plan_seq_free(plan_seq *seq)
{
  plan_seq_forget(seq, 1);
  for (size_t i = 0; i < seq->nvalues; i++) {
    free(seq->values[i].v);
    free(seq->values[i].len);
  }
  free(seq->values);
  free(seq->vars);
  memset(seq, 0, sizeof *seq);
}
