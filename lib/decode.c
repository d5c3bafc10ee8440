/* Streaming Content-Encoding decoder: a chain of zlib inflate stages feeding
 * a capped sink. See decode.h for the contract.
 *
 * Data flows by pushing: the encoded input goes to stage 0 (the coding
 * applied last); each stage inflates into its own small buffer and pushes
 * that buffer to the next stage before it inflates more; the last stage
 * inflates straight into the sink's region. A push returns RC_OK only once
 * every byte given to it has gone through the whole chain, so nothing is
 * left waiting in an intermediate buffer between two writes. */
#include "decode.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define ZLIB_CONST /* next_in points at const input */
#include <zlib.h>

/* Output buffer of a stage that feeds another stage. */
#define RC__STAGE_BUF (16u * 1024u)

/* windowBits for inflateReset2: gzip wrapper, zlib wrapper, raw deflate. */
#define RC__WBITS_GZIP (16 + 15)
#define RC__WBITS_ZLIB 15
#define RC__WBITS_RAW (-15)

typedef enum rc__stage_mode {
  RC__STAGE_HEAD, /* collecting the 2 bytes that open a stream or member */
  RC__STAGE_BODY, /* inflating */
  RC__STAGE_DONE  /* the stream (gzip: the latest member) has ended */
} rc__stage_mode;

/* One coding of the chain. Each is allocated on its own because a z_stream
 * must not move once initialised (zlib's state points back at it). */
typedef struct rc__stage {
  z_stream zs;
  rc__coding coding;
  rc__stage_mode mode;
  unsigned char head[2]; /* opening bytes held until both have arrived */
  size_t held;           /* bytes in head */
  unsigned char *buf;    /* RC__STAGE_BUF bytes once the stage fed another */
} rc__stage;

struct rc__decoder {
  rc_allocator a;     /* zlib's opaque points here: the struct never moves */
  rc__stage **stages; /* stages[0..made); stage 0 takes the encoded input */
  size_t slots;       /* capacity of stages */
  size_t made;        /* stages created, kept for later bodies */
  size_t n;           /* stages used by the current body */
  rc_code status;     /* first non-RC_OK result, repeated until restarted */
};

static rc_code stage_push(rc__decoder *d, size_t i, const unsigned char *in,
                          size_t len, const rc__sink *sink);

/* ---- Coding names ------------------------------------------------------ */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* ASCII case-insensitive comparison of s[0..len) with a lower-case word;
 * no locale is involved, as header tokens are ASCII. */
static int token_is(const char *s, size_t len, const char *word)
{
  size_t i;

  if (strlen(word) != len)
    return 0;
  for (i = 0; i < len; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != word[i])
      return 0;
  }
  return 1;
}

rc_code rc__coding_parse(const char *value, size_t len, rc__coding *chain,
                         size_t max, size_t *n)
{
  size_t pos = 0, count = 0;

  *n = 0;
  if (value == NULL && len > 0)
    return RC_E_INVAL;
  for (;;) {
    size_t start = pos, end = pos;
    rc__coding c;

    while (end < len && value[end] != ',')
      end++;
    pos = end + 1;
    while (start < end && is_blank(value[start]))
      start++;
    while (end > start && is_blank(value[end - 1]))
      end--;

    if (end > start && !token_is(value + start, end - start, "identity")) {
      if (token_is(value + start, end - start, "gzip") ||
          token_is(value + start, end - start, "x-gzip"))
        c = RC__CODING_GZIP;
      else if (token_is(value + start, end - start, "deflate"))
        c = RC__CODING_DEFLATE;
      else
        return RC_E_INVAL;
      /* Keep counting past max without writing, so that an unknown coding
       * later in the list still yields RC_E_INVAL (body kept raw). */
      if (count < max)
        chain[count] = c;
      count++;
    }
    if (pos > len)
      break;
  }
  if (count > max)
    return RC_E_CODINGS;
  *n = count;
  return RC_OK;
}

/* ---- zlib memory through the caller's allocator ------------------------ */

