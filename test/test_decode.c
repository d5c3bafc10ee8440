/* Unit tests for lib/decode.c: Content-Encoding parsing, chained gzip and
 * deflate decoding into a capped sink, the cap, corrupt input, allocation
 * failures and reuse. Test data is compressed here with zlib. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZLIB_CONST
#include <zlib.h>

#include "decode.h"

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define NO_CAP SIZE_MAX
#define ALL_AT_ONCE SIZE_MAX
#define MAX_CODINGS 5

/* windowBits for deflateInit2: the three wrappers. */
#define W_GZIP (16 + 15)
#define W_ZLIB 15
#define W_RAW (-15)

/* An assertion for hot paths: Check's ck_assert records a mark point on
 * success (a write to its pipe), far too slow inside per-byte loops. */
#define REQUIRE(cond)                                                         \
  do {                                                                        \
    if (!(cond))                                                              \
      ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);                  \
  } while (0)

static const size_t chunkings[] = {1, 7, 16384, ALL_AT_ONCE};
#define N_CHUNKINGS (sizeof chunkings / sizeof chunkings[0])

/* ---- Byte strings ------------------------------------------------------- */

typedef struct bytes {
  unsigned char *p;
  size_t n;
  size_t cap; /* bytes allocated at p */
} bytes;

