/* Unit tests of the pool: growth steps, retention bounds, reuse order,
 * setters, accounting, reference counting, allocation failure, threads. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "pool.h"
#include "util.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static rc__blk *grab(rc_pool *p, size_t need, size_t ceiling, size_t hint)
{
  rc__blk *b = NULL;
  ck_assert_int_eq(rc__pool_grow(p, &b, &(rc__grow){0, need, ceiling, hint}), RC_OK);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_ge(b->cap, need);
  return b;
}

START_TEST(config_defaults)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  ck_assert_uint_eq(cfg.chunk_size, 32 * KiB);
  ck_assert_uint_eq(cfg.large_threshold, 512 * KiB);
  ck_assert_uint_eq(cfg.max_large, 64);
  ck_assert_uint_eq(cfg.max_buffer, 8 * MiB + 1);
  ck_assert_uint_eq(cfg.budget, 0);
  ck_assert_ptr_null(cfg.allocator);

  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_pool_config got;
  rc_pool_config_get(p, &got);
  ck_assert_uint_eq(got.chunk_size, cfg.chunk_size);
  ck_assert_uint_eq(got.max_idle_small, cfg.max_idle_small);
  rc_pool_free(p);

  cfg.chunk_size = 0;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_E_INVAL);
  ck_assert_ptr_null(p);
  rc_allocator partial = {NULL, NULL, NULL, NULL};
  rc_pool_config_init(&cfg);
  cfg.allocator = &partial;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_new(NULL, NULL), RC_E_INVAL);
}
END_TEST

/* Growth goes in whole chunks, one chunk at a time while small, then by an
 * eighth of the size: never past the ceiling, never doubling. */
START_TEST(growth_in_steps)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 32 * KiB);
  rc__blk *b = NULL;
  size_t ceiling = 8 * MiB + 1, resizes = 0, old = 0;
  for (size_t need = 1; need <= ceiling; need += 16 * KiB) {
    ck_assert_int_eq(rc__pool_grow(p, &b, &(rc__grow){0, need, ceiling, 0}), RC_OK);
    if (b->cap == old)
      continue;
    resizes++;
    ck_assert_uint_ge(b->cap, need);
    if (b->cap != ceiling)
      ck_assert_uint_eq(b->cap % (32 * KiB), 0);
    /* No more than one chunk past the larger of the need and an eighth. */
    size_t bound = (need > old + old / 8 ? need : old + old / 8) + 32 * KiB;
    ck_assert_uint_le(b->cap, bound);
    if (old <= 256 * KiB)
      ck_assert_uint_le(b->cap, (need + 32 * KiB - 1) / (32 * KiB) * 32 * KiB);
    old = b->cap;
  }
  ck_assert_int_eq(rc__pool_grow(p, &b, &(rc__grow){0, ceiling, ceiling, 0}), RC_OK);
  ck_assert_uint_eq(b->cap, ceiling);
  ck_assert_uint_le(resizes, 45); /* not 256 one-chunk steps */
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, ceiling);
  ck_assert_uint_eq(pool_stats(p).peak_in_use, ceiling);
  rc__pool_put(p, b);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* A large block that fits whole is preferred to the most recent one. */
START_TEST(reuse_prefers_fitting_large)
{
  rc_pool *p;
  p = exact_pool();
  rc__blk *fits = grab(p, 8 * MiB + 1, 8 * MiB + 1, 0);
  rc__blk *small = grab(p, 1 * MiB, 1 * MiB, 0);
  rc__pool_put(p, fits);
  rc__pool_put(p, small); /* the most recent */
  ck_assert_ptr_eq(grab(p, 8 * MiB + 1, 8 * MiB + 1, 8 * MiB + 1), fits);
  ck_assert_ptr_eq(grab(p, 700 * KiB, 1 * MiB, 1 * MiB), small);
  ck_assert_uint_eq(pool_stats(p).reuses, 2);
  rc__pool_put(p, fits);
  rc__pool_put(p, small);
  rc_pool_free(p);
}
END_TEST

