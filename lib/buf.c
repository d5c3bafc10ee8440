/* The capped buffer: growth policy on top of the pool. */
#include "buf.h"

#include <string.h>

rc_code rc__buf_reserve(rc__buf *b, rc_pool *p, size_t n, size_t limit,
                        size_t declared, rc__waiter *w)
{
  size_t need = b->len + n + 1;
  if (b->blk && b->blk->cap >= need)
    return RC_OK;
  /* A plausible declared size (within the limit) picks the block's class up
   * front, and while the bytes fit in it, it is taken at once: one
   * allocation and no copy as the body grows. It costs address space, not
   * memory, until the bytes arrive: pages become resident as written. */
  int plausible = declared != RC__UNKNOWN && declared <= limit;
  size_t ceiling;
  if (plausible && b->len + n <= declared)
    ceiling = need = declared + 1;
  else
    ceiling = limit + 1;
  size_t hint = plausible ? declared + 1 : 0;
  rc_code rc = rc__pool_grow(p, &b->blk, b->len, need, ceiling, hint, w);
  if (rc == RC_OK)
    b->blk->data[b->len] = '\0';  /* terminated even before bytes arrive */
  return rc;
}

rc_code rc__buf_append(rc__buf *b, rc_pool *p, const void *data, size_t n,
                       size_t limit, size_t declared, rc__waiter *w)
{
  if (n == 0)
    return RC_OK;  /* an empty buffer stays without a block */
  rc_code rc = rc__buf_reserve(b, p, n, limit, declared, w);
  if (rc != RC_OK)
    return rc;
  memcpy(b->blk->data + b->len, data, n);
  b->len += n;
  b->blk->data[b->len] = '\0';
  return RC_OK;
}

void rc__buf_release(rc__buf *b, rc_pool *p)
{
  rc__pool_put(p, b->blk);
  b->blk = NULL;
  b->len = 0;
}
