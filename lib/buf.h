/* A capped, incrementally grown byte buffer backed by a pool block, always
 * NUL-terminated once it holds a byte: a byte counter on top of the pool's
 * allocator, which asks nobody for memory (the body asks the budget before
 * it grows: body.c). It keeps its own rules: the limit, the growth step
 * and a declared size, set when it is made and changed only between uses.
 * Internal. */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stddef.h>
#include <stdint.h>
#include "debug.h"
#include "pool.h"

#define RC__UNKNOWN SIZE_MAX /* no declared size */

typedef struct rc__buf {
  rc__blk *blk; /* NULL until the first byte: an empty buffer owns nothing */
  size_t len;
  size_t limit;    /* the most bytes it holds (its NUL aside) */
  size_t step;     /* 0: grows by the pool's policy; else in steps of this */
  size_t declared; /* the size announced for it, or RC__UNKNOWN */
  rc_pool *pool;
} rc__buf;

/* An empty buffer of pool that holds at most limit bytes and grows in
 * steps of step bytes (0: the pool's policy). Cannot fail: nothing is
 * allocated before the first byte. */
void rc__buf_init(rc__buf *b, rc_pool *pool, size_t limit, size_t step);

/* Changes the limit of an empty buffer (between uses: a block it keeps
 * stays). */
void rc__buf_set_limit(rc__buf *b, size_t limit);

/* Announces the final size (RC__UNKNOWN: none). A declared size within the
 * limit is allocated at once and exactly (address space; memory becomes
 * resident only as bytes arrive); one over the limit is ignored, and a lie
 * is outgrown in steps. */
void rc__buf_declare(rc__buf *b, size_t declared);

/* Plans room for n more bytes and the NUL (len + n must stay within the
 * limit): returns the bytes the block grows by (plan->more; 0: it has the
 * room). Then rc__buf_carry_out or rc__buf_abandon. */
size_t rc__buf_plan(rc__buf *b, size_t n, rc__plan *plan);

/* Carries out a plan for room: RC_OK or RC_E_NOMEM (nothing changed). */
rc_code rc__buf_carry_out(rc__buf *b, rc__plan *plan);

/* Gives back what a plan took, unused. */
void rc__buf_abandon(rc__buf *b, rc__plan *plan);

/* plan, then carry out: room for n more bytes and the NUL, asking nobody.
 * RC_OK or RC_E_NOMEM; on error nothing changed. */
rc_code rc__buf_make_room(rc__buf *b, size_t n);

/* make_room, then copies n bytes at the end; all or nothing. */
rc_code rc__buf_append(rc__buf *b, const void *data, size_t n);

/* For writers that fill the buffer in place (a decoder, the full response):
 * after rc__buf_make_room, the writable region at the end, *avail bytes
 * long (the NUL's place excluded); then commit the n bytes written there. */
unsigned char *rc__buf_tail(const rc__buf *b, size_t *avail);
void rc__buf_commit(rc__buf *b, size_t n);

/* Empties the buffer, keeping its block; the declared size is forgotten. */
void rc__buf_clear(rc__buf *b);

/* Gives the block back to the pool; the buffer is empty again, its rules
 * kept but the declared size. */
void rc__buf_free(rc__buf *b);

/* The bytes, or "" when empty (a kept block may hold stale bytes); never
 * NULL. */
static inline const char *rc__buf_data(const rc__buf *b)
{
  return b->blk && b->len ? (const char *)b->blk->data : "";
}

#endif
