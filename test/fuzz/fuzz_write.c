/* Fuzz target: the whole write path, arbitrary limits and chunkings, the
 * body compressed here with zlib so that the decoded paths see real
 * streams, optionally with an allocator that fails one allocation.
 *
 * Input (each field one byte unless said otherwise; missing bytes read 0):
 *   flags    bit 0 decoding, bit 1 failing allocator, bits 2-3 a hop before
 *            the final one (none, 100 Continue, redirect with a body,
 *            redirect with a gzip body cut short), bit 4 contention for the
 *            budget, bit 5 the response attached to a curl handle, bits
 *            6-7 the pool's overflow mode (auto, wait, spill, auto)
 *   kind     how the body is sent (enum kind below)
 *   zopts    zlib level (low nibble % 10), strategy (high nibble % 5)
 *   limits   bits 0-1 policy, bits 2-3 cap mode, bits 4-6 Content-Length mode
 *   cap      by cap mode: 1 byte; 2 bytes; 3 bytes (% 1 MiB + 1); 1 byte
 *            delta (-2..2) around the length the cap applies to
 *   rawopts  bits 0-1 max_raw mode (0, 1 byte, 2 bytes, unlimited),
 *            bits 2-3 max_codings (5, 0, 1, 2), bits 4-5 max_memory
 *            (0: off, 1, 100, 4096): past it the body goes to a spill file,
 *            bit 7 the body is observed (the observe byte follows)
 *   [max_raw value]
 *   [observe] bit 0 RC_KEEP_NONE (else RC_KEEP_BODY), bit 1 no observer
 *            function (the keep setting alone), bits 2-3 the observer's
 *            verdict in the final hop (none, RC_STOPPED, another code,
 *            RC_STOPPED), bits 4-5 where it is given (the where mode),
 *            bits 6-7 the second run (the same settings, kept across the
 *            reset; keep swapped; no observer function; both)
 *   [where]  with a verdict, the byte count that draws it, by the where
 *            mode: 1 byte; 2 bytes; 1 byte (delta -2..2 around the length
 *            the final body is expected to reach); 1 byte (times 256)
 *   [code]   with another code: which (fail_codes)
 *   chunk    2 bytes: the pool's chunk size - 1
 *   pool     bits 0-1 large threshold, 2-3 max large, 4-5 max idle small,
 *            6-7 budget (with contention, never off)
 *   [slack]  with contention: the budget grows by slack * 64 bytes once the
 *            hog holds its memory, so that the refusal may come later
 *   fail_at  2 bytes, with the failing allocator: the allocation to fail
 *   repeat   the body is the rest of the input repeated 1 + repeat % 64
 *            times (at most 256 KiB, and at most 512 pool chunks: growing
 *            a buffer a byte at a time is quadratic, and slow to fuzz)
 *   split    where the first gzip member ends, in 256ths, for kind MEMBERS
 *   chunks   a chunk schedule (see fz_chunks_read)
 *   rest     the body
 *
 * The transfer runs twice on one response, with rc_response_reset between
 * and the schedule rotated the second time; each run must give exactly the
 * bytes and the result the settings call for (or RC_E_NOMEM when an
 * allocation failed during it: see check_run), and nothing may leak.
 *
 * Contention: before each run a second response on the pool (the hog) takes
 * more than the budget, which makes it the budget's holder, so the response
 * under test is refused memory (at once, or after the slack). Attached to a
 * curl handle it is paused (CURL_WRITEFUNC_PAUSE; the harness's thread asks
 * rc_pool_timeout first, as a loop does, or nothing would resume a pause
 * and the response would not pause at all): the harness then resets
 * the hog, as another transfer finishing would, and delivers the same piece
 * again, as curl does on resuming; the outcome must be exactly the one
 * without a budget. Not attached, a refused response spills (auto and
 * spill modes: the outcome is again exactly the one without a budget), or
 * fails with RC_E_TIMEOUT keeping a prefix (wait mode). In spill mode an
 * attached response spills too, never pauses. While the hog holds the
 * place and the budget is used up, a write that is not paused must not make
 * the pool hold more. Wherever the body went, it reads back the same.
 *
 * Observer: it sees the body of each hop as the response gets it: after
 * every write, rc_body_length is the number of bytes it saw for the last
 * hop, and at the end of a hop those bytes are rc_body's (when kept), each
 * once, in order, in slices never empty; it may read the hop it observes.
 * Without a verdict the outcome is the one without an observer. A verdict
 * is given by the slice that reaches the verdict position in the final hop;
 * when the body (up to the cap) reaches it, the result is RC_STOPPED (or
 * RC_E_OBSERVER for any other code), the body is a prefix of the expected
 * one that holds the position, nothing is truncated, and the observer is
 * not called again; when it does not, no verdict is given. Under
 * RC_KEEP_NONE rc_body is empty, rc_body_length says how long the body
 * was, and no write makes the pool hold more, spill or wait (but the raw
 * copy, which is not the body). With an allocation failure the observed
 * bytes are still those kept, and a verdict may give way to RC_E_NOMEM. */
