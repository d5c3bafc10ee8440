/* scan: a concurrent HTTP scanner on one curl multi handle, in the manner of
 * template scanners such as nuclei and httpx: fetch many targets at once,
 * run simple matchers over each response, print one JSON line per target.
 *
 *   scan [options] -u URL [-u URL ...]
 *   scan [options] [-l FILE]          targets from FILE ("-": stdin)
 *
 * This file is the loop; main.c is main, and base.h lists the layers.
 * Run "scan --help" for the options, the matching rule and the output; the
 * man page is doc/scan.1. "demo" (examples/demo.c) runs scan against a
 * loopback server it starts itself.
 *
 * How it is put together (the part worth copying):
 *  - One pool for the whole scan, optionally with a memory budget.
 *  - One slot per unit of concurrency. A slot owns an easy handle and a
 *    response, both made once and attached once (rc_attach); a target only
 *    changes CURLOPT_URL. CURLOPT_PRIVATE maps a finished easy handle back to
 *    its slot.
 *  - The multi loop of respchain.h, which never waits while a target could
 *    start. Each turn: idle slots take their next targets and start;
 *    rc_multi_poll sleeps like curl_multi_poll (until curl, the rate limit,
 *    a retry's backoff or the budget has work; a transfer just added is due
 *    at once) and resumes the transfers that the budget paused;
 *    curl_multi_perform; each finished transfer is reported and its
 *    response reset at once, so its memory goes back to the pool (and to
 *    the budget), and the next turn starts its slot's next target before
 *    any wait.
 *  - Matchers run over the body as it arrives, through a body observer
 *    (rc_response_observe; with Vectorscan when built with it), so a body
 *    that no matcher needs whole is not kept at all (RC_KEEP_NONE) and
 *    memory does not grow with bodies.
 *  - Targets are read one at a time as slots free up, so a list of any length
 *    is scanned in constant memory. A slot waits, out of the multi handle,
 *    for its turn under --rate and for the backoff before a retry.
 *  - Each result is written as one line with one write(2) as soon as its
 *    target ends, so whatever stops the scan, every line written is whole.
 *    SIGINT and SIGTERM stop it cleanly: a handler writes to a pipe that the
 *    loop polls beside curl's sockets; the transfers in flight are reported
 *    as interrupted with what they received.
 *
 * Exit status: 0 the scan ran (whatever the targets answered); 1 setup
 * failure (a file, curl, memory) or the results could not be written; 2
 * usage; 130 or 143 stopped by SIGINT or SIGTERM; 141 the reader of the
 * output went away (a broken pipe, as with "| head").
 *
 * Builds alone, with or without Vectorscan (see base.h). */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROGRESS_INTERVAL 0.1 /* seconds between progress line updates */
#define RETRY_BACKOFF     0.2 /* seconds before the first retry; doubles */
#define RETRY_BACKOFF_MAX 10.0
/* curl's receive buffer (CURLOPT_BUFFERSIZE; its default is 16 KiB): a
 * larger one takes a large body in a quarter of the reads. The write
 * callback still gets at most CURL_MAX_WRITE_SIZE bytes at a time, and a
 * transfer that the budget pauses leaves curl holding at most this much
 * more. 64 KiB stays below glibc's mmap threshold, so a buffer curl frees
 * and allocates again is reused memory, not fresh pages. */
#define RECV_BUFFER 65536L

#define MiB (1024.0 * 1024.0)

/* ---- Signals ------------------------------------------------------------ */

/* The first SIGINT or SIGTERM; 0 while none came. The handler also writes
 * a byte to the pipe, which the loop polls beside curl's sockets, so that a
 * signal ends its wait at once. */
static volatile sig_atomic_t caught;
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
  if (caught) { /* the second: end at once, by the signal */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  caught = sig;
  int saved = errno;
  ssize_t ignored = write(signal_pipe[1], "", 1);
  (void)ignored;
  errno = saved;
}

/* Installs the handlers. SIGPIPE is ignored: a write to a reader that went
 * away fails with EPIPE, and scan ends quietly. */
static int catch_signals(void)
{
  if (pipe(signal_pipe) != 0)
    return -1;
  for (int i = 0; i < 2; i++)
    if (fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(signal_pipe[i], F_SETFL, O_NONBLOCK) != 0)
      return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  return sigaction(SIGINT, &sa, NULL) == 0 && sigaction(SIGTERM, &sa, NULL) == 0 ? 0 : -1;
}

