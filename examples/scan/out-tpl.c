/* scan's template lines: for each member of a cluster whose verdicts
 * matched the cluster's response, the JSON lines that nuclei writes; and
 * the reports on the templates loaded and skipped. */
#include "out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What one template line tells of its target besides the template. */
typedef struct hit_at {
  const reading *r;
  const plan_job *job;      /* the values its request was made with; NULL: none */
  const char *target, *url; /* url: that of the response's request */
  int stopped;              /* its transfer ended early */
  double duration;          /* seconds its transfer took */
  int back;                 /* the response, hops before the final one (eval_target) */
} hit_at;

/* One line: template t matched the target, by matcher name (NULL: none
 * named), with the values x. */
static void json_match(output *o, const hit_at *h, const tpl *t, const char *name,
                       const tpl_values *x)
{
  line *l = &o->line;
  const cluster *c = &h->r->g->plan->c[h->r->cluster];
  rc_response *resp = h->r->resp;
  rc_hop_info hop;
  if (rc_hop(resp, -1 - h->back, &hop) != RC_OK)
    hop.status = 0;
  l->len = 0;
  l->nomem = 0;
  puts_line(l, "{\"template-id\":");
  json_string(l, t->id);
  puts_line(l, ",\"info\":{\"name\":");
  json_string(l, t->name ? t->name : t->id);
  puts_line(l, ",\"severity\":");
  json_string(l, t->severity ? t->severity : "unknown");
  puts_line(l, ",\"tags\":[");
  for (size_t i = 0; i < t->ntags; i++) {
    if (i)
      puts_line(l, ",");
    json_string(l, t->tags[i]);
  }
  puts_line(l, "]},\"type\":\"http\"");
  json_target_fields(l, h->target);
  puts_line(l, ",\"matched-at\":");
  json_string(l, h->url);
  if (name) {
    puts_line(l, ",\"matcher-name\":");
    json_string(l, name);
  }
  if (x->n) {
    puts_line(l, ",\"extracted-results\":[");
    for (size_t i = 0; i < x->n; i++) {
      if (i)
        puts_line(l, ",");
      json_string(l, x->v[i]);
    }
    puts_line(l, "]");
  }
  puts_line(l, ",\"timestamp\":");
  json_timestamp(l);
  printf_line(l,
              ",\"status-code\":%d,\"cluster-requests\":%zu,\"body-bytes\":%llu,"
              "\"truncated\":%s,\"stopped\":%s}\n",
              hop.status, c->nmembers, h->back ? 0ULL : (unsigned long long)rc_body_length(resp),
              !h->back && rc_truncated(resp) ? "true" : "false", h->stopped ? "true" : "false");
  write_line(o);
}

/* A template's values for the target (plan_vals: its constants, -var,
 * the target's variables, its variables:) as the DSL reads them
 * (plan_vars): those the job's request was made with, for the template
 * it was made for (its random values too); for another member of the
 * cluster, its own, made on first use. */
typedef struct tpl_vals {
  const plan *p;
  const plan_job *job;
  const char *target;
  plan_vals v;
  int made, failed;
} tpl_vals;

static int template_value(void *ud, size_t t, const char *name, size_t len, expr_value *out)
{
  tpl_vals *u = ud;
  const plan_vals *sent = u->job ? plan_job_vals(u->job, t) : NULL;
  if (sent)
    return plan_vals_lookup((void *)sent, name, len, out);
  if (!u->made) {
    u->made = 1;
    u->failed = plan_vals_eval(&u->v, u->p, t, u->target, 1) != 0;
  }
  return !u->failed && plan_vals_lookup(&u->v, name, len, out);
}

#define HITS_KEPT 64 /* matchers of a request whose hits need no allocation */

/* Template request q over the response: its lines. Returns how many were
 * written. */
