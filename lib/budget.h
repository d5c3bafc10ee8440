/* The memory budget: the bytes a pool's responses hold, the limit on them,
 * and the queue of the responses that wait for memory: the holder, promises,
 * blocking waits, the wait bound. One per pool, with its own lock. It knows
 * nothing of the pool: the pool reports the bytes its blocks hold (charge,
 * credit), the body asks before it grows (admit, settle), and the loop
 * functions (loop.c) resume the transfers it woke. Internal.
 *
 * A refused transfer waits (pauses, or blocks in its callback) or spills
 * (its body goes on to its temp file instead of memory), by the pool's
 * overflow mode and the transfer's transport:
 *  - a paused transfer that shares its connection (HTTP/2, HTTP/3) keeps
 *    receiving into curl's own buffers up to its stream window, so such a
 *    transfer spills at once under RC_OVERFLOW_AUTO, unless its window was
 *    kept small (windowed: held, see transfer.c), which curl 8.14 and
 *    later allow; curl before 7.88 loses what a paused stream receives,
 *    so there such a transfer spills at once under RC_OVERFLOW_WAIT too;
 *  - a waiter that waited max_wait_ms spills (AUTO), so that a program that
 *    keeps its finished responses cannot wait forever;
 *  - the oldest waiter is the holder (or, when none waits, the first
 *    refused transfer that does not spill), admitted past the limit until
 *    it is reset or freed, so bytes in use stay under the limit plus one
 *    response and a state where every transfer waits still drains.
 * Memory credited back wakes waiters oldest first, as long as their needs
 * added up fit: one credit wakes at most the transfers it can carry. */
#ifndef RC_BUDGET_H
#define RC_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "respchain.h"

/* What the budget answers a response that asks for bytes. */
typedef enum rc__admission {
  RC__ADMITTED, /* granted: reserved until rc__budget_settle */
  RC__WAIT,     /* refused: pause (the waiter is queued), then ask again */
  RC__SPILL,    /* refused: write the body to its spill file instead */
  RC__TIMED_OUT /* refused: it could neither wait nor spill, or its
                   blocking wait expired under RC_OVERFLOW_WAIT */
} rc__admission;

/* A response's place in the budget. The owner sets easy and wait_ms
 * through rc__budget_bind (under the lock: other threads read them), and
 * multiplexed, windowed and held from the thread that drives its transfer
 * (transfer.c, loop.c); the rest is the budget's. */
typedef struct rc__waiter {
  CURL *easy;      /* paused and resumed with it; NULL: cannot pause */
  long wait_ms;    /* > 0: block up to this long instead of pausing */
  int multiplexed; /* its transfer shares a connection (HTTP/2+) */
  int windowed;    /* multiplexed, and held since its headers: its stream's
                      window is small, so pausing it holds the peer back */
  int unpausable;  /* multiplexed on a curl that loses a paused stream's
                      data (before 7.88): it never pauses, and spills
                      when refused, also under RC_OVERFLOW_WAIT */
  int held;        /* its receive speed limit is lowered to hold it back
                      (rc__transfer_hold) */

  struct rc__waiter *next; /* in the queue, oldest first */
  pthread_t thread;        /* the thread that paused it: its only resumer */
  struct timespec since;   /* when it started waiting (monotonic) */
  size_t need;             /* bytes it was refused */
  int queued;
  int woken;   /* may ask again: its need is promised */
  int resumed; /* unpaused by rc_pool_resume, has not asked yet */
  int holder;
  int spill; /* its wait bound passed: spill when it asks */

  /* Kept back before its request (rc_multi_add, see "Streams" below). */
  CURLM *defer_multi;            /* the multi it waits for; NULL: not kept back */
  struct rc__waiter *defer_next; /* in the deferred queue, oldest first */
  pthread_t defer_thread;        /* the thread that adds it */
  size_t stream_reserve;         /* set aside for its stream while it runs */
  size_t stream_body;            /* of it, the body bytes admitted since */
  int in_multi;                  /* added by rc_multi_add, not reset since */
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
  size_t reserved;     /* admitted, not yet settled */
  size_t promised;     /* needs of the woken waiters, holder aside */
  uint64_t pauses, wakeups, spills, deferrals;
  rc__waiter *head, *tail;
  rc__waiter *dhead, *dtail;  /* kept back before their request */
  size_t streams;             /* set aside for admitted streams that run */
  size_t streams_body;        /* of it, the body bytes they were admitted */
  size_t nstreams;            /* how many of them */
  struct timespec defer_went; /* when a kept-back transfer last went on */
  size_t in_multi;            /* waiters added by rc_multi_add, not reset since */
  rc__waiter *holder;
  rc__waker *wakers;
} rc__budget;

/* Sets up b: limit (0: off), mode and wait bound; alloc (kept, not
 * copied) frees the wakers that rc_pool_on_wake made. RC_OK or
 * RC_E_NOMEM. */
rc_code rc__budget_init(rc__budget *b, size_t limit, rc_overflow mode, long max_wait_ms,
                        const rc_allocator *alloc);
void rc__budget_destroy(rc__budget *b);

/* ---- The counter: bytes held, whoever holds them. */

/* bytes more are held (a block grew). Never refused: admission, if any,
 * came first. */
void rc__budget_charge(rc__budget *b, size_t bytes);

/* bytes are no longer held; waiters that now fit are woken. */
void rc__budget_credit(rc__budget *b, size_t bytes);

/* ---- Admission: the body asks before it grows. */

