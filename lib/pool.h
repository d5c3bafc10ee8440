/* The pool: thread-safe reuse of buffer blocks; its memory budget. Internal. */
#ifndef RC_POOL_H
#define RC_POOL_H

#include <stddef.h>
#include "budget.h"
#include "respchain.h"

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

/* Makes *b (NULL for none yet) a block of at least g->need bytes whose
 * first g->used bytes are kept. Capacity grows in chunk steps, never past
 * g->ceiling. w (NULL: exempt) is the response's place in the memory
 * budget. RC_OK; RC_E_NOMEM; or the budget's refusal (RC__WAIT,
 * RC__SPILL, RC_E_TIMEOUT: see rc__budget_reserve). On error *b is
 * unchanged. */
rc_code rc__pool_grow(rc_pool *pool, rc__blk **b, const rc__grow *g, rc__waiter *w);

/* Released blocks go idle at once even under AddressSanitizer (no
 * quarantine): for tests that count the pool's own reuse. */
void rc__pool_exact(rc_pool *pool);

/* Lets the demand for large blocks decay, freeing the idle ones it no
 * longer keeps (rc_multi_poll calls it: a program's loop drives decay). */
void rc__pool_tick(rc_pool *pool);

/* The pool's memory budget (never NULL). */
rc__budget *rc__pool_budget(rc_pool *pool);

/* Where spill files go: the pool's spill_dir, else $TMPDIR, else /tmp
 * (empty strings count as unset). */
const char *rc__pool_spill_dir(const rc_pool *pool);

/* Gives b back: kept idle or freed, by the pool's bounds. NULL is a no-op. */
void rc__pool_put(rc_pool *pool, rc__blk *b);

#endif
