/* Unit tests of the response through its callbacks, as curl drives them:
 * every accessor over many chunkings, the caps and their policies, hops,
 * trailers, the lazy full response, views against copies, reset and reuse. */
#include <check.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static const size_t chunkings[] = {1, 7, 16384, 0};
#define NCHUNKINGS (sizeof chunkings / sizeof chunkings[0])

static const char *const redirect_then_ok[] = {"HTTP/1.1 301 Moved Permanently\r\n",
                                               "Location: /next\r\n",
                                               "Content-Length: 0\r\n",
                                               "\r\n",
                                               "HTTP/1.1 100 Continue\r\n",
                                               "\r\n",
                                               "HTTP/1.1 200 OK\r\n",
                                               "Content-Type: text/plain\r\n",
                                               "Set-Cookie: a=1\r\n",
                                               "set-cookie: b=2\r\n",
                                               "X-Empty:\r\n",
                                               "X-Spaces: \t padded value \t\r\n",
                                               "X-Folded: first\r\n",
                                               " second\r\n",
                                               "\r\n",
                                               NULL};

static const char *header_block(void)
{
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\n"
         "set-cookie: b=2\r\nX-Empty:\r\nX-Spaces: \t padded value \t\r\n"
         "X-Folded: first\r\n second\r\n\r\n";
}

static void assert_view(rc_view v, const char *want, size_t len)
{
  ck_assert_ptr_nonnull(v.ptr);
  ck_assert_uint_eq(v.len, len);
  ck_assert_mem_eq(v.ptr, want, len);
}

/* The same exchange in every chunking gives the same answers from every
 * accessor, and views always point into the response's own storage. */
START_TEST(accessors_every_chunking)
{
  size_t n = 100 * KiB + 3;
  char *body = malloc(n);
  fill_pattern(body, n, 1);
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  for (size_t c = 0; c < NCHUNKINGS; c++) {
    rc_response *r = new_response(p, 0, RC_CAP_STOP);
    ck_assert_uint_eq(feed(r, redirect_then_ok, body, n, chunkings[c]), 0);
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    ck_assert(!rc_truncated(r));

    rc_view b = rc_body(r);
    assert_view(b, body, n);
    ck_assert_int_eq(b.ptr[n], '\0');
    ck_assert_ptr_eq(rc_body(r).ptr, b.ptr); /* the same storage each time */

    ck_assert_uint_eq(rc_hop_count(r), 3);
    ck_assert_int_eq(rc_status(r), 200);
    rc_hop_info h;
    ck_assert_int_eq(rc_hop(r, 0, &h), RC_OK);
    ck_assert_int_eq(h.status, 301);
    ck_assert_int_eq(h.version, 11);
    ck_assert(!h.is_final);
    assert_view(h.reason, "Moved Permanently", 17);
    ck_assert_int_eq(rc_hop(r, 1, &h), RC_OK);
    ck_assert_int_eq(h.status, 100);
    ck_assert_int_eq(rc_hop(r, -1, &h), RC_OK);
    ck_assert(h.is_final);
    assert_view(h.raw, header_block(), strlen(header_block()));
    ck_assert_uint_eq(h.trailers.len, 0);
    ck_assert_int_eq(rc_hop(r, 3, &h), RC_E_RANGE);
    ck_assert_int_eq(rc_hop(r, -4, &h), RC_E_RANGE);
    ck_assert_int_eq(rc_hop(r, -3, &h), RC_OK);
    ck_assert_int_eq(h.status, 301);

    rc_view v;
    ck_assert_int_eq(rc_header(r, -1, "content-type", 0, &v), RC_OK);
    assert_view(v, "text/plain", 10);
    ck_assert_int_eq(rc_header(r, -1, "SET-COOKIE", 1, &v), RC_OK);
    assert_view(v, "b=2", 3);
    ck_assert_int_eq(rc_header(r, -1, "Set-Cookie", 2, &v), RC_E_NOT_FOUND);
    ck_assert_int_eq(rc_header(r, -1, "X-Empty", 0, &v), RC_OK);
    assert_view(v, "", 0);
    ck_assert_int_eq(rc_header(r, -1, "X-Spaces", 0, &v), RC_OK);
    assert_view(v, "padded value", 12);
    ck_assert_int_eq(rc_header(r, -1, "X-Folded", 0, &v), RC_OK);
    assert_view(v, "first\r\n second", 14);
    ck_assert_int_eq(rc_header(r, 0, "Location", 0, &v), RC_OK);
    assert_view(v, "/next", 5);
    ck_assert_int_eq(rc_header(r, -1, "Location", 0, &v), RC_E_NOT_FOUND);
    ck_assert_int_eq(rc_header(r, 7, "Location", 0, &v), RC_E_RANGE);
    ck_assert_int_eq(rc_header(r, -1, "Content", 0, &v), RC_E_NOT_FOUND);

    /* Full response: headers of the last hop, then the body; built once. */
    rc_view f1, f2;
    ck_assert_int_eq(rc_full_response(r, &f1), RC_OK);
    size_t hl = strlen(header_block());
    ck_assert_uint_eq(f1.len, hl + n);
    ck_assert_mem_eq(f1.ptr, header_block(), hl);
    ck_assert_mem_eq(f1.ptr + hl, body, n);
    ck_assert_int_eq(f1.ptr[f1.len], '\0');
    ck_assert_int_eq(rc_full_response(r, &f2), RC_OK);
    ck_assert_ptr_eq(f1.ptr, f2.ptr);

    /* Copies: equal bytes, other storage, caller's to keep. */
    size_t dl;
    char *d = rc_body_dup(r, &dl);
    ck_assert_ptr_nonnull(d);
    ck_assert_ptr_ne(d, b.ptr);
    ck_assert_uint_eq(dl, n);
    ck_assert_mem_eq(d, body, n);
    char *fd = rc_full_response_dup(r, &dl);
    ck_assert_uint_eq(dl, hl + n);
    ck_assert_mem_eq(fd, f1.ptr, dl);
    ck_assert_ptr_ne(fd, f1.ptr);
    rc_response_free(r);
    ck_assert_mem_eq(d, body, n); /* copies outlive the response */
    ck_assert_int_eq(d[n], '\0');
    free(d);
    free(fd);
  }
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  rc_pool_free(p);
  free(body);
}
END_TEST

