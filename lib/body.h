/* The last hop's body: in memory while it fits (max_memory, the budget),
 * then, all of it, in the response's spill file; read back as one
 * contiguous, NUL-terminated view either way. The body is the one place
 * that asks the memory budget for room, for plain and decoded bytes alike;
 * the budget's answers (wait, spill, time out) end here. Internal. */
#ifndef RC_BODY_H
#define RC_BODY_H

#include "response.h"

/* Sets the body's rules for this hop, once its declared size and decoding
 * are known: in memory up to max_memory (else max_body). */
void rc__body_begin(rc_response *r);

/* Bytes of the body so far. */
size_t rc__body_len(const rc_response *r);

/* Appends n bytes (the caller keeps the body within max_body): to memory,
 * when the budget admits the growth, or to the spill file once the body is
 * past max_memory or the budget said to spill. RC_OK, with *paused set
 * when the transfer is to pause for the budget (nothing was taken);
 * RC_E_NOMEM, RC_E_SPILL, RC_E_TIMEOUT: nothing was taken. */
rc_code rc__body_append(rc_response *r, const char *p, size_t n, int *paused);

/* How much encoded input one decoder step may take: each step is admitted
 * first (rc__body_admit_input), since a step cannot pause halfway and its
 * output is not known before it is made. Unbounded (SIZE_MAX) when there
 * is nothing to admit: the budget is off, or the body takes no memory. */
size_t rc__body_input_slice(rc_response *r);

/* Asks the budget for room to decode the next slice of bytes input, for a
 * body in memory (a spilled body, or one not kept, takes none). RC_OK: go
 * on (the body may have moved to its spill file), or, with *paused set,
 * pause and ask again. RC_E_SPILL, RC_E_TIMEOUT. */
rc_code rc__body_admit_input(rc_response *r, size_t bytes, int *paused);

/* A writable region at the body's end for a decoder: *avail bytes at *out,
 * at most the room left under max_body (0: the cap is reached). Growth in
 * memory here is charged, not asked for: the step was admitted by its
 * input. RC_OK, RC_E_NOMEM, RC_E_SPILL. */
rc_code rc__body_tail(rc_response *r, unsigned char **out, size_t *avail);

/* n bytes were written at the region last offered by rc__body_tail. */
void rc__body_commit(rc_response *r, size_t n);

/* After a decoder step: NUL-terminates the body in memory again. */
void rc__body_step_end(rc_response *r);

/* The body is complete (its declared length, the end of its coding, or the
 * cap): a spilled body's last batch is written now, so that a full disk
 * fails the transfer rather than the first read (and the batch is freed).
 * RC_OK or RC_E_SPILL. */
rc_code rc__body_end(rc_response *r);

/* The body as one view (mapping a spilled body, its last batch written
 * first). */
rc_view rc__body_view(const rc_response *r);

/* Empties the body for the next hop, keeping its memory block. */
void rc__body_drop(rc_response *r);

/* Empties the body and gives back everything it holds. */
void rc__body_free(rc_response *r);

#endif
