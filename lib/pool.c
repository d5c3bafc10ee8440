/* The pool: idle blocks kept in two LIFO stacks (small and large) under one
 * mutex, small ones bounded by bytes and large ones by count; growth of a
 * response's block, planned and then carried out, every block charged to
 * the pool's budget (budget.c), which counts the bytes held; the
 * process-wide default pool.
 *
 * Allocations happen outside the lock; list and counter updates, and the
 * freeing of a block the bounds do not keep, under it. The pool's lock and
 * the budget's are never held together. */
#include "pool.h"
#include "budget.h"
#include "debug.h"
#include "demand.h"
#include "shelf.h"

#include <pthread.h>
#include <stddef.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer, idle blocks are poisoned, and a given-back block
 * waits in a short quarantine before it may be handed out again: a view
 * read after its response was reset is then reported, whether its block is
 * idle or would already have been another response's. */
#if defined(__SANITIZE_ADDRESS__)
#define RC__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RC__ASAN 1
#endif
#endif
#ifdef RC__ASAN
#include <sanitizer/asan_interface.h>
#define POISON(b)   ASAN_POISON_MEMORY_REGION((b)->data, (b)->cap)
#define UNPOISON(b) ASAN_UNPOISON_MEMORY_REGION((b)->data, (b)->cap)
#define QUARANTINE  4
#else
#define POISON(b)   ((void)(b))
#define UNPOISON(b) ((void)(b))
#define QUARANTINE  1 /* unused: a block goes idle at once */
#endif

#define LARGE_FLOOR 2 /* idle large blocks kept when all is quiet */

struct rc_pool {
  pthread_mutex_t lock;
  rc_allocator alloc;
  rc_pool_config cfg; /* cfg.allocator unused: see alloc */
  rc__blk *small;     /* idle stacks, most recently given back first */
  rc__blk *large;
  size_t small_bytes; /* capacity of the idle small blocks */
  size_t refs;        /* the creator's, plus one per response */
  int is_default;
  char *spill_dir;  /* from the allocator; NULL or "": $TMPDIR or /tmp */
  rc_pool_stats st; /* the idle and block counters */
  rc__budget budget;
  rc__blk *quarantine[QUARANTINE]; /* given-back blocks, oldest first */
  size_t quarantined;
  int exact;         /* no quarantine: see rc__pool_exact */
  rc__demand demand; /* large blocks held lately: how many to keep idle */
  rc__shelf shelf;   /* idle spill files */
};

static void *std_malloc(size_t n, void *ud)
{
  (void)ud;
  return malloc(n);
}
static void *std_realloc(void *p, size_t n, void *ud)
{
  (void)ud;
  return realloc(p, n);
}
static void std_free(void *p, void *ud)
{
  (void)ud;
  free(p);
}

static const rc_allocator std_allocator = {std_malloc, std_realloc, std_free, NULL};

void rc_pool_config_init(rc_pool_config *cfg)
{
  if (!cfg)
    return;
  cfg->chunk_size = RC_DEFAULT_CHUNK_SIZE;
  cfg->large_threshold = RC_DEFAULT_LARGE_THRESHOLD;
  cfg->max_large = RC_DEFAULT_MAX_LARGE;
  cfg->max_idle_small = RC_DEFAULT_MAX_IDLE_SMALL;
  cfg->max_buffer = RC_DEFAULT_MAX_BUFFER;
  cfg->budget = 0;
  cfg->overflow = RC_OVERFLOW_AUTO;
  cfg->max_wait_ms = RC_DEFAULT_MAX_WAIT_MS;
  cfg->spill_dir = NULL;
  cfg->allocator = NULL;
}

static int is_large(const rc_pool *p, size_t cap) { return cap >= p->cfg.large_threshold; }

enum { FREED, KEPT_SMALL, KEPT_LARGE };

/* Decides whether the bounds let b stay idle (counting it) or frees it.
 * b is in no list. Lock held. */
