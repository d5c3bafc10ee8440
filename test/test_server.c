/*
 * Tests for the in-process test server (server.h): every route is fetched
 * with real libcurl (or a raw socket where curl would hide the bytes) and
 * checked byte for byte, header for header.
 */
#define _GNU_SOURCE
#include "server.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- Helpers --------------------------------------------------------- */

typedef struct {
  unsigned char *p;
  size_t len, cap;
} gbuf;

static void gbuf_add(gbuf *b, const void *data, size_t n)
{
  if (b->cap - b->len < n + 1) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n + 1)
      cap *= 2;
    b->p = realloc(b->p, cap);
    ck_assert_ptr_nonnull(b->p);
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0'; /* keeps text bodies usable as strings */
}

static void gbuf_free(gbuf *b)
{
  free(b->p);
  memset(b, 0, sizeof *b);
}

typedef struct {
  CURL *h;
  CURLcode rc;
  long status;
  gbuf body;
  gbuf head;     /* all header lines: interim, final, trailers */
  gbuf found;    /* the last value hfind copied out */
  size_t writes; /* write callback invocations */
  atomic_size_t arrived; /* body bytes so far, for another thread to watch */
} resp;

typedef struct {
  bool head;   /* HEAD request */
  bool follow; /* follow redirects (at most max_redirs) */
  long max_redirs;
  const char *post; /* POST this body */
  size_t post_len;
  const char *header; /* one extra request header */
  bool raw_chunks;    /* keep chunked framing in the body */
  const char *accept_encoding;
} req_opts;

static ts_server *srv;

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
  resp *r = userdata;
  gbuf_add(&r->body, data, size * nmemb);
  r->writes++;
  atomic_fetch_add(&r->arrived, size * nmemb);
  return size * nmemb;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
  gbuf_add(&((resp *)userdata)->head, data, size * nmemb);
  return size * nmemb;
}

/* Performs one request on r's handle (created on first use, so a second
 * call on the same resp reuses the connection). */
static void fetch_url(resp *r, const char *url, const req_opts *o)
{
  static const req_opts none;
  struct curl_slist *hdrs = NULL;
  if (!o)
    o = &none;
  if (!r->h)
    r->h = curl_easy_init();
  ck_assert_ptr_nonnull(r->h);
  gbuf_free(&r->body);
  gbuf_free(&r->head);
  r->writes = 0;
  CURL *h = r->h;
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
  if (o->head)
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (o->follow) {
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, o->max_redirs ? o->max_redirs : 20L);
  }
  if (o->post) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, o->post);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->post_len);
  }
  if (o->header) {
    hdrs = curl_slist_append(NULL, o->header);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  }
  if (o->raw_chunks)
    curl_easy_setopt(h, CURLOPT_HTTP_TRANSFER_DECODING, 0L);
  if (o->accept_encoding)
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, o->accept_encoding);
  r->rc = curl_easy_perform(h);
  r->status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
  curl_slist_free_all(hdrs);
}

static void fetch_opts(resp *r, const char *path, const req_opts *o)
{
  char url[4096];
  fetch_url(r, ts_url(srv, path, url, sizeof url), o);
}

static void fetch(resp *r, const char *path) { fetch_opts(r, path, NULL); }

static void resp_free(resp *r)
{
  if (r->h)
    curl_easy_cleanup(r->h);
  gbuf_free(&r->body);
  gbuf_free(&r->head);
  gbuf_free(&r->found);
  memset(r, 0, sizeof *r);
}

/* Header lookup over the captured lines (curl_easy_header is 7.84 and
 * newer; the suite runs on older curls too), by the block a line is in, as
 * curl_easy_header's origins: the last final response's header block, the
 * interim (1xx) blocks, or the trailers after the last block. */
enum { IN_HEADER, IN_1XX, IN_TRAILER };

/* The nth value (blanks around it trimmed) of header name in the blocks of
 * kind `in`, copied to r->found, or NULL; *count (when not NULL) receives
 * how many there are. */
static const char *hfind(resp *r, int in, const char *name, size_t nth, size_t *count)
{
  const char *p = (const char *)r->head.p, *end = p + r->head.len;
  size_t nlen = strlen(name), seen = 0;
  int kind = -1; /* the block the next line is in; -1: between blocks */
  const char *hit = NULL, *hit_end = NULL;
  for (const char *eol; p && p < end; p = eol + 1) {
    if (!(eol = memchr(p, '\n', (size_t)(end - p))))
      break;
    size_t len = (size_t)(eol - p);
    if (len <= 1) { /* the blank line: after the final block, trailers */
      kind = kind == IN_HEADER ? IN_TRAILER : -1;
      continue;
    }
    if (strncmp(p, "HTTP/", 5) == 0) {
      const char *code = memchr(p, ' ', len);
      kind = code && code[1] == '1' ? IN_1XX : IN_HEADER;
      if (kind == IN_HEADER && in == IN_HEADER) /* a later final block replaces it */
        seen = 0, hit = NULL;
      continue;
    }
    if (kind != in || len <= nlen || p[nlen] != ':' || strncasecmp(p, name, nlen) != 0)
      continue;
    if (seen++ == nth) {
      hit = p + nlen + 1;
      hit_end = eol;
    }
  }
  if (count)
    *count = seen;
  if (!hit)
    return NULL;
  while (hit < hit_end && strchr(" \t", *hit))
    hit++;
  while (hit_end > hit && strchr(" \t\r", hit_end[-1]))
    hit_end--;
  r->found.len = 0;
  gbuf_add(&r->found, hit, (size_t)(hit_end - hit));
  return (const char *)r->found.p;
}

