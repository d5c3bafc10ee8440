/* A response and its easy handle, freed and reused in every order, and the
 * misuse a newcomer falls into, each over real transfers on the loopback
 * server (run under AddressSanitizer by CI: any read of a freed response
 * through a handle fails there):
 *  - rc_response_free while its transfer runs in a multi: the transfer
 *    goes on and fails at its next callback with CURLE_WRITE_ERROR;
 *  - free, then the handle used again; curl_easy_cleanup before the free,
 *    also while the transfer waits for the budget; free before cleanup;
 *    free while it is paused for the budget (CURLPAUSE_CONT then ends it);
 *  - a response moved to another handle: the handle it left fails;
 *  - rc_attach of a response holding another handle's transfer: RC_E_BUSY;
 *  - transfers without rc_response_reset between them: each begins afresh
 *    at its first header line (no hops piling up, no stale error);
 *  - a budget on a thread that never resumes (curl_multi_poll alone): no
 *    transfer pauses there, none waits until its timeout;
 *  - the handle-link table: tokens die with their link, slots are reused,
 *    a full table is RC_E_NOMEM. */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "link.h"
#include "net.h"

#define KiB ((size_t)1024)

static CURL *easy_to(rc_response *r, const char *path)
{
  CURL *easy = curl_easy_init();
  ck_assert_ptr_nonnull(easy);
  if (r)
    ck_assert_int_eq(rc_attach(r, easy), RC_OK);
  char u[256];
  curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, path, u, sizeof u));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT, 20L);
  return easy;
}

/* A transfer on easy into r that completes with the first n bytes of the
 * pattern. */
static void fetch_ok(rc_response *r, CURL *easy, size_t n)
{
  CURLcode cc = curl_easy_perform(easy);
  ck_assert_msg(rc_result(r, cc) == RC_OK, "%s", rc_result_text(rc_result(r, cc), cc));
  assert_pattern(rc_body(r), n);
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What the handle of a freed response ends with at its next transfer:
 * CURLE_WRITE_ERROR at its first header line, or, where rc_attach set the
 * request-time hold callback (curl 8.21), CURLE_ABORTED_BY_CALLBACK before
 * the request is sent. */
static void expect_refused(CURL *easy)
{
  unsigned long before = ts_requests(srv);
  CURLcode cc = curl_easy_perform(easy);
  if (cc == CURLE_ABORTED_BY_CALLBACK)
    ck_assert_uint_eq(ts_requests(srv), before); /* no request went out */
  else
    ck_assert_msg(cc == CURLE_WRITE_ERROR, "%s", curl_easy_strerror(cc));
}

/* Drives multi until its one transfer ends (within 20 s): curl's result.
 * With *free_me set, frees that response once it holds body bytes, and
 * sets *free_me to NULL. */
static CURLcode run_to_end(CURLM *multi, rc_response **free_me)
{
  double deadline = now_s() + 20;
  while (now_s() < deadline) {
    int running;
    curl_multi_perform(multi, &running);
    if (free_me && *free_me && rc_body_length(*free_me) > 0) {
      ck_assert_uint_lt(rc_body_length(*free_me), 6 * 1024 * KiB); /* still running */
      rc_response_free(*free_me);
      *free_me = NULL;
    }
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left)))
      if (m->msg == CURLMSG_DONE)
        return m->data.result;
    curl_multi_poll(multi, NULL, 0, 50, NULL);
  }
  ck_abort_msg("the transfer did not end");
  return CURLE_OK;
}

/* Drives multi until one transfer of p's waits for the budget. */
static void until_waiting(rc_pool *p, CURLM *multi)
{
  double deadline = now_s() + 10;
  while (pool_stats(p).waiting == 0 && now_s() < deadline) {
    int running;
    curl_multi_perform(multi, &running);
    curl_multi_poll(multi, NULL, 0, 50, NULL);
  }
  ck_assert_uint_eq(pool_stats(p).waiting, 1);
}