#include <string.h>

#include <curl/curl.h>
#define ZLIB_CONST
#include <zlib.h>

#include "fill_alloc.h"
#include "fuzz.h"
#include "respchain.h"
#include "util.h"

#define MIB            (1024u * 1024u)
#define MAX_BODY_BYTES (256u * 1024u)

enum kind {
  K_NONE, /* no Content-Encoding */
  K_GZIP,
  K_XGZIP,
  K_ZLIB,         /* deflate, zlib-wrapped */
  K_RAW,          /* deflate, raw */
  K_GZIP_DEFLATE, /* gzip, then deflate */
  K_TWO_LINES,    /* the same as two header lines */
  K_IDENTITY,
  K_UNKNOWN, /* a coding the response keeps as sent */
  K_MEMBERS, /* gzip in two members */
  K_GZIP_GZIP,
  N_KINDS
};

static const char *const kind_header[N_KINDS][2] = {
    {NULL, NULL},       {"gzip", NULL},          {"X-GZip", NULL},      {"deflate", NULL},
    {"Deflate", NULL},  {"gzip, deflate", NULL}, {"gzip", " deflate "}, {"identity", NULL},
    {"compress", NULL}, {"gzip", NULL},          {" gzip ,gzip", NULL},
};
static const size_t kind_codings[N_KINDS] = {0, 1, 1, 1, 1, 2, 2, 0, 0, 1, 2};

#define W_GZIP (16 + 15)
#define W_ZLIB 15
#define W_RAW  (-15)

typedef struct bytes {
  uint8_t *p;
  size_t n;
} bytes;

/* src compressed as one stream. */
static bytes zwrap(const uint8_t *src, size_t n, int wbits, int level, int strategy)
{
  static const uint8_t none[1] = {0};
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  FZ_CHECK(deflateInit2(&zs, level, Z_DEFLATED, wbits, 8, strategy) == Z_OK);
  uLong bound = deflateBound(&zs, (uLong)n) + 64;
  bytes out = {malloc(bound), 0};
  FZ_CHECK(out.p != NULL);
  zs.next_in = n ? src : none;
  zs.avail_in = (uInt)n;
  zs.next_out = out.p;
  zs.avail_out = (uInt)bound;
  FZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.n = bound - zs.avail_out;
  deflateEnd(&zs);
  return out;
}

static bytes concat(bytes a, bytes b)
{
  bytes out = {malloc(a.n + b.n + 1), a.n + b.n};
  FZ_CHECK(out.p != NULL);
  memcpy(out.p, a.p, a.n);
  memcpy(out.p + a.n, b.p, b.n);
  free(a.p);
  free(b.p);
  return out;
}

/* The body as sent for kind. */
static bytes encode(enum kind k, const bytes *body, int level, int strategy, unsigned split)
{
  bytes w;
  switch (k) {
  case K_GZIP:
  case K_XGZIP: return zwrap(body->p, body->n, W_GZIP, level, strategy);
  case K_ZLIB: return zwrap(body->p, body->n, W_ZLIB, level, strategy);
  case K_RAW: return zwrap(body->p, body->n, W_RAW, level, strategy);
  case K_GZIP_DEFLATE:
  case K_TWO_LINES:
    w = zwrap(body->p, body->n, W_GZIP, level, strategy);
    bytes z = zwrap(w.p, w.n, W_ZLIB, level, strategy);
    free(w.p);
    return z;
  case K_GZIP_GZIP:
    w = zwrap(body->p, body->n, W_GZIP, level, strategy);
    bytes g = zwrap(w.p, w.n, W_GZIP, level, strategy);
    free(w.p);
    return g;
  case K_MEMBERS: {
    size_t at = body->n * split / 256;
    return concat(zwrap(body->p, at, W_GZIP, level, strategy),
                  zwrap(body->p + at, body->n - at, W_GZIP, level, strategy));
  }
  default:
    w.p = malloc(body->n + 1);
    FZ_CHECK(w.p != NULL);
    memcpy(w.p, body->p, body->n);
    w.n = body->n;
    return w;
  }
}

