/*
 * uvscan: many transfers on a libuv event loop, driven through
 * curl_multi_socket_action, under respchain's memory budget.
 *
 *   uvscan [--budget SIZE] [--max-memory SIZE] [--parallel N] [--repeat N]
 *          [--cacert FILE] URL...
 *
 * Fetches every URL (each --repeat times), --parallel at a time, and prints
 * one line per transfer: "STATUS BYTES HTTP-VERSION WHERE URL" (WHERE is
 * "mem" or "file", for a body that spilled), then a summary on stderr. Exit
 * status 0 when every transfer completed, 1 when one did not, 2 for bad
 * arguments.
 *
 * The three things an event loop needs for the budget are marked BUDGET
 * below: a wake callback that posts to the loop (uv_async_send is safe from
 * any thread), rc_pool_resume after every socket action, and a timer for
 * rc_pool_timeout (a waiting transfer's wait bound).
 *
 * Build alone: cc uvscan.c $(pkg-config --cflags --libs respchain libuv)
 */
#include <respchain.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "args.h"

typedef struct scan {
  uv_loop_t *loop;
  CURLM *multi;
  rc_pool *pool;
  rc_limits lim;
  uv_timer_t curl_timer;   /* curl's own timeouts */
  uv_timer_t budget_timer; /* BUDGET: the wait bound of waiting transfers */
  uv_async_t wake;         /* BUDGET: memory was released for a waiter */
  const char *cacert;
  char **urls;
  int nurls, repeat, parallel;
  int next, done, failed, spilled;
  int closing; /* every transfer is done: the loop winds down */
} scan;

/* One socket curl asked us to watch. */
typedef struct watch {
  uv_poll_t poll;
  curl_socket_t fd;
  scan *s;
} watch;

static void after_action(scan *s);

/* ---- Starting transfers. */

static int start_next(scan *s)
{
  if (s->next >= s->nurls * s->repeat)
    return 0;
  const char *url = s->urls[s->next++ % s->nurls];
  rc_response *resp;
  if (rc_response_new(s->pool, &s->lim, &resp) != RC_OK)
    return -1;
  CURL *easy = curl_easy_init();
  if (!easy || rc_attach(resp, easy) != RC_OK) {
    rc_response_free(resp); /* the response first, then its handle */
    curl_easy_cleanup(easy);
    return -1;
  }
  curl_easy_setopt(easy, CURLOPT_URL, url);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, resp);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L); /* share HTTP/2 connections */
  if (s->cacert)
    curl_easy_setopt(easy, CURLOPT_CAINFO, s->cacert);
  /* On curl 8.1 to 8.6 the budget may keep it back before its request;
   * rc_pool_resume, after every action, adds it. */
  if (rc_multi_add(resp, s->multi) != CURLM_OK) {
    rc_response_free(resp);
    curl_easy_cleanup(easy);
    return -1;
  }
  return 1;
}

static void finish(scan *s, CURL *easy, CURLcode cc)
{
  rc_response *resp;
  char *url = NULL;
  curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&resp);
  curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &url);
  rc_code rc = rc_result(resp, cc);
  rc_hop_info hop = {0};
  rc_hop(resp, -1, &hop);
  int spilled = rc_body_spilled(resp);
  printf("%d %zu %d.%d %s %s\n", rc_status(resp), rc_body(resp).len, hop.version / 10,
         hop.version % 10, spilled ? "file" : "mem", url ? url : "?");
  if (rc != RC_OK) {
    fprintf(stderr, "uvscan: %s: %s\n", url ? url : "?", rc_result_text(rc, cc));
    s->failed++;
  }
  s->spilled += spilled;
  s->done++;
  curl_multi_remove_handle(s->multi, easy);
  rc_response_free(resp); /* its memory goes back: waiters may resume */
  curl_easy_cleanup(easy); /* after its response, as respchain-multi(3) teaches */
}

static void read_results(scan *s)
{
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(s->multi, &left)))
    if (m->msg == CURLMSG_DONE) {
      finish(s, m->easy_handle, m->data.result);
      if (start_next(s) < 0)
        s->failed++;
    }
}

/* ---- curl's sockets and timer on the loop. */

static void on_poll(uv_poll_t *p, int status, int events)
{
  watch *w = p->data;
  int flags = status < 0 ? CURL_CSELECT_ERR
                         : ((events & UV_READABLE) ? CURL_CSELECT_IN : 0) |
                               ((events & UV_WRITABLE) ? CURL_CSELECT_OUT : 0);
  int running;
  curl_multi_socket_action(w->s->multi, w->fd, flags, &running);
  after_action(w->s);
}

static void free_watch(uv_handle_t *h) { free(h->data); }

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
  (void)easy;
  scan *s = ud;
  watch *w = sockp;
  if (what == CURL_POLL_REMOVE) {
    if (w) {
      uv_poll_stop(&w->poll);
      uv_close((uv_handle_t *)&w->poll, free_watch);
      curl_multi_assign(s->multi, fd, NULL);
    }
    return 0;
  }
  if (!w) {
    if (!(w = calloc(1, sizeof *w)))
      return -1;
    w->fd = fd;
    w->s = s;
    uv_poll_init_socket(s->loop, &w->poll, fd);
    w->poll.data = w;
    curl_multi_assign(s->multi, fd, w);
  }
  int events =
      ((what & CURL_POLL_IN) ? UV_READABLE : 0) | ((what & CURL_POLL_OUT) ? UV_WRITABLE : 0);
  uv_poll_start(&w->poll, events, on_poll);
  return 0;
}

