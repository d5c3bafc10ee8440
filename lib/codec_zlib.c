/* gzip and deflate through zlib: one z_stream per stage, reused for every
 * stream and member with inflateReset2. See codec.h.
 *
 * The two bytes that open a stream choose the wrapper: gzip must start with
 * its magic (junk is refused at its first byte); deflate is zlib-wrapped
 * when they form a valid RFC 1950 header, else raw. */
#include "codec.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define ZLIB_CONST /* next_in points at const input */
#include <zlib.h>

/* windowBits for inflateReset2: gzip wrapper, zlib wrapper, raw deflate. */
#define WBITS_GZIP (16 + 15)
#define WBITS_ZLIB 15
#define WBITS_RAW  (-15)

typedef enum zl_mode {
  ZL_HEAD, /* collecting the 2 bytes that open a stream or member */
  ZL_FEED, /* inflating those 2 bytes */
  ZL_BODY  /* inflating the input */
} zl_mode;

typedef struct zl_state {
  z_stream zs; /* must not move once initialised: zlib points back at it */
  rc__coding coding;
  zl_mode mode;
  unsigned char head[2]; /* opening bytes */
  size_t held;           /* bytes in head */
  size_t fed;            /* of them, given to inflate */
} zl_state;

static voidpf zl_alloc(voidpf opaque, uInt items, uInt size)
{
  const rc_allocator *a = opaque;

  if (size != 0 && items > SIZE_MAX / size)
    return Z_NULL;
  return a->malloc((size_t)items * size, a->ud);
}

static void zl_free(voidpf opaque, voidpf p) { rc__codec_free(opaque, p); }

static rc_code zl_begin(void **st, rc__coding c, const rc_allocator *a)
{
  zl_state *s = *st;

  if (s == NULL) {
    s = a->malloc(sizeof *s, a->ud);
    if (s == NULL)
      return RC_E_NOMEM;
    memset(s, 0, sizeof *s);
    s->zs.zalloc = zl_alloc;
    s->zs.zfree = zl_free;
    s->zs.opaque = (voidpf)(uintptr_t)a;
    /* The real window bits are set by inflateReset2 for every stream. */
    if (inflateInit2(&s->zs, WBITS_ZLIB) != Z_OK) {
      a->free(s, a->ud);
      return RC_E_NOMEM;
    }
    *st = s;
  }
  s->coding = c;
  s->mode = ZL_HEAD;
  s->held = s->fed = 0;
  return RC_OK;
}

static uInt clamp_uint(size_t n) { return n > UINT_MAX ? UINT_MAX : (uInt)n; }

/* Maps an inflate() result. Z_BUF_ERROR only means that no progress was
 * possible (more input needed), which the chain handles as done. */
static rc_code zresult(int zr)
{
  switch (zr) {
  case Z_OK:
  case Z_STREAM_END:
  case Z_BUF_ERROR: return RC_OK;
  case Z_MEM_ERROR: return RC_E_NOMEM;
  default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */ return RC_E_DECODE;
  }
}

/* One inflate() call from in[0..*len) into io's room; advances both. */
static rc_code inflate_once(zl_state *s, const unsigned char **in, size_t *len, rc__io *io)
{
  uInt in_n = clamp_uint(*len), out_n = clamp_uint(io->out_len);
  int zr;

  s->zs.next_in = *in;
  s->zs.avail_in = in_n;
  s->zs.next_out = io->out;
  s->zs.avail_out = out_n;
  zr = inflate(&s->zs, Z_NO_FLUSH);
  *in += in_n - s->zs.avail_in;
  *len -= in_n - s->zs.avail_in;
  io->out += out_n - s->zs.avail_out;
  io->out_len -= out_n - s->zs.avail_out;
  if (zr == Z_STREAM_END)
    io->ended = 1;
  return zresult(zr);
}

/* RFC 1950 header check: method 8, window at most 32 KiB, and CMF/FLG as a
 * 16-bit number divisible by 31. Raw deflate data rarely passes it. */
static int is_zlib_header(unsigned cmf, unsigned flg)
{
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
}

/* Takes opening bytes from the input; once both are there, readies the
 * z_stream for the stream or member they open. Gzip bytes are checked
 * against the magic as they come. */
static rc_code take_head(zl_state *s, rc__io *io)
{
  static const unsigned char gzip_magic[2] = {0x1f, 0x8b};
  int wbits;

  while (s->held < 2 && io->in_len > 0) {
    if (s->coding == RC__CODING_GZIP && *io->in != gzip_magic[s->held])
      return RC_E_DECODE;
    s->head[s->held++] = *io->in++;
    io->in_len--;
  }
  if (s->held < 2)
    return RC_OK;
  if (s->coding == RC__CODING_GZIP)
    wbits = WBITS_GZIP;
  else if (is_zlib_header(s->head[0], s->head[1]))
    wbits = WBITS_ZLIB;
  else
    wbits = WBITS_RAW;
  if (inflateReset2(&s->zs, wbits) != Z_OK)
    return RC_E_DECODE;
  s->mode = ZL_FEED;
  s->fed = 0;
  return RC_OK;
}

/* Inflates the opening bytes not yet given to zlib. */
static rc_code feed_head(zl_state *s, rc__io *io)
{
  const unsigned char *h = s->head + s->fed;
  size_t left = sizeof s->head - s->fed;
  rc_code rc = inflate_once(s, &h, &left, io);

  s->fed = sizeof s->head - left;
  if (rc != RC_OK)
    return rc;
  /* The shortest stream (raw deflate, empty fixed block) takes both
   * opening bytes; were one left, it would be data after the end. */
  if (io->ended)
    return left > 0 ? RC_E_DECODE : RC_OK;
  if (left == 0)
    s->mode = ZL_BODY;
  return RC_OK;
}

static rc_code zl_step(void *st, rc__io *io)
{
  zl_state *s = st;
  rc_code rc = RC_OK;

  if (s->mode == ZL_HEAD)
    rc = take_head(s, io);
  if (rc == RC_OK && s->mode == ZL_FEED)
    rc = feed_head(s, io);
  if (rc == RC_OK && s->mode == ZL_BODY && !io->ended && io->out_len > 0)
    rc = inflate_once(s, &io->in, &io->in_len, io);
  return rc;
}

/* Only gzip may go on after an end: with another member. */
static rc_code zl_again(void **st, rc__coding c, const rc_allocator *a)
{
  zl_state *s = *st;

  (void)a;
  if (c != RC__CODING_GZIP)
    return RC_E_DECODE;
  s->mode = ZL_HEAD;
  s->held = 0;
  return RC_OK;
}

/* zlib's state (about 7 KiB, and a 32 KiB window) is always kept. */
static void zl_rest(void **st, const rc_allocator *a)
{
  (void)st;
  (void)a;
}

static void zl_drop(void *st, const rc_allocator *a)
{
  zl_state *s = st;

  if (s == NULL)
    return;
  inflateEnd(&s->zs);
  a->free(s, a->ud);
}

const rc__codec rc__codec_zlib = {zl_begin, zl_step, zl_again, zl_rest, zl_drop};
