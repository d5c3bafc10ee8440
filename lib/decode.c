/* Streaming Content-Encoding decoder: a chain of stages, one per coding,
 * feeding a capped sink. See decode.h for the contract and codec.h for what
 * each coding's file provides.
 *
 * Data flows by pushing: the encoded input goes to stage 0 (the coding
 * applied last); each stage decodes into its own small buffer and pushes
 * that buffer to the next stage before it decodes more; the last stage
 * decodes straight into the sink's region, and the sink is asked for room
 * before every step, so the cap bounds every step. A push returns RC_OK
 * only once every byte given to it has gone through the whole chain, so
 * nothing is left waiting in an intermediate buffer between two writes. */
#include "decode.h"
#include "ascii.h"
#include "codec.h"

#include <stdint.h>
#include <string.h>

/* Output buffer of a stage that feeds another stage. */
#define RC__STAGE_BUF (16u * 1024u)

/* The libraries a stage may hold state for, one slot each, so that a stage
 * keeps each kind for later bodies whatever coding it decodes next. */
enum { LIB_ZLIB, LIB_BROTLI, LIB_ZSTD, LIB_COUNT };

typedef enum rc__stage_mode {
  RC__STAGE_BODY, /* decoding a stream */
  RC__STAGE_DONE  /* the stream (gzip member, zstd frame) has ended */
} rc__stage_mode;

/* One coding of the chain. */
typedef struct rc__stage {
  const rc__codec *codec; /* of the current body's coding */
  rc__coding coding;
  size_t lib; /* state[lib] is the codec's */
  rc__stage_mode mode;
  void *state[LIB_COUNT]; /* libraries' state, NULL until needed */
  unsigned char *buf;     /* RC__STAGE_BUF bytes once the stage fed another */
  rc_allocator *a;        /* the decoder's, for the codec's state */
} rc__stage;

struct rc__decoder {
  rc_allocator a;    /* the codecs point here: the struct never moves */
  rc__stage *stages; /* stages[0..slots), zeroed when added; stage 0
                        takes the encoded input */
  size_t slots;
  size_t n;       /* stages used by the current body */
  rc_code status; /* first non-RC_OK result, repeated until restarted */
};

static rc_code stage_push(rc__decoder *d, size_t i, const unsigned char *in, size_t len,
                          const rc__sink *sink);

/* ---- Codings ------------------------------------------------------------ */

static const struct {
  const char *name;
  rc__coding coding;
} known[] = {
    {"gzip", RC__CODING_GZIP}, {"x-gzip", RC__CODING_GZIP}, {"deflate", RC__CODING_DEFLATE},
#if RC_HAVE_BROTLI
    {"br", RC__CODING_BR},
#endif
#if RC_HAVE_ZSTD
    {"zstd", RC__CODING_ZSTD},
#endif
};

const char *rc_accept_encoding(void) { return rc__decoder_accept(); }

const char *rc__decoder_accept(void)
{
  return "gzip, deflate"
#if RC_HAVE_BROTLI
         ", br"
#endif
#if RC_HAVE_ZSTD
         ", zstd"
#endif
      ;
}

/* The codec of coding c and its state slot; NULL if not built in. */
static const rc__codec *codec_of(rc__coding c, size_t *lib)
{
  switch (c) {
  case RC__CODING_GZIP:
  case RC__CODING_DEFLATE: *lib = LIB_ZLIB; return &rc__codec_zlib;
#if RC_HAVE_BROTLI
  case RC__CODING_BR: *lib = LIB_BROTLI; return &rc__codec_brotli;
#endif
#if RC_HAVE_ZSTD
  case RC__CODING_ZSTD: *lib = LIB_ZSTD; return &rc__codec_zstd;
#endif
  default: return NULL;
  }
}

/* The codec that owns slot lib (for freeing). */
static const rc__codec *codec_of_lib(size_t lib)
{
  size_t l;

  if (lib == LIB_BROTLI)
    return codec_of(RC__CODING_BR, &l);
  if (lib == LIB_ZSTD)
    return codec_of(RC__CODING_ZSTD, &l);
  return &rc__codec_zlib;
}

/* Whether s[0..len) is word, but for ASCII case (ascii.h: no locale). */
static int token_is(const char *s, size_t len, const char *word)
{
  return strlen(word) == len && rc__ascii_ieq(s, word, len);
}

/* The coding named by s[0..len); RC_E_INVAL if this build has none such. */
static rc_code coding_named(const char *s, size_t len, rc__coding *c)
{
  size_t i;

  for (i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (token_is(s, len, known[i].name)) {
      *c = known[i].coding;
      return RC_OK;
    }
  }
  return RC_E_INVAL;
}

