/* threads: blocking transfers in several threads that share one pool.
 *
 *   threads [-t N] [--budget SIZE] [-l FILE | --demo]
 *
 * Each thread has its own easy handle and its own response (neither may be
 * shared between threads while in use) and runs curl_easy_perform on URLs
 * taken from a shared list: from FILE or stdin, one per line (blank lines and
 * # comments skipped), or with --demo a built-in workload against a loopback
 * server started in this process. The pool is the one thing shared: its idle
 * buffers serve every thread, and --budget bounds what all responses hold at
 * once. A transfer that would pass the budget blocks in its write callback
 * until memory is released, for up to 30 s (rc_response_set_budget_wait).
 *
 * Prints what each thread did, then the pool's statistics, to stdout.
 * Exit status: 0 done; 1 usage; 2 setup failure. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "respchain.h"
#include "server.h"

#define BUDGET_WAIT_MS 30000L
#define MiB (1024.0 * 1024.0)

/* The URLs, shared by the threads: each takes the next under the lock. */
typedef struct work {
  char **urls;
  size_t count, next;
  pthread_mutex_t lock;
} work;

/* One thread's handles and counts. */
typedef struct worker {
  pthread_t thread;
  work *work;
  rc_pool *pool;
  long budget_wait_ms;  /* 0: no budget */
  unsigned long fetched, complete, truncated, failed;
  uint64_t body_bytes;
} worker;

static const char *next_url(work *w)
{
  pthread_mutex_lock(&w->lock);
  const char *url = w->next < w->count ? w->urls[w->next++] : NULL;
  pthread_mutex_unlock(&w->lock);
  return url;
}

static void *worker_main(void *arg)
{
  worker *me = arg;
  rc_response *resp;
  CURL *easy = curl_easy_init();
  if (!easy || rc_response_new(me->pool, NULL, &resp) != RC_OK) {
    curl_easy_cleanup(easy);
    return NULL;
  }
  /* Under a budget, block instead of pausing: a paused transfer would need
   * a multi loop to resume it, and curl_easy_perform has none. */
  if (me->budget_wait_ms)
    rc_response_set_budget_wait(resp, me->budget_wait_ms);
  rc_attach(resp, easy);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  /* required with threads */

  const char *url;
  while ((url = next_url(me->work)) != NULL) {
    curl_easy_setopt(easy, CURLOPT_URL, url);
    rc_code rc = rc_result(resp, curl_easy_perform(easy));
    me->fetched++;
    me->complete += rc == RC_OK;
    me->truncated += rc == RC_TRUNCATED;
    me->failed += rc != RC_OK && rc != RC_TRUNCATED;
    me->body_bytes += rc_body(resp).len;
    /* ... use the response here ... then give its memory back at once: what
     * it holds counts against the budget that the other threads wait on. */
    rc_response_reset(resp);
  }
  rc_response_free(resp);
  curl_easy_cleanup(easy);
  return NULL;
}

/* Reads the URLs of in into w. */
static int read_urls(FILE *in, work *w)
{
  char *line = NULL;
  size_t cap = 0, room = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, in)) >= 0) {
    char *s = line + strspn(line, " \t\r\n"), *end = line + n;
    while (end > s && strchr(" \t\r\n", end[-1]))
      end--;
    if (s == end || *s == '#')
      continue;
    *end = '\0';
    if (w->count == room) {
      room = room ? 2 * room : 64;
      char **grown = realloc(w->urls, room * sizeof *grown);
      if (!grown)
        break;
      w->urls = grown;
    }
    if (!(w->urls[w->count] = strdup(s)))
      break;
    w->count++;
  }
  free(line);
  return ferror(in) || n >= 0 ? -1 : 0;
}