/* Every chunking of a body over the cap keeps exactly the first max_body
 * bytes, under each policy. */
START_TEST(cap_policies)
{
  size_t cap = 50000, n = 70001;
  char *body = malloc(n);
  fill_pattern(body, n, 2);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  for (size_t c = 0; c < NCHUNKINGS; c++) {
    rc_response *r = new_response(NULL, cap, RC_CAP_STOP);
    ck_assert_uint_eq(feed(r, lines, body, n, chunkings[c]), CURL_WRITEFUNC_ERROR);
    assert_view(rc_body(r), body, cap);
    ck_assert_int_eq(rc_body(r).ptr[cap], '\0');
    ck_assert(rc_truncated(r));
    ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_TRUNCATED);

    rc_response_reset(r);
    ck_assert(!rc_truncated(r));
    ck_assert_uint_eq(rc_body(r).len, 0);
    rc_limits lim;
    rc_limits_init(&lim);
    lim.max_body = cap;
    lim.on_cap = RC_CAP_DRAIN;
    ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
    ck_assert_uint_eq(feed(r, lines, body, n, chunkings[c]), 0); /* all accepted */
    assert_view(rc_body(r), body, cap);
    ck_assert(rc_truncated(r));
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_TRUNCATED);
    /* A later transfer failure does not hide the truncation. */
    ck_assert_int_eq(rc_result(r, CURLE_RECV_ERROR), RC_TRUNCATED);
    rc_response_free(r);

    /* Exactly the cap is not truncation. */
    r = new_response(NULL, cap, RC_CAP_STOP);
    ck_assert_uint_eq(feed(r, lines, body, cap, chunkings[c]), 0);
    ck_assert(!rc_truncated(r));
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    rc_response_free(r);
  }
  free(body);
}
END_TEST