/* Value of a header of the final response (NULL if absent). */
static const char *hval(resp *r, const char *name) { return hfind(r, IN_HEADER, name, 0, NULL); }

static size_t hcount(resp *r, const char *name, int in)
{
  size_t n;
  hfind(r, in, name, 0, &n);
  return n;
}

/* Index of the first byte of p[0..n) that differs from pattern bytes
 * offset..offset+n-1, or n when all match. */
static size_t pattern_mismatch(const unsigned char *p, size_t n, size_t offset)
{
  unsigned char want[4096];
  for (size_t done = 0; done < n; done += sizeof want) {
    size_t k = n - done < sizeof want ? n - done : sizeof want;
    ts_pattern_fill(want, offset + done, k);
    if (memcmp(p + done, want, k) != 0)
      for (size_t i = 0;; i++)
        if (p[done + i] != want[i])
          return done + i;
  }
  return n;
}

/* Asserts that p[0..n) equals pattern bytes offset..offset+n-1. */
static void ck_pattern_at(const unsigned char *p, size_t n, size_t offset)
{
  size_t i = pattern_mismatch(p, n, offset);
  ck_assert_msg(i == n, "body differs from pattern at byte %zu of %zu", i, n);
}

static void ck_body_pattern(resp *r, size_t n)
{
  ck_assert_uint_eq(r->body.len, n);
  ck_pattern_at(r->body.p, n, 0);
}

typedef struct {
  int rc;             /* last inflate() result */
  int members;        /* streams that reached Z_STREAM_END */
  size_t total;       /* bytes produced */
  size_t used_at_end; /* input consumed when the last one ended */
  bool all_zero;
} inflated;

/* Inflates every stream in `in` back to back; out may be NULL (then only
 * counted and checked for zeros). */
static inflated inflate_all(const void *in, size_t len, int wbits, gbuf *out)
{
  unsigned char buf[1 << 16];
  static const unsigned char zeros[sizeof buf];
  inflated res = {Z_OK, 0, 0, 0, true};
  z_stream z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(inflateInit2(&z, wbits), Z_OK);
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)len;
  for (;;) {
    z.next_out = buf;
    z.avail_out = sizeof buf;
    res.rc = inflate(&z, Z_NO_FLUSH);
    size_t got = sizeof buf - z.avail_out;
    res.total += got;
    if (memcmp(buf, zeros, got) != 0)
      res.all_zero = false;
    if (out)
      gbuf_add(out, buf, got);
    if (res.rc == Z_STREAM_END) {
      res.members++;
      res.used_at_end = len - z.avail_in;
      if (z.avail_in == 0)
        break;
      inflateReset(&z);
      continue;
    }
    if (res.rc != Z_OK)
      break;
  }
  inflateEnd(&z);
  return res;
}

/* Sends `req` on a new connection and reads the reply until the server
 * closes (half-closing first when asked, so keep-alive ends). */
static void raw_exchange(const char *req, size_t len, bool half_close, gbuf *out)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)ts_port(srv));
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (size_t off = 0; off < len;) {
    ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
    ck_assert_int_gt(w, 0);
    off += (size_t)w;
  }
  if (half_close)
    shutdown(fd, SHUT_WR);
  char buf[65536];
  ssize_t r;
  while ((r = recv(fd, buf, sizeof buf, 0)) > 0)
    gbuf_add(out, buf, (size_t)r);
  ck_assert_int_eq(r, 0); /* EOF, not a timeout */
  close(fd);
}

static void raw_get(const char *req, gbuf *out) { raw_exchange(req, strlen(req), true, out); }

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void)
{
  srv = ts_start();
  ck_assert_ptr_nonnull(srv);
}

static void teardown(void)
{
  ts_stop(srv);
  srv = NULL;
}

/* ---- Pattern and API ------------------------------------------------- */

START_TEST(pattern_is_consistent_and_aperiodic)
{
  enum { WIN = 4096 };
  size_t span = ((size_t)1 << 24) + WIN;
  unsigned char *p = malloc(span);
  ck_assert_ptr_nonnull(p);
  ts_pattern_fill(p, 0, span);
  for (size_t i = 0; i < 5000; i++)
    ck_assert_uint_eq(p[i], ts_pattern_byte(i));
  unsigned char part[37];
  for (size_t off = 0; off < 100; off += 7) {
    ts_pattern_fill(part, off + 12345, sizeof part);
    ck_assert_mem_eq(part, p + off + 12345, sizeof part);
  }
  for (int k = 0; k <= 24; k++)
    ck_assert_msg(memcmp(p, p + ((size_t)1 << k), WIN) != 0, "period 2^%d", k);
  /* Text-like: gzip must at least halve it. */
  uLongf clen = compressBound(1 << 20);
  unsigned char *c = malloc(clen);
  ck_assert_int_eq(compress2(c, &clen, p, 1 << 20, 6), Z_OK);
  ck_assert_uint_lt(clen, (1 << 20) / 2);
  free(c);
  free(p);
}
END_TEST

START_TEST(url_and_port)
{
  char url[128], want[128];
  ck_assert_int_gt(ts_port(srv), 0);
  snprintf(want, sizeof want, "http://127.0.0.1:%d/x?y=1", ts_port(srv));
  ck_assert_str_eq(ts_url(srv, "/x?y=1", url, sizeof url), want);
}
END_TEST

START_TEST(unknown_path_and_bad_params)
{
  resp r = {0};
  fetch(&r, "/nope");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_int_eq(r.status, 404);
  ck_assert_uint_gt(r.body.len, 0);
  fetch(&r, "/bytes?n=12x");
  ck_assert_int_eq(r.status, 400);
  fetch(&r, "/bytes?te=bogus");
  ck_assert_int_eq(r.status, 400);
  fetch(&r, "/gzip?coding=lzma");
  ck_assert_int_eq(r.status, 400);
  resp_free(&r);
}
END_TEST

