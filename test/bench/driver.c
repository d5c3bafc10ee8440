/* The driver: the one curl multi loop every contender runs under, the check
 * of every finished body, and one measured run of a contender. */
#include "bench.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

double opt_limit = 60; /* seconds a run may take */
double opt_idle = 2;   /* seconds the pool is kept alive after a run */
size_t opt_cap = 8 * MiB, opt_budget = 64 * MiB;

size_t scenario_cap(const scenario *sc) { return sc->cap ? sc->cap : opt_cap; }

static void start_transfer(run *r, slot *s, size_t index, CURLM *multi)
{
  s->index = index;
  r->sc->request(r->sc, index, &s->rq);
  s->cap = r->k->capped ? r->cap : SIZE_MAX;
  s->want = s->rq.n < s->cap ? s->rq.n : s->cap;
  size_t w = s->want ? s->want : 1;
  s->probe[0] = 0;
  s->probe[1] = w - 1;
  s->probe[2] = w / 2;
  s->probe[3] = (size_t)(((uint64_t)index * 2654435761u) % w);
  for (int i = 0; i < 4; i++)
    s->seen[i] = (unsigned char)~expected_byte(&s->rq, s->probe[i]);
  s->len = 0;
  curl_easy_setopt(s->easy, CURLOPT_URL, s->rq.url);
  r->k->begin(r, s);
  s->busy = true;
  curl_multi_add_handle(multi, s->easy);
}

/* In scenarios that ask for it, a kept pattern body is compared in full
 * (*full set); a discarded one was checked at its probes only. */
static bool full_compare(const run *r, const slot *s, const body *b, bool *full)
{
  const unsigned char *want = expected_body(s->want);
  *full = false;
  if (!r->sc->verify_all || !b->ptr || s->rq.zeros || !want)
    return true;
  *full = true;
  return memcmp(b->ptr, want, s->want) == 0;
}

/* Checks a finished transfer; returns a reason when it is wrong. */
static const char *check_transfer(run *r, slot *s, CURLcode cc, body *b, bool *full)
{
  long status = 0;
  curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
  outcome o = r->k->end(r, s, cc, b);
  outcome want = s->want < s->rq.n ? OUT_AT_CAP : OUT_COMPLETE;
  *full = false;
  if (status != 200)
    return "HTTP status";
  if (o != want)
    return o == OUT_FAILED ? "transfer failed" : "outcome (cap)";
  if (b->len != s->want)
    return "length";
  for (int i = 0; i < 4 && s->want; i++) {
    unsigned char got = b->ptr ? b->ptr[s->probe[i]] : s->seen[i];
    if (got != expected_byte(&s->rq, s->probe[i]))
      return "content";
  }
  if (!full_compare(r, s, b, full))
    return "content (byte for byte)";
  return NULL;
}

static bool more_to_start(const run *r, size_t next, double start)
{
  double elapsed = now_s() - start;
  if (elapsed > opt_limit)
    return false;
  if (r->sc->seconds > 0)
    return elapsed < r->sc->seconds;
  return next < r->sc->count;
}

/* Ends the run early: in-flight transfers are dropped, not counted. */
static void drop_inflight(run *r, CURLM *multi, tally *t)
{
  for (long i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    if (!s->busy)
      continue;
    curl_multi_remove_handle(multi, s->easy);
    r->k->finish(r, s);
    s->busy = false;
    t->dropped++;
  }
  t->stopped = true;
}

/* Progress callback on every handle of every contender: aborts transfers
 * once the run is past its limit, even inside one long curl_multi_perform
 * (a bomb decoded by curl delivers gigabytes in one call). */
static int past_limit(void *deadline, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                      curl_off_t ulnow)
{
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  return now_s() > *(const double *)deadline;
}

/* Easy handles for every slot, alike for every contender. */
static void make_handles(run *r, double *hard_stop)
{
  for (long i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    s->easy = curl_easy_init();
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, (char *)s);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_XFERINFOFUNCTION, past_limit);
    curl_easy_setopt(s->easy, CURLOPT_XFERINFODATA, hard_stop);
    curl_easy_setopt(s->easy, CURLOPT_NOPROGRESS, 0L);
  }
}

/* Counts a checked transfer, and marks the end of the first wave. */
static void tally_transfer(run *r, slot *s, CURLcode cc, tally *t)
{
  body b = {NULL, 0};
  bool full;
  const char *bad = check_transfer(r, s, cc, &b, &full);
  if (bad) {
    if (t->failed++ < 5)
      fprintf(stderr, "  %s: %s wrong: %s (len %zu, want %zu, %s)\n", r->k->name, s->rq.url, bad,
              b.len, s->want, curl_easy_strerror(cc));
  } else {
    t->done++;
    t->body_bytes += b.len;
    t->verified_full += full;
  }
  r->k->finish(r, s);
  if (!t->warm_marked && t->done + t->failed == (size_t)r->nslots) {
    t->warm_marked = true;
    t->warm_alloc0 = g_cnt.alloc_bytes;
    t->warm_body0 = t->body_bytes;
  }
}

