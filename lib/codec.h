/* One coding of a Content-Encoding chain as a streaming decoder: what the
 * chain in decode.c asks of each codec_*.c file. Internal.
 *
 * A codec keeps its library state in one opaque pointer per chain stage,
 * created on first need with the decoder's allocator and kept for later
 * bodies where the library allows reuse. */
#ifndef RC_CODEC_H
#define RC_CODEC_H

#include <stddef.h>
#include "decode.h"

/* One step's input and output: a step advances in and out past what it
 * read and wrote, and sets ended when the stream ended (input after the
 * end is left unread). */
typedef struct rc__io {
  const unsigned char *in;
  size_t in_len;
  unsigned char *out;
  size_t out_len; /* room left at out; at least 1 when a step is called */
  int ended;
} rc__io;

typedef struct rc__codec {
  /* Readies *st (NULL: none yet, created here) to decode a new stream of
   * coding c. RC_OK or RC_E_NOMEM (then *st may be NULL). */
  rc_code (*begin)(void **st, rc__coding c, const rc_allocator *a);

  /* Decodes from io->in into io->out until the input is used up, the room
   * is, or the stream ends. RC_OK; RC_E_DECODE for a corrupt stream;
   * RC_E_NOMEM. After an error the state is fit only for begin. */
  rc_code (*step)(void *st, rc__io *io);

  /* After an end, more input arrived: readies *st for another stream of
   * the same coding (a gzip member, a zstd frame). RC_E_DECODE when
   * nothing may follow an end; RC_E_NOMEM. */
  rc_code (*again)(void **st, rc__coding c, const rc_allocator *a);

  /* The stream ended or the body stopped: frees *st (setting it to NULL)
   * unless it is worth keeping for the next body. */
  void (*rest)(void **st, const rc_allocator *a);

  /* Frees *st; NULL is a no-op. */
  void (*drop)(void *st, const rc_allocator *a);
} rc__codec;

/* State kept for the next body is at most this large per stage; larger
 * state (a zstd window, any brotli instance) is freed when its stream ends
 * or the body stops, so that idle responses hold little. */
#define RC__KEEP_STATE ((size_t)1024 * 1024)

extern const rc__codec rc__codec_zlib; /* gzip, deflate */
#if RC_HAVE_BROTLI
extern const rc__codec rc__codec_brotli; /* br */
#endif
#if RC_HAVE_ZSTD
extern const rc__codec rc__codec_zstd; /* zstd */
#endif

/* Allocation callbacks in the (opaque, size) form that libbrotli and
 * libzstd take; opaque is the decoder's rc_allocator. */
void *rc__codec_alloc(void *opaque, size_t size);
void rc__codec_free(void *opaque, void *p);

#endif