/* ---- Transfers ---------------------------------------------------------- */

/* -t: the User-Agent and Accept-Encoding header lines (the codings the
 * response decodes), where -H gives neither, into s->defaults: requests
 * send them as header lines, which a template's header of the same name
 * replaces (plan_set_request), and not from CURLOPT_USERAGENT and
 * CURLOPT_ACCEPT_ENCODING, from which curl formats both lines again for
 * every request (before 8.6, a byte at a time, twice). 0 or -1. */
static int default_headers(scan *s)
{
  const options *o = s->opt;
  char text[512];
  const char *name[] = {"User-Agent", "Accept-Encoding"};
  const char *value[] = {o->user_agent, rc_accept_encoding()};
  for (size_t i = 0; i < 2; i++) {
    if (plan_headers_name(o->headers, name[i]))
      continue; /* -H gives it */
    snprintf(text, sizeof text, "%s: %s", name[i], value[i]);
    struct curl_slist *more = curl_slist_append(s->defaults, text);
    if (!more)
      return -1;
    s->defaults = more;
  }
  return 0;
}

/* The request options from the command line, the same for every target.
 * With -t the User-Agent goes with the request's header lines
 * (default_headers), and with a proxy here too: curl sends it in the
 * CONNECT of a tunnel, where those lines do not go. */
static int set_request(CURL *e, const options *o, int templated)
{
  int agent = !templated || o->proxy;
  int ok = (!agent || curl_easy_setopt(e, CURLOPT_USERAGENT, o->user_agent) == CURLE_OK) &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTP_VERSION, o->http_version) == CURLE_OK;
  if (ok && o->data)
    ok =
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(o->data)) == CURLE_OK &&
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, o->data) == CURLE_OK;
  /* HEAD is CURLOPT_NOBODY: as a custom method curl would wait for the
   * body that the headers announce. */
  if (ok && !strcmp(o->method, "HEAD"))
    ok = curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && strcmp(o->method, o->data ? "POST" : "GET") != 0)
    ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, o->method) == CURLE_OK;
  if (ok && o->proxy)
    /* A tunnel's CONNECT reply is the proxy's, not a hop of the target's
     * chain: curl keeps it from the response (which would count it as a
     * hop), and the report takes its status from CURLINFO_HTTP_CONNECTCODE. */
    ok = curl_easy_setopt(e, CURLOPT_PROXY, o->proxy) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L) == CURLE_OK;
  if (ok && o->insecure)
    ok = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
  return ok ? 0 : -1;
}

/* Whether curl cannot reuse an HTTP/2 prior-knowledge connection: from
 * 7.87.0 to before 8.0.0 a second transfer on one fails (curl issue
 * 10634), so each transfer then gets a connection of its own. */
static int h2c_unreusable(const options *o)
{
  unsigned int num = curl_version_info(CURLVERSION_NOW)->version_num;
  return o->http_version == CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE && num >= 0x075700 &&
         num < 0x080000;
}

/* Targets come from outside: only web URLs, also after a redirect
 * (CURLOPT_PROTOCOLS_STR is curl 7.85 and newer). */
static int web_only(CURL *e)
{
#if LIBCURL_VERSION_NUM >= 0x075500
  return curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK;
#else
  long web = CURLPROTO_HTTP | CURLPROTO_HTTPS;
  return curl_easy_setopt(e, CURLOPT_PROTOCOLS, web) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, web) == CURLE_OK;
#endif
}

/* Makes the slot's easy handle and response, and sets every option that
 * stays the same from one target to the next. */
static int slot_init(scan *s, slot *sl, const rc_limits *lim)
{
  const options *o = s->opt;
  if (s->tpl && !(sl->job = calloc(1, sizeof *sl->job)))
    return -1;
  if (rc_response_new(s->pool, lim, &sl->resp) != RC_OK || !(sl->easy = curl_easy_init()) ||
      reading_init(&sl->rd, &s->engine, sl->resp) != 0)
    return -1;
  /* Every body goes by the observer; it is stored only when a matcher
   * needs it whole, so that otherwise memory does not grow with bodies. */
  if (rc_response_observe(sl->resp, observe, &sl->rd,
                          s->engine.keep_body ? RC_KEEP_BODY : RC_KEEP_NONE) != RC_OK)
    return -1;
  /* The response's callbacks; it decodes the body itself, so that
   * --max-body counts decoded bytes. */
  if (rc_attach(sl->resp, sl->easy) != RC_OK)
    return -1;
  CURL *e = sl->easy;
  /* -t: Accept-Encoding is a header line (default_headers); the response
   * still decodes. */
  if (s->tpl && curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, (char *)NULL) != CURLE_OK)
    return -1;
  int ok = curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)sl) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_ERRORBUFFER, sl->errbuf) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, o->max_redirs > 0 ? 1L : 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_MAXREDIRS, o->max_redirs) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms) == CURLE_OK &&
           web_only(e) &&
           curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_BUFFERSIZE, RECV_BUFFER) == CURLE_OK &&
           (!h2c_unreusable(o) || curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L) == CURLE_OK) &&
           redirect_init(sl) == 0;
  return ok && set_request(e, o, s->tpl != NULL) == 0 ? 0 : -1;
}

