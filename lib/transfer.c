/* The curl side: header and write callbacks, attach and detach. The write
 * path applies the body cap (to decoded bytes when decoding) and the cap
 * policy; the header path feeds the hops. */
#include "body.h"
#include "budget.h"
#include "curl_compat.h"
#include "link.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A stream that rc_multi_add set a reserve aside for gives it back. */
static void give_back_reserve(rc_response *resp)
{
  if (resp->waiter.stream_reserve)
    rc__budget_stream_done(rc__pool_budget(resp->pool), &resp->waiter);
}

/* The last hop's body ended (whole, or at its cap): its stream's reserve
 * goes back; a body of unknown length gives it back at reset. */
static rc_code body_end(rc_response *resp)
{
  give_back_reserve(resp);
  return rc__body_end(resp);
}

/* Records the first failure; later ones do not overwrite it. */
static size_t fail(rc_response *resp, rc_code rc)
{
  if (resp->error == RC_OK)
    resp->error = rc;
  return CURL_WRITEFUNC_ERROR;
}

/* Any new data makes a cached full response stale. */
static void drop_full(rc_response *resp)
{
  if (resp->full.blk)
    rc__buf_free(&resp->full);
}

/* curl 8.14 sizes an HTTP/2 stream's receive window from its receive
 * speed limit, and raises the window to 10 MB when the response headers
 * arrive, before any body byte: a stream paused later has that much on the
 * way, which curl keeps receiving into its own buffers. So from its status
 * line until the budget admits it, a stream that may pause for the budget
 * is held: its speed limit, and so its window, is lowered (the peer may
 * send no more than the 64 KiB window streams start with); the limit is
 * lifted (set to 0, unlimited) when the stream goes on. curl 8.21 sizes
 * the window from the limit at every read of the stream, the first one
 * before the headers: there every request is held from the start
 * (CURLOPT_PREREQFUNCTION, before curl sends it), and the status line
 * lets go of one that is not HTTP/2. Only there: 7.88 does not size
 * windows so; curl before 8.14 can stall after an unpause (curl #16955);
 * the releases between 8.14 and 8.21 were not measured. */

/* The receive speed limit of a held stream: its stream window (curl
 * >= 8.10 sizes a stream's window from it), below the 64 KiB that curl's
 * streams start with. */
#define HOLD_SPEED ((curl_off_t)16 * 1024)

/* When the libcurl loaded lets a stream be held, by release, as measured
 * (see the comment above): 8.14 up to the first release that sizes windows
 * at every read (8.21), from its status line; 8.21 and every release after
 * it, the newest measured, from its request (not when built against a curl
 * older than 7.80, which has no CURLOPT_PREREQFUNCTION); none before 8.14. */
int rc__transfer_hold_from(void)
{
  unsigned int num = rc__curl_version();
  if (num >= 0x081500)
    return RC__HAVE_PREREQ ? RC__HOLD_FROM_REQUEST : RC__HOLD_NEVER;
  if (num >= 0x080e00)
    return RC__HOLD_AT_STATUS;
  return RC__HOLD_NEVER;
}

void rc__transfer_hold(rc__waiter *w, CURL *easy, int hold)
{
  if (!easy || w->held == hold)
    return;
  if (curl_easy_setopt(easy, CURLOPT_MAX_RECV_SPEED_LARGE, hold ? HOLD_SPEED : (curl_off_t)0) ==
      CURLE_OK)
    w->held = hold;
}

/* Whether a stream of resp may be held: the budget may pause it. */
static int may_hold(const rc_response *resp)
{
  rc__budget *budget = rc__pool_budget(resp->pool);
  return resp->hold_from != RC__HOLD_NEVER && resp->keep == RC_KEEP_BODY &&
         rc__budget_limit(budget) != 0 && rc__budget_mode(budget) != RC_OVERFLOW_SPILL;
}

#if RC__HAVE_PREREQ
/* curl 8.21: before each request is sent, its stream is held. */
static int hold_request(void *userdata, char *remote_ip, char *local_ip, int remote_port,
                        int local_port)
{
  (void)remote_ip;
  (void)local_ip;
  (void)remote_port;
  (void)local_port;
  rc_response *resp = rc__link_resolve(userdata);
  if (!resp)
    return CURL_PREREQFUNC_ABORT; /* its response is gone */
  rc__transfer_hold(&resp->waiter, resp->waiter.easy, may_hold(resp));
  return CURL_PREREQFUNC_OK;
}
#endif

/* At a hop's status line: whether its stream is held (see above). With
 * curl 8.21 a hold begins only at the request: one lifted since then
 * (the budget turned on late) is not taken up again, it would bound
 * nothing. */
