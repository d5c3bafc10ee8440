/*
 * bench: respchain against the usual ways of buffering libcurl bodies, over
 * real loopback transfers to an in-process server (test/server.h).
 *
 *   bench [--scenario NAME]... [--contender NAME]... [--quick] [--csv]
 *         [--svg FILE] [--runs N] [--cap SIZE] [--budget SIZE]
 *         [--SCENARIO-count N] [--SCENARIO-size SIZE] [--SCENARIO-conc N]
 *         [--sustained-seconds S] [--pressure-large N]
 *         [--rc-max-large N] [--rc-chunk SIZE] [--limit SECONDS]
 *         [--no-warmup]
 *
 * Contenders (one table row each) share one curl multi driver, the same
 * concurrency and the same URLs; they differ only in the write callback and
 * in what they do with the bytes:
 *   discard      the floor: counts bytes, keeps nothing;
 *   one-copy     the limit: one max-body buffer per slot, allocated and
 *                touched before the clock starts, one memcpy per byte;
 *   respchain    rc_attach + rc_multi_poll on a pool with default settings;
 *   rc-budget    the same with a memory budget (--budget, 64 MiB);
 *   getinmemory  curl's classic example: realloc to the exact size on every
 *                callback, no cap;
 *   doubling     capacity doubles from 16 KiB, capped at the max body.
 * Every contender but getinmemory stops a body at the cap (8 MiB, --cap) by
 * failing the write. In gzip scenarios the baselines let curl decode
 * (CURLOPT_ACCEPT_ENCODING ""); respchain decodes itself. Every finished
 * body is checked: HTTP status, outcome (complete, or stopped at the cap
 * exactly when the body is larger), length, and four bytes (first, last,
 * middle, one varying) against the server's pattern.
 *
 * Measurements, per run of one contender in one scenario:
 *   wall, and CPU (getrusage user+sys) of the whole process (client, server
 *   threads and sampler; the server's share is the same for everyone) and of
 *   the driving thread alone (curl plus the contender: the client's cost),
 *   and that thread's minor page faults (first touches of fresh memory);
 *   ratios to discard and one-copy are per completed request;
 *   resident memory from /proc/self/statm, sampled every 10 ms by a thread,
 *   the baseline taken before the contender's setup (so one-copy's buffers
 *   count), peak reported above that baseline and absolute;
 *   bytes allocated per body byte: malloc sizes plus realloc growth over the
 *   old block's usable size, through a counting allocator (respchain's pool
 *   allocator; the baselines call it for their own buffers). Memory curl
 *   allocates is not counted for anyone (in gzip scenarios this leaves out
 *   curl's zlib state for the baselines, while respchain's is counted).
 *   "warm" counts only after the first wave (the first CONC completions);
 *   bytes copied per body byte: every memcpy made on the driving thread by
 *   statically linked code (this file and librespchain.a), counted by
 *   wrapping memcpy at link time, plus what realloc copied when it moved a
 *   heap block (glibc moves mmapped blocks with mremap, which copies
 *   nothing: those are counted apart, as remaps). Copies inside libcurl and
 *   zlib are not seen: the same for everyone, except that with gzip curl
 *   inflates into its own buffer for the baselines;
 *   memory retained when the transfers are over with the pool (or one-copy's
 *   buffers) still alive, then after the contender's trim (rc_pool_trim;
 *   one-copy frees its buffers) and malloc_trim(0), both above the baseline.
 *
 * Fairness: malloc_trim(0) before every run; a warm-up burst (one-copy,
 * unreported) first: it warms the server, and freeing its max-body buffers
 * brings glibc's dynamic mmap threshold to the steady state any process
 * reaches once it has freed its first large block (from then on, blocks
 * below about the max body come from the heap). Before each scenario, one
 * request per distinct URL (discard) fills the server's caches. Each
 * contender runs --runs times (default 2), in table order on odd passes and
 * in reverse order on even ones; the run with the lower wall time per
 * request is reported, and the spread between runs is shown. A run that
 * passes --limit seconds (default 60) stops: a progress callback, set alike
 * on every contender's handles, aborts the transfers in flight, which are
 * dropped and reported (getinmemory on 1 GiB bombs, where every realloc
 * that moves an mmapped block costs a TLB shootdown; one curl_multi_perform
 * decoding a bomb can overshoot the limit).
 *
 * --rc-max-large and --rc-chunk change respchain's pools (both contenders)
 * for experiments; the defaults measure the library as configured.
 *
 * Build: link with -Wl,--wrap=memcpy (copy accounting) and the static
 * librespchain.a; without the flag the link fails on __real_memcpy.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD, malloc_usable_size, malloc_trim */
#include <curl/curl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "respchain.h"
#include "server.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0
#endif

static double mib(double bytes) { return bytes / (double)MiB; }

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Minor page faults so far (first touches of fresh memory). */
static long faults(int who)
{
  struct rusage ru;
  getrusage(who, &ru);
  return ru.ru_minflt;
}