static void on_curl_timer(uv_timer_t *t)
{
  scan *s = t->data;
  int running;
  curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  after_action(s);
}

static int on_timer(CURLM *multi, long timeout_ms, void *ud)
{
  (void)multi;
  scan *s = ud;
  if (timeout_ms < 0)
    uv_timer_stop(&s->curl_timer);
  else
    uv_timer_start(&s->curl_timer, on_curl_timer, (uint64_t)timeout_ms, 0);
  return 0;
}

/* ---- BUDGET: resuming transfers that waited for memory. */

/* Any thread, with a lock of the pool held: only post to the loop. */
static void on_wake(void *ud) { uv_async_send(ud); }

static void on_budget_timer(uv_timer_t *t) { after_action(t->data); }
static void on_async(uv_async_t *a) { after_action(a->data); }

/* After every socket action (and a wake-up, and the budget timer): results,
 * then the transfers the budget lets go on, then the next wait bound. */
static void after_action(scan *s)
{
  read_results(s);
  if (rc_pool_resume(s->pool) > 0)
    read_results(s); /* resuming runs callbacks, which may finish one */
  long due = rc_pool_timeout(s->pool);
  if (due >= 0)
    uv_timer_start(&s->budget_timer, on_budget_timer, (uint64_t)due, 0);
  else
    uv_timer_stop(&s->budget_timer);
  if (s->done == s->nurls * s->repeat && !s->closing) {
    s->closing = 1;
    uv_close((uv_handle_t *)&s->wake, NULL); /* the loop may end now */
    uv_timer_stop(&s->curl_timer);
    uv_timer_stop(&s->budget_timer);
  }
}

/* ---- Arguments and main. */

static int usage(void)
{
  fputs("usage: uvscan [--budget SIZE] [--max-memory SIZE] [--parallel N] [--repeat N]\n"
        "              [--cacert FILE] URL...\n",
        stderr);
  return 2;
}

int main(int argc, char **argv)
{
  scan s;
  memset(&s, 0, sizeof s);
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  rc_limits_init(&s.lim);
  s.parallel = 20;
  s.repeat = 1;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i += 2) { /* an option and its value */
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!val)
      return usage();
    long n;
    if (!strcmp(opt, "--budget") && !args_size(val, &cfg.budget)) {
    } else if (!strcmp(opt, "--max-memory") && !args_size(val, &s.lim.max_memory)) {
    } else if (!strcmp(opt, "--parallel") && !args_long(val, 1, 100000, &n)) {
      s.parallel = (int)n;
    } else if (!strcmp(opt, "--repeat") && !args_long(val, 1, 1000000, &n)) {
      s.repeat = (int)n;
    } else if (!strcmp(opt, "--cacert")) {
      s.cacert = val;
    } else {
      return usage();
    }
  }
  if (i == argc)
    return usage();
  s.urls = argv + i;
  s.nurls = argc - i;

  curl_global_init(CURL_GLOBAL_DEFAULT);
  s.loop = uv_default_loop();
  if (rc_pool_new(&cfg, &s.pool) != RC_OK || !(s.multi = curl_multi_init())) {
    fputs("uvscan: out of memory\n", stderr);
    return 1;
  }
  curl_multi_setopt(s.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(s.multi, CURLMOPT_SOCKETDATA, &s);
  curl_multi_setopt(s.multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(s.multi, CURLMOPT_TIMERDATA, &s);
  uv_timer_init(s.loop, &s.curl_timer);
  uv_timer_init(s.loop, &s.budget_timer);
  uv_async_init(s.loop, &s.wake, on_async);
  s.curl_timer.data = s.budget_timer.data = s.wake.data = &s;
  rc_pool_on_wake(s.pool, on_wake, &s.wake); /* BUDGET: on the loop's thread */

  for (int k = 0; k < s.parallel; k++)
    if (start_next(&s) < 0)
      s.failed++;
  uv_run(s.loop, UV_RUN_DEFAULT);

  rc_pool_stats st;
  rc_pool_stats_get(s.pool, &st);
  fprintf(stderr,
          "uvscan: %d done, %d failed, %d spilled; pool peak %zu bytes, "
          "%llu pauses, %llu wake-ups\n",
          s.done, s.failed, s.spilled, st.peak_in_use, (unsigned long long)st.pauses,
          (unsigned long long)st.wakeups);
  rc_pool_on_wake(s.pool, NULL, NULL);
  curl_multi_cleanup(s.multi); /* may close sockets: their handles close */
  uv_close((uv_handle_t *)&s.curl_timer, NULL);
  uv_close((uv_handle_t *)&s.budget_timer, NULL);
  uv_run(s.loop, UV_RUN_DEFAULT);
  uv_loop_close(s.loop);
  rc_pool_free(s.pool);
  curl_global_cleanup();
  return s.failed || s.done != s.nurls * s.repeat ? 1 : 0;
}
