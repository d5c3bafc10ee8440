/* What the header and the man pages promise a newcomer, each checked in
 * behaviour: the errors rc_pool_new and rc_response_new list, the default
 * of max_buffer, unknown cap policies refused, readers const alike, hop
 * indexes that fit an int, rc_pool_free on the default pool, hand-wired
 * callbacks that cannot pause, when a short compressed body is
 * RC_E_DECODE, rc_accept_encoding, and the multi lifecycle of
 * respchain-multi(3): a transfer that ends while it waits keeps its place
 * until its response is reset or detached. */
#include <check.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "net.h"
#include "rc_config.h"
#include "response.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* Every reader takes a const response (a compile-time check). */
#define TAKES_CONST(fn, type) _Static_assert(_Generic(&fn, type : 1, default : 0), #fn " is const")
TAKES_CONST(rc_full_response, rc_code (*)(const rc_response *, rc_view *));
TAKES_CONST(rc_body, rc_view (*)(const rc_response *));
TAKES_CONST(rc_raw_body, rc_view (*)(const rc_response *));
TAKES_CONST(rc_result, rc_code (*)(const rc_response *, CURLcode));
TAKES_CONST(rc_hop, rc_code (*)(const rc_response *, int, rc_hop_info *));
TAKES_CONST(rc_header, rc_code (*)(const rc_response *, int, const char *, size_t, rc_view *));
TAKES_CONST(rc_trailer, rc_code (*)(const rc_response *, const char *, size_t, rc_view *));
TAKES_CONST(rc_body_dup, char *(*)(const rc_response *, size_t *));
TAKES_CONST(rc_full_response_dup, char *(*)(const rc_response *, size_t *));
TAKES_CONST(rc_hop_count, size_t (*)(const rc_response *));

static const char *const plain[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};

START_TEST(pool_new_errors)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.large_threshold = 0;
  rc_pool *p = (rc_pool *)&cfg; /* overwritten with NULL */
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_E_INVAL);
  ck_assert_ptr_null(p);
  rc_pool_config_init(&cfg);
  cfg.overflow = (rc_overflow)3;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_E_INVAL);
  rc_pool_config_init(&cfg);
  ck_assert_int_eq(rc_pool_new(&cfg, NULL), RC_E_INVAL);
}
END_TEST

/* RC_DEFAULT_MAX_BUFFER is the default, and it means what it says: a
 * buffer of that capacity is kept idle, one byte more is not. */
START_TEST(max_buffer_default)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  ck_assert_uint_eq(cfg.max_buffer, RC_DEFAULT_MAX_BUFFER);
  ck_assert_uint_eq(RC_DEFAULT_MAX_BUFFER, RC_DEFAULT_MAX_BODY + 1);
  size_t sizes[2] = {RC_DEFAULT_MAX_BUFFER - 1, RC_DEFAULT_MAX_BUFFER}; /* + the NUL */
  char *body = malloc(RC_DEFAULT_MAX_BUFFER);
  fill_pattern(body, RC_DEFAULT_MAX_BUFFER, 7);
  for (int i = 0; i < 2; i++) {
    rc_pool *p = exact_pool();
    rc_response *r = new_response(p, 16 * MiB, RC_CAP_STOP);
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", sizes[i]);
    const char *lines[] = {"HTTP/1.1 200 OK\r\n", cl, "\r\n", NULL};
    ck_assert_uint_eq(feed(r, lines, body, sizes[i], 0), 0);
    ck_assert_uint_eq(rc_body(r).len, sizes[i]);
    rc_response_free(r);
    rc_pool_stats st = pool_stats(p);
    ck_assert_uint_eq(st.idle_large, i == 0 ? 1 : 0);
    ck_assert_uint_eq(st.discards, i == 0 ? 0 : 1);
    rc_pool_free(p);
  }
  free(body);
}
END_TEST

START_TEST(response_new_errors)
{
  rc_limits lim;
  rc_limits_init(&lim);
  ck_assert_int_eq(rc_response_new(NULL, &lim, NULL), RC_E_INVAL);
  rc_response *r = (rc_response *)&lim;
  lim.max_hops = 0;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_E_INVAL);
  ck_assert_ptr_null(r);
  rc_cap_policy bad[] = {(rc_cap_policy)3, (rc_cap_policy)-1, (rc_cap_policy)INT_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rc_limits_init(&lim);
    lim.on_cap = bad[i];
    ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_E_INVAL);
  }
  /* Out of memory: the response itself cannot be allocated. */
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  ca.fail_at = ca.calls + 1;
  r = (rc_response *)&lim;
  ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_E_NOMEM);
  ck_assert_ptr_null(r);
  ca.fail_at = 0;
  ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_OK);
  rc_response_free(r);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* An unknown on_cap is refused and the limits stay as they were. */
