/* Body observers (rc_response_observe) over real transfers: every slice of
 * the decoded body once, in order, whatever the chunking (1 byte, 7 bytes,
 * 16 KiB, whole), the coding (identity, gzip, deflate, br, zstd), the cap
 * (one under, at, one over), kept or not, spilled, paused by the budget,
 * over HTTP/1.1 and HTTP/2; early stops and failing observers; no memory
 * for a body that is not kept; allocation failures. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "h2.h"
#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static unsigned char *pattern; /* the server's first 4 MiB */
#define PATTERN_LEN (4 * MiB)

static void setup(void)
{
  server_up();
  pattern = malloc(PATTERN_LEN);
  ck_assert_ptr_nonnull(pattern);
  ts_pattern_fill(pattern, 0, PATTERN_LEN);
}

static void teardown(void)
{
  free(pattern);
  server_down();
}

/* What an observer saw. */
typedef struct seen {
  size_t bytes, calls, empty;
  int in_order;    /* every slice was the pattern at its offset */
  uLong crc;       /* of everything seen */
  size_t stop_at;  /* answer verdict once bytes >= stop_at; 0: never */
  rc_code verdict; /* RC_STOPPED, or a failure */
  size_t calls_at_verdict;
} seen;

static void seen_init(seen *s)
{
  memset(s, 0, sizeof *s);
  s->in_order = 1;
  s->crc = crc32(0, NULL, 0);
}

static rc_code watch(void *ud, const char *data, size_t len)
{
  seen *s = ud;
  s->calls++;
  s->empty += len == 0;
  if (s->bytes + len > PATTERN_LEN || memcmp(data, pattern + s->bytes, len) != 0)
    s->in_order = 0;
  s->crc = crc32(s->crc, (const Bytef *)data, (uInt)len);
  s->bytes += len;
  if (s->stop_at && s->bytes >= s->stop_at) {
    if (!s->calls_at_verdict)
      s->calls_at_verdict = s->calls;
    return s->verdict;
  }
  return RC_OK;
}

/* A response on pool with max_body cap (0: default), observed by s. */
static rc_response *observed(rc_pool *pool, size_t cap, rc_cap_policy policy, seen *s, rc_keep keep)
{
  rc_response *r = new_response(pool, cap, policy);
  seen_init(s);
  ck_assert_int_eq(rc_response_observe(r, watch, s, keep), RC_OK);
  return r;
}

