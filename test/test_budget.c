/* The memory budget over real transfers: a curl multi loop with far more
 * bytes in flight than the budget, a run where every transfer waits at once,
 * threads blocking in their callbacks, and a wait that times out. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static unsigned char *pattern; /* the first 8 MiB of the server's pattern */

static void setup(void)
{
  server_up();
  pattern = malloc(8 * MiB);
  ts_pattern_fill(pattern, 0, 8 * MiB);
}

static void teardown(void)
{
  server_down();
  free(pattern);
}

/* One response's share above the budget: its max body, the NUL, and its
 * header block (4 KiB steps). */
#define ONE_RESPONSE (8 * MiB + 1 + 4 * KiB)

/* 200 bodies of 8 MiB, 50 at a time, under 64 MiB: all byte-exact, and the
 * bytes held never pass the budget plus one response. How many transfers
 * the budget held back depends on how many bodies the scheduler lets
 * overlap; where none was (no pause), none was refused: the bodies never
 * held more than the budget (and the header blocks, not held back). */
START_TEST(multi_under_budget)
{
  rc_pool *p = pool_with_budget(64 * MiB, RC_OVERFLOW_AUTO);
  multi_burst(p, "/bytes?n=8M", 200, 50, 8 * MiB, 1);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_le(st.peak_in_use, 64 * MiB + ONE_RESPONSE);
  if (st.pauses == 0)
    ck_assert_uint_le(st.peak_in_use, 64 * MiB + 50 * 4 * KiB);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_uint_eq(st.acquisitions, st.releases);
  rc_pool_free(p);
}
END_TEST

/* A budget smaller than one body: every transfer waits at once, and the
 * holder's place still drains them one after another (without a wait
 * bound: nothing spills). Each body takes the server at least 93 ms (32
 * writes 3 ms apart), so the first holder is still receiving when the
 * other 19 requests of the first round have had their answers' first
 * bytes: they wait, on every curl (on 8.1 to 8.6 the fresh handles go in
 * one after another, each at the status line of the one before). */
START_TEST(everyone_waits)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = 256 * KiB;
  cfg.max_wait_ms = 0;
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  size_t max_waiting =
      multi_burst(p, "/bytes?n=2M&write=64k&delay_us=3000", 40, 20, 2 * MiB, 1);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_ge(st.pauses, 19);
  ck_assert_uint_ge(max_waiting, 10); /* many waited at once */
  ck_assert_uint_eq(st.waiting, 0);
  ck_assert_uint_eq(st.spills, 0);
  ck_assert_uint_le(st.peak_in_use, 256 * KiB + ONE_RESPONSE);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  rc_pool_free(p);
}
END_TEST

struct worker {
  rc_pool *pool;
  int n;
  int ok;
};

static void *worker_run(void *arg)
{
  struct worker *w = arg;
  char url[128];
  ts_url(srv, "/bytes?n=8M", url, sizeof url);
  rc_response *r;
  if (rc_response_new(w->pool, NULL, &r) != RC_OK)
    return NULL;
  rc_response_set_budget_wait(r, 60000);
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  curl_easy_setopt(e, CURLOPT_URL, url);
  for (int i = 0; i < w->n; i++) {
    rc_code rc = rc_result(r, curl_easy_perform(e));
    if (rc == RC_OK && rc_body(r).len == 8 * MiB && memcmp(rc_body(r).ptr, pattern, 8 * MiB) == 0)
      w->ok++;
    rc_response_reset(r);
  }
  curl_easy_cleanup(e);
  rc_response_free(r);
  return NULL;
}