static double cpu_s(int who)
{
  struct rusage ru;
  getrusage(who, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- Copy accounting: memcpy wrapped at link time ----------------------
 * Each thread counts its own calls; only the driving thread's are read, so
 * the server threads' copies never mix in. */
void *__real_memcpy(void *dst, const void *src, size_t n);
void *__wrap_memcpy(void *dst, const void *src, size_t n);

static _Thread_local uint64_t t_copy_bytes, t_copy_calls;

void *__wrap_memcpy(void *dst, const void *src, size_t n)
{
  t_copy_bytes += n;
  t_copy_calls++;
  return __real_memcpy(dst, src, n);
}

/* ---- Counting allocator ------------------------------------------------
 * Used by respchain's pools (as their rc_allocator) and by the baselines for
 * their own buffers; called from the driving thread only. */
typedef struct counters {
  uint64_t alloc_bytes; /* malloc sizes + realloc growth */
  uint64_t alloc_calls; /* malloc and realloc calls */
  uint64_t moved_bytes; /* bytes realloc copied moving a heap block */
  uint64_t remaps;      /* realloc moves of mmapped blocks (no copy) */
} counters;

static counters g_cnt;

/* glibc keeps a chunk's size word just before the pointer it hands out;
 * bit 1 of it marks a chunk obtained with mmap, which realloc moves with
 * mremap instead of copying. */
static bool chunk_is_mmapped(void *p)
{
#ifdef __GLIBC__
  return (((size_t *)p)[-1] & 2) != 0;
#else
  (void)p;
  return false;
#endif
}

static void *cnt_malloc(size_t n)
{
  g_cnt.alloc_calls++;
  g_cnt.alloc_bytes += n;
  return malloc(n);
}

static void *cnt_realloc(void *p, size_t n)
{
  if (!p)
    return cnt_malloc(n);
  size_t old = malloc_usable_size(p);
  bool mapped = chunk_is_mmapped(p);
  g_cnt.alloc_calls++;
  void *q = realloc(p, n);
  if (!q)
    return NULL;
  if (n > old)
    g_cnt.alloc_bytes += n - old;
  if (q != p) {
    if (mapped)
      g_cnt.remaps++;
    else
      g_cnt.moved_bytes += old < n ? old : n;
  }
  return q;
}

static void *rc_cnt_malloc(size_t n, void *ud) { (void)ud; return cnt_malloc(n); }
static void *rc_cnt_realloc(void *p, size_t n, void *ud) { (void)ud; return cnt_realloc(p, n); }
static void rc_cnt_free(void *p, void *ud) { (void)ud; free(p); }

static const rc_allocator counting_allocator = {rc_cnt_malloc, rc_cnt_realloc, rc_cnt_free, NULL};

/* ---- Resident memory sampler -------------------------------------------- */

typedef struct sample {
  float t;   /* seconds since the run's baseline */
  float mib; /* resident MiB above the baseline */
} sample;

#define SAMPLE_PERIOD_NS 10000000L
#define SAMPLE_CAP ((size_t)1 << 17) /* about 20 minutes of samples */

static struct {
  pthread_mutex_t lock;
  pthread_t thread;
  bool stop, active;
  double t0;
  size_t base, peak; /* bytes */
  sample *buf;
  size_t n;
} mon = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t rss_now(void)
{
  static long page;
  if (!page)
    page = sysconf(_SC_PAGESIZE);
  char text[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0)
    return 0;
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  unsigned long size = 0, resident = 0;
  if (got <= 0)
    return 0;
  text[got] = '\0';
  if (sscanf(text, "%lu %lu", &size, &resident) != 2)
    return 0;
  return (size_t)resident * (size_t)page;
}

/* Lock held. */
static void mon_record(size_t rss)
{
  if (rss > mon.peak)
    mon.peak = rss;
  if (mon.n < SAMPLE_CAP)
    mon.buf[mon.n++] = (sample){(float)(now_s() - mon.t0),
                                (float)mib((double)rss - (double)mon.base)};
}

static void *sampler_main(void *arg)
{
  (void)arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    next.tv_nsec += SAMPLE_PERIOD_NS;
    if (next.tv_nsec >= 1000000000L) {
      next.tv_sec++;
      next.tv_nsec -= 1000000000L;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec > next.tv_sec + 1)
      next = t; /* fell far behind (machine busy): no catch-up burst */
    pthread_mutex_lock(&mon.lock);
    bool stop = mon.stop;
    if (!stop && mon.active)
      mon_record(rss_now());
    pthread_mutex_unlock(&mon.lock);
    if (stop)
      return NULL;
  }
}

static void mon_start(void)
{
  mon.buf = calloc(SAMPLE_CAP, sizeof *mon.buf); /* touched now, not mid-run */
  memset(mon.buf, 0, SAMPLE_CAP * sizeof *mon.buf);
  pthread_create(&mon.thread, NULL, sampler_main, NULL);
}

static void mon_shutdown(void)
{
  pthread_mutex_lock(&mon.lock);
  mon.stop = true;
  pthread_mutex_unlock(&mon.lock);
  pthread_join(mon.thread, NULL);
  free(mon.buf);
}

/* Starts a series; returns the baseline RSS. */
static size_t mon_begin(void)
{
  pthread_mutex_lock(&mon.lock);
  mon.n = 0;
  mon.t0 = now_s();
  mon.base = mon.peak = rss_now();
  mon_record(mon.base);
  mon.active = true;
  size_t base = mon.base;
  pthread_mutex_unlock(&mon.lock);
  return base;
}

/* Ends the series; returns the peak RSS. With keep, *series receives a
 * malloc'd copy of the samples. */
static size_t mon_end(bool keep, sample **series, size_t *n)
{
  pthread_mutex_lock(&mon.lock);
  mon_record(rss_now());
  mon.active = false;
  size_t peak = mon.peak, count = mon.n;
  sample *copy = NULL;
  if (keep && (copy = malloc(count * sizeof *copy)) != NULL)
    for (size_t i = 0; i < count; i++)
      copy[i] = mon.buf[i];
  pthread_mutex_unlock(&mon.lock);
  if (keep) {
    *series = copy;
    *n = copy ? count : 0;
  }
  return peak;
}

/* ---- Scenarios ---------------------------------------------------------- */

static ts_server *srv;

typedef struct request {
  char url[128];
  size_t n;   /* decoded body size the server sends */
  bool zeros; /* the body is zero bytes (bombs), not the pattern */
} request;

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
  bool gzip;         /* encoded bodies: the baselines let curl decode */
  bool per_transfer; /* respchain creates and frees a response per transfer */
  void (*request)(const scenario *sc, size_t i, request *out);
  size_t distinct;   /* requests 0..distinct-1 name every URL used */
};

static const size_t MIX[] = {1 * KiB, 100 * KiB, 1 * MiB, 4 * MiB, 8 * MiB};
#define NMIX (sizeof MIX / sizeof MIX[0])

static void set_url(request *rq, const char *path)
{
  ts_url(srv, path, rq->url, sizeof rq->url);
}

static void req_bytes(const scenario *sc, size_t i, request *rq)
{
  (void)i;
  char path[64];
  snprintf(path, sizeof path, "/bytes?n=%zu", sc->size);
  set_url(rq, path);
  rq->n = sc->size;
  rq->zeros = false;
}

/* 1K, 100K, 1M, 4M, 8M in turn. */
static void req_mix(const scenario *sc, size_t i, request *rq)
{
  (void)sc;
  char path[64];
  rq->n = MIX[i % NMIX];
  snprintf(path, sizeof path, "/bytes?n=%zu", rq->n);
  set_url(rq, path);
  rq->zeros = false;
}

/* The same sizes, a round plain, then rounds encoded with gzip, br and
 * zstd in turn. */
static void req_mix_gzip(const scenario *sc, size_t i, request *rq)
{
  static const char *const rounds[] = {"bytes?", "gzip?coding=gzip&",
                                       "gzip?coding=br&", "bytes?",
                                       "gzip?coding=gzip&", "gzip?coding=zstd&"};
  (void)sc;
  char path[64];
  rq->n = MIX[i % NMIX];
  snprintf(path, sizeof path, "/%sn=%zu", rounds[(i / NMIX) % 6], rq->n);
  set_url(rq, path);
  rq->zeros = false;
}

/* gzip, br and zstd bombs in turn. */
static void req_bomb(const scenario *sc, size_t i, request *rq)
{
  static const char *const codings[] = {"gzip", "br", "zstd"};
  char path[64];
  snprintf(path, sizeof path, "/bomb?size=%zu&coding=%s", sc->size, codings[i % 3]);
  set_url(rq, path);
  rq->n = sc->size;
  rq->zeros = true;
}

static scenario SCENARIOS[] = {
    {.name = "burst", .what = "large bodies, many at once", .count = 500,
     .size = 8 * MiB, .conc = 50, .request = req_bytes, .distinct = 1},
    {.name = "sustained", .what = "1K/100K/1M/4M/8M in turn for a time",
     .seconds = 5, .conc = 50, .request = req_mix, .distinct = NMIX},
    {.name = "pressure", .what = "more large bodies at once than the pool keeps",
     .count = 30, .size = 8 * MiB, .conc = 30, .max_large = 10,
     .request = req_bytes, .distinct = 1},
    {.name = "mixed", .what = "1K..8M, half plain, then gzip, br, zstd",
     .count = 600, .conc = 50, .gzip = true, .request = req_mix_gzip,
     .distinct = 6 * NMIX},
    {.name = "rapid", .what = "create/destroy a response per transfer",
     .count = 1000, .size = 10 * KiB, .conc = 1, .per_transfer = true,
     .request = req_bytes, .distinct = 1},
    {.name = "small", .what = "many small bodies", .count = 20000,
     .size = 1 * KiB, .conc = 50, .request = req_bytes, .distinct = 1},
    /* Two at a time: getinmemory holds each decoded GiB in full. */
    {.name = "bombs", .what = "gzip, br, zstd bombs stopped at the cap",
     .count = 12, .size = 1 * GiB, .conc = 2, .gzip = true, .request = req_bomb,
     .distinct = 3},
};
#define NSCEN (sizeof SCENARIOS / sizeof SCENARIOS[0])

