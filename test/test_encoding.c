/* Content decoding over real transfers: every coding byte-exact in several
 * network chunkings, bombs stopped at the cap, corrupt streams reported,
 * chains refused past the limit, unknown codings kept raw, and decoding
 * under a memory budget. br and zstd are decoded when the library is built
 * with them and kept raw (RC_ENC_UNSUPPORTED) when not; either way the
 * server must be able to encode them when the library decodes them. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h" /* RC_HAVE_BROTLI, RC_HAVE_ZSTD */
#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

struct got {
  rc_code rc;
  CURLcode cc;
  curl_off_t wire;
};

static struct got fetch(rc_response *resp, const char *path)
{
  char url[512];
  CURL *e = curl_easy_init();
  rc_attach(resp, e);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, path, url, sizeof url));
  struct got g;
  g.cc = curl_easy_perform(e);
  g.rc = rc_result(resp, g.cc);
  curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &g.wire);
  curl_easy_cleanup(e);
  return g;
}

static const char *const codings[] = {"gzip", "x-gzip", "GZIP", "deflate", "deflate-raw", "gzip2"};
static const char *const framings[] = {"", "&te=chunked", "&te=chunked&write=7",
                                       "&write=1&te=chunked", "&te=close"};

/* The server's br and zstd codings (see server.h), alone and stacked. */
static const char *const brz_codings[] = {"br",      "BR",      "zstd",      "ZSTD",
                                          "br-gzip", "gzip-br", "zstd-gzip", "gzip-zstd",
                                          "br-zstd", "zstd-br"};

/* Whether the library decodes every coding that the server's coding name
 * c involves; with needs_server, whether the server can also send it. */
static int decodes(const char *c)
{
  return (!strstr(c, "br") && !strstr(c, "BR")) || RC_HAVE_BROTLI
             ? (!strstr(c, "zstd") && !strstr(c, "ZSTD")) || RC_HAVE_ZSTD
             : 0;
}

static int server_sends(const char *c)
{
  int br = strstr(c, "br") || strstr(c, "BR"), zs = strstr(c, "zstd") || strstr(c, "ZSTD");
  return (!br || ts_can_encode("br")) && (!zs || ts_can_encode("zstd"));
}

/* Decoded when the library decodes it, else kept exactly as received. */
static void check_coded(rc_response *r, const char *path, const char *c, size_t n, struct got g)
{
  ck_assert_msg(g.rc == RC_OK, "%s: %s", path, rc_strerror(g.rc));
  ck_assert_int_lt(g.wire, (curl_off_t)n); /* it was compressed on the wire */
  if (decodes(c)) {
    ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
    assert_pattern(rc_body(r), n);
  } else {
    ck_assert_int_eq(rc_body_encoding(r), RC_ENC_UNSUPPORTED);
    ck_assert_uint_eq(rc_body(r).len, (size_t)g.wire);
  }
}

/* A library that decodes br or zstd must be tested against real streams:
 * a server built without the encoder fails here instead of skipping. */
START_TEST(server_encodes_what_is_decoded)
{
  ck_assert_msg(!RC_HAVE_BROTLI || ts_can_encode("br"),
                "br is decoded, but the test server was built without libbrotlienc");
  ck_assert_msg(!RC_HAVE_ZSTD || ts_can_encode("zstd"),
                "zstd is decoded, but the test server was built without libzstd");
}
END_TEST

START_TEST(br_zstd_every_framing)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  for (size_t c = 0; c < sizeof brz_codings / sizeof brz_codings[0]; c++) {
    if (!server_sends(brz_codings[c]))
      continue;
    for (size_t f = 0; f < sizeof framings / sizeof framings[0]; f++) {
      size_t n = f == 3 ? 3000 : 300000;
      char path[160];
      snprintf(path, sizeof path, "/gzip?n=%zu&coding=%s%s", n, brz_codings[c], framings[f]);
      check_coded(r, path, brz_codings[c], n, fetch(r, path));
      rc_response_reset(r);
    }
  }
  /* zstd frames one after another make one body. */
  if (server_sends("zstd")) {
    const char *path = "/gzip?n=500000&coding=zstd&members=5&te=chunked";
    check_coded(r, path, "zstd", 500000, fetch(r, path));
  }
  rc_response_free(r);
}
END_TEST

