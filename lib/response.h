/* The response object, shared by the files that fill it (transfer.c) and
 * read it (response.c). Internal. */
#ifndef RC_RESPONSE_H
#define RC_RESPONSE_H

#include <pthread.h>
#include "budget.h"
#include "buf.h"
#include "decode.h"
#include "hops.h"
#include "spill.h"

struct rc_response {
  rc_pool *pool; /* referenced for the response's lifetime */
  rc_limits lim;
  int decode; /* decode Content-Encoding (rc_attach turns it on) */

  rc__hops hops;
  rc__buf body;    /* the last hop's body, decoded when decoding,
                      while it is in memory (body.c) */
  rc__spill spill; /* all of it once spilled (spill.fd >= 0) */
  char *stage;     /* decoded bytes on their way to the spill file */
  size_t stage_len;
  pthread_mutex_t map_lock; /* serialises mapping the spill file */
  rc__buf raw;              /* the body as received, when lim.max_raw > 0 */

  /* Settings kept across transfers (rc_response_observe). */
  rc_observer_fn observer; /* shown every body slice; NULL: none */
  void *observer_ud;
  rc_keep keep; /* RC_KEEP_NONE: the body is counted, not stored */

  /* Per transfer. */
  rc_code error;        /* first limit or failure hit by a callback */
  int truncated;        /* the body stopped at the cap */
  int raw_truncated;    /* the raw copy stopped at max_raw */
  int body_started;     /* the write path is set up for the last hop */
  size_t declared;      /* its Content-Length, or RC__UNKNOWN */
  rc_encoding encoding; /* what was done with its Content-Encoding */
  size_t seen;          /* body bytes that went by under RC_KEEP_NONE */
  unsigned char *tail;  /* the region rc__body_tail offered last */
  rc_code observed;     /* the observer's verdict: RC_OK (go on),
                           RC_STOPPED or RC_E_OBSERVER */

  rc__waiter waiter; /* place in the pool's memory budget */
  int paused;        /* the last write call paused for the budget */
  size_t skip;       /* bytes of the chunk curl delivers again after a
                        pause that were decoded before it */

  rc__decoder *dec; /* created on first need, kept across resets */
  int decoding;     /* this body goes through dec */

  pthread_mutex_t full_lock;
  rc__buf full; /* the full response, built on first request */
};

/* Empties the per-transfer state and gives storage back to the pool. */
void rc__response_clear(rc_response *resp);

/* Forgets the body of a hop that turned out not to be the last. */
void rc__response_drop_body(rc_response *resp);

#endif
