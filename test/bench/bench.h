/*
 * The benchmark's shared types and entry points, one section per file:
 * measure.c (clocks, copy and allocation accounting, the RSS sampler),
 * scenarios.c (what is requested), contenders.c (how bodies are kept),
 * driver.c (the curl multi loop and one measured run), report.c (tables,
 * CSV, targets), chart.c (the burst chart), child.c (the scan program run
 * as a child process), match.c (matcher throughput, no transfers), main.c
 * (options, the order of runs). main.c says what is measured and how.
 */
#ifndef BENCH_H
#define BENCH_H

#define _GNU_SOURCE /* RUSAGE_THREAD, malloc_usable_size, malloc_trim */
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "respchain.h"
#include "server.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0
#endif

/* ---- measure.c ----------------------------------------------------------- */

double mib(double bytes);
double now_s(void);
long faults(int who);  /* minor page faults so far */
double cpu_s(int who); /* user + system seconds */

/* memcpy bytes and calls made by statically linked code on this thread. */
extern _Thread_local uint64_t t_copy_bytes, t_copy_calls;

typedef struct counters {
  uint64_t alloc_bytes; /* malloc sizes + realloc growth */
  uint64_t alloc_calls; /* malloc and realloc calls */
  uint64_t moved_bytes; /* bytes realloc copied moving a heap block */
  uint64_t remaps;      /* realloc moves of mmapped blocks (no copy) */
} counters;

extern counters g_cnt;
void *cnt_malloc(size_t n);
void *cnt_realloc(void *p, size_t n);
extern const rc_allocator counting_allocator;

typedef struct sample {
  float t;   /* seconds since the run's baseline */
  float mib; /* resident MiB above the baseline */
} sample;

/* Resident memory now, and the part of it that is anonymous (not file
 * pages: a mapped spill file counts in the first only). */
typedef struct rss {
  size_t total, anon;
} rss;

rss rss_now(void);
void mon_start(void);
void mon_shutdown(void);
/* Starts a series: *base receives the baseline, *t0 its time. */
void mon_begin(rss *base, double *t0);
/* Ends the series: *peak receives the peaks of both measures. With keep,
 * *series receives a malloc'd copy of the samples. */
void mon_end(rss *peak, bool keep, sample **series, size_t *n);

/* ---- scenarios.c ----------------------------------------------------------- */

extern ts_server *srv;

typedef struct request {
  char url[128];
  size_t n;   /* decoded body size the server sends */
  bool zeros; /* the body is zero bytes (bombs), not the pattern */
} request;

/* The matchers the scan program runs (contender scan-match): --word and
 * --regex arguments, and --stop-on-match. */
typedef struct scan_matchers {
  const char *words[4];   /* NULL-terminated */
  const char *regexes[4]; /* NULL-terminated */
  bool stop;
} scan_matchers;

typedef struct scenario scenario;
struct scenario {
  const char *name;
  const char *what;
  size_t count;      /* transfers (count-bound) */
  double seconds;    /* > 0: time-bound instead: start transfers this long */
  size_t size;       /* body size, where the scenario has one */
  long conc;         /* transfers in flight */
  size_t max_large;  /* respchain pools keep this many idle large buffers
                        (0: the default) */
  size_t cap;        /* body cap of this scenario (0: --cap) */
  unsigned kinds;    /* contenders run, a bit per K_* (0: all but rc-spill) */
  bool verify_all;   /* kept bodies are compared byte for byte */
  bool gzip;         /* encoded bodies: the baselines let curl decode */
  bool per_transfer; /* respchain creates and frees a response per transfer */
  void (*request)(const scenario *sc, size_t i, request *out);
  size_t distinct;            /* requests 0..distinct-1 name every URL used */
  bool child;                 /* the scan program runs it too, as a child process */
  const scan_matchers *match; /* scan-match's matchers (child scenarios) */
  bool throughput;            /* no transfers: match.c's matcher throughput */
  bool multiplexed;           /* HTTP/2 to nginx, a process per run: multiplex.c */
};

#define NSCEN 14
extern scenario SCENARIOS[NSCEN];

int scen_index(const char *name);
/* Whether contender k runs in sc (before --contender filters). */
bool scenario_runs(const scenario *sc, int k);
void apply_quick(void);
bool scenario_option(const char *arg, const char *val);
unsigned char expected_byte(const request *rq, size_t off);
/* For a scenario that verifies whole bodies: makes its pattern body (up
 * to its cap) before any clock starts; false when out of memory. */
