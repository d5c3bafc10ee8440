/* Unit tests of the memory budget's queue on its own, without a pool or a
 * transfer: the order waiters are admitted in, promises, the holder, wake
 * counts, and every way out of a wait (resumed, leaving, going on after the
 * budget was turned off, the wait bound, a blocking wait that expires). The
 * waiters' curl handles are stand-ins: the budget only hands them back. */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "budget.h"
#include "util.h"

static char handle[1];
#define EASY ((CURL *)handle) /* never given to curl here */

static const rc_allocator std = {NULL, NULL, NULL, NULL}; /* wakers on the stack only */

/* A budget, asked from a thread that resumes what it pauses: it asked
 * when one would be due (rc_pool_timeout does so), as every loop does. */
static void budget_with(rc__budget *b, size_t limit, rc_overflow mode, long max_wait_ms)
{
  ck_assert_int_eq(rc__budget_init(b, limit, mode, max_wait_ms, &std), RC_OK);
  ck_assert_int_eq(rc__budget_due_in(b, pthread_self()), -1);
}

/* A waiter that pauses (it has a handle), or blocks up to wait_ms. */
static void waiter_init(rc__budget *b, rc__waiter *w, CURL *easy, long wait_ms)
{
  memset(w, 0, sizeof *w);
  rc__budget_bind(b, w, easy, wait_ms);
}

static rc_pool_stats stats(rc__budget *b)
{
  rc_pool_stats st;
  memset(&st, 0, sizeof st);
  rc__budget_stats(b, &st);
  return st;
}

/* Counts the wake-ups told to this thread's loop. */
static int told;
static void count_wake(void *ud)
{
  (void)ud;
  told++;
}

/* h holds bytes (the whole limit), and asks for one more: with no handle
 * and no blocking wait, it takes the free holder's place when refused, and
 * goes on past the limit, alone (its growth is then abandoned). */
static void take_holder(rc__budget *b, rc__waiter *h, size_t bytes)
{
  waiter_init(b, h, NULL, 0);
  rc__budget_charge(b, bytes);
  ck_assert_int_eq(rc__budget_admit(b, h, 1), RC__ADMITTED);
  ck_assert(h->holder);
  rc__budget_settle(b, 1);
}

/* Admitted bytes count against the limit from the answer on, before they
 * are charged: two askers cannot both take the last room. */
START_TEST(admitted_bytes_are_reserved)
{
  rc__budget b;
  budget_with(&b, 100, RC_OVERFLOW_SPILL, 0);
  rc__waiter a, c;
  waiter_init(&b, &a, EASY, 0);
  waiter_init(&b, &c, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &a, 60), RC__ADMITTED);
  ck_assert_int_eq(rc__budget_admit(&b, &c, 60), RC__SPILL); /* 60 are reserved */
  rc__budget_charge(&b, 60);
  rc__budget_settle(&b, 60);
  ck_assert_uint_eq(stats(&b).bytes_in_use, 60);
  ck_assert_int_eq(rc__budget_admit(&b, &c, 40), RC__ADMITTED);
  rc__budget_settle(&b, 40); /* abandoned: nothing charged */
  ck_assert_int_eq(rc__budget_admit(&b, &c, 40), RC__ADMITTED);
  rc__budget_settle(&b, 40);
  rc__budget_credit(&b, 60);
  rc_pool_stats st = stats(&b);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_uint_eq(st.peak_in_use, 60);
  ck_assert_uint_eq(st.spills, 0); /* counted by the body, when it spills */
  rc__budget_destroy(&b);
}
END_TEST

/* Credit wakes waiters oldest first while their needs added up fit; the
 * first that does not fit stops the pass (a later, smaller one does not
 * overtake it). A woken waiter's need is promised: a newcomer cannot take
 * it. Each wake-up tells the paused waiter's thread once. */
