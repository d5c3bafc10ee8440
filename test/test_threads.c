/* Stress: 8 threads x 10000 real transfers on one pool, responses reset and
 * reused, large bodies spilled to files the pool keeps and lends again,
 * runtime setter calls in the mix; afterwards every acquisition was
 * released, retention is within the bounds in force, and the pool's end
 * closed every spill file. Run under ThreadSanitizer in CI. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define THREADS   8
#define TRANSFERS 10000

static rc_pool *pool;

static const struct {
  const char *path;
  size_t n;
} mix[] = {
    {"/bytes?n=1024", 1024},
    {"/bytes?n=100", 100},
    {"/gzip?n=20000&coding=gzip", 20000},
    {"/bytes?n=70000&te=chunked", 70000},
    {"/status?code=204", 0},
    {"/bytes?n=600000", 600000}, /* large: spilled (MAX_MEMORY) */
};

#define MAX_MEMORY (256 * 1024)

static void *worker(void *arg)
{
  unsigned id = (unsigned)(uintptr_t)arg;
  char urls[sizeof mix / sizeof mix[0]][128];
  for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++)
    ts_url(srv, mix[i].path, urls[i], sizeof urls[i]);
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_memory = MAX_MEMORY;
  rc_response *r;
  if (rc_response_new(pool, &lim, &r) != RC_OK)
    return (void *)"response";
  CURL *e = curl_easy_init();
  rc_attach(r, e);
  unsigned x = id * 2654435761u + 1;
  for (int i = 0; i < TRANSFERS; i++) {
    x = x * 1103515245u + 12345u;
    /* Mostly small; a large one now and then. */
    size_t pick = (x >> 16) % 64;
    size_t k = pick < 60 ? pick % 5 : 5;
    curl_easy_setopt(e, CURLOPT_URL, urls[k]);
    CURLcode cc = curl_easy_perform(e);
    if (rc_result(r, cc) != RC_OK || rc_body(r).len != mix[k].n)
      return (void *)"transfer";
    if (rc_body_spilled(r) != (mix[k].n > MAX_MEMORY))
      return (void *)"spill";
    if (mix[k].n && (unsigned char)rc_body(r).ptr[mix[k].n - 1] != ts_pattern_byte(mix[k].n - 1))
      return (void *)"body";
    if (i % 97 == 0) {
      rc_view f;
      if (rc_full_response(r, &f) != RC_OK)
        return (void *)"full";
    }
    rc_response_reset(r);
    if ((unsigned)i % 1000 == id * 100) {
      /* Settings change under the other threads' feet. */
      rc_pool_set_max_large(pool, (x >> 8) % 8);
      rc_pool_set_max_idle_small(pool, ((x >> 4) % 4) << 20);
      rc_pool_set_chunk_size(pool, ((x >> 12) % 4 + 1) * 8192);
      rc_pool_set_max_buffer(pool, (x >> 6) % 2 ? RC_DEFAULT_MAX_BUFFER : 512 * 1024);
      if ((unsigned)i % 4000 == id * 100)
        rc_pool_trim(pool);
    }
  }
  curl_easy_cleanup(e);
  rc_response_free(r);
  return NULL;
}

/* Where the pool's spill files go: $TMPDIR (if not empty), else /tmp. */
static const char *spill_dir(void)
{
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

START_TEST(many_threads_one_pool)
{
  int spill_files = fds_open_in(spill_dir());
  ck_assert_int_eq(rc_pool_new(NULL, &pool), RC_OK);
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, worker, (void *)i), 0);
  for (int i = 0; i < THREADS; i++) {
    void *err;
    pthread_join(t[i], &err);
    ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
  }
  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  rc_pool_config cfg;
  rc_pool_config_get(pool, &cfg);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_uint_eq(st.acquisitions, st.releases);
  ck_assert_uint_eq(st.acquisitions, st.reuses + st.fresh);
  ck_assert_uint_gt(st.reuses, st.fresh);
  ck_assert_uint_le(st.idle_large, cfg.max_large);
  ck_assert_uint_le(st.bytes_idle, cfg.max_large * cfg.max_buffer + cfg.max_idle_small);
  ck_assert_uint_gt(st.spills, 0);
  rc_pool_free(pool);
  ck_assert_int_eq(fds_open_in(spill_dir()), spill_files);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("threads");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 1800);
  tcase_add_test(tc, many_threads_one_pool);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