/* Freed while its transfer runs in a multi (after its first body bytes):
 * the transfer goes on and fails at its next write with
 * CURLE_WRITE_ERROR; nothing reads the freed response. The server takes
 * at least 0.77 s to send the body (16 KiB every 2 ms): it is still
 * arriving when the loop first sees it, also on a loaded machine. */
START_TEST(free_while_running)
{
  size_t links = rc__links_alive();
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *easy = easy_to(r, "/bytes?n=6m&write=16k&delay_us=2000");
  CURLM *multi = curl_multi_init();
  curl_multi_add_handle(multi, easy);
  CURLcode cc = run_to_end(multi, &r);
  ck_assert_ptr_null(r); /* freed mid-way */
  ck_assert_msg(cc == CURLE_WRITE_ERROR, "%s", curl_easy_strerror(cc));
  ck_assert_uint_eq(rc__links_alive(), links);
  curl_multi_remove_handle(multi, easy);
  expect_refused(easy); /* and again, outside the multi */
  curl_easy_cleanup(easy);
  curl_multi_cleanup(multi);
}
END_TEST

/* Freed after its transfer, then the handle used again: the transfer
 * fails at once; attached to a new response, the handle works again. */
START_TEST(free_then_reuse)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *easy = easy_to(r, "/bytes?n=100k");
  fetch_ok(r, easy, 100 * KiB);
  rc_response_free(r);
  expect_refused(easy);
  expect_refused(easy);
  rc_response *again = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_attach(again, easy), RC_OK);
  fetch_ok(again, easy, 100 * KiB);
  rc_response_free(again);
  curl_easy_cleanup(easy);
}
END_TEST

/* curl_easy_cleanup first, then rc_response_free (the response never
 * touches its handle when freed); and the documented order, free first.
 * The same while the transfer waits for the budget, removed from its
 * multi: cleanup, then free. */
START_TEST(cleanup_then_free)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *easy = easy_to(r, "/bytes?n=10k");
  fetch_ok(r, easy, 10 * KiB);
  curl_easy_cleanup(easy);
  assert_pattern(rc_body(r), 10 * KiB); /* the handle gone, the response unharmed */
  rc_response_free(r);

  r = new_response(NULL, 0, RC_CAP_STOP);
  easy = easy_to(r, "/bytes?n=10k");
  fetch_ok(r, easy, 10 * KiB);
  rc_response_free(r);
  curl_easy_cleanup(easy);

  rc_pool *p = pool_with_budget(64 * KiB, RC_OVERFLOW_WAIT);
  rc_pool_timeout(p); /* this thread resumes: refused transfers pause */
  rc_response *holder = new_response(p, 0, RC_CAP_STOP);
  CURL *eh = easy_to(holder, "/bytes?n=128k");
  fetch_ok(holder, eh, 128 * KiB);
  r = new_response(p, 0, RC_CAP_STOP);
  easy = easy_to(r, "/bytes?n=128k");
  CURLM *multi = curl_multi_init();
  curl_multi_add_handle(multi, easy);
  until_waiting(p, multi);
  curl_multi_remove_handle(multi, easy);
  curl_easy_cleanup(easy);
  rc_pool_resume(p); /* nothing is due: the waiter's memory is not back */
  rc_response_free(r);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  rc_response_free(holder);
  curl_easy_cleanup(eh);
  curl_multi_cleanup(multi);
  rc_pool_free(p);
}
END_TEST

/* Freed while its transfer is paused for the budget: nothing resumes the
 * handle any more; curl_easy_pause(CURLPAUSE_CONT) by the program makes
 * the transfer go on to its next write, which fails it at once. */
START_TEST(free_while_paused)
{
  rc_pool *p = pool_with_budget(64 * KiB, RC_OVERFLOW_WAIT);
  rc_pool_timeout(p); /* this thread resumes: refused transfers pause */
  rc_response *holder = new_response(p, 0, RC_CAP_STOP);
  CURL *eh = easy_to(holder, "/bytes?n=128k");
  fetch_ok(holder, eh, 128 * KiB);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  CURL *easy = easy_to(r, "/bytes?n=128k");
  CURLM *multi = curl_multi_init();
  curl_multi_add_handle(multi, easy);
  until_waiting(p, multi);
  rc_response_free(r);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  curl_easy_pause(easy, CURLPAUSE_CONT);
  CURLcode cc = run_to_end(multi, NULL);
  ck_assert_msg(cc == CURLE_WRITE_ERROR, "%s", curl_easy_strerror(cc));
  curl_multi_remove_handle(multi, easy);
  curl_easy_cleanup(easy);
  rc_response_free(holder);
  curl_easy_cleanup(eh);
  curl_multi_cleanup(multi);
  rc_pool_free(p);
}
END_TEST

