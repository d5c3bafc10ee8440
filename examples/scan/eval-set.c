/* scan's templates as matchers: the words and regexes of the body of all
 * loaded templates as one set (each distinct one once), with the atoms of
 * their DSL expressions over the body (contains(body, "w"), regex("r",
 * body), over tolower(body) too: tpl-dsl.c), which the engine runs over
 * each body as it streams, and what the evaluation of each cluster's
 * response needs of it, decided once from the plan. */
#include "eval.h"

#include <stdlib.h>
#include <string.h>

/* The distinct words and regexes found so far, by their text: an open
 * table of ids (words from 0, regexes from SET_REGEX), twice as large as
 * all of them. */
#define SET_REGEX ((size_t)1 << (sizeof(size_t) * 8 - 2))
typedef struct pattern_set {
  matchers *out;
  size_t *slot; /* SIZE_MAX: free */
  size_t mask;
} pattern_set;

static size_t text_hash(const char *s, int kind)
{
  size_t h = 1469598103934665603u ^ (size_t)kind;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

/* The id of a word (kind 0, 1 nocase) or a regex (kind 2) among out's
 * (regexes from 0), added when new. */
static size_t pattern_id(pattern_set *ps, const char *word, const regex *re, int kind)
{
  matchers *out = ps->out;
  const char *text = kind == 2 ? re->text : word;
  size_t h = text_hash(text, kind) & ps->mask;
  for (; ps->slot[h] != SIZE_MAX; h = (h + 1) & ps->mask) {
    size_t id = ps->slot[h];
    if (kind == 2 && id >= SET_REGEX && !strcmp(out->regexes[id - SET_REGEX].text, text))
      return id - SET_REGEX;
    if (kind < 2 && id < SET_REGEX && out->word_nocase[id] == kind && !strcmp(out->words[id], text))
      return id;
  }
  if (kind == 2) {
    out->regexes[out->nregexes] = *re; /* shared: freed with the template */
    ps->slot[h] = SET_REGEX + out->nregexes;
    return out->nregexes++;
  }
  out->word_nocase[out->nwords] = (unsigned char)kind;
  out->words[out->nwords] = word;
  ps->slot[h] = out->nwords;
  return out->nwords++;
}

static size_t word_id(pattern_set *ps, const char *word, int nocase)
{
  return pattern_id(ps, word, NULL, nocase ? 1 : 0);
}

static size_t regex_id(pattern_set *ps, const regex *re) { return pattern_id(ps, NULL, re, 2); }

/* Whether value k of m (a word or a regex) is matched for each response
 * (its {{...}} are the target's, the response's, or random): over the kept
 * body or the header part, never on the stream. */
static int per_response(const tpl_matcher *m, size_t k)
{
  return m->renders && m->renders[k] == TPL_WORD_RESPONSE;
}

/* The words and the regexes of the body of m (its atoms too), counted. */
static void count_values(const tpl_matcher *m, size_t *words, size_t *regexes)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    for (size_t k = 0; k < expr_atom_count(m->dsl[i].e); k++) {
      *words += m->dsl[i].atoms[k] == TA_WORD;
      *regexes += m->dsl[i].atoms[k] == TA_REGEX;
    }
  for (size_t k = 0; (m->part == TP_BODY || m->part == TP_ALL) && m->type == TM_WORD && k < m->n;
       k++)
    *words += !per_response(m, k);
  for (size_t k = 0; (m->part == TP_BODY || m->part == TP_ALL) && m->type == TM_REGEX && k < m->n;
       k++)
    *regexes += !per_response(m, k);
}

/* The ids of expression d's atoms of the body among out's (SIZE_MAX: an
 * atom of no id). 0 or -1. */
static int atom_ids(pattern_set *out, tpl_dsl *d)
{
  size_t n = expr_atom_count(d->e);
  if (!(d->ids = calloc(n + 1, sizeof *d->ids)))
    return -1;
  for (size_t k = 0; k < n; k++) {
    const expr_atom *a = expr_atom_get(d->e, k);
    d->ids[k] = d->atoms[k] == TA_WORD    ? word_id(out, d->words[k], a->lower)
                : d->atoms[k] == TA_REGEX ? regex_id(out, &d->regexes[k])
                                          : SIZE_MAX;
  }
  return 0;
}