/* A reused idle block larger than the caller's ceiling is cut down to it. */
START_TEST(reuse_cut_to_ceiling)
{
  rc_pool *p;
  p = exact_pool();
  rc__pool_put(p, grab(p, 400 * KiB, 400 * KiB, 0));
  rc__blk *b = grab(p, 100, 4097, 0);
  ck_assert_uint_eq(b->cap, 4097);
  ck_assert_uint_eq(pool_stats(p).reuses, 1);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 4097);
  rc__pool_put(p, b);
  /* Within the ceiling, it is taken whole. */
  rc__pool_put(p, grab(p, 1 * MiB, 1 * MiB, 0));
  b = grab(p, 10, 8 * MiB, 1 * MiB);
  ck_assert_uint_eq(b->cap, 1 * MiB);
  rc__pool_put(p, b);
  rc_pool_free(p);
}
END_TEST

/* The bytes written before a growth survive it, also when a small block is
 * swapped for an idle large one. */
START_TEST(growth_keeps_bytes)
{
  rc_pool *p;
  p = exact_pool();
  rc__pool_put(p, grab(p, 1 * MiB, 1 * MiB, 0)); /* one idle large block */
  rc__blk *b = grab(p, 100, 100 * MiB, 0);
  ck_assert_uint_lt(b->cap, 512 * KiB);
  fill_pattern((char *)b->data, 100, 7);
  char want[100];
  fill_pattern(want, 100, 7);
  ck_assert_int_eq(rc__pool_grow(p, &b, &(rc__grow){100, 600 * KiB, 100 * MiB, 0}), RC_OK);
  ck_assert_uint_ge(b->cap, 1 * MiB); /* the idle large block, reused */
  ck_assert_mem_eq(b->data, want, 100);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.reuses, 1);
  ck_assert_uint_eq(st.idle_large, 0);
  ck_assert_uint_eq(st.idle_small, 1); /* the small one went back */
  rc__pool_put(p, b);
  rc_pool_free(p);
}
END_TEST

START_TEST(small_retention_bound)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  ck_assert_int_eq(rc_pool_set_max_idle_small(p, 100 * KiB), RC_OK);
  rc__blk *b[5];
  for (int i = 0; i < 5; i++)
    b[i] = grab(p, 32 * KiB, 32 * KiB, 0);
  for (int i = 0; i < 5; i++)
    rc__pool_put(p, b[i]);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.idle_small, 3); /* 3 x 32 KiB <= 100 KiB */
  ck_assert_uint_eq(st.bytes_idle, 96 * KiB);
  ck_assert_uint_eq(st.discards, 2);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_int_eq(ca.live, 3 + 1); /* three blocks and the pool */
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* Idle large blocks follow demand: after 30 were in use at once, all 30
 * are kept for the next wave (which then allocates nothing), and once the
 * pool has been quiet for 2 s they decay to the floor of 2; rc_pool_trim
 * frees them at once. */
START_TEST(retention_follows_demand)
{
  rc_pool *p = exact_pool();
  rc__blk *b[30];
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 30; i++)
      b[i] = grab(p, 600 * KiB, 8 * MiB, 0);
    for (int i = 0; i < 30; i++)
      rc__pool_put(p, b[i]);
    ck_assert_uint_eq(pool_stats(p).idle_large, 30);
  }
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.fresh, 30);
  ck_assert_uint_eq(st.reuses, 30); /* the second wave: all resident */
  ck_assert_uint_eq(st.discards, 0);
  struct timespec quiet = {2, 200000000};
  nanosleep(&quiet, NULL);
  st = pool_stats(p); /* a call a program makes anyway drives the decay */
  ck_assert_uint_eq(st.idle_large, 2);
  ck_assert_uint_eq(st.discards, 28);
  ck_assert_uint_eq(st.bytes_idle, 2 * 608 * KiB);
  /* A new burst is followed again; trim forgets it at once. */
  for (int i = 0; i < 10; i++)
    b[i] = grab(p, 600 * KiB, 8 * MiB, 0);
  for (int i = 0; i < 10; i++)
    rc__pool_put(p, b[i]);
  ck_assert_uint_eq(pool_stats(p).idle_large, 10);
  rc_pool_trim(p);
  ck_assert_uint_eq(pool_stats(p).idle_large, 0);
  b[0] = grab(p, 600 * KiB, 8 * MiB, 0);
  rc__pool_put(p, b[0]);
  ck_assert_uint_eq(pool_stats(p).idle_large, 1);
  rc_pool_free(p);
}
END_TEST