static size_t judge(output *o, const hit_at *h, const tpl *t, const tpl_request *q, plan_seq *in)
{
  tpl_values x;
  x.n = 0;
  x.nomem = 0;
  size_t named = 0, lines = 0;
  unsigned char kept[HITS_KEPT];
  unsigned char *hit = q->nmatchers <= HITS_KEPT ? kept : malloc(q->nmatchers);
  if (!hit) {
    o->write_error = ENOMEM;
    return 0;
  }
  tpl_vals u = {.p = h->r->g->plan, .job = h->job, .target = h->target};
  const cluster *c = &h->r->g->plan->c[h->r->cluster];
  eval_target et = {h->target, h->url,         h->duration, (size_t)(t - h->r->g->tpl->t),
                    {template_value, &u}, in, c->step, h->back};
  int matched = eval_request(h->r, q, &et, hit, &x);
  size_t internal = 0;
  for (size_t i = 0; matched && i < q->nmatchers; i++)
    internal += q->matchers[i].internal;
  if (q->nmatchers && internal == q->nmatchers)
    matched = 0; /* nuclei prints no event of internal matchers alone */
  if (u.made)
    plan_vals_free(&u.v);
  for (size_t i = 0; matched && i < q->nmatchers; i++)
    named += hit[i] && q->matchers[i].name;
  if (matched && !q->cond_and && named) { /* each named matcher that hit */
    for (size_t i = 0; i < q->nmatchers; i++)
      if (hit[i] && q->matchers[i].name && ++lines)
        json_match(o, h, t, q->matchers[i].name, &x);
  } else if (matched) {
    json_match(o, h, t, NULL, &x);
    lines = 1;
  }
  if (x.nomem)
    o->write_error = ENOMEM;
  tpl_values_free(&x);
  if (hit != kept)
    free(hit);
  return lines;
}

void out_free(output *o) { free(o->line.p); }

size_t out_templates(output *o, const reading *r, const attempt *a, const char *target,
                     plan_seq *in)
{
  const templates *ts = r->g->tpl;
  const cluster *c = &r->g->plan->c[r->cluster];
  size_t lines = 0;
  rc_code rc = rc_result(r->resp, a->cc);
  /* As nuclei: a request that failed has no verdicts (nor one
   * interrupted); a body cut at --max-body is matched as far as kept, one
   * stopped once its verdicts were known as far as it came. */
  if (a->how != ENDED || rc_hop_count(r->resp) == 0 ||
      (rc != RC_OK && rc != RC_TRUNCATED && rc != RC_STOPPED))
    return 0;
  /* As nuclei: each response of a chain of redirects is matched on its
   * own, the final one first (1xx interim responses are none); under
   * stop-at-first-match a request's first match ends its chain. */
  int hops = (int)rc_hop_count(r->resp);
  unsigned char *done = hops > 1 ? calloc(c->nmembers, 1) : NULL; /* per member: it matched */
  if (hops > 1 && !done)
    o->write_error = ENOMEM;
  for (int k = hops - 1; k >= 0 && !o->write_error; k--) {
    rc_hop_info hop;
    if (rc_hop(r->resp, k, &hop) != RC_OK || (hop.status >= 100 && hop.status <= 199))
      continue;
    /* The first response is the request's own: its URL needs no copy. */
    char *made = k > 0 ? out_hop_url(r->resp, a, k) : NULL;
    const char *url = k > 0 ? made : a->url;
    hit_at h = {r, a->job, target, url, rc == RC_STOPPED, a->took, hops - 1 - k};
    if (!url)
      o->write_error = ENOMEM;
    for (size_t i = 0; i < c->nmembers && !o->write_error; i++) {
      const tpl *t = &ts->t[c->members[i].tpl];
      const tpl_request *q = &t->reqs[c->members[i].req];
      if (q->stop_first && done && done[i])
        continue;
      size_t n = judge(o, &h, t, q, in);
      if (done)
        done[i] |= n > 0;
      if (n && in) /* stop-at-first-match: the sequence's (plan_next_step) */
        in->matched = 1;
      lines += n;
    }
    free(made);
  }
  free(done);
  o->matches += lines;
  return lines;
}

/* ---- Reports ------------------------------------------------------------ */

/* A skip's reason without its detail: what the counts group by. */
static size_t reason_kind(const char *reason) { return strcspn(reason, ":"); }

/* The skips' counts by reason kind, each line prefixed. */
static void skip_counts(FILE *out, const templates *ts, const char *prefix)
{
  for (size_t i = 0; i < ts->nskips; i++) {
    const char *r = ts->skips[i].reason;
    size_t k = reason_kind(r), n = 0, j = 0;
    while (j < i && (reason_kind(ts->skips[j].reason) != k || strncmp(ts->skips[j].reason, r, k)))
      j++;
    if (j < i)
      continue; /* counted with its first */
    for (j = i; j < ts->nskips; j++)
      n += reason_kind(ts->skips[j].reason) == k && !strncmp(ts->skips[j].reason, r, k);
    fprintf(out, "%sskipped %zu: %.*s\n", prefix, n, (int)k, r);
  }
}

