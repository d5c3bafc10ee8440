/* The memory budget: the counter, admission, the waiter queue and its
 * holder, blocking waits, the wait bound, and the wakers it tells. */
#include "budget.h"
#include "clock.h"
#include "debug.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Whether this thread resumes paused transfers: it called rc_pool_resume,
 * rc_multi_poll, rc_pool_timeout, rc_pool_on_wake or rc_multi_add (on any
 * pool), which reach the budget through the functions below that set it. A transfer
 * paused on a thread that never does would stay paused until its
 * CURLOPT_TIMEOUT, past its wait bound: one refused there does not pause,
 * as one that knows no handle (it takes the holder's place, or spills). */
static _Thread_local int resumes_here;

/* Milliseconds from a to b, 0 if b is not later. */
static long ms_until(struct timespec a, struct timespec b)
{
  long long ms = rc__ms_between(a, b);
  return ms > 0 ? (long)(ms < LONG_MAX ? ms : LONG_MAX) : 0;
}

rc_code rc__budget_init(rc__budget *b, size_t limit, rc_overflow mode, long max_wait_ms,
                        const rc_allocator *alloc)
{
  memset(b, 0, sizeof *b);
  b->alloc = alloc;
  b->limit = limit;
  b->mode = mode;
  b->max_wait_ms = max_wait_ms;
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0)
    return RC_E_NOMEM;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int bad = pthread_cond_init(&b->cond, &ca) != 0;
  pthread_condattr_destroy(&ca);
  if (bad)
    return RC_E_NOMEM;
  if (pthread_mutex_init(&b->lock, NULL) != 0) {
    pthread_cond_destroy(&b->cond);
    return RC_E_NOMEM;
  }
  return RC_OK;
}

void rc__budget_destroy(rc__budget *b)
{
  while (b->wakers) {
    rc__waker *k = b->wakers;
    b->wakers = k->next;
    if (k->allocated)
      b->alloc->free(k, b->alloc->ud);
  }
  pthread_cond_destroy(&b->cond);
  pthread_mutex_destroy(&b->lock);
}

/* ---- The queue. All below with the lock held. */

/* Bytes still free under the limit, less those reserved for admitted
 * growth and those promised to woken waiters. */
static size_t available(const rc__budget *b)
{
  if (b->limit == 0)
    return SIZE_MAX;
  size_t used = b->in_use + b->reserved;
  if (used < b->in_use)
    return 0;
  size_t all = used + b->promised;
  return all < used || all >= b->limit ? 0 : b->limit - all;
}

/* A woken waiter that is not the holder has its need promised: later
 * arrivals do not take it. Every change of woken or holder goes between
 * unpromise and promise. */
static void unpromise(rc__budget *b, const rc__waiter *w)
{
  if (w->woken && !w->holder) {
    RC__ASSERT(b->promised >= w->need);
    b->promised -= w->need;
  }
}

static void promise(rc__budget *b, const rc__waiter *w)
{
  if (w->woken && !w->holder)
    b->promised += w->need;
}

static void enqueue(rc__budget *b, rc__waiter *w)
{
  w->next = NULL;
  if (b->tail)
    b->tail->next = w;
  else
    b->head = w;
  b->tail = w;
  w->queued = 1;
  w->woken = w->resumed = 0;
  w->thread = pthread_self();
  w->since = rc__now();
  b->pauses++;
}

static void dequeue(rc__budget *b, rc__waiter *w)
{
  RC__ASSERT(w->queued || !w->woken);
  rc__waiter **pp = &b->head, *prev = NULL;
  while (*pp && *pp != w) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (*pp) {
    *pp = w->next;
    if (b->tail == w)
      b->tail = prev;
  }
  w->next = NULL;
  unpromise(b, w);
  w->queued = w->woken = w->resumed = 0;
}

/* Tells w's thread that w may go on: its loop through the wakers, or its
 * blocked callback through the condition. */
static void wake(rc__budget *b, rc__waiter *w)
{
  w->woken = 1;
  promise(b, w);
  b->wakeups++;
  if (w->wait_ms > 0) {
    pthread_cond_broadcast(&b->cond);
    return;
  }
  for (rc__waker *k = b->wakers; k; k = k->next)
    if (pthread_equal(k->thread, w->thread))
      k->fn(k->ud);
}