START_TEST(fifo_wakes_and_promises)
{
  rc__budget b;
  budget_with(&b, 100, RC_OVERFLOW_WAIT, 0);
  rc__waker k = {NULL, pthread_self(), count_wake, NULL, 0};
  rc__budget_add_waker(&b, &k);
  told = 0;
  rc__waiter h, w1, w2, w3, late;
  take_holder(&b, &h, 100);
  waiter_init(&b, &w1, EASY, 0);
  waiter_init(&b, &w2, EASY, 0);
  waiter_init(&b, &w3, EASY, 0);
  waiter_init(&b, &late, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w1, 30), RC__WAIT);
  ck_assert_int_eq(rc__budget_admit(&b, &w2, 50), RC__WAIT);
  ck_assert_int_eq(rc__budget_admit(&b, &w3, 10), RC__WAIT);
  rc_pool_stats st = stats(&b);
  ck_assert_uint_eq(st.waiting, 3);
  ck_assert_uint_eq(st.pauses, 3);
  ck_assert_uint_eq(st.wakeups, 0);

  rc__budget_credit(&b, 40); /* 40 free: w1 (30) fits, w2 (50) does not */
  ck_assert(w1.woken && !w2.woken && !w3.woken);
  ck_assert_uint_eq(stats(&b).wakeups, 1);
  ck_assert_int_eq(told, 1);

  /* 10 are free, but promised to nobody: the newcomer asking 20 waits,
   * since w1's 30 are promised. */
  ck_assert_int_eq(rc__budget_admit(&b, &late, 20), RC__WAIT);
  ck_assert_int_eq(rc__budget_admit(&b, &w1, 30), RC__ADMITTED); /* its promise */
  ck_assert(!w1.queued);
  rc__budget_charge(&b, 30);
  rc__budget_settle(&b, 30);
  ck_assert_uint_eq(stats(&b).waiting, 3); /* w2, w3, late */

  /* The holder goes: w2 takes its place (woken though its need does not
   * fit), then w3 and late fit in the 70 credited. */
  rc__budget_leave(&b, &h);
  rc__budget_credit(&b, 60);
  ck_assert(w2.holder && w2.woken);
  ck_assert(w3.woken && late.woken);
  ck_assert_uint_eq(stats(&b).wakeups, 4);
  ck_assert_int_eq(told, 4);
  ck_assert_int_eq(rc__budget_admit(&b, &w2, 50), RC__ADMITTED);
  rc__budget_settle(&b, 50);
  ck_assert_int_eq(rc__budget_admit(&b, &w3, 10), RC__ADMITTED);
  rc__budget_settle(&b, 10);
  ck_assert_int_eq(rc__budget_admit(&b, &late, 20), RC__ADMITTED);
  rc__budget_settle(&b, 20);
  ck_assert_uint_eq(stats(&b).waiting, 0);
  rc__budget_remove_waker(&b, &k);
  rc__budget_credit(&b, 30);
  rc__budget_leave(&b, &w2);
  rc__budget_destroy(&b);
}
END_TEST

/* A woken waiter is due on the thread that paused it, and on no other;
 * once resumed it is not due again, and stays queued until it asks. */
static void *due_elsewhere(void *arg)
{
  rc__budget *b = arg;
  return rc__budget_next_due(b, pthread_self(), NULL);
}

START_TEST(resumed_by_its_thread)
{
  rc__budget b;
  budget_with(&b, 10, RC_OVERFLOW_WAIT, 0);
  rc__waiter h, w;
  take_holder(&b, &h, 10);
  waiter_init(&b, &w, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 5), RC__WAIT);
  ck_assert_int_eq(rc__budget_due_in(&b, pthread_self()), -1); /* no bound: a wake-up */
  ck_assert_ptr_null(rc__budget_next_due(&b, pthread_self(), NULL));
  rc__budget_credit(&b, 10);
  ck_assert_int_eq(rc__budget_due_in(&b, pthread_self()), 0);
  pthread_t t;
  void *other;
  pthread_create(&t, NULL, due_elsewhere, &b);
  pthread_join(t, &other);
  ck_assert_ptr_null(other);
  ck_assert_ptr_eq(rc__budget_next_due(&b, pthread_self(), NULL), EASY);
  ck_assert_ptr_null(rc__budget_next_due(&b, pthread_self(), NULL)); /* resumed once */
  ck_assert(w.queued && w.resumed);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 5), RC__ADMITTED);
  ck_assert(!w.queued && !w.resumed);
  rc__budget_settle(&b, 5);
  rc__budget_leave(&b, &h);
  rc__budget_destroy(&b);
}
END_TEST

