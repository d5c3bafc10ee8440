/* scan's sequences: the templates whose requests depend on each other run
 * one request at a time for a target, in nuclei's order, on one easy
 * handle with its cookie jar; the others stay independent requests,
 * clustered (plan-cluster.c), which is what makes a scan fast.
 *
 * The rule, decided once from the model: a template runs as a sequence
 * when
 *  - it has a flow: (tpl-flow.c): its blocks run in the order of the
 *    flow's steps, each as the verdict of the block before chooses (a
 *    block is true when one of its responses matched, as nuclei's), or
 *  - a block has several raw requests (nuclei's way of writing a login,
 *    then what it opens), or
 *  - a request names a value an internal extractor gives ({{name}}), or
 *  - a block has payloads: each combination, in turn, runs the block's
 *    requests (nuclei's generator), or
 *  - a block of several requests has req-condition (explicit, or implied
 *    by a matcher naming X_N), or
 *  - it has several requests and a block says stop-at-first-match or
 *    cookie-reuse: true, or a request other than the last changes state
 *    (a method other than GET or HEAD, or a body): what follows it may
 *    need its cookies, or
 *  - it is self-contained: its requests' URLs are its own, and it runs
 *    once in the scan, before the targets' requests, its target the URL
 *    of its first request (nuclei's), or
 *  - it has several requests, one of which reads a name nobody gives
 *    (plan_unresolved): that one is not sent and ends its block, as
 *    nuclei's refusal does; the requests before it are sent.
 * A template whose every block starts with such a request sends nothing:
 * it has no sequence (nor a template of one such request, a cluster).
 * Anything else, several paths of GETs included, is a set of independent
 * probes: their requests join clusters, and cookies do not carry from one
 * to the next (nuclei's jar would carry them; such probes seldom set one
 * that another reads).
 *
 * A template of one block with payloads whose combinations share nothing
 * (no internal extractor, no stop-at-first-match, no @once, not
 * self-contained) runs its combinations side by side, as nuclei's payload
 * concurrency does (its threads:, else -pc): on several jobs (lanes) of
 * the target, each its own sequence over every lanes-th combination, the
 * requests of one combination in order on one handle.
 *
 * While a sequence runs for a target, plan_seq keeps what nuclei keeps
 * (plan-values.c), and the requests it makes are at most
 * PLAN_SEQ_REQUESTS (its lanes together). */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* Whether template t's request texts use a value extracted. */
static int uses_dynamic(const templates *ts, size_t t)
{
  const tpl *tp = &ts->t[t];
  for (size_t q = 0; q < tp->nreqs; q++)
    for (size_t k = 0; k < tpl_steps(&tp->reqs[q]); k++) {
      const char *path;
      const tpl_request *step = tpl_step(&tp->reqs[q], k, &path);
      if (plan_uses(ts, t, step, path) & TPL_USES_DYNAMIC)
        return 1;
    }
  return 0;
}

int plan_needs_sequence(const plan *p, size_t t)
{
  const tpl *tp = &p->ts->t[t];
  size_t all = 0;
  for (size_t q = 0; q < tp->nreqs; q++)
    all += tpl_steps(&tp->reqs[q]);
  if (!plan_sends(p->ts, t))
    return 0; /* plan_build joins no cluster of it either */
  if (tp->flow || uses_dynamic(p->ts, t) || tp->self_contained || tp->unresolved)
    return 1;
  for (size_t q = 0; q < tp->nreqs; q++)
    if (tp->reqs[q].payloads.n)
      return 1;
  size_t seen = 0;
  for (size_t q = 0; all > 1 && q < tp->nreqs; q++) {
    const tpl_request *r = &tp->reqs[q];
    size_t n = tpl_steps(r);
    if (r->nraws > 1 || (n > 1 && r->req_condition) || r->stop_first || r->cookie_reuse ||
        r->payloads.n)
      return 1;
    for (size_t k = 0; k < n; k++, seen++) {
      const char *path;
      const tpl_request *step = tpl_step(r, k, &path);
      int changes = step->body || (strcmp(step->method, "GET") && strcmp(step->method, "HEAD"));
      if (changes && seen + 1 < all)
        return 1;
    }
  }
  return 0;
}

/* How many jobs run template t's payload combinations side by side (see
 * above): its threads:, else the scan's payload concurrency, at most its
 * combinations; 1: one after another. */