rc_code rc__coding_parse(const char *value, size_t len, rc__coding *chain, size_t max, size_t *n)
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
    while (start < end && rc__is_ows(value[start]))
      start++;
    while (end > start && rc__is_ows(value[end - 1]))
      end--;

    if (end > start && !token_is(value + start, end - start, "identity")) {
      if (coding_named(value + start, end - start, &c) != RC_OK)
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

/* ---- Memory through the caller's allocator ----------------------------- */

void *rc__codec_alloc(void *opaque, size_t size)
{
  const rc_allocator *a = opaque;

  return a->malloc(size, a->ud);
}

void rc__codec_free(void *opaque, void *p)
{
  const rc_allocator *a = opaque;

  if (p != NULL)
    a->free(p, a->ud);
}

/* ---- Decoder lifetime -------------------------------------------------- */

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
  size_t i, lib;

  if (d == NULL)
    return;
  for (i = 0; i < d->slots; i++) {
    rc__stage *s = &d->stages[i];

    for (lib = 0; lib < LIB_COUNT; lib++)
      if (s->state[lib] != NULL)
        codec_of_lib(lib)->drop(s->state[lib], &d->a);
    if (s->buf != NULL)
      d->a.free(s->buf, d->a.ud);
  }
  if (d->stages != NULL)
    d->a.free(d->stages, d->a.ud);
  d->a.free(d, d->a.ud);
}

/* Makes sure stages[0..n) exist; new ones hold no state yet. */
static rc_code ensure_stages(rc__decoder *d, size_t n)
{
  rc__stage *p;

  if (n <= d->slots)
    return RC_OK;
  if (n > SIZE_MAX / sizeof *p)
    return RC_E_NOMEM;
  p = d->a.realloc(d->stages, n * sizeof *p, d->a.ud);
  if (p == NULL)
    return RC_E_NOMEM;
  memset(p + d->slots, 0, (n - d->slots) * sizeof *p);
  for (size_t i = d->slots; i < n; i++)
    p[i].a = &d->a;
  d->stages = p;
  d->slots = n;
  return RC_OK;
}

/* Readies stage i for a stream of coding c; `feeds` when it feeds another
 * stage and so needs a buffer. */
static rc_code stage_begin(rc__decoder *d, rc__stage *s, rc__coding c, int feeds)
{
  s->coding = c;
  s->codec = codec_of(c, &s->lib);
  s->mode = RC__STAGE_BODY;
  if (feeds && s->buf == NULL) {
    s->buf = d->a.malloc(RC__STAGE_BUF, d->a.ud);
    if (s->buf == NULL)
      return RC_E_NOMEM;
  }
  return s->codec->begin(&s->state[s->lib], c, &d->a);
}

rc_code rc__decoder_start(rc__decoder *d, const rc__coding *chain, size_t n)
{
  rc_code rc;
  size_t i, lib;

  d->n = 0;
  d->status = RC_E_INVAL;
  if (chain == NULL || n == 0)
    return RC_E_INVAL;
  for (i = 0; i < n; i++)
    if (codec_of(chain[i], &lib) == NULL)
      return RC_E_INVAL;
  rc = ensure_stages(d, n);
  /* The chain is in the order applied: stage 0 undoes the last coding. */
  for (i = 0; i < n && rc == RC_OK; i++)
    rc = stage_begin(d, &d->stages[i], chain[n - 1 - i], i + 1 < n);
  d->status = rc;
  if (rc == RC_OK)
    d->n = n;
  return rc;
}

/* Lets every stage of the body free the state not worth keeping. */
static void rest_all(rc__decoder *d)
{
  size_t i;

  for (i = 0; i < d->n; i++) {
    rc__stage *s = &d->stages[i];

    s->codec->rest(&s->state[s->lib], s->a);
  }
}

/* ---- Decoding ---------------------------------------------------------- */

/* One step of stage s from the input span into out[0..*room); advances
 * the span and leaves in *room the room left unused. */
static rc_code stage_step(rc__stage *s, const unsigned char **in, size_t *len, unsigned char *out,
                          size_t *room)
{
  rc__io io = {*in, *len, out, *room, 0};
  rc_code rc = s->codec->step(s->state[s->lib], &io);

  /* Input and room left, and neither used: the library is stuck, which
   * only a corrupt stream can cause; stop rather than spin. */
  if (rc == RC_OK && !io.ended && *len > 0 && io.in_len == *len && io.out_len == *room)
    rc = RC_E_DECODE;
  *in = io.in;
  *len = io.in_len;
  *room = io.out_len;
  if (rc == RC_OK && io.ended) {
    s->mode = RC__STAGE_DONE;
    s->codec->rest(&s->state[s->lib], s->a);
  }
  return rc;
}