/* The demo's URLs: small and large bodies, gzip, a redirect chain. */
static int demo_urls(const ts_server *srv, work *w)
{
  enum { COUNT = 240 };
  if (!(w->urls = calloc(COUNT, sizeof *w->urls)))
    return -1;
  for (size_t i = 0; i < COUNT; i++) {
    char path[96], url[160];
    if (i % 12 == 0)
      snprintf(path, sizeof path, "/bytes?n=%zuM", i / 12 % 6 + 1);
    else if (i % 6 == 3)
      snprintf(path, sizeof path, "/gzip?n=%zuk&coding=gzip", (size_t)32 << (i / 6 % 4));
    else if (i % 10 == 7)
      snprintf(path, sizeof path, "/redirect?n=2");
    else
      snprintf(path, sizeof path, "/bytes?n=%zu", 1024 + i * 7919 % 64 * 1024);
    if (!(w->urls[i] = strdup(ts_url(srv, path, url, sizeof url))))
      return -1;
    w->count++;
  }
  return 0;
}

static int parse_size(const char *s, size_t *out)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (end == s || *s == '-' || *end || errno || v > SIZE_MAX / mul)
    return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static int usage(void)
{
  fputs("usage: threads [-t N] [--budget SIZE] [-l FILE | --demo]\n", stderr);
  return 1;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"threads", required_argument, NULL, 't'},
      {"list", required_argument, NULL, 'l'},
      {"budget", required_argument, NULL, 'b'},
      {"demo", no_argument, NULL, 'd'},
      {NULL, 0, NULL, 0},
  };
  long nthreads = 4;
  size_t budget = 0;
  const char *list = NULL;
  int demo = 0, opt;
  while ((opt = getopt_long(argc, argv, "t:l:", longopts, NULL)) != -1) {
    char *end;
    switch (opt) {
    case 't':
      nthreads = strtol(optarg, &end, 10);
      if (*end || nthreads < 1 || nthreads > 1024)
        return usage();
      break;
    case 'l': list = optarg; break;
    case 'b': if (parse_size(optarg, &budget)) return usage(); break;
    case 'd': demo = 1; break;
    default: return usage();
    }
  }
  if (optind != argc || (demo && list))
    return usage();

  /* Before any thread starts: curl's global state is not thread-safe. */
  curl_global_init(CURL_GLOBAL_DEFAULT);
  work w = {NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER};
  ts_server *srv = NULL;
  int status = 2, got;
  if (demo) {
    got = (srv = ts_start()) != NULL ? demo_urls(srv, &w) : -1;
  } else {
    FILE *in = list ? fopen(list, "r") : stdin;
    got = in ? read_urls(in, &w) : -1;
    if (in && in != stdin)
      fclose(in);
  }
  if (got != 0) {
    fprintf(stderr, "threads: cannot get the URLs%s%s\n", list ? ": " : "",
            list ? strerror(errno) : "");
    goto out;
  }

  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = budget;
  rc_pool *pool;
  if (rc_pool_new(&cfg, &pool) != RC_OK)
    goto out;

  worker *workers = calloc((size_t)nthreads, sizeof *workers);
  long started = 0;
  for (; workers && started < nthreads; started++) {
    worker *k = &workers[started];
    k->work = &w;
    k->pool = pool;
    k->budget_wait_ms = budget ? BUDGET_WAIT_MS : 0;
    if (pthread_create(&k->thread, NULL, worker_main, k) != 0)
      break;
  }
  unsigned long total = 0;
  for (long i = 0; i < started; i++) {
    worker *k = &workers[i];
    pthread_join(k->thread, NULL);
    printf("thread %ld: %lu fetched, %lu complete, %lu truncated, %lu failed, %.1f MiB\n",
           i, k->fetched, k->complete, k->truncated, k->failed,
           (double)k->body_bytes / MiB);
    total += k->fetched;
  }

  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  printf("%lu of %zu URLs fetched by %ld threads\n", total, w.count, started);
  printf("pool: %llu acquisitions (%llu reuses, %llu fresh), %llu discards, "
         "peak in use %.1f MiB, %llu waits for the budget\n",
         (unsigned long long)st.acquisitions, (unsigned long long)st.reuses,
         (unsigned long long)st.fresh, (unsigned long long)st.discards,
         (double)st.peak_in_use / MiB, (unsigned long long)st.pauses);
  status = workers && started == nthreads ? 0 : 2;
  free(workers);
  rc_pool_free(pool);

out:
  for (size_t i = 0; i < w.count; i++)
    free(w.urls[i]);
  free(w.urls);
  ts_stop(srv);
  curl_global_cleanup();
  return status;
}