/* ---- The loop ----------------------------------------------------------- */

/* Whether an attempt that ended so is worth another: a connection that
 * failed or broke, a timeout, or a 5xx status. */
static int retryable(rc_response *r, CURLcode cc)
{
  switch (cc) {
  case CURLE_OK: return rc_result(r, cc) == RC_OK && rc_status(r) >= 500 && rc_status(r) <= 599;
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    /* Only when no limit of the response ended it. */
    return rc_result(r, cc) == RC_E_TRANSFER;
  default: return 0;
  }
}

/* Reports the slot's target, its transfer over: its verdict, its line
 * (unless --matched-only leaves it out) or with -t the templates' lines,
 * and the counts. */
static void report(scan *s, slot *sl, CURLcode cc, ending how)
{
  attempt a = {sl->url, s->opt->method, sl->easy, sl->errbuf, sl->attempts, 0, cc, how, sl->job};
  int matched = matches(&sl->rd);
  if (s->tpl) /* -t: the templates' lines, and no line of the target's own */
    matched = out_templates(&s->out, &sl->rd, &a, sl->target,
                            sl->job->in_seq ? &sl->job->seq : NULL) > 0;
  char buf[CURL_ERROR_SIZE + 128];
  curl_off_t wire = 0;
  if (how != NOT_STARTED)
    curl_easy_getinfo(sl->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
  s->done++;
  s->matched += matched != 0;
  s->errors += out_error(&sl->rd, &a, buf, sizeof buf) != NULL;
  s->interrupted += how == INTERRUPTED;
  for (size_t i = 0; i < s->m->nextracts; i++)
    if (extract_incomplete(&sl->rd, i)) {
      s->incomplete++;
      break;
    }
  s->body_bytes += rc_body_length(sl->resp); /* counted whether or not the body was kept */
  s->wire_bytes += (uint64_t)wire;
  if (s->tpl || (!matched && s->opt->matched_only))
    return;
  a.took = seconds_since(&sl->started);
  out_target(&s->out, &sl->rd, &a, matched);
}

/* Ends the slot's target: the response's memory goes back to the pool (and
 * to the budget, where paused transfers may be waiting for it) and the slot
 * becomes idle. */
static void slot_finish(scan *s, slot *sl)
{
  if (sl->state == SLOT_READY)
    s->ready--;
  rc_response_reset(sl->resp);
  free(sl->url);
  free(sl->target);
  sl->url = sl->target = NULL;
  if (sl->job)
    plan_job_free(sl->job);
  sl->state = SLOT_IDLE;
}

/* The limits of every response: the body cap, the memory limit, and room
 * for every hop of a redirect chain plus a few 1xx interim responses; with
 * c, its request's max-size as the body cap where it is the lower. */
static void response_limits(const scan *s, const cluster *c, rc_limits *lim)
{
  const options *o = s->opt;
  rc_limits_init(lim);
  lim->max_body = o->max_body;
  if (c && c->max_size > 0 && (unsigned long)c->max_size < o->max_body)
    lim->max_body = (size_t)c->max_size;
  lim->max_memory = o->max_memory;
  lim->max_hops = (size_t)o->max_redirs + 8;
  for (size_t i = 0; !c && s->tpl && i < s->plan->nclusters; i++)
    if ((size_t)s->plan->c[i].max_redirs + 8 > lim->max_hops)
      lim->max_hops = (size_t)s->plan->c[i].max_redirs + 8;
  if (c && (size_t)c->max_redirs + 8 > lim->max_hops)
    lim->max_hops = (size_t)c->max_redirs + 8;
  lim->on_cap = RC_CAP_STOP; /* a scanner has no use for the rest */
}

/* -t: the slot's cookie jar for the request of cluster c: curl's cookie
 * engine, on from a sequence's first request that uses it; emptied
 * unless the request follows its sequence's (plan_keeps_cookies), so
 * that no other template or target sees them. */
static CURLcode set_cookies(slot *sl, const cluster *c)
{
  CURLcode cc = CURLE_OK;
  if (sl->cookies && !plan_keeps_cookies(sl->job, c))
    cc = curl_easy_setopt(sl->easy, CURLOPT_COOKIELIST, "ALL");
  if (cc == CURLE_OK && !sl->cookies && plan_uses_cookies(sl->job, c) &&
      (cc = curl_easy_setopt(sl->easy, CURLOPT_COOKIEFILE, "")) == CURLE_OK)
    sl->cookies = 1;
  return cc;
}

/* Hands the slot's target to curl. A target that cannot be started (e.g. a
 * URL past curl's length limit) is reported as such and ends. */
static void slot_start(scan *s, slot *sl)
{
  s->ready--;
  sl->state = SLOT_IDLE;
  sl->errbuf[0] = '\0';
  sl->attempts++;
  observed_reset(&sl->rd);
  clock_gettime(CLOCK_MONOTONIC, &sl->started);
  CURLcode cc = curl_easy_setopt(sl->easy, CURLOPT_URL, sl->url);
  /* -t: the cluster's request, its body kept where its templates need it
   * (the response is empty: reset since its last transfer). */
  size_t c = sl->rd.cluster;
  rc_limits lim;
  if (s->tpl)
    response_limits(s, &s->plan->c[c], &lim);
  if (cc == CURLE_OK && s->tpl &&
      (plan_set_request(sl->easy, s->plan, &s->plan->c[c], s->defaults, s->opt->headers,
                        sl->job) != 0 ||
       rc_response_set_limits(sl->resp, &lim) != RC_OK ||
       rc_response_observe(sl->resp, observe, &sl->rd,
                           s->engine.clusters[c].keep_body ? RC_KEEP_BODY : RC_KEEP_NONE) != RC_OK ||
       set_cookies(sl, &s->plan->c[c]) != CURLE_OK ||
       redirect_start(s, sl) != 0))
    cc = CURLE_OUT_OF_MEMORY;
  /* rc_multi_add: on curl 8.1 to 8.6 the budget may keep it back before
   * its request (rc_multi_poll adds it); it counts as running either way. */
  if (cc == CURLE_OK && rc_multi_add(sl->resp, s->multi) == CURLM_OK) {
    sl->state = SLOT_RUNNING;
    s->active++;
    return;
  }
  report(s, sl, cc != CURLE_OK ? cc : CURLE_FAILED_INIT, NOT_STARTED);
  slot_finish(s, sl);
}

/* Gives idle slots their next targets, then starts the slots whose time has
 * come, as far as --rate allows. */
static void start_ready(scan *s)
{
  if (s->src_done && !s->ready)
    return; /* nothing to start: the common case at the end of a scan */
  double now = seconds_since(&s->start);
  for (size_t i = 0; i < s->nslots && !caught && !s->out.write_error; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_IDLE && !s->src_done) {
      sl->url = s->tpl ? plan_next_job(s->plan, &s->src, &sl->rd.cluster, &sl->seq, &sl->target,
                                       sl->job)
                       : next_target(&s->src);
      if (sl->url) {
        sl->state = SLOT_READY;
        sl->attempts = 0;
        sl->due = now;
        s->ready++;
      } else {
        s->src_done = 1;
      }
    }
    if (sl->state != SLOT_READY || sl->due > now || s->next_start > now)
      continue;
    if (s->opt->rate > 0) /* evenly spaced: no bursts after a pause */
      s->next_start = (s->next_start > now ? s->next_start : now) + 1.0 / s->opt->rate;
    slot_start(s, sl);
  }
}

