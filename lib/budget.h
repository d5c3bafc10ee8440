/* The memory budget: admission of buffer growth against a byte limit shared
 * by every response of a pool, with transfers that wait (paused, or blocked
 * in their callback) in one queue, oldest first. Internal.
 *
 * Progress: when a response is refused, the oldest waiter becomes the holder,
 * which is admitted past the limit until it is reset or freed; a holder is
 * bounded by its own caps, so bytes in use stay under the limit plus one
 * response, and a state where every transfer waits still drains. */
#ifndef RC_BUDGET_H
#define RC_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include "respchain.h"

#define RC__WAIT ((rc_code)-1)  /* refused by the budget: wait, then retry */

typedef struct rc__waiter {
  struct rc__waiter *next;  /* in the queue, oldest first */
  CURL *easy;               /* resumed with curl_easy_pause; NULL: none */
  long wait_ms;             /* > 0: block up to this long instead of pausing */
  pthread_t thread;         /* the thread that paused it: the only resumer */
  size_t need;              /* bytes it was refused */
  int queued, ready, holder;
} rc__waiter;

/* A thread inside rc_multi_poll, to be woken when one of its transfers may
 * go on. Lives on that thread's stack. */
typedef struct rc__poller {
  struct rc__poller *next;
  pthread_t thread;
  CURLM *multi;
} rc__poller;

typedef struct rc__budget {
  size_t limit;             /* 0: off */
  rc__waiter *head, *tail;
  rc__waiter *holder;
  rc__poller *pollers;
  pthread_cond_t cond;      /* blocked waiters wait here */
} rc__budget;

/* All below: the pool's lock held. */

/* May w (NULL: not budgeted) add delta bytes while in_use are held? RC_OK,
 * or RC__WAIT with w queued. Counts a pause in *pauses. */
rc_code rc__budget_admit(rc__budget *b, rc__waiter *w, size_t in_use,
                         size_t delta, uint64_t *pauses);

/* Memory was released or the limit changed: marks the waiters that may go
 * on, and wakes their threads. */
void rc__budget_changed(rc__budget *b, size_t in_use);

/* w's response is reset or freed: it leaves the queue, and passes on the
 * holder's place if it had it. */
void rc__budget_leave(rc__budget *b, rc__waiter *w, size_t in_use);

#endif