/* Threads on curl_easy_perform block in their callbacks instead of pausing. */
START_TEST(threads_block_within_budget)
{
  rc_pool *p = pool_with_budget(12 * MiB, RC_OVERFLOW_AUTO);
  pthread_t t[6];
  struct worker w[6];
  for (int i = 0; i < 6; i++) {
    w[i] = (struct worker){p, 5, 0};
    pthread_create(&t[i], NULL, worker_run, &w[i]);
  }
  for (int i = 0; i < 6; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(w[i].ok, 5);
  }
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_le(st.peak_in_use, 12 * MiB + ONE_RESPONSE);
  /* Where no thread blocked, none was refused (threads that finish before
   * the next starts its body never meet). */
  if (st.pauses == 0)
    ck_assert_uint_le(st.peak_in_use, 12 * MiB + 6 * 4 * KiB);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  rc_pool_free(p);
}
END_TEST

/* A response that keeps its memory holds the budget; another blocks its
 * wait out. Under RC_OVERFLOW_WAIT it then fails, keeping what it read and
 * saying so; under RC_OVERFLOW_AUTO its body goes on to a spill file and
 * arrives whole. */
static void keeper_and_blocked_waiter(rc_overflow mode)
{
  rc_pool *p = pool_with_budget(4 * MiB, mode);
  char url[128];
  ts_url(srv, "/bytes?n=8M", url, sizeof url);
  rc_response *keeper, *waiter;
  ck_assert_int_eq(rc_response_new(p, NULL, &keeper), RC_OK);
  ck_assert_int_eq(rc_response_new(p, NULL, &waiter), RC_OK);
  rc_response_set_budget_wait(keeper, 10000);
  rc_response_set_budget_wait(waiter, 200);
  ck_assert_int_eq(rc_response_set_budget_wait(waiter, -1), RC_E_INVAL);
  CURL *e = curl_easy_init();
  rc_attach(keeper, e);
  curl_easy_setopt(e, CURLOPT_URL, url);
  ck_assert_int_eq(rc_result(keeper, curl_easy_perform(e)), RC_OK); /* as holder */
  ck_assert_uint_eq(rc_body(keeper).len, 8 * MiB);
  ck_assert(!rc_body_spilled(keeper));
  ck_assert_uint_gt(pool_stats(p).pauses, 0);
  /* Room for about 1 MiB more, while the keeper keeps the holder's place. */
  ck_assert_int_eq(rc_pool_set_budget(p, 9 * MiB + 64 * KiB), RC_OK);

  /* Without a declared size the waiter's body grows in steps, so it gets
   * some of the room before it has to wait. */
  char chunked[128];
  ts_url(srv, "/bytes?n=8M&te=chunked", chunked, sizeof chunked);
  rc_attach(waiter, e);
  curl_easy_setopt(e, CURLOPT_URL, chunked);
  CURLcode cc = curl_easy_perform(e);
  rc_view b = rc_body(waiter);
  if (mode == RC_OVERFLOW_WAIT) {
    ck_assert_int_eq(cc, CURLE_WRITE_ERROR);
    ck_assert_int_eq(rc_result(waiter, cc), RC_E_TIMEOUT);
    ck_assert(!rc_body_spilled(waiter));
    ck_assert_uint_gt(b.len, 512 * KiB);
    ck_assert_uint_lt(b.len, 8 * MiB);
    ck_assert(memcmp(b.ptr, pattern, b.len) == 0);
    ck_assert_uint_eq(pool_stats(p).spills, 0);
  } else {
    ck_assert_int_eq(rc_result(waiter, cc), RC_OK);
    ck_assert(rc_body_spilled(waiter));
    assert_pattern(b, 8 * MiB);
    ck_assert_uint_eq(pool_stats(p).spills, 1);
    /* Its memory went back when it spilled: only the keeper's counts. */
    ck_assert_uint_le(pool_stats(p).bytes_in_use, 8 * MiB + 64 * KiB);
  }

  rc_response_reset(keeper); /* releases the budget */
  rc_response_reset(waiter);
  ck_assert_int_eq(rc_result(waiter, curl_easy_perform(e)), RC_OK);
  ck_assert_uint_eq(rc_body(waiter).len, 8 * MiB);
  ck_assert(!rc_body_spilled(waiter));
  curl_easy_cleanup(e);
  rc_response_free(keeper);
  rc_response_free(waiter);
  rc_pool_free(p);
}