START_TEST(every_coding_every_framing)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  for (size_t c = 0; c < sizeof codings / sizeof codings[0]; c++) {
    for (size_t f = 0; f < sizeof framings / sizeof framings[0]; f++) {
      size_t n = f == 3 ? 3000 : 300000; /* byte-at-a-time only for a small one */
      char path[160];
      snprintf(path, sizeof path, "/gzip?n=%zu&coding=%s%s", n, codings[c], framings[f]);
      struct got g = fetch(r, path);
      ck_assert_msg(g.rc == RC_OK, "%s: %s", path, rc_strerror(g.rc));
      ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
      assert_pattern(rc_body(r), n);
      ck_assert_int_lt(g.wire, (curl_off_t)n); /* it was compressed on the wire */
      rc_response_reset(r);
    }
  }
  rc_response_free(r);
}
END_TEST

START_TEST(members_identity_and_unknown)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(fetch(r, "/gzip?n=500000&coding=gzip&members=5&te=chunked").rc, RC_OK);
  assert_pattern(rc_body(r), 500000);
  rc_response_reset(r);

  ck_assert_int_eq(fetch(r, "/gzip?n=1000&coding=identity").rc, RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_IDENTITY);
  assert_pattern(rc_body(r), 1000);
  rc_response_reset(r);

  ck_assert_int_eq(fetch(r, "/encoding?value=compress&n=1000").rc, RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_UNSUPPORTED);
  assert_pattern(rc_body(r), 1000); /* kept as received */
  rc_response_reset(r);

  ck_assert_int_eq(fetch(r, "/encoding?value=gzip%2C%20x-unknown&n=1000").rc, RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_UNSUPPORTED);
  rc_response_reset(r);

  /* Pattern bytes labelled br: not a br stream, when br is decoded. */
  struct got g = fetch(r, "/encoding?value=br&n=1000");
  ck_assert_int_eq(g.rc, RC_HAVE_BROTLI ? RC_E_DECODE : RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_HAVE_BROTLI ? RC_ENC_DECODED : RC_ENC_UNSUPPORTED);
  rc_response_free(r);
}
END_TEST

START_TEST(chain_limit)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_codings = 3;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  struct got g = fetch(r, "/encoding?value=gzip,gzip,deflate,gzip&n=1000");
  ck_assert_int_eq(g.rc, RC_E_CODINGS);
  ck_assert_int_eq(g.cc, CURLE_WRITE_ERROR);
  ck_assert_uint_eq(rc_body(r).len, 0);
  ck_assert_str_eq(rc_strerror(g.rc), "Content-Encoding chain longer than the limit");
  rc_response_reset(r);
  g = fetch(r, "/encoding?value=gzip,gzip,gzip,gzip,gzip,gzip&n=1000");
  if (curl_at_least(0x080500) || !curl_at_least(0x075301)) {
    /* curl 8.5.0 (client writers, "part 2") ignores Content-Encoding when
     * its own decoding is off, before counting codings, and curl before
     * 7.83.1 counts none: the chain reaches respchain, and its limit
     * refuses it. */
    ck_assert_int_eq(g.rc, RC_E_CODINGS);
    ck_assert_int_eq(g.cc, CURLE_WRITE_ERROR);
    ck_assert_uint_eq(rc_body(r).len, 0);
  } else {
    /* Past 5, curl 7.83.1 to 8.4 refuses the response itself
     * (CVE-2022-32206). */
    ck_assert_int_eq(g.rc, RC_E_TRANSFER);
    ck_assert_int_eq(g.cc, CURLE_BAD_CONTENT_ENCODING);
  }
  rc_response_free(r);
}
END_TEST

