/* threads: blocking transfers in several threads that share one pool.
 *
 *   threads [-t N] [--budget SIZE] [-l FILE]
 *
 * Each thread has its own easy handle and its own response (neither may be
 * shared between threads while in use) and runs curl_easy_perform on URLs
 * taken from a shared list: from FILE ("-" or no -l: stdin), one per line
 * (blank lines and # comments skipped). The pool is the one thing shared:
 * its idle buffers serve every thread, and --budget bounds what all
 * responses hold at once. A transfer that would pass the budget blocks in
 * its write callback until memory is released, for up to 30 s
 * (rc_response_set_budget_wait). "demo threads" (examples/demo.c) runs it
 * against a loopback server.
 *
 * Prints what each thread did, then the pool's statistics, to stdout.
 * Exit status: 0 done; 1 setup failure (the list, memory, a thread);
 * 2 usage.
 *
 * Builds alone: cc threads.c $(pkg-config --cflags --libs respchain) */
/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "respchain.h"

#define BUDGET_WAIT_MS 30000L
#define MiB            (1024.0 * 1024.0)

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
  long budget_wait_ms; /* 0: no budget */
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
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L); /* required with threads */

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

static void usage(FILE *out)
{
  fputs("usage: threads [-t N] [--budget SIZE] [-l FILE]\n"
        "\n"
        "Fetches the URLs of FILE (one per line; \"-\" or no -l: stdin) with N\n"
        "threads on curl_easy_perform, sharing one respchain pool.\n"
        "\n"
        "  -t, --threads N     threads (default 4, at most 1024)\n"
        "      --budget SIZE   memory budget of the shared pool (suffixes k, m,\n"
        "                      g; default off): a transfer past it blocks\n"
        "  -l, --list FILE     the URLs\n"
        "  -h, --help          this text\n"
        "  -V, --version       the version of threads and of the libraries\n"
        "\n"
        "Exit status: 0 done; 1 setup failure (the list, memory, a thread);\n"
        "2 usage.\n",
        out);
}

/* The one-line hint for a bad command line; returns 2. */
static int bad_usage(const char *what, const char *arg)
{
  fprintf(stderr, "threads: %s '%s'; try 'threads --help'\n", what, arg);
  return 2;
}

/* Fills the settings from the command line. Returns -1 to go on, else the
 * exit status (after --help, --version or a usage error). */
static int parse_options(int argc, char **argv, long *nthreads, size_t *budget, const char **list)
{
  static const struct option longopts[] = {
      {"threads", required_argument, NULL, 't'}, {"list", required_argument, NULL, 'l'},
      {"budget", required_argument, NULL, 'b'},  {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},       {NULL, 0, NULL, 0},
  };
  opterr = 0; /* bad options get our one-line hint instead */
  int opt;
  while ((opt = getopt_long(argc, argv, ":t:l:hV", longopts, NULL)) != -1) {
    switch (opt) {
    case 't':
      if (args_long(optarg, 1, 1024, nthreads))
        return bad_usage("invalid thread count", optarg);
      break;
    case 'l': *list = strcmp(optarg, "-") ? optarg : NULL; break;
    case 'b':
      if (args_size(optarg, budget))
        return bad_usage("invalid size", optarg);
      break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("threads (respchain) %s\n%s\n", rc_version(), curl_version()); return 0;
    default: {
      char shortopt[3] = {'-', (char)optopt, '\0'};
      return bad_usage(opt == ':' ? "missing value for" : "unknown option",
                       optopt > ' ' && optopt < 127 ? shortopt : argv[optind - 1]);
    }
    }
  }
  if (optind != argc)
    return bad_usage("unexpected argument", argv[optind]);
  return -1;
}

int main(int argc, char **argv)
{
  long nthreads = 4;
  size_t budget = 0;
  const char *list = NULL;
  int parsed = parse_options(argc, argv, &nthreads, &budget, &list);
  if (parsed >= 0)
    return parsed;

  /* Before any thread starts: curl's global state is not thread-safe. */
  curl_global_init(CURL_GLOBAL_DEFAULT);
  work w = {NULL, 0, 0, PTHREAD_MUTEX_INITIALIZER};
  int status = 1;
  FILE *in = list ? fopen(list, "r") : stdin;
  int got = in ? read_urls(in, &w) : -1;
  if (in && in != stdin)
    fclose(in);
  if (got != 0) {
    fprintf(stderr, "threads: cannot read the URLs%s%s\n", list ? ": " : "",
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
    printf("thread %ld: %lu fetched, %lu complete, %lu truncated, %lu failed, %.1f MiB\n", i,
           k->fetched, k->complete, k->truncated, k->failed, (double)k->body_bytes / MiB);
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
  status = workers && started == nthreads ? 0 : 1;
  free(workers);
  rc_pool_free(pool);

out:
  for (size_t i = 0; i < w.count; i++)
    free(w.urls[i]);
  free(w.urls);
  curl_global_cleanup();
  return status;
}