/* ---- Contenders ---------------------------------------------------------- */

typedef struct slot {
  CURL *easy;
  bool busy;           /* a transfer is in flight */
  size_t index;        /* request number */
  request rq;
  size_t cap;          /* body cap of this contender (SIZE_MAX: none) */
  size_t want;         /* body bytes expected: rq.n, capped */
  size_t probe[4];     /* offsets checked */
  unsigned char seen[4]; /* discard: the bytes seen at the probes */
  unsigned char *buf;  /* baselines' buffer */
  size_t len, capacity;
  rc_response *resp;   /* respchain */
} slot;

typedef struct run {
  const scenario *sc;
  const struct contender *k;
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

typedef struct contender {
  const char *name;
  const char *what;
  bool capped;
  bool (*setup)(run *r);                /* before the clock starts */
  void (*begin)(run *r, slot *s);       /* a transfer is about to start */
  outcome (*end)(run *r, slot *s, CURLcode cc, body *out); /* it finished */
  void (*finish)(run *r, slot *s);      /* after the check */
  CURLMcode (*poll)(run *r, CURLM *multi);
  size_t (*idle)(run *r);               /* memory kept for reuse */
  void (*trim)(run *r);                 /* give it back */
  void (*teardown)(run *r);
} contender;

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

static bool no_setup(run *r) { (void)r; return true; }
static void no_op(run *r) { (void)r; }
static size_t no_idle(run *r) { (void)r; return 0; }
static void no_finish(run *r, slot *s) { (void)r; (void)s; }

static CURLMcode plain_poll(run *r, CURLM *multi)
{
  (void)r;
  return curl_multi_poll(multi, NULL, 0, 1000, NULL);
}

/* discard: counts the bytes up to the cap, and notes the probe bytes. */
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

/* one-copy: a max-body buffer per slot, touched up front, reused. */
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

/* getinmemory: curl's example, to the letter of its pattern. */
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

/* doubling: capacity doubles from 16 KiB, never past the cap; at the cap
 * it keeps what fits and fails the write. */
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

/* respchain: a pool through the counting allocator, with default settings
 * except where the scenario or the command line says. */
static size_t opt_rc_max_large = SIZE_MAX, opt_rc_chunk; /* unset: default */

static bool rc_setup_with(run *r, size_t budget)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.allocator = &counting_allocator;
  cfg.max_buffer = r->cap + 1; /* the default when the cap is the default */
  cfg.budget = budget;
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
  if (!r->sc->per_transfer)
    for (long i = 0; i < r->nslots; i++)
      if (rc_response_new(r->pool, &r->lim, &r->slots[i].resp) != RC_OK)
        return false;
  return true;
}

static bool rc_setup(run *r) { return rc_setup_with(r, 0); }
static bool rcb_setup(run *r) { return rc_setup_with(r, r->budget); }

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

static void rc_finish(run *r, slot *s)
{
  if (r->sc->per_transfer) {
    rc_response_free(s->resp);
    s->resp = NULL;
  } else {
    rc_response_reset(s->resp);
  }
}