/* ---- /bytes and connection handling ---------------------------------- */

START_TEST(bytes_length)
{
  resp r = {0};
  fetch(&r, "/bytes?n=100000");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(hval(&r, "Content-Length"), "100000");
  ck_body_pattern(&r, 100000);
  fetch(&r, "/bytes?n=0");
  ck_assert_str_eq(hval(&r, "Content-Length"), "0");
  ck_assert_uint_eq(r.body.len, 0);
  fetch(&r, "/bytes?n=3k");
  ck_body_pattern(&r, 3072);
  fetch(&r, "/bytes?n=8M");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_body_pattern(&r, (size_t)8 << 20);
  resp_free(&r);
}
END_TEST

START_TEST(bytes_beyond_precomputed)
{
  resp r = {0};
  fetch(&r, "/bytes?n=17M&write=100000");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_body_pattern(&r, (size_t)17 << 20);
  resp_free(&r);
}
END_TEST

/* Parses a raw chunked body; returns the number of chunks (excluding the
 * last), storing their sizes and the joined data. */
static size_t parse_chunks(const gbuf *raw, size_t *sizes, size_t max, gbuf *data)
{
  const char *p = (const char *)raw->p, *end = p + raw->len;
  size_t count = 0;
  for (;;) {
    char *eol;
    size_t n = strtoul(p, &eol, 16);
    ck_assert(eol[0] == '\r' && eol[1] == '\n');
    p = eol + 2;
    if (n == 0)
      break;
    ck_assert_uint_lt(count, max);
    sizes[count++] = n;
    ck_assert(p + n + 2 <= end);
    gbuf_add(data, p, n);
    ck_assert(p[n] == '\r' && p[n + 1] == '\n');
    p += n + 2;
  }
  ck_assert(end - p == 2 && p[0] == '\r' && p[1] == '\n');
  return count;
}

START_TEST(bytes_chunked)
{
  resp r = {0};
  req_opts raw = {.raw_chunks = true};
  size_t sizes[16];
  gbuf data = {0};
  fetch_opts(&r, "/bytes?n=5500&te=chunked&write=1000", &raw);
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_str_eq(hval(&r, "Transfer-Encoding"), "chunked");
  ck_assert_ptr_null(hval(&r, "Content-Length"));
  ck_assert_uint_eq(parse_chunks(&r.body, sizes, 16, &data), 6);
  for (int i = 0; i < 5; i++)
    ck_assert_uint_eq(sizes[i], 1000);
  ck_assert_uint_eq(sizes[5], 500);
  ck_assert_uint_eq(data.len, 5500);
  ck_pattern_at(data.p, 5500, 0);
  gbuf_free(&data);
  fetch_opts(&r, "/bytes?n=40000&te=chunked", &raw);
  ck_assert_uint_eq(parse_chunks(&r.body, sizes, 16, &data), 3);
  ck_assert_uint_eq(sizes[0], 16384);
  ck_assert_uint_eq(sizes[2], 40000 - 2 * 16384);
  gbuf_free(&data);
  fetch(&r, "/bytes?n=1M&te=chunked"); /* curl removes the framing */
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_body_pattern(&r, 1 << 20);
  fetch_opts(&r, "/bytes?n=0&te=chunked", &raw);
  ck_assert_str_eq((char *)r.body.p, "0\r\n\r\n");
  resp_free(&r);
}
END_TEST

START_TEST(bytes_close)
{
  resp r = {0};
  fetch(&r, "/bytes?n=50000&te=close");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_ptr_null(hval(&r, "Content-Length"));
  ck_assert_str_eq(hval(&r, "Connection"), "close");
  ck_body_pattern(&r, 50000);
  resp_free(&r);
}
END_TEST

START_TEST(bytes_drip)
{
  resp r = {0};
  double t0 = now_s();
  fetch(&r, "/bytes?n=20&write=1&delay_us=5000");
  double elapsed = now_s() - t0;
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_body_pattern(&r, 20);
  /* 20 writes 5 ms apart: at least 95 ms. In how many pieces curl hands
   * them on depends on when the client is scheduled, so it is not counted. */
  ck_assert_msg(elapsed >= 0.095, "drip took only %.3f s", elapsed);
  resp_free(&r);
}
END_TEST

START_TEST(keepalive_and_request_count)
{
  resp r = {0};
  long connects = -1;
  fetch(&r, "/bytes?n=10");
  ck_assert_uint_eq(ts_requests(srv), 1);
  fetch(&r, "/bytes?n=20");
  ck_body_pattern(&r, 20);
  curl_easy_getinfo(r.h, CURLINFO_NUM_CONNECTS, &connects);
  ck_assert_int_eq(connects, 0); /* reused */
  ck_assert_uint_eq(ts_requests(srv), 2);
  resp_free(&r);
}
END_TEST

START_TEST(head_requests)
{
  resp r = {0};
  req_opts head = {.head = true};
  long connects = -1;
  fetch_opts(&r, "/bytes?n=5000", &head);
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_str_eq(hval(&r, "Content-Length"), "5000");
  ck_assert_uint_eq(r.body.len, 0);
  fetch_opts(&r, "/gzip?n=100000&coding=gzip", &head);
  ck_assert_str_eq(hval(&r, "Content-Encoding"), "gzip");
  ck_assert_ptr_nonnull(hval(&r, "Content-Length"));
  fetch(&r, "/bytes?n=7"); /* nothing stray on the wire */
  ck_body_pattern(&r, 7);
  curl_easy_getinfo(r.h, CURLINFO_NUM_CONNECTS, &connects);
  ck_assert_int_eq(connects, 0);
  resp_free(&r);
}
END_TEST