/* Milliseconds the loop may wait for curl: until the first READY slot's
 * time (its retry backoff, and the rate's next start); with none, until
 * the next progress update or 1 s. Transfers, curl's timers, the budget
 * and signals end the wait earlier on their own. Called right after
 * start_ready, so no idle slot has a target waiting for it. */
static int wait_ms(const scan *s)
{
  double now = seconds_since(&s->start);
  double wait = s->progress ? PROGRESS_INTERVAL : 1.0;
  if (s->opt->stats && stats_wait(s) < wait)
    wait = stats_wait(s);
  for (size_t i = 0; s->ready && i < s->nslots; i++) {
    const slot *sl = &s->slots[i];
    if (sl->state != SLOT_READY)
      continue;
    double at = sl->due > s->next_start ? sl->due : s->next_start;
    if (at - now < wait)
      wait = at - now;
  }
  return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
}

static void show_progress(scan *s, int force)
{
  if (!s->progress)
    return;
  double t = seconds_since(&s->start);
  if (!force && t - s->last_progress < PROGRESS_INTERVAL)
    return;
  s->last_progress = t;
  /* \r returns to the line's start, ESC[K clears what the last update left. */
  fprintf(stderr, "\rscan: %lu done, %zu running, %lu matched, %lu errors, %.0f req/s\033[K",
          s->done, s->active, s->matched, s->errors, t > 0 ? (double)s->done / t : 0.0);
  fflush(stderr);
}