/* A waiter whose response is reset leaves the queue, and what was promised
 * to it goes on to the next; one that loses its handle leaves too. */
START_TEST(leaving_frees_the_queue)
{
  rc__budget b;
  budget_with(&b, 100, RC_OVERFLOW_WAIT, 0);
  rc__waiter h, w1, w2;
  take_holder(&b, &h, 100);
  waiter_init(&b, &w1, EASY, 0);
  waiter_init(&b, &w2, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w1, 50), RC__WAIT);
  ck_assert_int_eq(rc__budget_admit(&b, &w2, 50), RC__WAIT);
  rc__budget_credit(&b, 50);
  ck_assert(w1.woken && !w2.woken);
  rc__budget_leave(&b, &w1); /* reset before it asked again */
  ck_assert(!w1.queued && w2.woken);
  ck_assert_uint_eq(stats(&b).waiting, 1);
  rc__budget_bind(&b, &w2, NULL, 0); /* its handle goes: nothing resumes it */
  ck_assert(!w2.queued);
  ck_assert_uint_eq(stats(&b).waiting, 0);
  ck_assert_ptr_null(rc__budget_next_due(&b, pthread_self(), NULL));

  /* The holder's place passes to the oldest waiter when the holder
   * leaves, which wakes it even though its need does not fit. */
  waiter_init(&b, &w1, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w1, 500), RC__WAIT);
  rc__budget_leave(&b, &h);
  ck_assert(w1.holder && w1.woken);
  ck_assert_int_eq(rc__budget_admit(&b, &w1, 500), RC__ADMITTED);
  rc__budget_settle(&b, 500);
  rc__budget_leave(&b, &w1);
  ck_assert(!w1.holder);
  rc__budget_credit(&b, 50);
  rc__budget_destroy(&b);
}
END_TEST

/* Turning the budget off wakes every waiter; one that then goes on
 * without asking again (it took no memory) still leaves the queue, and
 * the budget, back on, has nothing stale in it. */
START_TEST(proceed_after_budget_off)
{
  rc__budget b;
  budget_with(&b, 100, RC_OVERFLOW_WAIT, 0);
  rc__waiter h, w[3];
  take_holder(&b, &h, 100);
  for (int i = 0; i < 3; i++) {
    waiter_init(&b, &w[i], EASY, 0);
    ck_assert_int_eq(rc__budget_admit(&b, &w[i], 1000), RC__WAIT);
  }
  rc__budget_set_limit(&b, 0);
  ck_assert_uint_eq(rc__budget_limit(&b), 0);
  for (int i = 0; i < 3; i++)
    ck_assert(w[i].woken);
  ck_assert_uint_eq(stats(&b).wakeups, 3);
  rc__budget_proceed(&b, &w[0]);
  ck_assert_int_eq(rc__budget_admit(&b, &w[1], 1000), RC__ADMITTED); /* off: all fits */
  rc__budget_settle(&b, 1000);
  rc__budget_leave(&b, &w[2]);
  ck_assert_uint_eq(stats(&b).waiting, 0);
  rc__budget_proceed(&b, &w[0]); /* not queued: nothing to do */

  rc__budget_set_limit(&b, 100);
  rc__budget_leave(&b, &h);
  rc__budget_credit(&b, 100);
  rc__waiter fresh;
  waiter_init(&b, &fresh, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &fresh, 50), RC__ADMITTED);
  rc__budget_settle(&b, 50);
  rc__budget_destroy(&b);
}
END_TEST

/* RC_OVERFLOW_AUTO: a paused waiter whose wait bound passed is due, marked
 * to spill, and its next ask spills; a multiplexed one spills at once.
 * RC_OVERFLOW_SPILL spills at once. */