/* w asks to grow by bytes. RC__ADMITTED: the bytes are reserved (they count
 * against the limit) until rc__budget_settle, by which time the growth is
 * charged or abandoned. Otherwise nothing is reserved; see rc__admission.
 * A blocking waiter (wait_ms > 0) blocks here. */
rc__admission rc__budget_admit(rc__budget *b, rc__waiter *w, size_t bytes);

/* bytes admitted earlier are charged now, or will not be. */
void rc__budget_settle(rc__budget *b, size_t bytes);

/* w's transfer went on after a pause without being admitted (the budget
 * was turned off meanwhile, or it took no memory): if it still waits, it
 * leaves the queue, and whoever can go on now is woken. */
void rc__budget_proceed(rc__budget *b, rc__waiter *w);

/* A body began to spill (counted in the stats). */
void rc__budget_spilled(rc__budget *b);

/* Sets how w waits: paused through easy (NULL: it cannot pause; a waiter
 * losing its handle leaves the queue, so nothing resumes a handle that may
 * be gone), or blocking up to wait_ms (> 0). */
void rc__budget_bind(rc__budget *b, rc__waiter *w, CURL *easy, long wait_ms);

/* w's response is reset or freed: it leaves the queue (and the deferred
 * one) and passes on the holder's place; its stream's reserve is given
 * back; its spill mark is cleared; it no longer counts as added. */
void rc__budget_leave(rc__budget *b, rc__waiter *w);

/* Sets the limit (0: off); waiters that now fit are woken. */
void rc__budget_set_limit(rc__budget *b, size_t limit);
size_t rc__budget_limit(rc__budget *b);
rc_overflow rc__budget_mode(rc__budget *b);

/* Copies the budget's counters into st. */
void rc__budget_stats(rc__budget *b, rc_pool_stats *st);

/* ---- Streams: on a curl that reads every HTTP/2 stream into its own
 * buffers from its request on, whatever the write callback does (8.1 to
 * 8.6: 10 MB windows), the budget can bound the process only by how many
 * streams run. rc_multi_add asks here before it adds a transfer: one is
 * admitted with `reserve` bytes set aside for its stream (what curl may
 * buffer of it, and the body it becomes: loop.c says how it is sized),
 * while the bytes in use and reserved
 * (but the bodies of running streams, which their reserves hold) and those
 * set aside for running streams leave room for it, or when no admitted
 * stream runs; else it is kept back, oldest first, and the thread that asked adds
 * it when it is admitted (rc__budget_next_admitted). Under RC_OVERFLOW_AUTO
 * one also goes on when none has for max_wait_ms. A stream's reserve is
 * given back when its body ends or its response leaves. */

/* The calling thread runs the loop functions (rc_multi_add says so: what
 * it keeps back, rc_pool_resume adds): transfers refused there may pause. */
void rc__budget_resumed_here(void);

/* 1: w is kept back, to be added to multi later by the calling thread; 0:
 * it may be added now (its reserve set aside, when the budget is on). */
int rc__budget_defer(rc__budget *b, rc__waiter *w, CURLM *multi, size_t reserve);

/* How many transfers are kept back for multi now. */
size_t rc__budget_deferred_for(rc__budget *b, const CURLM *multi);

/* The oldest transfer kept back by thread that is admitted now (dequeued,
 * its reserve set aside), with its multi in *multi; NULL when none is. */
rc__waiter *rc__budget_next_admitted(rc__budget *b, pthread_t thread, CURLM **multi);

/* w's transfer went into its multi (rc_multi_add, rc_pool_resume): it
 * counts in rc__budget_in_multi until its response is reset, freed or
 * detached. */
void rc__budget_added(rc__budget *b, rc__waiter *w);

/* How many transfers rc_multi_add put into a multi handle that were not
 * reset, freed or detached since. */
size_t rc__budget_in_multi(rc__budget *b);

/* w, just admitted, could not be added yet: it is kept back again, first
 * in the queue, its reserve no longer set aside. */
void rc__budget_requeue(rc__budget *b, rc__waiter *w, CURLM *multi);

/* w's stream no longer runs (its body ended, or its add failed): its
 * reserve is given back, and kept-back transfers that now fit are woken. */
void rc__budget_stream_done(rc__budget *b, rc__waiter *w);

/* ---- For the loop functions (loop.c), which say which thread asks. */

/* A transfer paused by thread that is due to be resumed (woken, or its
 * wait bound passed, which marks it to spill): marked resumed and its
 * handle returned, for the caller to unpause outside the lock, with its
 * waiter in *w (w may be NULL). NULL when none is due. */
CURL *rc__budget_next_due(rc__budget *b, pthread_t thread, rc__waiter **w);

/* Whether w, resumed by rc__budget_next_due, has not asked again since
 * (its write callback has not run, or did not reach the budget). */
int rc__budget_still_resumed(rc__budget *b, const rc__waiter *w);

/* Milliseconds until a transfer paused or kept back by thread is due (0:
 * one is); -1 when none will be without a wake-up. */
long rc__budget_due_in(rc__budget *b, pthread_t thread);

/* Adds k (owned by the caller) to the wakers, or takes it off. */
void rc__budget_add_waker(rc__budget *b, rc__waker *k);
void rc__budget_remove_waker(rc__budget *b, rc__waker *k);

/* Makes fresh (allocated from alloc; NULL: none) thread's wake callback;
 * the one it replaces is freed. */
void rc__budget_set_wake(rc__budget *b, pthread_t thread, rc__waker *fresh);

#endif
