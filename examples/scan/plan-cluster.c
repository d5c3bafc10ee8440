/* scan's template requests: the distinct requests the loaded templates
 * make, a cluster per request: templates whose requests are the same,
 * variables and all, share it, so each target gets it once. A request
 * that uses a template's constants or variables is the same only as the
 * template's own requests of the same texts (its values are its own); one
 * with an expression that gives another value each time (rand_*) is the
 * same as no other (nuclei sends each its own value). */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether request step (with path) of block r of template t, that uses
 * what uses says (tpl_text_uses), is cluster c's request. */
static int same_request(const cluster *c, const tpl_request *r, const tpl_request *q,
                        const char *path, size_t t, unsigned uses)
{
  if (c->alone || (uses & TPL_USES_VOLATILE) ||
      c->owner != (uses & TPL_USES_TEMPLATE ? t : NO_OWNER) || strcmp(c->method, q->method) ||
      strcmp(c->path, path) || !same(c->body, q->body) || c->redirects != r->redirects ||
      (r->redirects && c->max_redirs != r->max_redirs) || c->max_size != r->max_size ||
      c->nheaders != q->nheaders || !c->raw != !q->raw ||
      (q->raw && (c->raw->unsafe != q->unsafe || c->raw->no_automerge != q->no_automerge ||
                  !same(c->raw->annotations, q->annotations))))
    return 0;
  for (size_t i = 0; i < q->nheaders; i++)
    if (strcmp(c->headers[i], q->headers[i]))
      return 0;
  return 1;
}

/* The clusters that other requests may join, by the hash of their
 * request (open addressing; SIZE_MAX: an empty slot), so that finding a
 * request's cluster costs the same whatever the number of templates. */
typedef struct cluster_index {
  size_t *slot;
  size_t cap; /* a power of two; at most half full */
  size_t used;
} cluster_index;

static uint64_t mix(uint64_t h, const char *s)
{
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL; /* FNV-1a */
  return (h ^ 0xff) * 1099511628211ULL;             /* the end of s: "ab","c" is not "a","bc" */
}

/* The hash of what same_request compares. */
static uint64_t request_hash(const char *method, const char *path, const char *body,
                             char *const *headers, size_t nheaders, int redirects, long max_redirs,
                             size_t owner)
{
  uint64_t h = mix(mix(mix(14695981039346656037ULL, method), path), body ? body : "\x01");
  for (size_t i = 0; i < nheaders; i++)
    h = mix(h, headers[i]);
  return h ^
         ((uint64_t)redirects * 31 + (uint64_t)(redirects ? max_redirs : 0)) *
             0x9e3779b97f4a7c15ULL ^
         (uint64_t)owner * 0xc2b2ae3d27d4eb4fULL;
}

static uint64_t cluster_hash(const cluster *c)
{
  return request_hash(c->method, c->path, c->body, c->headers, c->nheaders, c->redirects,
                      c->max_redirs, c->owner);
}

/* Cluster i into x. 0 or -1. */
static int index_add(cluster_index *x, const plan *p, size_t i)
{
  if (2 * (x->used + 1) > x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 1024, *slot = malloc(cap * sizeof *slot);
    if (!slot)
      return -1;
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t k = 0; k < x->cap; k++)
      for (size_t j = x->slot[k] == SIZE_MAX ? cap : cluster_hash(&p->c[x->slot[k]]) & (cap - 1);
           j < cap; j = (j + 1) & (cap - 1))
        if (slot[j] == SIZE_MAX) {
          slot[j] = x->slot[k];
          break;
        }
    free(x->slot);
    x->slot = slot;
    x->cap = cap;
  }
  size_t j = cluster_hash(&p->c[i]) & (x->cap - 1);
  while (x->slot[j] != SIZE_MAX)
    j = (j + 1) & (x->cap - 1);
  x->slot[j] = i;
  x->used++;
  return 0;
}

void plan_cluster_init(cluster *c, const tpl_request *r, const tpl_request *step, const char *path)
{
  memset(c, 0, sizeof *c);
  c->method = step->method;
  c->path = path;
  c->body = step->body;
  c->headers = step->headers;
  c->nheaders = step->nheaders;
  c->redirects = r->redirects;
  c->max_redirs = r->redirects ? r->max_redirs : 0;
  c->max_size = r->max_size;
  c->raw = step->raw ? step : NULL;
  c->nobody = !strcmp(c->method, "HEAD");
  c->custom = !c->nobody && strcmp(c->method, c->body ? "POST" : "GET") != 0;
}

