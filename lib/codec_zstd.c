/* zstd through libzstd's streaming decoder. See codec.h.
 *
 * One context per stage, reset for each body (ZSTD_DCtx_reset keeps its
 * buffers). Windows over 8 MiB are refused (RFC 9659 lets decoders stop
 * there), so a context holds at most about 8.4 MiB; one that grew past
 * RC__KEEP_STATE is freed when its frame ends or the body stops. Frames
 * may follow one another (RFC 8878): they decode as one body. Frames of the
 * legacy formats that libzstd may still read are refused: their decoders
 * allocate outside the given allocator and ignore the window limit. */
#include "codec.h"

#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem, ZSTD_createDCtx_advanced */
#include <zstd.h>
#include <zstd_errors.h>

#define WINDOW_LOG_MAX 23 /* 8 MiB */

typedef struct zs_state {
  ZSTD_DCtx *dc;
  int frame_start; /* the next input byte opens a frame */
} zs_state;

static void zs_drop(void *st, const rc_allocator *a)
{
  zs_state *s = st;

  if (s == NULL)
    return;
  ZSTD_freeDCtx(s->dc);
  a->free(s, a->ud);
}

static zs_state *zs_new(const rc_allocator *a)
{
  ZSTD_customMem mem = {rc__codec_alloc, rc__codec_free, (void *)(uintptr_t)a};
  zs_state *s = a->malloc(sizeof *s, a->ud);

  if (s == NULL)
    return NULL;
  s->dc = ZSTD_createDCtx_advanced(mem);
  if (s->dc == NULL ||
      ZSTD_isError(ZSTD_DCtx_setParameter(s->dc, ZSTD_d_windowLogMax, WINDOW_LOG_MAX))) {
    zs_drop(s, a);
    return NULL;
  }
  return s;
}

static rc_code zs_begin(void **st, rc__coding c, const rc_allocator *a)
{
  zs_state *s = *st;

  (void)c;
  if (s == NULL && (s = *st = zs_new(a)) == NULL)
    return RC_E_NOMEM;
  /* Keeps the parameters (the window limit) and the buffers. */
  ZSTD_DCtx_reset(s->dc, ZSTD_reset_session_only);
  s->frame_start = 1;
  return RC_OK;
}

/* Legacy frames open with 0xFD2FB522..0xFD2FB527 (little-endian); today's
 * with ...28 and skippable ones with 0x184D2A5?, so the first byte tells. */
static int is_legacy_start(unsigned char first) { return first >= 0x22 && first <= 0x27; }

static rc_code zs_step(void *st, rc__io *io)
{
  zs_state *s = st;
  ZSTD_inBuffer in = {io->in, io->in_len, 0};
  ZSTD_outBuffer out = {io->out, io->out_len, 0};
  size_t r;

  if (s->frame_start && io->in_len > 0) {
    if (is_legacy_start(*io->in))
      return RC_E_DECODE;
    s->frame_start = 0;
  }
  r = ZSTD_decompressStream(s->dc, &out, &in);
  /* With an error the output position is no count of bytes written:
   * libzstd (1.5.4) may report the whole region filled while it wrote
   * nothing there. None of it counts, or the body would take in whatever
   * the region held before (a pooled block's earlier body). */
  if (ZSTD_isError(r))
    return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? RC_E_NOMEM : RC_E_DECODE;
  io->in += in.pos;
  io->in_len -= in.pos;
  io->out += out.pos;
  io->out_len -= out.pos;
  if (r == 0) /* a frame ended and all of it was flushed */
    io->ended = 1;
  return RC_OK;
}

/* Another frame: the context starts it by itself; it may have been freed
 * at the end of the last one. */
static rc_code zs_again(void **st, rc__coding c, const rc_allocator *a)
{
  zs_state *s = *st;

  (void)c;
  if (s == NULL && (s = *st = zs_new(a)) == NULL)
    return RC_E_NOMEM;
  s->frame_start = 1;
  return RC_OK;
}

static void zs_rest(void **st, const rc_allocator *a)
{
  zs_state *s = *st;

  if (s != NULL && ZSTD_sizeof_DCtx(s->dc) > RC__KEEP_STATE) {
    zs_drop(s, a);
    *st = NULL;
  }
}

const rc__codec rc__codec_zstd = {zs_begin, zs_step, zs_again, zs_rest, zs_drop};
