/* Hops: the status line, header block and trailers of every response curl
 * reports for one transfer, parsed from curl's header lines. Internal. */
#ifndef RC_HOPS_H
#define RC_HOPS_H

#include "buf.h"

typedef struct rc__hop {
  size_t off, len;   /* raw header block within raw */
  size_t toff, tlen; /* trailers within raw */
  size_t reason_off, reason_len;
  int status, version;
  int ended; /* blank line seen: the header block is complete */
} rc__hop;

typedef struct rc__hops {
  rc__buf raw; /* every hop's header block in order, trailers after the last */
  rc__hop *v;  /* from the pool's allocator */
  size_t n, cap;
} rc__hops;

/* No hops yet, drawing from pool. Cannot fail. */
void rc__hops_init(rc__hops *h, rc_pool *pool);

/* Takes one header line as curl delivers it (CRLF included). *new_hop is set
 * when the line started a hop. RC_E_HEADER_CAP, RC_E_HOP_CAP, RC_E_NOMEM:
 * nothing of the line is kept. */
rc_code rc__hops_line(rc__hops *h, const rc_limits *lim, const char *line, size_t n, int *new_hop);

/* The hop for a public index (negative from the end); NULL if none. */
const rc__hop *rc__hops_at(const rc__hops *h, int hop);

/* What rc__hops_find looks for. */
typedef struct rc__lookup {
  const char *name; /* header name, case-insensitive */
  size_t nth;       /* which of its values, from 0 */
  int trailers;     /* in the hop's trailers instead of its headers */
} rc__lookup;

/* The value q names in hop. RC_OK or RC_E_NOT_FOUND. */
rc_code rc__hops_find(const rc__hops *h, const rc__hop *hop, const rc__lookup *q, rc_view *out);

/* Forgets every hop; the raw block goes back to the pool, the table stays. */
void rc__hops_reset(rc__hops *h);
/* reset, and frees the table. */
void rc__hops_free(rc__hops *h);

#endif