START_TEST(post_bodies_and_expect)
{
  resp r = {0};
  size_t big = 300000;
  char *data = malloc(big);
  long connects = -1;
  memset(data, 'p', big);
  req_opts small = {.post = "a=1&b=2", .post_len = 7};
  fetch_opts(&r, "/echo", &small);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr((char *)r.body.p, "POST /echo HTTP/1.1\r\n"));
  ck_assert_ptr_nonnull(strstr((char *)r.body.p, "Content-Length: 7\r\n"));
  req_opts expect = {.post = data, .post_len = big, .header = "Expect: 100-continue"};
  fetch_opts(&r, "/bytes?n=33", &expect);
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_ptr_nonnull(strstr((char *)r.head.p, "HTTP/1.1 100 Continue\r\n"));
  ck_body_pattern(&r, 33);
  fetch(&r, "/bytes?n=44"); /* the body was consumed exactly */
  ck_body_pattern(&r, 44);
  curl_easy_getinfo(r.h, CURLINFO_NUM_CONNECTS, &connects);
  ck_assert_int_eq(connects, 0);
  free(data);
  resp_free(&r);
}
END_TEST

START_TEST(pipelined_requests)
{
  const char *req = "GET /bytes?n=5 HTTP/1.1\r\nHost: x\r\n\r\n"
                    "POST /bytes?n=6 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                    "GET /bytes?n=7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  gbuf out = {0};
  raw_exchange(req, strlen(req), false, &out);
  const char *s = (const char *)out.p;
  ck_assert_ptr_nonnull(strstr(s, "Content-Length: 5\r\n"));
  ck_assert_ptr_nonnull(strstr(s, "Content-Length: 6\r\n"));
  const char *last = strstr(s, "Content-Length: 7\r\n");
  ck_assert_ptr_nonnull(last);
  ck_assert_ptr_nonnull(strstr(last, "Connection: close\r\n"));
  ck_pattern_at(out.p + out.len - 7, 7, 0);
  ck_assert_uint_eq(ts_requests(srv), 3);
  gbuf_free(&out);
}
END_TEST

START_TEST(http10_and_oversized_head)
{
  gbuf out = {0};
  const char *req = "GET /bytes?n=5 HTTP/1.0\r\n\r\n";
  raw_exchange(req, strlen(req), false, &out); /* server must close */
  ck_assert_ptr_nonnull(strstr((char *)out.p, "Connection: close\r\n"));
  gbuf_free(&out);
  size_t n = 70000;
  char *big = malloc(n + 64);
  int len = snprintf(big, 64, "GET / HTTP/1.1\r\nX-Pad: ");
  memset(big + len, 'x', n);
  memcpy(big + len + n, "\r\n\r\n", 4);
  raw_exchange(big, (size_t)len + n + 4, false, &out);
  ck_assert_ptr_nonnull(strstr((char *)out.p, "HTTP/1.1 431 "));
  free(big);
  gbuf_free(&out);
}
END_TEST

/* ---- Encodings ------------------------------------------------------- */

START_TEST(gzip_codings)
{
  static const struct {
    const char *coding, *header;
    int wbits;
    bool twice;
  } cases[] = {
      {"gzip", "gzip", 31, false},
      {"x-gzip", "x-gzip", 31, false},
      {"GZIP", "GZIP", 31, false},
      {"deflate", "deflate", 15, false},
      {"deflate-raw", "deflate", -15, false},
      {"gzip2", "gzip, gzip", 31, true},
  };
  size_t n = 300000;
  char path[128];
  resp r = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(path, sizeof path, "/gzip?n=300000&coding=%s", cases[i].coding);
    fetch(&r, path);
    ck_assert_int_eq(r.rc, CURLE_OK);
    ck_assert_str_eq(hval(&r, "Content-Encoding"), cases[i].header);
    ck_assert_uint_lt(r.body.len, n / 2);
    gbuf once = {0}, plain = {0};
    inflated z = inflate_all(r.body.p, r.body.len, cases[i].wbits, &once);
    ck_assert_int_eq(z.rc, Z_STREAM_END);
    ck_assert_int_eq(z.members, 1);
    if (cases[i].twice) {
      z = inflate_all(once.p, once.len, 31, &plain);
      ck_assert_int_eq(z.rc, Z_STREAM_END);
    } else {
      plain = once;
      once = (gbuf){0};
    }
    ck_assert_uint_eq(plain.len, n);
    ck_pattern_at(plain.p, n, 0);
    gbuf_free(&once);
    gbuf_free(&plain);
  }
  fetch(&r, "/gzip?n=1000&coding=identity");
  ck_assert_str_eq(hval(&r, "Content-Encoding"), "identity");
  ck_body_pattern(&r, 1000);
  resp_free(&r);
}
END_TEST

START_TEST(gzip_members_chunked_and_cached)
{
  resp r = {0};
  gbuf plain = {0};
  fetch(&r, "/gzip?n=100001&coding=gzip&members=4");
  inflated z = inflate_all(r.body.p, r.body.len, 31, &plain);
  ck_assert_int_eq(z.rc, Z_STREAM_END);
  ck_assert_int_eq(z.members, 4);
  ck_assert_uint_eq(plain.len, 100001);
  ck_pattern_at(plain.p, plain.len, 0);
  gbuf_free(&plain);

  fetch(&r, "/gzip?n=2M&coding=gzip&te=chunked");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_str_eq(hval(&r, "Transfer-Encoding"), "chunked");
  gbuf first = r.body;
  r.body = (gbuf){0};
  fetch(&r, "/gzip?n=2M&coding=gzip"); /* same encoding, from cache */
  ck_assert_uint_eq(r.body.len, first.len);
  ck_assert_mem_eq(r.body.p, first.p, first.len);
  z = inflate_all(first.p, first.len, 31, &plain);
  ck_assert_int_eq(z.rc, Z_STREAM_END);
  ck_assert_uint_eq(plain.len, 2 << 20);
  ck_pattern_at(plain.p, plain.len, 0);
  gbuf_free(&plain);
  gbuf_free(&first);
  resp_free(&r);
}
END_TEST