START_TEST(wait_mode_times_out) { keeper_and_blocked_waiter(RC_OVERFLOW_WAIT); }
END_TEST

START_TEST(expired_wait_spills) { keeper_and_blocked_waiter(RC_OVERFLOW_AUTO); }
END_TEST

/* While transfers wait (without bound), turning the budget off lets them
 * all go on at once: the setter wakes them. The holder's body takes the
 * server at least 155 ms, so the other seven are waiting before it ends. */
START_TEST(setter_wakes_waiting_transfers)
{
  rc_pool *p = pool_with_budget(1 * MiB, RC_OVERFLOW_WAIT);
  char url[128];
  ts_url(srv, "/bytes?n=2M&write=64k&delay_us=5000", url, sizeof url);
  enum { N = 8 };
  CURLM *multi = curl_multi_init();
  CURL *e[N];
  rc_response *r[N];
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(rc_response_new(p, NULL, &r[i]), RC_OK);
    e[i] = curl_easy_init();
    rc_attach(r[i], e[i]);
    curl_easy_setopt(e[i], CURLOPT_URL, url);
    curl_multi_add_handle(multi, e[i]);
  }
  /* This thread resumes what pauses (rc_pool_set_budget(3)), from the
   * first curl_multi_perform on, before the first rc_multi_poll. */
  rc_pool_timeout(p);
  int running = 1, turned_off = 0;
  while (running) {
    curl_multi_perform(multi, &running);
    rc_pool_stats st = pool_stats(p);
    if (!turned_off && st.waiting >= N - 1) {
      /* All but the holder wait: nothing is released while they do. */
      ck_assert_uint_eq(st.wakeups, 1); /* the holder's */
      ck_assert_int_eq(rc_pool_set_budget(p, 0), RC_OK);
      ck_assert_uint_ge(pool_stats(p).wakeups, N);
      turned_off = 1;
    }
    if (running)
      rc_multi_poll(p, multi, NULL, 0, 1000, NULL);
  }
  ck_assert(turned_off);
  for (int i = 0; i < N; i++) {
    assert_pattern(rc_body(r[i]), 2 * MiB);
    curl_multi_remove_handle(multi, e[i]);
    curl_easy_cleanup(e[i]);
    rc_response_free(r[i]);
  }
  curl_multi_cleanup(multi);
  ck_assert_uint_eq(pool_stats(p).spills, 0);
  rc_pool_free(p);
}
END_TEST

/* Turning the budget off and on at run time: off, nobody waits; on again,
 * transfers wait (ten bodies that take the server at least 75 ms each
 * overlap, and one and the holder's fit in 3 MiB). */
START_TEST(setter_wakes_waiters)
{
  rc_pool *p = pool_with_budget(1 * MiB, RC_OVERFLOW_AUTO);
  ck_assert_int_eq(rc_pool_set_budget(p, 0), RC_OK);
  rc_pool_config got;
  rc_pool_config_get(p, &got);
  ck_assert_uint_eq(got.budget, 0);
  multi_burst(p, "/bytes?n=2M", 20, 10, 2 * MiB, 1);
  ck_assert_uint_eq(pool_stats(p).pauses, 0); /* off: nobody waited */
  ck_assert_int_eq(rc_pool_set_budget(p, 3 * MiB), RC_OK);
  multi_burst(p, "/bytes?n=2M&write=128k&delay_us=5000", 20, 10, 2 * MiB, 1);
  ck_assert_uint_gt(pool_stats(p).pauses, 0);
  rc_pool_free(p);
}
END_TEST

/* Runs e, attached to r, on its own multi handle with rc_multi_poll until
 * it ends; each round, while it runs, calls mid (if not NULL). Returns
 * curl's result for it. */
