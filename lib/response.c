/* The response: lifecycle, limits, and every reading accessor. */
#include "body.h"
#include "link.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIZE_CLAMP (SIZE_MAX / 2)

void rc_limits_init(rc_limits *lim)
{
  if (!lim)
    return;
  lim->max_body = RC_DEFAULT_MAX_BODY;
  lim->max_header_bytes = RC_DEFAULT_MAX_HEADER;
  lim->max_hops = RC_DEFAULT_MAX_HOPS;
  lim->on_cap = RC_CAP_STOP;
  lim->max_codings = RC_DEFAULT_MAX_CODINGS;
  lim->max_raw = 0;
  lim->max_memory = 0;
}

static size_t clamp(size_t v) { return v < SIZE_CLAMP ? v : SIZE_CLAMP; }

/* The most hops kept: hops are named by int (rc_hop, rc_header), and the
 * hop table must stay addressable. */
static size_t max_hops_clamp(void)
{
  size_t addressable = SIZE_CLAMP / sizeof(rc__hop);
  return (size_t)INT_MAX < addressable ? (size_t)INT_MAX : addressable;
}

static int known_policy(rc_cap_policy p)
{
  return p == RC_CAP_STOP || p == RC_CAP_DRAIN || p == RC_CAP_REJECT;
}

static rc_code check_limits(const rc_limits *in, rc_limits *out)
{
  if (in->max_hops == 0 || !known_policy(in->on_cap))
    return RC_E_INVAL;
  *out = *in;
  out->max_body = clamp(in->max_body);
  out->max_header_bytes = clamp(in->max_header_bytes);
  out->max_raw = clamp(in->max_raw);
  out->max_memory = clamp(in->max_memory);
  if (out->max_codings > RC__MAX_CODINGS)
    out->max_codings = RC__MAX_CODINGS;
  if (out->max_hops > max_hops_clamp())
    out->max_hops = max_hops_clamp();
  return RC_OK;
}

rc_code rc_response_new(rc_pool *pool, const rc_limits *lim, rc_response **out)
{
  if (!out)
    return RC_E_INVAL;
  *out = NULL;
  rc_limits def;
  if (!lim) {
    rc_limits_init(&def);
    lim = &def;
  }
  rc_limits checked;
  rc_code rc = check_limits(lim, &checked);
  if (rc != RC_OK)
    return rc;
  if (!pool)
    pool = rc_pool_default();
  const rc_allocator *a = rc__pool_allocator(pool);
  rc_response *resp = a->malloc(sizeof *resp, a->ud);
  if (!resp)
    return RC_E_NOMEM;
  memset(resp, 0, sizeof *resp);
  if (pthread_mutex_init(&resp->full_lock, NULL) != 0) {
    a->free(resp, a->ud);
    return RC_E_NOMEM;
  }
  if (pthread_mutex_init(&resp->map_lock, NULL) != 0) {
    pthread_mutex_destroy(&resp->full_lock);
    a->free(resp, a->ud);
    return RC_E_NOMEM;
  }
  resp->spill.fd = -1;
  resp->pool = pool;
  resp->lim = checked;
  resp->declared = RC__UNKNOWN;
  rc__hops_init(&resp->hops, pool);
  rc__buf_init(&resp->body, pool, checked.max_body, 0);
  rc__buf_init(&resp->raw, pool, checked.max_raw, 0);
  rc__buf_init(&resp->full, pool, SIZE_CLAMP, 0);
  rc__pool_ref(pool);
  *out = resp;
  return RC_OK;
}

void rc__response_drop_body(rc_response *resp)
{
  rc__body_drop(resp);
  resp->raw.len = 0;
  resp->truncated = resp->raw_truncated = 0;
  resp->body_started = resp->decoding = 0;
  resp->declared = RC__UNKNOWN;
  resp->encoding = RC_ENC_IDENTITY;
  resp->seen = 0;
  resp->tail = NULL;
  resp->observed = RC_OK;
}

void rc__response_clear(rc_response *resp)
{
  rc__body_free(resp);
  rc__buf_free(&resp->raw);
  rc__buf_free(&resp->full);
  rc__hops_reset(&resp->hops);
  /* Last: a holder passes its place on only once its memory is back. */
  rc__budget_leave(rc__pool_budget(resp->pool), &resp->waiter);
  resp->skip = 0;
  resp->paused = 0;
  rc__response_drop_body(resp);
  resp->error = RC_OK;
}

void rc_response_reset(rc_response *resp)
{
  if (resp)
    rc__response_clear(resp);
}