static void hold_at_status(rc_response *resp)
{
  const rc__hop *hop = rc__hops_at(&resp->hops, -1);
  int hold = may_hold(resp) && hop && hop->version >= 20;
  if (resp->hold_from == RC__HOLD_FROM_REQUEST)
    hold = hold && resp->waiter.held;
  rc__transfer_hold(&resp->waiter, resp->waiter.easy, hold);
}

/* At a hop's status line: a transfer that rc_multi_add admitted with a
 * reserve for its stream, and that owns its connection (HTTP/1.x, where
 * pausing holds the peer back), gives the reserve back. */
static void release_unshared(rc_response *resp)
{
  const rc__hop *hop = rc__hops_at(&resp->hops, -1);
  if (hop && hop->version < 20)
    give_back_reserve(resp);
}

/* At the end of a held hop's header block: a hop whose body cannot come
 * (an interim 1xx, 204, 304, Content-Length 0, a HEAD request) is let go
 * now, as no write call will lift its limit; the handle would otherwise
 * keep it after the transfer. A 1xx's final hop is held again at its
 * status line. */
static void let_go_without_body(rc_response *resp)
{
  const rc__hop *hop = rc__hops_at(&resp->hops, -1);
  if (!resp->waiter.held || !hop || !hop->ended)
    return;
  const rc__framing *f = rc__hops_framing(&resp->hops, resp->lim.max_codings);
  char *method = NULL;
  curl_easy_getinfo(resp->waiter.easy, CURLINFO_EFFECTIVE_METHOD, &method);
  if (hop->status < 200 || hop->status == 204 || hop->status == 304 || f->length == 0 ||
      (method && !strcmp(method, "HEAD")))
    rc__transfer_hold(&resp->waiter, resp->waiter.easy, 0);
}

/* Header lines are never paused for the budget: after a paused header call
 * curl delivers the following lines together in one call, breaking the
 * one-line-per-call contract the hops rely on. Header blocks are capped per
 * hop and count in the pool's bytes in use. */
size_t rc_header_cb(char *ptr, size_t size, size_t nitems, void *userdata)
{
  rc_response *resp = userdata;
  size_t n = size * nitems;
  if (!resp || resp->error != RC_OK)
    return CURL_WRITEFUNC_ERROR;
  drop_full(resp);
  int new_hop;
  rc_code rc = rc__hops_line(&resp->hops, &resp->lim, ptr, n, &new_hop);
  if (rc != RC_OK)
    return fail(resp, rc);
  if (new_hop) {
    rc__response_drop_body(resp); /* a body belongs to the last hop only */
    hold_at_status(resp);
    release_unshared(resp);
  } else {
    let_go_without_body(resp);
  }
  return n;
}

/* Decides, at the first body byte of the last hop, its declared size and
 * whether it is decoded, from the framing read at the end of its header
 * block. */
static rc_code setup_body(rc_response *resp)
{
  resp->body_started = 1;
  const rc__framing *f = rc__hops_framing(&resp->hops, resp->lim.max_codings);
  resp->declared = f->length;
  /* A stream of HTTP/2 or later shares its connection: pausing it does
   * not hold the peer back. */
  resp->waiter.multiplexed = f->version >= 20;
  /* A stream held since its status line has a small window: it may pause. */
  resp->waiter.windowed = resp->waiter.multiplexed && resp->waiter.held;
  resp->waiter.unpausable = resp->waiter.multiplexed && rc__curl_loses_paused_streams();
  if (resp->lim.on_cap == RC_CAP_REJECT && resp->declared != RC__UNKNOWN &&
      resp->declared > resp->lim.max_body)
    return RC_E_TOO_LARGE;

  rc_code rc = f->codings_rc;
  if (rc == RC_OK && f->ncodings == 0)
    return RC_OK; /* none, or identity */
  if (!resp->decode) {
    resp->encoding = RC_ENC_NOT_DECODED; /* whatever it is: not ours */
    return RC_OK;
  }
  if (rc == RC_E_INVAL) {
    resp->encoding = RC_ENC_UNSUPPORTED;
    return RC_OK;
  }
  if (rc != RC_OK)
    return rc;
  if (!resp->dec && !(resp->dec = rc__decoder_new(rc__pool_allocator(resp->pool))))
    return RC_E_NOMEM;
  rc = rc__decoder_start(resp->dec, f->codings, f->ncodings);
  if (rc != RC_OK)
    return rc;
  resp->encoding = RC_ENC_DECODED;
  resp->decoding = 1;
  resp->declared = RC__UNKNOWN; /* it counted encoded bytes */
  return RC_OK;
}

/* Sets up the write path at the first body byte of the last hop. */
static rc_code start_body(rc_response *resp)
{
  rc_code rc = setup_body(resp);
  if (rc == RC_OK)
    rc__body_begin(resp);
  return rc;
}

