/* The multi loop in curl's own shape (docs/examples/multi-app.c): perform,
 * poll while running, read the results after the loop, with three calls
 * swapped (rc_multi_add, rc_multi_perform, rc_multi_poll) and a budget,
 * over real HTTP/2 (nginx). Every transfer completes, whichever curl keeps
 * transfers back; the loop that ends on curl_multi_perform's own count is
 * reported, never silent. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "h2.h"
#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* A stream's reserve with the default 8 MiB max body (rc_multi_add(3)). */
#define RESERVE (8 * MiB + 4 * MiB)

static h2_server *h2;

static void setup(void)
{
  h2 = h2_start();
  ck_assert_msg(h2 != NULL, "nginx did not start (see stderr)");
}

static void teardown(void)
{
  h2_stop(h2);
  h2 = NULL;
}

enum { MAX_N = 48 };

typedef struct run {
  rc_pool *pool;
  CURLM *multi;
  int n;
  CURL *easy[MAX_N];
  rc_response *resp[MAX_N];
} run;

/* n transfers of path over HTTP/2 on one connection, added with
 * rc_multi_add under a budget. */
static void run_add(run *r, int n, const char *path, size_t budget, rc_overflow mode)
{
  ck_assert_int_le(n, MAX_N);
  r->n = n;
  r->pool = pool_with_budget(budget, mode);
  r->multi = curl_multi_init();
  char url[256];
  h2_url(h2, path, url, sizeof url);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(rc_response_new(r->pool, NULL, &r->resp[i]), RC_OK);
    r->easy[i] = curl_easy_init();
    ck_assert_int_eq(rc_attach(r->resp[i], r->easy[i]), RC_OK);
    curl_easy_setopt(r->easy[i], CURLOPT_URL, url);
    curl_easy_setopt(r->easy[i], CURLOPT_PRIVATE, r->resp[i]);
    h2_easy_setup(h2, r->easy[i]);
    ck_assert_int_eq(rc_multi_add(r->resp[i], r->multi), CURLM_OK);
  }
}

/* Frees the responses, then the handles: rc_pool_free's word, given
 * while the responses live, is checked first. */
static void run_free(run *r, rc_code pool_says)
{
  ck_assert_int_eq(rc_pool_free(r->pool), pool_says);
  for (int i = 0; i < r->n; i++) {
    curl_multi_remove_handle(r->multi, r->easy[i]);
    rc_response_free(r->resp[i]);
    curl_easy_cleanup(r->easy[i]);
  }
  curl_multi_cleanup(r->multi);
}

/* How many finished whole (RC_OK, size bytes of the pattern); the rest
 * must be RC_E_KEPT_BACK, never a silent RC_E_NO_RESPONSE. Read after the
 * loop, as multi-app.c reads its results. */
static int count_done(const run *r, size_t size)
{
  int done = 0;
  CURLMsg *m;
  int left;
  CURLcode result[MAX_N];
  for (int i = 0; i < r->n; i++)
    result[i] = CURLE_OK;
  while ((m = curl_multi_info_read(r->multi, &left)))
    for (int i = 0; i < r->n; i++)
      if (m->msg == CURLMSG_DONE && m->easy_handle == r->easy[i])
        result[i] = m->data.result;
  for (int i = 0; i < r->n; i++) {
    rc_code rc = rc_result(r->resp[i], result[i]);
    if (rc == RC_OK) {
      assert_pattern(rc_body(r->resp[i]), size);
      done++;
    } else {
      ck_assert_msg(rc == RC_E_KEPT_BACK, "transfer %d: %s (curl: %s)", i, rc_strerror(rc),
                    curl_easy_strerror(result[i]));
    }
  }
  return done;
}

/* multi-app.c's loop with rc_multi_perform and rc_multi_poll. */
static void natural_loop(run *r)
{
  int still_running = 1;
  while (still_running) {
    CURLMcode mc = rc_multi_perform(r->pool, r->multi, &still_running);
    if (still_running)
      mc = rc_multi_poll(r->pool, r->multi, NULL, 0, 1000, NULL);
    ck_assert_int_eq(mc, CURLM_OK);
  }
}

/* Whether rc_multi_add keeps some of these fresh transfers back: where
 * curl holds no stream (before 8.14), fresh handles on 8.1 to 8.6 or
 * under RC_OVERFLOW_WAIT, when the budget holds fewer reserves than
 * transfers. */
static int keeps_back(rc_overflow mode) { return curl_keeps_back_fresh(mode); }

/* 8 MiB bodies kept until after the loop, more than the 64 MiB budget
 * holds (the rest spill, or wait for the holder's place): all arrive. */
static void completes(rc_overflow mode, int n)
{
  run r;
  run_add(&r, n, "/p/8m", 64 * MiB, mode);
  natural_loop(&r);
  ck_assert_int_eq(count_done(&r, 8 * MiB), n);
  rc_pool_stats st = pool_stats(r.pool);
  ck_assert_uint_eq(st.deferred, 0);
  if (keeps_back(mode)) /* the loop had kept-back transfers to wait for */
    ck_assert_uint_gt(st.deferrals, 0);
  run_free(&r, RC_OK);
}

START_TEST(natural_loop_completes_auto) { completes(RC_OVERFLOW_AUTO, 12); }
END_TEST

START_TEST(natural_loop_completes_wait) { completes(RC_OVERFLOW_WAIT, 8); }
END_TEST

/* The header's loop: results read inside it, each response reset as it
 * ends, the poll given timeout_ms; every one of n transfers of 8 MiB
 * completes. */
