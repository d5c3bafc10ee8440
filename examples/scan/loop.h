/* scan's transfer loop: respchain and curl. One pool for the scan, one
 * slot per unit of concurrency, each an easy handle and a response made
 * once; the multi loop that starts each slot's next job as soon as it is
 * free, evaluates every response as it arrives (eval.h) and reports it at
 * once (out.h). loop-run.c is the whole of it but for redirects
 * (loop-redirect.c). */
#ifndef SCAN_LOOP_H
#define SCAN_LOOP_H

#include "out.h"

#include <signal.h>

#define DEFAULT_CONCURRENCY        50
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS         30000L

#define REDIRECTS_NONE (-1)

enum { EXIT_RAN = 0, EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_BROKEN_PIPE = 128 + SIGPIPE };

/* What the command line says a scan does (main-opts.c fills it). */
typedef struct options {
  const char **urls; /* -u, in order; room for argc */
  size_t nurls;
  const char *list;            /* -l FILE; "-" or NULL without -u: stdin */
  const char *output;          /* -o FILE; NULL: stdout */
  unsigned long shard, shards; /* --shard K/N: targets K-1, K-1+N, ...; 1/1: all */
  long concurrency;
  size_t max_body, max_memory; /* max_memory 0: no limit */
  long max_redirs;
  long connect_timeout_ms, timeout_ms; /* 0: none */
  size_t budget;                       /* 0: off */
  rc_overflow overflow;
  /* The request. */
  struct curl_slist *headers; /* -H, in order */
  const char *method;         /* the method sent (GET, POST with -d, or -X) */
  const char *data, *proxy, *user_agent;
  long http_version; /* CURL_HTTP_VERSION_*; NONE: curl's */
  int insecure;
  double rate; /* requests per second; 0: no limit */
  long retries;
  /* Output. */
  int matched_only, silent;
  /* Matchers: --word and --regex may repeat (the arrays have room for
   * argc). */
  matchers m;
  /* Templates. */
  const char **templates; /* -t, in order; room for argc */
  size_t ntemplates;
  int validate; /* --validate: load them, report, exit */
  const char **vars; /* --var NAME=VALUE, in order; room for argc */
  size_t nvars;
  int verbose;  /* -v: --validate says what each template keeps of the body */
  tpl_attack attack; /* --attack-type: every request's (0: their own) */
  tpl_filter filter; /* -tags, -severity, ...: which templates load */
  /* nuclei's run controls: -bs (0: not given; then concurrency is -c x
   * -bs), -stats every stats_interval_ms, -je's file. */
  long bulk_size;
  long payload_concurrency; /* -pc: a payload block's combinations at once */
  int stats;
  long stats_interval_ms;
  const char *json_export;
  /* nuclei's -fr (TPL_REDIRECTS_ALL), -fhr (TPL_REDIRECTS_HOST), -dr
   * (REDIRECTS_NONE) for every template request; 0: the templates'. */
  int redirects;
  char **spelled; /* per argument: a long option written with one dash,
                   * rewritten with two (NULL: none) */
  size_t nspelled;
} options;

typedef enum slot_state {
  SLOT_IDLE,   /* no target */
  SLOT_READY,  /* a target, waiting for its time (rate, retry backoff) */
  SLOT_RUNNING /* its transfer is in the multi handle */
} slot_state;

/* One unit of concurrency: a transfer at a time. */
typedef struct slot {
  CURL *easy;
  rc_response *resp;
  slot_state state;
  char *url;                    /* the target as given; NULL when idle */
  long attempts;                /* transfers made for this target */
  double due;                   /* READY: seconds since the scan's start */
  struct timespec started;      /* when the transfer was handed to curl */
  char errbuf[CURL_ERROR_SIZE]; /* curl's detailed message for a failure */
  reading rd;                   /* the response, as the evaluation reads it */
  /* -t: the target (url is the request's URL for it), its number, and
   * the request (rd.cluster: the cluster of templates whose it is). */
  char *target;
  unsigned long seq;
  plan_job *job; /* the request's headers and body; NULL: none */
  int cookies;   /* curl's cookie engine is on (set_cookies) */
  /* host-redirects: the host its redirects stay on (loop-redirect.c);
   * NULL: any. left_host: a redirect that left it ended the chain. */
  char *origin;
  int left_host;
} slot;

typedef struct scan {
  const options *opt;
  const matchers *m;    /* the scan's matchers: opt's, or the templates' */
  const templates *tpl; /* -t; NULL: the matchers of the command line */
  plan *plan;           /* -t: the requests */
  struct curl_slist *defaults; /* -t: the User-Agent and Accept-Encoding lines (default_headers) */
  output out;
  engine engine;
  rc_pool *pool;
  CURLM *multi;
  slot *slots;
  size_t nslots;
  targets src;
  int src_done;      /* next_target returned NULL */
  size_t active;     /* slots RUNNING: transfers in the multi handle */
  size_t ready;      /* slots READY */
  double next_start; /* --rate: earliest next request */
  unsigned long done, matched, errors, retried, interrupted;
  unsigned long incomplete; /* targets with an extractor that may have missed a value */
  uint64_t body_bytes, wire_bytes;
  struct timespec start;
  double last_progress;
  int progress; /* stderr is a terminal, not --silent, no --stats */
  double next_stats; /* --stats: when the next line is due */
} scan;

/* Sets s up for its options, matchers and (with -t) templates and plan,
 * as main fills them in: the signals, the files, the pool and the slots.
 * Returns 0, or -1 with a message. */
int scan_setup(scan *s);
/* Redirects as nuclei follows them (loop-redirect.c): redirect_init sets
 * the slot's handle up once, redirect_start before each of its transfers
 * (0, or -1 when out of memory); redirect_end gives the outcome of a
 * transfer that ended as a chain of redirects ends (stopped where it
 * would leave the host, past max-redirects) as CURLE_OK. */
int redirect_init(slot *sl);
int redirect_start(scan *s, slot *sl);
CURLcode redirect_end(const scan *s, const slot *sl, CURLcode cc);

/* Runs the scan once set up; returns the exit status. */
int scan_all(scan *s);
/* Everything scan_setup made. */
void scan_teardown(scan *s);

/* --stats (loop-stats.c): nuclei's line on stderr when it is due, or
 * the last one (final); and the seconds until the next is due. */
void stats_line(scan *s, int final);
double stats_wait(const scan *s);

#endif
