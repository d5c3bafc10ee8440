/* Hops: the status line, header block and trailers of every response curl
 * reports for one transfer, parsed from curl's header lines. Internal. */
#ifndef RC_HOPS_H
#define RC_HOPS_H

#include "buf.h"
#include "decode.h"

typedef struct rc__hop {
  size_t off, len;   /* raw header block within raw */
  size_t toff, tlen; /* trailers within raw */
  size_t reason_off, reason_len;
  int status, version;
  int ended; /* blank line seen: the header block is complete */
  /* Within raw: the block's first field line that begins with a C, where
   * reading its framing (Content-Length, Content-Encoding) starts; 0: none
   * (the status line is never one). */
  size_t coff;
} rc__hop;

/* What the write path needs of the last hop's header block to frame its
 * body: read once, when the block ends, not looked up per field. */
typedef struct rc__framing {
  size_t length;      /* the last Content-Length, or RC__UNKNOWN: curl frames
                         the body by the last one too */
  int version;        /* the hop's HTTP version (20: HTTP/2) */
  rc_code codings_rc; /* RC_OK; RC_E_INVAL: a coding this build does not
                         decode; RC_E_CODINGS: more than max_codings */
  size_t ncodings;    /* Content-Encoding, every line, in the order applied */
  rc__coding codings[RC__MAX_CODINGS];
} rc__framing;

typedef struct rc__hops {
  rc__buf raw; /* every hop's header block in order, trailers after the last */
  rc__hop *v;  /* from the pool's allocator */
  size_t n, cap;
  rc__framing framing; /* of hop framed - 1 (0: none read yet) */
  size_t framed;
} rc__hops;

/* No hops yet, drawing from pool. Cannot fail. */
void rc__hops_init(rc__hops *h, rc_pool *pool);

/* Takes one header line as curl delivers it (CRLF included). *new_hop is set
 * when the line started a hop. RC_E_HEADER_CAP, RC_E_HOP_CAP, RC_E_NOMEM:
 * nothing of the line is kept. */
rc_code rc__hops_line(rc__hops *h, const rc_limits *lim, const char *line, size_t n, int *new_hop);

/* The framing of the last hop's body, with at most max_codings codings:
 * read when its header block ended, or now from what it holds when it has
 * not (a body with no blank line before it); no hop at all frames nothing
 * (no length, no codings). */
const rc__framing *rc__hops_framing(rc__hops *h, size_t max_codings);

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
