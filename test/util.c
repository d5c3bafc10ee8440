#include "util.h"
#include "pool.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each block carries its size in front, so that frees can be counted. */
typedef union {
  size_t size;
  max_align_t align;
} head;

static int should_fail(counting_alloc *ca)
{
  long n = __atomic_add_fetch(&ca->calls, 1, __ATOMIC_SEQ_CST);
  return ca->fail_at && n == ca->fail_at;
}

static void *ca_realloc(void *p, size_t n, void *ud)
{
  counting_alloc *ca = ud;
  if (should_fail(ca))
    return NULL;
  head *h = p ? (head *)p - 1 : NULL;
  size_t old = h ? h->size : 0;
  head *nh = realloc(h, sizeof(head) + n);
  if (!nh)
    return NULL;
  nh->size = n;
  __atomic_add_fetch(&ca->bytes_requested, n, __ATOMIC_SEQ_CST);
  size_t live = __atomic_add_fetch(&ca->live_bytes, n - old, __ATOMIC_SEQ_CST);
  size_t peak = __atomic_load_n(&ca->peak_bytes, __ATOMIC_SEQ_CST);
  while (live > peak && !__atomic_compare_exchange_n(&ca->peak_bytes, &peak, live, 0,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    ;
  if (!p) {
    __atomic_add_fetch(&ca->live, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&ca->total, 1, __ATOMIC_SEQ_CST);
  }
  return nh + 1;
}

static void *ca_malloc(size_t n, void *ud) { return ca_realloc(NULL, n, ud); }

static void ca_free(void *p, void *ud)
{
  counting_alloc *ca = ud;
  if (!p)
    return;
  __atomic_sub_fetch(&ca->live, 1, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&ca->live_bytes, ((head *)p - 1)->size, __ATOMIC_SEQ_CST);
  free((head *)p - 1);
}

void counting_alloc_init(counting_alloc *ca)
{
  memset(ca, 0, sizeof *ca);
  ca->a.malloc = ca_malloc;
  ca->a.realloc = ca_realloc;
  ca->a.free = ca_free;
  ca->a.ud = ca;
}

rc_pool *pool_with(counting_alloc *ca, size_t chunk)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.allocator = &ca->a;
  if (chunk)
    cfg.chunk_size = chunk;
  rc_pool *p = NULL;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  rc__pool_exact(p);
  return p;
}

rc_pool *exact_pool(void)
{
  rc_pool *p = NULL;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc__pool_exact(p);
  return p;
}

rc_pool *pool_with_budget(size_t budget, rc_overflow overflow)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = budget;
  cfg.overflow = overflow;
  rc_pool *p = NULL;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  return p;
}

size_t feed(rc_response *resp, const char *const *lines, const char *body, size_t body_len,
            size_t chunk)
{
  for (; lines && *lines; lines++) {
    size_t n = strlen(*lines);
    size_t r = rc_header_cb((char *)*lines, 1, n, resp);
    if (r != n)
      return r;
  }
  if (chunk == 0)
    chunk = body_len ? body_len : 1;
  for (size_t off = 0; off < body_len; off += chunk) {
    size_t n = body_len - off < chunk ? body_len - off : chunk;
    size_t r = rc_write_cb((char *)body + off, 1, n, resp);
    if (r != n)
      return r;
  }
  return 0;
}

void fill_pattern(char *dst, size_t n, unsigned seed)
{
  unsigned x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    dst[i] = (char)('A' + (x >> 16) % 26);
  }
}

rc_pool_stats pool_stats(rc_pool *pool)
{
  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  return st;
}

rc_response *new_response(rc_pool *pool, size_t max_body, rc_cap_policy policy)
{
  rc_limits lim;
  rc_limits_init(&lim);
  if (max_body)
    lim.max_body = max_body;
  lim.on_cap = policy;
  rc_response *r = NULL;
  ck_assert_int_eq(rc_response_new(pool, &lim, &r), RC_OK);
  return r;
}

int curl_at_least(unsigned int num)
{
  return curl_version_info(CURLVERSION_NOW)->version_num >= num;
}

int curl_holds_streams(void)
{
  return curl_at_least(0x080e00) && (!curl_at_least(0x081500) || RC__HAVE_PREREQ);
}

int curl_loses_paused_streams(void) { return !curl_at_least(0x075800); }

int curl_buffers_streams(void) { return curl_at_least(0x080100) && !curl_at_least(0x080700); }

int curl_says_timeout(const char *text)
{
  return strstr(text, "timed out") || strstr(text, "timeout") || strstr(text, "Timeout") ||
         strstr(text, "time-out");
}

int curl_keeps_back_fresh(rc_overflow mode)
{
  return !curl_holds_streams() &&
         (curl_buffers_streams() || curl_loses_paused_streams() || mode == RC_OVERFLOW_WAIT);
}

int run_suite(Suite *s)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int fds_open_in(const char *dir)
{
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  size_t len = strlen(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char link[300], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t t = readlink(link, target, sizeof target - 1);
    if (t <= 0)
      continue;
    target[t] = '\0';
    n += strncmp(target, dir, len) == 0 && target[len] == '/' && !strchr(target + len + 1, '/');
  }
  closedir(d);
  return n;
}