/* The sink that decoded bytes go to: the body, up to its cap. */
static rc_code sink_reserve(void *ctx, unsigned char **out, size_t *avail)
{
  return rc__body_tail(ctx, out, avail);
}

static void sink_commit(void *ctx, size_t n) { rc__body_commit(ctx, n); }

/* At the cap: under DRAIN the rest is read and dropped, else stop. Either
 * way no more of the body is received into the raw copy. */
static size_t at_cap(rc_response *resp, size_t n)
{
  resp->truncated = 1;
  if (resp->decoding && resp->lim.max_raw)
    resp->raw_truncated = 1;
  if (body_end(resp) != RC_OK)
    return fail(resp, RC_E_SPILL);
  if (resp->lim.on_cap == RC_CAP_DRAIN)
    return n;
  return fail(resp, RC_TRUNCATED);
}

static rc_code decode_slice(rc_response *resp, const char *ptr, size_t n)
{
  if (resp->lim.max_raw) {
    size_t room = resp->lim.max_raw - resp->raw.len;
    size_t take = n < room ? n : room;
    if (rc__buf_append(&resp->raw, ptr, take) != RC_OK)
      return RC_E_NOMEM;
    resp->raw_truncated |= take < n;
  }
  rc__sink sink = {sink_reserve, sink_commit, resp};
  rc_code rc = rc__decoder_write(resp->dec, ptr, n, &sink);
  rc__body_step_end(resp);
  if (rc == RC_OK && rc__decoder_ended(resp->dec))
    rc = body_end(resp);
  return rc == RC_OK ? resp->observed : rc; /* the observer's, said at the step's last bytes */
}

/* Encoded input goes to the decoder in slices, each admitted by the body
 * first. A pause for the budget may come in the middle of a chunk; curl
 * delivers the whole chunk again on resuming, and skip says how much of it
 * was decoded already. */
static size_t write_decoded(rc_response *resp, const char *ptr, size_t n)
{
  size_t done = resp->skip < n ? resp->skip : n;
  resp->skip = 0;
  size_t slice = rc__body_input_slice(resp);
  while (done < n) {
    size_t len = n - done < slice ? n - done : slice;
    int paused = 0;
    rc_code rc = slice == SIZE_MAX ? RC_OK : rc__body_admit_input(resp, len, &paused);
    if (rc != RC_OK)
      return fail(resp, rc);
    if (paused) {
      resp->skip = done;
      return CURL_WRITEFUNC_PAUSE;
    }
    rc = decode_slice(resp, ptr + done, len);
    if (rc == RC_TRUNCATED)
      return at_cap(resp, n);
    if (rc != RC_OK)
      return fail(resp, rc);
    done += len;
  }
  return n;
}

static size_t write_body(rc_response *resp, char *ptr, size_t n)
{
  if (resp->error != RC_OK)
    return CURL_WRITEFUNC_ERROR;
  if (resp->truncated)
    return n; /* draining: nothing more is kept, or decoded */
  if (n == 0)
    return 0;
  drop_full(resp);
  if (!resp->body_started) {
    rc_code rc = start_body(resp);
    if (rc != RC_OK)
      return fail(resp, rc);
  }
  if (resp->decoding)
    return write_decoded(resp, ptr, n);

  size_t room = resp->lim.max_body - rc__body_len(resp);
  size_t take = n < room ? n : room;
  int paused;
  rc_code rc = rc__body_append(resp, ptr, take, &paused);
  if (rc == RC_OK && paused)
    return CURL_WRITEFUNC_PAUSE; /* nothing taken: curl delivers it again */
  int stop_at_end = rc == RC_STOPPED && take == n && rc_status(resp) / 100 != 3;
  if ((rc == RC_OK || stop_at_end) && rc__body_len(resp) == resp->declared) {
    /* The whole declared body: a stop with its last bytes (all of the
     * slice taken) ends nothing early, so curl ends the transfer as usual
     * and keeps the connection (aborting would close it); the result is
     * RC_STOPPED all the same. A redirect's (3xx) is stopped as before:
     * whether its chain goes on may hang on that stop. */
    rc_code end = body_end(resp);
    if (end != RC_OK)
      return fail(resp, end);
    if (stop_at_end) {
      if (resp->error == RC_OK)
        resp->error = RC_STOPPED;
      return n;
    }
  }
  if (rc != RC_OK)
    return fail(resp, rc);
  return take < n ? at_cap(resp, n) : n;
}

/* Every way out of a pause but another pause leaves the budget's queue,
 * also when the bytes went in without asking the budget again (a decoded
 * body after the budget was turned off). */