/* One transfer of url into r; returns curl's result. */
static CURLcode fetch_url(rc_response *r, const char *url, int insecure)
{
  CURL *e = curl_easy_init();
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(rc_attach(r, e), RC_OK);
  curl_easy_setopt(e, CURLOPT_URL, url);
  if (insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  CURLcode cc = curl_easy_perform(e);
  curl_easy_cleanup(e);
  return cc;
}

static CURLcode fetch(rc_response *r, const char *path)
{
  char url[256];
  return fetch_url(r, ts_url(srv, path, url, sizeof url), 0);
}

/* The observer saw exactly the first n bytes of the pattern, once each, in
 * non-empty slices; the response agrees, kept or not. */
static void check_whole(const rc_response *r, const seen *s, size_t n, rc_keep keep,
                        const char *what)
{
  ck_assert_msg(s->bytes == n, "%s: observed %zu of %zu", what, s->bytes, n);
  ck_assert_msg(s->in_order, "%s: a slice out of order", what);
  ck_assert_msg(s->empty == 0, "%s: an empty slice", what);
  ck_assert_uint_eq(rc_body_length(r), n);
  rc_view body = rc_body(r);
  if (keep == RC_KEEP_BODY) {
    ck_assert(rc_body_kept(r));
    assert_pattern(body, n);
  } else {
    ck_assert(!rc_body_kept(r));
    ck_assert_uint_eq(body.len, 0);
    ck_assert_str_eq(body.ptr, "");
  }
}

static const rc_keep KEEPS[] = {RC_KEEP_BODY, RC_KEEP_NONE};

/* ---- Chunkings and codings ----------------------------------------------- */

static const char *const CODINGS[] = {"identity", "gzip", "deflate", "br", "zstd"};
static const struct {
  const char *write; /* bytes per send() of the server */
  size_t n;          /* body bytes */
} CHUNKINGS[] = {{"1", 3000}, {"7", 30000}, {"16k", 300 * 1024}, {"256k", 1536 * 1024}};

START_TEST(chunkings_and_codings)
{
  const char *coding = CODINGS[_i];
  for (size_t c = 0; c < sizeof CHUNKINGS / sizeof CHUNKINGS[0]; c++) {
    for (size_t k = 0; k < 2; k++) {
      char path[160], what[200];
      size_t n = CHUNKINGS[c].n;
      if (!strcmp(coding, "identity"))
        snprintf(path, sizeof path, "/bytes?n=%zu&write=%s", n, CHUNKINGS[c].write);
      else
        snprintf(path, sizeof path, "/gzip?n=%zu&coding=%s&write=%s", n, coding,
                 CHUNKINGS[c].write);
      snprintf(what, sizeof what, "%s, keep %d", path, (int)KEEPS[k]);
      seen s;
      rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, KEEPS[k]);
      CURLcode cc = fetch(r, path);
      ck_assert_msg(cc == CURLE_OK, "%s: %s", what, curl_easy_strerror(cc));
      ck_assert_int_eq(rc_result(r, cc), RC_OK);
      if (rc_body_encoding(r) == RC_ENC_UNSUPPORTED) {
        /* A build without this decoder keeps the coded bytes: they are
         * what the observer sees. */
        ck_assert_msg(!strcmp(coding, "br") || !strcmp(coding, "zstd"), "%s: unsupported", what);
        ck_assert_uint_eq(s.bytes, rc_body_length(r));
        if (KEEPS[k] == RC_KEEP_BODY) {
          rc_view body = rc_body(r);
          ck_assert_uint_eq(s.crc,
                            crc32(crc32(0, NULL, 0), (const Bytef *)body.ptr, (uInt)body.len));
        }
      } else {
        ck_assert_int_eq(rc_body_encoding(r),
                         !strcmp(coding, "identity") ? RC_ENC_IDENTITY : RC_ENC_DECODED);
        check_whole(r, &s, n, KEEPS[k], what);
      }
      rc_response_free(r);
    }
  }
}
END_TEST

/* ---- The cap ------------------------------------------------------------- */

/* One under the cap, at it, one over: the observer sees at most the cap. */
START_TEST(caps)
{
  const size_t cap = 100000;
  static const char *const paths[] = {"/bytes?n=", "/gzip?coding=gzip&n="};
  for (size_t p = 0; p < 2; p++) {
    for (size_t d = 0; d < 3; d++) {
      for (size_t k = 0; k < 2; k++) {
        for (int drain = 0; drain < 2; drain++) {
          size_t n = cap - 1 + d;
          char path[96], what[160];
          snprintf(path, sizeof path, "%s%zu", paths[p], n);
          snprintf(what, sizeof what, "%s, keep %d, drain %d", path, (int)KEEPS[k], drain);
          seen s;
          rc_response *r = observed(NULL, cap, drain ? RC_CAP_DRAIN : RC_CAP_STOP, &s, KEEPS[k]);
          CURLcode cc = fetch(r, path);
          size_t want = n < cap ? n : cap;
          check_whole(r, &s, want, KEEPS[k], what);
          ck_assert_int_eq(rc_truncated(r), n > cap);
          ck_assert_int_eq(rc_result(r, cc), n > cap ? RC_TRUNCATED : RC_OK);
          rc_response_free(r);
        }
      }
    }
  }
}
END_TEST

/* ---- Stopping and failing ------------------------------------------------ */

/* RC_STOPPED ends the transfer at once: not an error of curl's, what was
 * kept is readable, and the observer hears nothing more. */
