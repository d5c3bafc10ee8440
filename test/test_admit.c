/* rc_multi_add: transfers kept back before their request on the curls that
 * buffer every HTTP/2 stream themselves (8.1 to 8.6), added at once on the
 * others; over real HTTP/2 (nginx) and HTTP/1.1 (the loopback server). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "h2.h"
#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* A stream's reserve with the default 8 MiB max body: one and a half times
 * it (rc_multi_add(3)). */
#define RESERVE (8 * MiB + 4 * MiB)

static h2_server *h2;

static void setup(void)
{
  server_up();
  h2 = h2_start();
  ck_assert_msg(h2 != NULL, "nginx did not start (see stderr)");
}

static void teardown(void)
{
  h2_stop(h2);
  h2 = NULL;
  server_down();
}

static rc_pool_stats stats(rc_pool *p)
{
  rc_pool_stats st;
  rc_pool_stats_get(p, &st);
  return st;
}

START_TEST(refuses_what_it_cannot_add)
{
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, NULL, &r), RC_OK);
  CURLM *multi = curl_multi_init();
  ck_assert_int_eq(rc_multi_add(NULL, multi), CURLM_BAD_EASY_HANDLE);
  ck_assert_int_eq(rc_multi_add(r, NULL), CURLM_BAD_HANDLE);
  ck_assert_int_eq(rc_multi_add(r, multi), CURLM_BAD_EASY_HANDLE); /* not attached */
  CURL *e = curl_easy_init();
  ck_assert_int_eq(rc_attach(r, e), RC_OK);
  ck_assert_int_eq(rc_detach(r, e), RC_OK);
  ck_assert_int_eq(rc_multi_add(r, multi), CURLM_BAD_EASY_HANDLE); /* detached */
  curl_multi_cleanup(multi);
  curl_easy_cleanup(e);
  rc_response_free(r);
}
END_TEST

enum { N = 6 };

typedef struct batch {
  rc_pool *pool;
  CURLM *multi;
  CURL *easy[N];
  rc_response *resp[N];
} batch;

/* N transfers of path over HTTP/2 (or HTTP/1.1), added with rc_multi_add
 * under a budget of two reserves less a byte: one goes in, the rest wait
 * where curl buffers streams. */
static void batch_add(batch *b, const char *path, int over_h2)
{
  b->pool = pool_with_budget(2 * RESERVE - 1, RC_OVERFLOW_AUTO);
  b->multi = curl_multi_init();
  char url[256];
  if (over_h2)
    h2_url(h2, path, url, sizeof url);
  else
    ts_url(srv, path, url, sizeof url);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(rc_response_new(b->pool, NULL, &b->resp[i]), RC_OK);
    b->easy[i] = curl_easy_init();
    ck_assert_int_eq(rc_attach(b->resp[i], b->easy[i]), RC_OK);
    curl_easy_setopt(b->easy[i], CURLOPT_URL, url);
    curl_easy_setopt(b->easy[i], CURLOPT_PRIVATE, b->resp[i]);
    if (over_h2)
      h2_easy_setup(h2, b->easy[i]);
    ck_assert_int_eq(rc_multi_add(b->resp[i], b->multi), CURLM_OK);
  }
}

/* Runs the batch to its end; every body is size bytes of the pattern.
 * Returns how many finished. */
static int batch_run(batch *b, size_t size)
{
  int running = 0, done = 0;
  rc_pool_stats st;
  do {
    curl_multi_perform(b->multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(b->multi, &left))) {
      rc_response *r;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
      ck_assert_int_eq(rc_result(r, m->data.result), RC_OK);
      assert_pattern(rc_body(r), size);
      curl_multi_remove_handle(b->multi, m->easy_handle);
      rc_response_reset(r); /* its memory may let a kept-back one go */
      done++;
    }
    st = stats(b->pool);
    if (running || st.deferred)
      rc_multi_poll(b->pool, b->multi, NULL, 0, 1000, NULL);
  } while (running || st.deferred);
  return done;
}

static void batch_free(batch *b)
{
  for (int i = 0; i < N; i++) {
    curl_multi_remove_handle(b->multi, b->easy[i]);
    rc_response_free(b->resp[i]);
    curl_easy_cleanup(b->easy[i]);
  }
  curl_multi_cleanup(b->multi);
  rc_pool_free(b->pool);
}

