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
  int frame_start;        /* the next input byte opens a frame */
  unsigned char magic[4]; /* a frame's first bytes, held until all are in */
  size_t magic_len;
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
  s->magic_len = 0;
  return RC_OK;
}

/* A frame's magic number (little-endian): today's frames and skippable
 * ones are read; legacy frames (0xFD2FB522..0xFD2FB527) and anything else
 * are refused. The whole number is looked at, not its first byte: libzstd
 * tells a legacy frame by the piece it is given, not by the header bytes it
 * buffered, so a frame that opens with 0x28 and goes on with a legacy
 * magic in the next piece would reach its legacy decoder. */
static int known_magic(const unsigned char m[4])
{
  uint32_t v = (uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24;
  return v == ZSTD_MAGICNUMBER || (v & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

/* Takes a frame's first four bytes from the input, and once all are in and
 * known, gives them to libzstd as one piece. RC_OK with the input used up
 * while fewer are in. */
static rc_code frame_open(zs_state *s, rc__io *io)
{
  size_t take = 4 - s->magic_len < io->in_len ? 4 - s->magic_len : io->in_len;
  if (take)
    memcpy(s->magic + s->magic_len, io->in, take);
  s->magic_len += take;
  io->in += take;
  io->in_len -= take;
  if (s->magic_len < 4)
    return RC_OK;
  if (!known_magic(s->magic))
    return RC_E_DECODE;
  ZSTD_inBuffer in = {s->magic, 4, 0};
  ZSTD_outBuffer out = {io->out, io->out_len, 0};
  size_t r = ZSTD_decompressStream(s->dc, &out, &in);
  if (ZSTD_isError(r))
    return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? RC_E_NOMEM : RC_E_DECODE;
  /* Four bytes of a header: buffered whole, nothing decoded from them. */
  if (in.pos != 4 || out.pos != 0)
    return RC_E_DECODE;
  s->frame_start = 0;
  s->magic_len = 0;
  return RC_OK;
}

static rc_code zs_step(void *st, rc__io *io)
{
  zs_state *s = st;
  size_t r;

  if (s->frame_start) {
    rc_code rc = frame_open(s, io);
    if (rc != RC_OK || s->frame_start)
      return rc;
  }
  ZSTD_inBuffer in = {io->in, io->in_len, 0};
  ZSTD_outBuffer out = {io->out, io->out_len, 0};
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
  s->magic_len = 0;
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