START_TEST(reject_policy)
{
  const char *const big[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 50001\r\n", "\r\n", NULL};
  const char *const fits[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 50000\r\n", "\r\n", NULL};
  const char *const unknown[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  char *body = malloc(60000);
  fill_pattern(body, 60000, 3);
  rc_response *r = new_response(NULL, 50000, RC_CAP_REJECT);
  ck_assert_uint_eq(feed(r, big, body, 50001, 0), CURL_WRITEFUNC_ERROR);
  ck_assert_uint_eq(rc_body(r).len, 0);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_TOO_LARGE);
  rc_response_reset(r);
  ck_assert_uint_eq(feed(r, fits, body, 50000, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_reset(r);
  ck_assert_uint_eq(feed(r, unknown, body, 60000, 7), CURL_WRITEFUNC_ERROR);
  ck_assert_uint_eq(rc_body(r).len, 50000);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_TRUNCATED);
  rc_response_free(r);
  free(body);
}
END_TEST

START_TEST(header_and_hop_caps)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_header_bytes = 100;
  lim.max_hops = 2;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  char line[128];
  memset(line, 'a', sizeof line);
  memcpy(line, "X-Big: ", 7);
  memcpy(line + 60, "\r\n", 3);
  const char *const ok[] = {"HTTP/1.1 200 OK\r\n", line, NULL}; /* 17 + 62 */
  ck_assert_uint_eq(feed(r, ok, NULL, 0, 0), 0);
  ck_assert_uint_eq(rc_header_cb(line, 1, 62, r), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_HEADER_CAP);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_HEADER_CAP);
  rc_hop_info h;
  ck_assert_int_eq(rc_hop(r, 0, &h), RC_OK); /* what was read is kept */
  ck_assert_uint_eq(h.raw.len, 17 + 62);
  /* Later callbacks keep refusing. */
  ck_assert_uint_eq(rc_write_cb("x", 1, 1, r), CURL_WRITEFUNC_ERROR);

  rc_response_reset(r);
  const char *const hops[] = {"HTTP/1.1 302 Found\r\n",
                              "\r\n",
                              "HTTP/1.1 302 Found\r\n",
                              "\r\n",
                              "HTTP/1.1 200 OK\r\n",
                              "\r\n",
                              NULL};
  ck_assert_uint_eq(feed(r, hops, NULL, 0, 0), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_HOP_CAP);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_response_free(r);
}
END_TEST

START_TEST(trailers)
{
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n",
                               "Trailer: X-Sum\r\n", "\r\n", NULL};
  for (size_t c = 0; c < NCHUNKINGS; c++) {
    rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
    ck_assert_uint_eq(feed(r, lines, "hello world", 11, chunkings[c]), 0);
    const char *const tr[] = {"X-Sum: 42\r\n", "X-Other: b\r\n", "\r\n", NULL};
    ck_assert_uint_eq(feed(r, tr, NULL, 0, 0), 0);
    ck_assert_uint_eq(rc_hop_count(r), 1);
    rc_view v;
    ck_assert_int_eq(rc_trailer(r, "x-sum", 0, &v), RC_OK);
    assert_view(v, "42", 2);
    ck_assert_int_eq(rc_trailer(r, "X-Other", 0, &v), RC_OK);
    assert_view(v, "b", 1);
    ck_assert_int_eq(rc_header(r, -1, "X-Sum", 0, &v), RC_E_NOT_FOUND);
    ck_assert_int_eq(rc_trailer(r, "Trailer", 0, &v), RC_E_NOT_FOUND);
    rc_hop_info h;
    rc_hop(r, -1, &h);
    assert_view(h.trailers, "X-Sum: 42\r\nX-Other: b\r\n\r\n", 25);
    assert_view(rc_body(r), "hello world", 11);
    rc_view f;
    ck_assert_int_eq(rc_full_response(r, &f), RC_OK);
    ck_assert_uint_eq(f.len, h.raw.len + 11); /* trailers are not in it */
    rc_response_free(r);
  }
}
END_TEST

START_TEST(status_lines)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  const char *const lines[] = {
      "HTTP/2 204 \r\n", "\r\n", "HTTP/1.0 404\r\n", "\r\n", "HTTP/3 200\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, NULL, 0, 0), 0);
  rc_hop_info h;
  rc_hop(r, 0, &h);
  ck_assert_int_eq(h.version, 20);
  ck_assert_int_eq(h.status, 204);
  ck_assert_uint_eq(h.reason.len, 0);
  rc_hop(r, 1, &h);
  ck_assert_int_eq(h.version, 10);
  ck_assert_int_eq(h.status, 404);
  rc_hop(r, 2, &h);
  ck_assert_int_eq(h.version, 30);
  ck_assert_int_eq(rc_status(r), 200);
  rc_response_free(r);
}
END_TEST

/* An empty body and a header-only response allocate nothing for the body;
 * before any hop the accessors answer sanely. */