/* One response, two handles: rc_attach to the second while the response
 * holds the first one's transfer is RC_E_BUSY (nothing mixes); reset, it
 * moves, and the handle it left fails instead of writing into it. */
START_TEST(attach_busy_then_move)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *e1 = easy_to(r, "/bytes?n=1m&write=16k&delay_us=2000");
  CURL *e2 = easy_to(NULL, "/bytes?n=20k");
  CURLM *multi = curl_multi_init();
  curl_multi_add_handle(multi, e1);
  int running = 1;
  while (rc_body_length(r) == 0 && running) {
    curl_multi_perform(multi, &running);
    curl_multi_poll(multi, NULL, 0, 50, NULL);
  }
  ck_assert_int_eq(rc_attach(r, e2), RC_E_BUSY); /* mid-transfer */
  while (running) {
    curl_multi_perform(multi, &running);
    curl_multi_poll(multi, NULL, 0, 50, NULL);
  }
  CURLMsg *m;
  int left;
  CURLcode cc = CURLE_FAILED_INIT;
  while ((m = curl_multi_info_read(multi, &left)))
    cc = m->data.result;
  ck_assert_int_eq(rc_result(r, cc), RC_OK);
  assert_pattern(rc_body(r), 1024 * KiB);
  ck_assert_int_eq(rc_attach(r, e2), RC_E_BUSY); /* finished, not reset */
  ck_assert_int_eq(rc_attach(r, e1), RC_OK);     /* its own handle: fine */
  curl_multi_remove_handle(multi, e1);

  rc_response_reset(r);
  ck_assert_int_eq(rc_attach(r, e2), RC_OK); /* moved */
  expect_refused(e1);
  ck_assert_uint_eq(rc_hop_count(r), 0); /* e1 wrote nothing into it */
  fetch_ok(r, e2, 20 * KiB);
  ck_assert_int_eq(rc_detach(r, e2), RC_OK); /* detached: free to move */
  ck_assert_int_eq(rc_attach(r, e1), RC_OK);
  rc_response_free(r);
  curl_easy_cleanup(e1);
  curl_easy_cleanup(e2);
  curl_multi_cleanup(multi);
}
END_TEST

/* Transfers one after the other on one handle, never reset: each begins
 * afresh at its first header line. Redirects within one transfer keep all
 * their hops; more transfers than max_hops do not pile up into
 * RC_E_HOP_CAP; after a failed transfer the next one is not failed by the
 * old error; the old body never shows. */
START_TEST(new_transfer_without_reset)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = 64 * KiB;
  lim.on_cap = RC_CAP_REJECT;
  lim.max_hops = 4;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  CURL *easy = easy_to(r, "/bytes?n=10k");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  char u[256];
  for (int i = 0; i < 3 * (int)lim.max_hops; i++) {
    size_t n = (size_t)(i + 1) * KiB;
    char path[64];
    snprintf(path, sizeof path, "/redirect?n=%d&to=/bytes%%3Fn=%zu", i % 2, n);
    curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, path, u, sizeof u));
    CURLcode cc = curl_easy_perform(easy);
    ck_assert_msg(rc_result(r, cc) == RC_OK, "transfer %d: %s", i,
                  rc_result_text(rc_result(r, cc), cc));
    ck_assert_uint_eq(rc_hop_count(r), i % 2 ? 3 : 2); /* 1 or 2 redirects, then 200 */
    assert_pattern(rc_body(r), n);
  }
  curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, "/bytes?n=100k", u, sizeof u));
  CURLcode cc = curl_easy_perform(easy);
  ck_assert_int_eq(rc_result(r, cc), RC_E_TOO_LARGE);
  curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, "/bytes?n=7", u, sizeof u));
  fetch_ok(r, easy, 7);
  ck_assert_uint_eq(rc_hop_count(r), 1);
  /* A transfer that fails before any header line cannot reset it: the
   * last one's data stays, and the result is the curl failure's. */
  curl_easy_setopt(easy, CURLOPT_URL, "http://127.0.0.1:1/");
  cc = curl_easy_perform(easy);
  ck_assert_int_ne(cc, CURLE_OK);
  ck_assert_int_eq(rc_result(r, cc), RC_E_TRANSFER);
  assert_pattern(rc_body(r), 7);
  rc_response_free(r);
  curl_easy_cleanup(easy);
}
END_TEST

