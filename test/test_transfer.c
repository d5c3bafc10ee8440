/* Integration: real libcurl transfers over loopback against the tests' own
 * server, through rc_attach. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* One transfer of path into resp; returns rc_result. */
static rc_code fetch(rc_response *resp, const char *path, long follow, CURLcode *ccp)
{
  char url[512];
  CURL *e = curl_easy_init();
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(rc_attach(resp, e), RC_OK);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, path, url, sizeof url));
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, follow);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, 20L);
  CURLcode cc = curl_easy_perform(e);
  if (ccp)
    *ccp = cc;
  curl_easy_cleanup(e);
  return rc_result(resp, cc);
}

static const struct {
  const char *path;
  size_t n;
} bodies[] = {
    {"/bytes?n=0", 0},
    {"/bytes?n=1", 1},
    {"/bytes?n=100000", 100000},
    {"/bytes?n=100000&te=chunked&write=7", 100000},
    {"/bytes?n=300000&te=close", 300000},
    {"/bytes?n=5000&write=1&te=chunked", 5000},
    {"/bytes?n=8M", 8 * MiB},
};

START_TEST(fixed_chunked_close)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
    ck_assert_int_eq(fetch(r, bodies[i].path, 0, NULL), RC_OK);
    assert_pattern(rc_body(r), bodies[i].n);
    ck_assert_int_eq(rc_status(r), 200);
    ck_assert_uint_eq(rc_hop_count(r), 1);
    rc_response_reset(r);
  }
  rc_response_free(r);
}
END_TEST

/* A body 32 times max_memory, over every framing: byte-exact from the
 * spill file, and the pool never held more than max_memory for it. The
 * same through gzip, where the limit counts decoded bytes. */
START_TEST(large_bodies_spill)
{
  static const struct {
    const char *path;
    size_t n;
  } big[] = {
      {"/bytes?n=32M", 32 * MiB},
      {"/bytes?n=32M&te=chunked", 32 * MiB},
      {"/bytes?n=32M&te=close", 32 * MiB},
      {"/gzip?n=12M&coding=gzip", 12 * MiB},
      {"/gzip?n=12M&coding=deflate&te=chunked&write=7000", 12 * MiB},
  };
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = 64 * MiB;
  lim.max_memory = 1 * MiB;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(p, &lim, &r), RC_OK);
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    ck_assert_int_eq(fetch(r, big[i].path, 0, NULL), RC_OK);
    ck_assert(rc_body_spilled(r));
    assert_pattern(rc_body(r), big[i].n);
    rc_pool_stats st = pool_stats(p);
    /* max_memory + its NUL, growth slack up to a chunk, one header block */
    ck_assert_uint_le(st.peak_in_use, 1 * MiB + 1 + 32 * KiB + 4 * KiB);
    rc_response_reset(r);
  }
  rc_response_free(r);
  rc_pool_free(p);
}
END_TEST

START_TEST(redirects_keep_every_hop)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(fetch(r, "/redirect?n=3&code=301&to=%2Fbytes%3Fn%3D1000", 1, NULL), RC_OK);
  ck_assert_uint_eq(rc_hop_count(r), 5); /* 301 x3, the 302 to the target, 200 */
  rc_hop_info h;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rc_hop(r, i, &h), RC_OK);
    ck_assert_int_eq(h.status, 301);
    rc_view loc;
    ck_assert_int_eq(rc_header(r, i, "location", 0, &loc), RC_OK);
    ck_assert(loc.len > 0);
  }
  ck_assert_int_eq(rc_hop(r, 3, &h), RC_OK);
  ck_assert_int_eq(h.status, 302);
  ck_assert_int_eq(rc_status(r), 200);
  assert_pattern(rc_body(r), 1000); /* redirect bodies are not kept */

  /* Not following: the redirect is the last hop, its body the body. */
  rc_response_reset(r);
  ck_assert_int_eq(fetch(r, "/redirect?n=1", 0, NULL), RC_OK);
  ck_assert_uint_eq(rc_hop_count(r), 1);
  ck_assert_int_eq(rc_status(r), 302);
  ck_assert_uint_gt(rc_body(r).len, 0);

  /* A loop ends at curl's redirect limit or the hop cap, with a clear code. */
  rc_response_reset(r);
  CURLcode cc;
  rc_code rc = fetch(r, "/loop", 1, &cc);
  ck_assert_int_eq(rc, RC_E_HOP_CAP);
  ck_assert_uint_eq(rc_hop_count(r), 16);
  rc_response_free(r);
}
END_TEST

