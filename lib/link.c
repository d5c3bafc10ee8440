/* Links: the process-wide table of slots, and tokens that name a slot and
 * its generation. See link.h. */
#include "link.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* A token: the slot's index in its low IDX_BITS, its generation above
 * (never 0, so that no token is NULL). 16 M slots and 2^40 generations per
 * slot on 64-bit systems; 1 M and 4096 on 32-bit ones, where a slot whose
 * generations ran out is never taken again. */
#define IDX_BITS  (UINTPTR_MAX > 0xffffffffu ? 24 : 20)
#define IDX_MASK  (((uintptr_t)1 << IDX_BITS) - 1)
#define GEN_MAX   (UINTPTR_MAX >> IDX_BITS)
#define SEG_BITS  10
#define SEG_SLOTS ((size_t)1 << SEG_BITS)
#define MAX_SEGS  ((size_t)1 << (IDX_BITS - SEG_BITS))
#define NONE      SIZE_MAX

typedef struct slot {
  _Atomic uintptr_t gen; /* the live link's generation; 0: none */
  _Atomic(void *) obj;   /* what it names while gen is not 0 */
  uintptr_t last_gen;    /* the generation handed out last: under the lock */
  size_t next_free;      /* in the free list: under the lock */
} slot;

/* Segments are made as needed and never freed nor moved, so a resolver
 * reads them without the lock. */
static _Atomic(slot *) segs[MAX_SEGS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t used;             /* slots ever taken: the next fresh one */
static size_t free_head = NONE; /* dropped slots, most recent first */
static size_t alive;            /* links alive now */
static size_t max_alive = SIZE_MAX;

static slot *slot_at(size_t idx)
{
  slot *seg = atomic_load_explicit(&segs[idx >> SEG_BITS], memory_order_acquire);
  return seg ? &seg[idx & (SEG_SLOTS - 1)] : NULL;
}

/* A slot to use, under the lock: a dropped one, else a fresh one (making
 * its segment); NONE when the table is full or out of memory. */
static size_t take(void)
{
  if (alive >= max_alive)
    return NONE;
  if (free_head != NONE) {
    size_t idx = free_head;
    free_head = slot_at(idx)->next_free;
    return idx;
  }
  if (used == MAX_SEGS * SEG_SLOTS)
    return NONE;
  if ((used & (SEG_SLOTS - 1)) == 0) {
    slot *seg = calloc(SEG_SLOTS, sizeof *seg);
    if (!seg)
      return NONE;
    atomic_store_explicit(&segs[used >> SEG_BITS], seg, memory_order_release);
  }
  return used++;
}

rc_code rc__link_new(void *obj, void **token)
{
  pthread_mutex_lock(&lock);
  size_t idx = take();
  if (idx == NONE) {
    pthread_mutex_unlock(&lock);
    return RC_E_NOMEM;
  }
  slot *s = slot_at(idx);
  uintptr_t gen = ++s->last_gen;
  atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
  atomic_store_explicit(&s->gen, gen, memory_order_release);
  alive++;
  pthread_mutex_unlock(&lock);
  *token = (void *)(gen << IDX_BITS | (uintptr_t)idx);
  return RC_OK;
}

void *rc__link_resolve(void *token)
{
  uintptr_t t = (uintptr_t)token;
  slot *s = t ? slot_at(t & IDX_MASK) : NULL;
  if (!s || atomic_load_explicit(&s->gen, memory_order_acquire) != t >> IDX_BITS)
    return NULL;
  return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void rc__link_drop(void *token)
{
  uintptr_t t = (uintptr_t)token;
  if (!t)
    return;
  size_t idx = t & IDX_MASK;
  pthread_mutex_lock(&lock);
  slot *s = slot_at(idx);
  if (s && atomic_load_explicit(&s->gen, memory_order_relaxed) == t >> IDX_BITS) {
    atomic_store_explicit(&s->gen, 0, memory_order_release);
    alive--;
    if (s->last_gen < GEN_MAX) { /* else retired: no generation is left */
      s->next_free = free_head;
      free_head = idx;
    }
  }
  pthread_mutex_unlock(&lock);
}

size_t rc__links_alive(void)
{
  pthread_mutex_lock(&lock);
  size_t n = alive;
  pthread_mutex_unlock(&lock);
  return n;
}

void rc__links_set_max(size_t max)
{
  pthread_mutex_lock(&lock);
  max_alive = max;
  pthread_mutex_unlock(&lock);
}