/* Seconds to wait before another attempt, after attempts made so far:
 * RETRY_BACKOFF, doubled for each earlier retry, at most RETRY_BACKOFF_MAX. */
static double backoff(long attempts)
{
  double wait = RETRY_BACKOFF;
  for (long i = 1; i < attempts && wait < RETRY_BACKOFF_MAX; i++)
    wait *= 2;
  return wait < RETRY_BACKOFF_MAX ? wait : RETRY_BACKOFF_MAX;
}

/* -t: a sequence's request is over: the slot makes its next request at
 * once, if there is one (1), the response reset for it. */
static int next_step(scan *s, slot *sl)
{
  char *url = plan_next_step(s->plan, &sl->rd.cluster, sl->job);
  if (!url)
    return 0;
  rc_response_reset(sl->resp);
  free(sl->url);
  sl->url = url;
  sl->attempts = 0;
  sl->due = seconds_since(&s->start);
  sl->state = SLOT_READY;
  s->ready++;
  return 1;
}

/* A finished transfer: retried after a backoff when it may be, else
 * reported, and the slot freed for its next job: a sequence's next
 * request, or the next target's. */
static void finished(scan *s, slot *sl, CURLcode cc)
{
  cc = redirect_end(s, sl, cc);
  if (sl->attempts <= s->opt->retries && retryable(sl->resp, cc)) {
    sl->due = seconds_since(&s->start) + backoff(sl->attempts);
    sl->state = SLOT_READY;
    s->ready++;
    s->retried++;
    rc_response_reset(sl->resp);
    return;
  }
  report(s, sl, cc, ENDED);
  if (s->tpl && sl->job->in_seq && !caught && !s->out.write_error && next_step(s, sl))
    return;
  slot_finish(s, sl);
}

/* Reads every finished transfer. */
static void collect(scan *s)
{
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    /* msg is invalid once its handle is removed: read it first. */
    CURL *easy = msg->easy_handle;
    CURLcode cc = msg->data.result;
    char *priv;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    curl_multi_remove_handle(s->multi, easy);
    s->active--;
    finished(s, (slot *)(void *)priv, cc);
  }
}

/* After a signal: every transfer in flight, and every target waiting for a
 * retry, is reported as interrupted with what it received; nothing more
 * starts. After a failed write nothing can be reported: they just end. */
static void interrupt_all(scan *s)
{
  for (size_t i = 0; i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_RUNNING) {
      curl_multi_remove_handle(s->multi, sl->easy);
      s->active--;
    } else if (sl->state != SLOT_READY || sl->attempts == 0) {
      if (sl->state == SLOT_READY)
        slot_finish(s, sl); /* never started: not a result */
      continue;
    }
    if (!s->out.write_error)
      report(s, sl, CURLE_ABORTED_BY_CALLBACK, INTERRUPTED);
    slot_finish(s, sl);
  }
}

/* Runs the whole scan until every target is done, a signal or a failed
 * write stops it. Returns 0, or -1 when curl's multi interface fails. */
