/* The response object, shared by the files that fill it and read it.
 * Each field says which file writes it (after rc_response_new, which sets
 * them all): response.c holds the lifecycle and the settings and reads
 * everything; transfer.c runs curl's callbacks; body.c keeps the body;
 * hops.c the header blocks. Readers on other threads only read, between
 * transfers (see the header), but for the two caches under their locks.
 * Internal. */
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
  rc_limits lim; /* response.c */
  int decode;    /* decode Content-Encoding (rc_attach turns it on; also
                    rc_response_set_decoding): transfer.c, response.c */

  rc__hops hops;            /* hops.c, fed by transfer.c */
  rc__buf body;             /* the last hop's body, decoded when decoding, while it
                               is in memory: body.c */
  rc__spill spill;          /* all of it once spilled (spill.fd >= 0): body.c */
  char *scratch;            /* a decoder's output when the body is not kept, for
                               the observer: body.c */
  pthread_mutex_t map_lock; /* serialises mapping the spill file (body.c) */
  rc__buf raw;              /* the body as received, when lim.max_raw > 0:
                               transfer.c */

  /* Settings kept across transfers (rc_response_observe): response.c. */
  rc_observer_fn observer; /* shown every body slice; NULL: none */
  void *observer_ud;
  rc_keep keep; /* RC_KEEP_NONE: the body is counted, not stored */

  /* Per transfer; response.c empties them (rc__response_drop_body). */
  rc_code error;        /* first limit or failure hit by a callback: transfer.c */
  int truncated;        /* the body stopped at the cap: transfer.c */
  int raw_truncated;    /* the raw copy stopped at max_raw: transfer.c */
  int body_started;     /* the write path is set up for the last hop: transfer.c */
  size_t declared;      /* its Content-Length, or RC__UNKNOWN: transfer.c */
  rc_encoding encoding; /* what was done with its Content-Encoding: transfer.c */
  size_t seen;          /* body bytes that went by under RC_KEEP_NONE: body.c */
  unsigned char *tail;  /* the region rc__body_tail offered last: body.c */
  rc_code observed;     /* the observer's verdict: RC_OK (go on),
                           RC_STOPPED or RC_E_OBSERVER: body.c */

  rc__waiter waiter; /* place in the pool's memory budget: the budget's,
                        asked by body.c; bound by transfer.c (rc_attach)
                        and response.c (rc_response_set_budget_wait);
                        held by transfer.c and loop.c */
  void *link;        /* the handle link rc_attach gave its handle, NULL
                        when none: transfer.c (rc_attach, rc_detach),
                        response.c (rc_response_free drops it) */
  int hold_from;     /* when the libcurl loaded lets an HTTP/2 stream
                        be held (RC__HOLD_*): transfer.c (rc_attach) */
  int paused;        /* the last write call paused for the budget:
                        transfer.c */
  size_t skip;       /* bytes of the chunk curl delivers again after a
                        pause that were decoded before it: transfer.c */

  rc__decoder *dec; /* created on first need, kept across resets: transfer.c */
  int decoding;     /* this body goes through dec: transfer.c */

  pthread_mutex_t full_lock;
  rc__buf full; /* the full response, built on first request: response.c;
                   dropped by transfer.c when new data comes */
};

/* When an HTTP/2 stream can be held back (transfer.c): never, from its
 * status line (curl 8.14 to 8.20), from its request (curl 8.21 and later). */
enum { RC__HOLD_NEVER, RC__HOLD_AT_STATUS, RC__HOLD_FROM_REQUEST };

/* Which of them the libcurl loaded allows (transfer.c). */
int rc__transfer_hold_from(void);

/* Sets easy's receive speed limit to hold w's stream back (hold != 0: its
 * window stays small, see transfer.c) or back to 0, unlimited; w->held
 * follows. From the thread that drives easy (transfer.c, loop.c). */
void rc__transfer_hold(rc__waiter *w, CURL *easy, int hold);

/* Empties the per-transfer state and gives storage back to the pool. */
void rc__response_clear(rc_response *resp);

/* Whether the response holds anything of a transfer: hops, body bytes or
 * a failure. */
int rc__response_holds_data(const rc_response *resp);

/* Forgets the body of a hop that turned out not to be the last. */
void rc__response_drop_body(rc_response *resp);

#endif