static void check_bomb(const char *path, size_t size, bool nested)
{
  resp r = {0};
  fetch(&r, path);
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_str_eq(hval(&r, "Content-Encoding"), nested ? "gzip, gzip" : "gzip");
  gbuf inner = {0};
  const gbuf *single = &r.body;
  if (nested) {
    inflated outer = inflate_all(r.body.p, r.body.len, 31, &inner);
    ck_assert_int_eq(outer.rc, Z_STREAM_END);
    ck_assert_int_eq(outer.members, 1);
    single = &inner;
  }
  ck_assert_uint_lt(single->len, size / 500 + 1024);
  inflated z = inflate_all(single->p, single->len, 31, NULL);
  ck_assert_int_eq(z.rc, Z_STREAM_END);
  ck_assert_int_eq(z.members, 1);
  ck_assert_uint_eq(z.total, size);
  ck_assert(z.all_zero);
  gbuf_free(&inner);
  resp_free(&r);
}

START_TEST(bomb_small_sizes)
{
  check_bomb("/bomb?size=1000", 1000, false);
  check_bomb("/bomb?size=10M", (size_t)10 << 20, false);
  check_bomb("/bomb?size=3145851", 3145851, false); /* 3 MiB + 123 */
  check_bomb("/bomb?size=10M&nest=2", (size_t)10 << 20, true);
  check_bomb("/bomb?size=5M&te=chunked", (size_t)5 << 20, false);
}
END_TEST

/* CRC32 of n zero bytes, without touching n bytes. */
static uLong crc32_of_zeros(size_t n)
{
  static const unsigned char zeros[4096];
  uLong block = crc32(0, zeros, sizeof zeros), crc = crc32(0, Z_NULL, 0);
  for (; n >= sizeof zeros; n -= sizeof zeros)
    crc = crc32_combine(crc, block, (z_off_t)sizeof zeros);
  return crc32(crc, zeros, (uInt)n);
}

/* Inflating 1 GiB takes ~5 s natively (far longer under valgrind); with
 * TS_QUICK set only the trailer and the nesting are checked. */
START_TEST(bomb_default_1g)
{
  size_t size = (size_t)1 << 30;
  resp one = {0}, two = {0};
  gbuf inner = {0};
  fetch(&one, "/bomb");
  fetch(&two, "/bomb?nest=2");
  ck_assert_int_eq(one.rc, CURLE_OK);
  ck_assert_int_eq(two.rc, CURLE_OK);
  ck_assert_str_eq(hval(&one, "Content-Encoding"), "gzip");
  ck_assert_str_eq(hval(&two, "Content-Encoding"), "gzip, gzip");
  ck_assert_uint_lt(one.body.len, 2 << 20);
  const unsigned char *t = one.body.p + one.body.len - 8;
  uLong crc = (uLong)t[0] | (uLong)t[1] << 8 | (uLong)t[2] << 16 | (uLong)t[3] << 24;
  ck_assert_uint_eq(crc, crc32_of_zeros(size));
  ck_assert_mem_eq(t + 4, "\0\0\0\x40", 4); /* ISIZE: 2^30, little-endian */
  inflated z = inflate_all(two.body.p, two.body.len, 31, &inner);
  ck_assert_int_eq(z.rc, Z_STREAM_END);
  ck_assert_uint_eq(inner.len, one.body.len); /* nest=2 wraps nest=1 */
  ck_assert_mem_eq(inner.p, one.body.p, inner.len);
  if (!getenv("TS_QUICK")) {
    double t0 = now_s();
    z = inflate_all(one.body.p, one.body.len, 31, NULL);
    ck_assert_int_eq(z.rc, Z_STREAM_END);
    ck_assert_int_eq(z.members, 1);
    ck_assert_uint_eq(z.total, size);
    ck_assert(z.all_zero);
    fprintf(stderr, "1 GiB bomb inflated in %.2f s\n", now_s() - t0);
  }
  gbuf_free(&inner);
  resp_free(&one);
  resp_free(&two);
}
END_TEST