bool expected_prepare(const scenario *sc);
/* The first n pattern bytes, or NULL when none that long were made. */
const unsigned char *expected_body(size_t n);

/* ---- contenders.c ---------------------------------------------------------- */

typedef struct slot {
  CURL *easy;
  bool busy;    /* a transfer is in flight */
  size_t index; /* request number */
  request rq;
  size_t cap;            /* body cap of this contender (SIZE_MAX: none) */
  size_t want;           /* body bytes expected: rq.n, capped */
  size_t probe[4];       /* offsets checked */
  unsigned char seen[4]; /* discard: the bytes seen at the probes */
  unsigned char *buf;    /* baselines' buffer */
  size_t len, capacity;
  rc_response *resp; /* respchain */
} slot;

typedef struct contender contender;

typedef struct run {
  const scenario *sc;
  const contender *k;
  size_t cap, budget;
  slot *slots;
  long nslots;
  rc_pool *pool;
  rc_limits lim;
} run;

typedef enum outcome { OUT_COMPLETE, OUT_AT_CAP, OUT_FAILED } outcome;

/* A finished body: ptr NULL for the discard floor (see slot.seen). */
typedef struct body {
  const unsigned char *ptr;
  size_t len;
} body;

struct contender {
  const char *name;
  const char *what;
  bool capped;
  bool (*setup)(run *r);                                   /* before the clock starts */
  void (*begin)(run *r, slot *s);                          /* a transfer is about to start */
  outcome (*end)(run *r, slot *s, CURLcode cc, body *out); /* it finished */
  void (*finish)(run *r, slot *s);                         /* after the check */
  CURLMcode (*poll)(run *r, CURLM *multi, int timeout_ms);
  size_t (*idle)(run *r); /* memory kept for reuse */
  void (*trim)(run *r);   /* give it back */
  void (*teardown)(run *r);
};

/* K_SCAN and K_SCANM are no write callbacks: the scan program, run as a
 * child process on the same URLs (child.c), in the scenarios marked child
 * only; K_SCANM with the scenario's matchers. */
enum { K_DISCARD, K_ONECOPY, K_RC, K_RCB, K_RCS, K_GIM, K_DOUBLING, K_SCAN, K_SCANM, NCONT };
#define IS_CHILD(k) ((k) >= K_SCAN)

extern const contender CONTENDERS[NCONT];
extern size_t opt_rc_max_large, opt_rc_chunk, opt_spill_memory;
extern const char *opt_spill_dir;

/* ---- driver.c -------------------------------------------------------------- */

/* What one run measured. */
typedef struct tally {
  bool ran;
  size_t done, failed;
  size_t verified_full;      /* bodies compared byte for byte */
  uint64_t body_bytes;       /* verified body bytes the contender delivered */
  double wall, cpu, cpu_drv; /* seconds */
  long faults_drv;           /* minor page faults of the driving thread */
  size_t rss0, peak, rss_end, rss_idle, rss_trim, idle;
  size_t anon0, peak_anon; /* the anonymous part of rss0 and of the peak */
  counters cnt;
  uint64_t copy_bytes; /* memcpy bytes on the driving thread */
  bool warm_marked;
  uint64_t warm_alloc0, warm_body0; /* counters at the end of the first wave */
  bool stopped;                     /* hit the time limit; in-flight transfers dropped */
  size_t dropped;
  bool has_pool;
  rc_pool_stats ps;
  sample *series;
  size_t nseries;
  double setup_s;      /* from the baseline sample to the clock start */
  double wall_runs[8]; /* wall per request of every run */
  int runs;
  size_t failed_all; /* failed checks in every run, the one kept or not */
  /* A child process (K_SCAN): wall, cpu (the bench's own, which is the
   * server's share, plus the child's), cpu_drv and faults_drv (the child's),
   * done, failed, body_bytes and ps (from its output and its summary) are
   * set; the memory fields of the in-process runs are not. */
  bool child;
  size_t child_peak; /* ru_maxrss, bytes */
  int child_status;  /* as from wait4 */
  size_t lines;      /* JSON lines written */
  /* With matchers (K_SCANM): lines whose "matched" and "matches" were
   * what the body says, lines "stopped", and the summary's byte counts. */
  size_t verdicts_ok, stopped_lines;
  double summary_body_mib, summary_wire_mib;
  char engine[128]; /* the summary's "body matchers:" line */
} tally;