START_TEST(wait_bound_spills)
{
  rc__budget b;
  budget_with(&b, 10, RC_OVERFLOW_AUTO, 500);
  rc__waiter h, w, mux;
  take_holder(&b, &h, 10);
  waiter_init(&b, &w, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 5), RC__WAIT);
  long left = rc__budget_due_in(&b, pthread_self());
  ck_assert(left > 0 && left <= 500);
  ck_assert_ptr_null(rc__budget_next_due(&b, pthread_self(), NULL));
  nanosleep(&(struct timespec){0, 600 * 1000000L}, NULL);
  ck_assert_int_eq(rc__budget_due_in(&b, pthread_self()), 0);
  ck_assert_ptr_eq(rc__budget_next_due(&b, pthread_self(), NULL), EASY);
  ck_assert(w.spill);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 5), RC__SPILL);
  ck_assert(!w.queued);

  waiter_init(&b, &mux, EASY, 0);
  mux.multiplexed = 1;
  ck_assert_int_eq(rc__budget_admit(&b, &mux, 5), RC__SPILL);
  ck_assert_uint_eq(stats(&b).waiting, 0);
  ck_assert_uint_eq(stats(&b).pauses, 1);
  rc__budget_leave(&b, &h);
  rc__budget_credit(&b, 10);
  rc__budget_destroy(&b);

  budget_with(&b, 10, RC_OVERFLOW_SPILL, 20);
  rc__budget_charge(&b, 10);
  waiter_init(&b, &w, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 5), RC__SPILL);
  ck_assert_uint_eq(stats(&b).pauses, 0);
  rc__budget_credit(&b, 10);
  rc__budget_destroy(&b);
}
END_TEST

/* wakeups may exceed pauses (rc_pool_stats says so): a woken waiter that
 * asks for more than it was woken for is refused again and waits on,
 * still queued (no new pause), until a later credit wakes it again. */
START_TEST(wakeups_exceed_pauses)
{
  rc__budget b;
  budget_with(&b, 100, RC_OVERFLOW_WAIT, 0);
  rc__waiter h, w;
  take_holder(&b, &h, 100);
  waiter_init(&b, &w, EASY, 0);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 10), RC__WAIT);
  rc__budget_credit(&b, 10);
  ck_assert(w.woken);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 30), RC__WAIT); /* more than promised */
  ck_assert(w.queued && !w.woken);
  rc__budget_credit(&b, 20);
  ck_assert(w.woken);
  rc_pool_stats st = stats(&b);
  ck_assert_uint_eq(st.pauses, 1);
  ck_assert_uint_eq(st.wakeups, 2);
  ck_assert_int_eq(rc__budget_admit(&b, &w, 30), RC__ADMITTED);
  rc__budget_settle(&b, 30);
  rc__budget_leave(&b, &h);
  rc__budget_credit(&b, 70);
  rc__budget_destroy(&b);
}
END_TEST

/* On a thread that never called a loop function (rc_pool_resume,
 * rc_multi_poll, rc_pool_timeout, rc_pool_on_wake), nothing would resume
 * a pause: a waiter with a handle there does not pause. It takes the free
 * holder's place, else spills (AUTO) or times out at once (WAIT); once the
 * thread asked rc__budget_due_in (rc_pool_timeout), it pauses. */
static void *never_resumes(void *arg)
{
  rc_overflow mode = *(rc_overflow *)arg;
  rc__budget b;
  ck_assert_int_eq(rc__budget_init(&b, 10, mode, 1000, &std), RC_OK);
  rc__waiter first, second;
  waiter_init(&b, &first, EASY, 0);
  waiter_init(&b, &second, EASY, 0);
  rc__budget_charge(&b, 10);
  ck_assert_int_eq(rc__budget_admit(&b, &first, 5), RC__ADMITTED);
  ck_assert(first.holder);
  rc__budget_settle(&b, 5);
  ck_assert_int_eq(rc__budget_admit(&b, &second, 5),
                   mode == RC_OVERFLOW_WAIT ? RC__TIMED_OUT : RC__SPILL);
  ck_assert_uint_eq(stats(&b).pauses, 0);
  ck_assert_int_eq(rc__budget_due_in(&b, pthread_self()), -1);
  ck_assert_int_eq(rc__budget_admit(&b, &second, 5), RC__WAIT);
  ck_assert_uint_eq(stats(&b).pauses, 1);
  rc__budget_leave(&b, &second);
  rc__budget_leave(&b, &first);
  rc__budget_credit(&b, 10);
  rc__budget_destroy(&b);
  return NULL;
}

