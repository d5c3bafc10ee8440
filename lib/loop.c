/* The loop functions: a program's event loop resumes the transfers that
 * the budget paused on its thread, learns when to come back, and is woken
 * when one may go on. A paused transfer is resumed only by the thread that
 * paused it (curl handles are not shared between threads), so every call
 * here says which thread asks: the caller's. */
#include "budget.h"
#include "pool.h"
#include "response.h"

#include <pthread.h>

int rc_pool_resume(rc_pool *pool)
{
  if (!pool)
    return 0;
  rc__budget *b = rc__pool_budget(pool);
  pthread_t self = pthread_self();
  int resumed = 0;
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

CURLMcode rc_multi_poll(rc_pool *pool, CURLM *multi, struct curl_waitfd extra_fds[],
                        unsigned int extra_nfds, int timeout_ms, int *numfds)
{
  if (!pool || !multi)
    return CURLM_BAD_HANDLE;
  rc__budget *b = rc__pool_budget(pool);
  rc__pool_tick(pool);
  rc_pool_resume(pool);
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