static voidpf rc__zalloc(voidpf opaque, uInt items, uInt size)
{
  const rc_allocator *a = opaque;

  if (size != 0 && items > SIZE_MAX / size)
    return Z_NULL;
  return a->malloc((size_t)items * size, a->ud);
}

static void rc__zfree(voidpf opaque, voidpf p)
{
  const rc_allocator *a = opaque;

  if (p != NULL)
    a->free(p, a->ud);
}

/* ---- Decoder lifetime -------------------------------------------------- */

static rc__stage *stage_new(rc__decoder *d)
{
  rc__stage *s = d->a.malloc(sizeof *s, d->a.ud);

  if (s == NULL)
    return NULL;
  memset(s, 0, sizeof *s);
  s->zs.next_in = Z_NULL;
  s->zs.zalloc = rc__zalloc;
  s->zs.zfree = rc__zfree;
  s->zs.opaque = &d->a;
  /* The real window bits are set by inflateReset2 for every stream. */
  if (inflateInit2(&s->zs, RC__WBITS_ZLIB) != Z_OK) {
    d->a.free(s, d->a.ud);
    return NULL;
  }
  return s;
}

static void stage_free(rc__decoder *d, rc__stage *s)
{
  inflateEnd(&s->zs);
  if (s->buf != NULL)
    d->a.free(s->buf, d->a.ud);
  d->a.free(s, d->a.ud);
}

rc__decoder *rc__decoder_new(const rc_allocator *a)
{
  rc__decoder *d;

  if (a == NULL || a->malloc == NULL || a->realloc == NULL || a->free == NULL)
    return NULL;
  d = a->malloc(sizeof *d, a->ud);
  if (d == NULL)
    return NULL;
  memset(d, 0, sizeof *d);
  d->a = *a;
  d->status = RC_E_INVAL; /* no body started yet */
  return d;
}

void rc__decoder_free(rc__decoder *d)
{
  size_t i;

  if (d == NULL)
    return;
  for (i = 0; i < d->made; i++)
    stage_free(d, d->stages[i]);
  if (d->stages != NULL)
    d->a.free(d->stages, d->a.ud);
  d->a.free(d, d->a.ud);
}

/* Makes sure stages[0..n) exist, creating only the missing ones. */
static rc_code ensure_stages(rc__decoder *d, size_t n)
{
  if (n > d->slots) {
    rc__stage **p;

    if (n > SIZE_MAX / sizeof *p)
      return RC_E_NOMEM;
    p = d->a.realloc(d->stages, n * sizeof *p, d->a.ud);
    if (p == NULL)
      return RC_E_NOMEM;
    d->stages = p;
    d->slots = n;
  }
  while (d->made < n) {
    rc__stage *s = stage_new(d);

    if (s == NULL)
      return RC_E_NOMEM;
    d->stages[d->made++] = s;
  }
  return RC_OK;
}

rc_code rc__decoder_start(rc__decoder *d, const rc__coding *chain, size_t n)
{
  rc_code rc;
  size_t i;

  d->n = 0;
  d->status = RC_E_INVAL;
  if (chain == NULL || n == 0)
    return RC_E_INVAL;
  rc = ensure_stages(d, n);
  if (rc != RC_OK) {
    d->status = rc;
    return rc;
  }
  for (i = 0; i < n; i++) {
    rc__stage *s = d->stages[i];

    /* The chain is in the order applied: stage 0 undoes the last coding. */
    s->coding = chain[n - 1 - i];
    s->mode = RC__STAGE_HEAD;
    s->held = 0;
    if (i + 1 < n && s->buf == NULL) {
      s->buf = d->a.malloc(RC__STAGE_BUF, d->a.ud);
      if (s->buf == NULL) {
        d->status = RC_E_NOMEM;
        return RC_E_NOMEM;
      }
    }
  }
  d->n = n;
  d->status = RC_OK;
  return RC_OK;
}

/* ---- Inflating --------------------------------------------------------- */