START_TEST(set_limits_unknown_policy)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_DRAIN);
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = 4;
  lim.on_cap = (rc_cap_policy)3;
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_E_INVAL);
  lim.on_cap = (rc_cap_policy)-1;
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_E_INVAL);
  ck_assert_uint_eq(feed(r, plain, "0123456789", 10, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  ck_assert_uint_eq(rc_body(r).len, 10);
  rc_response_reset(r);
  lim.on_cap = RC_CAP_DRAIN;
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
  ck_assert_uint_eq(feed(r, plain, "0123456789", 10, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_TRUNCATED);
  ck_assert_uint_eq(rc_body(r).len, 4);
  rc_response_free(r);
}
END_TEST

/* rc_full_response on a const response: assembled once, the same view
 * every time, from a pointer to const. */
START_TEST(full_response_const)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, plain, "body", 4, 0), 0);
  const rc_response *c = r;
  rc_view a, b;
  ck_assert_int_eq(rc_full_response(c, &a), RC_OK);
  ck_assert_int_eq(rc_full_response(c, &b), RC_OK);
  ck_assert_ptr_eq(a.ptr, b.ptr);
  ck_assert_str_eq(a.ptr, "HTTP/1.1 200 OK\r\n\r\nbody");
  rc_response_free(r);
}
END_TEST

/* max_hops over INT_MAX counts as INT_MAX; (int)i names hop i, -n the nth
 * from the end, and nothing past them. */
START_TEST(hop_indexes_are_int)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_hops = SIZE_MAX;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  ck_assert_uint_eq(r->lim.max_hops, (size_t)INT_MAX);
  lim.max_hops = (size_t)INT_MAX + 1;
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
  ck_assert_uint_eq(r->lim.max_hops, (size_t)INT_MAX);
  const char *lines[] = {"HTTP/1.1 100 Continue\r\n",
                         "\r\n",
                         "HTTP/1.1 302 Found\r\n",
                         "Location: /\r\n",
                         "\r\n",
                         "HTTP/1.1 200 OK\r\n",
                         "\r\n",
                         NULL};
  ck_assert_uint_eq(feed(r, lines, "x", 1, 0), 0);
  size_t n = rc_hop_count(r);
  ck_assert_uint_eq(n, 3);
  int want[] = {100, 302, 200};
  for (size_t i = 0; i < n; i++) {
    rc_hop_info h;
    ck_assert_int_eq(rc_hop(r, (int)i, &h), RC_OK);
    ck_assert_int_eq(h.status, want[i]);
    ck_assert_int_eq(rc_hop(r, (int)i - (int)n, &h), RC_OK);
    ck_assert_int_eq(h.status, want[i]);
  }
  rc_hop_info h;
  ck_assert_int_eq(rc_hop(r, (int)n, &h), RC_E_RANGE);
  ck_assert_int_eq(rc_hop(r, -(int)n - 1, &h), RC_E_RANGE);
  ck_assert_int_eq(rc_hop(r, INT_MIN, &h), RC_E_RANGE);
  ck_assert_int_eq(rc_hop(r, INT_MAX, &h), RC_E_RANGE);
  rc_view v;
  ck_assert_int_eq(rc_header(r, 1, "location", 0, &v), RC_OK);
  ck_assert_int_eq(rc_header(r, INT_MIN, "location", 0, &v), RC_E_RANGE);
  rc_response_free(r);
}
END_TEST

/* rc_pool_free(rc_pool_default()) does nothing: the default pool and its
 * responses, old and new, go on working. */
START_TEST(free_default_pool)
{
  rc_pool *d = rc_pool_default();
  rc_response *before;
  ck_assert_int_eq(rc_response_new(NULL, NULL, &before), RC_OK);
  rc_pool_free(d);
  rc_pool_free(d);
  ck_assert_ptr_eq(rc_pool_default(), d);
  ck_assert_uint_eq(feed(before, plain, "one", 3, 0), 0);
  rc_response_free(before);
  rc_pool_free(d);
  rc_response *after;
  ck_assert_int_eq(rc_response_new(d, NULL, &after), RC_OK);
  ck_assert_uint_eq(feed(after, plain, "two", 3, 0), 0);
  ck_assert_str_eq(rc_body(after).ptr, "two");
  ck_assert_int_eq(rc_pool_set_chunk_size(d, RC_DEFAULT_CHUNK_SIZE), RC_OK);
  rc_response_free(after);
}
END_TEST

