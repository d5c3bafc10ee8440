/* A capped, incrementally grown byte buffer backed by a pool block, always
 * NUL-terminated once it holds a byte. Internal. */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stddef.h>
#include <stdint.h>
#include "pool.h"

#define RC__UNKNOWN SIZE_MAX  /* no declared size */

typedef struct rc__buf {
  rc__blk *blk;  /* NULL until the first byte: an empty buffer owns nothing */
  size_t len;
} rc__buf;

/* Makes room for n more bytes and the NUL. The buffer never grows past
 * limit (+1 for the NUL). A declared size within the limit is allocated at
 * once and exactly (address space; memory becomes resident only as bytes
 * arrive); one over the limit is ignored, and a lie is outgrown in steps.
 * The caller keeps len + n <= limit. w: as for rc__pool_grow. */
rc_code rc__buf_reserve(rc__buf *b, rc_pool *p, size_t n, size_t limit,
                        size_t declared, rc__waiter *w);

/* reserve, then copies n bytes at the end and NUL-terminates; all or
 * nothing. */
rc_code rc__buf_append(rc__buf *b, rc_pool *p, const void *data, size_t n,
                       size_t limit, size_t declared, rc__waiter *w);

/* Gives the block back to the pool; the buffer is empty again. */
void rc__buf_release(rc__buf *b, rc_pool *p);

/* The bytes, or "" when empty (a kept block may hold stale bytes); never
 * NULL. */
static inline const char *rc__buf_data(const rc__buf *b)
{
  return b->blk && b->len ? (const char *)b->blk->data : "";
}

#endif