/* The one multi loop every contender runs under. */
static void drive(run *r, tally *t)
{
  CURLM *multi = curl_multi_init();
  double start = now_s(), hard_stop = start + opt_limit;
  make_handles(r, &hard_stop);
  size_t next = 0;
  long inflight = 0;
  for (long i = 0; i < r->nslots && more_to_start(r, next, start); i++, inflight++)
    start_transfer(r, &r->slots[i], next++, multi);

  while (inflight > 0) {
    int running;
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left)) != NULL) {
      if (m->msg != CURLMSG_DONE)
        continue;
      char *priv;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
      slot *s = (slot *)priv;
      CURLcode cc = m->data.result;
      curl_multi_remove_handle(multi, s->easy);
      s->busy = false;
      inflight--;
      if (cc == CURLE_ABORTED_BY_CALLBACK && now_s() > hard_stop) {
        r->k->finish(r, s); /* stopped by the limit: dropped, not checked */
        t->dropped++;
        t->stopped = true;
        continue;
      }
      tally_transfer(r, s, cc, t);
      if (more_to_start(r, next, start)) {
        start_transfer(r, s, next++, multi);
        inflight++;
      }
    }
    if (inflight > 0 && now_s() > hard_stop) {
      drop_inflight(r, multi, t);
      break;
    }
    if (inflight > 0)
      r->k->poll(r, multi, 1000);
  }
  for (long i = 0; i < r->nslots; i++)
    curl_easy_cleanup(r->slots[i].easy);
  curl_multi_cleanup(multi);
}

/* After the transfers, the program idles with its contender alive for
 * opt_idle seconds, calling only what a program between bursts would: the
 * contender's poll on an empty multi handle (rc_multi_poll for respchain)
 * and its idle-memory query (rc_pool_stats_get), every 100 ms. */
static void idle_wait(run *r)
{
  CURLM *multi = curl_multi_init();
  double end = now_s() + opt_idle, left;
  while ((left = end - now_s()) > 0) {
    int ms = left < 0.1 ? (int)(left * 1000) + 1 : 100;
    r->k->poll(r, multi, ms);
    r->k->idle(r);
  }
  curl_multi_cleanup(multi);
}

/* What the run kept when its transfers were over, opt_idle seconds later,
 * and after its trim. */
static void measure_retention(run *r, tally *t)
{
  t->rss_end = rss_now().total;
  t->idle = r->k->idle(r);
  if (r->pool) {
    t->has_pool = true;
    rc_pool_stats_get(r->pool, &t->ps);
  }
  idle_wait(r);
  t->rss_idle = rss_now().total;
  r->k->trim(r);
  malloc_trim(0);
  t->rss_trim = rss_now().total;
}

void run_once(const scenario *sc, int k, tally *t, bool keep_series)
{
  memset(t, 0, sizeof *t);
  malloc_trim(0);
  g_cnt = (counters){0, 0, 0, 0};
  run r = {.sc = sc,
           .k = &CONTENDERS[k],
           .cap = scenario_cap(sc),
           .budget = opt_budget,
           .nslots = sc->conc};
  rss base, peak;
  double t0;
  mon_begin(&base, &t0);
  t->rss0 = base.total;
  t->anon0 = base.anon;
  r.slots = calloc((size_t)sc->conc, sizeof *r.slots);
  if (!r.slots || !r.k->setup(&r)) {
    fprintf(stderr, "%s: setup failed\n", r.k->name);
    exit(1);
  }
  uint64_t copy0 = t_copy_bytes;
  double w0 = now_s(), c0 = cpu_s(RUSAGE_SELF), d0 = cpu_s(RUSAGE_THREAD);
  long f0 = faults(RUSAGE_THREAD);
  t->setup_s = w0 - t0;
  drive(&r, t);
  t->wall = now_s() - w0;
  t->cpu = cpu_s(RUSAGE_SELF) - c0;
  t->cpu_drv = cpu_s(RUSAGE_THREAD) - d0;
  t->faults_drv = faults(RUSAGE_THREAD) - f0;
  t->copy_bytes = t_copy_bytes - copy0;
  mon_end(&peak, keep_series, &t->series, &t->nseries);
  t->peak = peak.total;
  t->peak_anon = peak.anon;
  t->cnt = g_cnt;
  measure_retention(&r, t);
  r.k->teardown(&r);
  free(r.slots);
  malloc_trim(0);
  t->ran = true;
}