static CURLMcode rc_poll(run *r, CURLM *multi)
{
  return rc_multi_poll(r->pool, multi, NULL, 0, 1000, NULL);
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

enum { K_DISCARD, K_ONECOPY, K_RC, K_RCB, K_GIM, K_DOUBLING, NCONT };

static const contender CONTENDERS[NCONT] = {
    [K_DISCARD] = {"discard", "floor: counts bytes, keeps nothing", true,
                   no_setup, discard_begin, discard_end, no_finish, plain_poll,
                   no_idle, no_op, no_op},
    [K_ONECOPY] = {"one-copy", "limit: pre-touched max-body buffer per slot",
                   true, onecopy_setup, onecopy_begin, onecopy_end, no_finish,
                   plain_poll, onecopy_idle, onecopy_trim, onecopy_trim},
    [K_RC] = {"respchain", "defaults, rc_attach + rc_multi_poll", true,
              rc_setup, rc_begin, rc_end, rc_finish, rc_poll, rc_idle, rc_trim,
              rc_teardown},
    [K_RCB] = {"rc-budget", "respchain with a memory budget", true, rcb_setup,
               rc_begin, rc_end, rc_finish, rc_poll, rc_idle, rc_trim,
               rc_teardown},
    [K_GIM] = {"getinmemory", "realloc to the exact size per callback, no cap",
               false, no_setup, gim_begin, gim_end, free_buf, plain_poll,
               no_idle, no_op, no_op},
    [K_DOUBLING] = {"doubling", "doubling from 16 KiB, capped at the max body",
                    true, no_setup, doubling_begin, gim_end, free_buf,
                    plain_poll, no_idle, no_op, no_op},
};

/* ---- The driver ---------------------------------------------------------- */

/* What one run measured. */
typedef struct tally {
  bool ran;
  size_t done, failed;
  uint64_t body_bytes;        /* verified body bytes the contender delivered */
  double wall, cpu, cpu_drv;  /* seconds */
  long faults_drv;            /* minor page faults of the driving thread */
  size_t rss0, peak, rss_end, rss_trim, idle;
  counters cnt;
  uint64_t copy_bytes;        /* memcpy bytes on the driving thread */
  bool warm_marked;
  uint64_t warm_alloc0, warm_body0; /* counters at the end of the first wave */
  bool stopped;               /* hit the time limit; in-flight transfers dropped */
  size_t dropped;
  bool has_pool;
  rc_pool_stats ps;
  sample *series;
  size_t nseries;
  double setup_s;             /* from the baseline sample to the clock start */
  double wall_runs[8];        /* wall per request of every run */
  int runs;
} tally;

static unsigned char expected_byte(const request *rq, size_t off)
{
  return rq->zeros ? 0 : ts_pattern_byte(off);
}

static void start_transfer(run *r, slot *s, size_t index, CURLM *multi)
{
  s->index = index;
  r->sc->request(r->sc, index, &s->rq);
  s->cap = r->k->capped ? r->cap : SIZE_MAX;
  s->want = s->rq.n < s->cap ? s->rq.n : s->cap;
  size_t w = s->want ? s->want : 1;
  s->probe[0] = 0;
  s->probe[1] = w - 1;
  s->probe[2] = w / 2;
  s->probe[3] = (size_t)(((uint64_t)index * 2654435761u) % w);
  for (int i = 0; i < 4; i++)
    s->seen[i] = (unsigned char)~expected_byte(&s->rq, s->probe[i]);
  s->len = 0;
  curl_easy_setopt(s->easy, CURLOPT_URL, s->rq.url);
  r->k->begin(r, s);
  s->busy = true;
  curl_multi_add_handle(multi, s->easy);
}

/* Checks a finished transfer; returns a reason when it is wrong. */
static const char *check_transfer(run *r, slot *s, CURLcode cc, body *b)
{
  long status = 0;
  curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
  outcome o = r->k->end(r, s, cc, b);
  outcome want = s->want < s->rq.n ? OUT_AT_CAP : OUT_COMPLETE;
  if (status != 200)
    return "HTTP status";
  if (o != want)
    return o == OUT_FAILED ? "transfer failed" : "outcome (cap)";
  if (b->len != s->want)
    return "length";
  for (int i = 0; i < 4 && s->want; i++) {
    unsigned char got = b->ptr ? b->ptr[s->probe[i]] : s->seen[i];
    if (got != expected_byte(&s->rq, s->probe[i]))
      return "content";
  }
  return NULL;
}

static double opt_limit = 60; /* seconds a run may take */

static bool more_to_start(const run *r, size_t next, double start)
{
  double elapsed = now_s() - start;
  if (elapsed > opt_limit)
    return false;
  if (r->sc->seconds > 0)
    return elapsed < r->sc->seconds;
  return next < r->sc->count;
}

/* Ends the run early: in-flight transfers are dropped, not counted. */
static void drop_inflight(run *r, CURLM *multi, tally *t)
{
  for (long i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    if (!s->busy)
      continue;
    curl_multi_remove_handle(multi, s->easy);
    r->k->finish(r, s);
    s->busy = false;
    t->dropped++;
  }
  t->stopped = true;
}

/* Progress callback on every handle of every contender: aborts transfers
 * once the run is past its limit, even inside one long curl_multi_perform
 * (a bomb decoded by curl delivers gigabytes in one call). */
static int past_limit(void *deadline, curl_off_t dltotal, curl_off_t dlnow,
                      curl_off_t ultotal, curl_off_t ulnow)
{
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  return now_s() > *(const double *)deadline;
}

/* The one multi loop every contender runs under. */
static void drive(run *r, tally *t)
{
  CURLM *multi = curl_multi_init();
  double start = now_s(), hard_stop = start + opt_limit;
  for (long i = 0; i < r->nslots; i++) {
    slot *s = &r->slots[i];
    s->easy = curl_easy_init();
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, (char *)s);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_XFERINFOFUNCTION, past_limit);
    curl_easy_setopt(s->easy, CURLOPT_XFERINFODATA, &hard_stop);
    curl_easy_setopt(s->easy, CURLOPT_NOPROGRESS, 0L);
  }
  size_t next = 0;
  long inflight = 0;
  for (long i = 0; i < r->nslots && more_to_start(r, next, start); i++, inflight++)
    start_transfer(r, &r->slots[i], next++, multi);

  while (inflight > 0) {
    int running;
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left)) != NULL) {
      if (m->msg != CURLMSG_DONE)
        continue;
      char *priv;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
      slot *s = (slot *)priv;
      CURLcode cc = m->data.result;
      curl_multi_remove_handle(multi, s->easy);
      s->busy = false;
      inflight--;
      if (cc == CURLE_ABORTED_BY_CALLBACK && now_s() > hard_stop) {
        r->k->finish(r, s); /* stopped by the limit: dropped, not checked */
        t->dropped++;
        t->stopped = true;
        continue;
      }
      body b = {NULL, 0};
      const char *bad = check_transfer(r, s, cc, &b);
      if (bad) {
        if (t->failed++ < 5)
          fprintf(stderr, "  %s: %s wrong: %s (len %zu, want %zu, %s)\n",
                  r->k->name, s->rq.url, bad, b.len, s->want, curl_easy_strerror(cc));
      } else {
        t->done++;
        t->body_bytes += b.len;
      }
      r->k->finish(r, s);
      if (!t->warm_marked && t->done + t->failed == (size_t)r->nslots) {
        t->warm_marked = true;
        t->warm_alloc0 = g_cnt.alloc_bytes;
        t->warm_body0 = t->body_bytes;
      }
      if (more_to_start(r, next, start)) {
        start_transfer(r, s, next++, multi);
        inflight++;
      }
    }
    if (inflight > 0 && now_s() > hard_stop) {
      drop_inflight(r, multi, t);
      break;
    }
    if (inflight > 0)
      r->k->poll(r, multi);
  }
  for (long i = 0; i < r->nslots; i++)
    curl_easy_cleanup(r->slots[i].easy);
  curl_multi_cleanup(multi);
}

static size_t opt_cap = 8 * MiB, opt_budget = 64 * MiB;

/* One run of contender k in scenario sc. */
static void run_once(const scenario *sc, int k, tally *t, bool keep_series)
{
  memset(t, 0, sizeof *t);
  malloc_trim(0);
  g_cnt = (counters){0, 0, 0, 0};
  run r = {.sc = sc, .k = &CONTENDERS[k], .cap = opt_cap, .budget = opt_budget,
           .nslots = sc->conc};
  t->rss0 = mon_begin();
  r.slots = calloc((size_t)sc->conc, sizeof *r.slots);
  if (!r.slots || !r.k->setup(&r)) {
    fprintf(stderr, "%s: setup failed\n", r.k->name);
    exit(1);
  }
  uint64_t copy0 = t_copy_bytes;
  double w0 = now_s(), c0 = cpu_s(RUSAGE_SELF), d0 = cpu_s(RUSAGE_THREAD);
  long f0 = faults(RUSAGE_THREAD);
  t->setup_s = w0 - mon.t0;
  drive(&r, t);
  t->wall = now_s() - w0;
  t->cpu = cpu_s(RUSAGE_SELF) - c0;
  t->cpu_drv = cpu_s(RUSAGE_THREAD) - d0;
  t->faults_drv = faults(RUSAGE_THREAD) - f0;
  t->copy_bytes = t_copy_bytes - copy0;
  t->peak = mon_end(keep_series, &t->series, &t->nseries);
  t->cnt = g_cnt;
  t->rss_end = rss_now();
  t->idle = r.k->idle(&r);
  if (r.pool) {
    t->has_pool = true;
    rc_pool_stats_get(r.pool, &t->ps);
  }
  r.k->trim(&r);
  malloc_trim(0);
  t->rss_trim = rss_now();
  r.k->teardown(&r);
  free(r.slots);
  malloc_trim(0);
  t->ran = true;
}

/* ---- Reporting ----------------------------------------------------------- */

static bool opt_csv;
static tally results[NSCEN][NCONT];
static bool scen_on[NSCEN], cont_on[NCONT];

static double per_req(double v, const tally *t) { return t->done ? v / (double)t->done : NAN; }

static double ratio(double a, double b) { return b > 0 && !isnan(a) && !isnan(b) ? a / b : NAN; }

static double signed_mib(size_t a, size_t b) { return mib((double)a - (double)b); }

/* v with prec decimals and a suffix; "-" when there is no value. */
static void num(char *out, size_t n, double v, int prec, const char *suffix)
{
  if (isnan(v) || isinf(v))
    snprintf(out, n, "-");
  else
    snprintf(out, n, "%.*f%s", prec, v, suffix);
}