START_TEST(empty_allocates_nothing)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  rc_view b = rc_body(r);
  ck_assert_ptr_nonnull(b.ptr);
  ck_assert_uint_eq(b.len, 0);
  ck_assert_int_eq(rc_status(r), 0);
  rc_view f;
  ck_assert_int_eq(rc_full_response(r, &f), RC_E_RANGE);
  ck_assert_ptr_null(rc_full_response_dup(r, NULL));

  const char *const lines[] = {"HTTP/1.1 204 No Content\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, NULL, 0, 0), 0);
  ck_assert_uint_eq(rc_write_cb("", 1, 0, r), 0); /* curl's empty write */
  size_t after_headers = pool_stats(p).bytes_in_use;
  ck_assert_uint_eq(pool_stats(p).acquisitions, 1); /* the header block only */
  b = rc_body(r);
  ck_assert_str_eq(b.ptr, "");
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, after_headers);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  size_t len = 99;
  char *d = rc_body_dup(r, &len);
  ck_assert_str_eq(d, "");
  ck_assert_uint_eq(len, 0);
  free(d);
  rc_response_free(r);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* A declared size bounds growth and ends with an exactly sized buffer; a
 * lying one costs only what arrives. */
START_TEST(content_length_bounds_growth)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  size_t n = 300000;
  char *body = malloc(n);
  fill_pattern(body, n, 4);
  const char *const honest[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 300000\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, honest, body, n, 16384), 0);
  size_t headers = pool_stats(p).bytes_in_use;
  rc_response_reset(r);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  rc_pool_trim(p);
  ck_assert_uint_eq(feed(r, honest, NULL, 0, 0), 0);
  headers = pool_stats(p).bytes_in_use;
  long calls = ca.calls;
  ck_assert_uint_eq(feed(r, NULL, body, n, 16384), 0);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use - headers, n + 1);
  ck_assert_int_eq(ca.calls - calls, 1); /* one allocation, no resize */
  assert_view(rc_body(r), body, n);
  rc_response_reset(r);
  rc_pool_trim(p);

  const char *const liar[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 4294967296\r\n", "\r\n",
                              NULL};
  size_t before = ca.bytes_requested;
  ck_assert_uint_eq(feed(r, liar, "0123456789", 10, 0), 0);
  ck_assert_uint_le(ca.bytes_requested - before, 2 * 32 * KiB + 1024);
  ck_assert_uint_le(pool_stats(p).peak_in_use, 8 * MiB + 2 * 32 * KiB);
  assert_view(rc_body(r), "0123456789", 10);
  ck_assert_int_eq(rc_result(r, CURLE_PARTIAL_FILE), RC_E_TRANSFER);
  rc_response_free(r);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
  free(body);
}
END_TEST

/* A body seen before a later hop belongs to that earlier hop: dropped. */
START_TEST(body_follows_last_hop)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  const char *const first[] = {"HTTP/1.1 401 Unauthorized\r\n", "\r\n", NULL};
  const char *const second[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, first, "denied", 6, 0), 0);
  ck_assert_uint_eq(feed(r, second, "granted", 7, 0), 0);
  assert_view(rc_body(r), "granted", 7);
  ck_assert_uint_eq(rc_hop_count(r), 2);
  rc_response_free(r);
}
END_TEST

struct reader {
  rc_response *r;
  rc_view full;
  const char *body;
  size_t n;
  int ok;
};

static void *read_all(void *arg)
{
  struct reader *rd = arg;
  rc_view f, v;
  rd->ok = rc_full_response(rd->r, &f) == RC_OK && rc_body(rd->r).len == rd->n &&
           memcmp(rc_body(rd->r).ptr, rd->body, rd->n) == 0 &&
           rc_header(rd->r, -1, "Content-Type", 0, &v) == RC_OK && v.len == 10;
  rd->full = f;
  size_t len;
  char *d = rc_full_response_dup(rd->r, &len);
  rd->ok = rd->ok && d && len == f.len && memcmp(d, f.ptr, len) == 0;
  free(d);
  return NULL;
}

/* 100 threads read one finished response at once, the first full-response
 * request among them included: one assembly, identical answers. */
