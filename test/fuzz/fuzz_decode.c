/* Fuzz target: the Content-Encoding decoder fed arbitrary bytes under
 * arbitrary Content-Encoding values, through a response and directly.
 *
 * Input:
 *   line 1   the Content-Encoding value (up to the first LF)
 *   1 byte   bits 0-1 policy, bits 2-4 max_codings, bit 5 keep 1 KiB raw,
 *            bits 6-7 region size offered by the direct sink
 *   1 byte   sink failure: 0 none, else the direct sink fails its nth
 *            reserve() call on a third decode
 *   chunks   a chunk schedule (see fz_chunks_read)
 *   rest     the body as sent
 *
 * The response gets "HTTP/1.1 200 OK", "Content-Encoding: <value>" and the
 * blank line, then the body in the scheduled pieces, decoding on, body cap
 * 64 KiB. Its outcome must match decoding the whole body at once with the
 * decoder directly (chunking must not matter), and decoding again after a
 * restart of the same decoder must give the same bytes. One exception:
 * libbrotli and libzstd hand out decoded bytes in steps (a ring buffer, a
 * block), so at a corrupt stream (RC_E_DECODE) the bytes kept before it
 * depend on the chunking: then one must be a prefix of the other, and the
 * response, fed in pieces, may reach the cap before the error shows
 * (RC_TRUNCATED where decoding at once says RC_E_DECODE).
 *
 * A second response gets the same pieces with a body observer and
 * RC_KEEP_NONE (its decoders write into scratch memory, not the body): the
 * same result, rc_body empty, and the observer sees the bytes the first
 * response kept, each once, in order, in slices never empty (at a corrupt
 * br or zstd stream, where the regions offered matter, one a prefix of the
 * other). */
#include <string.h>

#include "decode.h"
#include "fill_alloc.h"
#include "fuzz.h"
#include "respchain.h"
#include "util.h"

#define CAP (64u * 1024u)

/* The largest block the junk-filling allocator fills: every block of
 * respchain's own in this target is smaller (the body stays within CAP + 1,
 * a stage buffer is 16 KiB); the larger ones are the windows and ring
 * buffers of libzstd and libbrotli, megabytes that a stream mostly never
 * touches and only those libraries read. Filling them cost most of the
 * time of an input that reached zstd or br. */
#define FILL_MAX (256u * 1024u)

/* A capped sink over a fixed buffer that offers regions of at most step
 * bytes, and fails with RC_E_NOMEM at its fail_at-th reserve() call. */
typedef struct tsink {
  unsigned char *data;
  size_t len, cap, step, offered;
  unsigned long calls, fail_at;
} tsink;

/* What a body observer saw: at most CAP bytes. */
typedef struct seen {
  unsigned char *p;
  size_t len;
} seen;

static rc_code see(void *ud, const char *data, size_t len)
{
  seen *s = ud;
  FZ_CHECK(data != NULL && len > 0 && len <= CAP - s->len);
  memcpy(s->p + s->len, data, len);
  s->len += len;
  return RC_OK;
}

/* A response on pool, decoding, that gets the status line, the given
 * Content-Encoding line and the blank line, then body in the scheduled
 * pieces until one is refused. */
static rc_response *exchange(rc_pool *pool, const rc_limits *lim, char *line, size_t line_len,
                             const uint8_t *body, size_t body_len, fz_chunks *chunks, seen *s)
{
  rc_response *r = NULL;
  FZ_CHECK(rc_response_new(pool, lim, &r) == RC_OK);
  FZ_CHECK(rc_response_set_decoding(r, 1) == RC_OK);
  if (s)
    FZ_CHECK(rc_response_observe(r, see, s, RC_KEEP_NONE) == RC_OK);
  char status[] = "HTTP/1.1 200 OK\r\n", blank[] = "\r\n";
  FZ_CHECK(rc_header_cb(status, 1, sizeof status - 1, r) == sizeof status - 1);
  FZ_CHECK(rc_header_cb(line, 1, line_len, r) == line_len);
  FZ_CHECK(rc_header_cb(blank, 1, 2, r) == 2);
  chunks->next = 0;
  size_t fed = 0;
  while (fed < body_len) {
    size_t n = fz_chunks_next(chunks, body_len - fed);
    size_t ret = rc_write_cb((char *)body + fed, 1, n, r);
    fed += n;
    if (ret != n) {
      FZ_CHECK(ret == CURL_WRITEFUNC_ERROR);
      break;
    }
  }
  return r;
}