int plan_unresolved(const templates *ts, size_t t, size_t q, size_t k)
{
  const char *path;
  const tpl_request *step = tpl_step(&ts->t[t].reqs[q], k, &path);
  return ts->t[t].unresolved && (plan_uses(ts, t, step, path) & TPL_USES_UNRESOLVED);
}

int plan_sends(const templates *ts, size_t t)
{
  for (size_t q = 0; q < ts->t[t].nreqs; q++)
    if (!plan_unresolved(ts, t, q, 0))
      return 1;
  return 0;
}

unsigned plan_uses(const templates *ts, size_t t, const tpl_request *step, const char *path)
{
  const tpl *tp = &ts->t[t];
  unsigned uses = tpl_text_uses(tp, ts->given, ts->ngiven, path) |
                  (step->body ? tpl_text_uses(tp, ts->given, ts->ngiven, step->body) : 0) |
                  (step->annotations ? tpl_text_uses(tp, ts->given, ts->ngiven, step->annotations)
                                     : 0);
  for (size_t k = 0; k < step->nheaders; k++)
    uses |= tpl_text_uses(tp, ts->given, ts->ngiven, step->headers[k]);
  return step->skip_vars_check ? uses & ~(unsigned)TPL_USES_UNRESOLVED : uses;
}

/* Adds member (t, q) to the cluster of its request k, made when new. 0 or
 * -1. */
static int join(plan *p, const templates *ts, size_t t, size_t q, size_t k, size_t *cap,
                cluster_index *x)
{
  const tpl_request *r = &ts->t[t].reqs[q];
  const char *path;
  const tpl_request *step = tpl_step(r, k, &path);
  unsigned uses = plan_uses(ts, t, step, path);
  size_t i = p->nclusters;
  if (!(uses & TPL_USES_VOLATILE) && x->cap) {
    uint64_t h = request_hash(step->method, path, step->body, step->headers, step->nheaders,
                              r->redirects, r->max_redirs, uses & TPL_USES_TEMPLATE ? t : NO_OWNER);
    for (size_t j = h & (x->cap - 1); x->slot[j] != SIZE_MAX; j = (j + 1) & (x->cap - 1))
      if (same_request(&p->c[x->slot[j]], r, step, path, t, uses)) {
        i = x->slot[j];
        break;
      }
  }
  if (i == p->nclusters) {
    if (p->nclusters == *cap) {
      cluster *g = realloc(p->c, (*cap = *cap ? 2 * *cap : 64) * sizeof *g);
      if (!g)
        return -1;
      p->c = g;
    }
    cluster *c = &p->c[p->nclusters++];
    plan_cluster_init(c, r, step, path);
    c->owner = uses & TPL_USES_TEMPLATE ? t : NO_OWNER;
    c->alone = (uses & TPL_USES_VOLATILE) != 0;
    if (!c->alone && index_add(x, p, i) != 0)
      return -1;
  }
  cluster *c = &p->c[i];
  tpl_member *g = realloc(c->members, (c->nmembers + 1) * sizeof *g);
  if (!g)
    return -1;
  c->members = g;
  c->members[c->nmembers++] = (tpl_member){t, q};
  return 0;
}

int plan_build(plan *p, const templates *ts)
{
  size_t cap = 0;
  p->ts = ts;
  /* The same KSUID wherever {{randstr}} appears in this scan, so that it
   * does not keep requests apart. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t seed = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec * 2654435761u;
  tpl_randstr(p->randstr, &seed);
  cluster_index index = {NULL, 0, 0};
  for (size_t t = 0; t < ts->n; t++) {
    if (!plan_sends(ts, t) || plan_needs_sequence(p, t))
      continue; /* nothing to send, or a sequence (plan_sequences) */
    for (size_t q = 0; q < ts->t[t].nreqs; q++)
      for (size_t k = 0; k < tpl_steps(&ts->t[t].reqs[q]); k++)
        if (join(p, ts, t, q, k, &cap, &index) != 0) {
          free(index.slot);
          return -1;
        }
  }
  free(index.slot);
  p->nindependent = p->nclusters;
  return plan_sequences(p) == 0 ? plan_fix(p) : -1;
}

void plan_free(plan *p)
{
  for (size_t i = 0; i < p->nclusters; i++)
    free(p->c[i].members);
  free(p->c);
  free(p->seqs);
  free(p->target);
  plan_here_free(p);
  plan_unfix(p);
}