static int run(scan *s)
{
  struct curl_waitfd wake = {signal_pipe[0], CURL_WAIT_POLLIN, 0};
  while (!caught && !s->out.write_error) {
    /* Slots freed by the transfers that just finished take their next
     * targets now, before any wait. */
    start_ready(s);
    if (!s->active && !s->ready && s->src_done)
      break;
    /* Waits for curl's sockets and timers (a transfer just added is due
     * at once), the next slot's time, the budget (rc_multi_poll resumes
     * the transfers it paused once memory is released) or a signal. */
    CURLMcode mc = rc_multi_poll(s->pool, s->multi, &wake, 1, wait_ms(s), NULL);
    if (mc == CURLM_OK && s->active) {
      int running;
      mc = curl_multi_perform(s->multi, &running);
      if (mc == CURLM_OK)
        collect(s);
    }
    if (mc != CURLM_OK) {
      fprintf(stderr, "\nscan: curl multi: %s\n", curl_multi_strerror(mc));
      return -1;
    }
    show_progress(s, 0);
    stats_line(s, 0);
  }
  if (caught || s->out.write_error)
    interrupt_all(s);
  show_progress(s, 1);
  stats_line(s, 1);
  if (s->progress)
    fputc('\n', stderr);
  return 0;
}

/* The summary on stderr: throughput, memory, and what the pool did. */
static void summary(scan *s)
{
  double t = seconds_since(&s->start);
  fprintf(stderr,
          "scan: %lu requests in %.2f s, %.1f requests/s; %lu matched, %lu errors, "
          "%lu retries\n",
          s->done, t, t > 0 ? (double)s->done / t : 0.0, s->matched, s->errors, s->retried);
  if (caught)
    fprintf(stderr, "scan: stopped by %s: %lu transfers interrupted\n",
            caught == SIGINT ? "SIGINT" : "SIGTERM", s->interrupted);
  fprintf(stderr, "scan: received %.1f MiB of bodies (%.1f MiB on the wire)\n",
          (double)s->body_bytes / MiB, (double)s->wire_bytes / MiB);
  const engine *g = &s->engine;
  if (g->nstreamed || g->nwhole || g->keep_body) /* -t: md5(body) keeps bodies, alone */
    fprintf(stderr,
            "scan: body matchers: %zu streamed (%s), %zu over the kept body (PCRE2); bodies %s\n",
            g->nstreamed, engine_name(), g->nwhole, g->keep_body ? "kept" : "not kept");
  size_t cached, compiled;
  vs_compiles(g, &cached, &compiled);
  if (cached || compiled)
    fprintf(stderr, "scan: databases: %zu from the cache, %zu compiled\n", cached, compiled);
  size_t filtered = 0;
  for (size_t i = 0; g->ex_filtered && i < s->m->nextracts; i++)
    filtered += g->ex_filtered[i];
  if (s->m->nextracts)
    fprintf(stderr,
            "scan: extractors: %zu on the stream (PCRE2), %zu of them prefiltered (%s); "
            "%lu targets with extracts_incomplete\n",
            s->m->nextracts, filtered, engine_name(), s->incomplete);
  if (s->tpl)
    out_summary(s->tpl, s->plan, s->done, s->out.matches);
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) /* ru_maxrss: KiB on Linux */
    fprintf(stderr, "scan: peak RSS %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  rc_pool_stats st;
  rc_pool_stats_get(s->pool, &st);
  fprintf(stderr,
          "scan: pool: %llu acquisitions (%llu reuses, %llu fresh), %llu discards, "
          "peak in use %.1f MiB, %llu pauses, %llu spills",
          (unsigned long long)st.acquisitions, (unsigned long long)st.reuses,
          (unsigned long long)st.fresh, (unsigned long long)st.discards,
          (double)st.peak_in_use / MiB, (unsigned long long)st.pauses,
          (unsigned long long)st.spills);
  if (s->opt->budget)
    fprintf(stderr, " (budget %.1f MiB)", (double)s->opt->budget / MiB);
  fputc('\n', stderr);
}

/* ---- Setup -------------------------------------------------------------- */