START_TEST(stop_early)
{
  static const char *const paths[] = {"/bytes?n=4M&write=16k", "/gzip?n=4M&coding=gzip&write=16k",
                                      "/gzip?n=4M&coding=deflate&write=16k"};
  for (size_t p = 0; p < 3; p++) {
    for (size_t k = 0; k < 2; k++) {
      seen s;
      rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, KEEPS[k]);
      s.stop_at = 64 * KiB;
      s.verdict = RC_STOPPED;
      CURLcode cc = fetch(r, paths[p]);
      ck_assert_int_eq(cc, CURLE_WRITE_ERROR);
      ck_assert_int_eq(rc_result(r, cc), RC_STOPPED);
      ck_assert_int_eq(s.calls, s.calls_at_verdict);
      ck_assert(s.in_order);
      ck_assert_uint_ge(s.bytes, 64 * KiB);
      ck_assert_msg(s.bytes < MiB, "%s: observed %zu after stopping", paths[p], s.bytes);
      ck_assert_uint_eq(rc_body_length(r), s.bytes);
      if (KEEPS[k] == RC_KEEP_BODY)
        assert_pattern(rc_body(r), s.bytes);
      ck_assert_int_eq(rc_status(r), 200);
      rc_response_free(r);
    }
  }
}
END_TEST

/* A stop with a body's last bytes, its length declared: curl ends the
 * transfer as usual and the next transfer on the handle reuses the
 * connection; rc_result is RC_STOPPED all the same. The same stop over a
 * chunked body (its end not known from the bytes), a coded one or a
 * redirect's fails curl's transfer, and the next one connects again. */
START_TEST(stop_at_end)
{
  static const struct {
    const char *path;
    int whole; /* the stop comes with the declared body's last bytes */
  } cases[] = {{"/bytes?n=3000", 1},
               {"/bytes?n=3000&write=1000", 1},
               {"/bytes?n=3000&te=chunked", 0},
               {"/gzip?n=3000&coding=gzip", 0}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    for (size_t k = 0; k < 2; k++) {
      seen s;
      rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, KEEPS[k]);
      CURL *e = curl_easy_init();
      ck_assert_ptr_nonnull(e);
      ck_assert_int_eq(rc_attach(r, e), RC_OK);
      char url[256];
      curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, cases[c].path, url, sizeof url));
      for (int round = 0; round < 2; round++) {
        seen_init(&s);
        s.stop_at = 3000;
        s.verdict = RC_STOPPED;
        CURLcode cc = curl_easy_perform(e);
        long connects = -1;
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
        ck_assert_msg(cc == (cases[c].whole ? CURLE_OK : CURLE_WRITE_ERROR), "%s: curl %d",
                      cases[c].path, cc);
        ck_assert_int_eq(rc_result(r, cc), RC_STOPPED);
        ck_assert_uint_eq(s.bytes, 3000);
        ck_assert(s.in_order);
        ck_assert_uint_eq(rc_body_length(r), 3000);
        if (KEEPS[k] == RC_KEEP_BODY)
          assert_pattern(rc_body(r), 3000);
        /* The second round: the connection of the first, kept or not. */
        if (round == 1)
          ck_assert_msg(connects == (cases[c].whole ? 0 : 1), "%s: %ld connects",
                        cases[c].path, connects);
        rc_response_reset(r);
      }
      curl_easy_cleanup(e);
      rc_response_free(r);
    }
  }
  /* A redirect's whole body stopped (here one curl does not follow; one
   * it follows it does not show): the transfer is stopped there. */
  seen s;
  rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, RC_KEEP_BODY);
  s.stop_at = 1;
  s.verdict = RC_STOPPED;
  CURLcode cc = fetch(r, "/hops?n=1");
  ck_assert_int_eq(cc, CURLE_WRITE_ERROR);
  ck_assert_int_eq(rc_result(r, cc), RC_STOPPED);
  ck_assert_int_eq(rc_status(r), 302);
  ck_assert_uint_eq(s.bytes, 9); /* "redirect\n" */
  rc_response_free(r);
}
END_TEST

/* Any other verdict fails the transfer with RC_E_OBSERVER; what was kept
 * stays, and nothing leaks (the sanitizer builds check that). */