#define NCOL 21
static const char *const COLS[NCOL] = {
    "contender", "reqs", "MiB", "wall s", "/floor", "/1copy", "cpu s",
    "/floor", "/1copy", "drv cpu", "faults/MiB", "peakΔ MiB", "peak MiB", "alloc/B",
    "warm/B", "copy/B", "idle MiB", "keptΔ MiB", "trimΔ MiB", "spread",
    "notes"};
static const char *const CSV_COLS[] = {
    "scenario", "contender", "requests", "failed", "body_bytes", "wall_s",
    "wall_vs_floor", "wall_vs_onecopy", "cpu_s", "cpu_vs_floor",
    "cpu_vs_onecopy", "driver_cpu_s", "driver_faults", "rss_start_mib",
    "peak_delta_mib",
    "peak_mib", "alloc_per_byte", "alloc_per_byte_warm", "copy_per_byte",
    "memcpy_bytes", "realloc_moved_bytes", "realloc_remaps", "alloc_calls",
    "idle_mib", "retained_delta_mib", "trimmed_delta_mib", "wall_spread",
    "pool_fresh", "pool_reuses", "pool_discards", "pool_pauses",
    "pool_peak_in_use_mib", "notes"};

static void notes_of(const tally *t, char *out, size_t n)
{
  size_t at = 0;
  out[0] = '\0';
  if (t->failed)
    at += (size_t)snprintf(out + at, n - at, "FAILED %zu; ", t->failed);
  if (t->stopped)
    at += (size_t)snprintf(out + at, n - at, "STOPPED at the %.0f s limit, %zu dropped; ",
                           opt_limit, t->dropped);
  if (t->has_pool)
    at += (size_t)snprintf(out + at, n - at,
                           "fresh %" PRIu64 " reuse %" PRIu64 " discard %" PRIu64
                           " pause %" PRIu64 " inuse-peak %.0fM; ",
                           t->ps.fresh, t->ps.reuses, t->ps.discards, t->ps.pauses,
                           mib((double)t->ps.peak_in_use));
  if (t->cnt.moved_bytes || t->cnt.remaps)
    at += (size_t)snprintf(out + at, n - at, "realloc moved %.0fM, remaps %" PRIu64 "; ",
                           mib((double)t->cnt.moved_bytes), t->cnt.remaps);
  if (at >= 2 && at < n)
    out[at - 2] = '\0';
}

static double spread_of(const tally *t)
{
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < t->runs; i++) {
    lo = t->wall_runs[i] < lo ? t->wall_runs[i] : lo;
    hi = t->wall_runs[i] > hi ? t->wall_runs[i] : hi;
  }
  return t->runs > 1 ? (hi - lo) / lo : NAN;
}

static void print_scenario(size_t si)
{
  const scenario *sc = &SCENARIOS[si];
  const tally *fl = results[si][K_DISCARD].ran ? &results[si][K_DISCARD] : NULL;
  const tally *oc = results[si][K_ONECOPY].ran ? &results[si][K_ONECOPY] : NULL;
  static char cells[NCONT + 1][NCOL][160];
  int rows = 0;
  for (int c = 0; c < NCOL; c++)
    snprintf(cells[0][c], sizeof cells[0][c], "%s", COLS[c]);
  rows = 1;
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    if (!t->ran)
      continue;
    char (*row)[160] = cells[rows++];
    double wr = per_req(t->wall, t), cr = per_req(t->cpu, t);
    double bb = (double)t->body_bytes;
    snprintf(row[0], 160, "%s", CONTENDERS[k].name);
    snprintf(row[1], 160, "%zu", t->done);
    num(row[2], 160, mib(bb), 1, "");
    num(row[3], 160, t->wall, 2, "");
    num(row[4], 160, fl ? ratio(wr, per_req(fl->wall, fl)) : NAN, 2, "");
    num(row[5], 160, oc ? ratio(wr, per_req(oc->wall, oc)) : NAN, 2, "");
    num(row[6], 160, t->cpu, 2, "");
    num(row[7], 160, fl ? ratio(cr, per_req(fl->cpu, fl)) : NAN, 2, "");
    num(row[8], 160, oc ? ratio(cr, per_req(oc->cpu, oc)) : NAN, 2, "");
    num(row[9], 160, t->cpu_drv, 2, "");
    num(row[10], 160, ratio((double)t->faults_drv, mib(bb)), 0, "");
    num(row[11], 160, signed_mib(t->peak, t->rss0), 0, "");
    num(row[12], 160, mib((double)t->peak), 0, "");
    num(row[13], 160, ratio((double)t->cnt.alloc_bytes, bb), 3, "");
    num(row[14], 160, t->warm_marked ? ratio((double)(t->cnt.alloc_bytes - t->warm_alloc0),
                               (double)(t->body_bytes - t->warm_body0))
                       : NAN, 3, "");
    num(row[15], 160, ratio((double)(t->copy_bytes + t->cnt.moved_bytes), bb), 2, "");
    num(row[16], 160, mib((double)t->idle), 0, "");
    num(row[17], 160, signed_mib(t->rss_end, t->rss0), 0, "");
    num(row[18], 160, signed_mib(t->rss_trim, t->rss0), 0, "");
    double sp = spread_of(t);
    num(row[19], 160, sp * 100, 0, "%");
    notes_of(t, row[20], 160);
  }
  char title[256];
  if (sc->seconds > 0)
    snprintf(title, sizeof title, "%s: %s; %.1f s at %ld concurrent", sc->name,
             sc->what, sc->seconds, sc->conc);
  else if (sc->size)
    snprintf(title, sizeof title, "%s: %s; %zu x %.3g MiB at %ld concurrent",
             sc->name, sc->what, sc->count, mib((double)sc->size), sc->conc);
  else
    snprintf(title, sizeof title, "%s: %s; %zu requests at %ld concurrent",
             sc->name, sc->what, sc->count, sc->conc);
  printf("\n== %s%s ==\n", title,
         sc->max_large ? " (respchain pools keep that many large buffers)" : "");
  /* Widths count UTF-8 characters, not bytes. */
  int width[NCOL] = {0};
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < NCOL; c++) {
      int w = 0;
      for (const char *p = cells[r][c]; *p; p++)
        w += ((unsigned char)*p & 0xC0) != 0x80;
      width[c] = w > width[c] ? w : width[c];
    }
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < NCOL; c++) {
      int w = 0;
      for (const char *p = cells[r][c]; *p; p++)
        w += ((unsigned char)*p & 0xC0) != 0x80;
      int pad = width[c] - w;
      bool left = c == 0 || c == NCOL - 1;
      if (left)
        printf("%s%*s", cells[r][c], c == NCOL - 1 ? 0 : pad, "");
      else
        printf("%*s%s", pad, "", cells[r][c]);
      printf(c == NCOL - 1 ? "\n" : "  ");
    }
  }
  fflush(stdout);
}

static void print_csv_header(void)
{
  for (size_t i = 0; i < sizeof CSV_COLS / sizeof CSV_COLS[0]; i++)
    printf("%s%s", i ? "," : "", CSV_COLS[i]);
  printf("\n");
}