size_t rc_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  rc_response *resp = userdata;
  if (!resp)
    return CURL_WRITEFUNC_ERROR;
  size_t ret = write_body(resp, ptr, size * nmemb);
  int paused = ret == CURL_WRITEFUNC_PAUSE;
  if (resp->paused && !paused)
    rc__budget_proceed(rc__pool_budget(resp->pool), &resp->waiter);
  resp->paused = paused;
  /* A paused stream stays held (or is held again: its resume lifted the
   * limit), before curl pauses it; one that goes on is held no more. */
  rc__transfer_hold(&resp->waiter, resp->waiter.easy, paused && resp->waiter.windowed);
  return ret;
}

/* The six curl options rc_attach sets and rc_detach restores. */
typedef struct options {
  curl_write_callback write, header;
  void *data;         /* WRITEDATA and HEADERDATA, or stdout and NULL */
  const char *accept; /* CURLOPT_ACCEPT_ENCODING */
  long decoding;      /* CURLOPT_HTTP_CONTENT_DECODING */
} options;

static int set_all(CURL *easy, const options *o)
{
  void *header_data = o->header ? o->data : NULL;
  return curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, o->write) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_WRITEDATA, o->data) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, o->header) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_HEADERDATA, header_data) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, o->accept) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_HTTP_CONTENT_DECODING, o->decoding) == CURLE_OK;
}

/* The callbacks rc_attach sets: rc_write_cb and rc_header_cb on the
 * response a handle's link names, failing the transfer when it is gone. */
static size_t link_write_cb(char *ptr, size_t size, size_t nmemb, void *token)
{
  rc_response *resp = rc__link_resolve(token);
  return resp ? rc_write_cb(ptr, size, nmemb, resp) : CURL_WRITEFUNC_ERROR;
}

/* Whether the header line curl delivers now is its transfer's first: curl
 * counts a transfer's header bytes from 0 at its start (every
 * curl_easy_perform, every curl_multi_add_handle) and adds each line only
 * after its header callback returned. Redirects, 1xx and auth rounds of one
 * transfer count on. */
static int first_header_line(CURL *easy)
{
  long bytes = -1;
  return easy && curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &bytes) == CURLE_OK && bytes == 0;
}

/* The header callback also begins a new transfer's hops in a response
 * that still holds the previous transfer's: at the transfer's first header
 * line it resets the response. */
static size_t link_header_cb(char *ptr, size_t size, size_t nitems, void *token)
{
  rc_response *resp = rc__link_resolve(token);
  if (!resp)
    return CURL_WRITEFUNC_ERROR;
  if (rc__response_holds_data(resp) && first_header_line(resp->waiter.easy))
    rc__response_clear(resp); /* a new transfer without rc_response_reset */
  return rc_header_cb(ptr, size, nitems, resp);
}

/* The handle gets a new link to the response; the link given before (to
 * another handle, or this one) is dropped, so that a handle the response
 * left finds it gone. A response still holding another handle's transfer
 * is not taken from it. */
rc_code rc_attach(rc_response *resp, CURL *easy)
{
  if (!resp || !easy)
    return RC_E_INVAL;
  if (resp->waiter.easy && resp->waiter.easy != easy && rc__response_holds_data(resp))
    return RC_E_BUSY;
  void *link;
  if (rc__link_new(resp, &link) != RC_OK)
    return RC_E_NOMEM;
  rc__link_drop(resp->link);
  resp->link = link;
  options o = {link_write_cb, link_header_cb, link, rc__decoder_accept(), 0L};
  if (!set_all(easy, &o))
    return RC_E_INVAL;
  resp->decode = 1;
  rc__budget_bind(rc__pool_budget(resp->pool), &resp->waiter, easy, resp->waiter.wait_ms);
  resp->hold_from = rc__transfer_hold_from();
#if RC__HAVE_PREREQ
  if (resp->hold_from == RC__HOLD_FROM_REQUEST &&
      (curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, hold_request) != CURLE_OK ||
       curl_easy_setopt(easy, CURLOPT_PREREQDATA, link) != CURLE_OK))
    return RC_E_INVAL;
#endif
  return RC_OK;
}

rc_code rc_detach(rc_response *resp, CURL *easy)
{
  if (!resp || !easy)
    return RC_E_INVAL;
  rc__link_drop(resp->link);
  resp->link = NULL;
  resp->decode = 0;
  rc__transfer_hold(&resp->waiter, easy, 0); /* its speed limit back to unlimited */
#if RC__HAVE_PREREQ
  if (resp->hold_from == RC__HOLD_FROM_REQUEST) {
    curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, (curl_prereq_callback)NULL);
    curl_easy_setopt(easy, CURLOPT_PREREQDATA, NULL);
  }
#endif
  rc__budget_bind(rc__pool_budget(resp->pool), &resp->waiter, NULL, resp->waiter.wait_ms);
  /* curl's defaults: fwrite to stdout, no header callback, no encoding. */
  options o = {NULL, NULL, stdout, NULL, 1L};
  if (!set_all(easy, &o))
    return RC_E_INVAL;
  return RC_OK;
}
