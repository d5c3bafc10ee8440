/* The memory budget: the waiter queue, the holder, and waking. */
#include "budget.h"

static void enqueue(rc__budget *b, rc__waiter *w)
{
  w->next = NULL;
  if (b->tail)
    b->tail->next = w;
  else
    b->head = w;
  b->tail = w;
  w->queued = 1;
}

static void dequeue(rc__budget *b, rc__waiter *w)
{
  rc__waiter **pp = &b->head, *prev = NULL;
  while (*pp && *pp != w) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (!*pp)
    return;
  *pp = w->next;
  if (b->tail == w)
    b->tail = prev;
  w->next = NULL;
  w->queued = w->ready = 0;
}

static int fits(const rc__budget *b, size_t in_use, size_t delta)
{
  return b->limit == 0 || (in_use <= b->limit && delta <= b->limit - in_use);
}

/* Tells w's thread that w may go on. */
static void wake(rc__budget *b, rc__waiter *w)
{
  w->ready = 1;
  for (rc__poller *p = b->pollers; p; p = p->next)
    if (pthread_equal(p->thread, w->thread))
      curl_multi_wakeup(p->multi);
  pthread_cond_broadcast(&b->cond);
}

/* Gives the holder's place to the oldest waiter, if the place is free. */
static void appoint_holder(rc__budget *b)
{
  if (b->holder || !b->head)
    return;
  b->holder = b->head;
  b->holder->holder = 1;
  wake(b, b->holder);
}

rc_code rc__budget_admit(rc__budget *b, rc__waiter *w, size_t in_use,
                         size_t delta, uint64_t *pauses)
{
  if (!w || w->holder || fits(b, in_use, delta)) {
    if (w && w->queued)
      dequeue(b, w);
    return RC_OK;
  }
  w->need = delta;
  w->thread = pthread_self();
  w->ready = 0;
  if (!w->queued) {
    enqueue(b, w);
    ++*pauses;
  }
  appoint_holder(b);
  if (w->holder) {
    dequeue(b, w);
    return RC_OK;
  }
  return RC__WAIT;
}

void rc__budget_changed(rc__budget *b, size_t in_use)
{
  if (!b->head)
    return;
  appoint_holder(b);
  for (rc__waiter *w = b->head; w; w = w->next)
    if (!w->ready && (w->holder || fits(b, in_use, w->need)))
      wake(b, w);
}

void rc__budget_leave(rc__budget *b, rc__waiter *w, size_t in_use)
{
  if (w->queued)
    dequeue(b, w);
  if (b->holder == w) {
    b->holder = NULL;
    w->holder = 0;
  }
  rc__budget_changed(b, in_use);
}