START_TEST(informational_hops)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(fetch(r, "/hints?n=100", 0, NULL), RC_OK);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_hop_info h;
  rc_hop(r, 0, &h);
  ck_assert_int_eq(h.status, 103);
  rc_view v;
  ck_assert_int_eq(rc_header(r, 0, "Link", 0, &v), RC_OK);
  ck_assert_int_eq(rc_status(r), 200);
  assert_pattern(rc_body(r), 100);
  rc_response_reset(r);

  /* POST with Expect: 100-continue sees a 100 hop first. */
  char url[256];
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  static char payload[2048];
  memset(payload, 'p', sizeof payload);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/bytes?n=10", url, sizeof url));
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, payload);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)sizeof payload);
  struct curl_slist *hdrs = curl_slist_append(NULL, "Expect: 100-continue");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(e);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_hop(r, 0, &h);
  ck_assert_int_eq(h.status, 100);
  assert_pattern(rc_body(r), 10);
  rc_response_free(r);
}
END_TEST

START_TEST(trailers_kept)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(fetch(r, "/trailers?n=5000", 0, NULL), RC_OK);
  assert_pattern(rc_body(r), 5000);
  rc_view v;
  ck_assert_int_eq(rc_trailer(r, "X-Count", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 4);
  ck_assert_mem_eq(v.ptr, "5000", 4);
  ck_assert_int_eq(rc_trailer(r, "x-checksum", 0, &v), RC_OK);
  unsigned char *b = malloc(5000);
  ts_pattern_fill(b, 0, 5000);
  char want[16];
  snprintf(want, sizeof want, "%08lx", crc32(0, b, 5000));
  free(b);
  ck_assert_uint_eq(v.len, strlen(want));
  ck_assert(strncasecmp(v.ptr, want, v.len) == 0);
  ck_assert_int_eq(rc_header(r, -1, "Trailer", 0, &v), RC_OK);
  rc_response_free(r);
}
END_TEST

START_TEST(empty_204_head)
{
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_response *r;
  ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_OK);
  const char *paths[] = {"/status?code=204", "/bytes?n=0", "/status?code=304"};
  for (size_t i = 0; i < 3; i++) {
    ck_assert_int_eq(fetch(r, paths[i], 0, NULL), RC_OK);
    ck_assert_uint_eq(rc_body(r).len, 0);
    ck_assert_str_eq(rc_body(r).ptr, "");
    rc_pool_stats st;
    rc_pool_stats_get(p, &st);
    ck_assert_uint_eq(st.acquisitions - st.releases, 1); /* headers only */
    rc_response_reset(r);
  }
  char url[256];
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/bytes?n=100000", url, sizeof url));
  curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  curl_easy_cleanup(e);
  ck_assert_uint_eq(rc_body(r).len, 0);
  rc_view v;
  ck_assert_int_eq(rc_header(r, -1, "Content-Length", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 6);
  rc_response_free(r);
  rc_pool_free(p);
}
END_TEST

START_TEST(cap_on_real_transfers)
{
  size_t cap = 1 * MiB;
  rc_response *r = new_response(NULL, cap, RC_CAP_STOP);
  CURLcode cc;
  ck_assert_int_eq(fetch(r, "/bytes?n=8M", 0, &cc), RC_TRUNCATED);
  ck_assert_int_eq(cc, CURLE_WRITE_ERROR);
  assert_pattern(rc_body(r), cap);
  rc_response_free(r);

  r = new_response(NULL, cap, RC_CAP_DRAIN);
  ck_assert_int_eq(fetch(r, "/bytes?n=3M&te=chunked", 0, &cc), RC_TRUNCATED);
  ck_assert_int_eq(cc, CURLE_OK);
  assert_pattern(rc_body(r), cap);
  rc_response_free(r);

  r = new_response(NULL, cap, RC_CAP_REJECT);
  ck_assert_int_eq(fetch(r, "/bytes?n=3M", 0, &cc), RC_E_TOO_LARGE);
  ck_assert_uint_eq(rc_body(r).len, 0);
  rc_response_free(r);
}
END_TEST