/* Over HTTP/2, twice on the same handles. Where a stream is kept back,
 * all but the first wait (each reserves more than half the budget), a
 * waiting one cannot be added twice, and every one goes in as memory comes
 * back, whole: fresh handles where curl buffers every stream (8.1 to 8.6),
 * handles that spoke HTTP/2 on every curl that holds no stream (before
 * 8.14). From 8.14 on all go in at once. */
START_TEST(keeps_streams_back)
{
  batch b;
  batch_add(&b, "/p/1m", 1);
  uint64_t kept = 0;
  for (int round = 0; round < 2; round++) {
    int keeps = round ? !curl_holds_streams() : curl_keeps_back_fresh(RC_OVERFLOW_AUTO);
    rc_pool_stats st = stats(b.pool);
    ck_assert_uint_eq(st.deferred, keeps ? N - 1 : 0);
    kept += keeps ? N - 1 : 0;
    ck_assert_uint_eq(st.deferrals, kept);
    ck_assert_int_eq(rc_multi_add(b.resp[N - 1], b.multi), CURLM_ADDED_ALREADY);
    ck_assert_int_eq(batch_run(&b, 1 * MiB), N);
    st = stats(b.pool);
    ck_assert_uint_eq(st.deferred, 0);
    ck_assert_uint_eq(st.bytes_in_use, 0);
    for (int i = 0; !round && i < N; i++)
      ck_assert_int_eq(rc_multi_add(b.resp[i], b.multi), CURLM_OK);
  }
  batch_free(&b);
}
END_TEST

/* A kept-back transfer is taken back by resetting, freeing or detaching
 * its response: it never runs, and nothing of it is left in the pool. */
START_TEST(reset_free_detach_take_back)
{
  if (!curl_keeps_back_fresh(RC_OVERFLOW_AUTO))
    return; /* fresh handles go in: keeps_streams_back checks that */
  batch b;
  batch_add(&b, "/p/1m", 1);
  ck_assert_uint_eq(stats(b.pool).deferred, N - 1);
  rc_response_reset(b.resp[1]);
  ck_assert_uint_eq(stats(b.pool).deferred, N - 2);
  ck_assert_int_eq(rc_detach(b.resp[2], b.easy[2]), RC_OK);
  ck_assert_uint_eq(stats(b.pool).deferred, N - 3);
  rc_response_free(b.resp[3]);
  ck_assert_int_eq(rc_response_new(b.pool, NULL, &b.resp[3]), RC_OK); /* for batch_free */
  ck_assert_uint_eq(stats(b.pool).deferred, N - 4);
  ck_assert_int_eq(batch_run(&b, 1 * MiB), N - 3);
  ck_assert_uint_eq(rc_hop_count(b.resp[1]), 0); /* never ran */
  ck_assert_uint_eq(rc_hop_count(b.resp[2]), 0);
  ck_assert_uint_eq(stats(b.pool).bytes_in_use, 0);
  batch_free(&b);
}
END_TEST

/* HTTP/1.1: a fresh handle waits as an HTTP/2 one would (its protocol is
 * not known before its request), and gives its reserve back at its status
 * line; a handle whose last transfer spoke HTTP/1.1 goes in at once. */
START_TEST(http1_handles_go_in)
{
  batch b;
  batch_add(&b, "/bytes?n=1M", 0);
  ck_assert_uint_eq(stats(b.pool).deferred, curl_keeps_back_fresh(RC_OVERFLOW_AUTO) ? N - 1 : 0);
  ck_assert_int_eq(batch_run(&b, 1 * MiB), N);
  for (int i = 0; i < N; i++)
    ck_assert_int_eq(rc_multi_add(b.resp[i], b.multi), CURLM_OK);
  ck_assert_uint_eq(stats(b.pool).deferred, 0); /* known HTTP/1.1 */
  ck_assert_int_eq(batch_run(&b, 1 * MiB), N);
  batch_free(&b);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("admit");
  TCase *tc = tcase_create("admit");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, refuses_what_it_cannot_add);
  tcase_add_test(tc, keeps_streams_back);
  tcase_add_test(tc, reset_free_detach_take_back);
  tcase_add_test(tc, http1_handles_go_in);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