START_TEST(concurrent_readers)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  size_t n = 200000;
  char *body = malloc(n);
  fill_pattern(body, n, 5);
  ck_assert_uint_eq(feed(r, redirect_then_ok, body, n, 16384), 0);
  uint64_t acq = pool_stats(p).acquisitions;
  struct reader rd[100];
  pthread_t t[100];
  for (int i = 0; i < 100; i++) {
    rd[i] = (struct reader){r, {NULL, 0}, body, n, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, read_all, &rd[i]), 0);
  }
  for (int i = 0; i < 100; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 100; i++) {
    ck_assert(rd[i].ok);
    ck_assert_ptr_eq(rd[i].full.ptr, rd[0].full.ptr);
  }
  ck_assert_uint_eq(pool_stats(p).acquisitions, acq + 1); /* assembled once */
  rc_response_free(r);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
  free(body);
}
END_TEST

/* The full response is built once however often it is asked for, and
 * goes back to the pool on reset. */
START_TEST(full_response_no_leak)
{
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  for (int round = 0; round < 50; round++) {
    const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
    ck_assert_uint_eq(feed(r, lines, "abc", 3, 0), 0);
    rc_view f;
    for (int i = 0; i < 20; i++)
      ck_assert_int_eq(rc_full_response(r, &f), RC_OK);
    assert_view(f, "HTTP/1.1 200 OK\r\n\r\nabc", 22);
    rc_response_reset(r);
    ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  }
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.acquisitions, st.releases);
  ck_assert_uint_eq(st.acquisitions, 50 * 3); /* headers, body, full */
  rc_response_free(r);
  rc_pool_free(p);
}
END_TEST

/* A body that is not kept is no part of the full response, which is the
 * header block alone, as rc_full_response_dup gives it. */
START_TEST(full_response_body_not_kept)
{
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_observe(r, NULL, NULL, RC_KEEP_NONE), RC_OK);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, "abc", 3, 0), 0);
  ck_assert_uint_eq(rc_body_length(r), 3);
  rc_view f;
  ck_assert_int_eq(rc_full_response(r, &f), RC_OK);
  assert_view(f, "HTTP/1.1 200 OK\r\n\r\n", 19);
  size_t len;
  char *dup = rc_full_response_dup(r, &len);
  ck_assert_ptr_nonnull(dup);
  ck_assert_uint_eq(len, 19);
  ck_assert_mem_eq(dup, f.ptr, len);
  free(dup);
  rc_response_free(r);
}
END_TEST

START_TEST(limits_and_arguments)
{
  rc_limits lim;
  rc_limits_init(&lim);
  ck_assert_uint_eq(lim.max_body, 8 * MiB);
  ck_assert_uint_eq(lim.max_header_bytes, 64 * KiB);
  ck_assert_uint_eq(lim.max_hops, 16);
  ck_assert_int_eq(lim.on_cap, RC_CAP_STOP);
  ck_assert_uint_eq(lim.max_codings, 5);
  ck_assert_uint_eq(lim.max_raw, 0);
  rc_response *r;
  lim.max_hops = 0;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_E_INVAL);
  ck_assert_int_eq(rc_response_new(NULL, NULL, NULL), RC_E_INVAL);
  ck_assert_int_eq(rc_response_new(NULL, NULL, &r), RC_OK);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, "x", 1, 0), 0);
  rc_limits_init(&lim);
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_E_BUSY);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_E_BUSY);
  rc_response_reset(r);
  ck_assert_int_eq(rc_response_set_limits(r, &lim), RC_OK);
  ck_assert_int_eq(rc_result(r, CURLE_COULDNT_CONNECT), RC_E_TRANSFER);
  rc_response_free(r);
  rc_response_free(NULL);
  rc_response_reset(NULL);
  ck_assert_str_eq(rc_strerror(RC_OK), "complete");
  ck_assert_str_eq(rc_strerror(RC_E_HEADER_CAP), "header bytes of one hop exceed the header cap");
  ck_assert_str_eq(rc_strerror((rc_code)999), "unknown result code");
  ck_assert_str_eq(rc_result_text(RC_E_TRANSFER, CURLE_COULDNT_CONNECT),
                   curl_easy_strerror(CURLE_COULDNT_CONNECT));
  ck_assert_str_eq(rc_result_text(RC_TRUNCATED, CURLE_WRITE_ERROR), rc_strerror(RC_TRUNCATED));
}
END_TEST

/* Failing each allocation in turn: every run ends in success or
 * RC_E_NOMEM, keeps what it had, and leaks nothing. */