/* The sink is full: tells whether the stream holds more decoded bytes by
 * asking for a single one. RC_TRUNCATED if it does; RC_OK if the stream
 * ended (mode DONE) or needs more input to tell. Input is consumed only
 * until that is known. */
static rc_code probe_at_cap(rc__stage *s, const unsigned char **in, size_t *len)
{
  for (;;) {
    unsigned char scratch;
    size_t room = 1;
    rc_code rc = stage_step(s, in, len, &scratch, &room);

    if (room == 0)
      return RC_TRUNCATED;
    if (rc != RC_OK || s->mode == RC__STAGE_DONE || *len == 0)
      return rc;
  }
}

/* Last stage: decodes directly into the regions the sink offers. Returns
 * once the input is used up, the stream ended, or the cap was met. */
static rc_code decode_to_sink(rc__stage *s, const unsigned char **in, size_t *len,
                              const rc__sink *sink)
{
  for (;;) {
    unsigned char *out;
    size_t offered, room;
    rc_code rc = sink->reserve(sink->ctx, &out, &offered);

    if (rc != RC_OK)
      return rc;
    if (offered == 0)
      return probe_at_cap(s, in, len);
    room = offered;
    rc = stage_step(s, in, len, out, &room);
    /* Commit before looking at rc: bytes decoded before an error stay. */
    if (room < offered)
      sink->commit(sink->ctx, offered - room);
    if (rc != RC_OK || s->mode == RC__STAGE_DONE)
      return rc;
    /* Room left and no input left: the stage has given all it can. */
    if (room > 0 && *len == 0)
      return RC_OK;
  }
}

/* Intermediate stage i: decodes into its buffer and pushes each buffer
 * full to stage i + 1 before reusing it. */
static rc_code decode_to_stage(rc__decoder *d, size_t i, const unsigned char **in, size_t *len,
                               const rc__sink *sink)
{
  rc__stage *s = &d->stages[i];

  for (;;) {
    size_t room = RC__STAGE_BUF;
    rc_code rc = stage_step(s, in, len, s->buf, &room);

    if (room < RC__STAGE_BUF) {
      rc_code pushed = stage_push(d, i + 1, s->buf, RC__STAGE_BUF - room, sink);
      if (pushed != RC_OK)
        return pushed;
    }
    if (rc != RC_OK || s->mode == RC__STAGE_DONE)
      return rc;
    if (room > 0 && *len == 0)
      return RC_OK;
  }
}

/* Gives in[0..len) to stage i and everything it decodes to the stages after
 * it. RC_OK means all of it went through the chain. */
static rc_code stage_push(rc__decoder *d, size_t i, const unsigned char *in, size_t len,
                          const rc__sink *sink)
{
  rc__stage *s = &d->stages[i];
  rc_code rc;

  while (len > 0) {
    if (s->mode == RC__STAGE_DONE) {
      /* More after an end: another gzip member or zstd frame, or junk. */
      rc = s->codec->again(&s->state[s->lib], s->coding, &d->a);
      if (rc != RC_OK)
        return rc;
      s->mode = RC__STAGE_BODY;
    }
    if (i + 1 < d->n)
      rc = decode_to_stage(d, i, &in, &len, sink);
    else
      rc = decode_to_sink(s, &in, &len, sink);
    if (rc != RC_OK)
      return rc;
  }
  return RC_OK;
}

rc_code rc__decoder_write(rc__decoder *d, const void *in, size_t len, const rc__sink *sink)
{
  /* After RC_TRUNCATED or an error the streams are mid-way; repeat the
   * result rather than decode on from an unknown point. */
  if (d->status != RC_OK || len == 0)
    return d->status;
  d->status = stage_push(d, 0, in, len, sink);
  if (d->status != RC_OK)
    rest_all(d);
  return d->status;
}

int rc__decoder_ended(const rc__decoder *d)
{
  size_t i;

  if (d == NULL || d->n == 0 || d->status != RC_OK)
    return 0;
  /* Intermediate buffers are always drained when a write returns RC_OK, so
   * every stage being DONE is the whole test. */
  for (i = 0; i < d->n; i++)
    if (d->stages[i].mode != RC__STAGE_DONE)
      return 0;
  return 1;
}