/* The ids of m's values of the body (its atoms' too) among out's. Regex
 * ids count from 0 here; shift_ids adds the words' count. 0 or -1. */
static int assign_ids(pattern_set *out, tpl_matcher *m)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    if (atom_ids(out, &m->dsl[i]) != 0)
      return -1;
  if ((m->part != TP_BODY && m->part != TP_ALL) || (m->type != TM_WORD && m->type != TM_REGEX))
    return 0;
  if (!(m->ids = calloc(m->n, sizeof *m->ids)))
    return -1;
  for (size_t k = 0; k < m->n; k++)
    m->ids[k] = per_response(m, k)    ? SIZE_MAX
                : m->type == TM_WORD ? word_id(out, m->words[k], m->nocase)
                                     : regex_id(out, &m->regexes[k]);
  return 0;
}

/* The regexes' ids follow the words' (eval.h). */
static void shift_ids(tpl_matcher *m, size_t nwords)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    for (size_t k = 0; k < expr_atom_count(m->dsl[i].e); k++)
      if (m->dsl[i].atoms[k] == TA_REGEX)
        m->dsl[i].ids[k] += nwords;
  for (size_t k = 0; m->ids && m->type == TM_REGEX && k < m->n; k++)
    m->ids[k] += nwords;
}

/* Runs body with m each matcher of the templates. */
#define EACH_MATCHER(ts, m, body)                                                                  \
  for (size_t t_ = 0; t_ < (ts)->n; t_++)                                                          \
    for (size_t q_ = 0; q_ < (ts)->t[t_].nreqs; q_++)                                              \
      for (size_t i_ = 0; i_ < (ts)->t[t_].reqs[q_].nmatchers; i_++) {                             \
        tpl_matcher *m = &(ts)->t[t_].reqs[q_].matchers[i_];                                       \
        body;                                                                                      \
      }

int eval_matchers(templates *ts, const matchers *base, matchers *out)
{
  size_t nw = 0, nr = 0;
  EACH_MATCHER(ts, m, count_values(m, &nw, &nr));
  *out = *base;
  out->words = calloc(nw + 1, sizeof *out->words);
  out->word_nocase = calloc(nw + 1, 1);
  out->regexes = calloc(nr + 1, sizeof *out->regexes);
  out->nwords = out->nregexes = out->nextracts = 0;
  out->part = PART_BODY;
  out->stop_on_match = 0;
  pattern_set ps = {out, NULL, 1};
  while (ps.mask < 2 * (nw + nr) + 1)
    ps.mask = 2 * ps.mask + 1;
  if (!out->words || !out->word_nocase || !out->regexes ||
      !(ps.slot = malloc((ps.mask + 1) * sizeof *ps.slot)))
    return -1;
  memset(ps.slot, 0xff, (ps.mask + 1) * sizeof *ps.slot);
  int failed = 0;
  EACH_MATCHER(ts, m, failed |= !failed && assign_ids(&ps, m) != 0);
  free(ps.slot);
  if (failed)
    return -1;
  EACH_MATCHER(ts, m, shift_ids(m, out->nwords));
  return 0;
}

/* Whether DSL expression d needs the body kept whole; an extractor's
 * atoms (of no id) are the engine's to evaluate, over the body too. */
int eval_dsl_whole_body(const tpl_dsl *d, int extractor)
{
  for (size_t k = 0; extractor && k < expr_atom_count(d->e); k++)
    if (d->atoms[k] == TA_WORD || d->atoms[k] == TA_REGEX)
      return 1;
  return d->whole_body;
}

/* Whether request q needs the body kept: an extractor of the body, an
 * expression that reads it whole, a word of the body replaced for each
 * response (its other matchers of the body run on the stream, or over a
 * body kept for the regexes the stream does not take: see eval_matchers). */