/* What one run must produce. */
typedef struct expect {
  const uint8_t *src; /* the body kept is a prefix of this */
  size_t src_len;
  size_t len; /* bytes of it kept */
  rc_code res;
  rc_encoding enc;
  int truncated;
  size_t hops;
} expect;

/* What the observer saw of the current hop, and what it answers. */
typedef struct observation {
  rc_response *r;
  uint8_t *log; /* the bytes it saw of the current hop, in order */
  size_t len, size;
  int status;       /* of the hop it observes */
  int final;        /* that hop is the final one: a verdict may come */
  size_t at;        /* the verdict is given by the slice that reaches at
                       bytes (>= 1); 0: never */
  rc_code verdict;  /* what it answers then */
  int said;         /* the verdict was given */
  size_t said_from; /* bytes seen before the slice that drew it */
} observation;

static rc_code observe(void *ud, const char *data, size_t len)
{
  observation *w = ud;
  FZ_CHECK(data != NULL && len > 0);
  FZ_CHECK(!w->said); /* never called after its verdict */
  rc_hop_info hop;    /* it may read the hop it observes */
  FZ_CHECK(rc_hop(w->r, -1, &hop) == RC_OK && hop.is_final && hop.status == w->status);
  if (w->len + len > w->size) {
    size_t size = 2 * (w->len + len);
    uint8_t *p = realloc(w->log, size);
    FZ_CHECK(p != NULL);
    w->log = p;
    w->size = size;
  }
  memcpy(w->log + w->len, data, len);
  size_t from = w->len;
  w->len += len;
  if (w->final && w->at && w->len >= w->at) {
    w->said = 1;
    w->said_from = from;
    return w->verdict;
  }
  return RC_OK;
}

/* A new hop begins: what was seen belongs to the one before. */
static void watch_hop(observation *w, int status, int final)
{
  w->len = 0;
  w->status = status;
  w->final = final;
}

/* The bytes seen of the last hop are those the response holds. */
static void watch_matches(rc_response *r, const observation *w)
{
  FZ_CHECK(rc_body_length(r) == w->len);
  if (rc_body_kept(r)) {
    rc_view body = rc_body(r);
    FZ_CHECK(body.len == w->len && (w->len == 0 || memcmp(body.ptr, w->log, w->len) == 0));
  }
}

typedef struct setup {
  rc_limits lim;      /* as given */
  size_t max_codings; /* as honoured */
  int decode;
  enum kind kind;
  unsigned prelude;
  int prelude_body; /* the prelude hop's body is sent */
  char cl_line[64]; /* Content-Length line, or "" */
  bytes body, wire;
  fz_chunks chunks;
  /* Contention for the budget. */
  rc_pool *pool;
  rc_response *hog; /* NULL: none */
  size_t hog_bytes;
  int hog_holds;        /* the hog holds its memory, and the holder place */
  size_t limit;         /* the budget while the response runs */
  CURL *easy;           /* the response is attached to it; NULL: not */
  rc_overflow overflow; /* the pool's mode */
  int raw_copy;         /* a raw copy is kept: it grows past the budget */
  int timed_out;        /* a write was refused with RC_E_TIMEOUT */
  /* This run's rc_response_observe settings. */
  observation *watch; /* the observer's; NULL: no observer */
  rc_keep keep;
} setup;

static int header(rc_response *r, const char *s)
{
  size_t n = strlen(s);
  size_t ret = rc_header_cb((char *)s, 1, n, r);
  FZ_CHECK(ret == n || ret == CURL_WRITEFUNC_ERROR);
  return ret == n;
}

/* The hog takes more than the budget: it becomes the budget's holder (in
 * spill mode it spills instead, and holds nothing). */
static void fill_hog(setup *s)
{
  static const char junk[4096];
  rc_response_reset(s->hog);
  s->hog_holds = 0;
  if (!header(s->hog, "HTTP/1.1 200 OK\r\n") || !header(s->hog, "\r\n"))
    return;
  for (size_t done = 0; done < s->hog_bytes;) {
    size_t n = s->hog_bytes - done < sizeof junk ? s->hog_bytes - done : sizeof junk;
    if (rc_write_cb((char *)junk, 1, n, s->hog) != n)
      return;
    done += n;
  }
  /* It went past the budget, so it was refused once: with no holder then,
   * it took the place. */
  s->hog_holds = rc_result(s->hog, CURLE_OK) == RC_OK && !rc_body_spilled(s->hog);
}

static size_t in_use(rc_pool *pool)
{
  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  return st.bytes_in_use;
}

/* One write call. A body that is not kept takes no pool memory, no
 * spill file and no wait (the raw copy is not the body, and is not
 * checked); the observer has seen what the response counts. */
