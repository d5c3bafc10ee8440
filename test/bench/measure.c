/* Measurement: clocks and CPU, memcpy counted by link-time wrapping, a
 * counting allocator, and a thread sampling resident memory. */
#include "bench.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double mib(double bytes) { return bytes / (double)MiB; }

double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Minor page faults so far (first touches of fresh memory). */
long faults(int who)
{
  struct rusage ru;
  getrusage(who, &ru);
  return ru.ru_minflt;
}

double cpu_s(int who)
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

_Thread_local uint64_t t_copy_bytes, t_copy_calls;

void *__wrap_memcpy(void *dst, const void *src, size_t n)
{
  t_copy_bytes += n;
  t_copy_calls++;
  return __real_memcpy(dst, src, n);
}

/* ---- Counting allocator ------------------------------------------------
 * Used by respchain's pools (as their rc_allocator) and by the baselines for
 * their own buffers; called from the driving thread only. */
counters g_cnt;

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

void *cnt_malloc(size_t n)
{
  g_cnt.alloc_calls++;
  g_cnt.alloc_bytes += n;
  return malloc(n);
}

void *cnt_realloc(void *p, size_t n)
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

static void *rc_cnt_malloc(size_t n, void *ud)
{
  (void)ud;
  return cnt_malloc(n);
}
static void *rc_cnt_realloc(void *p, size_t n, void *ud)
{
  (void)ud;
  return cnt_realloc(p, n);
}
static void rc_cnt_free(void *p, void *ud)
{
  (void)ud;
  free(p);
}

const rc_allocator counting_allocator = {rc_cnt_malloc, rc_cnt_realloc, rc_cnt_free, NULL};

/* ---- Resident memory sampler -------------------------------------------- */

#define SAMPLE_PERIOD_NS 10000000L
#define SAMPLE_CAP       ((size_t)1 << 17) /* about 20 minutes of samples */

static struct {
  pthread_mutex_t lock;
  pthread_t thread;
  bool stop, active;
  double t0;
  rss base, peak; /* bytes */
  sample *buf;
  size_t n;
} mon = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* From /proc/self/statm: resident pages, and shared ones (file-backed). */
rss rss_now(void)
{
  static long page;
  if (!page)
    page = sysconf(_SC_PAGESIZE);
  char text[128];
  rss out = {0, 0};
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0)
    return out;
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  unsigned long size = 0, resident = 0, shared = 0;
  if (got <= 0)
    return out;
  text[got] = '\0';
  if (sscanf(text, "%lu %lu %lu", &size, &resident, &shared) != 3)
    return out;
  out.total = (size_t)resident * (size_t)page;
  out.anon = (size_t)(resident - (shared < resident ? shared : resident)) * (size_t)page;
  return out;
}

/* Lock held. */
static void mon_record(rss now)
{
  if (now.total > mon.peak.total)
    mon.peak.total = now.total;
  if (now.anon > mon.peak.anon)
    mon.peak.anon = now.anon;
  if (mon.n < SAMPLE_CAP)
    mon.buf[mon.n++] =
        (sample){(float)(now_s() - mon.t0), (float)mib((double)now.total - (double)mon.base.total)};
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

void mon_start(void)
{
  mon.buf = calloc(SAMPLE_CAP, sizeof *mon.buf); /* touched now, not mid-run */
  memset(mon.buf, 0, SAMPLE_CAP * sizeof *mon.buf);
  pthread_create(&mon.thread, NULL, sampler_main, NULL);
}

void mon_shutdown(void)
{
  pthread_mutex_lock(&mon.lock);
  mon.stop = true;
  pthread_mutex_unlock(&mon.lock);
  pthread_join(mon.thread, NULL);
  free(mon.buf);
}

void mon_begin(rss *base, double *t0)
{
  pthread_mutex_lock(&mon.lock);
  mon.n = 0;
  mon.t0 = now_s();
  mon.base = mon.peak = rss_now();
  mon_record(mon.base);
  mon.active = true;
  *base = mon.base;
  *t0 = mon.t0;
  pthread_mutex_unlock(&mon.lock);
}

void mon_end(rss *peak, bool keep, sample **series, size_t *n)
{
  pthread_mutex_lock(&mon.lock);
  mon_record(rss_now());
  mon.active = false;
  size_t count = mon.n;
  sample *copy = NULL;
  *peak = mon.peak;
  if (keep && (copy = malloc(count * sizeof *copy)) != NULL)
    for (size_t i = 0; i < count; i++)
      copy[i] = mon.buf[i];
  pthread_mutex_unlock(&mon.lock);
  if (keep) {
    *series = copy;
    *n = copy ? count : 0;
  }
}