static rc_code tsink_reserve(void *ctx, unsigned char **out, size_t *avail)
{
  tsink *t = ctx;
  if (t->fail_at && ++t->calls == t->fail_at)
    return RC_E_NOMEM;
  size_t room = t->cap - t->len;
  *out = t->data + t->len;
  *avail = t->offered = room < t->step ? room : t->step;
  return RC_OK;
}

static void tsink_commit(void *ctx, size_t n)
{
  tsink *t = ctx;
  FZ_CHECK(n <= t->offered);
  t->len += n;
  t->offered = 0;
}

/* The whole body through dec into t; the result of the write. */
static rc_code decode_all(rc__decoder *dec, const rc__coding *chain, size_t n, const uint8_t *body,
                          size_t len, tsink *t)
{
  rc__sink sink = {tsink_reserve, tsink_commit, t};
  FZ_CHECK(rc__decoder_start(dec, chain, n) == RC_OK);
  FZ_CHECK(!rc__decoder_ended(dec));
  rc_code rc = rc__decoder_write(dec, body, len, &sink);
  FZ_CHECK(rc == RC_OK || rc == RC_TRUNCATED || rc == RC_E_DECODE);
  /* Anything but RC_OK sticks until the next start. */
  if (rc != RC_OK)
    FZ_CHECK(rc__decoder_write(dec, "x", 1, &sink) == rc);
  FZ_CHECK(rc__decoder_write(dec, body, 0, &sink) == rc);
  return rc;
}

/* a[0..an) and b[0..bn) are equal, or, when loose, one is a prefix of the
 * other. */
static int same_bytes(const void *a, size_t an, const void *b, size_t bn, int loose)
{
  size_t n = an < bn ? an : bn;
  if (!loose && an != bn)
    return 0;
  return n == 0 || memcmp(a, b, n) == 0;
}

/* Whether chain[0..n) holds a coding whose kept prefix at an error may
 * depend on chunking (br, zstd). */
static int steps_out(const rc__coding *chain, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (chain[i] == RC__CODING_BR || chain[i] == RC__CODING_ZSTD)
      return 1;
  return 0;
}

/* rc__coding_parse's contract, for several maxima. Returns the result for
 * max (and the chain in chain[0..*n)). */