static void bytes_append(bytes *b, const void *src, size_t n)
{
  if (b->n + n > b->cap) {
    size_t cap = b->cap * 2 > b->n + n ? b->cap * 2 : b->n + n;
    unsigned char *p = realloc(b->p, cap);

    REQUIRE(p != NULL);
    b->p = p;
    b->cap = cap;
  }
  if (n > 0)
    memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void bytes_free(bytes *b)
{
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

static void assert_same(const unsigned char *got, size_t got_n,
                        const unsigned char *want, size_t want_n)
{
  ck_assert_uint_eq(got_n, want_n);
  if (want_n > 0)
    ck_assert_int_eq(memcmp(got, want, want_n), 0);
}

/* Text-like data of n bytes, compressible about 3:1, from a fixed seed. */
static bytes make_text(size_t n)
{
  static const char *words[] = {"response", "chain", "buffer", "pool",
                                "header",   "body",  "gzip",   "deflate",
                                "curl",     "cap",   "the",    "of"};
  bytes b = {NULL, 0, 0};
  uint32_t x = 12345;

  while (b.n < n) {
    char tmp[32];
    int k;

    x = x * 1103515245u + 12345u;
    if ((x >> 16) % 5 == 0)
      k = snprintf(tmp, sizeof tmp, "%u ", (unsigned)(x >> 8) % 100000u);
    else
      k = snprintf(tmp, sizeof tmp, "%s ", words[(x >> 16) % 12]);
    bytes_append(&b, tmp, (size_t)k < n - b.n ? (size_t)k : n - b.n);
  }
  return b;
}

/* src compressed as one stream at `level` with the wrapper wbits selects. */
static bytes zcompress_level(const unsigned char *src, size_t n, int wbits,
                             int level)
{
  z_stream zs;
  bytes out = {NULL, 0, 0};
  size_t bound;

  memset(&zs, 0, sizeof zs);
  ck_assert_int_eq(deflateInit2(&zs, level, Z_DEFLATED, wbits, 8,
                                Z_DEFAULT_STRATEGY), Z_OK);
  bound = deflateBound(&zs, (uLong)n) + 64;
  out.p = malloc(bound);
  ck_assert_ptr_nonnull(out.p);
  zs.next_in = src;
  zs.avail_in = (uInt)n;
  zs.next_out = out.p;
  zs.avail_out = (uInt)bound;
  ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.n = bound - zs.avail_out;
  out.cap = bound;
  deflateEnd(&zs);
  return out;
}

static bytes zcompress(const unsigned char *src, size_t n, int wbits)
{
  return zcompress_level(src, n, wbits, Z_DEFAULT_COMPRESSION);
}

/* src as gzip split in `members` members, concatenated. */
static bytes gzip_members(const unsigned char *src, size_t n, size_t members)
{
  bytes out = {NULL, 0, 0};
  size_t i, at = 0;

  for (i = 0; i < members; i++) {
    size_t part = i + 1 == members ? n - at : n / members;
    bytes m = zcompress(src + at, part, W_GZIP);

    bytes_append(&out, m.p, m.n);
    bytes_free(&m);
    at += part;
  }
  return out;
}

/* ---- Sink over a capped growable buffer -------------------------------- */

typedef struct tsink {
  unsigned char *data;
  size_t len, alloc, cap;
  size_t step;            /* largest region offered at once */
  size_t offered;         /* size of the region last offered */
  size_t reserves_at_cap; /* reserve() calls answered with 0 bytes */
  rc_code fail;           /* returned by reserve() when not RC_OK */
  rc__sink sink;
} tsink;

static rc_code tsink_reserve(void *ctx, unsigned char **out, size_t *avail)
{
  tsink *t = ctx;
  size_t want;

  if (t->fail != RC_OK)
    return t->fail;
  if (t->len >= t->cap) {
    t->reserves_at_cap++;
    *out = NULL;
    *avail = t->offered = 0;
    return RC_OK;
  }
  want = t->cap - t->len < t->step ? t->cap - t->len : t->step;
  if (t->len + want > t->alloc) {
    size_t alloc = t->alloc * 2 > t->len + want ? t->alloc * 2 : t->len + want;
    unsigned char *p = realloc(t->data, alloc);

    REQUIRE(p != NULL);
    t->data = p;
    t->alloc = alloc;
  }
  *out = t->data + t->len;
  *avail = t->offered = want;
  return RC_OK;
}

static void tsink_commit(void *ctx, size_t n)
{
  tsink *t = ctx;

  REQUIRE(n <= t->offered);
  t->len += n;
  t->offered -= n;
}

/* An odd region size so that regions never line up with zlib's blocks. */
static void tsink_init(tsink *t, size_t cap)
{
  memset(t, 0, sizeof *t);
  t->cap = cap;
  t->step = 4093;
  t->fail = RC_OK;
  t->sink.reserve = tsink_reserve;
  t->sink.commit = tsink_commit;
  t->sink.ctx = t;
}

static void tsink_free(tsink *t) { free(t->data); }

/* ---- Allocators --------------------------------------------------------- */

/* Counts allocations and live blocks; fails allocation number fail_at. */
typedef struct talloc {
  size_t calls, live, fail_at;
  int failed;
} talloc;

static int talloc_fails(talloc *ta)
{
  ta->calls++;
  if (ta->fail_at != 0 && ta->calls == ta->fail_at) {
    ta->failed = 1;
    return 1;
  }
  return 0;
}

static void *ta_malloc(size_t size, void *ud)
{
  talloc *ta = ud;
  void *p;

  if (talloc_fails(ta))
    return NULL;
  p = malloc(size);
  if (p != NULL)
    ta->live++;
  return p;
}

static void *ta_realloc(void *ptr, size_t size, void *ud)
{
  talloc *ta = ud;
  void *p;

  if (talloc_fails(ta))
    return NULL;
  p = realloc(ptr, size);
  if (p != NULL && ptr == NULL)
    ta->live++;
  return p;
}

static void ta_free(void *ptr, void *ud)
{
  talloc *ta = ud;

  if (ptr != NULL)
    ta->live--;
  free(ptr);
}

static rc_allocator talloc_allocator(talloc *ta)
{
  rc_allocator a;

  a.malloc = ta_malloc;
  a.realloc = ta_realloc;
  a.free = ta_free;
  a.ud = ta;
  return a;
}

static void *plain_malloc(size_t size, void *ud)
{
  (void)ud;
  return malloc(size);
}

static void *plain_realloc(void *ptr, size_t size, void *ud)
{
  (void)ud;
  return realloc(ptr, size);
}

static void plain_free(void *ptr, void *ud)
{
  (void)ud;
  free(ptr);
}

static const rc_allocator plain = {plain_malloc, plain_realloc, plain_free,
                                   NULL};

/* ---- Driving the decoder ----------------------------------------------- */

static rc__decoder *start_new(const rc_allocator *a, const char *coding)
{
  rc__coding chain[MAX_CODINGS];
  size_t n;
  rc__decoder *d;

  ck_assert_int_eq(rc__coding_parse(coding, strlen(coding), chain,
                                    MAX_CODINGS, &n), RC_OK);
  d = rc__decoder_new(a);
  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(rc__decoder_start(d, chain, n), RC_OK);
  return d;
}

static rc_code start_body(rc__decoder *d, const char *coding)
{
  rc__coding chain[MAX_CODINGS];
  size_t n;

  ck_assert_int_eq(rc__coding_parse(coding, strlen(coding), chain,
                                    MAX_CODINGS, &n), RC_OK);
  return rc__decoder_start(d, chain, n);
}

/* Feeds in[0..n) in pieces of `chunk` bytes until a write fails. Stores in
 * *fed the bytes handed over, the failing write included. */
static rc_code feed(rc__decoder *d, const unsigned char *in, size_t n,
                    size_t chunk, tsink *t, size_t *fed)
{
  size_t pos = 0;
  rc_code rc = RC_OK;

  while (pos < n && rc == RC_OK) {
    size_t k = n - pos < chunk ? n - pos : chunk;

    rc = rc__decoder_write(d, in + pos, k, &t->sink);
    pos += k;
  }
  if (fed != NULL)
    *fed = pos;
  return rc;
}

/* Decodes enc with `coding` at every chunking and expects `want` exactly,
 * every write RC_OK and the body ended. */
static void expect_decodes(const char *coding, const bytes *enc,
                           const bytes *want)
{
  size_t c;

  for (c = 0; c < N_CHUNKINGS; c++) {
    rc__decoder *d = start_new(&plain, coding);
    tsink t;

    tsink_init(&t, NO_CAP);
    ck_assert_msg(feed(d, enc->p, enc->n, chunkings[c], &t, NULL) == RC_OK,
                  "%s, chunks of %zu", coding, chunkings[c]);
    ck_assert_msg(rc__decoder_ended(d), "%s not ended", coding);
    assert_same(t.data, t.len, want->p, want->n);
    rc__decoder_free(d);
    tsink_free(&t);
  }
}

/* Decodes enc and expects the first failing write to return `code`, with
 * what was decoded before it equal to want[0..kept). */
static void expect_fails(const char *coding, const bytes *enc, rc_code code,
                         const bytes *want, size_t kept)
{
  size_t c;

  for (c = 0; c < N_CHUNKINGS; c++) {
    rc__decoder *d = start_new(&plain, coding);
    tsink t;

    tsink_init(&t, NO_CAP);
    ck_assert_msg(feed(d, enc->p, enc->n, chunkings[c], &t, NULL) == code,
                  "%s, chunks of %zu", coding, chunkings[c]);
    ck_assert(!rc__decoder_ended(d));
    assert_same(t.data, t.len, want->p, kept);
    rc__decoder_free(d);
    tsink_free(&t);
  }
}

/* ---- Parsing ------------------------------------------------------------ */

static void expect_parse(const char *value, rc_code code, size_t want_n,
                         const rc__coding *want)
{
  rc__coding chain[MAX_CODINGS];
  size_t n = 99, i;

  ck_assert_int_eq(rc__coding_parse(value, strlen(value), chain, MAX_CODINGS,
                                    &n), code);
  if (code != RC_OK)
    return;
  ck_assert_uint_eq(n, want_n);
  for (i = 0; i < n; i++)
    ck_assert_int_eq(chain[i], want[i]);
}

START_TEST(test_parse_names)
{
  static const rc__coding g[] = {RC__CODING_GZIP};
  static const rc__coding f[] = {RC__CODING_DEFLATE};
  static const rc__coding fg[] = {RC__CODING_DEFLATE, RC__CODING_GZIP};
  static const rc__coding gfg[] = {RC__CODING_GZIP, RC__CODING_DEFLATE,
                                   RC__CODING_GZIP};

  expect_parse("gzip", RC_OK, 1, g);
  expect_parse("x-gzip", RC_OK, 1, g);
  expect_parse("GZip", RC_OK, 1, g);
  expect_parse("X-GZIP", RC_OK, 1, g);
  expect_parse("deflate", RC_OK, 1, f);
  expect_parse("DEFLATE", RC_OK, 1, f);
  expect_parse(" \tdeflate ,\tgzip\t ", RC_OK, 2, fg);
  expect_parse("deflate,gzip", RC_OK, 2, fg);
  expect_parse("gzip, identity, deflate,, gzip", RC_OK, 3, gfg);
  expect_parse("identity", RC_OK, 0, NULL);
  expect_parse("Identity, identity", RC_OK, 0, NULL);
  expect_parse("", RC_OK, 0, NULL);
  expect_parse(" , ,\t", RC_OK, 0, NULL);
}
END_TEST

START_TEST(test_parse_unknown)
{
  expect_parse("br", RC_E_INVAL, 0, NULL);
  expect_parse("zstd", RC_E_INVAL, 0, NULL);
  expect_parse("gzip, zstd", RC_E_INVAL, 0, NULL);
  expect_parse("gzipx", RC_E_INVAL, 0, NULL);
  expect_parse("gzi", RC_E_INVAL, 0, NULL);
  expect_parse("g zip", RC_E_INVAL, 0, NULL);
  expect_parse("compress", RC_E_INVAL, 0, NULL);
}
END_TEST

START_TEST(test_parse_limits)
{
  static const rc__coding five[] = {RC__CODING_GZIP, RC__CODING_GZIP,
                                    RC__CODING_GZIP, RC__CODING_GZIP,
                                    RC__CODING_DEFLATE};
  /* A guard past the max: the parser must never write it. */
  rc__coding chain[MAX_CODINGS + 1];
  char value[1024] = "";
  size_t n = 99, i;

  expect_parse("gzip, gzip, gzip, gzip, deflate", RC_OK, 5, five);
  expect_parse("identity, gzip, gzip, gzip, gzip, identity, deflate", RC_OK, 5,
               five);
  expect_parse("gzip, gzip, gzip, gzip, gzip, gzip", RC_E_CODINGS, 0, NULL);

  for (i = 0; i < 100; i++)
    strcat(value, "gzip,");
  chain[MAX_CODINGS] = (rc__coding)77;
  ck_assert_int_eq(rc__coding_parse(value, strlen(value), chain, MAX_CODINGS,
                                    &n), RC_E_CODINGS);
  ck_assert_int_eq(chain[MAX_CODINGS], (rc__coding)77);
  ck_assert_uint_eq(n, 0);

  /* The length bounds the value: the rest of the string is not read. */
  ck_assert_int_eq(rc__coding_parse("gzip, br", 4, chain, MAX_CODINGS, &n),
                   RC_OK);
  ck_assert_uint_eq(n, 1);
}
END_TEST

/* ---- Round trips -------------------------------------------------------- */

/* A coding header and how to build a body for it: wbits[] applied in order
 * to the text; the step at index `multi` (if >= 0) makes 3 gzip members. */
typedef struct rt_case {
  const char *coding;
  int wbits[3];
  size_t steps;
  int multi;
} rt_case;

static const rt_case rt_cases[] = {
    {"gzip", {W_GZIP}, 1, -1},
    {"x-gzip", {W_GZIP}, 1, -1},
    {"deflate", {W_ZLIB}, 1, -1},
    {"deflate", {W_RAW}, 1, -1},
    {"gzip, gzip", {W_GZIP, W_GZIP}, 2, -1},
    {"deflate, gzip", {W_ZLIB, W_GZIP}, 2, -1},
    {"deflate, gzip", {W_RAW, W_GZIP}, 2, -1},
    {"gzip", {W_GZIP}, 1, 0},
    {"gzip, gzip", {W_GZIP, W_GZIP}, 2, 0},
    {"gzip, gzip", {W_GZIP, W_GZIP}, 2, 1},
    {"gzip, deflate, gzip", {W_GZIP, W_RAW, W_GZIP}, 3, -1},
    {"identity, GZIP, identity", {W_GZIP}, 1, -1},
};

static bytes encode_case(const rt_case *rc, const bytes *plain_text)
{
  bytes cur = {NULL, 0, 0};
  size_t i;

  bytes_append(&cur, plain_text->p, plain_text->n);
  for (i = 0; i < rc->steps; i++) {
    bytes next = (int)i == rc->multi ? gzip_members(cur.p, cur.n, 3)
                                     : zcompress(cur.p, cur.n, rc->wbits[i]);

    bytes_free(&cur);
    cur = next;
  }
  return cur;
}

START_TEST(test_roundtrip)
{
  const rt_case *rc = &rt_cases[_i];
  bytes text = make_text(200 * KIB);
  bytes enc = encode_case(rc, &text);

  expect_decodes(rc->coding, &enc, &text);
  bytes_free(&enc);
  bytes_free(&text);
}
END_TEST

START_TEST(test_empty_bodies)
{
  bytes none = {NULL, 0, 0};
  bytes g = zcompress((const unsigned char *)"", 0, W_GZIP);
  bytes z = zcompress((const unsigned char *)"", 0, W_ZLIB);
  bytes r = zcompress((const unsigned char *)"", 0, W_RAW);
  bytes gg = zcompress(g.p, g.n, W_GZIP);

  expect_decodes("gzip", &g, &none);
  expect_decodes("deflate", &z, &none);
  expect_decodes("deflate", &r, &none);
  expect_decodes("gzip, gzip", &gg, &none);
  bytes_free(&g);
  bytes_free(&z);
  bytes_free(&r);
  bytes_free(&gg);
}
END_TEST

/* ---- The cap ------------------------------------------------------------ */

START_TEST(test_cap_truncates)
{
  const rt_case *rc = &rt_cases[_i];
  bytes text = make_text(200 * KIB);
  bytes enc = encode_case(rc, &text);
  const size_t cap = 10000;
  size_t c;

  for (c = 0; c < N_CHUNKINGS; c++) {
    rc__decoder *d = start_new(&plain, rc->coding);
    tsink t;

    tsink_init(&t, cap);
    ck_assert_int_eq(feed(d, enc.p, enc.n, chunkings[c], &t, NULL),
                     RC_TRUNCATED);
    assert_same(t.data, t.len, text.p, cap);
    ck_assert(!rc__decoder_ended(d));
    if (chunkings[c] == ALL_AT_ONCE)
      ck_assert_uint_le(t.reserves_at_cap, 2);
    /* The result stays: nothing more is decoded. */
    ck_assert_int_eq(rc__decoder_write(d, enc.p, 1, &t.sink), RC_TRUNCATED);
    ck_assert_uint_eq(t.len, cap);
    rc__decoder_free(d);
    tsink_free(&t);
  }
  bytes_free(&enc);
  bytes_free(&text);
}
END_TEST

START_TEST(test_cap_exact)
{
  const rt_case *rc = &rt_cases[_i];
  bytes text = make_text(200 * KIB);
  bytes enc = encode_case(rc, &text);
  size_t c;

  for (c = 0; c < N_CHUNKINGS; c++) {
    rc__decoder *d = start_new(&plain, rc->coding);
    tsink t;

    tsink_init(&t, text.n);
    ck_assert_int_eq(feed(d, enc.p, enc.n, chunkings[c], &t, NULL), RC_OK);
    ck_assert(rc__decoder_ended(d));
    assert_same(t.data, t.len, text.p, text.n);
    rc__decoder_free(d);
    tsink_free(&t);
  }
  bytes_free(&enc);
  bytes_free(&text);
}
END_TEST

/* Members after the cap: empty ones leave the body complete, one more
 * byte truncates it; a zero cap behaves the same way. */
START_TEST(test_cap_members)
{
  bytes text = make_text(50 * KIB);
  bytes enc = zcompress(text.p, text.n, W_GZIP);
  bytes empty = zcompress((const unsigned char *)"", 0, W_GZIP);
  bytes one = zcompress((const unsigned char *)"x", 1, W_GZIP);
  bytes with_empty = {NULL, 0, 0}, with_one = {NULL, 0, 0};
  size_t c;

  bytes_append(&with_empty, enc.p, enc.n);
  bytes_append(&with_empty, empty.p, empty.n);
  bytes_append(&with_empty, empty.p, empty.n);
  bytes_append(&with_one, with_empty.p, with_empty.n);
  bytes_append(&with_one, one.p, one.n);

  for (c = 0; c < N_CHUNKINGS; c++) {
    rc__decoder *d;
    tsink t;

    d = start_new(&plain, "gzip");
    tsink_init(&t, text.n);
    ck_assert_int_eq(feed(d, with_empty.p, with_empty.n, chunkings[c], &t,
                          NULL), RC_OK);
    ck_assert(rc__decoder_ended(d));
    assert_same(t.data, t.len, text.p, text.n);
    rc__decoder_free(d);
    tsink_free(&t);

    d = start_new(&plain, "gzip");
    tsink_init(&t, text.n);
    ck_assert_int_eq(feed(d, with_one.p, with_one.n, chunkings[c], &t, NULL),
                     RC_TRUNCATED);
    assert_same(t.data, t.len, text.p, text.n);
    rc__decoder_free(d);
    tsink_free(&t);

    d = start_new(&plain, "gzip");
    tsink_init(&t, 0);
    ck_assert_int_eq(feed(d, empty.p, empty.n, chunkings[c], &t, NULL), RC_OK);
    ck_assert(rc__decoder_ended(d));
    rc__decoder_free(d);
    tsink_free(&t);

    d = start_new(&plain, "gzip");
    tsink_init(&t, 0);
    ck_assert_int_eq(feed(d, one.p, one.n, chunkings[c], &t, NULL),
                     RC_TRUNCATED);
    ck_assert_uint_eq(t.len, 0);
    rc__decoder_free(d);
    tsink_free(&t);
  }
  bytes_free(&text);
  bytes_free(&enc);
  bytes_free(&empty);
  bytes_free(&one);
  bytes_free(&with_empty);
  bytes_free(&with_one);
}
END_TEST

/* gzip of 64 MiB of zeros, built with a streaming deflate. Its CRC is
 * spoiled: a decoder that inflated all of it would return RC_E_DECODE, so
 * RC_TRUNCATED proves that it stopped early even when given everything. */
static bytes make_bomb(void)
{
  static const unsigned char zeros[64 * 1024];
  bytes out = {NULL, 0, 0};
  unsigned char buf[16 * 1024];
  z_stream zs;
  size_t i;
  int zr;

  memset(&zs, 0, sizeof zs);
  ck_assert_int_eq(deflateInit2(&zs, 9, Z_DEFLATED, W_GZIP, 8,
                                Z_DEFAULT_STRATEGY), Z_OK);
  for (i = 0; i < 1024; i++) {
    zs.next_in = zeros;
    zs.avail_in = sizeof zeros;
    do {
      zs.next_out = buf;
      zs.avail_out = sizeof buf;
      REQUIRE(deflate(&zs, Z_NO_FLUSH) == Z_OK);
      bytes_append(&out, buf, sizeof buf - zs.avail_out);
    } while (zs.avail_out == 0);
  }
  do {
    zs.next_out = buf;
    zs.avail_out = sizeof buf;
    zr = deflate(&zs, Z_FINISH);
    REQUIRE(zr == Z_OK || zr == Z_STREAM_END);
    bytes_append(&out, buf, sizeof buf - zs.avail_out);
  } while (zr != Z_STREAM_END);
  ck_assert_uint_eq(zs.total_in, 64 * MIB);
  deflateEnd(&zs);
  out.p[out.n - 8] ^= 0xff; /* CRC-32 */
  return out;
}

/* Feeds the bomb at several chunkings (printed 0: all at once). With small
 * chunks the bytes fed
 * until RC_TRUNCATED measure what the decoder consumed; check_fraction
 * requires that to be under 10% of the bomb. */
static void bomb_at_cap(const char *coding, const bytes *bomb,
                        int check_fraction)
{
  static const size_t bomb_chunkings[] = {1, 7, 512, 16384, ALL_AT_ONCE};
  const size_t cap = MIB;
  size_t c, i;

  for (c = 0; c < sizeof bomb_chunkings / sizeof bomb_chunkings[0]; c++) {
    rc__decoder *d = start_new(&plain, coding);
    size_t fed;
    clock_t t0 = clock();
    tsink t;

    tsink_init(&t, cap);
    ck_assert_int_eq(feed(d, bomb->p, bomb->n, bomb_chunkings[c], &t, &fed),
                     RC_TRUNCATED);
    ck_assert_uint_eq(t.len, cap);
    for (i = 0; i < cap; i++)
      REQUIRE(t.data[i] == 0);
    printf("bomb %-10s chunks of %5zu: fed %6zu of %zu bytes (%6.2f%%), "
           "%.1f ms CPU\n", coding, bomb_chunkings[c] == ALL_AT_ONCE ? 0 :
           bomb_chunkings[c], fed, bomb->n,
           100.0 * (double)fed / (double)bomb->n,
           1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
    if (check_fraction && bomb_chunkings[c] <= 512)
      ck_assert_uint_lt(fed * 10, bomb->n);
    rc__decoder_free(d);
    tsink_free(&t);
  }
}

START_TEST(test_cap_bomb)
{
  bytes bomb = make_bomb();

  bomb_at_cap("gzip", &bomb, 1);
  bytes_free(&bomb);
}
END_TEST

/* Compressed again, the bomb shrinks to a few hundred bytes, of which the
 * gzip header and the first blocks are a large share whatever the decoder
 * does; so the fraction is measured on an outer member of stored blocks,
 * where each outer byte carries one inner byte. */
START_TEST(test_cap_bomb_nested)
{
  bytes inner = make_bomb();
  bytes stored = zcompress_level(inner.p, inner.n, W_GZIP, 0);
  bytes packed = zcompress_level(inner.p, inner.n, W_GZIP, 9);

  bomb_at_cap("gzip, gzip", &stored, 1);
  bomb_at_cap("gzip, gzip", &packed, 0);
  bytes_free(&stored);
  bytes_free(&packed);
  bytes_free(&inner);
}
END_TEST

/* ---- Corrupt input ------------------------------------------------------ */

START_TEST(test_corrupt_header)
{
  bytes text = make_text(20 * KIB);
  bytes enc = zcompress(text.p, text.n, W_GZIP);
  bytes bad = {(unsigned char *)"\xff\xff\xff\xff", 4, 0};

  enc.p[0] = 0x1e;
  expect_fails("gzip", &enc, RC_E_DECODE, &text, 0);
  enc.p[0] = 0x1f;
  enc.p[1] = 0x8c;
  expect_fails("gzip", &enc, RC_E_DECODE, &text, 0);
  enc.p[1] = 0x8b;
  enc.p[2] = 7; /* compression method other than deflate */
  expect_fails("gzip", &enc, RC_E_DECODE, &text, 0);
  /* Not a zlib header, so raw deflate: block type 3 is invalid. */
  expect_fails("deflate", &bad, RC_E_DECODE, &text, 0);
  bytes_free(&enc);
  bytes_free(&text);
}
END_TEST

/* A spoiled trailer is found after all the data was decoded; it all stays
 * in the sink. */
START_TEST(test_corrupt_trailer)
{
  bytes text = make_text(100 * KIB);
  bytes g = zcompress(text.p, text.n, W_GZIP);
  bytes z = zcompress(text.p, text.n, W_ZLIB);
  bytes inner, nested;

  g.p[g.n - 8] ^= 1; /* CRC-32 */
  expect_fails("gzip", &g, RC_E_DECODE, &text, text.n);
  g.p[g.n - 8] ^= 1;
  g.p[g.n - 1] ^= 1; /* ISIZE */
  expect_fails("gzip", &g, RC_E_DECODE, &text, text.n);
  z.p[z.n - 1] ^= 1; /* Adler-32 */
  expect_fails("deflate", &z, RC_E_DECODE, &text, text.n);

  inner = zcompress(text.p, text.n, W_GZIP);
  inner.p[inner.n - 5] ^= 0x80;
  nested = zcompress(inner.p, inner.n, W_GZIP);
  expect_fails("gzip, gzip", &nested, RC_E_DECODE, &text, text.n);
  bytes_free(&g);
  bytes_free(&z);
  bytes_free(&inner);
  bytes_free(&nested);
  bytes_free(&text);
}
END_TEST

START_TEST(test_corrupt_truncated)
{
  static const struct {
    const char *coding;
    int wbits;
  } cases[] = {{"gzip", W_GZIP}, {"deflate", W_ZLIB}, {"deflate", W_RAW}};
  bytes text = make_text(100 * KIB);
  size_t k, c, cut;

  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    bytes enc = zcompress(text.p, text.n, cases[k].wbits);
    const size_t cuts[] = {1, enc.n / 2, enc.n - 1};

    for (cut = 0; cut < sizeof cuts / sizeof cuts[0]; cut++) {
      for (c = 0; c < N_CHUNKINGS; c++) {
        rc__decoder *d = start_new(&plain, cases[k].coding);
        tsink t;

        tsink_init(&t, NO_CAP);
        ck_assert_int_eq(feed(d, enc.p, cuts[cut], chunkings[c], &t, NULL),
                         RC_OK);
        ck_assert(!rc__decoder_ended(d));
        ck_assert_uint_le(t.len, text.n);
        assert_same(t.data, t.len, text.p, t.len);
        rc__decoder_free(d);
        tsink_free(&t);
      }
    }
    bytes_free(&enc);
  }
  bytes_free(&text);
}
END_TEST

/* Builds `body` followed by the n bytes of `tail`. */
static bytes with_tail(const bytes *body, const char *tail, size_t n)
{
  bytes out = {NULL, 0, 0};

  bytes_append(&out, body->p, body->n);
  bytes_append(&out, tail, n);
  return out;
}

START_TEST(test_corrupt_junk)
{
  bytes text = make_text(30 * KIB);
  bytes g = zcompress(text.p, text.n, W_GZIP);
  bytes z = zcompress(text.p, text.n, W_ZLIB);
  bytes r = zcompress(text.p, text.n, W_RAW);
  bytes x, inner, nested;
  size_t c;

  x = with_tail(&g, "junk", 4);
  expect_fails("gzip", &x, RC_E_DECODE, &text, text.n);
  bytes_free(&x);
  x = with_tail(&g, "\x1f\x00", 2); /* half a magic, then junk */
  expect_fails("gzip", &x, RC_E_DECODE, &text, text.n);
  bytes_free(&x);
  x = with_tail(&g, "\x1f\x8b\x08", 3); /* a member cut short */
  for (c = 0; c < 2; c++) {
    /* Half a magic or a partial member pending: all bytes accepted, yet the
     * body is not complete. */
    rc__decoder *d = start_new(&plain, "gzip");
    tsink t;

    tsink_init(&t, NO_CAP);
    ck_assert_int_eq(feed(d, x.p, g.n + 1 + 2 * c, 1, &t, NULL), RC_OK);
    ck_assert(!rc__decoder_ended(d));
    assert_same(t.data, t.len, text.p, text.n);
    rc__decoder_free(d);
    tsink_free(&t);
  }
  bytes_free(&x);

  x = with_tail(&z, "x", 1);
  expect_fails("deflate", &x, RC_E_DECODE, &text, text.n);
  bytes_free(&x);
  x = with_tail(&r, "x", 1);
  expect_fails("deflate", &x, RC_E_DECODE, &text, text.n);
  bytes_free(&x);
  x = with_tail(&z, "\x1f\x8b", 2); /* deflate has no members */
  expect_fails("deflate", &x, RC_E_DECODE, &text, text.n);
  bytes_free(&x);
  bytes_free(&r);
  r = zcompress(text.p, 0, W_RAW); /* 03 00: the shortest stream */
  x = with_tail(&r, "x", 1);
  expect_fails("deflate", &x, RC_E_DECODE, &text, 0);
  bytes_free(&x);

  inner = with_tail(&g, "junk", 4);
  nested = zcompress(inner.p, inner.n, W_GZIP);
  expect_fails("gzip, gzip", &nested, RC_E_DECODE, &text, text.n);
  bytes_free(&nested);
  bytes_free(&inner);
  bytes_free(&g);
  bytes_free(&z);
  bytes_free(&r);
  bytes_free(&text);
}
END_TEST

START_TEST(test_sink_error)
{
  bytes text = make_text(10 * KIB);
  bytes enc = zcompress(text.p, text.n, W_GZIP);
  rc__decoder *d = start_new(&plain, "gzip");
  tsink t;

  tsink_init(&t, NO_CAP);
  t.fail = RC_E_NOMEM;
  ck_assert_int_eq(rc__decoder_write(d, enc.p, enc.n, &t.sink), RC_E_NOMEM);
  ck_assert(!rc__decoder_ended(d));
  rc__decoder_free(d);
  tsink_free(&t);
  bytes_free(&enc);
  bytes_free(&text);
}
END_TEST

/* ---- Allocation failure and reuse -------------------------------------- */

typedef struct body {
  const char *coding;
  bytes enc;
} body;

/* The bodies of the reuse tests: gzip, deflate, and gzip twice. */
static void make_bodies(const bytes *text, body out[3])
{
  bytes inner = gzip_members(text->p, text->n, 2);

  out[0].coding = "gzip";
  out[0].enc = zcompress(text->p, text->n, W_GZIP);
  out[1].coding = "deflate";
  out[1].enc = zcompress(text->p, text->n, W_RAW);
  out[2].coding = "gzip, gzip";
  out[2].enc = zcompress(inner.p, inner.n, W_GZIP);
  bytes_free(&inner);
}

static void free_bodies(body b[3])
{
  size_t i;

  for (i = 0; i < 3; i++)
    bytes_free(&b[i].enc);
}

/* Fails allocation N for N = 1, 2, ... until a run sees no failure. Each
 * step either succeeds or reports the failure; a body after a failed one
 * decodes correctly; nothing leaks. */
START_TEST(test_alloc_failure)
{
  bytes text = make_text(40 * KIB);
  body bodies[3];
  size_t fail_at, failed_new = 0, failed_start = 0, failed_write = 0;

  make_bodies(&text, bodies);
  for (fail_at = 1;; fail_at++) {
    talloc ta = {0, 0, 0, 0};
    rc_allocator a;
    rc__decoder *d;
    size_t k;

    ta.fail_at = fail_at;
    a = talloc_allocator(&ta);
    d = rc__decoder_new(&a);
    if (d == NULL) {
      ck_assert(ta.failed);
      ck_assert_uint_eq(ta.live, 0);
      failed_new++;
      continue;
    }
    for (k = 0; k < 3; k++) {
      const body *b = &bodies[(k + fail_at) % 3];
      int failed_before = ta.failed;
      rc_code rc = start_body(d, b->coding);
      tsink t;

      tsink_init(&t, NO_CAP);
      if (rc != RC_OK)
        failed_start++;
      else if ((rc = feed(d, b->enc.p, b->enc.n, 4096, &t, NULL)) != RC_OK)
        failed_write++;
      if (rc == RC_OK) {
        ck_assert(rc__decoder_ended(d));
        assert_same(t.data, t.len, text.p, text.n);
      } else {
        ck_assert_int_eq(rc, RC_E_NOMEM);
        ck_assert(ta.failed && !failed_before);
        ck_assert(!rc__decoder_ended(d));
      }
      tsink_free(&t);
    }
    rc__decoder_free(d);
    ck_assert_uint_eq(ta.live, 0);
    if (!ta.failed)
      break;
    ck_assert_uint_lt(fail_at, 1000);
  }
  /* Every kind of failure was met: decoder, stage set-up, zlib's window. */
  ck_assert_uint_gt(failed_new, 0);
  ck_assert_uint_gt(failed_start, 0);
  ck_assert_uint_gt(failed_write, 0);
  free_bodies(bodies);
  bytes_free(&text);
}
END_TEST

START_TEST(test_reuse)
{
  static const size_t sizes[] = {7, 1000, 16384, ALL_AT_ONCE};
  bytes text = make_text(20 * KIB);
  body bodies[3];
  talloc ta = {0, 0, 0, 0};
  rc_allocator a = talloc_allocator(&ta);
  rc__decoder *d = rc__decoder_new(&a);
  size_t k, calls_after_first_round = 0;

  ck_assert_ptr_nonnull(d);
  make_bodies(&text, bodies);
  for (k = 0; k < 100; k++) {
    const body *b = &bodies[k % 3];
    tsink t;

    tsink_init(&t, NO_CAP);
    ck_assert_int_eq(start_body(d, b->coding), RC_OK);
    ck_assert_int_eq(feed(d, b->enc.p, b->enc.n, sizes[k % 4], &t, NULL),
                     RC_OK);
    ck_assert(rc__decoder_ended(d));
    assert_same(t.data, t.len, text.p, text.n);
    tsink_free(&t);
    if (k == 2)
      calls_after_first_round = ta.calls;
  }
  ck_assert_uint_eq(ta.calls, calls_after_first_round);
  rc__decoder_free(d);
  ck_assert_uint_eq(ta.live, 0);
  free_bodies(bodies);
  bytes_free(&text);
}
END_TEST

/* A body that was truncated or corrupt leaves the decoder fit for the
 * next one. */
START_TEST(test_restart_after_failure)
{
  bytes text = make_text(20 * KIB);
  body bodies[3];
  rc__decoder *d = rc__decoder_new(&plain);
  size_t k;

  ck_assert_ptr_nonnull(d);
  make_bodies(&text, bodies);
  for (k = 0; k < 9; k++) {
    const body *b = &bodies[k % 3];
    tsink t;

    tsink_init(&t, k % 3 == 1 ? 100 : NO_CAP);
    ck_assert_int_eq(start_body(d, b->coding), RC_OK);
    if (k % 3 == 1) {
      ck_assert_int_eq(feed(d, b->enc.p, b->enc.n, 7, &t, NULL),
                       RC_TRUNCATED);
    } else if (k % 3 == 2) {
      bytes bad = with_tail(&b->enc, "?", 1);

      ck_assert_int_eq(feed(d, bad.p, bad.n, 7, &t, NULL), RC_E_DECODE);
      bytes_free(&bad);
    } else {
      ck_assert_int_eq(feed(d, b->enc.p, b->enc.n, 7, &t, NULL), RC_OK);
      ck_assert(rc__decoder_ended(d));
      assert_same(t.data, t.len, text.p, text.n);
    }
    tsink_free(&t);
  }
  rc__decoder_free(d);
  free_bodies(bodies);
  bytes_free(&text);
}
END_TEST

/* ---- Suite -------------------------------------------------------------- */

static TCase *tcase(const char *name)
{
  TCase *tc = tcase_create(name);

  /* Generous: valgrind runs are slow, and the bomb is built in the test. */
  tcase_set_timeout(tc, 600);
  return tc;
}

static Suite *decode_suite(void)
{
  const int n_rt = (int)(sizeof rt_cases / sizeof rt_cases[0]);
  Suite *s = suite_create("decode");
  TCase *tc;

  tc = tcase("parse");
  tcase_add_test(tc, test_parse_names);
  tcase_add_test(tc, test_parse_unknown);
  tcase_add_test(tc, test_parse_limits);
  suite_add_tcase(s, tc);

  tc = tcase("roundtrip");
  tcase_add_loop_test(tc, test_roundtrip, 0, n_rt);
  tcase_add_test(tc, test_empty_bodies);
  suite_add_tcase(s, tc);

  tc = tcase("cap");
  tcase_add_loop_test(tc, test_cap_truncates, 0, n_rt);
  tcase_add_loop_test(tc, test_cap_exact, 0, n_rt);
  tcase_add_test(tc, test_cap_members);
  tcase_add_test(tc, test_cap_bomb);
  tcase_add_test(tc, test_cap_bomb_nested);
  suite_add_tcase(s, tc);

  tc = tcase("corrupt");
  tcase_add_test(tc, test_corrupt_header);
  tcase_add_test(tc, test_corrupt_trailer);
  tcase_add_test(tc, test_corrupt_truncated);
  tcase_add_test(tc, test_corrupt_junk);
  tcase_add_test(tc, test_sink_error);
  suite_add_tcase(s, tc);

  tc = tcase("memory");
  tcase_add_test(tc, test_alloc_failure);
  tcase_add_test(tc, test_reuse);
  tcase_add_test(tc, test_restart_after_failure);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(decode_suite());
  int failed;

  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