static uInt clamp_uint(size_t n) { return n > UINT_MAX ? UINT_MAX : (uInt)n; }

/* Maps an inflate() result. Z_BUF_ERROR only means that no progress was
 * possible (more input needed), which the callers handle as done. */
static rc_code zresult(int zr)
{
  switch (zr) {
  case Z_OK:
  case Z_STREAM_END:
  case Z_BUF_ERROR:
    return RC_OK;
  case Z_MEM_ERROR:
    return RC_E_NOMEM;
  default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
    return RC_E_DECODE;
  }
}

/* One inflate() call from the input span into out[0..*avail); advances it
 * and leaves in *avail the output space left unused. */
static int inflate_step(z_stream *zs, const unsigned char **in, size_t *len,
                        unsigned char *out, uInt *avail)
{
  uInt offered = clamp_uint(*len);
  int zr;

  zs->next_in = *in;
  zs->avail_in = offered;
  zs->next_out = out;
  zs->avail_out = *avail;
  zr = inflate(zs, Z_NO_FLUSH);
  *in += offered - zs->avail_in;
  *len -= offered - zs->avail_in;
  *avail = zs->avail_out;
  return zr;
}

/* The sink is full: tells whether the stream holds more decoded bytes by
 * asking inflate for a single one. RC_TRUNCATED if it does; RC_OK if the
 * stream ended (mode DONE) or needs more input to tell. Input is consumed
 * only until that is known. */
static rc_code probe_at_cap(rc__stage *s, const unsigned char **in,
                            size_t *len)
{
  for (;;) {
    unsigned char scratch;
    uInt avail = 1;
    int zr = inflate_step(&s->zs, in, len, &scratch, &avail);
    rc_code rc = zresult(zr);

    if (avail == 0)
      return RC_TRUNCATED;
    if (rc != RC_OK)
      return rc;
    if (zr == Z_STREAM_END) {
      s->mode = RC__STAGE_DONE;
      return RC_OK;
    }
    if (*len == 0)
      return RC_OK;
  }
}

/* Last stage: inflates directly into the regions the sink offers. Returns
 * once the input is used up, the stream ended, or the cap was met. */
static rc_code inflate_to_sink(rc__stage *s, const unsigned char **in,
                               size_t *len, const rc__sink *sink)
{
  for (;;) {
    unsigned char *out;
    size_t offered;
    uInt room, avail;
    int zr;
    rc_code rc = sink->reserve(sink->ctx, &out, &offered);

    if (rc != RC_OK)
      return rc;
    if (offered == 0)
      return probe_at_cap(s, in, len);
    room = avail = clamp_uint(offered);
    zr = inflate_step(&s->zs, in, len, out, &avail);
    /* Commit before looking at zr: bytes decoded before an error stay. */
    if (room - avail > 0)
      sink->commit(sink->ctx, room - avail);
    rc = zresult(zr);
    if (rc != RC_OK)
      return rc;
    if (zr == Z_STREAM_END) {
      s->mode = RC__STAGE_DONE;
      return RC_OK;
    }
    /* Room left and no input left: inflate has given all it can. */
    if (avail > 0 && *len == 0)
      return RC_OK;
  }
}

/* Intermediate stage i: inflates into its buffer and pushes each buffer
 * full to stage i + 1 before reusing it. */
static rc_code inflate_to_stage(rc__decoder *d, size_t i,
                                const unsigned char **in, size_t *len,
                                const rc__sink *sink)
{
  rc__stage *s = d->stages[i];

  for (;;) {
    uInt avail = RC__STAGE_BUF;
    int zr = inflate_step(&s->zs, in, len, s->buf, &avail);
    rc_code rc;

    if (avail < RC__STAGE_BUF) {
      rc = stage_push(d, i + 1, s->buf, RC__STAGE_BUF - avail, sink);
      if (rc != RC_OK)
        return rc;
    }
    rc = zresult(zr);
    if (rc != RC_OK)
      return rc;
    if (zr == Z_STREAM_END) {
      s->mode = RC__STAGE_DONE;
      return RC_OK;
    }
    if (avail > 0 && *len == 0)
      return RC_OK;
  }
}