#ifdef __GLIBC__
#include <malloc.h>

/* The pool's calls of malloc_trim, counted: this definition takes the
 * place of glibc's for the library linked into this program. */
static int trims;
int malloc_trim(size_t pad)
{
  (void)pad;
  trims++;
  return 1;
}
#endif

/* Once a burst's large blocks decay (2 s of quiet), a pool of the malloc
 * family hands the heap's free memory back (malloc_trim); a pool with a
 * caller's allocator never trims the process's heap. */
START_TEST(trim_heap_only_for_malloc)
{
#ifdef __GLIBC__
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *pools[2] = {pool_with(&ca, 0), exact_pool()};
  rc__blk *b[2][10];
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 10; i++)
      b[k][i] = grab(pools[k], 600 * KiB, 8 * MiB, 0);
    for (int i = 0; i < 10; i++)
      rc__pool_put(pools[k], b[k][i]);
  }
  struct timespec quiet = {2, 200000000};
  nanosleep(&quiet, NULL);
  trims = 0;
  ck_assert_uint_eq(pool_stats(pools[0]).idle_large, 2); /* decayed: 8 freed */
  ck_assert_int_eq(trims, 0);
  ck_assert_uint_eq(pool_stats(pools[1]).idle_large, 2);
  ck_assert_int_eq(trims, 1);
  rc_pool_free(pools[0]);
  rc_pool_free(pools[1]);
  ck_assert_int_eq(ca.live, 0);
#endif
}
END_TEST

/* A busy spell longer than the decay step: a block given back while all
 * were in use is still kept for the next taker (the decay is timed from
 * when demand fell, not from when it peaked); and a threshold changed while
 * blocks are held does not skew the count of large blocks in use. */
START_TEST(retention_over_long_transfers)
{
  rc_pool *p = exact_pool();
  rc__blk *b[10];
  for (int i = 0; i < 10; i++)
    b[i] = grab(p, 600 * KiB, 8 * MiB, 0);
  nanosleep(&(struct timespec){0, 400000000}, NULL);
  for (int round = 0; round < 3; round++) {
    rc__pool_put(p, b[round]);
    ck_assert_uint_eq(pool_stats(p).idle_large, 1);
    b[round] = grab(p, 600 * KiB, 8 * MiB, 0);
    nanosleep(&(struct timespec){0, 300000000}, NULL);
  }
  ck_assert_uint_eq(pool_stats(p).reuses, 3);
  ck_assert_uint_eq(pool_stats(p).discards, 0);
  /* Raised threshold: the ten still count as large when given back, so
   * demand falls to nothing and decays to the floor. */
  ck_assert_int_eq(rc_pool_set_large_threshold(p, 1 * MiB), RC_OK);
  for (int i = 0; i < 10; i++)
    rc__pool_put(p, b[i]);
  ck_assert_int_eq(rc_pool_set_large_threshold(p, 512 * KiB), RC_OK);
  ck_assert_uint_eq(pool_stats(p).idle_large, 10);
  nanosleep(&(struct timespec){2, 200000000}, NULL);
  ck_assert_uint_eq(pool_stats(p).idle_large, 2);
  rc_pool_free(p);
}
END_TEST