static void print_csv(size_t si)
{
  const tally *fl = results[si][K_DISCARD].ran ? &results[si][K_DISCARD] : NULL;
  const tally *oc = results[si][K_ONECOPY].ran ? &results[si][K_ONECOPY] : NULL;
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    if (!t->ran)
      continue;
    double wr = per_req(t->wall, t), cr = per_req(t->cpu, t), bb = (double)t->body_bytes;
    char notes[256];
    notes_of(t, notes, sizeof notes);
    for (char *p = notes; *p; p++)
      if (*p == ',')
        *p = ';';
    printf("%s,%s,%zu,%zu,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%ld,"
           "%.1f,%.1f,%.1f,%.4f,%.4f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
           ",%" PRIu64 ",%.1f,%.1f,%.1f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
           ",%" PRIu64 ",%.1f,%s\n",
           SCENARIOS[si].name, CONTENDERS[k].name, t->done, t->failed, t->body_bytes,
           t->wall, fl ? ratio(wr, per_req(fl->wall, fl)) : NAN,
           oc ? ratio(wr, per_req(oc->wall, oc)) : NAN, t->cpu,
           fl ? ratio(cr, per_req(fl->cpu, fl)) : NAN,
           oc ? ratio(cr, per_req(oc->cpu, oc)) : NAN, t->cpu_drv, t->faults_drv,
           mib((double)t->rss0), signed_mib(t->peak, t->rss0), mib((double)t->peak),
           ratio((double)t->cnt.alloc_bytes, bb),
           t->warm_marked ? ratio((double)(t->cnt.alloc_bytes - t->warm_alloc0),
                                  (double)(t->body_bytes - t->warm_body0))
                          : NAN,
           ratio((double)(t->copy_bytes + t->cnt.moved_bytes), bb), t->copy_bytes,
           t->cnt.moved_bytes, t->cnt.remaps, t->cnt.alloc_calls, mib((double)t->idle),
           signed_mib(t->rss_end, t->rss0), signed_mib(t->rss_trim, t->rss0),
           spread_of(t), t->ps.fresh, t->ps.reuses, t->ps.discards, t->ps.pauses,
           mib((double)t->ps.peak_in_use), notes);
  }
  fflush(stdout);
}

/* ---- The burst chart ------------------------------------------------------ */

static const char *const COLORS[NCONT] = {"#7f7f7f", "#2ca02c", "#1f77b4",
                                          "#17becf", "#d62728", "#ff7f0e"};

static double nice_step(double range, int ticks)
{
  double raw = range / ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static bool write_svg(const char *path, size_t si)
{
  const scenario *sc = &SCENARIOS[si];
  const double W = 1000, H = 540, L = 80, R = 290, T = 50, B = 60;
  double tmax = 0, ymax = 0, ymin = 0; /* RSS below the start is drawn at 0 */
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    for (size_t i = 0; t->ran && i < t->nseries; i++) {
      tmax = t->series[i].t - t->setup_s > tmax ? t->series[i].t - t->setup_s : tmax;
      ymax = t->series[i].mib > ymax ? t->series[i].mib : ymax;
    }
  }
  if (tmax <= 0 || ymax <= ymin)
    return false;
  double xs = nice_step(tmax, 10), ys = nice_step(ymax - ymin, 8);
  tmax = ceil(tmax / xs) * xs;
  ymax = ceil(ymax / ys) * ys;
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  double pw = W - L - R, ph = H - T - B;
#define X(v) (L + (v) / tmax * pw)
#define Y(v) (T + ph - ((v) - ymin) / (ymax - ymin) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s: %zu x %.3g MiB at %ld "
             "concurrent: resident memory above each contender's start</text>\n",
          L, sc->name, sc->count, mib((double)sc->size), sc->conc);
  for (double v = 0; v <= tmax + xs / 2; v += xs) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
            X(v), T, X(v), T + ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", X(v),
            T + ph + 18, v);
  }
  for (double v = ymin; v <= ymax + ys / 2; v += ys) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
            L, Y(v), L + pw, Y(v));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6,
            Y(v) + 4, v);
  }
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
          L, T + ph, L + pw, T + ph);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
          L, T, L, T + ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">seconds since the "
             "contender's clock started (after its setup; sampled every 10 ms)</text>\n",
          L + pw / 2, H - 15);
  fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">"
             "resident memory above start (MiB)</text>\n", T + ph / 2);
  int li = 0;
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    if (!t->ran || !t->nseries)
      continue;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
            COLORS[k]);
    /* The clock starts after setup: one-copy's buffers are resident at 0. */
    bool first = true;
    for (size_t i = 0; i < t->nseries; i++) {
      double x = t->series[i].t - t->setup_s;
      if (i + 1 < t->nseries && t->series[i + 1].t - t->setup_s <= 0)
        continue;
      fprintf(f, "%s%.1f,%.1f", first ? "" : " ", X(x > 0 ? x : 0),
              Y(t->series[i].mib > 0 ? t->series[i].mib : 0));
      first = false;
    }
    fprintf(f, "\"/>\n");
    double ly = T + 10 + 22 * li++;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"3\"/>\n", L + pw + 15, ly, L + pw + 40, ly, COLORS[k]);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s: peak +%.0f MiB, %.2f s</text>\n",
            L + pw + 46, ly + 4, CONTENDERS[k].name, signed_mib(t->peak, t->rss0), t->wall);
  }
#undef X
#undef Y
  fprintf(f, "</svg>\n");
  return fclose(f) == 0;
}

/* ---- Targets --------------------------------------------------------------- */

static int scen_index(const char *name)
{
  for (size_t i = 0; i < NSCEN; i++)
    if (strcmp(SCENARIOS[i].name, name) == 0)
      return (int)i;
  return -1;
}

static void target(FILE *f, const char *what, double got, double limit, const char *unit)
{
  if (isnan(got))
    return;
  fprintf(f, "  %-58s %8.2f%s  target <= %.2f%s  %s\n", what, got, unit, limit, unit,
          got <= limit ? "met" : "MISSED");
}

static const tally *res(const char *scen, int k)
{
  int si = scen_index(scen);
  return si >= 0 && results[si][k].ran && results[si][k].done ? &results[si][k] : NULL;
}

