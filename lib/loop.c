/* The loop functions: a program's event loop resumes the transfers that
 * the budget paused on its thread, learns when to come back, and is woken
 * when one may go on. A paused transfer is resumed only by the thread that
 * paused it (curl handles are not shared between threads), so every call
 * here says which thread asks: the caller's. */
#include "budget.h"
#include "curl_compat.h"
#include "pool.h"
#include "response.h"

#include <pthread.h>

/* What a curl before 8.14 may buffer of one HTTP/2 stream: its window, at
 * most the body that the response keeps. A stream's reserve is one and a
 * half times that: what curl reads of it and the body it becomes are in
 * the process at once (8.5.0, 8 MiB bodies, streams at once by hand: 4
 * peak at 74 MiB, 6 at 104, 8 at 131). Under a 64 MiB budget, bench h2: a reserve of one window
 * peaked at 123-131 MiB (8.1.2), of two at 75 MiB but twice the wall on
 * 8.1.2, of one and a half at 88-91 MiB (8.1.2, 8.5.0), at the wall of
 * the run without a budget. */
#define STREAM_WINDOW ((size_t)10 * 1024 * 1024)

/* Whether the budget keeps resp's transfer back until memory for its
 * stream is there. Only before curl 8.14, which cannot keep a stream's
 * window small: pausing a stream does not stop such a curl receiving it
 * (up to 64 MiB in 7.88, its 10 MB window in 8.7 to 8.13), and 8.1 to 8.6
 * read every stream into their own buffers from its request on, paused or
 * not, even with a write callback that keeps nothing (8.5.0: 400 MiB for
 * 50 streams of 8 MiB). The handle's last transfer tells what its next one,
 * most likely to the same server, speaks: after HTTP/1.x (it owns its
 * connection, pausing holds the server back) it goes in at once; after
 * HTTP/2 it is kept back (spilling instead costs the disk and time: bench
 * h2, 64 MiB budget, 7.88.1, every handle kept back by hand: 0.68x curl's
 * discard loop at 55 MiB, against 1.26x and 82 MiB spilling in the same
 * run). A handle that has not run yet is kept back where nothing else
 * bounds its stream: on 8.1 to 8.6; before 7.88, where a refused stream can
 * only spill, so that every stream that runs at once goes on without a
 * bound on what it holds besides its body, the state of its decoder above
 * all (a br stream's ring buffer, a zstd window: scan over br and zstd
 * bodies at -c 200, 7.76.1, 437 MiB with 0.4 MiB in the pool); and under
 * RC_OVERFLOW_WAIT, which never spills. Elsewhere it goes in and, refused,
 * spills as before. One that turns out HTTP/1.x gives its reserve back at
 * its status line (transfer.c). */
static int keeps_back(rc__budget *b, CURL *easy)
{
  if (rc__transfer_hold_from() != RC__HOLD_NEVER)
    return 0;
  long version = 0;
  curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
  if (version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1)
    return 0;
  if (version != CURL_HTTP_VERSION_NONE)
    return 1;
  return rc__curl_buffers_streams() || rc__curl_loses_paused_streams() ||
         rc__budget_mode(b) == RC_OVERFLOW_WAIT;
}

CURLMcode rc_multi_add(rc_response *resp, CURLM *multi)
{
  if (!multi)
    return CURLM_BAD_HANDLE;
  if (!resp || !resp->waiter.easy)
    return CURLM_BAD_EASY_HANDLE;
  if (resp->waiter.defer_multi)
    return CURLM_ADDED_ALREADY;
  rc__budget *b = rc__pool_budget(resp->pool);
  rc__budget_resumed_here();
  size_t window = resp->lim.max_body < STREAM_WINDOW ? resp->lim.max_body : STREAM_WINDOW;
  size_t reserve = window + window / 2;
  if (keeps_back(b, resp->waiter.easy) &&
      rc__budget_defer(b, &resp->waiter, multi, reserve))
    return CURLM_OK; /* kept back: rc_pool_resume adds it */
  CURLMcode mc = curl_multi_add_handle(multi, resp->waiter.easy);
  if (mc != CURLM_OK)
    rc__budget_stream_done(b, &resp->waiter);
  else
    rc__budget_added(b, &resp->waiter);
  return mc;
}

/* Adds to their multi handles the transfers that rc_multi_add kept back on
 * this thread and that may go in now; how many. */