START_TEST(observer_fails)
{
  static const char *const paths[] = {"/bytes?n=1M", "/gzip?n=1M&coding=gzip"};
  static const rc_code verdicts[] = {RC_E_NOMEM, RC_E_INVAL, RC_TRUNCATED};
  for (size_t p = 0; p < 2; p++) {
    for (size_t v = 0; v < 3; v++) {
      for (size_t k = 0; k < 2; k++) {
        seen s;
        rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, KEEPS[k]);
        s.stop_at = 10 * KiB;
        s.verdict = verdicts[v];
        CURLcode cc = fetch(r, paths[p]);
        ck_assert_int_eq(cc, CURLE_WRITE_ERROR);
        ck_assert_int_eq(rc_result(r, cc), RC_E_OBSERVER);
        ck_assert_int_eq(s.calls, s.calls_at_verdict);
        if (KEEPS[k] == RC_KEEP_BODY)
          assert_pattern(rc_body(r), s.bytes);
        rc_response_free(r);
      }
    }
  }
}
END_TEST

/* ---- Memory: spilled, paused, not kept ----------------------------------- */

START_TEST(spilled)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_memory = 64 * KiB;
  static const char *const paths[] = {"/bytes?n=1M", "/gzip?n=1M&coding=gzip",
                                      "/bytes?n=1M&te=chunked"};
  for (size_t p = 0; p < 3; p++) {
    rc_response *r;
    ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
    seen s;
    seen_init(&s);
    ck_assert_int_eq(rc_response_observe(r, watch, &s, RC_KEEP_BODY), RC_OK);
    CURLcode cc = fetch(r, paths[p]);
    ck_assert_int_eq(rc_result(r, cc), RC_OK);
    ck_assert(rc_body_spilled(r));
    check_whole(r, &s, MiB, RC_KEEP_BODY, paths[p]);
    rc_response_free(r);
  }
}
END_TEST

/* Transfers paused by the budget: every byte is observed once, in order,
 * when the chunk curl delivers again after the pause is taken. The server
 * sends each body's first 16 KiB at once and the rest 2 ms apart (at least
 * 62 ms for the identity body): the holder is still receiving when the
 * other three, whose requests went out with its own, are refused. */
START_TEST(paused)
{
  enum { N = 4 };
  static const char *const paths[] = {"/bytes?n=512k&write=16k&delay_us=2000",
                                      "/gzip?n=512k&coding=gzip&write=16k&delay_us=2000"};
  for (size_t p = 0; p < 2; p++) {
    rc_pool *pool = pool_with_budget(64 * KiB, RC_OVERFLOW_WAIT);
    CURLM *multi = curl_multi_init();
    rc_response *r[N];
    CURL *e[N];
    seen s[N];
    char url[160];
    ts_url(srv, paths[p], url, sizeof url);
    for (int i = 0; i < N; i++) {
      r[i] = observed(pool, 0, RC_CAP_STOP, &s[i], RC_KEEP_BODY);
      e[i] = curl_easy_init();
      ck_assert_int_eq(rc_attach(r[i], e[i]), RC_OK);
      curl_easy_setopt(e[i], CURLOPT_URL, url);
      curl_easy_setopt(e[i], CURLOPT_PRIVATE, (void *)r[i]);
      curl_multi_add_handle(multi, e[i]);
    }
    /* This thread resumes what pauses (rc_pool_set_budget(3)), from the
     * first curl_multi_perform on: a body refused there, before the first
     * rc_multi_poll, would otherwise fail with RC_E_TIMEOUT. */
    rc_pool_timeout(pool);
    int running = 1;
    while (running) {
      ck_assert_int_eq(curl_multi_perform(multi, &running), CURLM_OK);
      CURLMsg *msg;
      int left;
      while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
        rc_response *done;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&done);
        ck_assert_int_eq(rc_result(done, msg->data.result), RC_OK);
        /* Released at once: memory for the transfers still waiting. */
        for (int i = 0; i < N; i++)
          if (r[i] == done) {
            check_whole(done, &s[i], 512 * KiB, RC_KEEP_BODY, paths[p]);
            s[i].calls = 0; /* checked */
          }
        rc_response_reset(done);
      }
      if (running)
        ck_assert_int_eq(rc_multi_poll(pool, multi, NULL, 0, 1000, NULL), CURLM_OK);
    }
    ck_assert_uint_gt(pool_stats(pool).pauses, 0);
    for (int i = 0; i < N; i++) {
      ck_assert_uint_eq(s[i].calls, 0);
      curl_multi_remove_handle(multi, e[i]);
      curl_easy_cleanup(e[i]);
      rc_response_free(r[i]);
    }
    curl_multi_cleanup(multi);
    rc_pool_free(pool);
  }
}
END_TEST