/* Under a budget that refuses everything (a holder holds it), a response
 * whose rc_write_cb is set up by hand never pauses: it spills
 * (RC_OVERFLOW_AUTO) or fails with RC_E_TIMEOUT (RC_OVERFLOW_WAIT). The
 * same response attached with rc_attach pauses; detached, it no longer
 * does. */
static void hand_wired(rc_overflow mode)
{
  rc_pool *p = pool_with_budget(1, mode);
  rc_response *holder = new_response(p, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_set_budget_wait(holder, 1000), RC_OK);
  ck_assert_uint_eq(feed(holder, plain, "held", 4, 0), 0); /* the holder's place */

  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  size_t got = feed(r, plain, "body", 4, 0);
  ck_assert_uint_ne(got, CURL_WRITEFUNC_PAUSE);
  if (mode == RC_OVERFLOW_AUTO) {
    ck_assert_uint_eq(got, 0);
    ck_assert(rc_body_spilled(r));
    ck_assert_str_eq(rc_body(r).ptr, "body");
  } else {
    ck_assert_uint_eq(got, CURL_WRITEFUNC_ERROR);
    ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_TIMEOUT);
  }
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  rc_response_reset(r);

  CURL *easy = curl_easy_init();
  ck_assert_int_eq(rc_attach(r, easy), RC_OK);
  rc_pool_timeout(p); /* this thread resumes what pauses (rc_pool_set_budget(3)) */
  ck_assert_uint_eq(feed(r, plain, "body", 4, 0), CURL_WRITEFUNC_PAUSE);
  ck_assert_uint_eq(pool_stats(p).waiting, 1);
  ck_assert_int_eq(rc_detach(r, easy), RC_OK); /* leaves the queue */
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  rc_response_reset(r);
  ck_assert_uint_ne(feed(r, plain, "body", 4, 0), CURL_WRITEFUNC_PAUSE);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  curl_easy_cleanup(easy);
  rc_response_free(r);
  rc_response_free(holder);
  rc_pool_free(p);
}

START_TEST(hand_wired_spills) { hand_wired(RC_OVERFLOW_AUTO); }
END_TEST

START_TEST(hand_wired_times_out) { hand_wired(RC_OVERFLOW_WAIT); }
END_TEST

static size_t gzip_of(const char *in, size_t n, unsigned char *out, size_t cap)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = (unsigned char *)(uintptr_t)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
  size_t len = cap - z.avail_out;
  deflateEnd(&z);
  return len;
}

/* A gzip body cut short is RC_E_DECODE only when curl says CURLE_OK;
 * with a curl failure it is RC_E_TRANSFER. Corrupt data is RC_E_DECODE
 * whatever curl says. */
START_TEST(short_body_decode_error)
{
  char text[20000];
  fill_pattern(text, sizeof text, 3);
  unsigned char gz[40000];
  size_t len = gzip_of(text, sizeof text, gz, sizeof gz);
  const char *lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);

  ck_assert_uint_eq(feed(r, lines, (const char *)gz, len, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_reset(r);

  ck_assert_uint_eq(feed(r, lines, (const char *)gz, len / 2, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_DECODE);
  ck_assert_int_eq(rc_result(r, CURLE_PARTIAL_FILE), RC_E_TRANSFER);
  ck_assert_int_eq(rc_result(r, CURLE_OPERATION_TIMEDOUT), RC_E_TRANSFER);
  rc_response_reset(r);

  gz[len - 5] ^= 0x55; /* the stored length */
  ck_assert_uint_eq(feed(r, lines, (const char *)gz, len, 0), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_DECODE);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_DECODE);
  rc_response_free(r);
}
END_TEST

START_TEST(accept_encoding_value)
{
  const char *v = rc_accept_encoding();
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_eq(v, rc_accept_encoding());
  const char *want = RC_HAVE_BROTLI
                         ? (RC_HAVE_ZSTD ? "gzip, deflate, br, zstd" : "gzip, deflate, br")
                         : (RC_HAVE_ZSTD ? "gzip, deflate, zstd" : "gzip, deflate");
  ck_assert_str_eq(v, want);
}
END_TEST

/* A response that received nothing is never RC_OK: RC_E_NO_RESPONSE with
 * CURLE_OK (new, or reset), RC_E_TRANSFER with a curl failure; once it
 * received a status line it is a transfer's outcome again. */
START_TEST(result_before_any_transfer)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_NO_RESPONSE);
  ck_assert_int_eq(rc_result(r, CURLE_COULDNT_CONNECT), RC_E_TRANSFER);
  ck_assert_str_eq(rc_strerror(RC_E_NO_RESPONSE),
                   "nothing received: no transfer filled the response");
  ck_assert_uint_eq(feed(r, plain, "", 0, 0), 0); /* an empty body */
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_reset(r);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_NO_RESPONSE);
  ck_assert_uint_eq(rc_write_cb("", 1, 0, r), 0); /* by hand, no header: an empty body */
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_NO_RESPONSE);
  ck_assert_uint_eq(rc_write_cb("x", 1, 1, r), 1);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_free(r);
}
END_TEST