START_TEST(corrupt_gzip)
{
  resp r = {0};
  curl_off_t cl = -1;
  fetch(&r, "/corrupt?kind=magic");
  ck_assert_str_eq(hval(&r, "Content-Encoding"), "gzip");
  curl_easy_getinfo(r.h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
  ck_assert_uint_eq((size_t)cl, r.body.len);
  ck_assert_uint_ne(r.body.p[0], 0x1f);
  ck_assert_int_eq(inflate_all(r.body.p, r.body.len, 31, NULL).rc, Z_DATA_ERROR);

  fetch(&r, "/corrupt?kind=crc");
  inflated z = inflate_all(r.body.p, r.body.len, 31, NULL);
  ck_assert_int_eq(z.rc, Z_DATA_ERROR);
  ck_assert_uint_eq(z.total, 100000); /* data fine, checksum not */

  fetch(&r, "/corrupt?kind=length&n=5000");
  z = inflate_all(r.body.p, r.body.len, 31, NULL);
  ck_assert_int_eq(z.rc, Z_DATA_ERROR);
  ck_assert_uint_eq(z.total, 5000);

  fetch(&r, "/corrupt?kind=truncated");
  size_t truncated_len = r.body.len;
  z = inflate_all(r.body.p, r.body.len, 31, NULL);
  ck_assert_int_eq(z.rc, Z_BUF_ERROR); /* ran out of input */
  ck_assert_int_eq(z.members, 0);
  ck_assert_uint_lt(z.total, 100000);

  fetch(&r, "/corrupt?kind=junk");
  z = inflate_all(r.body.p, r.body.len, 31, NULL);
  ck_assert_int_eq(z.members, 1);
  ck_assert_uint_eq(z.total, 100000);
  ck_assert_uint_eq(z.used_at_end, r.body.len - 16);
  ck_assert_mem_eq(r.body.p + r.body.len - 16, "JUNKJUNKJUNKJUNK", 16);
  ck_assert_uint_eq(truncated_len, (r.body.len - 16) / 2);
  resp_free(&r);
}
END_TEST

START_TEST(encoding_header_verbatim)
{
  resp r = {0};
  fetch(&r, "/encoding?value=br&n=100");
  ck_assert_str_eq(hval(&r, "Content-Encoding"), "br");
  ck_body_pattern(&r, 100);
  fetch(&r, "/encoding?value=gzip%2C%20br");
  ck_assert_str_eq(hval(&r, "Content-Encoding"), "gzip, br");
  ck_assert_uint_eq(r.body.len, 0);
  fetch(&r, "/encoding?value=zstd,+deflate,+gzip,+identity&n=10");
  ck_assert_ptr_nonnull(
      strstr((char *)r.head.p, "Content-Encoding: zstd, deflate, gzip, identity\r\n"));
  ck_body_pattern(&r, 10);
  resp_free(&r);
}
END_TEST

/* ---- Status, redirects, interim responses, trailers ------------------ */

START_TEST(redirects)
{
  resp r = {0};
  long count = 0;
  char *loc = NULL;
  fetch(&r, "/redirect?n=3");
  ck_assert_int_eq(r.status, 302);
  ck_assert_str_eq(hval(&r, "Location"), "/redirect?n=2&code=302");
  ck_assert_str_eq((char *)r.body.p, "redirect\n");
  req_opts follow = {.follow = true};
  fetch_opts(&r, "/redirect?n=3", &follow);
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_int_eq(r.status, 200);
  curl_easy_getinfo(r.h, CURLINFO_REDIRECT_COUNT, &count);
  ck_assert_int_eq(count, 4);
  ck_body_pattern(&r, 10);
  fetch(&r, "/redirect?n=1&code=307&to=%2Fbytes%3Fn%3D5");
  ck_assert_int_eq(r.status, 307);
  curl_easy_getinfo(r.h, CURLINFO_REDIRECT_URL, &loc);
  ck_assert_ptr_nonnull(strstr(loc, "/redirect?n=0&code=307&to=%2Fbytes%3Fn%3D5"));
  fetch(&r, "/redirect?n=0&to=%2Fbytes%3Fn%3D5");
  ck_assert_int_eq(r.status, 302);
  ck_assert_str_eq(hval(&r, "Location"), "/bytes?n=5");
  fetch_opts(&r, "/redirect?n=2&code=301&to=%2Fbytes%3Fn%3D5", &follow);
  ck_assert_int_eq(r.status, 200);
  ck_body_pattern(&r, 5);
  req_opts loop = {.follow = true, .max_redirs = 5};
  fetch_opts(&r, "/loop", &loop);
  ck_assert_int_eq(r.rc, CURLE_TOO_MANY_REDIRECTS);
  curl_easy_getinfo(r.h, CURLINFO_REDIRECT_COUNT, &count);
  ck_assert_int_eq(count, 5);
  resp_free(&r);
}
END_TEST

START_TEST(status_codes)
{
  resp r = {0};
  long connects = -1;
  fetch(&r, "/status?code=404&n=10");
  ck_assert_int_eq(r.status, 404);
  ck_assert(strncmp((char *)r.head.p, "HTTP/1.1 404 Not Found\r\n", 24) == 0);
  ck_body_pattern(&r, 10);
  fetch(&r, "/status?code=500");
  ck_assert(strncmp((char *)r.head.p, "HTTP/1.1 500 Internal Server Error\r\n", 36) == 0);
  ck_assert_str_eq(hval(&r, "Content-Length"), "0");
  fetch(&r, "/status?code=204");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_int_eq(r.status, 204);
  ck_assert_ptr_null(hval(&r, "Content-Length"));
  ck_assert_uint_eq(r.body.len, 0);
  fetch(&r, "/status?code=304&n=50");
  ck_assert_int_eq(r.status, 304);
  ck_assert_uint_eq(r.body.len, 0);
  fetch(&r, "/status?code=418&n=3");
  ck_assert(strncmp((char *)r.head.p, "HTTP/1.1 418 I'm a teapot\r\n", 27) == 0);
  ck_body_pattern(&r, 3);
  curl_easy_getinfo(r.h, CURLINFO_NUM_CONNECTS, &connects);
  ck_assert_int_eq(connects, 0); /* 204/304 kept the connection */
  fetch(&r, "/status?code=99");
  ck_assert_int_eq(r.status, 400);
  resp_free(&r);
}
END_TEST

START_TEST(early_hints)
{
  resp r = {0};
  fetch(&r, "/hints");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_int_eq(r.status, 200);
  ck_assert(strncmp((char *)r.head.p,
                    "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                    "HTTP/1.1 200 OK\r\n",
                    76) == 0);
  ck_assert_uint_eq(hcount(&r, "Link", IN_1XX), 1);
  ck_body_pattern(&r, 100);
  fetch(&r, "/hints?n=5000");
  ck_body_pattern(&r, 5000);
  resp_free(&r);
}
END_TEST

START_TEST(trailers)
{
  resp r = {0};
  char want[16];
  fetch(&r, "/trailers?n=70000");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_body_pattern(&r, 70000);
  ck_assert_str_eq(hval(&r, "Trailer"), "X-Checksum, X-Count");
  snprintf(want, sizeof want, "%08lx", crc32(0, r.body.p, 70000));
  ck_assert_str_eq(hfind(&r, IN_TRAILER, "X-Checksum", 0, NULL), want);
  ck_assert_str_eq(hfind(&r, IN_TRAILER, "X-Count", 0, NULL), "70000");
  fetch(&r, "/trailers");
  ck_body_pattern(&r, 1000);
  resp_free(&r);
}
END_TEST

/* ---- Broken responses ------------------------------------------------ */

START_TEST(lie_and_cut)
{
  resp r = {0};
  curl_off_t cl = 0;
  fetch(&r, "/lie");
  ck_assert_int_eq(r.rc, CURLE_PARTIAL_FILE);
  curl_easy_getinfo(r.h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
  ck_assert_int_eq(cl, (curl_off_t)4 << 30);
  ck_body_pattern(&r, 10);
  fetch(&r, "/lie?claim=1M&send=1000");
  ck_assert_int_eq(r.rc, CURLE_PARTIAL_FILE);
  ck_body_pattern(&r, 1000);
  fetch(&r, "/cut?n=1000&at=300");
  ck_assert_int_eq(r.rc, CURLE_PARTIAL_FILE);
  ck_assert_str_eq(hval(&r, "Content-Length"), "1000");
  ck_body_pattern(&r, 300);
  resp_free(&r);
}
END_TEST

START_TEST(big_and_many_headers)
{
  resp r = {0};
  char name[32], value[32];
  fetch(&r, "/bigheader?size=50k");
  ck_assert_int_eq(r.rc, CURLE_OK);
  const char *big = hval(&r, "X-Big");
  ck_assert_ptr_nonnull(big);
  ck_assert_uint_eq(strlen(big), 50 * 1024);
  ck_assert_uint_eq(strspn(big, "a"), 50 * 1024);
  ck_assert_str_eq((char *)r.body.p, "ok");
  fetch(&r, "/manyheaders?count=500");
  ck_assert_int_eq(r.rc, CURLE_OK);
  for (int i = 0; i < 500; i++) {
    snprintf(name, sizeof name, "X-H%d", i);
    snprintf(value, sizeof value, "v%d", i);
    ck_assert_str_eq(hval(&r, name), value);
  }
  ck_assert_str_eq((char *)r.body.p, "ok");
  resp_free(&r);

  gbuf out = {0};
  raw_get("GET /bigheader HTTP/1.1\r\nHost: x\r\n\r\n", &out);
  const char *s = (const char *)out.p, *line = strstr(s, "\r\nX-Big: ");
  ck_assert_ptr_nonnull(line);
  ck_assert_uint_eq(strspn(line + 9, "a"), 1 << 20);
  ck_assert_ptr_nonnull(strstr(line + 9 + (1 << 20), "\r\nContent-Length: 2\r\n"));
  ck_assert_str_eq(s + out.len - 6, "\r\n\r\nok");
  gbuf_free(&out);
}
END_TEST

START_TEST(bad_chunk)
{
  resp r = {0};
  fetch(&r, "/badchunk");
  ck_assert_int_ne(r.rc, CURLE_OK);
  ck_assert_uint_le(r.body.len, 10);
  ck_pattern_at(r.body.p, r.body.len, 0);
  resp_free(&r);
  gbuf out = {0};
  raw_get("GET /badchunk HTTP/1.1\r\nHost: x\r\n\r\n", &out);
  const char *body = strstr((char *)out.p, "\r\n\r\n");
  ck_assert_ptr_nonnull(body);
  body += 4;
  ck_assert_uint_eq(out.len - (size_t)(body - (char *)out.p), 19);
  ck_assert_mem_eq(body, "a\r\n", 3);
  ck_pattern_at((const unsigned char *)body + 3, 10, 0);
  ck_assert_mem_eq(body + 13, "\r\nzz\r\n", 6);
  gbuf_free(&out);
}
END_TEST

START_TEST(header_spellings)
{
  resp r = {0};
  fetch(&r, "/headers");
  ck_assert_int_eq(r.rc, CURLE_OK);
  ck_assert_str_eq(hval(&r, "Content-Type"), "text/plain");
  ck_assert_uint_eq(hcount(&r, "set-cookie", IN_HEADER), 3);
  const char *cookies[] = {"a=1", "b=2", "c=3"};
  for (size_t i = 0; i < 3; i++) {
    ck_assert_str_eq(hfind(&r, IN_HEADER, "Set-Cookie", i, NULL), cookies[i]);
  }
  const char *head = (const char *)r.head.p;
  ck_assert_ptr_nonnull(
      strstr(head, "\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\n"));
  ck_assert_ptr_nonnull(strstr(head, "\r\nX-Empty:\r\n"));
  ck_assert_ptr_nonnull(strstr(head, "\r\nX-Spaces:    padded   \r\n"));
  ck_assert_str_eq(hval(&r, "X-Empty"), "");
  ck_assert_str_eq(hval(&r, "X-Spaces"), "padded");
  ck_assert_str_eq((char *)r.body.p, "hello");
  resp_free(&r);
}
END_TEST

START_TEST(echo_request_head)
{
  resp r = {0};
  req_opts o = {.header = "X-Test: yes", .accept_encoding = "gzip, deflate"};
  fetch_opts(&r, "/echo?q=1", &o);
  ck_assert_int_eq(r.rc, CURLE_OK);
  const char *b = (const char *)r.body.p;
  ck_assert(strncmp(b, "GET /echo?q=1 HTTP/1.1\r\n", 24) == 0);
  ck_assert_ptr_nonnull(strstr(b, "\r\nAccept-Encoding: gzip, deflate\r\n"));
  ck_assert_ptr_nonnull(strstr(b, "\r\nX-Test: yes\r\n"));
  ck_assert_str_eq(b + r.body.len - 4, "\r\n\r\n");
  resp_free(&r);
}
END_TEST

/* ---- Concurrency and shutdown ---------------------------------------- */

/* Client thread: six requests, each checked; returns the failure count. */
static void *fetch_many(void *arg)
{
  static const struct {
    const char *path;
    size_t n;
    bool gzip;
  } reqs[] = {
      {"/bytes?n=1M", 1 << 20, false},
      {"/gzip?n=1M&coding=gzip", 1 << 20, true},
      {"/bytes?n=777&te=chunked", 777, false},
  };
  intptr_t failures = 0;
  resp r = {0};
  (void)arg;
  for (int i = 0; i < 6; i++) {
    gbuf plain = {0};
    fetch(&r, reqs[i % 3].path);
    if (reqs[i % 3].gzip)
      inflate_all(r.body.p, r.body.len, 31, &plain);
    const gbuf *got = reqs[i % 3].gzip ? &plain : &r.body;
    if (r.rc != CURLE_OK || r.status != 200 || got->len != reqs[i % 3].n ||
        pattern_mismatch(got->p, got->len, 0) != got->len)
      failures++;
    gbuf_free(&plain);
  }
  resp_free(&r);
  return (void *)failures;
}

START_TEST(concurrent_clients)
{
  enum { THREADS = 8 };
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, fetch_many, NULL), 0);
  for (int i = 0; i < THREADS; i++) {
    void *failures;
    pthread_join(t[i], &failures);
    ck_assert_int_eq((intptr_t)failures, 0);
  }
  ck_assert_uint_eq(ts_requests(srv), THREADS * 6);
}
END_TEST