static void report_targets(FILE *f)
{
  fprintf(f, "\nTargets (respchain = the default-settings contender):\n");
  const tally *fl = res("burst", K_DISCARD), *oc = res("burst", K_ONECOPY),
              *rc = res("burst", K_RC), *rcb = res("burst", K_RCB),
              *gim = res("burst", K_GIM);
  const scenario *b = &SCENARIOS[scen_index("burst")];
  if (fl && oc)
    fprintf(f, "  context: burst wall vs the floor: one-copy %.2fx, getinmemory %.2fx\n",
            ratio(per_req(oc->wall, oc), per_req(fl->wall, fl)),
            gim ? ratio(per_req(gim->wall, gim), per_req(fl->wall, fl)) : NAN);
  if (rc && oc)
    target(f, "burst: wall vs the one-copy limit",
           ratio(per_req(rc->wall, rc), per_req(oc->wall, oc)), 1.10, "x");
  if (rc) {
    double held = (double)b->conc * (double)(b->size < opt_cap ? b->size : opt_cap);
    char what[96];
    snprintf(what, sizeof what, "burst: peak RSS above start, MiB (1.05 x %.0f + 32)",
             mib(held));
    target(f, what, signed_mib(rc->peak, rc->rss0), mib(1.05 * held) + 32, "");
    target(f, "burst: bytes allocated per body byte, pool warm",
           rc->warm_marked ? ratio((double)(rc->cnt.alloc_bytes - rc->warm_alloc0),
                                   (double)(rc->body_bytes - rc->warm_body0))
                           : NAN,
           0.10, "");
    target(f, "burst: bytes allocated per body byte, whole burst (info)",
           ratio((double)rc->cnt.alloc_bytes, (double)rc->body_bytes), 0.10, "");
  }
  const char *small[] = {"small", "rapid"};
  for (int i = 0; i < 2; i++) {
    const tally *sfl = res(small[i], K_DISCARD), *src = res(small[i], K_RC);
    char what[96];
    snprintf(what, sizeof what, "%s: wall vs the floor", small[i]);
    if (sfl && src)
      target(f, what, ratio(per_req(src->wall, src), per_req(sfl->wall, sfl)), 1.05, "x");
  }
  const tally *bomb = res("bombs", K_RC);
  if (bomb) {
    char what[96];
    snprintf(what, sizeof what, "bombs: wall for all %zu at the cap, s", bomb->done);
    target(f, what, bomb->wall, 0.5, "");
  }
  if (rcb) {
    char what[96];
    snprintf(what, sizeof what, "budgeted burst: peak RSS above start, MiB (%.0f + 8)",
             mib((double)opt_budget));
    target(f, what, signed_mib(rcb->peak, rcb->rss0), mib((double)opt_budget) + 8, "");
    if (rc)
      target(f, "budgeted burst: wall vs unbudgeted (>= 0.7x throughput)",
             ratio(per_req(rcb->wall, rcb), per_req(rc->wall, rc)), 1 / 0.7, "x");
  }
}

/* ---- Options ------------------------------------------------------------ */

static int opt_runs = 2;
static bool opt_warmup = true, opt_quick;
static const char *opt_svg = "bench-burst.svg";

static void loadavg(char *out, size_t n)
{
  snprintf(out, n, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fgets(out, (int)n, f))
      out[strcspn(out, "\n")] = '\0';
    fclose(f);
  }
}

/* The usage, on out (stdout for --help). */
static void usage(FILE *out)
{
  fprintf(out,
          "usage: bench [--scenario NAME]... [--contender NAME]... [--quick] [--csv]\n"
          "             [--svg FILE] [--runs N] [--cap SIZE] [--budget SIZE]\n"
          "             [--SCENARIO-count N] [--SCENARIO-size SIZE] [--SCENARIO-conc N]\n"
          "             [--sustained-seconds S] [--pressure-large N]\n"
          "             [--rc-max-large N] [--rc-chunk SIZE] [--limit SECONDS]\n"
          "             [--no-warmup] [--help] [--version]\n"
          "scenarios:");
  for (size_t i = 0; i < NSCEN; i++)
    fprintf(out, " %s", SCENARIOS[i].name);
  fprintf(out, "\ncontenders:");
  for (int k = 0; k < NCONT; k++)
    fprintf(out, " %s", CONTENDERS[k].name);
  fprintf(out, "\nsizes take K, M, G suffixes (powers of 1024)\n"
               "Exit status: 0 done; 1 setup failure (the server); 2 usage.\n");
}

/* --help and --version: what parse_args found. */
static bool opt_help, opt_version;

static bool parse_size(const char *s, size_t *out)
{
  char *end;
  double v = strtod(s, &end);
  double mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = (double)KiB; end++; break;
  case 'm': case 'M': mul = (double)MiB; end++; break;
  case 'g': case 'G': mul = (double)GiB; end++; break;
  default: break;
  }
  if (end == s || *end || v < 0)
    return false;
  *out = (size_t)(v * mul);
  return true;
}

/* Small sizes for a smoke run of a few seconds. */
static void apply_quick(void)
{
  static const struct { const char *name; size_t count, size; long conc; } q[] = {
      {"burst", 40, 2 * MiB, 10}, {"sustained", 0, 0, 10}, {"pressure", 12, 2 * MiB, 12},
      {"mixed", 30, 0, 10},       {"rapid", 100, 0, 1},    {"small", 1000, 0, 10},
      {"bombs", 3, 16 * MiB, 2},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    scenario *sc = &SCENARIOS[scen_index(q[i].name)];
    if (q[i].count)
      sc->count = q[i].count;
    if (q[i].size)
      sc->size = q[i].size;
    sc->conc = q[i].conc;
  }
  SCENARIOS[scen_index("sustained")].seconds = 0.3;
  SCENARIOS[scen_index("pressure")].max_large = 4;
  opt_budget = 8 * MiB;
  opt_runs = 1;
}

/* --name=value or --name value. */
static const char *opt_value(int argc, char **argv, int *i, const char *arg)
{
  const char *eq = strchr(arg, '=');
  if (eq)
    return eq + 1;
  return *i + 1 < argc ? argv[++*i] : NULL;
}

static bool opt_is(const char *arg, const char *name)
{
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* --SCENARIO-FIELD. */
static bool scenario_option(const char *arg, const char *val)
{
  for (size_t i = 0; i < NSCEN; i++) {
    scenario *sc = &SCENARIOS[i];
    size_t n = strlen(sc->name);
    if (strncmp(arg + 2, sc->name, n) != 0 || arg[2 + n] != '-')
      continue;
    const char *field = arg + 3 + n;
    size_t v;
    if (opt_is(field, "count") && parse_size(val, &v) && v > 0)
      sc->count = v, sc->seconds = 0;
    else if (opt_is(field, "size") && parse_size(val, &v))
      sc->size = v;
    else if (opt_is(field, "conc") && parse_size(val, &v) && v > 0)
      sc->conc = (long)v;
    else if (opt_is(field, "seconds") && atof(val) > 0 && sc->request == req_mix)
      sc->seconds = atof(val);
    else if (opt_is(field, "large") && parse_size(val, &v))
      sc->max_large = v;
    else
      return false;
    return true;
  }
  return false;
}

static bool parse_args(int argc, char **argv)
{
  bool any_scen = false, any_cont = false;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--quick") == 0)
      opt_quick = true;
  if (opt_quick)
    apply_quick();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    size_t n;
    if (strcmp(a, "--quick") == 0)
      continue;
    if (strcmp(a, "--csv") == 0) {
      opt_csv = true;
    } else if (strcmp(a, "--no-warmup") == 0) {
      opt_warmup = false;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      opt_help = true;
    } else if (strcmp(a, "--version") == 0) {
      opt_version = true;
    } else if (strncmp(a, "--", 2) != 0 || !(v = opt_value(argc, argv, &i, a))) {
      fprintf(stderr, "bench: bad argument %s; try 'bench --help'\n", a);
      return false;
    } else if (opt_is(a, "--scenario")) {
      int si = scen_index(v);
      if (si < 0) {
        fprintf(stderr, "bench: no scenario %s; try 'bench --help'\n", v);
        return false;
      }
      scen_on[si] = any_scen = true;
    } else if (opt_is(a, "--contender")) {
      int k = 0;
      while (k < NCONT && strcmp(CONTENDERS[k].name, v) != 0)
        k++;
      if (k == NCONT) {
        fprintf(stderr, "bench: no contender %s; try 'bench --help'\n", v);
        return false;
      }
      cont_on[k] = any_cont = true;
    } else if (opt_is(a, "--svg")) {
      opt_svg = v;
    } else if (opt_is(a, "--runs") && parse_size(v, &n) && n >= 1 && n <= 8) {
      opt_runs = (int)n;
    } else if (opt_is(a, "--cap") && parse_size(v, &n) && n > 0) {
      opt_cap = n;
    } else if (opt_is(a, "--budget") && parse_size(v, &n) && n > 0) {
      opt_budget = n;
    } else if (opt_is(a, "--limit") && atof(v) > 0) {
      opt_limit = atof(v);
    } else if (opt_is(a, "--rc-max-large") && parse_size(v, &n)) {
      opt_rc_max_large = n;
    } else if (opt_is(a, "--rc-chunk") && parse_size(v, &n) && n > 0) {
      opt_rc_chunk = n;
    } else if (!scenario_option(a, v)) {
      fprintf(stderr, "bench: bad option or value: %s %s; try 'bench --help'\n", a, v);
      return false;
    }
  }
  for (size_t i = 0; !any_scen && i < NSCEN; i++)
    scen_on[i] = true;
  for (int k = 0; !any_cont && k < NCONT; k++)
    cont_on[k] = true;
  return true;
}