static int needs_body(const tpl_request *q)
{
  for (size_t i = 0; i < q->nextractors; i++) {
    const tpl_extractor *x = &q->extractors[i];
    if ((x->type == TX_REGEX || x->type == TX_JSON || x->type == TX_XPATH) &&
        (x->part == TP_BODY || x->part == TP_ALL))
      return 1;
    for (size_t k = 0; x->type == TX_KVAL && k < x->n; k++)
      if (!strcmp(x->keys[k], "body") || !strcmp(x->keys[k], "response"))
        return 1;
    for (size_t k = 0; x->type == TX_DSL && k < x->n; k++)
      if (eval_dsl_whole_body(&x->dsl[k], 1))
        return 1;
  }
  for (size_t i = 0; i < q->nmatchers; i++) {
    const tpl_matcher *m = &q->matchers[i];
    if (m->type == TM_XPATH && (m->part == TP_BODY || m->part == TP_ALL))
      return 1;
    for (size_t k = 0; k < m->n; k++)
      if ((m->type == TM_DSL && eval_dsl_whole_body(&m->dsl[k], 0)) ||
          ((m->part == TP_BODY || m->part == TP_ALL) && per_response(m, k)))
        return 1;
  }
  return 0;
}

/* Adds ids[0 .. n-1] (SIZE_MAX: none) to cluster e's, each once (seen[id]:
 * added already). 0, or -1 when out of memory. */
static int add_some(const size_t *ids, size_t n, unsigned char *seen, eval_cluster *e,
                    size_t *cap)
{
  for (size_t k = 0; ids && k < n; k++) {
    if (ids[k] == SIZE_MAX || seen[ids[k]])
      continue;
    if (e->nids == *cap) {
      size_t *g = realloc(e->ids, (*cap = *cap ? 2 * *cap : 8) * sizeof *g);
      if (!g)
        return -1;
      e->ids = g;
    }
    seen[ids[k]] = 1;
    e->ids[e->nids++] = ids[k];
  }
  return 0;
}

/* Adds the ids of m's body values (its atoms' too) to cluster e's. */
static int add_ids(const tpl_matcher *m, unsigned char *seen, eval_cluster *e, size_t *cap)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    if (add_some(m->dsl[i].ids, expr_atom_count(m->dsl[i].e), seen, e, cap) != 0)
      return -1;
  return add_some(m->ids, m->n, seen, e, cap);
}

static int by_id(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

/* Whether one of ids[0 .. n-1] runs over the kept body. */
static int some_unstreamed(const size_t *ids, size_t n, const unsigned char *streamed)
{
  for (size_t k = 0; ids && k < n; k++)
    if (ids[k] != SIZE_MAX && !streamed[ids[k]])
      return 1;
  return 0;
}

/* Whether a value of m (its atoms too) runs over the kept body. */
static int unstreamed(const tpl_matcher *m, const unsigned char *streamed)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    if (some_unstreamed(m->dsl[i].ids, expr_atom_count(m->dsl[i].e), streamed))
      return 1;
  return some_unstreamed(m->ids, m->n, streamed);
}

int eval_clusters(engine *g, const matchers *m, const templates *ts, const plan *p)
{
  g->m = m;
  size_t nids = g->m->nwords + g->m->nregexes;
  int ok = 1;
  g->tpl = ts;
  g->plan = p;
  unsigned char *seen = calloc(nids + 1, 1);
  g->few_only = calloc(nids + 1, 1);
  if (!seen || !g->few_only || !(g->clusters = calloc(p->nclusters + 1, sizeof *g->clusters))) {
    free(seen);
    return -1;
  }
  for (size_t i = 0; i < p->nclusters && ok; i++) {
    const cluster *c = &p->c[i];
    eval_cluster *e = &g->clusters[i];
    size_t cap = 0;
    for (size_t k = 0; k < c->nmembers && ok; k++) {
      const tpl_request *q = &ts->t[c->members[k].tpl].reqs[c->members[k].req];
      for (size_t j = 0; j < q->nmatchers && ok; j++)
        ok = add_ids(&q->matchers[j], seen, e, &cap) == 0;
    }
    if (ok && !e->ids && !(e->ids = malloc(sizeof *e->ids))) /* none, yet not all */
      ok = 0;
    if (e->nids)
      qsort(e->ids, e->nids, sizeof *e->ids, by_id);
    for (size_t k = 0; k < e->nids; k++)
      seen[e->ids[k]] = 0;
    e->literal = literal_cluster(g, e->ids, e->nids);
    for (size_t k = 0; k < e->nids; k++)
      g->few_only[e->ids[k]] |= e->literal ? 1 : 2;
  }
  /* A word that only clusters of a few words have is none of the engine's. */
  for (size_t id = 0; id < nids; id++)
    g->few_only[id] = g->few_only[id] == 1;
  free(seen);
  return ok ? 0 : -1;
}

