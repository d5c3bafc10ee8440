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

/* The longest frame header (RFC 8878 3.1.1.1): magic, descriptor, window
 * descriptor, dictionary id, content size. A skippable frame's is 8. */
#define HEADER_MAX 18

typedef struct zs_state {
  ZSTD_DCtx *dc;
  int frame_start;                /* the next input byte opens a frame */
  unsigned char head[HEADER_MAX]; /* a frame's header, held until all is in */
  size_t head_len;
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
  s->head_len = 0;
  return RC_OK;
}

/* A frame's magic number (little-endian): today's frames and skippable
 * ones are read; legacy frames (0xFD2FB522..0xFD2FB527) and anything else
 * are refused. The whole number is looked at, not its first byte: libzstd
 * tells a legacy frame by the piece it is given, not by the header bytes it
 * buffered, so a frame that opens with 0x28 and goes on with a legacy
 * magic in the next piece would reach its legacy decoder. */
static uint32_t magic_of(const unsigned char m[4])
{
  return (uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24;
}

static int skippable(const unsigned char m[4])
{
  return (magic_of(m) & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

static int known_magic(const unsigned char m[4])
{
  return magic_of(m) == ZSTD_MAGICNUMBER || skippable(m);
}

/* The size of the header of the frame whose first bytes are m[0..len),
 * once they tell it (RFC 8878 3.1.1.1: 8 for a skippable frame; else from
 * the frame header descriptor, the fifth byte); 0 while they do not. */
static size_t header_size(const unsigned char *m, size_t len)
{
  static const unsigned char did_size[4] = {0, 1, 2, 4}, fcs_size[4] = {0, 2, 4, 8};
  if (len < 4)
    return 0;
  if (skippable(m))
    return 8;
  if (len < 5)
    return 0;
  unsigned fhd = m[4], single = (fhd >> 5) & 1, fcs = fhd >> 6;
  return 5 + !single + did_size[fhd & 3] + fcs_size[fcs] + (single && !fcs);
}

/* Takes a frame's header from the input, and once all of it is in (its
 * magic known), gives it to libzstd as a piece of its own. RC_OK with the
 * input used up while less is in.
 *
 * Whole, and alone: libzstd (1.5.4 and later) looks, in the call that
 * completes a header, for a chance to decode the whole frame at once when
 * the output room is at least the frame's declared content size. It reads
 * that frame from the start of the *current* piece, so a header that came
 * in two pieces made it parse the bytes after the piece's start as a frame
 * of their own: the verdict and the bytes then depended on the room the
 * sink offered and on how the input was cut (a frame whose fifth byte
 * opened a skippable frame failed only with room for its content). A
 * header alone is no whole frame: the shortcut never applies, and the
 * frame is decoded as a stream, the same whatever the room and the cuts. */
static rc_code frame_open(zs_state *s, rc__io *io)
{
  size_t need = header_size(s->head, s->head_len);
  while (io->in_len > 0 && (need == 0 || s->head_len < need)) {
    s->head[s->head_len++] = *io->in++;
    io->in_len--;
    if (s->head_len == 4 && !known_magic(s->head))
      return RC_E_DECODE;
    need = header_size(s->head, s->head_len);
  }
  if (need == 0 || s->head_len < need)
    return RC_OK;
  ZSTD_inBuffer in = {s->head, need, 0};
  ZSTD_outBuffer out = {io->out, io->out_len, 0};
  size_t r = ZSTD_decompressStream(s->dc, &out, &in);
  if (ZSTD_isError(r))
    return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? RC_E_NOMEM : RC_E_DECODE;
  /* A header: taken whole, nothing decoded from it. */
  if (in.pos != need || out.pos != 0)
    return RC_E_DECODE;
  s->frame_start = 0;
  s->head_len = 0;
  if (r == 0) /* an empty skippable frame: it ended */
    io->ended = 1;
  return RC_OK;
}

static rc_code zs_step(void *st, rc__io *io)
{
  zs_state *s = st;
  size_t r;

  if (s->frame_start) {
    rc_code rc = frame_open(s, io);
    if (rc != RC_OK || s->frame_start || io->ended)
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
  s->head_len = 0;
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