START_TEST(large_retention_bound)
{
  rc_pool *p;
  p = exact_pool();
  ck_assert_int_eq(rc_pool_set_max_large(p, 10), RC_OK);
  rc__blk *b[50];
  for (int i = 0; i < 50; i++)
    b[i] = grab(p, 600 * KiB, 8 * MiB, 0);
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 50 * 608 * KiB);
  for (int i = 0; i < 50; i++)
    rc__pool_put(p, b[i]);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.idle_large, 10);
  ck_assert_uint_eq(st.discards, 40);
  ck_assert_uint_eq(st.acquisitions, 50);
  ck_assert_uint_eq(st.releases, 50);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  ck_assert_uint_eq(st.bytes_idle, 10 * 608 * KiB);
  rc_pool_free(p);
}
END_TEST

START_TEST(nothing_over_max_buffer_kept)
{
  rc_pool *p;
  p = exact_pool();
  rc__pool_put(p, grab(p, 8 * MiB + 2, 16 * MiB, 0));
  ck_assert_uint_eq(pool_stats(p).idle_large, 0);
  ck_assert_uint_eq(pool_stats(p).discards, 1);
  rc__pool_put(p, grab(p, 8 * MiB + 1, 8 * MiB + 1, 0));
  ck_assert_uint_eq(pool_stats(p).idle_large, 1);
  rc_pool_free(p);
}
END_TEST

/* The most recently released block is handed out first. */
START_TEST(lifo_reuse)
{
  rc_pool *p;
  p = exact_pool();
  rc__blk *a = grab(p, 1000, 1000, 0), *b = grab(p, 1000, 1000, 0);
  rc__pool_put(p, a);
  rc__pool_put(p, b);
  ck_assert_ptr_eq(grab(p, 10, 1000, 0), b); /* a ceiling that keeps them whole */
  ck_assert_ptr_eq(grab(p, 10, 1000, 0), a);
  rc__pool_put(p, a);
  rc__pool_put(p, b);

  rc__blk *l1 = grab(p, 1 * MiB, 1 * MiB, 0), *l2 = grab(p, 1 * MiB, 1 * MiB, 0);
  rc__pool_put(p, l1);
  rc__pool_put(p, l2);
  /* A large hint picks the large stack even for a small first need. */
  ck_assert_ptr_eq(grab(p, 10, 2 * MiB, 1 * MiB), l2);
  ck_assert_ptr_eq(grab(p, 10, 2 * MiB, 1 * MiB), l1);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.reuses, 4);
  ck_assert_uint_eq(st.fresh, 4);
  rc__pool_put(p, l1);
  rc__pool_put(p, l2);
  rc_pool_free(p);
}
END_TEST

START_TEST(trim_frees_idle_only)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc__blk *held = grab(p, 1 * MiB, 1 * MiB, 0);
  rc__pool_put(p, grab(p, 1 * MiB, 1 * MiB, 0));
  rc__pool_put(p, grab(p, 10, 10, 0));
  ck_assert_int_eq(ca.live, 4);
  rc_pool_trim(p);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.bytes_idle, 0);
  ck_assert_uint_eq(st.idle_small + st.idle_large, 0);
  ck_assert_uint_eq(st.bytes_in_use, 1 * MiB);
  ck_assert_int_eq(ca.live, 2);
  held->data[held->cap - 1] = 1; /* still ours */
  rc__pool_put(p, held);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