/* A gzip of 1 GiB of zeros (about 1 MiB on the wire) at an 8 MiB cap: the
 * body is exactly 8 MiB of zeros, only a prefix of the stream is read, and
 * memory stays near the cap; plain, nested and chunked. */
START_TEST(bombs_stop_at_cap)
{
  const char *paths[] = {"/bomb", "/bomb?nest=2", "/bomb?te=chunked", "/bomb?nest=2&te=chunked"};
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  char *zeros = calloc(1, 8 * MiB);
  for (size_t i = 0; i < 4; i++) {
    rc_response *r;
    ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_OK);
    ca.peak_bytes = ca.live_bytes;
    struct got g = fetch(r, paths[i]);
    ck_assert_msg(g.rc == RC_TRUNCATED, "%s: %s", paths[i], rc_strerror(g.rc));
    ck_assert(rc_truncated(r));
    rc_view b = rc_body(r);
    ck_assert_uint_eq(b.len, 8 * MiB);
    ck_assert(memcmp(b.ptr, zeros, b.len) == 0);
    ck_assert_int_lt(g.wire, 512 * 1024); /* a prefix of about 1 MiB */
    rc_pool_stats st;
    rc_pool_stats_get(p, &st);
    /* The cap, the header block, and for a moment the small block whose
     * bytes move into a reused large one (under 512 KiB). */
    ck_assert_uint_le(st.peak_in_use, 8 * MiB + 512 * KiB + 64 * KiB);
    /* All memory for it, zlib's state included, stays near the cap. */
    ck_assert_uint_le(ca.peak_bytes, 8 * MiB + 512 * KiB + 512 * KiB);
    rc_response_free(r);
  }
  free(zeros);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* br and zstd bombs of 1 GiB of zeros (br: 16 MiB window, zstd: 8 MiB),
 * alone and stacked with gzip, at an 8 MiB cap: exactly 8 MiB of zeros,
 * a prefix of the wire read, and all memory (the decoders' windows
 * included) within the cap, what the window costs, and a margin. The br
 * ring buffer grows with the output and, while it moves from 8 to 16 MiB,
 * both exist. */
START_TEST(br_zstd_bombs_stop_at_cap)
{
  static const struct {
    const char *path;
    size_t window;
  } bombs[] = {
      {"/bomb?coding=br", 24 * MiB},         {"/bomb?coding=br&te=chunked", 24 * MiB},
      {"/bomb?coding=br&nest=2", 24 * MiB},  {"/bomb?coding=gzip&nest=2&wrap=br", 6 * MiB},
      {"/bomb?coding=zstd", 8 * MiB},        {"/bomb?coding=zstd&te=chunked", 8 * MiB},
      {"/bomb?coding=zstd&nest=2", 8 * MiB}, {"/bomb?coding=gzip&nest=2&wrap=zstd", 3 * MiB},
  };
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  char *zeros = calloc(1, 8 * MiB);
  for (size_t i = 0; i < sizeof bombs / sizeof bombs[0]; i++) {
    const char *path = bombs[i].path;
    if (!server_sends(path))
      continue;
    rc_response *r;
    ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_OK);
    ca.peak_bytes = ca.live_bytes;
    struct got g = fetch(r, path);
    rc_view b = rc_body(r);
    if (!decodes(path)) {
      ck_assert_int_eq(rc_body_encoding(r), RC_ENC_UNSUPPORTED);
      ck_assert_int_lt(b.len, 8 * MiB); /* a few hundred KiB, kept raw */
      rc_response_free(r);
      continue;
    }
    ck_assert_msg(g.rc == RC_TRUNCATED, "%s: %s", path, rc_strerror(g.rc));
    ck_assert_uint_eq(b.len, 8 * MiB);
    ck_assert(memcmp(b.ptr, zeros, b.len) == 0);
    ck_assert_int_lt(g.wire, 128 * 1024); /* of 64-210 KiB */
    /* What the decoders may hold (see the comment above). */
    ck_assert_uint_le(ca.peak_bytes, 8 * MiB + bombs[i].window + 1 * MiB);
    rc_response_free(r);
  }
  free(zeros);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* curl's own decoders (not respchain's) find the server's br and zstd
 * bombs to be exactly size zero bytes: the repeated segments are sound. */