/* Opens the targets' stream and the output. */
static int open_files(scan *s)
{
  const options *o = s->opt;
  s->src.urls = o->urls;
  s->src.count = o->nurls;
  if (o->list && strcmp(o->list, "-") != 0) {
    if (!(s->src.in = fopen(o->list, "r"))) {
      fprintf(stderr, "scan: %s: %s\n", o->list, strerror(errno));
      return -1;
    }
  } else if (o->list || !o->nurls) {
    s->src.in = stdin;
  }
  s->out.fd = STDOUT_FILENO;
  if (o->output &&
      (s->out.fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
    fprintf(stderr, "scan: %s: %s\n", o->output, strerror(errno));
    return -1;
  }
  if (o->json_export && out_export_open(&s->out, o->json_export) != 0) {
    fprintf(stderr, "scan: %s: %s\n", o->json_export, strerror(errno));
    return -1;
  }
  return 0;
}

/* The pool and the slots. The pool is one for the whole scan; the budget
 * bounds what all responses hold at once. */
static int setup_slots(scan *s)
{
  const options *o = s->opt;
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = o->budget;
  cfg.overflow = o->overflow;
  if (rc_pool_new(&cfg, &s->pool) != RC_OK) {
    fputs("scan: cannot create the pool\n", stderr);
    return -1;
  }
  rc_limits lim;
  response_limits(s, NULL, &lim);
  if (s->tpl) { /* what a request's own settings are undone to (plan_raw_set) */
    s->plan->timeout_ms = o->timeout_ms;
    s->plan->forbid_reuse = h2c_unreusable(o);
  }

  s->nslots = (size_t)o->concurrency;
  s->slots = calloc(s->nslots, sizeof *s->slots);
  s->multi = curl_multi_init();
  if (s->multi && h2c_unreusable(o)) /* no multiplexing on one either */
    curl_multi_setopt(s->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
  s->src.shard = o->shard;
  s->src.shards = o->shards;
  if (!s->slots || !s->multi || (s->tpl && eval_clusters(&s->engine, s->m, s->tpl, s->plan) != 0) ||
      engine_build(&s->engine, s->m) != 0) {
    fputs("scan: out of memory\n", stderr);
    return -1;
  }
  /* -t: each cluster keeps bodies or not (slot_start), as its own
   * templates need; the summary says whether any does. */
  int keep = s->tpl ? eval_plan(&s->engine, s->tpl, s->plan) : s->engine.keep_body;
  if (keep < 0) {
    fputs("scan: out of memory\n", stderr);
    return -1;
  }
  s->engine.keep_body = s->tpl ? 0 : keep;
  if (s->tpl && default_headers(s) != 0) {
    fputs("scan: out of memory\n", stderr);
    return -1;
  }
  for (size_t i = 0; i < s->nslots; i++) {
    if (slot_init(s, &s->slots[i], &lim) != 0) {
      fputs("scan: cannot set up a transfer (out of memory?)\n", stderr);
      return -1;
    }
  }
  s->engine.keep_body = keep;
  return 0;
}

void scan_teardown(scan *s)
{
  /* Easy handles leave the multi handle before either is cleaned up. */
  for (size_t i = 0; s->slots && i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_RUNNING)
      curl_multi_remove_handle(s->multi, sl->easy);
    free(sl->url);
    free(sl->target);
    free(sl->origin);
    rc_response_free(sl->resp); /* the response first, then its handle */
    if (sl->easy)
      curl_easy_cleanup(sl->easy);
    if (sl->job) /* after the easy handle, which points to them */
      plan_job_free(sl->job);
    free(sl->job);
    reading_free(&sl->rd);
  }
  free(s->slots);
  curl_slist_free_all(s->defaults);
  engine_free(&s->engine);
  out_free(&s->out);
  if (s->multi)
    curl_multi_cleanup(s->multi);
  rc_pool_free(s->pool);
  if (s->src.in && s->src.in != stdin)
    fclose(s->src.in);
  free(s->src.line);
}

int scan_all(scan *s)
{
  clock_gettime(CLOCK_MONOTONIC, &s->start);
  s->next_stats = (double)s->opt->stats_interval_ms / 1000.0;
  if (run(s) != 0)
    return EXIT_SETUP;
  (void)out_export_close(&s->out); /* a failure is a write_error */
  if (s->out.write_error == EPIPE)
    return EXIT_BROKEN_PIPE; /* quietly: whoever wanted the output is gone */
  int status = caught ? 128 + caught : EXIT_RAN;
  if (s->src.in && ferror(s->src.in)) {
    fputs("scan: reading targets failed\n", stderr);
    status = EXIT_SETUP;
  }
  if (s->out.write_error) {
    fprintf(stderr, "scan: writing results failed: %s\n", strerror(s->out.write_error));
    status = EXIT_SETUP;
  }
  if (!s->opt->silent)
    summary(s);
  return status;
}

int scan_setup(scan *s)
{
  if (catch_signals() != 0) {
    fprintf(stderr, "scan: cannot catch signals: %s\n", strerror(errno));
    return -1;
  }
  return open_files(s) == 0 && setup_slots(s) == 0 ? 0 : -1;
}