static CURLcode run_one(rc_pool *p, CURL *e, void (*mid)(rc_pool *p, int *state), int *state)
{
  CURLM *multi = curl_multi_init();
  ck_assert_int_eq(curl_multi_add_handle(multi, e), CURLM_OK);
  int running = 1;
  CURLcode cc = CURLE_FAILED_INIT;
  while (running) {
    curl_multi_perform(multi, &running);
    if (running && mid)
      mid(p, state);
    if (running)
      rc_multi_poll(p, multi, NULL, 0, 1000, NULL);
  }
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(multi, &left)))
    if (m->msg == CURLMSG_DONE && m->easy_handle == e)
      cc = m->data.result;
  curl_multi_remove_handle(multi, e);
  curl_multi_cleanup(multi);
  return cc;
}

/* Once the transfer waits for the budget, turns the budget off. */
static void budget_off_while_waiting(rc_pool *p, int *turned_off)
{
  if (!*turned_off && pool_stats(p).waiting == 1) {
    ck_assert_int_eq(rc_pool_set_budget(p, 0), RC_OK);
    *turned_off = 1;
  }
}

/* A decoding transfer that waits when the budget is turned off goes on
 * without asking the budget again, and still leaves the queue: when the
 * budget is back, nothing stale holds the queue and a new transfer runs. */
START_TEST(budget_off_while_decoding_waits)
{
  rc_pool *p = pool_with_budget(4 * KiB, RC_OVERFLOW_WAIT);
  char url[128];
  rc_response *keeper, *gz;
  ck_assert_int_eq(rc_response_new(p, NULL, &keeper), RC_OK);
  ck_assert_int_eq(rc_response_new(p, NULL, &gz), RC_OK);

  /* Kept: its 64 KiB hold the budget, and it holds the holder's place. */
  CURL *e = curl_easy_init();
  rc_attach(keeper, e);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 20L); /* a hang fails, not waits */
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/bytes?n=64k", url, sizeof url));
  ck_assert_int_eq(rc_result(keeper, run_one(p, e, NULL, NULL)), RC_OK);
  assert_pattern(rc_body(keeper), 64 * KiB);

  /* The decoding transfer waits; the budget goes off; it completes. */
  int turned_off = 0;
  rc_attach(gz, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/gzip?n=1M", url, sizeof url));
  ck_assert_int_eq(rc_result(gz, run_one(p, e, budget_off_while_waiting, &turned_off)), RC_OK);
  ck_assert(turned_off);
  ck_assert_int_eq(rc_body_encoding(gz), RC_ENC_DECODED);
  assert_pattern(rc_body(gz), 1 * MiB);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);

  /* The budget is back and the keeper's memory too: a new transfer waits,
   * takes the holder's place and completes. */
  ck_assert_int_eq(rc_pool_set_budget(p, 4 * KiB), RC_OK);
  rc_response_reset(keeper);
  uint64_t pauses = pool_stats(p).pauses;
  rc_attach(keeper, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/bytes?n=64k", url, sizeof url));
  ck_assert_int_eq(rc_result(keeper, run_one(p, e, NULL, NULL)), RC_OK);
  assert_pattern(rc_body(keeper), 64 * KiB);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_gt(st.pauses, pauses); /* it was refused, and went on */
  ck_assert_uint_eq(st.waiting, 0);

  curl_easy_cleanup(e);
  rc_response_free(keeper);
  rc_response_free(gz);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  rc_pool_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("budget");
  TCase *tc = tcase_create("budget");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, multi_under_budget);
  tcase_add_test(tc, everyone_waits);
  tcase_add_test(tc, threads_block_within_budget);
  tcase_add_test(tc, wait_mode_times_out);
  tcase_add_test(tc, expired_wait_spills);
  tcase_add_test(tc, setter_wakes_waiters);
  tcase_add_test(tc, setter_wakes_waiting_transfers);
  tcase_add_test(tc, budget_off_while_decoding_waits);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