static rc_code stage_inflate(rc__decoder *d, size_t i,
                             const unsigned char **in, size_t *len,
                             const rc__sink *sink)
{
  if (i + 1 < d->n)
    return inflate_to_stage(d, i, in, len, sink);
  return inflate_to_sink(d->stages[i], in, len, sink);
}

/* RFC 1950 header check: method 8, window at most 32 KiB, and CMF/FLG as a
 * 16-bit number divisible by 31. Raw deflate data rarely passes it. */
static int is_zlib_header(unsigned cmf, unsigned flg)
{
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
}

/* Adds one opening byte to the stage; once both are there, readies the
 * z_stream for the stream or member they open. Gzip bytes are checked
 * against the magic as they come, so junk is refused at its first byte. */
static rc_code take_head_byte(rc__stage *s, unsigned char byte)
{
  static const unsigned char gzip_magic[2] = {0x1f, 0x8b};
  int wbits;

  if (s->coding == RC__CODING_GZIP && byte != gzip_magic[s->held])
    return RC_E_DECODE;
  s->head[s->held++] = byte;
  if (s->held < 2)
    return RC_OK;
  if (s->coding == RC__CODING_GZIP)
    wbits = RC__WBITS_GZIP;
  else if (is_zlib_header(s->head[0], s->head[1]))
    wbits = RC__WBITS_ZLIB;
  else
    wbits = RC__WBITS_RAW;
  if (inflateReset2(&s->zs, wbits) != Z_OK)
    return RC_E_DECODE;
  s->mode = RC__STAGE_BODY;
  return RC_OK;
}

/* Gives in[0..len) to stage i and everything it decodes to the stages after
 * it. RC_OK means all of it went through the chain. */
static rc_code stage_push(rc__decoder *d, size_t i, const unsigned char *in,
                          size_t len, const rc__sink *sink)
{
  rc__stage *s = d->stages[i];
  rc_code rc;

  while (len > 0) {
    if (s->mode == RC__STAGE_DONE) {
      /* Only gzip may continue after an end: with another member. */
      if (s->coding != RC__CODING_GZIP)
        return RC_E_DECODE;
      s->mode = RC__STAGE_HEAD;
      s->held = 0;
    }
    if (s->mode == RC__STAGE_HEAD) {
      rc = take_head_byte(s, *in);
      if (rc != RC_OK)
        return rc;
      in++;
      len--;
      if (s->mode == RC__STAGE_BODY) {
        const unsigned char *h = s->head;
        size_t hlen = sizeof s->head;

        rc = stage_inflate(d, i, &h, &hlen, sink);
        if (rc != RC_OK)
          return rc;
        /* The shortest stream (raw deflate, empty fixed block) takes both
         * opening bytes; were one left, it would be data after the end. */
        if (hlen > 0)
          return RC_E_DECODE;
      }
    } else {
      rc = stage_inflate(d, i, &in, &len, sink);
      if (rc != RC_OK)
        return rc;
    }
  }
  return RC_OK;
}

rc_code rc__decoder_write(rc__decoder *d, const void *in, size_t len,
                          const rc__sink *sink)
{
  /* After RC_TRUNCATED or an error the z_streams are mid-way; repeat the
   * result rather than decode on from an unknown point. */
  if (d->status != RC_OK || len == 0)
    return d->status;
  d->status = stage_push(d, 0, in, len, sink);
  return d->status;
}

int rc__decoder_ended(const rc__decoder *d)
{
  size_t i;

  if (d == NULL || d->n == 0 || d->status != RC_OK)
    return 0;
  /* Intermediate buffers are always drained when a write returns RC_OK, so
   * every stage being DONE (no opening bytes held) is the whole test. */
  for (i = 0; i < d->n; i++)
    if (d->stages[i]->mode != RC__STAGE_DONE)
      return 0;
  return 1;
}