START_TEST(allocation_failure)
{
  size_t n = 100000;
  char *body = malloc(n);
  fill_pattern(body, n, 6);
  int succeeded = 0;
  for (long k = 1; !succeeded && k < 200; k++) {
    counting_alloc ca;
    counting_alloc_init(&ca);
    rc_pool_config cfg;
    rc_pool_config_init(&cfg);
    cfg.allocator = &ca.a;
    cfg.chunk_size = 4096;
    ca.fail_at = k;
    rc_pool *p = NULL;
    if (rc_pool_new(&cfg, &p) != RC_OK) {
      ck_assert_int_eq(ca.live, 0);
      continue;
    }
    rc_response *r = NULL;
    if (rc_response_new(p, NULL, &r) != RC_OK) {
      rc_pool_free(p);
      ck_assert_int_eq(ca.live, 0);
      continue;
    }
    size_t ret = feed(r, redirect_then_ok, body, n, 7000);
    rc_code rc = rc_result(r, ret ? CURLE_WRITE_ERROR : CURLE_OK);
    if (rc == RC_OK) {
      succeeded = 1;
      assert_view(rc_body(r), body, n);
    } else {
      ck_assert_int_eq(rc, RC_E_NOMEM);
      rc_view b = rc_body(r);
      ck_assert_mem_eq(b.ptr, body, b.len); /* what was read is kept */
    }
    rc_response_free(r);
    rc_pool_free(p);
    ck_assert_int_eq(ca.live, 0);
  }
  ck_assert(succeeded);
  free(body);
}
END_TEST

/* With decoding off, any Content-Encoding leaves the body as received:
 * no chain limit applies to what is not decoded. */
START_TEST(codings_not_decoded)
{
  const char *const chain[] = {"HTTP/1.1 200 OK\r\n",
                               "Content-Encoding: gzip, gzip, gzip, gzip, gzip, gzip, gzip\r\n",
                               "\r\n", NULL};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, chain, "raw bytes", 9, 0), 0);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_NOT_DECODED);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_reset(r);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  ck_assert_uint_eq(feed(r, chain, "raw bytes", 9, 0), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_CODINGS);
  rc_response_free(r);
}
END_TEST

/* Under a budget every decoded chunk is admitted first, small ones too: a
 * 1-byte chunk that does not fit is refused. A response that can neither
 * pause nor block then spills (RC_OVERFLOW_AUTO), or fails at once with
 * RC_E_TIMEOUT keeping what it had (RC_OVERFLOW_WAIT). */
static void small_chunk_refused(rc_overflow mode)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = 1; /* nothing fits */
  cfg.overflow = mode;
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  rc_response *holder = new_response(p, 0, RC_CAP_STOP);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  const char *const plain[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  /* holder takes the holder's place: refused, then let past the limit. */
  ck_assert_int_eq(rc_response_set_budget_wait(holder, 1000), RC_OK);
  ck_assert_uint_eq(feed(holder, plain, "x", 1, 0), 0);
  ck_assert_uint_eq(pool_stats(p).pauses, 1);
  const char *const gz[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  if (mode == RC_OVERFLOW_WAIT) {
    ck_assert_uint_eq(feed(r, gz, "\x1f", 1, 0), CURL_WRITEFUNC_ERROR);
    ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_TIMEOUT);
    ck_assert(!rc_body_spilled(r));
  } else {
    ck_assert_uint_eq(feed(r, gz, "\x1f", 1, 0), 0);
    ck_assert(rc_body_spilled(r));
    ck_assert_uint_eq(pool_stats(p).spills, 1);
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_E_DECODE); /* the gzip ended early */
  }
  rc_response_free(r);
  rc_response_free(holder);
  rc_pool_free(p);
}

START_TEST(small_decoded_chunks_are_gated) { small_chunk_refused(RC_OVERFLOW_WAIT); }
END_TEST

START_TEST(refused_without_a_way_to_wait_spills) { small_chunk_refused(RC_OVERFLOW_AUTO); }
END_TEST

/* Two Content-Length headers that differ: the last one counts, as it does
 * for curl's framing, so a small body is not rejected for the first. */