static char slow_url[128];

static void *slow_fetch(void *arg)
{
  fetch_url(arg, slow_url, NULL);
  return NULL;
}

START_TEST(stop_interrupts_slow_responses)
{
  resp r = {0};
  pthread_t t;
  /* One byte per second: about 17 minutes unless ts_stop cuts it (and
   * 120 s, the client's CURLOPT_TIMEOUT, if ts_stop waited for the client
   * to give up). */
  ts_url(srv, "/bytes?n=1000&write=1&delay_us=1000000", slow_url, sizeof slow_url);
  ck_assert_int_eq(pthread_create(&t, NULL, slow_fetch, &r), 0);
  while (atomic_load(&r.arrived) == 0) /* the response is under way */
    usleep(1000);
  ts_stop(srv);
  srv = NULL;
  pthread_join(t, NULL);
  ck_assert_msg(r.rc != CURLE_OK && r.rc != CURLE_OPERATION_TIMEDOUT, "%s",
                curl_easy_strerror(r.rc));
  ck_assert_uint_ge(r.body.len, 1);
  ck_assert_uint_lt(r.body.len, 1000);
  ck_pattern_at(r.body.p, r.body.len, 0);
  resp_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */

static TCase *tcase(const char *name, double timeout)
{
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, timeout);
  return tc;
}

