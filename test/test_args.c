/* Every public function given NULL where it takes a pointer: the outcome
 * the header's rule promises (RC_E_INVAL, 0, an empty view, NULL, nothing
 * done, zeros filled in), never a crash. A response with hops and one
 * without are both tried, since some readers only look further once a hop
 * exists. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void assert_empty(rc_view v)
{
  ck_assert_ptr_nonnull(v.ptr);
  ck_assert_str_eq(v.ptr, "");
  ck_assert_uint_eq(v.len, 0);
}

START_TEST(pool_functions)
{
  rc_pool_config_init(NULL);
  rc_pool_trim(NULL);
  rc_pool_free(NULL);
  rc_pool_stats st;
  memset(&st, 0xff, sizeof st);
  rc_pool_stats_get(NULL, &st);
  ck_assert_uint_eq(st.acquisitions, 0);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  rc_pool_config cfg;
  memset(&cfg, 0xff, sizeof cfg);
  rc_pool_config_get(NULL, &cfg);
  ck_assert_uint_eq(cfg.chunk_size, 0);
  ck_assert_ptr_null(cfg.spill_dir);
  ck_assert_int_eq(rc_pool_new(NULL, NULL), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_chunk_size(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_large_threshold(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_max_large(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_max_idle_small(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_max_buffer(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_budget(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_resume(NULL), 0);
  ck_assert_int_eq(rc_pool_timeout(NULL), -1);
  ck_assert_int_eq(rc_pool_on_wake(NULL, NULL, NULL), RC_E_INVAL);
  CURLM *multi = curl_multi_init();
  ck_assert_int_eq(rc_multi_poll(NULL, multi, NULL, 0, 0, NULL), CURLM_BAD_HANDLE);
  curl_multi_cleanup(multi);

  /* A real pool with NULL for what it fills or drives. */
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_pool_stats_get(p, NULL);
  rc_pool_config_get(p, NULL);
  ck_assert_int_eq(rc_multi_poll(p, NULL, NULL, 0, 0, NULL), CURLM_BAD_HANDLE);
  ck_assert_int_eq(rc_pool_on_wake(p, NULL, NULL), RC_OK); /* removes none */
  rc_pool_free(p);
}
END_TEST

START_TEST(response_lifecycle)
{
  rc_limits_init(NULL);
  ck_assert_int_eq(rc_response_new(NULL, NULL, NULL), RC_E_INVAL);
  rc_response_free(NULL);
  rc_response_reset(NULL);
  rc_limits lim;
  rc_limits_init(&lim);
  ck_assert_int_eq(rc_response_set_limits(NULL, &lim), RC_E_INVAL);
  ck_assert_int_eq(rc_response_set_decoding(NULL, 1), RC_E_INVAL);
  ck_assert_int_eq(rc_response_set_budget_wait(NULL, 0), RC_E_INVAL);
  CURL *easy = curl_easy_init();
  ck_assert_int_eq(rc_attach(NULL, easy), RC_E_INVAL);
  ck_assert_int_eq(rc_detach(NULL, easy), RC_E_INVAL);
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_set_limits(r, NULL), RC_E_INVAL);
  ck_assert_int_eq(rc_attach(r, NULL), RC_E_INVAL);
  ck_assert_int_eq(rc_detach(r, NULL), RC_E_INVAL);
  rc_response_free(r);
  curl_easy_cleanup(easy);
  char line[] = "HTTP/1.1 200 OK\r\n";
  ck_assert_uint_eq(rc_header_cb(line, 1, sizeof line - 1, NULL), CURL_WRITEFUNC_ERROR);
  ck_assert_uint_eq(rc_write_cb(line, 1, 4, NULL), CURL_WRITEFUNC_ERROR);
}
END_TEST

/* Every reader, on NULL, then on a response without hops and with one,
 * given NULL outputs. */
START_TEST(readers)
{
  ck_assert_int_eq(rc_result(NULL, CURLE_OK), RC_E_INVAL);
  ck_assert_int_eq(rc_truncated(NULL), 0);
  ck_assert_int_eq(rc_raw_truncated(NULL), 0);
  ck_assert_int_eq(rc_body_spilled(NULL), 0);
  ck_assert_int_eq(rc_body_encoding(NULL), RC_ENC_IDENTITY);
  ck_assert_uint_eq(rc_hop_count(NULL), 0);
  ck_assert_int_eq(rc_status(NULL), 0);
  assert_empty(rc_body(NULL));
  assert_empty(rc_raw_body(NULL));
  rc_hop_info info;
  rc_view v;
  ck_assert_int_eq(rc_hop(NULL, 0, &info), RC_E_INVAL);
  ck_assert_int_eq(rc_header(NULL, -1, "a", 0, &v), RC_E_INVAL);
  ck_assert_int_eq(rc_trailer(NULL, "a", 0, &v), RC_E_INVAL);
  ck_assert_int_eq(rc_full_response(NULL, &v), RC_E_INVAL);
  size_t len = 7;
  ck_assert_ptr_null(rc_body_dup(NULL, &len));
  ck_assert_ptr_null(rc_full_response_dup(NULL, &len));

  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "A: 1\r\n", "\r\n", NULL};
  for (int with_hop = 0; with_hop < 2; with_hop++) {
    rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
    if (with_hop)
      ck_assert_uint_eq(feed(r, lines, "body", 4, 0), 0);
    ck_assert_int_eq(rc_hop(r, 0, NULL), RC_E_INVAL);
    ck_assert_int_eq(rc_hop(r, -1, NULL), RC_E_INVAL);
    ck_assert_int_eq(rc_header(r, -1, NULL, 0, &v), RC_E_INVAL);
    ck_assert_int_eq(rc_header(r, -1, "a", 0, NULL), RC_E_INVAL);
    ck_assert_int_eq(rc_trailer(r, NULL, 0, &v), RC_E_INVAL);
    ck_assert_int_eq(rc_trailer(r, "a", 0, NULL), RC_E_INVAL);
    ck_assert_int_eq(rc_full_response(r, NULL), RC_E_INVAL);
    char *dup = rc_body_dup(r, NULL); /* no length wanted */
    ck_assert_ptr_nonnull(dup);
    ck_assert_str_eq(dup, with_hop ? "body" : "");
    free(dup);
    rc_response_free(r);
  }
}
END_TEST

START_TEST(strings)
{
  ck_assert_str_eq(rc_strerror((rc_code)12345), "unknown result code");
  ck_assert_str_eq(rc_result_text((rc_code)-7, CURLE_OK), "unknown result code");
  ck_assert_ptr_nonnull(rc_strerror(RC_E_SPILL));
}
END_TEST

static Suite *args_suite(void)
{
  Suite *s = suite_create("args");
  TCase *tc = tcase_create("args");
  tcase_add_test(tc, pool_functions);
  tcase_add_test(tc, response_lifecycle);
  tcase_add_test(tc, readers);
  tcase_add_test(tc, strings);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite(args_suite()); }
