/* The memory budget: accounting, admission, the waiter queue and its
 * holder, blocking waits, the wait bound, wakers, and resuming. */
#include "budget.h"
#include "clock.h"
#include "debug.h"
#include "pool.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Milliseconds from a to b, 0 if b is not later. */
static long ms_until(struct timespec a, struct timespec b)
{
  long long ms = rc__ms_between(a, b);
  return ms > 0 ? (long)(ms < LONG_MAX ? ms : LONG_MAX) : 0;
}

rc_code rc__budget_init(rc__budget *b, const rc_pool_config *cfg, const rc_allocator *alloc)
{
  memset(b, 0, sizeof *b);
  b->alloc = alloc;
  b->limit = cfg->budget;
  b->mode = cfg->overflow;
  b->max_wait_ms = cfg->max_wait_ms;
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

/* Bytes still free under the limit, less those promised to woken waiters. */
static size_t available(const rc__budget *b)
{
  if (b->limit == 0)
    return SIZE_MAX;
  size_t used = b->in_use + b->promised;
  return used < b->in_use || used >= b->limit ? 0 : b->limit - used;
}

/* A woken waiter that is not the holder has its need promised: later
 * arrivals do not take it. Every change of ready or holder goes between
 * unpromise and promise. */
static void unpromise(rc__budget *b, const rc__waiter *w)
{
  if (w->ready && !w->holder) {
    RC__ASSERT(b->promised >= w->need);
    b->promised -= w->need;
  }
}

static void promise(rc__budget *b, const rc__waiter *w)
{
  if (w->ready && !w->holder)
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
  w->ready = w->cont = 0;
  w->thread = pthread_self();
  w->since = rc__now();
  b->pauses++;
}

static void dequeue(rc__budget *b, rc__waiter *w)
{
  RC__ASSERT(w->queued || !w->ready);
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
  w->queued = w->ready = w->cont = 0;
}

/* Tells w's thread that w may go on: its loop through the wakers, or its
 * blocked callback through the condition. */
static void wake(rc__budget *b, rc__waiter *w)
{
  w->ready = 1;
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
  if (!b->holder->ready)
    wake(b, b->holder);
}

/* Memory was released or the limit changed: the holder, then waiters oldest
 * first while their needs added up fit. The first that does not fit stops
 * the pass: later, smaller ones do not overtake it. */
static void changed(rc__budget *b)
{
  if (!b->head)
    return;
  appoint_holder(b);
  size_t avail = available(b);
  for (rc__waiter *w = b->head; w; w = w->next) {
    if (w->holder || w->ready)
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
  if (w && w->ready && !w->holder && avail <= SIZE_MAX - w->need)
    avail += w->need;
  return b->limit == 0 || bytes <= avail;
}

/* Where a refused w goes instead of memory, when it does not wait. */
static int spills_at_once(const rc__budget *b, const rc__waiter *w)
{
  return w->spill || b->mode == RC_OVERFLOW_SPILL ||
         (b->mode == RC_OVERFLOW_AUTO && w->multiplexed);
}

/* A blocking waiter waits for its turn or its deadline. RC_OK to ask
 * again; otherwise what its refusal ends in. */
static rc_code block(rc__budget *b, rc__waiter *w)
{
  struct timespec deadline = rc__after_ms(w->since, w->wait_ms);
  while (!w->ready && !w->holder)
    if (pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
      break;
  if (w->ready || w->holder)
    return RC_OK;
  dequeue(b, w);
  return b->mode == RC_OVERFLOW_WAIT ? RC_E_TIMEOUT : RC__SPILL;
}

static rc_code ask(rc__budget *b, rc__waiter *w, size_t bytes, int count)
{
  if (w)
    w->cont = 0;
  for (;;) {
    if (!w || w->holder || fits(b, w, bytes)) {
      if (w && w->queued)
        dequeue(b, w);
      if (w)
        w->spill = 0;
      if (count) {
        b->in_use += bytes;
        if (b->in_use > b->peak)
          b->peak = b->in_use;
      }
      return RC_OK;
    }
    int can_wait = w->easy || w->wait_ms > 0;
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
      return RC_E_TIMEOUT;
    if (!w->queued)
      enqueue(b, w);
    unpromise(b, w);
    w->ready = 0;
    w->need = bytes;
    appoint_holder(b);
    if (w->holder)
      continue;
    if (w->wait_ms <= 0)
      return RC__WAIT;
    rc_code rc = block(b, w);
    if (rc != RC_OK) {
      changed(b);
      return rc;
    }
  }
}

rc_code rc__budget_reserve(rc__budget *b, rc__waiter *w, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  rc_code rc = ask(b, w, bytes, 1);
  pthread_mutex_unlock(&b->lock);
  return rc;
}

rc_code rc__budget_gate(rc__budget *b, rc__waiter *w, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  rc_code rc = ask(b, w, bytes, 0);
  pthread_mutex_unlock(&b->lock);
  return rc;
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

void rc__budget_release(rc__budget *b, size_t bytes)
{
  pthread_mutex_lock(&b->lock);
  RC__ASSERT(b->in_use >= bytes);
  b->in_use -= bytes;
  changed(b);
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
  w->easy = easy;
  w->wait_ms = wait_ms;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_leave(rc__budget *b, rc__waiter *w)
{
  pthread_mutex_lock(&b->lock);
  withdraw(b, w);
  w->spill = w->cont = 0;
  pthread_mutex_unlock(&b->lock);
}

void rc__budget_stats(rc__budget *b, rc_pool_stats *st)
{
  pthread_mutex_lock(&b->lock);
  st->bytes_in_use = b->in_use;
  st->peak_in_use = b->peak;
  st->pauses = b->pauses;
  st->wakeups = b->wakeups;
  st->spills = b->spills;
  st->waiting = 0;
  for (rc__waiter *w = b->head; w; w = w->next)
    st->waiting++;
  pthread_mutex_unlock(&b->lock);
}

size_t rc__budget_limit(rc__budget *b)
{
  pthread_mutex_lock(&b->lock);
  size_t limit = b->limit;
  pthread_mutex_unlock(&b->lock);
  return limit;
}

/* ---- The public face: setting the limit, resuming, waking loops. */

rc_code rc_pool_set_budget(rc_pool *pool, size_t bytes)
{
  if (!pool)
    return RC_E_INVAL;
  rc__budget *b = rc__pool_budget(pool);
  pthread_mutex_lock(&b->lock);
  b->limit = bytes;
  changed(b);
  pthread_mutex_unlock(&b->lock);
  return RC_OK;
}

/* Milliseconds at t until w's wait bound passes (0: passed); -1 when no
 * bound applies (RC_OVERFLOW_WAIT, or max_wait_ms <= 0). */
static long wait_left(const rc__budget *b, const rc__waiter *w, struct timespec t)
{
  if (b->mode != RC_OVERFLOW_AUTO || b->max_wait_ms <= 0)
    return -1;
  return ms_until(t, rc__after_ms(w->since, b->max_wait_ms));
}

/* Is w paused by the calling thread (and not resumed yet)? */
static int paused_here(const rc__waiter *w, pthread_t self)
{
  return w->easy && w->wait_ms <= 0 && !w->cont && pthread_equal(w->thread, self);
}

/* Is w, paused by the calling thread, to be resumed now? Marks one whose
 * wait bound passed for spilling. */
static int due(rc__budget *b, rc__waiter *w, pthread_t self, struct timespec t)
{
  if (!paused_here(w, self))
    return 0;
  if (w->ready)
    return 1;
  if (wait_left(b, w, t) != 0)
    return 0;
  w->spill = 1;
  return 1;
}

int rc_pool_resume(rc_pool *pool)
{
  if (!pool)
    return 0;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  int resumed = 0;
  pthread_mutex_lock(&b->lock);
  struct timespec t = rc__now();
  for (;;) {
    rc__waiter *w = b->head;
    while (w && !due(b, w, self, t))
      w = w->next;
    if (!w)
      break;
    w->cont = 1; /* unpaused; it stays queued until its callback asks */
    CURL *easy = w->easy;
    pthread_mutex_unlock(&b->lock);
    /* May run the write callback at once, which takes the lock again. */
    curl_easy_pause(easy, CURLPAUSE_CONT);
    resumed++;
    pthread_mutex_lock(&b->lock);
  }
  pthread_mutex_unlock(&b->lock);
  return resumed;
}

long rc_pool_timeout(rc_pool *pool)
{
  if (!pool)
    return -1;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  long best = -1;
  pthread_mutex_lock(&b->lock);
  struct timespec t = rc__now();
  for (rc__waiter *w = b->head; w; w = w->next) {
    if (!paused_here(w, self))
      continue;
    long ms = w->ready ? 0 : wait_left(b, w, t);
    if (ms >= 0 && (best < 0 || ms < best))
      best = ms;
  }
  pthread_mutex_unlock(&b->lock);
  return best;
}

/* Sets the calling thread's wake callback, replacing one it had. */
rc_code rc_pool_on_wake(rc_pool *pool, rc_wake_fn fn, void *ud)
{
  if (!pool)
    return RC_E_INVAL;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  rc__waker *fresh = NULL;
  if (fn && !(fresh = b->alloc->malloc(sizeof *fresh, b->alloc->ud)))
    return RC_E_NOMEM;
  rc__waker *old = NULL;
  pthread_mutex_lock(&b->lock);
  for (rc__waker **pp = &b->wakers; *pp; pp = &(*pp)->next)
    if ((*pp)->allocated && pthread_equal((*pp)->thread, self)) {
      old = *pp;
      *pp = old->next;
      break;
    }
  if (fresh) {
    *fresh = (rc__waker){b->wakers, self, fn, ud, 1};
    b->wakers = fresh;
  }
  pthread_mutex_unlock(&b->lock);
  if (old)
    b->alloc->free(old, b->alloc->ud);
  return RC_OK;
}

static void wake_multi(void *multi) { curl_multi_wakeup(multi); }

CURLMcode rc_multi_poll(rc_pool *pool, CURLM *multi, struct curl_waitfd extra_fds[],
                        unsigned int extra_nfds, int timeout_ms, int *numfds)
{
  if (!pool || !multi)
    return CURLM_BAD_HANDLE;
  rc__budget *b = rc__pool_budget(pool);
  rc__pool_tick(pool);
  rc_pool_resume(pool);
  rc__waker me = {NULL, pthread_self(), wake_multi, multi, 0};
  pthread_mutex_lock(&b->lock);
  me.next = b->wakers;
  b->wakers = &me;
  pthread_mutex_unlock(&b->lock);
  long due_ms = rc_pool_timeout(pool); /* a wake-up since the resume, or a wait bound */
  if (due_ms >= 0 && due_ms < timeout_ms)
    timeout_ms = (int)due_ms;

  CURLMcode mc = curl_multi_poll(multi, extra_fds, extra_nfds, timeout_ms, numfds);

  pthread_mutex_lock(&b->lock);
  rc__waker **pp = &b->wakers;
  while (*pp != &me)
    pp = &(*pp)->next;
  *pp = me.next;
  pthread_mutex_unlock(&b->lock);
  rc_pool_resume(pool);
  return mc;
}