static int add_admitted(rc__budget *b, pthread_t self)
{
  int added = 0;
  rc__waiter *w;
  CURLM *multi;
  while ((w = rc__budget_next_admitted(b, self, &multi))) {
    CURLMcode mc = curl_multi_add_handle(multi, w->easy);
    if (mc == CURLM_RECURSIVE_API_CALL) {
      /* Asked from inside a curl callback: a later call adds it. */
      rc__budget_requeue(b, w, multi);
      break;
    }
    if (mc != CURLM_OK) {
      rc__budget_stream_done(b, w);
      continue;
    }
    rc__budget_added(b, w);
    added++;
  }
  return added;
}

int rc_pool_resume(rc_pool *pool)
{
  if (!pool)
    return 0;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  int resumed = add_admitted(b, self);
  rc__waiter *w;
  for (CURL *easy; (easy = rc__budget_next_due(b, self, &w));) {
    /* Outside the budget's lock: curl may run the write callback at once,
     * which asks the budget again. */
    curl_easy_pause(easy, CURLPAUSE_CONT);
    resumed++;
    /* A held stream whose callback has not run yet opens its window now:
     * after the unpause, as in curl 8.21 setting the speed limit of a
     * paused transfer clears its pause (unpausing would then find nothing
     * to do); and at once, as curl 8.14 checks its rate limit before it
     * delivers what it kept. One paused again by its callback stays held
     * (the callback held it again). Only this thread drives w. */
    if (w->held && rc__budget_still_resumed(b, w))
      rc__transfer_hold(w, easy, 0);
  }
  return resumed;
}

long rc_pool_timeout(rc_pool *pool)
{
  if (!pool)
    return -1;
  return rc__budget_due_in(rc__pool_budget(pool), pthread_self());
}

/* Sets the calling thread's wake callback, replacing one it had. */
rc_code rc_pool_on_wake(rc_pool *pool, rc_wake_fn fn, void *ud)
{
  if (!pool)
    return RC_E_INVAL;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  rc__waker *fresh = NULL;
  if (fn) {
    if (!(fresh = b->alloc->malloc(sizeof *fresh, b->alloc->ud)))
      return RC_E_NOMEM;
    *fresh = (rc__waker){NULL, self, fn, ud, 1};
  }
  rc__budget_set_wake(b, self, fresh);
  return RC_OK;
}

static void wake_multi(void *multi) { curl_multi_wakeup(multi); }

/* The longest rc_multi_poll waits, on a curl that strands stream data
 * (rc__curl_strands_streams), while transfers that rc_multi_add put in
 * may run: a stranded stream goes on at the next curl_multi_perform, at
 * most this much later, instead of at the end of the caller's timeout.
 * What it costs is wake-ups: at most 50 a second. */
#define STRANDED_POLL_MS 20

/* The poll's timeout: the caller's, shortened where a stream may be
 * stranded. */
static int poll_bound(rc__budget *b, int timeout_ms)
{
  if (timeout_ms > STRANDED_POLL_MS && rc__curl_strands_streams() && rc__budget_in_multi(b) > 0)
    return STRANDED_POLL_MS;
  return timeout_ms;
}

CURLMcode rc_multi_poll(rc_pool *pool, CURLM *multi, struct curl_waitfd extra_fds[],
                        unsigned int extra_nfds, int timeout_ms, int *numfds)
{
  if (!pool || !multi)
    return CURLM_BAD_HANDLE;
  rc__budget *b = rc__pool_budget(pool);
  rc__pool_tick(pool);
  timeout_ms = poll_bound(b, timeout_ms);
  /* Resumed or added transfers have work for curl now: the poll does not
   * wait for them. */
  if (rc_pool_resume(pool) > 0)
    timeout_ms = 0;
  /* From here a wake-up interrupts the poll; one that came between the
   * resume and now shows as a due transfer, so the poll does not wait. */
  rc__waker me = {NULL, pthread_self(), wake_multi, multi, 0};
  rc__budget_add_waker(b, &me);
  long due_ms = rc_pool_timeout(pool); /* a wake-up since the resume, or a wait bound */
  if (due_ms >= 0 && due_ms < timeout_ms)
    timeout_ms = (int)due_ms;

  CURLMcode mc = curl_multi_poll(multi, extra_fds, extra_nfds, timeout_ms, numfds);

  rc__budget_remove_waker(b, &me);
  rc_pool_resume(pool);
  return mc;
}

CURLMcode rc_multi_perform(rc_pool *pool, CURLM *multi, int *running)
{
  if (!pool || !multi)
    return CURLM_BAD_HANDLE;
  rc_pool_resume(pool);
  int n = 0;
  CURLMcode mc = curl_multi_perform(multi, &n);
  n += (int)rc__budget_deferred_for(rc__pool_budget(pool), multi);
  if (running)
    *running = n;
  return mc;
}