static int retain(rc_pool *p, rc__blk *b)
{
  if (b->cap <= p->cfg.max_buffer) {
    if (is_large(p, b->cap) && p->st.idle_large < rc__demand_keep(&p->demand, p->cfg.max_large)) {
      p->st.idle_large++;
      p->st.bytes_idle += b->cap;
      return KEPT_LARGE;
    }
    if (!is_large(p, b->cap) && b->cap <= p->cfg.max_idle_small - p->small_bytes) {
      p->st.idle_small++;
      p->st.bytes_idle += b->cap;
      p->small_bytes += b->cap;
      return KEPT_SMALL;
    }
  }
  p->st.discards++;
  p->alloc.free(b, p->alloc.ud);
  return FREED;
}

/* Takes a block off an idle stack: the most recent one. On the large stack
 * (a few blocks), the most recent whose capacity lies in [need, ceiling] is
 * preferred: it is used whole, neither grown nor cut. Lock held. */
static rc__blk *pop(rc_pool *p, int large, size_t need, size_t ceiling)
{
  rc__blk **top = large ? &p->large : &p->small;
  if (!*top)
    return NULL;
  if (large) {
    for (rc__blk **pp = top; *pp; pp = &(*pp)->next)
      if ((*pp)->cap >= need && (*pp)->cap <= ceiling) {
        top = pp;
        break;
      }
  }
  rc__blk *b = *top;
  *top = b->next;
  b->next = NULL;
  UNPOISON(b);
  p->st.bytes_idle -= b->cap;
  if (large) {
    p->st.idle_large--;
  } else {
    p->st.idle_small--;
    p->small_bytes -= b->cap;
  }
  return b;
}

/* Re-applies the bounds to every idle block after a setting changed,
 * keeping the most recent blocks and their order. Lock held. */
static void enforce_bounds(rc_pool *p)
{
  rc__blk *old[2] = {p->large, p->small};
  rc__blk **tail_large = &p->large, **tail_small = &p->small;
  p->large = p->small = NULL;
  p->st.idle_large = p->st.idle_small = 0;
  p->st.bytes_idle = p->small_bytes = 0;
  for (int i = 0; i < 2; i++) {
    while (old[i]) {
      rc__blk *b = old[i];
      old[i] = b->next;
      b->next = NULL;
      switch (retain(p, b)) {
      case KEPT_LARGE:
        *tail_large = b;
        tail_large = &b->next;
        break;
      case KEPT_SMALL:
        *tail_small = b;
        tail_small = &b->next;
        break;
      default: break;
      }
    }
  }
}

static char *copy_string(const rc_allocator *a, const char *str)
{
  size_t n = strlen(str) + 1;
  char *c = a->malloc(n, a->ud);
  if (c)
    memcpy(c, str, n);
  return c;
}

static rc_code pool_init(rc_pool *p, const rc_pool_config *cfg)
{
  rc_pool_config def;
  if (!cfg) {
    rc_pool_config_init(&def);
    cfg = &def;
  }
  if (cfg->chunk_size == 0 || cfg->large_threshold == 0 || cfg->overflow > RC_OVERFLOW_SPILL)
    return RC_E_INVAL;
  const rc_allocator *a = cfg->allocator ? cfg->allocator : &std_allocator;
  if (!a->malloc || !a->realloc || !a->free)
    return RC_E_INVAL;
  memset(p, 0, sizeof *p);
  p->alloc = *a;
  p->cfg = *cfg;
  p->cfg.allocator = NULL;
  p->cfg.spill_dir = NULL;
  p->refs = 1;
  rc__demand_init(&p->demand, LARGE_FLOOR);
  if (cfg->spill_dir && !(p->spill_dir = copy_string(a, cfg->spill_dir)))
    return RC_E_NOMEM;
  if (pthread_mutex_init(&p->lock, NULL) != 0)
    goto fail;
  if (rc__budget_init(&p->budget, cfg->budget, cfg->overflow, cfg->max_wait_ms, &p->alloc) !=
      RC_OK) {
    pthread_mutex_destroy(&p->lock);
    goto fail;
  }
  if (rc__shelf_init(&p->shelf, &p->alloc, cfg->max_large, cfg->max_buffer) != RC_OK) {
    rc__budget_destroy(&p->budget);
    pthread_mutex_destroy(&p->lock);
    goto fail;
  }
  return RC_OK;
fail:
  if (p->spill_dir)
    a->free(p->spill_dir, a->ud);
  return RC_E_NOMEM;
}