START_TEST(last_content_length_counts)
{
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 100000000\r\n",
                               "Content-Length: 5\r\n", "\r\n", NULL};
  rc_response *r = new_response(NULL, 10, RC_CAP_REJECT);
  ck_assert_uint_eq(feed(r, lines, "hello", 5, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  assert_view(rc_body(r), "hello", 5);
  rc_response_free(r);
}
END_TEST

/* The framing (Content-Length, Content-Encoding) is read from the last
 * hop's whole block, however many lines it has: the last length counts,
 * every coding line in order, a folded value included; a body that comes
 * with no blank line before it is framed by the lines it followed. */
START_TEST(framing_from_the_block)
{
  static const char hello[] = "hello";
  unsigned char z[64];
  uLongf zlen = sizeof z;
  ck_assert_int_eq(compress2(z, &zlen, (const Bytef *)hello, 5, 9), Z_OK);
  enum { FILLERS = 1000 };
  const char **lines = malloc((FILLERS + 8) * sizeof *lines);
  size_t n = 0;
  lines[n++] = "HTTP/1.1 200 OK\r\n";
  lines[n++] = "Content-Length: 100000000\r\n";
  lines[n++] = "Content-Encoding: identity\r\n";
  for (int i = 0; i < FILLERS; i++)
    lines[n++] = "X-Filler: 0123456789\r\n";
  lines[n++] = "Content-Encoding:\r\n";
  lines[n++] = "\tdeflate\r\n";
  lines[n++] = "Content-Length: 5\r\n";
  lines[n++] = "\r\n";
  lines[n] = NULL;
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = 10;
  lim.on_cap = RC_CAP_REJECT; /* the first length would be refused */
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  ck_assert_uint_eq(feed(r, lines, (const char *)z, zlen, 3), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
  assert_view(rc_body(r), hello, 5);

  rc_response_reset(r);
  const char *const unended[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: deflate\r\n", NULL};
  ck_assert_uint_eq(feed(r, unended, (const char *)z, zlen, 0), 0);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
  assert_view(rc_body(r), hello, 5);
  rc_response_free(r);
  free(lines);
}
END_TEST

/* The body cap ends a decoded body: the raw copy cannot be complete, and
 * says so, under every policy. */
START_TEST(raw_copy_truncated_by_the_cap)
{
  size_t n = 180 * KiB;
  char *body = malloc(n);
  fill_pattern(body, n, 21);
  uLongf zlen = compressBound(n);
  unsigned char *z = malloc(zlen);
  ck_assert_int_eq(compress2(z, &zlen, (const Bytef *)body, n, 1), Z_OK);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: deflate\r\n", "\r\n",
                               NULL};
  for (int policy = RC_CAP_STOP; policy <= RC_CAP_DRAIN; policy++) {
    rc_limits lim;
    rc_limits_init(&lim);
    lim.max_body = 16 * KiB;
    lim.max_raw = 1 * MiB;
    lim.on_cap = (rc_cap_policy)policy;
    rc_response *r;
    ck_assert_int_eq(rc_response_new(NULL, &lim, &r), RC_OK);
    ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
    feed(r, lines, (const char *)z, zlen, 4096);
    ck_assert(rc_truncated(r));
    ck_assert(rc_raw_truncated(r));
    ck_assert_uint_lt(rc_raw_body(r).len, zlen);
    rc_response_free(r);
  }
  free(z);
  free(body);
}
END_TEST

/* Folded values: blank continuation lines add nothing, and a value that
 * starts on the continuation line starts at its first character. */
START_TEST(folded_values)
{
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "X-Sum: 42\r\n", " \r\n", "X-Long:\r\n",
                               "\tvalue\r\n",         "\r\n",          NULL};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, lines, NULL, 0, 0), 0);
  rc_view v;
  ck_assert_int_eq(rc_header(r, -1, "X-Sum", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 2);
  ck_assert_mem_eq(v.ptr, "42", 2);
  ck_assert_int_eq(rc_header(r, -1, "X-Long", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 5);
  ck_assert_mem_eq(v.ptr, "value", 5);
  rc_response_free(r);
}
END_TEST

/* An empty last body shows nothing of an earlier hop's body, and an empty
 * decoded body is a proper empty string. */
START_TEST(empty_after_earlier_body)
{
  const char *const moved[] = {"HTTP/1.1 301 Moved\r\n", "\r\n", NULL};
  const char *const none[] = {"HTTP/1.1 204 No Content\r\n", "\r\n", NULL};
  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, moved, "abc\n", 4, 0), 0);
  ck_assert_uint_eq(feed(r, none, NULL, 0, 0), 0);
  ck_assert_uint_eq(rc_body(r).len, 0);
  ck_assert_str_eq(rc_body(r).ptr, "");
  rc_response_reset(r);
  /* The gzip of nothing: 20 bytes in, no byte out. */
  static const char empty_gzip[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
                                   "\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00";
  const char *const gz[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  ck_assert_uint_eq(feed(r, gz, empty_gzip, 20, 0), 0);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
  ck_assert_uint_eq(rc_body(r).len, 0);
  ck_assert_str_eq(rc_body(r).ptr, "");
  rc_response_free(r);
}
END_TEST

/* A locale in which "I" does not lower to "i" (tr_TR.ISO-8859-9: it lowers
 * to a dotless i), installed or made here with localedef; NULL when
 * neither is possible. */
static const char *turkish_locale(char *dir, size_t len)
{
  static const char *name = "tr_TR.ISO-8859-9";
  if (setlocale(LC_ALL, name))
    return name;
  snprintf(dir, len, "/tmp/rc-locale-XXXXXX");
  if (!mkdtemp(dir))
    return NULL;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "localedef -i tr_TR -f ISO-8859-9 %s/%s >/dev/null 2>&1", dir, name);
  if (system(cmd) != 0)
    return NULL;
  setenv("LOCPATH", dir, 1);
  return setlocale(LC_ALL, name) ? name : NULL;
}