/* ---- A budget where nothing resumes: curl_multi_perform and
 * curl_multi_poll alone, on a thread that never calls a loop function. */

typedef struct plain_loop {
  rc_pool *pool;
  rc_code rc[3];
} plain_loop;

static void *run_plain_loop(void *arg)
{
  plain_loop *pl = arg;
  CURLM *multi = curl_multi_init();
  rc_response *r[3];
  CURL *e[3];
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rc_response_new(pl->pool, NULL, &r[i]), RC_OK);
    e[i] = easy_to(r[i], "/bytes?n=256k&write=16k&delay_us=1000");
    curl_easy_setopt(e[i], CURLOPT_PRIVATE, (char *)(uintptr_t)i);
    curl_multi_add_handle(multi, e[i]);
  }
  int running = 1;
  while (running) {
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left))) {
      char *i;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &i);
      pl->rc[(uintptr_t)i] = rc_result(r[(uintptr_t)i], m->data.result);
    }
    if (running)
      curl_multi_poll(multi, NULL, 0, 1000, NULL);
  }
  for (int i = 0; i < 3; i++) {
    if (pl->rc[i] == RC_OK)
      assert_pattern(rc_body(r[i]), 256 * KiB);
    rc_response_free(r[i]);
    curl_multi_remove_handle(multi, e[i]);
    curl_easy_cleanup(e[i]);
  }
  curl_multi_cleanup(multi);
  return NULL;
}

/* Three 256 KiB transfers under a 64 KiB budget on a thread that never
 * resumes: none pauses (nothing would resume it before its 20 s timeout).
 * RC_OVERFLOW_AUTO: one takes the holder's place, the others spill, all
 * complete. RC_OVERFLOW_WAIT: the others fail with RC_E_TIMEOUT instead of
 * waiting for their timeout. Whether the others overlap the holder depends
 * on scheduling (the three bodies take some 16 ms each): where nothing
 * spilled or timed out, no two bodies were in memory at once. */
static void budget_without_resumer(rc_overflow mode)
{
  plain_loop pl = {pool_with_budget(64 * KiB, mode), {0}};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, run_plain_loop, &pl), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  rc_pool_stats st = pool_stats(pl.pool);
  ck_assert_uint_eq(st.pauses, 0);
  int ok = 0, timed_out = 0;
  for (int i = 0; i < 3; i++) {
    ok += pl.rc[i] == RC_OK;
    timed_out += pl.rc[i] == RC_E_TIMEOUT;
  }
  int held_back;
  if (mode == RC_OVERFLOW_AUTO) {
    ck_assert_int_eq(ok, 3);
    held_back = st.spills > 0;
  } else {
    ck_assert_int_ge(ok, 1);
    ck_assert_int_eq(ok + timed_out, 3);
    ck_assert_uint_eq(st.spills, 0);
    held_back = timed_out > 0;
  }
  if (!held_back)
    ck_assert_uint_lt(st.peak_in_use, 2 * 256 * KiB);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  rc_pool_free(pl.pool);
}

START_TEST(no_resumer_spills) { budget_without_resumer(RC_OVERFLOW_AUTO); }
END_TEST

START_TEST(no_resumer_times_out) { budget_without_resumer(RC_OVERFLOW_WAIT); }
END_TEST

/* ---- The link table itself. */