static Suite *server_suite(void)
{
  Suite *s = suite_create("test_server");
  TCase *basic = tcase("basic", 120);
  tcase_add_test(basic, pattern_is_consistent_and_aperiodic);
  tcase_add_test(basic, url_and_port);
  tcase_add_test(basic, unknown_path_and_bad_params);
  tcase_add_test(basic, bytes_length);
  tcase_add_test(basic, bytes_beyond_precomputed);
  tcase_add_test(basic, bytes_chunked);
  tcase_add_test(basic, bytes_close);
  tcase_add_test(basic, bytes_drip);
  tcase_add_test(basic, keepalive_and_request_count);
  tcase_add_test(basic, head_requests);
  tcase_add_test(basic, post_bodies_and_expect);
  tcase_add_test(basic, pipelined_requests);
  tcase_add_test(basic, http10_and_oversized_head);
  suite_add_tcase(s, basic);

  TCase *enc = tcase("encodings", 600);
  tcase_add_test(enc, gzip_codings);
  tcase_add_test(enc, gzip_members_chunked_and_cached);
  tcase_add_test(enc, bomb_small_sizes);
  tcase_add_test(enc, bomb_default_1g);
  tcase_add_test(enc, corrupt_gzip);
  tcase_add_test(enc, encoding_header_verbatim);
  suite_add_tcase(s, enc);

  TCase *http = tcase("http", 120);
  tcase_add_test(http, redirects);
  tcase_add_test(http, status_codes);
  tcase_add_test(http, early_hints);
  tcase_add_test(http, trailers);
  tcase_add_test(http, lie_and_cut);
  tcase_add_test(http, big_and_many_headers);
  tcase_add_test(http, bad_chunk);
  tcase_add_test(http, header_spellings);
  tcase_add_test(http, echo_request_head);
  suite_add_tcase(s, http);

  TCase *conc = tcase("concurrency", 300);
  tcase_add_test(conc, concurrent_clients);
  tcase_add_test(conc, stop_interrupts_slow_responses);
  suite_add_tcase(s, conc);
  return s;
}

int main(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
  SRunner *sr = srunner_create(server_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