/* Header names compare in ASCII whatever the locale: under a Turkish one
 * (where strncasecmp finds "X-ID" and "x-id" different), lookup and the
 * framing read from the block (an upper-case Content-Encoding) work as in
 * the C locale. */
START_TEST(header_names_ignore_the_locale)
{
  static const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "X-ID: 7\r\n",
                                      "CONTENT-ENCODING: IDENTITY, GZIP\r\n", "\r\n", NULL};
  char dir[64] = "";
  const char *loc = turkish_locale(dir, sizeof dir);
  if (!loc) {
    fprintf(stderr, "header_names_ignore_the_locale: no tr_TR locale here, not run\n");
    return;
  }
  char enc[64];
  size_t n = 0;
  unsigned char gz[64];
  z_stream z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = (unsigned char *)"hi";
  z.avail_in = 2;
  z.next_out = gz;
  z.avail_out = sizeof gz;
  ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
  n = sizeof gz - z.avail_out;
  deflateEnd(&z);
  memcpy(enc, gz, n);

  rc_response *r = new_response(NULL, 0, RC_CAP_STOP);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  ck_assert_uint_eq(feed(r, lines, enc, n, 0), 0);
  rc_view v;
  ck_assert_int_eq(rc_header(r, -1, "x-id", 0, &v), RC_OK);
  ck_assert_uint_eq(v.len, 1);
  ck_assert_int_eq(v.ptr[0], '7');
  ck_assert_int_eq(rc_header(r, -1, "Content-Encoding", 0, &v), RC_OK);
  ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
  ck_assert_str_eq(rc_body(r).ptr, "hi");
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  rc_response_free(r);
  setlocale(LC_ALL, "C");
  if (dir[0]) {
    char rm[96];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    ck_assert_int_eq(system(rm), 0);
  }
}
END_TEST

int main(void)
{
  Suite *s = suite_create("response");
  TCase *tc = tcase_create("response");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, accessors_every_chunking);
  tcase_add_test(tc, cap_policies);
  tcase_add_test(tc, reject_policy);
  tcase_add_test(tc, header_and_hop_caps);
  tcase_add_test(tc, trailers);
  tcase_add_test(tc, status_lines);
  tcase_add_test(tc, empty_allocates_nothing);
  tcase_add_test(tc, content_length_bounds_growth);
  tcase_add_test(tc, body_follows_last_hop);
  tcase_add_test(tc, concurrent_readers);
  tcase_add_test(tc, full_response_no_leak);
  tcase_add_test(tc, full_response_body_not_kept);
  tcase_add_test(tc, limits_and_arguments);
  tcase_add_test(tc, allocation_failure);
  tcase_add_test(tc, codings_not_decoded);
  tcase_add_test(tc, folded_values);
  tcase_add_test(tc, last_content_length_counts);
  tcase_add_test(tc, framing_from_the_block);
  tcase_add_test(tc, header_names_ignore_the_locale);
  tcase_add_test(tc, raw_copy_truncated_by_the_cap);
  tcase_add_test(tc, empty_after_earlier_body);
  tcase_add_test(tc, small_decoded_chunks_are_gated);
  tcase_add_test(tc, refused_without_a_way_to_wait_spills);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