static size_t count_zeros(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  size_t *count = userdata, n = size * nmemb;
  for (size_t i = 0; i < n; i++)
    if (ptr[i] != 0)
      return 0;
  *count += n;
  return n;
}

START_TEST(br_zstd_bombs_are_zeros)
{
  const char *paths[] = {"/bomb?coding=br&size=64M", "/bomb?coding=zstd&size=64M"};
  for (size_t i = 0; i < 2; i++) {
    if (!server_sends(paths[i]))
      continue;
    char url[128];
    size_t count = 0;
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, paths[i], url, sizeof url));
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, count_zeros);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &count);
    CURLcode cc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    if (cc == CURLE_BAD_CONTENT_ENCODING)
      continue; /* this libcurl cannot decode it */
    ck_assert_msg(cc == CURLE_OK, "%s: %s", paths[i], curl_easy_strerror(cc));
    ck_assert_uint_eq(count, 64 * MiB);
  }
}
END_TEST

START_TEST(bomb_drained)
{
  rc_response *r = new_response(NULL, 1 * MiB, RC_CAP_DRAIN);
  struct got g = fetch(r, "/bomb?size=64M");
  ck_assert_int_eq(g.rc, RC_TRUNCATED);
  ck_assert_int_eq(g.cc, CURLE_OK); /* the rest was read, not inflated */
  ck_assert_uint_eq(rc_body(r).len, 1 * MiB);
  rc_response_free(r);
}
END_TEST

START_TEST(corrupt_streams)
{
  const char *kinds[] = {"magic", "crc", "length", "truncated", "junk"};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  for (size_t i = 0; i < 5; i++) {
    char path[96];
    snprintf(path, sizeof path, "/corrupt?kind=%s&n=200000", kinds[i]);
    struct got g = fetch(r, path);
    ck_assert_msg(g.rc == RC_E_DECODE, "%s: %s", kinds[i], rc_strerror(g.rc));
    /* The bytes decoded before the defect are kept, and are right. */
    rc_view b = rc_body(r);
    unsigned char *want = malloc(200000);
    ts_pattern_fill(want, 0, 200000);
    ck_assert_uint_le(b.len, 200000);
    ck_assert(memcmp(b.ptr, want, b.len) == 0);
    if (strcmp(kinds[i], "crc") == 0 || strcmp(kinds[i], "junk") == 0)
      ck_assert_uint_eq(b.len, 200000);
    free(want);
    rc_response_reset(r);
  }
  /* br and zstd: cut short, junk after the end, a window over the limits;
   * zstd also a spoiled checksum (found before the last block is out). */
  const char *brz[] = {"br&kind=truncated",   "br&kind=junk",   "br&kind=window",
                       "zstd&kind=truncated", "zstd&kind=junk", "zstd&kind=window",
                       "zstd&kind=crc"};
  for (size_t i = 0; i < sizeof brz / sizeof brz[0]; i++) {
    char path[96];
    snprintf(path, sizeof path, "/corrupt?coding=%s&n=200000", brz[i]);
    if (!server_sends(path))
      continue;
    struct got g = fetch(r, path);
    rc_view b = rc_body(r);
    if (!decodes(path)) {
      ck_assert_int_eq(g.rc, RC_OK);
      ck_assert_uint_eq(b.len, (size_t)g.wire);
      rc_response_reset(r);
      continue;
    }
    ck_assert_msg(g.rc == RC_E_DECODE, "%s: %s", path, rc_strerror(g.rc));
    unsigned char *want = malloc(200000);
    ts_pattern_fill(want, 0, 200000);
    ck_assert_uint_le(b.len, 200000);
    ck_assert(memcmp(b.ptr, want, b.len) == 0);
    if (strstr(path, "junk"))
      ck_assert_uint_eq(b.len, 200000);
    if (strstr(path, "window"))
      ck_assert_uint_eq(b.len, 0);
    free(want);
    rc_response_reset(r);
  }
  /* Cut mid-stream by the network: the transfer error comes first. */
  ck_assert_int_eq(fetch(r, "/cut?n=1000&at=500").rc, RC_E_TRANSFER);
  rc_response_free(r);
}
END_TEST