/* What template t keeps of the body, as --validate -v prints it. */
static void print_keeps(const tpl *t)
{
  tpl_keeps k;
  eval_keeps(t, &k);
  printf("loaded %s: body: ", t->file);
  if (k.whole || (k.streamed && !engine_streams()))
    printf("whole body%s", k.whole ? "" : " (no streaming engine)");
  else if (k.streamed)
    printf("streamed atoms and matchers (%zu, %s)", k.streamed, engine_name());
  if (k.count)
    printf("%scount only", k.whole || k.streamed ? ", " : "");
  if (!k.whole && !k.streamed && !k.count)
    printf("none");
  if (k.scan_words || k.response_words)
    printf("; {{...}} in words and regexes: %zu replaced once in the scan, %zu for each response",
           k.scan_words, k.response_words);
  putchar('\n');
}

/* How loaded template t's payloads combine, as --validate -v prints it
 * (as it does a skipped one's, from its note). */
static void print_payloads(const tpl *t)
{
  line l = {0};
  tpl_payloads_note(t, &l);
  put(&l, "", 1);
  if (!l.nomem && l.p[0])
    printf("payloads %s: %s\n", t->file, l.p);
  free(l.p);
}

/* The templates loaded with requests that read a name nobody gives, and
 * the first of them, as the summaries say. */
static void unresolved_count(FILE *out, const templates *ts, const char *prefix)
{
  size_t n = 0, none = 0, first = 0;
  for (size_t i = ts->n; i-- > 0;)
    if (ts->t[i].unresolved)
      n++, first = i, none += !plan_sends(ts, i);
  if (n)
    fprintf(out,
            "%s%zu read names nobody gives: %zu send no request, %zu only those before the "
            "first that reads one (first: %s reads %s; -var NAME=VALUE gives a name)\n",
            prefix, n, none, n - none, ts->t[first].id, ts->t[first].unresolved);
}

void out_validation(const templates *ts, const plan *p, int verbose)
{
  for (size_t i = 0; verbose && i < ts->n; i++) {
    print_keeps(&ts->t[i]);
    print_payloads(&ts->t[i]);
    if (ts->t[i].unresolved)
      printf("unresolved %s: %s (its requests that read it are not sent; -var %s=VALUE gives it)\n",
             ts->t[i].file, ts->t[i].unresolved, ts->t[i].unresolved);
  }
  for (size_t i = 0; verbose && i < ts->nskips; i++)
    if (ts->skips[i].payloads)
      printf("payloads %s: %s\n", ts->skips[i].file, ts->skips[i].payloads);
  for (size_t i = 0; i < ts->nskips; i++)
    printf("skipped %s: %s\n", ts->skips[i].file, ts->skips[i].reason);
  printf("templates: %zu loaded, %zu skipped; %zu clusters, %zu sequences\n", ts->n, ts->nskips,
         p->nclusters, p->nseqs);
  if (ts->filter)
    printf("templates: %zu left out by the filters\n", ts->nfiltered);
  unresolved_count(stdout, ts, "templates: ");
  skip_counts(stdout, ts, "");
}

void out_summary(const templates *ts, const plan *p, unsigned long requests, unsigned long matches)
{
  fprintf(stderr,
          "scan: templates: %zu loaded, %zu skipped; %zu clusters, %lu requests, %lu matches; "
          "%zu sequences\n",
          ts->n, ts->nskips, p->nclusters, requests, matches, p->nseqs);
  if (ts->filter)
    fprintf(stderr, "scan: templates: %zu left out by the filters\n", ts->nfiltered);
  if (p->cut)
    fprintf(stderr,
            "scan: templates: %lu sequences stopped at their bound of %d requests for a target "
            "(first: %s)\n",
            p->cut, PLAN_SEQ_REQUESTS, p->cut_why);
  if (p->unsent)
    fprintf(stderr, "scan: templates: %lu requests not sent, an expression failed (first: %s)\n",
            p->unsent, p->unsent_why);
  unresolved_count(stderr, ts, "scan: templates: ");
  skip_counts(stderr, ts, "scan: templates: ");
}