static size_t write_once(rc_response *r, setup *s, const void *p, size_t n)
{
  int none = s->keep == RC_KEEP_NONE && !s->raw_copy;
  rc_pool_stats before, after;
  if (none)
    rc_pool_stats_get(s->pool, &before);
  size_t ret = rc_write_cb((char *)p, 1, n, r);
  if (none) {
    rc_pool_stats_get(s->pool, &after);
    FZ_CHECK(ret != CURL_WRITEFUNC_PAUSE && !rc_body_spilled(r));
    FZ_CHECK(after.bytes_in_use == before.bytes_in_use && after.spills == before.spills &&
             after.pauses == before.pauses);
  }
  if (s->watch)
    FZ_CHECK(rc_body_length(r) == s->watch->len);
  return ret;
}

static int body_write(rc_response *r, setup *s, const void *p, size_t n)
{
  /* While another response holds the holder place and the budget is used
   * up, nothing may be admitted: a write that is not paused must not make
   * the response hold more. The raw copy of a decoded body is counted but
   * not held back (the header says so), and it may take a reused block of
   * any size up to max_raw: with it on, this is not checked. */
  int watch = s->hog_holds;
  size_t before = watch ? in_use(s->pool) : 0;
  size_t ret = write_once(r, s, p, n);
  if (watch && ret != CURL_WRITEFUNC_PAUSE && before >= s->limit)
    FZ_CHECK(s->raw_copy || in_use(s->pool) <= before);
  if (ret == CURL_WRITEFUNC_PAUSE) {
    /* Paused for the budget: only when attached, never in spill mode, and
     * only while the hog holds its memory. Another transfer finishing frees
     * it; curl then delivers the same bytes again. */
    FZ_CHECK(s->easy != NULL && s->hog != NULL && s->overflow != RC_OVERFLOW_SPILL);
    rc_response_reset(s->hog);
    s->hog_holds = 0;
    rc_pool_resume(s->pool); /* curl_easy_pause on an idle handle: refused */
    ret = write_once(r, s, p, n);
    FZ_CHECK(ret != CURL_WRITEFUNC_PAUSE);
  }
  FZ_CHECK(ret == n || ret == CURL_WRITEFUNC_ERROR);
  if (ret != n && rc_result(r, CURLE_OK) == RC_E_TIMEOUT) {
    FZ_CHECK(s->hog != NULL && s->easy == NULL && s->overflow == RC_OVERFLOW_WAIT);
    s->timed_out = 1;
  }
  return ret == n;
}

/* The exchange as curl would deliver it; stops where curl would. */
static void transfer(rc_response *r, setup *s)
{
  static const uint8_t short_gzip[12] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3, 0xcb, 0xcd};
  observation *w = s->watch;
  if (w)
    watch_hop(w, s->prelude == 1 ? 100 : 302, 0);
  if (s->prelude == 1) {
    if (!header(r, "HTTP/1.1 100 Continue\r\n") || !header(r, "\r\n"))
      return;
  } else if (s->prelude >= 2) {
    if (!header(r, "HTTP/1.1 302 Found\r\n") || !header(r, "Location: /next\r\n"))
      return;
    if (s->prelude == 3 && !header(r, "Content-Encoding: gzip\r\n"))
      return;
    if (!header(r, "\r\n"))
      return;
    if (s->prelude_body) {
      int ok = s->prelude == 2 ? body_write(r, s, "redirect", 8)
                               : body_write(r, s, short_gzip, sizeof short_gzip);
      if (!ok)
        return;
    }
  }
  if (w)
    watch_matches(r, w); /* the prelude's body, if any */
  if (!header(r, "HTTP/1.1 200 OK\r\n"))
    return;
  if (w)
    watch_hop(w, 200, 1);
  if (s->cl_line[0] && !header(r, s->cl_line))
    return;
  char line[80];
  for (int i = 0; i < 2; i++) {
    const char *v = kind_header[s->kind][i];
    if (!v)
      break;
    snprintf(line, sizeof line, "Content-Encoding: %s\r\n", v);
    if (!header(r, line))
      return;
  }
  if (!header(r, "\r\n"))
    return;
  /* At most about 2048 pieces, however small the schedule's. */
  size_t least = s->wire.n / 2048;
  for (size_t fed = 0; fed < s->wire.n;) {
    size_t n = fz_chunks_next(&s->chunks, s->wire.n - fed);
    if (n < least)
      n = least < s->wire.n - fed ? least : s->wire.n - fed;
    if (!body_write(r, s, s->wire.p + fed, n))
      return;
    fed += n;
  }
}