/* *len is set whatever the copy's fate: 0 with NULL. */
START_TEST(dup_sets_len)
{
  size_t len = 99;
  ck_assert_ptr_null(rc_body_dup(NULL, &len));
  ck_assert_uint_eq(len, 0);
  len = 99;
  ck_assert_ptr_null(rc_full_response_dup(NULL, &len));
  ck_assert_uint_eq(len, 0);
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  len = 99;
  ck_assert_ptr_null(rc_full_response_dup(r, &len)); /* no hop yet */
  ck_assert_uint_eq(len, 0);
  len = 99;
  char *body = rc_body_dup(r, &len); /* the empty body: a copy of "" */
  ck_assert_ptr_nonnull(body);
  ck_assert_uint_eq(len, 0);
  free(body);
  rc_response_free(r);
}
END_TEST

/* max_body 0 is a cap of 0 bytes, not "no cap": the first body byte is at
 * the cap (STOP: the transfer stops, RC_TRUNCATED; DRAIN: read on). An
 * empty body is complete. */
START_TEST(max_body_zero_is_a_cap)
{
  for (int drain = 0; drain < 2; drain++) {
    rc_response *r = new_response(NULL, 0, drain ? RC_CAP_DRAIN : RC_CAP_STOP);
    rc_limits lim;
    rc_limits_init(&lim);
    lim.max_body = 0;
    lim.on_cap = drain ? RC_CAP_DRAIN : RC_CAP_STOP;
    ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
    ck_assert_uint_eq(feed(r, plain, "", 0, 0), 0);
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    rc_response_reset(r);
    size_t got = feed(r, plain, "abc", 3, 0);
    ck_assert_uint_eq(got, drain ? 0 : CURL_WRITEFUNC_ERROR);
    ck_assert_int_eq(rc_result(r, drain ? CURLE_OK : CURLE_WRITE_ERROR), RC_TRUNCATED);
    ck_assert_uint_eq(rc_body(r).len, 0);
    ck_assert(rc_truncated(r));
    rc_response_free(r);
  }
}
END_TEST

/* ---- Over the loopback server. */

/* rc_attach sends rc_accept_encoding() as Accept-Encoding (/echo answers
 * with the request head). */
START_TEST(accept_encoding_sent)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  CURL *easy = curl_easy_init();
  ck_assert_int_eq(rc_attach(r, easy), RC_OK);
  char u[256];
  curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, "/echo", u, sizeof u));
  ck_assert_int_eq(rc_result(r, curl_easy_perform(easy)), RC_OK);
  char want[256];
  snprintf(want, sizeof want, "\r\nAccept-Encoding: %s\r\n", rc_accept_encoding());
  ck_assert_msg(strstr(rc_body(r).ptr, want) != NULL, "%s", rc_body(r).ptr);
  rc_response_free(r);
  curl_easy_cleanup(easy);
}
END_TEST

/* Runs easy on multi with rc_multi_poll until it ends, or, with
 * remove_when_waiting, until the pool has that many waiting and then
 * removes it (returning CURLE_ABORTED_BY_CALLBACK). Curl's result. */
static CURLcode run(rc_pool *p, CURLM *multi, CURL *easy, size_t remove_when_waiting)
{
  ck_assert_int_eq(curl_multi_add_handle(multi, easy), CURLM_OK);
  for (;;) {
    int running;
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left)) != NULL)
      if (m->msg == CURLMSG_DONE && m->easy_handle == easy) {
        CURLcode cc = m->data.result;
        curl_multi_remove_handle(multi, easy);
        return cc;
      }
    if (remove_when_waiting && pool_stats(p).waiting == remove_when_waiting) {
      curl_multi_remove_handle(multi, easy);
      return CURLE_ABORTED_BY_CALLBACK;
    }
    rc_multi_poll(p, multi, NULL, 0, 100, NULL);
  }
}

static CURL *easy_for(rc_response *r, const char *path, long timeout_ms)
{
  CURL *easy = curl_easy_init();
  ck_assert_int_eq(rc_attach(r, easy), RC_OK);
  char u[256];
  curl_easy_setopt(easy, CURLOPT_URL, ts_url(srv, path, u, sizeof u));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
  return easy;
}