static size_t lanes_of(const plan *p, size_t t)
{
  const tpl *tp = &p->ts->t[t];
  const tpl_request *r = &tp->reqs[0];
  if (tp->nreqs != 1 || !r->payloads.n || r->stop_first || r->once || tp->self_contained ||
      tp->flow || uses_dynamic(p->ts, t))
    return 1;
  for (size_t k = 0; k < r->nextractors; k++)
    if (r->extractors[k].internal)
      return 1;
  for (size_t k = 0; k < r->nraws; k++)
    if (r->raws[k].once)
      return 1;
  long want = r->threads > 0 ? r->threads : p->payload_concurrency;
  if (want <= 1)
    return 1;
  return (unsigned long)want < r->payloads.combos ? (size_t)want : r->payloads.combos;
}

int plan_sequences(plan *p)
{
  const templates *ts = p->ts;
  size_t more = 0, n = 0;
  for (size_t t = 0; t < ts->n; t++) {
    if (!plan_needs_sequence(p, t))
      continue;
    n++;
    for (size_t q = 0; q < ts->t[t].nreqs; q++)
      more += tpl_steps(&ts->t[t].reqs[q]);
  }
  if (!n)
    return 0;
  cluster *c = realloc(p->c, (p->nclusters + more) * sizeof *c);
  if (c)
    p->c = c;
  if (!c || !(p->seqs = calloc(n, sizeof *p->seqs)))
    return -1;
  for (size_t t = 0; t < ts->n; t++) {
    if (!plan_needs_sequence(p, t))
      continue;
    plan_sequence *s = &p->seqs[p->nseqs++];
    s->tpl = t;
    s->first = p->nclusters;
    s->once = ts->t[t].self_contained;
    s->lanes = lanes_of(p, t);
    for (size_t q = 0; q < ts->t[t].nreqs; q++)
      for (size_t k = 0; k < tpl_steps(&ts->t[t].reqs[q]); k++) {
        const tpl_request *r = &ts->t[t].reqs[q];
        const char *path;
        const tpl_request *step = tpl_step(r, k, &path);
        cluster *one = &p->c[p->nclusters];
        plan_cluster_init(one, r, step, path);
        if (!(one->members = malloc(sizeof *one->members)))
          return -1;
        p->nclusters++;
        one->members[0] = (tpl_member){t, q};
        one->nmembers = 1;
        one->owner = t;
        one->alone = 1;
        one->step = k + 1;
        one->no_cookies = r->no_cookies;
        one->unresolved = plan_unresolved(ts, t, q, k);
        one->kept = plan_kept_texts(ts, t, one);
        s->n++;
      }
  }
  return 0;
}

/* ---- The next request --------------------------------------------------- */

/* The first request of the block after the one of request at, or the end. */
static size_t next_block(const plan *p, const plan_sequence *s, size_t at)
{
  size_t q = p->c[at].members[0].req;
  while (at < s->first + s->n && p->c[at].members[0].req == q)
    at++;
  return at;
}

/* The most values one extractor of the running block found. */
static size_t block_values(const plan *p, const plan_seq *seq)
{
  size_t most = 0;
  for (size_t i = 0; i < seq->nvalues; i++)
    if (seq->values[i].block == plan_seq_block(seq, p) && seq->values[i].n > most)
      most = seq->values[i].n;
  return most;
}

/* The first request of the block of request at. */
static size_t block_first(const plan *p, const plan_sequence *s, size_t at)
{
  size_t q = p->c[at].members[0].req;
  while (at > s->first && p->c[at - 1].members[0].req == q)
    at--;
  return at;
}

/* A block of the sequence begins: what the one before kept of its own is
 * dropped. */
static void block_begins(plan_seq *seq)
{
  plan_seq_forget(seq, 0);
  seq->matched = seq->ok = 0;
  seq->iter = 0;
  seq->combo = 0;
}

/* With a flow: the first request of the block of the flow's step (a step
 * of no block is false), that block begun; past the sequence's requests
 * when the flow is over. */
static size_t flow_block(const plan *p, plan_seq *seq)
{
  const plan_sequence *s = &p->seqs[seq->index];
  const tpl_flow *f = p->ts->t[s->tpl].flow;
  while (seq->step < f->n && f->steps[seq->step].block == TPL_FLOW_NONE)
    seq->step = f->steps[seq->step].no;
  size_t at = s->first, end = s->first + s->n;
  while (seq->step < f->n && at < end && p->c[at].members[0].req != f->steps[seq->step].block)
    at++;
  if (seq->step == f->n)
    return end;
  block_begins(seq);
  return at;
}

/* Where the sequence goes when its running block is over: to the next
 * block (at end), or with a flow to the block of the step its block's
 * verdict chooses. */