extern double opt_limit, opt_idle;
extern size_t opt_cap, opt_budget;

/* The body cap of sc: its own, else --cap. */
size_t scenario_cap(const scenario *sc);
/* One run of contender k in scenario sc. */
void run_once(const scenario *sc, int k, tally *t, bool keep_series);

/* ---- report.c -------------------------------------------------------------- */

extern bool opt_csv;
extern int opt_runs;
extern tally results[NSCEN][NCONT];
extern bool scen_on[NSCEN], cont_on[NCONT];

double per_req(double v, const tally *t);
double ratio(double a, double b);
double signed_mib(size_t a, size_t b);
/* The median of v[0..n-1] (sorted in place); NAN when n is 0. */
double median(double *v, int n);
void print_scenario(size_t si);
void print_csv_header(void);
void print_csv(size_t si);
void report_targets(FILE *f);
/* The scan-* scenarios: the program against the in-process loop. */
void report_scan(FILE *f);
/* Scenarios scan-match, scan-stop and match. */
void report_match(FILE *f);

/* ---- main.c ---------------------------------------------------------------- */

/* A size with an optional K, M or G suffix (powers of 1024). */
bool parse_size(const char *s, size_t *out);
/* arg is --name, alone or as --name=value. */
bool opt_is(const char *arg, const char *name);

/* ---- child.c -------------------------------------------------------------- */

extern const char *opt_scan; /* --scan PATH; NULL: beside the bench; "": none */
/* Finds the scan program and starts the process that runs it; call before
 * any thread starts and while the bench is small (see child.c). */
void child_init(void);
/* NULL when the scan program can run; else why it cannot. */
const char *child_absent(void);
const char *child_program(void);
/* Works out what sc's matchers find in its body (the pattern up to the
 * cap): false when one of them is not a valid ERE. Call before its runs. */
bool child_expect(const scenario *sc);
/* Where each of sc's matchers first hits (the end of its first match), in
 * the order words then regexes; SIZE_MAX: nowhere. */
const size_t *child_expected_at(const scenario *sc);
/* One run of the scan program on sc's URLs; with_matchers: sc's matchers
 * (contender scan-match). */
void run_child(const scenario *sc, tally *t, bool with_matchers);
void child_shutdown(void);

/* ---- match.c -------------------------------------------------------------- */

/* The kinds of body the scenario generates. */
enum { MB_PATTERN, MB_HTML, MB_JSON, MB_KINDS };

typedef struct match_engine {
  int runs;
  uint64_t bytes;                /* per run */
  double bps_cpu, bps_wall;      /* best run: bytes per second of thread CPU, of wall */
  double kind_cpu[MB_KINDS];     /* best run: thread CPU seconds per body kind */
  uint64_t kind_bytes[MB_KINDS]; /* best run: bytes per body kind */
} match_engine;

typedef struct match_result {
  bool ran, failed;
  size_t arena, bodies, nlit, nre;
  match_engine hs, posix;
  size_t disagree;     /* bodies whose verdicts differ */
  size_t hits;         /* (body, matcher) pairs that hit */
  size_t matchers_hit; /* matchers that hit in some body */
  bool hit_by[128];
} match_result;

extern match_result match_res;
/* NULL when the scenario can run; else why not. */
const char *match_absent(void);
void run_match(const scenario *sc);

/* ---- multiplex.c ---------------------------------------------------------- */

/* NULL when scenario h2 can run (nginx is installed); else why not. */
const char *h2_absent(void);
/* Runs scenario h2: every overflow mode, a process per run. */
void run_h2(const scenario *sc);
/* Its table; false when a run failed. */
bool report_h2(FILE *f, const scenario *sc);
/* Its rows of the CSV (--csv): one per mode, in print_csv_header's
 * columns, the last six its own. */
void print_h2_csv(const scenario *sc);
/* The child process of one run: bench --h2-child MODE URL CAFILE COUNT CONC
 * BUDGET LIMIT. */
int h2_child_main(int argc, char **argv);

/* ---- chart.c --------------------------------------------------------------- */

bool write_svg(const char *path, size_t si);

#endif
