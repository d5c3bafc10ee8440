/* Hostile servers: lying lengths, cut connections, huge and countless
 * headers, bodies dripped a byte at a time, bogus chunking, redirect loops.
 * Each ends with the right body or a clear typed error, within the caps. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* CURLE_TOO_LARGE (100) is named in curl's headers from 8.6.0 on. */
#if LIBCURL_VERSION_NUM >= 0x080600
#define CC_TOO_LARGE CURLE_TOO_LARGE
#else
#define CC_TOO_LARGE ((CURLcode)100)
#endif

struct run {
  rc_code rc;
  CURLcode cc;
  size_t peak; /* the pool's peak bytes in use */
  rc_response *r;
  rc_pool *p;
};

/* One transfer on a fresh pool; the caller frees with done(). */
static struct run fetch(const char *path, const rc_limits *lim, long maxredirs)
{
  struct run x;
  ck_assert_int_eq(rc_pool_new(NULL, &x.p), RC_OK);
  ck_assert_int_eq(rc_response_new(x.p, lim, &x.r), RC_OK);
  char url[256];
  CURL *e = curl_easy_init();
  rc_attach(x.r, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, path, url, sizeof url));
  if (maxredirs) {
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, maxredirs);
  }
  x.cc = curl_easy_perform(e);
  curl_easy_cleanup(e);
  x.rc = rc_result(x.r, x.cc);
  rc_pool_stats st;
  rc_pool_stats_get(x.p, &st);
  x.peak = st.peak_in_use;
  return x;
}

static void done(struct run *x)
{
  rc_response_free(x->r);
  rc_pool_free(x->p);
}

static void assert_prefix(rc_view v, size_t n)
{
  ck_assert_uint_eq(v.len, n);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)v.ptr[i] != ts_pattern_byte(i))
      ck_abort_msg("byte %zu differs", i);
}

/* Claims 4 GiB, sends 10 bytes: costs about 10 bytes, keeps them. */
START_TEST(length_lie)
{
  struct run x = fetch("/lie?claim=4G&send=10", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_TRANSFER);
  ck_assert_int_eq(x.cc, CURLE_PARTIAL_FILE);
  assert_prefix(rc_body(x.r), 10);
  ck_assert_uint_le(x.peak, 32 * KiB + 4 * KiB + 1);
  done(&x);
  /* The same lie under the reject policy is refused at the headers. */
  rc_limits lim;
  rc_limits_init(&lim);
  lim.on_cap = RC_CAP_REJECT;
  x = fetch("/lie?claim=4G&send=10", &lim, 0);
  ck_assert_int_eq(x.rc, RC_E_TOO_LARGE);
  ck_assert_uint_eq(rc_body(x.r).len, 0);
  done(&x);
}
END_TEST

START_TEST(cut_mid_body)
{
  struct run x = fetch("/cut?n=1M&at=300000", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_TRANSFER);
  ck_assert_int_eq(x.cc, CURLE_PARTIAL_FILE);
  assert_prefix(rc_body(x.r), 300000); /* what was read is kept */
  done(&x);
}
END_TEST

START_TEST(huge_header_line)
{
  /* Over the header cap but under curl's own line limit: ours speaks. */
  struct run x = fetch("/bigheader?size=70000", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_HEADER_CAP);
  ck_assert_uint_eq(rc_hop_count(x.r), 1);
  rc_hop_info h;
  rc_hop(x.r, 0, &h);
  ck_assert_uint_le(h.raw.len, 64 * KiB);
  ck_assert_uint_le(x.peak, 64 * KiB + 4 * KiB);
  done(&x);
  /* 1 MiB in one line: curl refuses it before the callback. */
  x = fetch("/bigheader?size=1M", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_TRANSFER);
  ck_assert_int_ne(x.cc, CURLE_OK);
  ck_assert_uint_le(x.peak, 64 * KiB + 4 * KiB);
  done(&x);
}
END_TEST