/* What rc_result says after the observer answered code. */
static rc_code verdict_result(rc_code code)
{
  return code == RC_STOPPED ? RC_STOPPED : RC_E_OBSERVER;
}

static void check_run(rc_response *r, const setup *s, const expect *e, int nomem)
{
  rc_code res = rc_result(r, CURLE_OK);
  if (s->timed_out) {
    /* Refused by the budget, not attached: a prefix was kept. */
    FZ_CHECK(res == RC_E_TIMEOUT || (nomem && res == RC_E_NOMEM));
    nomem = 1;
  }
  rc_view body = rc_body(r);
  FZ_CHECK(body.ptr != NULL && body.ptr[body.len] == '\0');
  FZ_CHECK(body.len <= s->lim.max_body);
  rc_view raw = rc_raw_body(r);
  FZ_CHECK(raw.ptr != NULL && raw.ptr[raw.len] == '\0');
  FZ_CHECK(raw.len <= s->lim.max_raw);

  /* The body's bytes: those kept, else those the observer saw (else only
   * how many there were). */
  const observation *w = s->watch;
  size_t len = rc_body_length(r);
  const uint8_t *got = (const uint8_t *)body.ptr;
  FZ_CHECK(len <= s->lim.max_body);
  if (s->keep == RC_KEEP_NONE) {
    FZ_CHECK(!rc_body_kept(r) && body.len == 0 && !rc_body_spilled(r));
    got = w ? w->log : NULL;
  } else {
    FZ_CHECK(rc_body_kept(r) && body.len == len);
  }
  if (w)
    watch_matches(r, w);
  /* The expected body reaches the verdict position: the verdict comes. */
  int verdict = w && w->at && w->at <= e->len;
  rc_code said = w && w->said ? verdict_result(w->verdict) : RC_OK;
  FZ_CHECK(said == RC_OK || verdict);

  /* A failed allocation is reported, except in one case: the decoder asks
   * zlib for one more byte to tell whether the body goes on past the cap,
   * and zlib may hand over the byte and fail to allocate its window in the
   * same call. The body has reached the cap either way: truncation is the
   * outcome, and it is what the response reports. A verdict given before
   * the failure may be the outcome too; one given in the step that failed
   * gives way to it. */
  if (nomem && res != RC_E_NOMEM && res != RC_E_TIMEOUT && (said == RC_OK || res != said))
    FZ_CHECK(res == RC_TRUNCATED && e->res == RC_TRUNCATED && e->enc == RC_ENC_DECODED &&
             said == RC_OK);
  if (nomem && (res == RC_E_NOMEM || res == RC_E_TIMEOUT)) {
    /* What was kept is the start of what was expected. */
    FZ_CHECK(!rc_truncated(r));
    if (rc_hop_count(r) == e->hops) {
      FZ_CHECK(len <= e->len);
      FZ_CHECK(got == NULL || memcmp(got, e->src, len) == 0);
    }
    return;
  }
  FZ_CHECK(rc_hop_count(r) == e->hops);
  FZ_CHECK(rc_status(r) == 200);
  FZ_CHECK(rc_body_encoding(r) == e->enc);
  if (verdict) {
    /* Given by the slice that reached the position: nothing after it was
     * read, and the body did not reach the cap as far as the response
     * can tell. */
    FZ_CHECK(said != RC_OK && res == said);
    FZ_CHECK(w->said_from < w->at && w->at <= len && len <= e->len);
    FZ_CHECK(!rc_truncated(r));
  } else {
    FZ_CHECK(res == e->res);
    FZ_CHECK((rc_truncated(r) != 0) == e->truncated);
    FZ_CHECK(len == e->len);
  }
  FZ_CHECK(got == NULL || memcmp(got, e->src, len) == 0);
  if (e->enc == RC_ENC_DECODED && s->lim.max_raw) {
    FZ_CHECK(raw.len <= s->wire.n && memcmp(raw.ptr, s->wire.p, raw.len) == 0);
    if (res == RC_OK) {
      size_t want = s->wire.n < s->lim.max_raw ? s->wire.n : s->lim.max_raw;
      FZ_CHECK(raw.len == want);
      FZ_CHECK((rc_raw_truncated(r) != 0) == (s->wire.n > s->lim.max_raw));
    }
  } else {
    FZ_CHECK(raw.len == 0);
  }
}

