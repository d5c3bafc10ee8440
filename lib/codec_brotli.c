/* br through libbrotli's decoder. See codec.h.
 *
 * libbrotli cannot restart an instance, so each stream gets a new one, and
 * an instance is freed as soon as its stream ends or the body stops: it
 * holds the ring buffer, up to the 16 MiB window the format allows (the
 * large-window extension stays off, so a stream asking for more is
 * corrupt). Nothing may follow the end of a br stream: data after it is
 * RC_E_DECODE, as for deflate. */
#include "codec.h"

#include <brotli/decode.h>

static rc_code br_begin(void **st, rc__coding c, const rc_allocator *a)
{
  (void)c;
  if (*st != NULL)
    BrotliDecoderDestroyInstance(*st);
  *st = BrotliDecoderCreateInstance(rc__codec_alloc, rc__codec_free, (void *)(uintptr_t)a);
  return *st != NULL ? RC_OK : RC_E_NOMEM;
}

static int is_alloc_error(BrotliDecoderErrorCode e)
{
  return e <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
         e >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES;
}

static rc_code br_step(void *st, rc__io *io)
{
  BrotliDecoderResult r =
      BrotliDecoderDecompressStream(st, &io->in_len, &io->in, &io->out_len, &io->out, NULL);

  switch (r) {
  case BROTLI_DECODER_RESULT_SUCCESS: io->ended = 1; return RC_OK;
  case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
  case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: return RC_OK;
  default: return is_alloc_error(BrotliDecoderGetErrorCode(st)) ? RC_E_NOMEM : RC_E_DECODE;
  }
}

static rc_code br_again(void **st, rc__coding c, const rc_allocator *a)
{
  (void)st;
  (void)c;
  (void)a;
  return RC_E_DECODE;
}

static void br_rest(void **st, const rc_allocator *a)
{
  (void)a;
  if (*st != NULL)
    BrotliDecoderDestroyInstance(*st);
  *st = NULL;
}

static void br_drop(void *st, const rc_allocator *a)
{
  (void)a;
  if (st != NULL)
    BrotliDecoderDestroyInstance(st);
}

const rc__codec rc__codec_brotli = {br_begin, br_step, br_again, br_rest, br_drop};