rc_code rc_pool_new(const rc_pool_config *cfg, rc_pool **out)
{
  if (!out)
    return RC_E_INVAL;
  *out = NULL;
  const rc_allocator *a = cfg && cfg->allocator ? cfg->allocator : &std_allocator;
  if (!a->malloc || !a->realloc || !a->free)
    return RC_E_INVAL;
  rc_pool *p = a->malloc(sizeof *p, a->ud);
  if (!p)
    return RC_E_NOMEM;
  rc_code rc = pool_init(p, cfg);
  if (rc != RC_OK) {
    a->free(p, a->ud);
    return rc;
  }
  *out = p;
  return RC_OK;
}

static void pool_destroy(rc_pool *p)
{
  rc_allocator a = p->alloc;
  rc_pool_trim(p);
  rc__shelf_destroy(&p->shelf);
  rc__budget_destroy(&p->budget);
  pthread_mutex_destroy(&p->lock);
  if (p->spill_dir)
    a.free(p->spill_dir, a.ud);
  a.free(p, a.ud);
}

void rc__pool_ref(rc_pool *p)
{
  pthread_mutex_lock(&p->lock);
  p->refs++;
  pthread_mutex_unlock(&p->lock);
}

void rc__pool_unref(rc_pool *p)
{
  pthread_mutex_lock(&p->lock);
  size_t left = --p->refs;
  pthread_mutex_unlock(&p->lock);
  if (left == 0)
    pool_destroy(p);
}

rc_code rc_pool_free(rc_pool *p)
{
  if (!p)
    return RC_OK;
  rc_pool_stats st;
  rc__budget_stats(&p->budget, &st);
  if (!p->is_default)
    rc__pool_unref(p); /* st.deferred's responses keep it */
  return st.deferred ? RC_E_KEPT_BACK : RC_OK;
}

static rc_pool default_pool;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_init(void)
{
  if (pool_init(&default_pool, NULL) != RC_OK) {
    fputs("respchain: cannot create the default pool\n", stderr);
    abort();
  }
  default_pool.is_default = 1;
}

rc_pool *rc_pool_default(void)
{
  pthread_once(&default_once, default_init);
  return &default_pool;
}

const rc_allocator *rc__pool_allocator(const rc_pool *p) { return &p->alloc; }
struct rc__budget *rc__pool_budget(rc_pool *p) { return &p->budget; }

rc__shelf *rc__pool_shelf(rc_pool *p) { return &p->shelf; }

