/* Contenders: the ways of keeping a body that the bench compares. Each one
 * sets the write callback of a transfer, hands back the finished body, and
 * says what it keeps for reuse. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* Sets the baselines' write callback; curl decodes in gzip scenarios. */
static void baseline_begin(run *r, slot *s, curl_write_callback cb)
{
  curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, cb);
  curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(s->easy, CURLOPT_ACCEPT_ENCODING, r->sc->gzip ? "" : NULL);
}

static outcome baseline_outcome(const slot *s, CURLcode cc)
{
  if (cc == CURLE_OK)
    return OUT_COMPLETE;
  if (cc == CURLE_WRITE_ERROR && s->len == s->cap)
    return OUT_AT_CAP;
  return OUT_FAILED;
}

static bool no_setup(run *r)
{
  (void)r;
  return true;
}
static void no_op(run *r) { (void)r; }
static size_t no_idle(run *r)
{
  (void)r;
  return 0;
}
static void no_finish(run *r, slot *s)
{
  (void)r;
  (void)s;
}

static CURLMcode plain_poll(run *r, CURLM *multi, int timeout_ms)
{
  (void)r;
  return curl_multi_poll(multi, NULL, 0, timeout_ms, NULL);
}

/* ---- discard: the floor ------------------------------------------------- */

/* Counts the bytes up to the cap, and notes the probe bytes. */
static size_t discard_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
  slot *s = ud;
  size_t n = size * nmemb;
  size_t take = n <= s->cap - s->len ? n : s->cap - s->len;
  for (int i = 0; i < 4; i++)
    if (s->probe[i] >= s->len && s->probe[i] - s->len < take)
      s->seen[i] = (unsigned char)ptr[s->probe[i] - s->len];
  s->len += take;
  return take < n ? CURL_WRITEFUNC_ERROR : n;
}

static void discard_begin(run *r, slot *s) { baseline_begin(r, s, discard_write); }

static outcome discard_end(run *r, slot *s, CURLcode cc, body *out)
{
  (void)r;
  *out = (body){NULL, s->len};
  return baseline_outcome(s, cc);
}

/* ---- one-copy: the limit -------------------------------------------------- */

/* A max-body buffer per slot, touched up front, reused. */
static bool onecopy_setup(run *r)
{
  for (long i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    if (!(s->buf = cnt_malloc(r->cap)))
      return false;
    memset(s->buf, 0, r->cap);
    s->capacity = r->cap;
  }
  return true;
}

static size_t onecopy_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
  slot *s = ud;
  size_t n = size * nmemb;
  size_t take = n <= s->capacity - s->len ? n : s->capacity - s->len;
  memcpy(s->buf + s->len, ptr, take);
  s->len += take;
  return take < n ? CURL_WRITEFUNC_ERROR : n;
}

static void onecopy_begin(run *r, slot *s) { baseline_begin(r, s, onecopy_write); }

static outcome onecopy_end(run *r, slot *s, CURLcode cc, body *out)
{
  (void)r;
  *out = (body){s->buf, s->len};
  return baseline_outcome(s, cc);
}

static size_t onecopy_idle(run *r) { return r->slots[0].buf ? (size_t)r->nslots * r->cap : 0; }

static void onecopy_trim(run *r)
{
  for (long i = 0; i < r->nslots; i++) {
    free(r->slots[i].buf);
    r->slots[i].buf = NULL;
  }
}

/* ---- getinmemory: curl's example, to the letter of its pattern ----------- */

static size_t gim_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
  slot *s = ud;
  size_t n = size * nmemb;
  unsigned char *p = cnt_realloc(s->buf, s->len + n + 1);
  if (!p)
    return 0;
  s->buf = p;
  memcpy(s->buf + s->len, ptr, n);
  s->len += n;
  s->buf[s->len] = 0;
  return n;
}

static void gim_begin(run *r, slot *s)
{
  s->buf = cnt_malloc(1);
  baseline_begin(r, s, gim_write);
}

static outcome gim_end(run *r, slot *s, CURLcode cc, body *out)
{
  (void)r;
  *out = (body){s->buf, s->len};
  return baseline_outcome(s, cc);
}

static void free_buf(run *r, slot *s)
{
  (void)r;
  free(s->buf);
  s->buf = NULL;
  s->capacity = 0;
}

/* ---- doubling --------------------------------------------------------------
 * Capacity doubles from 16 KiB, never past the cap; at the cap it keeps
 * what fits and fails the write. */
#define DOUBLING_START (16 * KiB)

static size_t doubling_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
  slot *s = ud;
  size_t n = size * nmemb;
  size_t take = n <= s->cap - s->len ? n : s->cap - s->len;
  if (s->len + take > s->capacity) {
    size_t cap = s->capacity ? s->capacity : DOUBLING_START;
    while (cap < s->len + take)
      cap *= 2;
    if (cap > s->cap)
      cap = s->cap;
    unsigned char *p = cnt_realloc(s->buf, cap);
    if (!p)
      return 0;
    s->buf = p;
    s->capacity = cap;
  }
  memcpy(s->buf + s->len, ptr, take);
  s->len += take;
  return take < n ? CURL_WRITEFUNC_ERROR : n;
}

static void doubling_begin(run *r, slot *s) { baseline_begin(r, s, doubling_write); }

/* ---- respchain ---------------------------------------------------------------
 * A pool through the counting allocator, with default settings except where
 * the scenario or the command line says. */
size_t opt_rc_max_large = SIZE_MAX, opt_rc_chunk; /* unset: default */
size_t opt_spill_memory = 1 * MiB;                /* rc-spill's max_memory */
const char *opt_spill_dir;                        /* NULL: the library's default */