void rc_response_free(rc_response *resp)
{
  if (!resp)
    return;
  rc_pool *pool = resp->pool;
  const rc_allocator *a = rc__pool_allocator(pool);
  rc__link_drop(resp->link); /* its handle, if it runs again, finds it gone */
  rc__response_clear(resp);
  rc__hops_free(&resp->hops);
  rc__decoder_free(resp->dec);
  pthread_mutex_destroy(&resp->full_lock);
  pthread_mutex_destroy(&resp->map_lock);
  a->free(resp, a->ud);
  rc__pool_unref(pool);
}

int rc__response_holds_data(const rc_response *resp)
{
  return resp->hops.n || rc__body_len(resp) || resp->error != RC_OK;
}

rc_code rc_response_set_limits(rc_response *resp, const rc_limits *lim)
{
  if (!resp || !lim)
    return RC_E_INVAL;
  if (rc__response_holds_data(resp))
    return RC_E_BUSY;
  rc_code rc = check_limits(lim, &resp->lim);
  if (rc == RC_OK)
    rc__buf_set_limit(&resp->raw, resp->lim.max_raw);
  return rc;
}

rc_code rc_response_set_decoding(rc_response *resp, int on)
{
  if (!resp)
    return RC_E_INVAL;
  if (rc__response_holds_data(resp))
    return RC_E_BUSY;
  resp->decode = on != 0;
  return RC_OK;
}

rc_code rc_response_observe(rc_response *resp, rc_observer_fn fn, void *ud, rc_keep keep)
{
  if (!resp || (keep != RC_KEEP_BODY && keep != RC_KEEP_NONE))
    return RC_E_INVAL;
  if (rc__response_holds_data(resp))
    return RC_E_BUSY;
  resp->observer = fn;
  resp->observer_ud = ud;
  resp->keep = keep;
  return RC_OK;
}

rc_code rc_response_set_budget_wait(rc_response *resp, long timeout_ms)
{
  if (!resp || timeout_ms < 0)
    return RC_E_INVAL;
  rc__budget_bind(rc__pool_budget(resp->pool), &resp->waiter, resp->waiter.easy, timeout_ms);
  return RC_OK;
}

/* Can the body be read as one view? A spill file is mapped to tell. A
 * body that is not kept has nothing to read. */
static int body_readable(const rc_response *resp)
{
  return resp->keep == RC_KEEP_NONE || rc__body_view(resp).len == rc__body_len(resp);
}

rc_code rc_result(const rc_response *resp, CURLcode curlcode)
{
  if (!resp)
    return RC_E_INVAL;
  if (resp->waiter.defer_multi)
    return RC_E_KEPT_BACK; /* its transfer never ran */
  if (resp->error != RC_OK)
    return resp->error;
  if (!rc__response_holds_data(resp))
    return curlcode != CURLE_OK ? RC_E_TRANSFER : RC_E_NO_RESPONSE; /* nothing came */
  int readable = body_readable(resp); /* a spill file's last batch is written */
  if (resp->spill.failed)
    return RC_E_SPILL;
  if (resp->truncated)
    return readable ? RC_TRUNCATED : RC_E_NOMEM;
  if (curlcode != CURLE_OK)
    return RC_E_TRANSFER;
  if (resp->decoding && !rc__decoder_ended(resp->dec))
    return RC_E_DECODE; /* the compressed stream ended early */
  return readable ? RC_OK : RC_E_NOMEM;
}

int rc_truncated(const rc_response *resp) { return resp && resp->truncated; }
int rc_raw_truncated(const rc_response *resp) { return resp && resp->raw_truncated; }
rc_encoding rc_body_encoding(const rc_response *resp)
{
  return resp ? resp->encoding : RC_ENC_IDENTITY;
}

static rc_view view_of(const rc__buf *b)
{
  rc_view v = {rc__buf_data(b), b->len};
  return v;
}

static const rc_view empty = {"", 0};

rc_view rc_body(const rc_response *resp) { return resp ? rc__body_view(resp) : empty; }
int rc_body_spilled(const rc_response *resp) { return resp && resp->spill.fd >= 0; }
int rc_body_kept(const rc_response *resp) { return resp && resp->keep == RC_KEEP_BODY; }
size_t rc_body_length(const rc_response *resp) { return resp ? rc__body_len(resp) : 0; }
rc_view rc_raw_body(const rc_response *resp) { return resp ? view_of(&resp->raw) : empty; }