START_TEST(links_die_with_their_link)
{
  rc_response *a = new_response(NULL, 0, RC_CAP_STOP), *b = new_response(NULL, 0, RC_CAP_STOP);
  size_t base = rc__links_alive();
  void *ta, *tb, *ta2;
  ck_assert_int_eq(rc__link_new(a, &ta), RC_OK);
  ck_assert_int_eq(rc__link_new(b, &tb), RC_OK);
  ck_assert_ptr_nonnull(ta);
  ck_assert_ptr_eq(rc__link_resolve(ta), a);
  ck_assert_ptr_eq(rc__link_resolve(tb), b);
  ck_assert_uint_eq(rc__links_alive(), base + 2);
  rc__link_drop(ta);
  rc__link_drop(ta); /* twice: no effect */
  ck_assert_ptr_null(rc__link_resolve(ta));
  ck_assert_uint_eq(rc__links_alive(), base + 1);
  ck_assert_int_eq(rc__link_new(b, &ta2), RC_OK); /* a's slot again, a new token */
  ck_assert_ptr_ne(ta2, ta);
  ck_assert_ptr_null(rc__link_resolve(ta));
  ck_assert_ptr_eq(rc__link_resolve(ta2), b);
  ck_assert_ptr_null(rc__link_resolve(NULL));
  rc__link_drop(NULL);
  rc__link_drop(ta2);
  rc__link_drop(tb);
  ck_assert_uint_eq(rc__links_alive(), base);

  /* Many at once: the table grows past one segment; all resolve. */
  enum { MANY = 3000 };
  static void *t[MANY];
  for (int i = 0; i < MANY; i++)
    ck_assert_int_eq(rc__link_new(i % 2 ? a : b, &t[i]), RC_OK);
  for (int i = 0; i < MANY; i++)
    ck_assert_ptr_eq(rc__link_resolve(t[i]), i % 2 ? a : b);
  for (int i = 0; i < MANY; i++)
    rc__link_drop(t[i]);
  for (int i = 0; i < MANY; i++)
    ck_assert_ptr_null(rc__link_resolve(t[i]));
  ck_assert_uint_eq(rc__links_alive(), base);
  rc_response_free(a);
  rc_response_free(b);
}
END_TEST

/* Set up by hand (rc_header_cb with the response as userdata), a response
 * knows no handle and never resets itself: two exchanges without a reset
 * pile up their hops. */
START_TEST(hand_wired_does_not_reset)
{
  static const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, lines, "a", 1, 0), 0);
  ck_assert_uint_eq(feed(r, lines, "b", 1, 0), 0);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_response_free(r);
}
END_TEST

/* No slot to be had (as when malloc fails): rc_attach says RC_E_NOMEM
 * and leaves the response as it was, attached to nothing new. */
START_TEST(attach_without_memory)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *easy = easy_to(NULL, "/bytes?n=10");
  rc__links_set_max(rc__links_alive());
  ck_assert_int_eq(rc_attach(r, easy), RC_E_NOMEM);
  rc__links_set_max(SIZE_MAX);
  ck_assert_int_eq(rc_attach(r, easy), RC_OK);
  fetch_ok(r, easy, 10);
  rc_response_free(r);
  curl_easy_cleanup(easy);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("lifetime");
  TCase *unit = tcase_create("unit");
  tcase_add_test(unit, links_die_with_their_link);
  tcase_add_test(unit, hand_wired_does_not_reset);
  suite_add_tcase(s, unit);
  TCase *net = tcase_create("net");
  tcase_add_checked_fixture(net, server_up, server_down);
  tcase_set_timeout(net, 120);
  tcase_add_test(net, free_while_running);
  tcase_add_test(net, free_then_reuse);
  tcase_add_test(net, cleanup_then_free);
  tcase_add_test(net, free_while_paused);
  tcase_add_test(net, attach_busy_then_move);
  tcase_add_test(net, new_transfer_without_reset);
  tcase_add_test(net, no_resumer_spills);
  tcase_add_test(net, no_resumer_times_out);
  tcase_add_test(net, attach_without_memory);
  suite_add_tcase(s, net);
  return run_suite(s);
}