static size_t after_block(const plan *p, plan_seq *seq, size_t end)
{
  const tpl_flow *f = p->ts->t[p->seqs[seq->index].tpl].flow;
  if (!f)
    return end;
  seq->step = seq->ok ? f->steps[seq->step].yes : f->steps[seq->step].no;
  return flow_block(p, seq);
}

/* The sequence's request at, or the first after it that can be made (a
 * request that names a value not extracted, or whose expression fails,
 * ends its block, as nuclei). Its URL, or NULL at the end. */
static char *step_from(plan *p, plan_job *job, size_t at, size_t *cl)
{
  plan_seq *seq = &job->seq;
  const plan_sequence *s = &p->seqs[seq->index];
  unsigned long bound = (PLAN_SEQ_REQUESTS + seq->lanes - 1) / seq->lanes; /* a lane's share */
  while (at < s->first + s->n && seq->requests < bound) {
    if (p->c[at].members[0].req != plan_seq_block(seq, p))
      block_begins(seq);
    seq->at = at;
    seq->missing = 0;
    if (!seq->iter) /* iterate-all: over the values known as the request first runs */
      seq->iter_n = block_values(p, seq);
    char *url = plan_job_request(p, at, job);
    if (url) {
      seq->requests++;
      *cl = at;
      return url;
    }
    at = after_block(p, seq, next_block(p, s, at));
  }
  if (at < s->first + s->n && !seq->lane && !p->cut++) /* the bound: counted once, the first named */
    snprintf(p->cut_why, sizeof p->cut_why, "%s", p->ts->t[s->tpl].id);
  job->in_seq = 0;
  return NULL;
}

char *plan_seq_start(plan *p, size_t i, size_t lane, plan_job *job, size_t *cl)
{
  plan_seq *seq = &job->seq;
  plan_seq_forget(seq, 1);
  seq->index = i;
  seq->lanes = p->seqs[i].lanes;
  seq->lane = seq->combo = lane;
  seq->at = p->seqs[i].first;
  seq->iter = 0;
  seq->requests = 0;
  seq->matched = seq->missing = seq->jar = seq->ok = 0;
  job->in_seq = 1;
  job->vals.seq = seq;
  const tpl_flow *f = p->ts->t[p->seqs[i].tpl].flow;
  size_t at = seq->at;
  if (f) { /* its first block is the flow's */
    seq->step = 0;
    at = flow_block(p, seq);
  }
  return step_from(p, job, at, cl);
}

/* The first request from at (before end, its block's) that the running
 * combination sends: after the first, a raw request with @once is passed
 * over, as nuclei sends it once. */
static size_t past_once(const plan *p, const plan_seq *seq, size_t at, size_t end)
{
  while (at < end && seq->combo && p->c[at].raw && p->c[at].raw->once)
    at++;
  return at;
}

char *plan_next_step(plan *p, size_t *cl, plan_job *job)
{
  plan_seq *seq = &job->seq;
  if (!job->in_seq)
    return NULL;
  const cluster *c = &p->c[seq->at];
  const tpl_request *q = &p->ts->t[c->members[0].tpl].reqs[c->members[0].req];
  seq->jar = !c->no_cookies;
  size_t at = seq->at + 1;
  if (q->stop_first && seq->matched)
    at = next_block(p, &p->seqs[seq->index], seq->at);
  else if (q->iterate_all && seq->iter + 1 < seq->iter_n) {
    seq->iter++; /* the same request with the next value */
    at = seq->at;
  } else
    seq->iter = 0;
  size_t end = next_block(p, &p->seqs[seq->index], seq->at);
  if (at != seq->at)
    at = past_once(p, seq, at, end);
  if (at != seq->at && at == end && !(q->stop_first && seq->matched) &&
      seq->combo + seq->lanes < q->payloads.combos) {
    at = block_first(p, &p->seqs[seq->index], seq->at); /* its next combination */
    seq->combo += seq->lanes;
    plan_seq_forget(seq, 0); /* X_N count from its first request again */
    at = past_once(p, seq, at, end);
  }
  if (at == end)
    at = after_block(p, seq, end);
  plan_job_step_free(job);
  return step_from(p, job, at, cl);
}

int plan_uses_cookies(const plan_job *job, const cluster *c)
{
  return job->in_seq && !c->no_cookies;
}

int plan_keeps_cookies(const plan_job *job, const cluster *c)
{
  return plan_uses_cookies(job, c) && job->seq.jar;
}