START_TEST(countless_headers)
{
  struct run x = fetch("/manyheaders?count=20000", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_HEADER_CAP);
  rc_hop_info h;
  ck_assert_int_eq(rc_hop(x.r, 0, &h), RC_OK);
  ck_assert_int_eq(h.status, 200);
  ck_assert_uint_le(h.raw.len, 64 * KiB);
  rc_view v;
  ck_assert_int_eq(rc_header(x.r, 0, "X-H1", 0, &v), RC_OK); /* kept */
  ck_assert_uint_le(x.peak, 64 * KiB + 4 * KiB);
  done(&x);
  /* Within a larger cap (and curl's own limits) they are all there. */
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_header_bytes = 1 * MiB;
  if (curl_at_least(0x080e00)) {
    /* curl 8.14.0 accepts at most 5000 response headers per transfer
     * (MAX_HTTP_RESP_HEADER_COUNT) and fails with CURLE_TOO_LARGE past
     * them: 4990 are kept, 5000 and Content-Length are refused. */
    x = fetch("/manyheaders?count=4990", &lim, 0);
    ck_assert_int_eq(x.rc, RC_OK);
    ck_assert_int_eq(rc_header(x.r, 0, "x-h4989", 0, &v), RC_OK);
    ck_assert_uint_eq(v.len, 5);
    ck_assert_mem_eq(v.ptr, "v4989", 5);
    done(&x);
    x = fetch("/manyheaders?count=5000", &lim, 0);
    ck_assert_int_eq(x.rc, RC_E_TRANSFER);
    ck_assert_int_eq(x.cc, CC_TOO_LARGE);
    done(&x);
    return;
  }
  x = fetch("/manyheaders?count=5000", &lim, 0);
  ck_assert_int_eq(x.rc, RC_OK);
  ck_assert_int_eq(rc_header(x.r, 0, "x-h4999", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 5);
  ck_assert_mem_eq(v.ptr, "v4999", 5);
  done(&x);
}
END_TEST

START_TEST(dripped_body)
{
  struct run x = fetch("/bytes?n=3000&write=1&delay_us=50&te=chunked", NULL, 0);
  ck_assert_int_eq(x.rc, RC_OK);
  assert_prefix(rc_body(x.r), 3000);
  done(&x);
  x = fetch("/gzip?n=20000&coding=gzip&write=1&delay_us=20", NULL, 0);
  ck_assert_int_eq(x.rc, RC_OK);
  assert_prefix(rc_body(x.r), 20000);
  done(&x);
}
END_TEST

START_TEST(bogus_chunk_size)
{
  struct run x = fetch("/badchunk", NULL, 0);
  ck_assert_int_eq(x.rc, RC_E_TRANSFER);
  ck_assert_int_ne(x.cc, CURLE_OK);
  assert_prefix(rc_body(x.r), 10); /* the valid chunk before it */
  done(&x);
}
END_TEST

START_TEST(redirect_loop)
{
  /* curl's limit first ... */
  struct run x = fetch("/loop", NULL, 5);
  ck_assert_int_eq(x.rc, RC_E_TRANSFER);
  ck_assert_int_eq(x.cc, CURLE_TOO_MANY_REDIRECTS);
  ck_assert_uint_eq(rc_hop_count(x.r), 6);
  done(&x);
  /* ... or the hop cap, whichever comes first. */
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_hops = 3;
  x = fetch("/loop", &lim, 100);
  ck_assert_int_eq(x.rc, RC_E_HOP_CAP);
  ck_assert_uint_eq(rc_hop_count(x.r), 3);
  done(&x);
}
END_TEST

START_TEST(informational_and_trailers)
{
  struct run x = fetch("/hints?n=50", NULL, 0);
  ck_assert_int_eq(x.rc, RC_OK);
  ck_assert_uint_eq(rc_hop_count(x.r), 2);
  ck_assert_int_eq(rc_status(x.r), 200);
  assert_prefix(rc_body(x.r), 50);
  done(&x);
  x = fetch("/trailers?n=100000", NULL, 0);
  ck_assert_int_eq(x.rc, RC_OK);
  rc_view v;
  ck_assert_int_eq(rc_trailer(x.r, "X-Count", 0, &v), RC_OK);
  assert_prefix(rc_body(x.r), 100000);
  done(&x);
  const char *empty[] = {"/status?code=204", "/status?code=304"};
  for (int i = 0; i < 2; i++) {
    x = fetch(empty[i], NULL, 0);
    ck_assert_int_eq(x.rc, RC_OK);
    ck_assert_uint_eq(rc_body(x.r).len, 0);
    done(&x);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("hostile");
  TCase *tc = tcase_create("hostile");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, length_lie);
  tcase_add_test(tc, cut_mid_body);
  tcase_add_test(tc, huge_header_line);
  tcase_add_test(tc, countless_headers);
  tcase_add_test(tc, dripped_body);
  tcase_add_test(tc, bogus_chunk_size);
  tcase_add_test(tc, redirect_loop);
  tcase_add_test(tc, informational_and_trailers);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