const char *rc__pool_spill_dir(const rc_pool *p)
{
  if (p->spill_dir && *p->spill_dir)
    return p->spill_dir;
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

/* Takes off the large stack the idle blocks that demand no longer keeps,
 * oldest first, and returns them for freeing outside the lock. Lock held. */
static rc__blk *shed_large(rc_pool *p)
{
  size_t keep = rc__demand_keep(&p->demand, p->cfg.max_large);
  rc__blk *gone = NULL;
  while (p->st.idle_large > keep) {
    rc__blk **pp = &p->large;
    while ((*pp)->next)
      pp = &(*pp)->next;
    rc__blk *b = *pp;
    *pp = NULL;
    p->st.idle_large--;
    p->st.bytes_idle -= b->cap;
    p->st.discards++;
    b->next = gone;
    gone = b;
  }
  return gone;
}

/* Frees the blocks linked from b, outside the lock. */
static void free_chain(rc_pool *p, rc__blk *b)
{
  while (b) {
    rc__blk *next = b->next;
    p->alloc.free(b, p->alloc.ud);
    b = next;
  }
}

/* Frees the blocks that demand shed. Under glibc, once no large block is in
 * use (quiet), the memory they leave inside the heap is handed back to the
 * system (malloc_trim), so that a burst's memory really returns. Not during
 * a burst: pages handed back would fault in again. At most once per decay
 * step, and only when blocks were shed. Only for the malloc family's own
 * pools: a caller's allocator manages its memory itself (it may not be
 * malloc at all), and trimming the whole process's heap for it would be
 * work done for others. */
static void drop_shed(rc_pool *p, rc__blk *b, int quiet)
{
  if (!b)
    return;
  free_chain(p, b);
#ifdef __GLIBC__
  if (quiet && p->alloc.malloc == std_malloc)
    malloc_trim(0);
#else
  (void)quiet;
#endif
}

/* Demand decays with time; idle large blocks follow it. */
void rc__pool_tick(rc_pool *p)
{
  pthread_mutex_lock(&p->lock);
  rc__demand_tick(&p->demand);
  rc__blk *gone = shed_large(p);
  int quiet = p->demand.in_use == 0;
  pthread_mutex_unlock(&p->lock);
  drop_shed(p, gone, quiet);
  rc__shelf_tick(&p->shelf);
}

void rc_pool_trim(rc_pool *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  rc__blk *lists[2] = {p->large, p->small};
  p->large = p->small = NULL;
  p->st.idle_large = p->st.idle_small = 0;
  p->st.bytes_idle = p->small_bytes = 0;
  rc__demand_forget(&p->demand);
  rc__blk *held[QUARANTINE];
  size_t nheld = p->quarantined;
  memcpy(held, p->quarantine, nheld * sizeof *held);
  p->quarantined = 0;
  pthread_mutex_unlock(&p->lock);
  for (size_t i = 0; i < nheld; i++)
    p->alloc.free(held[i], p->alloc.ud);
  free_chain(p, lists[0]);
  free_chain(p, lists[1]);
  rc__shelf_clear(&p->shelf);
}

void rc_pool_stats_get(rc_pool *p, rc_pool_stats *out)
{
  if (!out)
    return;
  if (!p) {
    memset(out, 0, sizeof *out);
    return;
  }
  rc__pool_tick(p);
  pthread_mutex_lock(&p->lock);
  *out = p->st;
  pthread_mutex_unlock(&p->lock);
  rc__budget_stats(&p->budget, out);
}

void rc_pool_config_get(rc_pool *p, rc_pool_config *cfg)
{
  if (!cfg)
    return;
  if (!p) {
    memset(cfg, 0, sizeof *cfg);
    return;
  }
  pthread_mutex_lock(&p->lock);
  *cfg = p->cfg;
  cfg->spill_dir = p->spill_dir;
  pthread_mutex_unlock(&p->lock);
  cfg->budget = rc__budget_limit(&p->budget);
}

/* Sets the field at offset in the configuration and re-applies the bounds. */
static rc_code set_field(rc_pool *p, size_t offset, size_t value, int nonzero)
{
  if (!p || (nonzero && value == 0))
    return RC_E_INVAL;
  pthread_mutex_lock(&p->lock);
  *(size_t *)((char *)&p->cfg + offset) = value;
  enforce_bounds(p);
  size_t max_files = p->cfg.max_large, max_size = p->cfg.max_buffer;
  pthread_mutex_unlock(&p->lock);
  rc__shelf_bounds(&p->shelf, max_files, max_size);
  return RC_OK;
}

rc_code rc_pool_set_budget(rc_pool *p, size_t bytes)
{
  if (!p)
    return RC_E_INVAL;
  rc__budget_set_limit(&p->budget, bytes);
  return RC_OK;
}

#define FIELD(name) offsetof(rc_pool_config, name)
rc_code rc_pool_set_chunk_size(rc_pool *p, size_t v)
{
  return set_field(p, FIELD(chunk_size), v, 1);
}
rc_code rc_pool_set_large_threshold(rc_pool *p, size_t v)
{
  return set_field(p, FIELD(large_threshold), v, 1);
}
rc_code rc_pool_set_max_large(rc_pool *p, size_t v) { return set_field(p, FIELD(max_large), v, 0); }
rc_code rc_pool_set_max_idle_small(rc_pool *p, size_t v)
{
  return set_field(p, FIELD(max_idle_small), v, 0);
}
rc_code rc_pool_set_max_buffer(rc_pool *p, size_t v)
{
  return set_field(p, FIELD(max_buffer), v, 0);
}
#undef FIELD

/* The capacity to grow old_cap to for need bytes: by at least one chunk and
 * at least an eighth of old_cap (so an 8 MiB body takes some 40 resizes, not
 * 256), in whole chunks, never past ceiling. The slack is at most an eighth
 * plus a chunk; an honest declared size (the ceiling) ends exact. */
static size_t next_capacity(size_t need, size_t old_cap, size_t chunk, size_t ceiling)
{
  size_t want = old_cap + old_cap / 8;
  if (want < old_cap || want < need)
    want = need;
  size_t steps = want / chunk + (want % chunk != 0);
  size_t cap = steps <= SIZE_MAX / chunk ? steps * chunk : SIZE_MAX;
  return cap < ceiling ? cap : ceiling;
}

/* Resizes b (NULL: allocates) to cap bytes through the allocator. */
static rc__blk *blk_resize(rc_pool *p, rc__blk *b, size_t cap)
{
  if (cap > SIZE_MAX - sizeof(rc__blk))
    return NULL;
  rc__blk *nb = p->alloc.realloc(b, sizeof(rc__blk) + cap, p->alloc.ud);
  if (nb) {
    nb->next = NULL;
    nb->cap = cap;
    if (!b)
      nb->counted = 0;
  }
  return nb;
}

/* Puts b on its idle stack, or frees it, by the bounds. Lock held. */
static void push_idle(rc_pool *p, rc__blk *b)
{
  b->next = NULL;
  int where = retain(p, b);
  if (where == KEPT_LARGE) {
    b->next = p->large;
    p->large = b;
  } else if (where == KEPT_SMALL) {
    b->next = p->small;
    p->small = b;
  }
  if (where != FREED)
    POISON(b);
}

/* A block a response gave back: idle at once, or (under AddressSanitizer)
 * after the quarantine, which the oldest block then leaves. Lock held. */
static void give_back(rc_pool *p, rc__blk *b)
{
#ifdef RC__ASAN
  POISON(b);
  if (p->exact) {
    push_idle(p, b);
    return;
  }
  if (p->quarantined == QUARANTINE) {
    push_idle(p, p->quarantine[0]);
    memmove(p->quarantine, p->quarantine + 1, (QUARANTINE - 1) * sizeof *p->quarantine);
    p->quarantined--;
  }
  p->quarantine[p->quarantined++] = b;
#else
  push_idle(p, b);
#endif
}

void rc__pool_exact(rc_pool *p)
{
  pthread_mutex_lock(&p->lock);
  p->exact = 1;
  for (size_t i = 0; i < p->quarantined; i++)
    push_idle(p, p->quarantine[i]);
  p->quarantined = 0;
  pthread_mutex_unlock(&p->lock);
}

/* b is given back: if it counted as a large block in use, no longer. The
 * flag, not the threshold now, decides: the threshold may have changed
 * since it was taken. Lock held. */
static void uncount(rc_pool *p, rc__blk *b)
{
  if (b->counted) {
    rc__demand_give(&p->demand);
    b->counted = 0;
  }
}

size_t rc__pool_plan(rc_pool *p, const rc__blk *b, const rc__grow *g, rc__plan *plan)
{
  size_t need = g->need, ceiling = g->ceiling < g->need ? g->need : g->ceiling;
  RC__ASSERT(!b || g->used <= b->cap);
  plan->idle = NULL;
  plan->more = 0;
  plan->cap = b ? b->cap : 0;
  if (b && b->cap >= need)
    return 0;
  size_t old_cap = b ? b->cap : 0;

  /* Under the lock: choose the capacity, and the idle block if one serves.
   * A first block, or a small block that must become large, comes from the
   * matching idle stack when it has one: memory already resident. One
   * larger than the ceiling is cut down to it, so that a response never
   * holds (nor counts) more than it may use. */
  pthread_mutex_lock(&p->lock);
  size_t cap = next_capacity(need, old_cap, p->cfg.chunk_size, ceiling);
  size_t want = cap > g->hint ? cap : g->hint;
  rc__blk *idle = NULL;
  if (!b || (is_large(p, want) && !is_large(p, b->cap)))
    idle = pop(p, is_large(p, want), need, ceiling);
  if (idle && idle->cap >= need)
    cap = idle->cap <= ceiling ? idle->cap : ceiling;
  pthread_mutex_unlock(&p->lock);
  plan->idle = idle;
  plan->cap = cap;
  plan->more = cap - old_cap;
  return plan->more;
}

void rc__pool_abandon(rc_pool *p, rc__plan *plan)
{
  if (plan->idle) {
    pthread_mutex_lock(&p->lock);
    push_idle(p, plan->idle);
    pthread_mutex_unlock(&p->lock);
  }
  plan->idle = NULL;
  plan->more = 0;
}

rc_code rc__pool_carry_out(rc_pool *p, rc__blk **bp, size_t used, rc__plan *plan)
{
  rc__blk *b = *bp, *idle = plan->idle;
  size_t cap = plan->cap;
  if (plan->more == 0)
    return RC_OK;
  /* Allocate. realloc keeps the used bytes of a grown block. */
  rc__blk *nb = idle && idle->cap == cap ? idle : blk_resize(p, idle ? idle : b, cap);
  if (!nb) {
    rc__pool_abandon(p, plan); /* unchanged: back it goes */
    return RC_E_NOMEM;
  }
  if (idle && b)
    memcpy(nb->data, b->data, used); /* the small block's bytes move once */
  rc__budget_charge(&p->budget, plan->more);

  pthread_mutex_lock(&p->lock);
  if (!b || idle) {
    p->st.acquisitions++;
    p->st.reuses += idle != NULL;
    p->st.fresh += idle == NULL;
  }
  if (is_large(p, nb->cap) && !nb->counted) {
    rc__demand_take(&p->demand);
    nb->counted = 1; /* given back by whichever put sees the flag */
  }
  if (idle && b) {
    uncount(p, b);
    p->st.releases++;
    give_back(p, b); /* its bytes were netted out of the growth above */
  }
  pthread_mutex_unlock(&p->lock);
  plan->idle = NULL;
  plan->more = 0;
  *bp = nb;
  return RC_OK;
}

rc_code rc__pool_grow(rc_pool *p, rc__blk **bp, const rc__grow *g)
{
  rc__plan plan;
  rc__pool_plan(p, *bp, g, &plan);
  return rc__pool_carry_out(p, bp, g->used, &plan);
}

void rc__pool_put(rc_pool *p, rc__blk *b)
{
  if (!b)
    return;
  size_t cap = b->cap;
  pthread_mutex_lock(&p->lock);
  p->st.releases++;
  uncount(p, b);
  rc__demand_tick(&p->demand);
  rc__blk *gone = shed_large(p);
  give_back(p, b);
  pthread_mutex_unlock(&p->lock);
  drop_shed(p, gone, 0);
  rc__shelf_tick(&p->shelf); /* idle spill files decay as blocks do */
  rc__budget_credit(&p->budget, cap); /* after: a woken waiter finds it idle */
}