/* Gives the holder's place to the oldest waiter, if the place is free. */
static void appoint_holder(rc__budget *b)
{
  if (b->holder || !b->head)
    return;
  b->holder = b->head;
  unpromise(b, b->holder);
  b->holder->holder = 1;
  if (!b->holder->woken)
    wake(b, b->holder);
}

/* ---- Streams kept back before their request (see budget.h). Lock held. */

/* Is there room to admit a stream that sets reserve aside? */
static int stream_fits(const rc__budget *b, size_t reserve)
{
  if (b->nstreams == 0 || b->limit == 0)
    return 1; /* none runs: one goes on, so that all of them drain */
  size_t used = b->in_use + b->reserved;
  if (used < b->in_use)
    return 0;
  used -= b->streams_body < used ? b->streams_body : used; /* within the reserves */
  size_t parts[] = {b->promised, b->streams, reserve};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if ((used += parts[i]) < parts[i])
      return 0;
  return used <= b->limit;
}

/* Under RC_OVERFLOW_AUTO, has no kept-back transfer gone on for the wait
 * bound? Milliseconds left (0: it passed), -1 when no bound applies. */
static long defer_bound_left(const rc__budget *b, struct timespec t)
{
  if (b->mode != RC_OVERFLOW_AUTO || b->max_wait_ms <= 0)
    return -1;
  return ms_until(t, rc__after_ms(b->defer_went, b->max_wait_ms));
}

static void stream_admit(rc__budget *b, rc__waiter *w, size_t reserve)
{
  w->stream_reserve = reserve;
  w->stream_body = 0;
  b->streams += reserve;
  b->nstreams++;
  b->defer_went = rc__now();
}

static void stream_release(rc__budget *b, rc__waiter *w)
{
  if (!w->stream_reserve || w->defer_multi)
    return;
  RC__ASSERT(b->streams >= w->stream_reserve && b->nstreams > 0);
  RC__ASSERT(b->streams_body >= w->stream_body);
  b->streams -= w->stream_reserve;
  b->streams_body -= w->stream_body;
  b->nstreams--;
  w->stream_reserve = w->stream_body = 0;
}

/* w no longer counts as added to a multi. */
static void unadd(rc__budget *b, rc__waiter *w)
{
  if (!w->in_multi)
    return;
  RC__ASSERT(b->in_multi > 0);
  b->in_multi--;
  w->in_multi = 0;
}

static void undefer(rc__budget *b, rc__waiter *w)
{
  rc__waiter **pp = &b->dhead, *prev = NULL;
  while (*pp && *pp != w) {
    prev = *pp;
    pp = &(*pp)->defer_next;
  }
  if (*pp) {
    *pp = w->defer_next;
    if (b->dtail == w)
      b->dtail = prev;
  }
  w->defer_next = NULL;
  w->defer_multi = NULL;
  w->stream_reserve = 0;
}

static rc__waiter *oldest_deferred(const rc__budget *b, pthread_t thread)
{
  rc__waiter *w = b->dhead;
  while (w && !pthread_equal(w->defer_thread, thread))
    w = w->defer_next;
  return w;
}

/* The oldest kept-back transfer may go on: its thread is told. */
static void wake_deferred(rc__budget *b)
{
  rc__waiter *w = b->dhead;
  if (!w || !stream_fits(b, w->stream_reserve))
    return;
  for (rc__waker *k = b->wakers; k; k = k->next)
    if (pthread_equal(k->thread, w->defer_thread))
      k->fn(k->ud);
}

/* Memory was credited back, admitted bytes settled or the limit changed:
 * the holder, then waiters oldest first while their needs added up fit.
 * The first that does not fit stops the pass: later, smaller ones do not
 * overtake it. A kept-back transfer that fits now is told too. */
static void changed(rc__budget *b)
{
  wake_deferred(b);
  if (!b->head)
    return;
  appoint_holder(b);
  size_t avail = available(b);
  for (rc__waiter *w = b->head; w; w = w->next) {
    if (w->holder || w->woken)
      continue; /* the holder needs no room; a woken one has its own */
    if (w->need > avail)
      break;
    avail -= w->need;
    wake(b, w);
  }
}