/* RC_KEEP_NONE: the body takes no pool memory and never waits for the
 * budget, however large; the headers are kept. */
START_TEST(not_kept_takes_no_memory)
{
  static const char *const paths[] = {"/bytes?n=4M", "/gzip?n=4M&coding=gzip",
                                      "/bytes?n=4M&te=chunked"};
  for (size_t p = 0; p < 3; p++) {
    counting_alloc ca;
    counting_alloc_init(&ca);
    rc_pool_config cfg;
    rc_pool_config_init(&cfg);
    cfg.allocator = &ca.a;
    cfg.budget = 16 * KiB;
    cfg.overflow = RC_OVERFLOW_WAIT;
    rc_pool *pool;
    ck_assert_int_eq(rc_pool_new(&cfg, &pool), RC_OK);
    seen s;
    rc_response *r = observed(pool, 0, RC_CAP_STOP, &s, RC_KEEP_NONE);
    ca.peak_bytes = ca.live_bytes;
    CURLcode cc = fetch(r, paths[p]);
    ck_assert_int_eq(rc_result(r, cc), RC_OK);
    check_whole(r, &s, 4 * MiB, RC_KEEP_NONE, paths[p]);
    rc_pool_stats st = pool_stats(pool);
    ck_assert_uint_eq(st.pauses, 0);
    ck_assert_uint_eq(st.spills, 0);
    ck_assert_msg(st.peak_in_use < 64 * KiB, "%s: %zu bytes in use", paths[p], st.peak_in_use);
    /* Everything allocated, decoder state included, stays far below the
     * body (gzip's state is about 40 KiB, the body's scratch region 16 KiB). */
    ck_assert_msg(ca.peak_bytes < 256 * KiB, "%s: peak %zu bytes", paths[p], ca.peak_bytes);
    rc_view type;
    ck_assert_int_eq(rc_header(r, -1, "content-type", 0, &type), RC_OK);
    char *copy = rc_body_dup(r, NULL);
    ck_assert_ptr_nonnull(copy);
    ck_assert_str_eq(copy, "");
    free(copy);
    rc_response_free(r);
    rc_pool_free(pool);
    ck_assert_int_eq(ca.live, 0);
  }
}
END_TEST

/* Allocation failures on the observed path, kept or not: a typed error or
 * success, never a crash, and everything given back. */
START_TEST(allocation_failure)
{
  for (size_t k = 0; k < 2; k++) {
    int completed = 0;
    for (long at = 1; at <= 60 && !completed; at++) {
      counting_alloc ca;
      counting_alloc_init(&ca);
      rc_pool_config cfg;
      rc_pool_config_init(&cfg);
      cfg.allocator = &ca.a;
      rc_pool *pool;
      ck_assert_int_eq(rc_pool_new(&cfg, &pool), RC_OK);
      seen s;
      rc_response *r;
      ca.fail_at = ca.calls + at;
      if (rc_response_new(pool, NULL, &r) != RC_OK) {
        rc_pool_free(pool);
        ck_assert_int_eq(ca.live, 0);
        continue;
      }
      seen_init(&s);
      ck_assert_int_eq(rc_response_observe(r, watch, &s, KEEPS[k]), RC_OK);
      CURLcode cc = fetch(r, "/gzip?n=200k&coding=gzip");
      rc_code rc = rc_result(r, cc);
      ck_assert_msg(rc == RC_OK || rc == RC_E_NOMEM, "failing allocation %ld: %s", at,
                    rc_strerror(rc));
      ck_assert(s.in_order);
      if (rc == RC_OK) {
        check_whole(r, &s, 200 * KiB, KEEPS[k], "allocation failure");
        completed = ca.calls < ca.fail_at; /* no failure left to try */
      }
      rc_response_free(r);
      rc_pool_free(pool);
      ck_assert_int_eq(ca.live, 0);
    }
    ck_assert_msg(completed, "still failing after 60 allocations");
  }
}
END_TEST

