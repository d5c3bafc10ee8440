/* The capped buffer: its growth rules on top of the pool. */
#include "buf.h"

#include <string.h>

void rc__buf_init(rc__buf *b, rc_pool *pool, size_t limit, size_t step)
{
  b->blk = NULL;
  b->len = 0;
  b->limit = limit;
  b->step = step;
  b->declared = RC__UNKNOWN;
  b->pool = pool;
}

void rc__buf_set_limit(rc__buf *b, size_t limit)
{
  RC__ASSERT(b->len == 0 && (!b->blk || b->blk->cap > 0));
  b->limit = limit;
}

void rc__buf_declare(rc__buf *b, size_t declared) { b->declared = declared; }

/* What room for n more bytes asks of the pool. */
static rc__grow request(const rc__buf *b, size_t n)
{
  RC__ASSERT(b->len <= b->limit && n <= b->limit - b->len);
  RC__ASSERT(!b->blk || b->len < b->blk->cap);
  rc__grow g = {b->len, b->len + n + 1, b->limit + 1, 0};
  /* A plausible declared size (within the limit) picks the block's class up
   * front, and while the bytes fit in it, it is taken at once: one
   * allocation and no copy as the body grows. It costs address space, not
   * memory, until the bytes arrive: pages become resident as written. */
  int plausible = b->declared != RC__UNKNOWN && b->declared <= b->limit;
  if (plausible && b->len + n <= b->declared) {
    g.ceiling = g.need = b->declared + 1;
  } else if (b->step) {
    size_t steps = g.need / b->step + (g.need % b->step != 0);
    if (steps <= (b->limit + 1) / b->step)
      g.ceiling = steps * b->step; /* the next step, or else the limit */
  }
  g.hint = plausible ? b->declared + 1 : 0;
  return g;
}

size_t rc__buf_plan(rc__buf *b, size_t n, rc__plan *plan)
{
  RC__ASSERT(b->len <= b->limit && n <= b->limit - b->len);
  if (b->blk && b->blk->cap >= b->len + n + 1) {
    plan->idle = NULL;
    plan->more = 0;
    plan->cap = b->blk->cap;
    return 0;
  }
  rc__grow g = request(b, n);
  return rc__pool_plan(b->pool, b->blk, &g, plan);
}

rc_code rc__buf_carry_out(rc__buf *b, rc__plan *plan)
{
  if (plan->more == 0)
    return RC_OK;
  rc_code rc = rc__pool_carry_out(b->pool, &b->blk, b->len, plan);
  if (rc == RC_OK)
    b->blk->data[b->len] = '\0'; /* terminated even before bytes arrive */
  return rc;
}

void rc__buf_abandon(rc__buf *b, rc__plan *plan) { rc__pool_abandon(b->pool, plan); }

rc_code rc__buf_make_room(rc__buf *b, size_t n)
{
  rc__plan plan;
  if (rc__buf_plan(b, n, &plan) == 0)
    return RC_OK;
  return rc__buf_carry_out(b, &plan);
}

rc_code rc__buf_append(rc__buf *b, const void *data, size_t n)
{
  if (n == 0)
    return RC_OK; /* an empty buffer stays without a block */
  rc_code rc = rc__buf_make_room(b, n);
  if (rc != RC_OK)
    return rc;
  memcpy(b->blk->data + b->len, data, n);
  rc__buf_commit(b, n);
  return RC_OK;
}

unsigned char *rc__buf_tail(const rc__buf *b, size_t *avail)
{
  RC__ASSERT(b->blk && b->len < b->blk->cap);
  *avail = b->blk->cap - b->len - 1;
  return b->blk->data + b->len;
}

void rc__buf_commit(rc__buf *b, size_t n)
{
  RC__ASSERT(b->blk && n < b->blk->cap - b->len && b->len + n <= b->limit);
  b->len += n;
  b->blk->data[b->len] = '\0';
}

void rc__buf_clear(rc__buf *b)
{
  b->len = 0;
  b->declared = RC__UNKNOWN;
}

void rc__buf_free(rc__buf *b)
{
  rc__pool_put(b->pool, b->blk);
  b->blk = NULL;
  b->len = 0;
  b->declared = RC__UNKNOWN;
}