/* Does bytes fit for w? A woken waiter may use what was promised to it. */
static int fits(const rc__budget *b, const rc__waiter *w, size_t bytes)
{
  size_t avail = available(b);
  if (w && w->woken && !w->holder && avail <= SIZE_MAX - w->need)
    avail += w->need;
  return b->limit == 0 || bytes <= avail;
}

/* Where a refused w goes instead of memory, when it does not wait. */
static int spills_at_once(const rc__budget *b, const rc__waiter *w)
{
  return w->spill || b->mode == RC_OVERFLOW_SPILL || w->unpausable ||
         (b->mode == RC_OVERFLOW_AUTO && w->multiplexed && !w->windowed);
}

/* A blocking waiter waits for its turn or its deadline: RC__ADMITTED to
 * ask again; otherwise what its refusal ends in. */
static rc__admission block(rc__budget *b, rc__waiter *w)
{
  struct timespec deadline = rc__after_ms(w->since, w->wait_ms);
  while (!w->woken && !w->holder)
    if (pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
      break;
  if (w->woken || w->holder)
    return RC__ADMITTED;
  dequeue(b, w);
  return b->mode == RC_OVERFLOW_WAIT ? RC__TIMED_OUT : RC__SPILL;
}

static rc__admission ask(rc__budget *b, rc__waiter *w, size_t bytes)
{
  w->resumed = 0;
  for (;;) {
    if (w->holder || fits(b, w, bytes)) {
      if (w->queued)
        dequeue(b, w);
      w->spill = 0;
      b->reserved += bytes;
      if (w->stream_reserve && !w->defer_multi) {
        /* A running stream's body, up to its reserve: what it holds. */
        size_t room = w->stream_reserve - w->stream_body;
        size_t in = bytes < room ? bytes : room;
        w->stream_body += in;
        b->streams_body += in;
      }
      return RC__ADMITTED;
    }
    int can_wait = (w->easy && resumes_here) || w->wait_ms > 0;
    if (spills_at_once(b, w) || (!can_wait && b->holder && b->mode != RC_OVERFLOW_WAIT)) {
      if (w->queued)
        dequeue(b, w);
      changed(b); /* its place, or what was promised to it, goes on */
      return RC__SPILL;
    }
    if (!can_wait && !b->holder) {
      b->holder = w; /* no one waits: it goes on past the limit, alone */
      w->holder = 1;
      continue;
    }
    if (!can_wait)
      return RC__TIMED_OUT;
    if (!w->queued)
      enqueue(b, w);
    unpromise(b, w);
    w->woken = 0;
    w->need = bytes;
    appoint_holder(b);
    if (w->holder)
      continue;
    if (w->wait_ms <= 0)
      return RC__WAIT;
    rc__admission a = block(b, w);
    if (a != RC__ADMITTED) {
      changed(b);
      return a;
    }
  }
}

rc__admission rc__budget_admit(rc__budget *b, rc__waiter *w, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  rc__admission a = ask(b, w, bytes);
  pthread_mutex_unlock(&b->lock);
  return a;
}

void rc__budget_settle(rc__budget *b, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  RC__ASSERT(b->reserved >= bytes);
  b->reserved -= bytes;
  changed(b); /* a growth charged less than it reserved, or none */
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_charge(rc__budget *b, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  b->in_use += bytes;
  if (b->in_use > b->peak)
    b->peak = b->in_use;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_credit(rc__budget *b, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  RC__ASSERT(b->in_use >= bytes);
  b->in_use -= bytes;
  changed(b);
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_proceed(rc__budget *b, rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  if (w->queued) {
    dequeue(b, w);
    changed(b); /* what was promised to it goes on */
  }
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_spilled(rc__budget *b)
{
  pthread_mutex_lock(&b->lock);
  b->spills++;
  pthread_mutex_unlock(&b->lock);
}

/* w leaves the queue and gives up the holder's place; whoever can go on
 * now is woken. Lock held. */
static void withdraw(rc__budget *b, rc__waiter *w)
{
  if (w->queued)
    dequeue(b, w);
  if (b->holder == w)
    b->holder = NULL;
  w->holder = 0;
  changed(b);
}

void rc__budget_bind(rc__budget *b, rc__waiter *w, CURL *easy, long wait_ms)
{
  pthread_mutex_lock(&b->lock);
  if (!easy && w->easy && w->queued)
    withdraw(b, w);
  if (!easy) { /* detached: nothing adds or counts its handle any more */
    if (w->defer_multi)
      undefer(b, w);
    stream_release(b, w);
    unadd(b, w);
    wake_deferred(b);
  }
  w->easy = easy;
  w->wait_ms = wait_ms;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_resumed_here(void) { resumes_here = 1; }

int rc__budget_defer(rc__budget *b, rc__waiter *w, CURLM *multi, size_t reserve)
{
  pthread_t self = pthread_self();
  if (reserve == 0)
    reserve = 1; /* a running stream is counted by its reserve */
  pthread_mutex_lock(&b->lock);
  stream_release(b, w); /* one that ran before and was not reset */
  int keep = 0;
  if (b->limit == 0) {
    /* no budget: nothing is held back, nor counted */
  } else if (!oldest_deferred(b, self) && stream_fits(b, reserve)) {
    stream_admit(b, w, reserve);
  } else {
    keep = 1;
    w->defer_multi = multi;
    w->defer_thread = self;
    w->stream_reserve = reserve;
    w->defer_next = NULL;
    if (b->dtail)
      b->dtail->defer_next = w;
    else
      b->dhead = w;
    b->dtail = w;
    b->deferrals++;
  }
  pthread_mutex_unlock(&b->lock);
  return keep;
}

size_t rc__budget_deferred_for(rc__budget *b, const CURLM *multi)
{
  size_t n = 0;
  pthread_mutex_lock(&b->lock);
  for (const rc__waiter *w = b->dhead; w; w = w->defer_next)
    n += w->defer_multi == multi;
  pthread_mutex_unlock(&b->lock);
  return n;
}

rc__waiter *rc__budget_next_admitted(rc__budget *b, pthread_t thread, CURLM **multi)
{
  pthread_mutex_lock(&b->lock);
  rc__waiter *w = oldest_deferred(b, thread);
  if (w && (stream_fits(b, w->stream_reserve) || defer_bound_left(b, rc__now()) == 0)) {
    size_t reserve = w->stream_reserve;
    *multi = w->defer_multi;
    undefer(b, w);
    stream_admit(b, w, reserve);
  } else {
    w = NULL;
  }
  pthread_mutex_unlock(&b->lock);
  return w;
}

void rc__budget_added(rc__budget *b, rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  if (!w->in_multi) {
    w->in_multi = 1;
    b->in_multi++;
  }
  pthread_mutex_unlock(&b->lock);
}

size_t rc__budget_in_multi(rc__budget *b)
{
  pthread_mutex_lock(&b->lock);
  size_t n = b->in_multi;
  pthread_mutex_unlock(&b->lock);
  return n;
}

void rc__budget_requeue(rc__budget *b, rc__waiter *w, CURLM *multi)
{
  pthread_mutex_lock(&b->lock);
  size_t reserve = w->stream_reserve;
  stream_release(b, w);
  w->defer_multi = multi;
  w->defer_thread = pthread_self();
  w->stream_reserve = reserve;
  w->defer_next = b->dhead;
  b->dhead = w;
  if (!b->dtail)
    b->dtail = w;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_stream_done(rc__budget *b, rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  if (w->stream_reserve && !w->defer_multi) {
    stream_release(b, w);
    wake_deferred(b);
  }
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_leave(rc__budget *b, rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  if (w->defer_multi)
    undefer(b, w);
  stream_release(b, w);
  unadd(b, w);
  withdraw(b, w);
  w->spill = w->resumed = 0;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_set_limit(rc__budget *b, size_t limit)
{
  pthread_mutex_lock(&b->lock);
  b->limit = limit;
  changed(b);
  pthread_mutex_unlock(&b->lock);
}

size_t rc__budget_limit(rc__budget *b)
{
  pthread_mutex_lock(&b->lock);
  size_t limit = b->limit;
  pthread_mutex_unlock(&b->lock);
  return limit;
}

rc_overflow rc__budget_mode(rc__budget *b)
{
  pthread_mutex_lock(&b->lock);
  rc_overflow mode = b->mode;
  pthread_mutex_unlock(&b->lock);
  return mode;
}

void rc__budget_stats(rc__budget *b, rc_pool_stats *st)
{
  pthread_mutex_lock(&b->lock);
  st->bytes_in_use = b->in_use;
  st->peak_in_use = b->peak;
  st->pauses = b->pauses;
  st->wakeups = b->wakeups;
  st->spills = b->spills;
  st->deferrals = b->deferrals;
  st->waiting = st->deferred = 0;
  for (rc__waiter *w = b->head; w; w = w->next)
    st->waiting++;
  for (rc__waiter *w = b->dhead; w; w = w->defer_next)
    st->deferred++;
  pthread_mutex_unlock(&b->lock);
}

/* ---- For the loop functions. */

/* Milliseconds at t until w's wait bound passes (0: passed); -1 when no
 * bound applies (RC_OVERFLOW_WAIT, or max_wait_ms <= 0). */
static long wait_left(const rc__budget *b, const rc__waiter *w, struct timespec t)
{
  if (b->mode != RC_OVERFLOW_AUTO || b->max_wait_ms <= 0)
    return -1;
  return ms_until(t, rc__after_ms(w->since, b->max_wait_ms));
}

/* Is w paused by thread (and not resumed yet)? */
static int paused_by(const rc__waiter *w, pthread_t thread)
{
  return w->easy && w->wait_ms <= 0 && !w->resumed && pthread_equal(w->thread, thread);
}

/* Is w, paused by thread, to be resumed now? Marks one whose wait bound
 * passed for spilling. */
static int due(rc__budget *b, rc__waiter *w, pthread_t thread, struct timespec t)
{
  if (!paused_by(w, thread))
    return 0;
  if (w->woken)
    return 1;
  if (wait_left(b, w, t) != 0)
    return 0;
  w->spill = 1;
  return 1;
}

CURL *rc__budget_next_due(rc__budget *b, pthread_t thread, rc__waiter **wp)
{
  resumes_here = 1;
  pthread_mutex_lock(&b->lock);
  struct timespec t = rc__now();
  rc__waiter *w = b->head;
  while (w && !due(b, w, thread, t))
    w = w->next;
  CURL *easy = NULL;
  if (w) {
    w->resumed = 1; /* unpaused; it stays queued until its callback asks */
    easy = w->easy;
  }
  if (wp)
    *wp = w;
  pthread_mutex_unlock(&b->lock);
  return easy;
}

int rc__budget_still_resumed(rc__budget *b, const rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  int resumed = w->resumed;
  pthread_mutex_unlock(&b->lock);
  return resumed;
}

long rc__budget_due_in(rc__budget *b, pthread_t thread)
{
  long best = -1;
  resumes_here = 1;
  pthread_mutex_lock(&b->lock);
  struct timespec t = rc__now();
  for (rc__waiter *w = b->head; w; w = w->next) {
    if (!paused_by(w, thread))
      continue;
    long ms = w->woken ? 0 : wait_left(b, w, t);
    if (ms >= 0 && (best < 0 || ms < best))
      best = ms;
  }
  rc__waiter *d = oldest_deferred(b, thread);
  if (d) {
    long ms = stream_fits(b, d->stream_reserve) ? 0 : defer_bound_left(b, t);
    if (ms >= 0 && (best < 0 || ms < best))
      best = ms;
  }
  pthread_mutex_unlock(&b->lock);
  return best;
}

void rc__budget_add_waker(rc__budget *b, rc__waker *k)
{
  resumes_here = 1;
  pthread_mutex_lock(&b->lock);
  k->next = b->wakers;
  b->wakers = k;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_remove_waker(rc__budget *b, rc__waker *k)
{
  pthread_mutex_lock(&b->lock);
  rc__waker **pp = &b->wakers;
  while (*pp && *pp != k)
    pp = &(*pp)->next;
  if (*pp)
    *pp = k->next;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_set_wake(rc__budget *b, pthread_t thread, rc__waker *fresh)
{
  rc__waker *old = NULL;
  resumes_here = 1;
  pthread_mutex_lock(&b->lock);
  for (rc__waker **pp = &b->wakers; *pp; pp = &(*pp)->next)
    if ((*pp)->allocated && pthread_equal((*pp)->thread, thread)) {
      old = *pp;
      *pp = old->next;
      break;
    }
  if (fresh) {
    fresh->next = b->wakers;
    b->wakers = fresh;
  }
  pthread_mutex_unlock(&b->lock);
  if (old)
    b->alloc->free(old, b->alloc->ud);
}
