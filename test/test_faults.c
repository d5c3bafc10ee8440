/* Allocation failure across a whole real transfer (redirects, a stacked
 * gzip body, the full response), failing the 1st, 2nd, ... allocation
 * until the transfer succeeds: every run ends in success or RC_E_NOMEM,
 * keeps a correct prefix, leaks nothing, and leaves the pool consistent. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

static int run_with_failure(const char *path, size_t n, long fail_after)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.allocator = &ca.a;
  cfg.chunk_size = 16 * 1024; /* more growth steps, more places to fail */
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  ca.fail_at = ca.calls + fail_after;

  rc_response *r = NULL;
  rc_code rc = rc_response_new(p, NULL, &r);
  int succeeded = 0;
  if (rc == RC_OK) {
    char url[256];
    CURL *e = curl_easy_init();
    rc_attach(r, e);
    curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, path, url, sizeof url));
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    CURLcode cc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    rc = rc_result(r, cc);
    rc_view full;
    rc_code frc = rc == RC_OK ? rc_full_response(r, &full) : RC_OK;
    ck_assert(frc == RC_OK || frc == RC_E_NOMEM);
    rc_view b = rc_body(r);
    ck_assert_uint_le(b.len, n);
    for (size_t i = 0; i < b.len; i++)
      if ((unsigned char)b.ptr[i] != ts_pattern_byte(i))
        ck_abort_msg("fail_after %ld: byte %zu differs", fail_after, i);
    if (rc == RC_OK) {
      ck_assert_uint_eq(b.len, n);
      succeeded = frc == RC_OK;
    } else {
      ck_assert_msg(rc == RC_E_NOMEM, "fail_after %ld: %s", fail_after, rc_strerror(rc));
    }
    rc_response_free(r);
  } else {
    ck_assert_int_eq(rc, RC_E_NOMEM);
    ck_assert_ptr_null(r);
  }
  rc_pool_stats st;
  rc_pool_stats_get(p, &st);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_uint_eq(st.acquisitions, st.releases);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
  ck_assert_uint_eq(ca.live_bytes, 0);
  return succeeded;
}

static void fail_each(const char *path, size_t n)
{
  long k = 1;
  while (!run_with_failure(path, n, k))
    ck_assert_int_lt(++k, 2000);
  fprintf(stderr, "%s: succeeded at k=%ld\n", path, k);
  ck_assert_int_gt(k, 3); /* the transfer did allocate, and failures were met */
}

START_TEST(identity_with_redirects)
{
  fail_each("/redirect?n=2&to=%2Fbytes%3Fn%3D300000%26te%3Dchunked", 300000);
}
END_TEST

START_TEST(stacked_gzip) { fail_each("/gzip?n=200000&coding=gzip2&te=chunked", 200000); }
END_TEST

START_TEST(deflate_with_trailers)
{
  fail_each("/gzip?n=100000&coding=deflate", 100000);
  fail_each("/trailers?n=70000", 70000);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("faults");
  TCase *tc = tcase_create("faults");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, identity_with_redirects);
  tcase_add_test(tc, stacked_gzip);
  tcase_add_test(tc, deflate_with_trailers);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