/* The pool and, unless the scenario makes one per transfer, a response per
 * slot; budget and max_memory 0 are off. */
static bool rc_setup_with(run *r, size_t budget, size_t max_memory)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.allocator = &counting_allocator;
  cfg.max_buffer = r->cap + 1; /* the default when the cap is the default */
  cfg.budget = budget;
  cfg.spill_dir = opt_spill_dir;
  if (r->sc->max_large)
    cfg.max_large = r->sc->max_large;
  if (opt_rc_max_large != SIZE_MAX)
    cfg.max_large = opt_rc_max_large;
  if (opt_rc_chunk)
    cfg.chunk_size = opt_rc_chunk;
  if (rc_pool_new(&cfg, &r->pool) != RC_OK)
    return false;
  rc_limits_init(&r->lim);
  r->lim.max_body = r->cap;
  r->lim.max_memory = max_memory;
  if (!r->sc->per_transfer)
    for (long i = 0; i < r->nslots; i++)
      if (rc_response_new(r->pool, &r->lim, &r->slots[i].resp) != RC_OK)
        return false;
  return true;
}

static bool rc_setup(run *r) { return rc_setup_with(r, 0, 0); }
static bool rcb_setup(run *r) { return rc_setup_with(r, r->budget, 0); }
static bool rcs_setup(run *r) { return rc_setup_with(r, 0, opt_spill_memory); }

static void rc_begin(run *r, slot *s)
{
  if (r->sc->per_transfer && rc_response_new(r->pool, &r->lim, &s->resp) != RC_OK)
    s->resp = NULL; /* fails below, as a transfer error */
  if (s->resp)
    rc_attach(s->resp, s->easy);
}

static outcome rc_end(run *r, slot *s, CURLcode cc, body *out)
{
  (void)r;
  if (!s->resp)
    return OUT_FAILED;
  rc_view b = rc_body(s->resp);
  *out = (body){(const unsigned char *)b.ptr, b.len};
  rc_code rc = rc_result(s->resp, cc);
  if (rc != RC_OK && rc != RC_TRUNCATED)
    fprintf(stderr, "  respchain: %s (%s)\n", rc_strerror(rc), curl_easy_strerror(cc));
  return rc == RC_OK ? OUT_COMPLETE : rc == RC_TRUNCATED ? OUT_AT_CAP : OUT_FAILED;
}

/* As rc_end; a body over max_memory must also have been spilled (and is
 * then read through rc_body's mapping of the file). */
static outcome rcs_end(run *r, slot *s, CURLcode cc, body *out)
{
  outcome o = rc_end(r, s, cc, out);
  if (o != OUT_FAILED && out->len > r->lim.max_memory && !rc_body_spilled(s->resp)) {
    fprintf(stderr, "  rc-spill: a body of %zu bytes was not spilled\n", out->len);
    return OUT_FAILED;
  }
  return o;
}

static void rc_finish(run *r, slot *s)
{
  if (r->sc->per_transfer) {
    rc_response_free(s->resp);
    s->resp = NULL;
  } else {
    rc_response_reset(s->resp);
  }
}

static CURLMcode rc_poll(run *r, CURLM *multi, int timeout_ms)
{
  return rc_multi_poll(r->pool, multi, NULL, 0, timeout_ms, NULL);
}

static size_t rc_idle(run *r)
{
  rc_pool_stats st;
  rc_pool_stats_get(r->pool, &st);
  return st.bytes_idle;
}

static void rc_trim(run *r) { rc_pool_trim(r->pool); }

static void rc_teardown(run *r)
{
  for (long i = 0; i < r->nslots; i++) {
    rc_response_free(r->slots[i].resp);
    r->slots[i].resp = NULL;
  }
  rc_pool_free(r->pool);
  r->pool = NULL;
}

const contender CONTENDERS[NCONT] = {
    [K_DISCARD] = {"discard", "floor: counts bytes, keeps nothing", true, no_setup, discard_begin,
                   discard_end, no_finish, plain_poll, no_idle, no_op, no_op},
    [K_ONECOPY] = {"one-copy", "limit: pre-touched max-body buffer per slot", true, onecopy_setup,
                   onecopy_begin, onecopy_end, no_finish, plain_poll, onecopy_idle, onecopy_trim,
                   onecopy_trim},
    [K_RC] = {"respchain", "defaults, rc_attach + rc_multi_poll", true, rc_setup, rc_begin, rc_end,
              rc_finish, rc_poll, rc_idle, rc_trim, rc_teardown},
    [K_RCB] = {"rc-budget", "respchain with a memory budget", true, rcb_setup, rc_begin, rc_end,
               rc_finish, rc_poll, rc_idle, rc_trim, rc_teardown},
    [K_RCS] = {"rc-spill", "respchain with max_memory: bodies past it spill", true, rcs_setup,
               rc_begin, rcs_end, rc_finish, rc_poll, rc_idle, rc_trim, rc_teardown},
    [K_GIM] = {"getinmemory", "realloc to the exact size per callback, no cap", false, no_setup,
               gim_begin, gim_end, free_buf, plain_poll, no_idle, no_op, no_op},
    [K_DOUBLING] = {"doubling", "doubling from 16 KiB, capped at the max body", true, no_setup,
                    doubling_begin, gim_end, free_buf, plain_poll, no_idle, no_op, no_op},
    /* Not run by the driver: run_child (child.c) runs the program. */
    [K_SCAN] = {"scan", "examples/scan as a child process (scan-* scenarios)", true},
    [K_SCANM] = {"scan-match", "the same with the scenario's matchers (scan-match, scan-stop)",
                 true},
};