/* ---- The setting itself -------------------------------------------------- */

START_TEST(settings)
{
  seen s;
  seen_init(&s);
  ck_assert_int_eq(rc_response_observe(NULL, watch, &s, RC_KEEP_BODY), RC_E_INVAL);
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_observe(r, watch, &s, (rc_keep)7), RC_E_INVAL);
  ck_assert(rc_body_kept(r));
  ck_assert(!rc_body_kept(NULL));
  ck_assert_uint_eq(rc_body_length(NULL), 0);
  /* A response without an observer that keeps nothing: counted only. */
  ck_assert_int_eq(rc_response_observe(r, NULL, NULL, RC_KEEP_NONE), RC_OK);
  ck_assert_int_eq(rc_result(r, fetch(r, "/bytes?n=5000")), RC_OK);
  ck_assert_uint_eq(rc_body_length(r), 5000);
  ck_assert_uint_eq(rc_body(r).len, 0);
  /* Only between transfers. */
  ck_assert_int_eq(rc_response_observe(r, watch, &s, RC_KEEP_BODY), RC_E_BUSY);
  rc_response_reset(r);
  ck_assert(!rc_body_kept(r)); /* kept across the reset */
  ck_assert_int_eq(rc_response_observe(r, watch, &s, RC_KEEP_BODY), RC_OK);
  for (int round = 0; round < 2; round++) { /* and so is the observer */
    seen_init(&s);
    ck_assert_int_eq(rc_result(r, fetch(r, "/bytes?n=70000")), RC_OK);
    check_whole(r, &s, 70000, RC_KEEP_BODY, "after a reset");
    rc_response_reset(r);
  }
  /* Removed: the body is kept and nothing observed. */
  ck_assert_int_eq(rc_response_observe(r, NULL, NULL, RC_KEEP_BODY), RC_OK);
  seen_init(&s);
  ck_assert_int_eq(rc_result(r, fetch(r, "/bytes?n=1000")), RC_OK);
  ck_assert_uint_eq(s.calls, 0);
  assert_pattern(rc_body(r), 1000);
  rc_response_free(r);
}
END_TEST

/* ---- HTTP/2 -------------------------------------------------------------- */

START_TEST(http2)
{
  h2_server *h2 = h2_start();
  ck_assert_ptr_nonnull(h2);
  static const char *const paths[] = {"/p/1m", "/gz/1m"};
  for (size_t p = 0; p < 2; p++) {
    for (size_t k = 0; k < 2; k++) {
      char url[160];
      h2_url(h2, paths[p], url, sizeof url);
      seen s;
      rc_response *r = observed(NULL, 0, RC_CAP_STOP, &s, KEEPS[k]);
      CURLcode cc = fetch_url(r, url, 1);
      ck_assert_msg(cc == CURLE_OK, "%s: %s", url, curl_easy_strerror(cc));
      ck_assert_int_eq(rc_result(r, cc), RC_OK);
      rc_hop_info hop;
      ck_assert_int_eq(rc_hop(r, -1, &hop), RC_OK);
      ck_assert_int_eq(hop.version, 20);
      check_whole(r, &s, MiB, KEEPS[k], url);
      rc_response_free(r);
    }
  }
  h2_stop(h2);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("observe");
  TCase *tc = tcase_create("observe");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, chunkings_and_codings, 0, sizeof CODINGS / sizeof CODINGS[0]);
  tcase_add_test(tc, caps);
  tcase_add_test(tc, stop_early);
  tcase_add_test(tc, stop_at_end);
  tcase_add_test(tc, observer_fails);
  tcase_add_test(tc, spilled);
  tcase_add_test(tc, paused);
  tcase_add_test(tc, not_kept_takes_no_memory);
  tcase_add_test(tc, allocation_failure);
  tcase_add_test(tc, settings);
  tcase_add_test(tc, http2);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