static rc_code check_parse(const char *value, size_t len, size_t max, rc__coding *chain, size_t *n)
{
  rc__coding big[40];
  size_t count = 0;
  /* With room for all: RC_OK (the true count) or RC_E_INVAL. */
  rc_code all = rc__coding_parse(value, len, big, sizeof big / sizeof big[0], &count);
  FZ_CHECK(all == RC_OK || all == RC_E_INVAL || all == RC_E_CODINGS);
  for (size_t m = 0; m <= 17; m++) {
    rc__coding c[17];
    size_t got = 99;
    rc_code rc = rc__coding_parse(value, len, c, m, &got);
    if (all == RC_E_INVAL) {
      FZ_CHECK(rc == RC_E_INVAL);
    } else if (all == RC_OK) {
      FZ_CHECK(rc == (count > m ? RC_E_CODINGS : RC_OK));
      if (rc == RC_OK) {
        FZ_CHECK(got == count);
        FZ_CHECK(got == 0 || memcmp(c, big, got * sizeof *c) == 0);
      }
    }
    if (rc != RC_OK)
      FZ_CHECK(got == 0);
  }
  rc_code rc = rc__coding_parse(value, len, chain, max, n);
  if (rc == RC_OK)
    FZ_CHECK(*n <= max);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const size_t codings_v[8] = {0, 1, 2, 3, 5, 8, 16, 100};
  static const size_t step_v[4] = {1, 7, 4093, CAP};

  fz_in in = {data, size};
  size_t vlen;
  const uint8_t *value = fz_line(&in, &vlen);
  if (vlen > 1000)
    vlen = 1000;
  unsigned opts = fz_u8(&in);
  unsigned sink_fail = fz_u8(&in);
  fz_chunks chunks;
  fz_chunks_read(&in, &chunks);
  const uint8_t *body = in.p;
  size_t body_len = in.n;

  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = CAP;
  lim.on_cap = (rc_cap_policy)((opts & 3) % 3);
  lim.max_codings = codings_v[(opts >> 2) & 7];
  lim.max_raw = (opts >> 5) & 1 ? 1024 : 0;
  size_t max_codings = lim.max_codings < 16 ? lim.max_codings : 16;

  /* The header line, as curl hands it over. */
  char line[1100];
  memcpy(line, "Content-Encoding: ", 18);
  memcpy(line + 18, value, vlen);
  memcpy(line + 18 + vlen, "\r\n", 2);
  size_t line_len = 18 + vlen + 2;

  /* ---- Through a response. */
  fz_fill_alloc fa;
  fz_fill_init(&fa, NULL);
  fa.fill_max = FILL_MAX;
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.allocator = &fa.a;
  rc_pool *rpool = NULL;
  FZ_CHECK(rc_pool_new(&cfg, &rpool) == RC_OK);
  rc_response *r = exchange(rpool, &lim, line, line_len, body, body_len, &chunks, NULL);
  rc_code res = rc_result(r, CURLE_OK);
  rc_view got = rc_body(r);
  FZ_CHECK(got.ptr != NULL && got.ptr[got.len] == '\0');
  FZ_CHECK(got.len <= CAP && rc_body_length(r) == got.len);
  FZ_CHECK((res == RC_TRUNCATED) == (rc_truncated(r) != 0));
  rc_view raw = rc_raw_body(r);
  FZ_CHECK(raw.ptr != NULL && raw.ptr[raw.len] == '\0');
  FZ_CHECK(raw.len <= lim.max_raw);
  FZ_CHECK(raw.len == 0 || memcmp(raw.ptr, body, raw.len) == 0);

  /* The header value as the response reads it. */
  rc_view v;
  FZ_CHECK(rc_header(r, -1, "Content-Encoding", 0, &v) == RC_OK);
  rc__coding chain[16];
  size_t n = 0;
  rc_code prc = check_parse(v.ptr, v.len, max_codings, chain, &n);
  rc_encoding enc = rc_body_encoding(r);

  /* ---- Observed, not kept: the same outcome. */
  seen obs = {malloc(CAP), 0};
  FZ_CHECK(obs.p != NULL);
  rc_response *o = exchange(rpool, &lim, line, line_len, body, body_len, &chunks, &obs);
  rc_code ores = rc_result(o, CURLE_OK);
  int steps = prc == RC_OK && res == RC_E_DECODE && steps_out(chain, n);
  FZ_CHECK(ores == res && rc_body_encoding(o) == enc && rc_truncated(o) == rc_truncated(r));
  FZ_CHECK(rc_body(o).len == 0 && !rc_body_kept(o) && rc_body_length(o) == obs.len);
  FZ_CHECK(same_bytes(obs.p, obs.len, got.ptr, got.len, steps));
  rc_view oraw = rc_raw_body(o);
  FZ_CHECK(oraw.len == raw.len && (raw.len == 0 || memcmp(oraw.ptr, raw.ptr, raw.len) == 0));
  rc_response_free(o);
  free(obs.p);

  if (body_len == 0) {
    /* No body byte: the write path never started. */
    FZ_CHECK(res == RC_OK && got.len == 0 && enc == RC_ENC_IDENTITY);
  } else if (prc == RC_E_CODINGS) {
    FZ_CHECK(res == RC_E_CODINGS && got.len == 0);
  } else if (prc == RC_E_INVAL || n == 0) {
    /* Unknown coding or identity: the body is kept as sent. */
    FZ_CHECK(enc == (prc == RC_E_INVAL ? RC_ENC_UNSUPPORTED : RC_ENC_IDENTITY));
    size_t want = body_len < CAP ? body_len : CAP;
    FZ_CHECK(got.len == want && memcmp(got.ptr, body, want) == 0);
    FZ_CHECK(res == (body_len > CAP ? RC_TRUNCATED : RC_OK));
    FZ_CHECK(raw.len == 0);
  } else {
    FZ_CHECK(prc == RC_OK);
    FZ_CHECK(enc == RC_ENC_DECODED);
    FZ_CHECK(res == RC_OK || res == RC_TRUNCATED || res == RC_E_DECODE);

    /* ---- Directly, all at once: the same outcome. */
    rc_allocator partial = {fz_std_malloc, NULL, fz_std_free, NULL};
    FZ_CHECK(rc__decoder_new(&partial) == NULL);
    counting_alloc ca;
    counting_alloc_init(&ca);
    fz_fill_alloc dfa;
    fz_fill_init(&dfa, &ca.a);
    dfa.fill_max = FILL_MAX;
    rc__decoder *dec = rc__decoder_new(&dfa.a);
    FZ_CHECK(dec != NULL);
    FZ_CHECK(rc__decoder_write(dec, body, body_len, NULL) == RC_E_INVAL);
    unsigned char *out = malloc(CAP);
    FZ_CHECK(out != NULL);
    tsink t = {out, 0, CAP, step_v[(opts >> 6) & 3], 0, 0, 0};
    rc_code drc = decode_all(dec, chain, n, body, body_len, &t);
    int ended = drc == RC_OK && rc__decoder_ended(dec);
    rc_code want = drc == RC_OK ? (ended ? RC_OK : RC_E_DECODE) : drc;
    /* At a corrupt br or zstd stream the bytes handed out before the
     * error depend on how the input came and the room offered: libbrotli,
     * fed in pieces, hands out what it decoded at each piece's end, so
     * the response can reach the cap first (RC_TRUNCATED, its bytes
     * valid) where, fed at once as here, the error comes first with the
     * bytes still held (RC_E_DECODE). */
    int loose = steps_out(chain, n) && (res == RC_E_DECODE || want == RC_E_DECODE) &&
                (res == RC_E_DECODE || res == RC_TRUNCATED) &&
                (want == RC_E_DECODE || want == RC_TRUNCATED);
    FZ_CHECK(res == want || loose);
    if (want == RC_TRUNCATED)
      FZ_CHECK(t.len == CAP);
    FZ_CHECK(same_bytes(got.ptr, got.len, out, t.len, loose));
    if (res == RC_TRUNCATED)
      FZ_CHECK(got.len == CAP);
    if (lim.max_raw && res == RC_OK)
      FZ_CHECK(raw.len == (body_len < lim.max_raw ? body_len : lim.max_raw));

    /* Again on the same decoder (restarted), with regions of another
     * size: the same bytes and the same result. */
    tsink t2 = {malloc(CAP), 0, CAP, 1 + (opts & 63) * 97, 0, 0, 0};
    FZ_CHECK(t2.data != NULL);
    FZ_CHECK(decode_all(dec, chain, n, body, body_len, &t2) == drc);
    FZ_CHECK(rc__decoder_ended(dec) == ended);
    FZ_CHECK(same_bytes(t2.data, t2.len, out, t.len, loose));

    /* A sink that fails: its error comes back unchanged, and sticks. */
    if (sink_fail) {
      tsink t3 = {t2.data, 0, CAP, 4093, 0, 0, sink_fail};
      rc__sink sink = {tsink_reserve, tsink_commit, &t3};
      FZ_CHECK(rc__decoder_start(dec, chain, n) == RC_OK);
      rc_code frc = rc__decoder_write(dec, body, body_len, &sink);
      if (t3.calls >= t3.fail_at) {
        FZ_CHECK(frc == RC_E_NOMEM);
        FZ_CHECK(rc__decoder_write(dec, body, body_len, &sink) == RC_E_NOMEM);
        FZ_CHECK(!rc__decoder_ended(dec));
      } else {
        FZ_CHECK(frc == drc);
      }
      FZ_CHECK(loose || t3.len <= t.len);
      FZ_CHECK(same_bytes(t3.data, t3.len, out, t.len, 1));
    }
    free(t2.data);
    free(out);
    rc__decoder_free(dec);
    FZ_CHECK(ca.live == 0);
  }
  rc_response_free(r);
  rc_pool_free(rpool);
  return 0;
}
