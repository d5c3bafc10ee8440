/* The last hop's body: in memory while it fits (max_memory, the budget),
 * then, all of it, in the response's spill file; read back as one
 * contiguous, NUL-terminated view either way. Internal. */
#ifndef RC_BODY_H
#define RC_BODY_H

#include "response.h"

/* Sets the body's rules for this hop, once its declared size and decoding
 * are known: in memory up to max_memory (else max_body); its growth asks
 * the budget, but for a decoded body, whose input is gated instead. */
void rc__body_begin(rc_response *r);

/* Bytes of the body so far. */
size_t rc__body_len(const rc_response *r);

/* Appends n bytes (the caller keeps the body within max_body): to memory,
 * or to the spill file once the body is past max_memory or the budget said
 * to spill. RC_OK; RC__WAIT (paused for the budget: nothing was taken);
 * RC_E_NOMEM, RC_E_SPILL, RC_E_TIMEOUT: nothing was taken. */
rc_code rc__body_append(rc_response *r, const char *p, size_t n);

/* Moves the body to the spill file and gives its memory back.
 * RC_OK or RC_E_SPILL (the body stays in memory). */
rc_code rc__body_spill(rc_response *r);

/* A writable region at the body's end for a decoder: *avail bytes at *out,
 * at most the room left under max_body (0: the cap is reached). Memory
 * growth here is exempt from the budget (decoding transfers are gated per
 * input slice). RC_OK, RC_E_NOMEM, RC_E_SPILL. */
rc_code rc__body_tail(rc_response *r, unsigned char **out, size_t *avail);

/* n bytes were written at the region last offered by rc__body_tail. */
void rc__body_commit(rc_response *r, size_t n);

/* After a decoder step: writes out what commit staged for the spill file,
 * and NUL-terminates the body in memory again. RC_OK or RC_E_SPILL. */
rc_code rc__body_flush(rc_response *r);

/* The body as one view (mapping a spilled body). */
rc_view rc__body_view(const rc_response *r);

/* Empties the body for the next hop, keeping its memory block. */
void rc__body_drop(rc_response *r);

/* Empties the body and gives back everything it holds. */
void rc__body_release(rc_response *r);

#endif