/* A write callback that counts the bytes into *userdata. */
static size_t count_bytes(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  (void)ptr;
  *(size_t *)userdata += size * nmemb;
  return size * nmemb;
}

START_TEST(attach_sets_only_its_options)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  char url[256];
  CURL *e = curl_easy_init();
  int mine = 42;
  curl_easy_setopt(e, CURLOPT_PRIVATE, &mine);
  ck_assert_int_eq(rc_attach(r, e), RC_OK);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/echo", url, sizeof url));
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  void *priv = NULL;
  curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
  ck_assert_ptr_eq(priv, &mine);
  /* The request asked for compression. */
  ck_assert_ptr_nonnull(strstr(rc_body(r).ptr, "Accept-Encoding: gzip, deflate"));
  ck_assert_int_eq(rc_detach(r, e), RC_OK);
  ck_assert_int_eq(rc_attach(NULL, e), RC_E_INVAL);
  ck_assert_int_eq(rc_attach(r, NULL), RC_E_INVAL);
  /* Detached, the handle calls nothing of the response's any more (with
   * curl 8.21 that includes CURLOPT_PREREQFUNCTION): it serves a transfer
   * after the response is gone. */
  rc_response_free(r);
  size_t seen = 0;
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, count_bytes);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &seen);
  ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
  ck_assert_uint_gt(seen, 0);
  curl_easy_cleanup(e);
}
END_TEST

/* Callbacks set by hand, with curl's own decoding on: the response does not
 * decode again. */
START_TEST(manual_callbacks_curl_decodes)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  char url[256];
  CURL *e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rc_write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, rc_header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/gzip?n=200000&coding=gzip", url, sizeof url));
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  curl_easy_cleanup(e);
  assert_pattern(rc_body(r), 200000);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_NOT_DECODED);
  rc_response_free(r);
}
END_TEST

/* Through an HTTP proxy tunnel the CONNECT response is a hop of its own. */
START_TEST(proxy_connect_hop)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  char url[256], proxy[64];
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", ts_port(srv));
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/bytes?n=777", url, sizeof url));
  curl_easy_setopt(e, CURLOPT_PROXY, proxy);
  curl_easy_setopt(e, CURLOPT_HTTPPROXYTUNNEL, 1L);
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  curl_easy_cleanup(e);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_hop_info h;
  rc_hop(r, 0, &h);
  ck_assert_int_eq(h.status, 200);
  ck_assert_uint_eq(h.reason.len, strlen("Connection established"));
  ck_assert_int_eq(rc_status(r), 200);
  assert_pattern(rc_body(r), 777);
  rc_response_free(r);
}
END_TEST

/* An authentication round: the 401 challenge is a hop, its body dropped. */
START_TEST(auth_round_hop)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  char url[256];
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/auth?n=500", url, sizeof url));
  curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_ANY);
  curl_easy_setopt(e, CURLOPT_USERPWD, "user:secret");
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  curl_easy_cleanup(e);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_hop_info h;
  rc_hop(r, 0, &h);
  ck_assert_int_eq(h.status, 401);
  rc_view v;
  ck_assert_int_eq(rc_header(r, 0, "WWW-Authenticate", 0, &v), RC_OK);
  ck_assert_int_eq(rc_status(r), 200);
  assert_pattern(rc_body(r), 500);
  rc_response_free(r);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("transfer");
  TCase *tc = tcase_create("transfer");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fixed_chunked_close);
  tcase_add_test(tc, large_bodies_spill);
  tcase_add_test(tc, redirects_keep_every_hop);
  tcase_add_test(tc, informational_hops);
  tcase_add_test(tc, trailers_kept);
  tcase_add_test(tc, empty_204_head);
  tcase_add_test(tc, cap_on_real_transfers);
  tcase_add_test(tc, attach_sets_only_its_options);
  tcase_add_test(tc, manual_callbacks_curl_decodes);
  tcase_add_test(tc, proxy_connect_hop);
  tcase_add_test(tc, auth_round_hop);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