/* Each setter does what it says, at once. */
START_TEST(setters)
{
  rc_pool *p;
  p = exact_pool();
  rc__blk *b[6];
  for (int i = 0; i < 6; i++)
    b[i] = grab(p, 1 * MiB, 1 * MiB, 0);
  for (int i = 0; i < 6; i++)
    rc__pool_put(p, b[i]);
  ck_assert_uint_eq(pool_stats(p).idle_large, 6);

  ck_assert_int_eq(rc_pool_set_max_large(p, 2), RC_OK);
  ck_assert_uint_eq(pool_stats(p).idle_large, 2);
  /* The two most recent stayed, in order. */
  ck_assert_ptr_eq(grab(p, 1, 1 * MiB, 1 * MiB), b[5]);
  ck_assert_ptr_eq(grab(p, 1, 1 * MiB, 1 * MiB), b[4]);
  rc__pool_put(p, b[4]);
  rc__pool_put(p, b[5]);
  rc_pool_config cfg;
  rc_pool_config_get(p, &cfg);
  ck_assert_uint_eq(cfg.max_large, 2);

  /* A higher threshold turns the idle 1 MiB blocks into small ones, which
   * the small bound then limits. */
  ck_assert_int_eq(rc_pool_set_max_idle_small(p, 1 * MiB), RC_OK);
  ck_assert_int_eq(rc_pool_set_large_threshold(p, 2 * MiB), RC_OK);
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.idle_large, 0);
  ck_assert_uint_eq(st.idle_small, 1);
  ck_assert_uint_eq(st.bytes_idle, 1 * MiB);

  ck_assert_int_eq(rc_pool_set_max_buffer(p, 512 * KiB), RC_OK);
  ck_assert_uint_eq(pool_stats(p).idle_small, 0);
  ck_assert_uint_eq(pool_stats(p).bytes_idle, 0);

  ck_assert_int_eq(rc_pool_set_chunk_size(p, 4 * KiB), RC_OK);
  rc__blk *c = grab(p, 5000, 1 * MiB, 0);
  ck_assert_uint_eq(c->cap, 8 * KiB);
  rc__pool_put(p, c);

  ck_assert_int_eq(rc_pool_set_chunk_size(p, 0), RC_E_INVAL);
  ck_assert_int_eq(rc_pool_set_large_threshold(p, 0), RC_E_INVAL);
  rc_pool_config_get(p, &cfg);
  ck_assert_uint_eq(cfg.chunk_size, 4 * KiB);
  ck_assert_uint_eq(cfg.large_threshold, 2 * MiB);
  ck_assert_uint_eq(cfg.max_idle_small, 1 * MiB);
  ck_assert_uint_eq(cfg.max_buffer, 512 * KiB);

  ck_assert_int_eq(rc_pool_set_max_large(p, 0), RC_OK);
  rc__pool_put(p, grab(p, 3 * MiB, 3 * MiB, 0));
  ck_assert_uint_eq(pool_stats(p).idle_large, 0);
  rc_pool_free(p);
}
END_TEST

/* The pool lives while a response holds it. */
START_TEST(refcount)
{
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc_response *r;
  ck_assert_int_eq(rc_response_new(p, NULL, &r), RC_OK);
  rc_pool_free(p);
  ck_assert_int_gt(ca.live, 0);
  const char *lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, "body", 4, 0), 0);
  rc_response_free(r);
  ck_assert_int_eq(ca.live, 0);
}
END_TEST

START_TEST(default_pool)
{
  rc_pool *d = rc_pool_default();
  ck_assert_ptr_eq(d, rc_pool_default());
  rc_pool_free(d); /* a no-op */
  rc_response *r;
  ck_assert_int_eq(rc_response_new(NULL, NULL, &r), RC_OK);
  const char *lines[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, lines, "body", 4, 0), 0);
  ck_assert_uint_gt(pool_stats(d).bytes_in_use, 0);
  ck_assert_str_eq(rc_body(r).ptr, "body");
  rc_response_free(r);
}
END_TEST

