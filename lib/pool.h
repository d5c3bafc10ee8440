/* The pool: thread-safe reuse of buffer blocks, an allocator that admits
 * nothing: every block it hands out is charged to the pool's budget, every
 * block given back credited, and asking the budget first is the body's
 * business (body.c). Internal. */
#ifndef RC_POOL_H
#define RC_POOL_H

#include <stddef.h>
#include "respchain.h"

struct rc__budget;
struct rc__shelf;

/* A block of buffer memory: this header followed by cap usable bytes. Idle
 * blocks are linked through next. */
typedef struct rc__blk {
  struct rc__blk *next;
  size_t cap;
  int counted; /* counted as a large block in use (demand.c) */
  unsigned char data[];
} rc__blk;

/* One more reference to pool (each response holds one). */
void rc__pool_ref(rc_pool *pool);
/* Drops a reference; the last one frees the pool. */
void rc__pool_unref(rc_pool *pool);

/* The pool's allocator, for small allocations outside blocks. */
const rc_allocator *rc__pool_allocator(const rc_pool *pool);

/* What a growth asks for. */
typedef struct rc__grow {
  size_t used;    /* bytes of the block to keep */
  size_t need;    /* the capacity needed */
  size_t ceiling; /* the most capacity it may get (>= need) */
  size_t hint;    /* > 0: the final size, so that an idle large block can
                     be taken at once instead of growing a small one */
} rc__grow;

/* How a growth will be made, decided before it is: for the body, which
 * asks the budget for exactly the bytes it adds. */
typedef struct rc__plan {
  size_t cap;    /* the capacity the block gets */
  size_t more;   /* bytes held more: cap less the old capacity (0: the
                    block is big enough, nothing to do) */
  rc__blk *idle; /* an idle block taken for it, or NULL */
} rc__plan;

/* Plans making b (NULL for none yet) a block of at least g->need bytes
 * whose first g->used bytes are kept. Capacity grows in chunk steps, never
 * past g->ceiling. An idle block it takes is out of the pool until the plan
 * is carried out or abandoned. Returns plan->more. */
size_t rc__pool_plan(rc_pool *pool, const rc__blk *b, const rc__grow *g, rc__plan *plan);

/* Carries out a plan made for *b: *b becomes the grown block, its first
 * used bytes kept, and plan->more bytes are charged to the budget. RC_OK,
 * or RC_E_NOMEM (the plan is abandoned, *b unchanged). */
rc_code rc__pool_carry_out(rc_pool *pool, rc__blk **b, size_t used, rc__plan *plan);

/* Gives back what a plan took, unused. */
void rc__pool_abandon(rc_pool *pool, rc__plan *plan);

/* plan, then carry out, asking nobody. For the pool's unit tests: the
 * library plans (buf.c), since the body asks the budget in between. RC_OK
 * or RC_E_NOMEM. */
rc_code rc__pool_grow(rc_pool *pool, rc__blk **b, const rc__grow *g);

/* For tests only (the library never calls it): given-back blocks go idle
 * at once even under AddressSanitizer (no quarantine), so that tests can
 * count the pool's own reuse. */
void rc__pool_exact(rc_pool *pool);

/* Lets the demand for large blocks decay, freeing the idle ones it no
 * longer keeps (rc_multi_poll calls it: a program's loop drives decay). */
void rc__pool_tick(rc_pool *pool);

/* The pool's memory budget (never NULL). */
struct rc__budget *rc__pool_budget(rc_pool *pool);

/* The pool's idle spill files. */
struct rc__shelf *rc__pool_shelf(rc_pool *pool);

/* Where spill files go: the pool's spill_dir, else $TMPDIR, else /tmp
 * (empty strings count as unset). */
const char *rc__pool_spill_dir(const rc_pool *pool);

/* Gives b back, credited to the budget: kept idle or freed, by the pool's
 * bounds. NULL is a no-op. */
void rc__pool_put(rc_pool *pool, rc__blk *b);

#endif