static void loop_with_resets(int n, int timeout_ms)
{
  run r;
  run_add(&r, n, "/p/8m", 64 * MiB, RC_OVERFLOW_AUTO);
  int still_running = 1, done = 0;
  while (still_running) {
    ck_assert_int_eq(rc_multi_perform(r.pool, r.multi, &still_running), CURLM_OK);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(r.multi, &left))) {
      rc_response *resp;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&resp);
      ck_assert_int_eq(rc_result(resp, m->data.result), RC_OK);
      assert_pattern(rc_body(resp), 8 * MiB);
      rc_response_reset(resp);
      done++;
    }
    if (still_running)
      ck_assert_int_eq(rc_multi_poll(r.pool, r.multi, NULL, 0, timeout_ms, NULL), CURLM_OK);
  }
  ck_assert_int_eq(done, n);
  run_free(&r, RC_OK);
}

/* Many more transfers than the budget holds at once. */
START_TEST(natural_loop_with_resets) { loop_with_resets(MAX_N, 1000); }
END_TEST

/* A poll whose timeout never runs out (an hour) does not keep the loop
 * waiting: on curl 8.1, which can leave a stream's work undone with no
 * timer until the next curl_multi_perform, the few streams the budget
 * lets run would wait there for the poll's timeout (8.1.2: the last ones
 * of a run, in 5 runs of 9 of bench h2); rc_multi_poll does not wait
 * that long there while its transfers run. Several runs, each with its
 * own end (without the bound this hung on 8.1.2, in both tries). */
START_TEST(natural_loop_without_timeout)
{
  for (int i = 0; i < 8; i++)
    loop_with_resets(6, 3600 * 1000);
}
END_TEST

enum { KEPT_N = 4 };

/* KEPT_N transfers under a budget of two reserves less a byte, which lets
 * one stream in at a time (RC_OVERFLOW_WAIT has no wait bound that lets
 * another in), run by a loop that ends on curl_multi_perform's own count;
 * it polls with rc_multi_poll or with curl_multi_poll. How many completed
 * (each of the others must say RC_E_KEPT_BACK, checked by count_done);
 * *deferred: how many are kept back still. */
static int curl_count_loop(run *r, int rc_poll, size_t *deferred)
{
  run_add(r, KEPT_N, "/p/1m", 2 * RESERVE - 1, RC_OVERFLOW_WAIT);
  int still_running = 1;
  while (still_running) {
    ck_assert_int_eq(curl_multi_perform(r->multi, &still_running), CURLM_OK);
    if (still_running)
      ck_assert_int_eq(rc_poll ? rc_multi_poll(r->pool, r->multi, NULL, 0, 1000, NULL)
                               : curl_multi_poll(r->multi, NULL, 0, 1000, NULL),
                       CURLM_OK);
  }
  int done = count_done(r, 1 * MiB);
  *deferred = pool_stats(r->pool).deferred;
  ck_assert_uint_eq(*deferred, (size_t)(KEPT_N - done));
  return done;
}

/* curl's calls alone, only curl_multi_add_handle swapped, never add the
 * rest: when the first ends, curl's count is 0 and the loop ends. They
 * are reported, by rc_result and by rc_pool_free. Where nothing is kept
 * back (8.14 on: streams are held instead) all complete. */
START_TEST(curl_loop_is_reported)
{
  run r;
  size_t deferred;
  int kept = keeps_back(RC_OVERFLOW_WAIT);
  ck_assert_int_eq(curl_count_loop(&r, 0, &deferred), kept ? 1 : KEPT_N);
  run_free(&r, kept ? RC_E_KEPT_BACK : RC_OK);
}
END_TEST

/* With rc_multi_poll, how many go in before curl's count first reaches 0
 * depends on when each stream's end is seen, but none is lost silently:
 * each transfer completed or says RC_E_KEPT_BACK, and rc_pool_free says
 * so while any is kept. */
START_TEST(curl_count_loop_is_reported)
{
  run r;
  size_t deferred;
  int done = curl_count_loop(&r, 1, &deferred);
  if (!keeps_back(RC_OVERFLOW_WAIT))
    ck_assert_int_eq(done, KEPT_N);
  run_free(&r, deferred ? RC_E_KEPT_BACK : RC_OK);
}
END_TEST

/* rc_multi_perform refuses what it cannot run; running may be NULL. */
START_TEST(perform_refuses_null)
{
  rc_pool *pool = pool_with_budget(0, RC_OVERFLOW_AUTO);
  CURLM *multi = curl_multi_init();
  int running = -1;
  ck_assert_int_eq(rc_multi_perform(NULL, multi, &running), CURLM_BAD_HANDLE);
  ck_assert_int_eq(rc_multi_perform(pool, NULL, &running), CURLM_BAD_HANDLE);
  ck_assert_int_eq(running, -1);
  ck_assert_int_eq(rc_multi_perform(pool, multi, NULL), CURLM_OK);
  ck_assert_int_eq(rc_multi_perform(pool, multi, &running), CURLM_OK);
  ck_assert_int_eq(running, 0);
  curl_multi_cleanup(multi);
  ck_assert_int_eq(rc_pool_free(pool), RC_OK);
  ck_assert_int_eq(rc_pool_free(NULL), RC_OK);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("perform");
  TCase *tc = tcase_create("multi-app");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, natural_loop_completes_auto);
  tcase_add_test(tc, natural_loop_completes_wait);
  tcase_add_test(tc, natural_loop_with_resets);
  tcase_add_test(tc, natural_loop_without_timeout);
  tcase_add_test(tc, curl_loop_is_reported);
  tcase_add_test(tc, curl_count_loop_is_reported);
  suite_add_tcase(s, tc);
  TCase *args = tcase_create("arguments");
  tcase_add_test(args, perform_refuses_null);
  suite_add_tcase(s, args);
  return run_suite(s);
}