/* respchain-multi(3), "Transfers that end while they wait": a transfer
 * that times out, or is removed, while it waits keeps its place in the
 * queue (waiting counts it; while it is the holder, a refused transfer
 * behind it cannot go on) until its response is reset or detached. The
 * timeouts (1 s) leave a loaded machine time to reach the wait: its
 * request and first body bytes take a millisecond on an idle one. */
START_TEST(ended_while_waiting)
{
  rc_pool *p = pool_with_budget(64 * KiB, RC_OVERFLOW_WAIT);
  CURLM *multi = curl_multi_init();

  /* a: finished and kept, holding 128 KiB. */
  rc_response *a = new_response(p, 0, RC_CAP_STOP);
  CURL *ea = easy_for(a, "/bytes?n=128k", 0);
  ck_assert_int_eq(run(p, multi, ea, 0), CURLE_OK);
  ck_assert_int_eq(rc_result(a, CURLE_OK), RC_OK);

  /* b: refused, waits, times out; still queued. */
  rc_response *b = new_response(p, 0, RC_CAP_STOP);
  CURL *eb = easy_for(b, "/bytes?n=128k", 1000);
  CURLcode cc = run(p, multi, eb, 0);
  ck_assert_int_eq(cc, CURLE_OPERATION_TIMEDOUT);
  ck_assert_int_eq(rc_result(b, cc), RC_E_TRANSFER);
  ck_assert_uint_eq(pool_stats(p).waiting, 1);

  /* a's memory goes back: b, ended, takes the holder's place, and c,
   * refused behind it, cannot go on. */
  rc_response_reset(a);
  ck_assert_uint_eq(pool_stats(p).waiting, 1);
  rc_response *c = new_response(p, 0, RC_CAP_STOP);
  CURL *ec = easy_for(c, "/bytes?n=128k", 1000);
  ck_assert_int_eq(run(p, multi, ec, 0), CURLE_OPERATION_TIMEDOUT);
  ck_assert_uint_eq(pool_stats(p).waiting, 2);

  /* Reset and detach take them out; then a transfer runs through. */
  rc_response_reset(b);
  ck_assert_uint_eq(pool_stats(p).waiting, 1);
  ck_assert_int_eq(rc_detach(c, ec), RC_OK);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);
  rc_response_reset(c);
  ck_assert_int_eq(rc_attach(c, ec), RC_OK);
  curl_easy_setopt(ec, CURLOPT_TIMEOUT_MS, 0L);
  ck_assert_int_eq(run(p, multi, ec, 0), CURLE_OK);
  ck_assert_int_eq(rc_result(c, CURLE_OK), RC_OK);
  assert_pattern(rc_body(c), 128 * KiB);

  /* Removed while it waits (c holds the memory): queued until reset. */
  rc_response_reset(b);
  ck_assert_int_eq(run(p, multi, eb, 1), CURLE_ABORTED_BY_CALLBACK);
  ck_assert_uint_eq(pool_stats(p).waiting, 1);
  rc_response_reset(b);
  ck_assert_uint_eq(pool_stats(p).waiting, 0);

  /* Freed before its handle, as respchain-multi(3) says. */
  rc_response_free(a);
  rc_response_free(b);
  rc_response_free(c);
  curl_easy_cleanup(ea);
  curl_easy_cleanup(eb);
  curl_easy_cleanup(ec);
  curl_multi_cleanup(multi);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  rc_pool_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("contract");
  TCase *tc = tcase_create("unit");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, pool_new_errors);
  tcase_add_test(tc, max_buffer_default);
  tcase_add_test(tc, response_new_errors);
  tcase_add_test(tc, set_limits_unknown_policy);
  tcase_add_test(tc, full_response_const);
  tcase_add_test(tc, hop_indexes_are_int);
  tcase_add_test(tc, free_default_pool);
  tcase_add_test(tc, hand_wired_spills);
  tcase_add_test(tc, hand_wired_times_out);
  tcase_add_test(tc, short_body_decode_error);
  tcase_add_test(tc, accept_encoding_value);
  tcase_add_test(tc, result_before_any_transfer);
  tcase_add_test(tc, dup_sets_len);
  tcase_add_test(tc, max_body_zero_is_a_cap);
  suite_add_tcase(s, tc);
  TCase *net = tcase_create("net");
  tcase_add_checked_fixture(net, server_up, server_down);
  tcase_set_timeout(net, 60);
  tcase_add_test(net, accept_encoding_sent);
  tcase_add_test(net, ended_while_waiting);
  suite_add_tcase(s, net);
  return run_suite(s);
}