START_TEST(no_pause_without_a_resumer)
{
  static const rc_overflow modes[] = {RC_OVERFLOW_AUTO, RC_OVERFLOW_WAIT};
  for (size_t i = 0; i < 2; i++) {
    pthread_t t; /* a fresh thread: this one has resumed already */
    ck_assert_int_eq(pthread_create(&t, NULL, never_resumes, (void *)&modes[i]), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
  }
}
END_TEST

/* A blocking waiter (no handle: it blocks in its callback) whose wait
 * expires: RC__TIMED_OUT under RC_OVERFLOW_WAIT, RC__SPILL under AUTO; it
 * leaves the queue either way. One with neither handle nor blocking wait,
 * refused while a holder holds, spills (AUTO) or times out (WAIT). */
START_TEST(blocking_wait_expires)
{
  static const rc_overflow modes[2] = {RC_OVERFLOW_WAIT, RC_OVERFLOW_AUTO};
  for (int i = 0; i < 2; i++) {
    rc__budget b;
    budget_with(&b, 10, modes[i], 0);
    rc__waiter h, w, bare;
    take_holder(&b, &h, 10);
    waiter_init(&b, &w, NULL, 20);
    rc__admission expect = modes[i] == RC_OVERFLOW_WAIT ? RC__TIMED_OUT : RC__SPILL;
    ck_assert_int_eq(rc__budget_admit(&b, &w, 5), expect);
    ck_assert(!w.queued);
    waiter_init(&b, &bare, NULL, 0);
    ck_assert_int_eq(rc__budget_admit(&b, &bare, 5), expect);
    rc_pool_stats st = stats(&b);
    ck_assert_uint_eq(st.waiting, 0);
    ck_assert_uint_eq(st.pauses, 1);
    rc__budget_leave(&b, &h);
    rc__budget_credit(&b, 10);
    rc__budget_destroy(&b);
  }
}
END_TEST

/* A blocking waiter is admitted as soon as another thread credits room. */
struct blocked {
  rc__budget *b;
  rc__waiter w;
  rc__admission got;
};

static void *block_for_room(void *arg)
{
  struct blocked *x = arg;
  x->got = rc__budget_admit(x->b, &x->w, 5);
  return NULL;
}

START_TEST(blocking_waiter_woken)
{
  rc__budget b;
  budget_with(&b, 10, RC_OVERFLOW_WAIT, 0);
  rc__waiter h;
  take_holder(&b, &h, 10);
  struct blocked x = {&b, {0}, RC__WAIT};
  waiter_init(&b, &x.w, NULL, 60000);
  pthread_t t;
  pthread_create(&t, NULL, block_for_room, &x);
  while (stats(&b).waiting == 0)
    nanosleep(&(struct timespec){0, 1000000L}, NULL);
  rc__budget_credit(&b, 10);
  pthread_join(t, NULL);
  ck_assert_int_eq(x.got, RC__ADMITTED);
  rc__budget_settle(&b, 5);
  ck_assert_uint_eq(stats(&b).waiting, 0);
  ck_assert_uint_eq(stats(&b).wakeups, 1);
  rc__budget_leave(&b, &h);
  rc__budget_destroy(&b);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("queue");
  TCase *tc = tcase_create("queue");
  tcase_add_test(tc, admitted_bytes_are_reserved);
  tcase_add_test(tc, fifo_wakes_and_promises);
  tcase_add_test(tc, resumed_by_its_thread);
  tcase_add_test(tc, leaving_frees_the_queue);
  tcase_add_test(tc, proceed_after_budget_off);
  tcase_add_test(tc, wait_bound_spills);
  tcase_add_test(tc, wakeups_exceed_pauses);
  tcase_add_test(tc, no_pause_without_a_resumer);
  tcase_add_test(tc, blocking_wait_expires);
  tcase_add_test(tc, blocking_waiter_woken);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