START_TEST(raw_kept_on_request)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_raw = 1 * MiB;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  struct got g = fetch(r, "/gzip?n=300000&coding=gzip");
  ck_assert_int_eq(g.rc, RC_OK);
  assert_pattern(rc_body(r), 300000);
  rc_view raw = rc_raw_body(r);
  ck_assert_uint_eq(raw.len, (size_t)g.wire);
  ck_assert_int_eq((unsigned char)raw.ptr[0], 0x1f);
  ck_assert(!rc_raw_truncated(r));
  rc_response_reset(r);

  lim.max_raw = 100;
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
  ck_assert_int_eq(fetch(r, "/gzip?n=300000&coding=gzip").rc, RC_OK);
  ck_assert_uint_eq(rc_raw_body(r).len, 100);
  ck_assert(rc_raw_truncated(r));
  assert_pattern(rc_body(r), 300000);
  rc_response_free(r);
}
END_TEST

/* Decoding can be left to curl: attach, then hand decoding back. */
START_TEST(decoding_off)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  char url[256];
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 1L);
  ck_assert_int_eq(rc_response_set_decoding(r, 0), RC_OK);
  curl_easy_setopt(e, CURLOPT_URL, ts_url(srv, "/gzip?n=100000&coding=gzip", url, sizeof url));
  ck_assert_int_eq(rc_result(r, curl_easy_perform(e)), RC_OK);
  assert_pattern(rc_body(r), 100000);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_NOT_DECODED);
  curl_easy_cleanup(e);
  rc_response_free(r);
}
END_TEST

/* Decoded bodies under a budget: many at once, all byte-exact. */
START_TEST(decoding_under_budget)
{
  rc_pool *p = pool_with_budget(4 * MiB, RC_OVERFLOW_AUTO);
  enum { N = 12 };
  multi_burst(p, "/gzip?n=2M&coding=gzip2&te=chunked", N, N, 2 * MiB, 1);
  rc_pool_stats st;
  rc_pool_stats_get(p, &st);
  /* Kept back at rc_multi_add, all 12 added at once: each in alone, until
   * its status line (8.1 to 8.6). */
  if (curl_keeps_back_fresh(RC_OVERFLOW_AUTO))
    ck_assert_uint_gt(st.deferrals, 0);
  /* Budget, one response past it, and at most one slice's output for each
   * transfer in flight. */
  ck_assert_uint_le(st.peak_in_use, 4 * MiB + (8 * MiB + 1 + 4 * KiB) + N * 64 * KiB);
  /* How many bodies overlapped depends on scheduling; where none waited,
   * none was refused: the bodies held no more than the budget (slices and
   * header blocks aside). */
  if (st.pauses == 0)
    ck_assert_uint_le(st.peak_in_use, 4 * MiB + N * (64 + 4) * KiB);
  rc_pool_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("encoding");
  TCase *tc = tcase_create("encoding");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, every_coding_every_framing);
  tcase_add_test(tc, server_encodes_what_is_decoded);
  tcase_add_test(tc, br_zstd_every_framing);
  tcase_add_test(tc, br_zstd_bombs_stop_at_cap);
  tcase_add_test(tc, br_zstd_bombs_are_zeros);
  tcase_add_test(tc, members_identity_and_unknown);
  tcase_add_test(tc, chain_limit);
  tcase_add_test(tc, bombs_stop_at_cap);
  tcase_add_test(tc, bomb_drained);
  tcase_add_test(tc, corrupt_streams);
  tcase_add_test(tc, raw_kept_on_request);
  tcase_add_test(tc, decoding_off);
  tcase_add_test(tc, decoding_under_budget);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