/* The payload combinations of cluster c's block when it is a sequence's
 * request, else 1 (it runs once per target). */
static size_t combos_of(const templates *ts, const cluster *c)
{
  return c->step ? ts->t[c->members[0].tpl].reqs[c->members[0].req].payloads.combos : 1;
}

/* The fewest combinations a hot cluster's block has (eval_cluster): the
 * EVAL_HOT_CLUSTERS-th most of the sequences' clusters, EVAL_HOT_COMBOS
 * at least. */
static size_t hot_combos(const templates *ts, const plan *p)
{
  size_t top[EVAL_HOT_CLUSTERS] = {0}; /* descending */
  for (size_t i = 0; i < p->nclusters; i++) {
    size_t n = combos_of(ts, &p->c[i]), k = EVAL_HOT_CLUSTERS;
    while (k > 0 && top[k - 1] < n) {
      if (k < EVAL_HOT_CLUSTERS)
        top[k] = top[k - 1];
      k--;
    }
    if (k < EVAL_HOT_CLUSTERS)
      top[k] = n;
  }
  size_t least = top[EVAL_HOT_CLUSTERS - 1];
  return least > EVAL_HOT_COMBOS ? least : EVAL_HOT_COMBOS;
}

int eval_plan(engine *g, const templates *ts, const plan *p)
{
  int any = 0;
  size_t hot = hot_combos(ts, p);
  for (size_t i = 0; i < p->nclusters; i++) {
    const cluster *c = &p->c[i];
    eval_cluster *e = &g->clusters[i];
    int stops = 1;
    for (size_t k = 0; k < c->nmembers; k++) {
      const tpl_request *q = &ts->t[c->members[k].tpl].reqs[c->members[k].req];
      /* and a sequence's request whose body a later one's matchers read */
      e->keep_body |= needs_body(q) || tpl_reads_body(q, c->step ? c->step : 1);
      for (size_t j = 0; j < q->nmatchers; j++) {
        e->keep_body |= unstreamed(&q->matchers[j], g->streamed);
        stops &= q->matchers[j].type != TM_SIZE || q->matchers[j].part == TP_HEADER;
        stops &= q->matchers[j].type != TM_DSL && q->matchers[j].type != TM_XPATH; /* once the body is over */
      }
      stops &= !q->nextractors;
    }
    e->can_stop = stops && !e->keep_body;
    e->hot = combos_of(ts, c) >= hot;
    any |= e->keep_body;
  }
  return any;
}

void eval_keeps(const tpl *t, tpl_keeps *k)
{
  memset(k, 0, sizeof *k);
  for (size_t r = 0; r < t->nreqs; r++) {
    const tpl_request *q = &t->reqs[r];
    size_t words = 0, regexes = 0;
    k->whole |= needs_body(q);
    for (size_t i = 0; i < q->nmatchers; i++) {
      const tpl_matcher *m = &q->matchers[i];
      count_values(m, &words, &regexes);
      k->count |= m->type == TM_SIZE && (m->part == TP_BODY || m->part == TP_ALL);
      for (size_t w = 0; m->renders && w < m->n; w++) {
        k->scan_words += m->renders[w] == TPL_WORD_SCAN;
        k->response_words += m->renders[w] == TPL_WORD_RESPONSE;
      }
      for (size_t e = 0; m->type == TM_DSL && e < m->n; e++)
        k->count |= m->dsl[e].body_len;
    }
    for (size_t i = 0; i < q->nextractors; i++)
      for (size_t e = 0; q->extractors[i].type == TX_DSL && e < q->extractors[i].n; e++)
        k->count |= q->extractors[i].dsl[e].body_len;
    k->streamed += words + regexes;
  }
}

void eval_matchers_free(matchers *out)
{
  free(out->words);
  free(out->word_nocase);
  free(out->regexes);
}