/* ---- Main ----------------------------------------------------------------- */

/* The copy accounting sees the library only if it was linked statically
 * with the wrap; a copy of an empty body makes one memcpy call there. */
static bool library_copies_counted(void)
{
  rc_pool *p;
  rc_response *r;
  if (rc_pool_new(NULL, &p) != RC_OK)
    return false;
  if (rc_response_new(p, NULL, &r) != RC_OK) {
    rc_pool_free(p);
    return false;
  }
  uint64_t before = t_copy_calls;
  free(rc_body_dup(r, NULL));
  bool seen = t_copy_calls > before;
  rc_response_free(r);
  rc_pool_free(p);
  return seen;
}

static void run_scenario(size_t si)
{
  const scenario *sc = &SCENARIOS[si];
  bool chart = strcmp(sc->name, "burst") == 0;
  tally t;
  /* One request per distinct URL fills the server's caches first. */
  scenario prime = *sc;
  prime.count = sc->distinct;
  prime.seconds = 0;
  prime.conc = 1;
  run_once(&prime, K_DISCARD, &t, false);
  for (int pass = 0; pass < opt_runs; pass++) {
    for (int j = 0; j < NCONT; j++) {
      int k = pass % 2 ? NCONT - 1 - j : j;
      if (!cont_on[k])
        continue;
      fprintf(stderr, "%s: %-12s run %d/%d ... ", sc->name, CONTENDERS[k].name,
              pass + 1, opt_runs);
      fflush(stderr);
      run_once(sc, k, &t, chart);
      fprintf(stderr, "%.2f s, %zu ok, %zu failed, peak +%.0f MiB\n", t.wall, t.done,
              t.failed, signed_mib(t.peak, t.rss0));
      tally *best = &results[si][k];
      double w = per_req(t.wall, &t);
      int runs = best->runs;
      double walls[8];
      memcpy(walls, best->wall_runs, sizeof walls);
      if (!best->ran || (!isnan(w) && (isnan(per_req(best->wall, best)) ||
                                       w < per_req(best->wall, best)))) {
        free(best->series);
        *best = t;
      } else {
        free(t.series);
      }
      memcpy(best->wall_runs, walls, sizeof walls);
      best->runs = runs;
      best->wall_runs[best->runs++] = w;
    }
  }
}

int main(int argc, char **argv)
{
  if (!parse_args(argc, argv))
    return 2;  /* parse_args said why, on one line */
  if (opt_help || opt_version) {
    if (opt_help)
      usage(stdout);
    else
      printf("bench (respchain) %s\n%s\n", rc_version(), curl_version());
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  srv = ts_start();
  if (!srv) {
    fprintf(stderr, "bench: cannot start the server\n");
    return 1;
  }
  char load_start[64], load_end[64];
  loadavg(load_start, sizeof load_start);
  mon_start();
  bool lib_counted = library_copies_counted();
  if (!lib_counted)
    fprintf(stderr, "bench: warning: respchain's memcpy calls are not counted "
                    "(link librespchain.a statically with -Wl,--wrap=memcpy)\n");
  fprintf(stderr, "bench: %ld cores, curl %s, cap %.3g MiB, budget %.3g MiB, "
                  "%d run(s) per contender\n",
          sysconf(_SC_NPROCESSORS_ONLN), curl_version_info(CURLVERSION_NOW)->version,
          mib((double)opt_cap), mib((double)opt_budget), opt_runs);

  if (opt_warmup) {
    tally t;
    fprintf(stderr, "warm-up burst (one-copy) ... ");
    fflush(stderr);
    run_once(&SCENARIOS[scen_index("burst")], K_ONECOPY, &t, false);
    fprintf(stderr, "%.2f s\n", t.wall);
  }
  if (opt_csv)
    print_csv_header();
  for (size_t si = 0; si < NSCEN; si++) {
    if (!scen_on[si])
      continue;
    run_scenario(si);
    if (opt_csv)
      print_csv(si);
    else
      print_scenario(si);
  }
  int bi = scen_index("burst");
  if (scen_on[bi] && opt_svg[0]) {
    if (write_svg(opt_svg, (size_t)bi))
      fprintf(stderr, "bench: burst chart written to %s\n", opt_svg);
    else
      fprintf(stderr, "bench: cannot write %s\n", opt_svg);
  }
  report_targets(opt_csv ? stderr : stdout);
  loadavg(load_end, sizeof load_end);
  fprintf(opt_csv ? stderr : stdout,
          "\nMachine: %ld cores, curl %s; /proc/loadavg at start: %s; at end: %s\n",
          sysconf(_SC_NPROCESSORS_ONLN), curl_version_info(CURLVERSION_NOW)->version,
          load_start, load_end);
  if (!opt_csv)
    printf("\nColumns: ratios are per completed request, best of %d run(s); cpu = "
           "process (client + server threads), drv cpu = the driving thread; "
           "faults/MiB = its minor page faults per MiB of body; "
           "peakΔ/keptΔ/trimΔ = RSS above the contender's start (peak during "
           "transfers; kept with its pool alive; after its trim + malloc_trim(0)); "
           "alloc/B, copy/B per delivered body byte (copy = memcpy%s + realloc "
           "moves of heap blocks); spread = wall difference between runs.\n",
           opt_runs, lib_counted ? "" : ", respchain's NOT counted");

  size_t failed = 0;
  for (size_t si = 0; si < NSCEN; si++)
    for (int k = 0; k < NCONT; k++) {
      failed += results[si][k].failed;
      free(results[si][k].series);
    }
  mon_shutdown();
  ts_stop(srv);
  curl_global_cleanup();
  if (failed)
    fprintf(stderr, "bench: %zu transfers failed their check\n", failed);
  return failed ? 1 : 0;
}