/* Every allocation failure is an error that leaves the pool consistent. */
START_TEST(allocation_failure)
{
  for (long n = 1; n < 20; n++) {
    counting_alloc ca;
    counting_alloc_init(&ca);
    rc_pool_config cfg;
    rc_pool_config_init(&cfg);
    cfg.allocator = &ca.a;
    rc_pool *p = NULL;
    ca.fail_at = n;
    rc_code rc = rc_pool_new(&cfg, &p);
    if (rc != RC_OK) {
      ck_assert_int_eq(rc, RC_E_NOMEM);
      ck_assert_int_eq(ca.live, 0);
      continue;
    }
    rc__blk *b = NULL;
    size_t got = 0;
    for (size_t need = 1000; need <= 200 * KiB; need += 40 * KiB) {
      rc = rc__pool_grow(p, &b, &(rc__grow){0, need, 1 * MiB, 0});
      if (rc != RC_OK) {
        ck_assert_int_eq(rc, RC_E_NOMEM);
        ck_assert_uint_eq(b ? b->cap : 0, got); /* unchanged */
        break;
      }
      got = b->cap;
    }
    ck_assert_uint_eq(pool_stats(p).bytes_in_use, got);
    rc__pool_put(p, b);
    ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
    rc_pool_free(p);
    ck_assert_int_eq(ca.live, 0);
  }
}
END_TEST

struct churn {
  rc_pool *p;
  unsigned seed;
};

static void *churn_thread(void *arg)
{
  struct churn *c = arg;
  unsigned x = c->seed;
  for (int i = 0; i < 2000; i++) {
    x = x * 1103515245u + 12345u;
    size_t need = 1 + (x >> 8) % (900 * KiB);
    rc__blk *b = NULL;
    if (rc__pool_grow(c->p, &b, &(rc__grow){0, need / 2 + 1, 1 * MiB, 0}) != RC_OK)
      return (void *)1;
    b->data[0] = 1;
    if (rc__pool_grow(c->p, &b, &(rc__grow){1, need, 1 * MiB, 0}) != RC_OK || b->data[0] != 1)
      return (void *)1;
    if (i % 500 == 0)
      rc_pool_set_max_large(c->p, (size_t)(i / 500) % 4);
    rc__pool_put(c->p, b);
  }
  return NULL;
}

/* Threads sharing a pool leave it balanced: every acquisition released. */
START_TEST(threads_balance)
{
  rc_pool *p;
  p = exact_pool();
  pthread_t t[8];
  struct churn c[8];
  for (int i = 0; i < 8; i++) {
    c[i].p = p;
    c[i].seed = (unsigned)i + 1;
    ck_assert_int_eq(pthread_create(&t[i], NULL, churn_thread, &c[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    void *ret;
    pthread_join(t[i], &ret);
    ck_assert_ptr_null(ret);
  }
  rc_pool_stats st = pool_stats(p);
  ck_assert_uint_eq(st.acquisitions, st.releases);
  ck_assert_uint_eq(st.acquisitions, st.reuses + st.fresh);
  ck_assert_uint_eq(st.bytes_in_use, 0);
  rc_pool_config cfg;
  rc_pool_config_get(p, &cfg);
  ck_assert_uint_le(st.idle_large, cfg.max_large);
  rc_pool_free(p);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("pool");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, config_defaults);
  tcase_add_test(tc, growth_in_steps);
  tcase_add_test(tc, growth_keeps_bytes);
  tcase_add_test(tc, reuse_cut_to_ceiling);
  tcase_add_test(tc, reuse_prefers_fitting_large);
  tcase_add_test(tc, small_retention_bound);
  tcase_add_test(tc, retention_follows_demand);
  tcase_add_test(tc, trim_heap_only_for_malloc);
  tcase_add_test(tc, retention_over_long_transfers);
  tcase_add_test(tc, large_retention_bound);
  tcase_add_test(tc, nothing_over_max_buffer_kept);
  tcase_add_test(tc, lifo_reuse);
  tcase_add_test(tc, trim_frees_idle_only);
  tcase_add_test(tc, setters);
  tcase_add_test(tc, refcount);
  tcase_add_test(tc, default_pool);
  tcase_add_test(tc, allocation_failure);
  tcase_add_test(tc, threads_balance);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