/* The full response and the copies, with the allocator that may fail. */
static void check_full(rc_response *r, counting_alloc *ca)
{
  rc_hop_info last;
  if (rc_hop(r, -1, &last) != RC_OK) {
    rc_view v;
    FZ_CHECK(rc_full_response(r, &v) == RC_E_RANGE);
    return;
  }
  rc_view body = rc_body(r), full;
  long before = ca->calls;
  rc_code rc = rc_full_response(r, &full);
  int failed = ca->fail_at > before && ca->fail_at <= ca->calls;
  if (failed) {
    FZ_CHECK(rc == RC_E_NOMEM);
    FZ_CHECK(rc_full_response(r, &full) == RC_OK);
  } else {
    FZ_CHECK(rc == RC_OK);
  }
  FZ_CHECK(full.len == last.raw.len + body.len && full.ptr[full.len] == '\0');
  FZ_CHECK(memcmp(full.ptr, last.raw.ptr, last.raw.len) == 0);
  FZ_CHECK(memcmp(full.ptr + last.raw.len, body.ptr, body.len) == 0);
  size_t len;
  char *dup = rc_full_response_dup(r, &len);
  FZ_CHECK(dup && len == full.len && memcmp(dup, full.ptr, len) == 0 && !dup[len]);
  free(dup);
  dup = rc_body_dup(r, &len);
  FZ_CHECK(dup && len == body.len && memcmp(dup, body.ptr, len) == 0 && !dup[len]);
  free(dup);
}

