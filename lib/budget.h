/* The memory budget: the bytes a pool's responses hold, the limit on them,
 * and everything about the transfers that wait for memory: the queue, the
 * holder, blocking waits, the wait bound, waking the threads that drive the
 * waiting transfers, and resuming them. One per pool, with its own lock.
 * Internal.
 *
 * A refused transfer waits (pauses, or blocks in its callback) or spills
 * (its body goes on to its temp file instead of memory), by the pool's
 * overflow mode and the transfer's transport:
 *  - a paused transfer that shares its connection (HTTP/2, HTTP/3) keeps
 *    receiving into curl's own buffers, so such a transfer spills at once
 *    under RC_OVERFLOW_AUTO;
 *  - a waiter that waited max_wait_ms spills (AUTO), so that a program that
 *    keeps its finished responses cannot wait forever;
 *  - the oldest waiter is the holder (or, when none waits, the first
 *    refused transfer that does not spill), admitted past the limit until
 *    it is reset or freed, so bytes in use stay under the limit plus one
 *    response and a state where every transfer waits still drains.
 * Memory released wakes waiters oldest first, as long as their needs added
 * up fit: one release wakes at most the transfers it can carry. */
#ifndef RC_BUDGET_H
#define RC_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include "respchain.h"

#define RC__WAIT  ((rc_code)-1) /* refused: pause, then ask again */
#define RC__SPILL ((rc_code)-2) /* refused: write the body to its file */

/* A response's place in the budget. The owner sets easy and wait_ms
 * through rc__budget_bind (under the lock: other threads read them), and
 * multiplexed from its own callback; the rest is the budget's. */
typedef struct rc__waiter {
  CURL *easy;      /* paused and resumed with it; NULL: cannot pause */
  long wait_ms;    /* > 0: block up to this long instead of pausing */
  int multiplexed; /* its transfer shares a connection (HTTP/2+) */

  struct rc__waiter *next; /* in the queue, oldest first */
  pthread_t thread;        /* the thread that paused it: its only resumer */
  struct timespec since;   /* when it started waiting (monotonic) */
  size_t need;             /* bytes it was refused */
  int queued;
  int ready; /* woken: may ask again (its need is promised) */
  int cont;  /* unpaused by rc_pool_resume, has not asked yet */
  int holder;
  int spill; /* its wait bound passed: spill when it asks */
} rc__waiter;

/* Something that wakes the loop of one thread: a poller inside
 * rc_multi_poll (on its stack), or a callback set with rc_pool_on_wake. */
typedef struct rc__waker {
  struct rc__waker *next;
  pthread_t thread;
  rc_wake_fn fn;
  void *ud;
  int allocated; /* made by rc_pool_on_wake: freed by the budget */
} rc__waker;

typedef struct rc__budget {
  pthread_mutex_t lock;
  pthread_cond_t cond; /* blocking waiters wait here */
  const rc_allocator *alloc;
  size_t limit; /* 0: off */
  rc_overflow mode;
  long max_wait_ms;
  size_t in_use, peak; /* bytes held by responses now, and the most */
  size_t promised;     /* needs of the woken waiters, holder aside */
  uint64_t pauses, wakeups, spills;
  rc__waiter *head, *tail;
  rc__waiter *holder;
  rc__waker *wakers;
} rc__budget;

/* Sets up b from cfg; alloc (kept, not copied) serves the wakers.
 * RC_OK or RC_E_NOMEM. */
rc_code rc__budget_init(rc__budget *b, const rc_pool_config *cfg, const rc_allocator *alloc);
void rc__budget_destroy(rc__budget *b);

/* w (NULL: exempt, always admitted) asks to hold bytes more. RC_OK: they
 * are counted as in use. Else nothing is counted and: RC__WAIT, pause (w is
 * queued); RC__SPILL, write to the spill file instead; RC_E_TIMEOUT, a
 * waiter that could neither wait nor spill, or whose blocking wait expired
 * under RC_OVERFLOW_WAIT. A blocking waiter (wait_ms > 0) blocks here. */
rc_code rc__budget_reserve(rc__budget *b, rc__waiter *w, size_t bytes);

/* As reserve, but only asks: nothing is counted on RC_OK. */
rc_code rc__budget_gate(rc__budget *b, rc__waiter *w, size_t bytes);

/* w's transfer went on after a pause without being admitted (the budget
 * was turned off meanwhile, or it took no memory): if it still waits, it
 * leaves the queue, and whoever can go on now is woken. */
void rc__budget_proceed(rc__budget *b, rc__waiter *w);

/* bytes are no longer held; waiters that now fit are woken. */
void rc__budget_release(rc__budget *b, size_t bytes);

/* A spill of w's body began (counted in the stats). */
void rc__budget_spilled(rc__budget *b);

/* Sets how w waits: paused through easy (NULL: it cannot pause; a waiter
 * losing its handle leaves the queue, so nothing resumes a handle that may
 * be gone), or blocking up to wait_ms (> 0). */
void rc__budget_bind(rc__budget *b, rc__waiter *w, CURL *easy, long wait_ms);

/* w's response is reset or freed: it leaves the queue and passes on the
 * holder's place; its spill mark is cleared. */
void rc__budget_leave(rc__budget *b, rc__waiter *w);

/* Copies the budget's counters into st. */
void rc__budget_stats(rc__budget *b, rc_pool_stats *st);

size_t rc__budget_limit(rc__budget *b);

#endif