size_t rc_hop_count(const rc_response *resp) { return resp ? resp->hops.n : 0; }

static rc_view raw_view(const rc_response *resp, size_t off, size_t len)
{
  rc_view v = {len ? rc__buf_data(&resp->hops.raw) + off : "", len};
  return v;
}

rc_code rc_hop(const rc_response *resp, int hop, rc_hop_info *out)
{
  if (!resp || !out)
    return RC_E_INVAL;
  const rc__hop *h = rc__hops_at(&resp->hops, hop);
  if (!h)
    return RC_E_RANGE;
  out->status = h->status;
  out->version = h->version;
  out->is_final = h == &resp->hops.v[resp->hops.n - 1];
  out->reason = raw_view(resp, h->reason_off, h->reason_len);
  out->raw = raw_view(resp, h->off, h->len);
  out->trailers = raw_view(resp, h->toff, h->tlen);
  return RC_OK;
}

int rc_status(const rc_response *resp)
{
  if (!resp)
    return 0;
  const rc__hop *h = rc__hops_at(&resp->hops, -1);
  return h ? h->status : 0;
}

rc_code rc_header(const rc_response *resp, int hop, const char *name, size_t nth, rc_view *out)
{
  if (!resp || !name || !out)
    return RC_E_INVAL;
  const rc__hop *h = rc__hops_at(&resp->hops, hop);
  if (!h)
    return RC_E_RANGE;
  rc__lookup q = {name, nth, 0};
  return rc__hops_find(&resp->hops, h, &q, out);
}

rc_code rc_trailer(const rc_response *resp, const char *name, size_t nth, rc_view *out)
{
  if (!resp || !name || !out)
    return RC_E_INVAL;
  const rc__hop *h = rc__hops_at(&resp->hops, -1);
  if (!h)
    return RC_E_RANGE;
  rc__lookup q = {name, nth, 1};
  return rc__hops_find(&resp->hops, h, &q, out);
}

rc_code rc_full_response(const rc_response *readonly, rc_view *out)
{
  if (!readonly || !out)
    return RC_E_INVAL;
  /* The assembled copy is a cache, made once under its lock: the response
   * is not const to begin with (it was made by rc_response_new). */
  rc_response *resp = (rc_response *)readonly;
  const rc__hop *h = rc__hops_at(&resp->hops, -1);
  if (!h)
    return RC_E_RANGE;
  rc_code rc = RC_OK;
  pthread_mutex_lock(&resp->full_lock);
  if (!resp->full.blk) {
    rc_view body = rc__body_view(resp);
    size_t total = h->len + body.len;
    rc__buf_declare(&resp->full, total); /* allocated once, exactly */
    if (resp->keep == RC_KEEP_BODY && body.len != rc__body_len(resp))
      rc = RC_E_NOMEM; /* the spill file could not be mapped */
    else
      rc = rc__buf_make_room(&resp->full, total);
    if (rc == RC_OK) {
      size_t avail;
      unsigned char *p = rc__buf_tail(&resp->full, &avail);
      memcpy(p, rc__buf_data(&resp->hops.raw) + h->off, h->len);
      memcpy(p + h->len, body.ptr, body.len);
      rc__buf_commit(&resp->full, total);
    }
  }
  pthread_mutex_unlock(&resp->full_lock);
  if (rc == RC_OK)
    *out = view_of(&resp->full);
  return rc;
}

static char *dup_parts(rc_view a, rc_view b, size_t *len)
{
  if (a.len > SIZE_MAX - 1 - b.len)
    return NULL;
  char *p = malloc(a.len + b.len + 1);
  if (!p)
    return NULL;
  memcpy(p, a.ptr, a.len);
  memcpy(p + a.len, b.ptr, b.len);
  p[a.len + b.len] = '\0';
  if (len)
    *len = a.len + b.len;
  return p;
}

char *rc_body_dup(const rc_response *resp, size_t *len)
{
  if (len)
    *len = 0; /* also when there is no copy */
  if (!resp)
    return NULL;
  if (!body_readable(resp))
    return NULL; /* a spill file that could not be mapped */
  return dup_parts(rc_body(resp), empty, len);
}

char *rc_full_response_dup(const rc_response *resp, size_t *len)
{
  if (len)
    *len = 0; /* also when there is no copy */
  if (!resp || !body_readable(resp))
    return NULL;
  const rc__hop *h = rc__hops_at(&resp->hops, -1);
  if (!h)
    return NULL;
  return dup_parts(raw_view(resp, h->off, h->len), rc_body(resp), len);
}