/* The outcome the settings call for. */
static void expected(const setup *s, expect *e)
{
  size_t cap = s->lim.max_body;
  e->hops = s->prelude ? 2 : 1;
  e->src = s->wire.p;
  e->src_len = s->wire.n;
  e->res = RC_OK;
  e->enc = RC_ENC_IDENTITY;
  e->truncated = 0;
  e->len = 0;
  if (s->wire.n == 0)
    return; /* no body byte: the write path never starts */
  size_t declared = SIZE_MAX;
  if (s->cl_line[0]) {
    const char *p = strchr(s->cl_line, ':') + 1;
    p += strspn(p, " \t");
    size_t digits = strspn(p, "0123456789");
    if (digits > 0 && digits <= 19 && strspn(p + digits, " \t\r\n") == strlen(p + digits))
      declared = (size_t)strtoull(p, NULL, 10);
  }
  if (s->lim.on_cap == RC_CAP_REJECT && declared != SIZE_MAX && declared > cap) {
    e->res = RC_E_TOO_LARGE;
    return;
  }
  /* As the response decides: no coding (or identity) first; with decoding
   * off any coding is kept as sent, and no chain limit applies to it. */
  if (s->kind != K_UNKNOWN && kind_codings[s->kind] == 0) {
    e->enc = RC_ENC_IDENTITY;
  } else if (!s->decode) {
    e->enc = RC_ENC_NOT_DECODED;
  } else if (s->kind == K_UNKNOWN) {
    e->enc = RC_ENC_UNSUPPORTED;
  } else if (kind_codings[s->kind] > s->max_codings) {
    e->res = RC_E_CODINGS;
    return;
  } else {
    e->enc = RC_ENC_DECODED;
    e->src = s->body.p;
    e->src_len = s->body.n;
  }
  e->truncated = e->src_len > cap;
  e->len = e->truncated ? cap : e->src_len;
  e->res = e->truncated ? RC_TRUNCATED : RC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const int strategies[5] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
  static const size_t threshold_v[4] = {RC_DEFAULT_LARGE_THRESHOLD, 1, 4096, 65536};
  static const size_t max_large_v[4] = {RC_DEFAULT_MAX_LARGE, 0, 1, 2};
  static const size_t idle_small_v[4] = {RC_DEFAULT_MAX_IDLE_SMALL, 0, 4096, 65536};
  static const size_t budget_v[4] = {0, 1, 4096, 65536};
  static const size_t codings_v[4] = {5, 0, 1, 2};
  static const size_t max_memory_v[4] = {0, 1, 100, 4096};
  static const rc_overflow overflow_v[4] = {RC_OVERFLOW_AUTO, RC_OVERFLOW_WAIT, RC_OVERFLOW_SPILL,
                                            RC_OVERFLOW_AUTO};
  /* Codes an observer may fail with: any but RC_OK and RC_STOPPED, among
   * them values outside rc_code (-1, -2), which must not pass for the
   * budget's answers (wait, spill) anywhere in the write path. */
  static const rc_code fail_codes[8] = {RC_E_DECODE, RC_TRUNCATED,  RC_E_NOMEM,  RC_E_OBSERVER,
                                        RC_E_INVAL,  RC_E_TRANSFER, (rc_code)-1, (rc_code)-2};

  fz_in in = {data, size};
  setup s;
  memset(&s, 0, sizeof s);
  unsigned flags = fz_u8(&in);
  s.decode = flags & 1;
  int failing = (flags >> 1) & 1;
  int contention = (flags >> 4) & 1;
  int attach = (flags >> 5) & 1;
  s.overflow = overflow_v[(flags >> 6) & 3];
  s.prelude = (flags >> 2) & 3;
  s.kind = (enum kind)(fz_u8(&in) % N_KINDS);
  unsigned zopts = fz_u8(&in);
  int level = (int)(zopts & 15) % 10;
  int strategy = strategies[(zopts >> 4) % 5];
  unsigned lopts = fz_u8(&in);
  rc_limits_init(&s.lim);
  s.lim.on_cap = (rc_cap_policy)((lopts & 3) % 3);
  unsigned cap_mode = (lopts >> 2) & 3;
  unsigned cl_mode = (lopts >> 4) & 7;
  unsigned long cap_value = cap_mode == 0   ? fz_u8(&in)
                            : cap_mode == 1 ? fz_u16(&in)
                            : cap_mode == 2 ? fz_u24(&in) % (MIB + 1)
                                            : fz_u8(&in) % 5;
  unsigned ropts = fz_u8(&in);
  switch (ropts & 3) {
  case 1: s.lim.max_raw = fz_u8(&in); break;
  case 2: s.lim.max_raw = fz_u16(&in); break;
  case 3: s.lim.max_raw = SIZE_MAX; break;
  default: s.lim.max_raw = 0; break;
  }
  int observed = (ropts >> 7) & 1;
  unsigned oopts = observed ? fz_u8(&in) : 0;
  unsigned verdict_kind = (oopts >> 2) & 3, where_mode = (oopts >> 4) & 3;
  unsigned long where = !verdict_kind ? 0 : where_mode == 1 ? fz_u16(&in) : fz_u8(&in);
  rc_code code = verdict_kind == 2 ? fail_codes[fz_u8(&in) % 8] : RC_STOPPED;
  s.lim.max_codings = codings_v[(ropts >> 2) & 3];
  s.lim.max_memory = max_memory_v[(ropts >> 4) & 3];
  s.max_codings = s.lim.max_codings;
  size_t chunk = (size_t)fz_u16(&in) + 1;
  unsigned popts = fz_u8(&in);
  size_t slack = contention ? fz_u8(&in) * 64u : 0;
  long fail_at = failing ? (long)fz_u16(&in) : 0;
  unsigned repeat = 1 + fz_u8(&in) % 64;
  unsigned split = fz_u8(&in);
  fz_chunks_read(&in, &s.chunks);

  /* The body: the rest, repeated. */
  size_t total = in.n * repeat;
  if (total > MAX_BODY_BYTES)
    total = MAX_BODY_BYTES;
  if (total > chunk * 512)
    total = chunk * 512;
  s.body.p = malloc(total + 1);
  FZ_CHECK(s.body.p != NULL);
  for (size_t i = 0; i < total; i++)
    s.body.p[i] = in.p[i % in.n];
  s.body.n = total;
  s.wire = encode(s.kind, &s.body, level, strategy, split);

  /* The cap, possibly around the length it applies to. */
  if (cap_mode == 3) {
    int decoded = s.decode && kind_codings[s.kind] > 0 && s.kind != K_UNKNOWN;
    size_t len = decoded ? s.body.n : s.wire.n;
    long delta = (long)cap_value - 2;
    s.lim.max_body = delta < 0 && (size_t)-delta > len ? 0 : (size_t)((long)len + delta);
  } else {
    s.lim.max_body = cap_value;
  }
  /* Hop bodies are sent only where they cannot hit a limit. */
  s.prelude_body = s.lim.max_body >= 16 && (s.prelude != 3 || s.max_codings >= 1);

  switch (cl_mode) {
  case 1: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: %zu\r\n", s.wire.n); break;
  case 2:
    snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: %zu\r\n", s.wire.n ? s.wire.n - 1 : 0);
    break;
  case 3: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: %zu\r\n", s.wire.n + 1000); break;
  case 4: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: \t %zu  \r\n", s.wire.n); break;
  case 5: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: 12x\r\n"); break;
  case 6: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: 99999999999999999999\r\n"); break;
  case 7: snprintf(s.cl_line, sizeof s.cl_line, "Content-Length: 9999999999999999999\r\n"); break;
  default: s.cl_line[0] = '\0'; break;
  }

  expect e;
  expected(&s, &e);

  /* The observer's settings for each run, and where it gives its verdict. */
  observation w;
  memset(&w, 0, sizeof w);
  rc_keep keep[2] = {RC_KEEP_BODY, RC_KEEP_BODY};
  int observer[2] = {0, 0};
  if (observed) {
    unsigned second = (oopts >> 6) & 3;
    keep[0] = oopts & 1 ? RC_KEEP_NONE : RC_KEEP_BODY;
    keep[1] = second & 1 ? (rc_keep)!keep[0] : keep[0];
    observer[0] = !((oopts >> 1) & 1);
    observer[1] = observer[0] && !(second & 2);
  }
  if (verdict_kind) {
    size_t at = where;
    if (where_mode == 2)
      at = e.len + where % 5 < 2 ? 0 : e.len + where % 5 - 2;
    else if (where_mode == 3)
      at = where * 256;
    w.at = at ? at : 1;
    w.verdict = code;
  }

  counting_alloc ca;
  counting_alloc_init(&ca);
  ca.fail_at = fail_at;
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  fz_fill_alloc fa;
  fz_fill_init(&fa, &ca.a);
  cfg.allocator = &fa.a;
  cfg.chunk_size = chunk;
  cfg.large_threshold = threshold_v[popts & 3];
  cfg.max_large = max_large_v[(popts >> 2) & 3];
  cfg.max_idle_small = idle_small_v[(popts >> 4) & 3];
  cfg.budget = budget_v[(popts >> 6) & 3];
  cfg.overflow = s.overflow;
  if (contention && cfg.budget == 0)
    cfg.budget = 4096;
  s.hog_bytes = cfg.budget + 1;
  s.raw_copy = s.decode && s.lim.max_raw;
  rc_pool *pool = NULL;
  rc_response *r = NULL;
  rc_code rc = rc_pool_new(&cfg, &pool);
  if (rc != RC_OK) {
    FZ_CHECK(rc == RC_E_NOMEM && fail_at == 1);
    goto done;
  }
  rc = rc_response_new(pool, &s.lim, &r);
  if (rc != RC_OK) {
    FZ_CHECK(rc == RC_E_NOMEM && fail_at == 2);
    rc_pool_free(pool);
    goto done;
  }
  s.pool = pool;
  if (contention && rc_response_new(pool, NULL, &s.hog) != RC_OK)
    FZ_CHECK(fail_at == 3);
  if (attach) {
    /* Never performed: it only gives the response a handle to pause. */
    static CURL *easy;
    if (!easy)
      easy = curl_easy_init();
    FZ_CHECK(easy != NULL);
    FZ_CHECK(rc_attach(r, easy) == RC_OK);
    s.easy = easy;
    rc_pool_timeout(pool); /* a loop's thread: what pauses here can be resumed */
  }
  FZ_CHECK(rc_response_set_decoding(r, s.decode) == RC_OK);
  w.r = r;

  for (int round = 0; round < 2; round++) {
    s.chunks.next = (size_t)round;
    s.timed_out = 0;
    /* Set for the first run; the second keeps them across the reset, or
     * changes them. */
    if (observed && (round == 0 || keep[1] != keep[0] || observer[1] != observer[0]))
      FZ_CHECK(rc_response_observe(r, observer[round] ? observe : NULL, &w, keep[round]) == RC_OK);
    s.keep = keep[round];
    s.watch = observer[round] ? &w : NULL;
    w.len = 0;
    w.said = 0;
    if (s.hog) {
      FZ_CHECK(rc_pool_set_budget(pool, cfg.budget) == RC_OK);
      fill_hog(&s);
      s.limit = cfg.budget + slack;
      FZ_CHECK(rc_pool_set_budget(pool, s.limit) == RC_OK);
    }
    long before = ca.calls;
    transfer(r, &s);
    int nomem = fail_at > before && fail_at <= ca.calls;
    check_run(r, &s, &e, nomem);
    check_full(r, &ca);
    /* The settings are fixed while the response holds data. */
    FZ_CHECK(rc_response_observe(r, NULL, NULL, (rc_keep)2) == RC_E_INVAL);
    FZ_CHECK(rc_response_observe(r, NULL, NULL, (rc_keep)!s.keep) == RC_E_BUSY);
    FZ_CHECK((rc_body_kept(r) != 0) == (s.keep == RC_KEEP_BODY));
    rc_response_reset(r);
    rc_response_reset(s.hog);
    s.hog_holds = 0;
    rc_pool_stats st;
    rc_pool_stats_get(pool, &st);
    FZ_CHECK(st.bytes_in_use == 0);
    FZ_CHECK(rc_result(r, CURLE_OK) == RC_E_NO_RESPONSE && rc_hop_count(r) == 0);
  }
  rc_response_free(r);
  rc_response_free(s.hog);
  rc_pool_free(pool);
done:
  FZ_CHECK(ca.live == 0);
  free(w.log);
  free(s.body.p);
  free(s.wire.p);
  return 0;
}
