/*
 * In-process HTTP/1.1 test server; see server.h for the routes.
 *
 * Threads: one accept thread, one thread per connection. Bodies are written
 * straight from precomputed buffers: the first PATTERN_CACHED pattern bytes
 * (filled in on demand, once per server) or cached encodings (gzip, bombs...).
 */
#define _GNU_SOURCE
#define ZLIB_CONST
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#if TS_HAVE_BR
#include <brotli/encode.h>
#endif
#if TS_HAVE_ZSTD
#include <zstd.h>
#endif

#define HEAD_MAX       ((size_t)64 * 1024)  /* largest request head */
#define OUT_CAP        ((size_t)16 * 1024)  /* response head buffer */
#define IO_MAX         ((size_t)256 * 1024) /* largest single body write */
#define CHUNK_DEFAULT  ((size_t)16 * 1024)  /* default chunk size */
#define PATTERN_CACHED ((size_t)16 * 1024 * 1024 + IO_MAX)
#define CACHE_LIMIT    ((size_t)256 * 1024 * 1024) /* evictable encodings */
#define BOMB_BLOCK     ((size_t)1024 * 1024)
#define BOMB_STEP      ((size_t)64 * 1024) /* br/zstd bombs: flush interval */
#define MAX_PARAMS     32

#define WB_GZIP (15 + 16)
#define WB_ZLIB 15
#define WB_RAW  (-15)

/* ---- Body pattern ---------------------------------------------------- */

/* 64 words of exactly 8 bytes; the last one is binary (NUL, high bytes). */
static const char WORDS[] = "lorem   "
                            "ipsum   "
                            "dolor   "
                            "sit     "
                            "amet,   "
                            "consect "
                            "adipisc "
                            "elit.   "
                            "sed     "
                            "do      "
                            "eiusmod "
                            "tempor  "
                            "incidid "
                            "ut      "
                            "labore  "
                            "et      "
                            "dolore  "
                            "magna   "
                            "aliqua. "
                            "enim    "
                            "ad      "
                            "minim   "
                            "veniam, "
                            "quis    "
                            "nostrud "
                            "exercit "
                            "ullamco "
                            "laboris "
                            "nisi    "
                            "aliquip "
                            "ex      "
                            "ea      "
                            "commodo "
                            "conseq. "
                            "duis    "
                            "aute    "
                            "irure   "
                            "in      "
                            "reprehe "
                            "volupt  "
                            "velit   "
                            "esse    "
                            "cillum  "
                            "fugiat  "
                            "nulla   "
                            "pariat. "
                            "except  "
                            "sint    "
                            "occaeca "
                            "cupidat "
                            "non     "
                            "proiden "
                            "sunt    "
                            "culpa   "
                            "qui     "
                            "officia "
                            "deserun "
                            "mollit  "
                            "anim    "
                            "id      "
                            "est     "
                            "laborum."
                            "0123456\n"
                            "\0\x01\x7f\x80\xfe\xff\r\n";
_Static_assert(sizeof WORDS == 64 * 8 + 1, "WORDS holds 64 words of 8 bytes");

/* splitmix64 finaliser: every output bit depends on every input bit. */
static uint64_t mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static const char *pattern_word(uint64_t word_index)
{
  return WORDS + 8 * (mix64(word_index) >> 58);
}

unsigned char ts_pattern_byte(size_t i) { return (unsigned char)pattern_word(i / 8)[i % 8]; }

void ts_pattern_fill(unsigned char *dst, size_t offset, size_t n)
{
  while (n > 0) {
    size_t in_word = offset % 8;
    size_t take = 8 - in_word < n ? 8 - in_word : n;
    memcpy(dst, pattern_word(offset / 8) + in_word, take);
    dst += take;
    offset += take;
    n -= take;
  }
}

/* ---- Types ----------------------------------------------------------- */

typedef struct {
  unsigned char *p;
  size_t len, cap;
} bytes;

typedef enum {
  ENC_GZIP,
  ENC_ZLIB,
  ENC_RAW,
  ENC_GZIP2,
  ENC_IDENTITY,
  ENC_BOMB,
  ENC_BOMB2,
  ENC_BAD_MAGIC,
  ENC_BAD_CRC,
  ENC_BAD_LENGTH,
  ENC_TRUNCATED,
  ENC_JUNK,
  ENC_BR,
  ENC_ZSTD, /* the pattern; zstd: members frames */
  ENC_BR_BOMB,
  ENC_ZSTD_BOMB, /* n zero bytes */
  ENC_BR_DEFECT,
  ENC_ZSTD_DEFECT /* the pattern with a defect */
} enc_kind;

/* Codings an encoding can be wrapped in (compressed again). */
typedef enum { WRAP_NONE, WRAP_GZIP, WRAP_BR, WRAP_ZSTD } enc_wrap;

/* Defects of br and zstd streams. */
typedef enum { DEF_TRUNCATED, DEF_JUNK, DEF_CRC, DEF_WINDOW } enc_defect;

/* Everything an encoding depends on; doubles as the cache key. */
typedef struct {
  enc_kind kind;
  size_t n;
  size_t members;
  enc_wrap wrap;     /* then compressed again with this */
  enc_defect defect; /* for ENC_*_DEFECT */
} enc_args;

typedef struct cache_entry cache_entry;
struct cache_entry {
  cache_entry *next;
  enc_args args;
  bytes data;
  unsigned refs; /* responses currently sending data */
  unsigned long last_used;
};

typedef struct conn conn;

struct ts_server {
  int listen_fd;
  int wake_pipe[2]; /* ts_stop writes here to wake accept */
  int port;
  pthread_t accept_thread;
  pthread_mutex_t lock;     /* guards conns, conn fds, sleeps */
  pthread_cond_t stop_cond; /* broadcast when stopping is set */
  atomic_bool stopping;
  conn *conns;
  atomic_ulong requests;
  unsigned long gathering, gather_round; /* /gather (under lock) */
  unsigned char *pattern;       /* room for pattern bytes 0..PATTERN_CACHED-1 */
  atomic_size_t pattern_ready;  /* how many of them are filled in */
  pthread_mutex_t pattern_lock; /* serialises filling */
  pthread_mutex_t cache_lock;   /* guards the cache list and counters */
  pthread_mutex_t gen_lock;     /* one encoding is generated at a time */
  cache_entry *cache;
  size_t cache_bytes;
  unsigned long cache_clock;
  _Atomic(ts_request_fn *) on_request; /* ts_on_request's; NULL: none */
  void *_Atomic on_request_ud;
};

struct conn {
  ts_server *srv;
  conn *next;
  pthread_t thread;
  int fd;           /* -1 once closed (under srv->lock) */
  bool done;        /* thread finished (under srv->lock) */
  bool ok;          /* false after a socket error */
  bool close_after; /* close once this response is out */
  char *in;         /* HEAD_MAX bytes read from the client */
  size_t in_len;
  char *target;           /* HEAD_MAX bytes: split copy of target */
  unsigned char *scratch; /* IO_MAX bytes, allocated on first use */
  size_t out_len;
  char out[OUT_CAP]; /* response head, sent with the body */
};

typedef struct {
  const char *key, *val; /* val is still URL-encoded */
} param;

typedef struct {
  const char *head; /* raw request head, final CRLFCRLF incl. */
  size_t head_len;
  size_t body_len; /* the request body's bytes right after head (those read with it) */
  const char *path;
  param params[MAX_PARAMS];
  int nparams;
  size_t content_length;
  bool is_head, keep_alive, expect_continue, chunked_body;
  bool is_connect; /* CONNECT: a proxy tunnel request */
  bool authorized; /* carries Basic credentials */
  bool bad;        /* a parameter failed to parse */
} request;

typedef enum {
  TE_LENGTH,  /* Content-Length */
  TE_CHUNKED, /* Transfer-Encoding: chunked */
  TE_CLOSE,   /* no length, "Connection: close" */
  TE_NOBODY,  /* no framing headers and no body */
  TE_ABORT    /* caller wrote framing; close silently */
} te_mode;

typedef struct {
  const unsigned char *data; /* NULL: pattern bytes 0..len-1 */
  size_t len;
  te_mode te;
  size_t write_size;      /* bytes per send (chunk size); 0: IO_MAX */
  unsigned long delay_us; /* pause between writes */
  const char *trailer;    /* chunked: trailer lines, each with CRLF */
} body;

/* ---- Small helpers --------------------------------------------------- */

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static bool bytes_reserve(bytes *b, size_t extra)
{
  if (b->cap - b->len >= extra)
    return true;
  size_t cap = b->cap ? b->cap * 2 : 64 * 1024;
  while (cap - b->len < extra)
    cap *= 2;
  unsigned char *p = realloc(b->p, cap);
  if (!p)
    return false;
  b->p = p;
  b->cap = cap;
  return true;
}

static bool bytes_append(bytes *b, const void *data, size_t n)
{
  if (!bytes_reserve(b, n))
    return false;
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return true;
}

/* Fills the precomputed pattern up to at least `end` bytes. It is filled on
 * demand, in 1 MiB steps, so that starting a server costs nothing. */
static void pattern_extend(ts_server *s, size_t end)
{
  pthread_mutex_lock(&s->pattern_lock);
  size_t ready = atomic_load_explicit(&s->pattern_ready, memory_order_relaxed);
  if (ready < end) {
    size_t step = (size_t)1 << 20;
    size_t target = min_size(PATTERN_CACHED, (end + step - 1) / step * step);
    ts_pattern_fill(s->pattern + ready, ready, target - ready);
    atomic_store_explicit(&s->pattern_ready, target, memory_order_release);
  }
  pthread_mutex_unlock(&s->pattern_lock);
}

/* Returns n pattern bytes from offset: from the precomputed buffer when it
 * covers them, otherwise generated into *scratch (allocated on demand). */
static const unsigned char *pattern_slice(ts_server *s, size_t offset, size_t n,
                                          unsigned char **scratch)
{
  if (offset <= PATTERN_CACHED && n <= PATTERN_CACHED - offset) {
    if (atomic_load_explicit(&s->pattern_ready, memory_order_acquire) < offset + n)
      pattern_extend(s, offset + n);
    return s->pattern + offset;
  }
  if (!*scratch && !(*scratch = malloc(IO_MAX)))
    return NULL;
  ts_pattern_fill(*scratch, offset, n);
  return *scratch;
}

/* Sleeps up to us microseconds; returns early when the server stops. */
static void pause_us(ts_server *s, unsigned long us)
{
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)(us / 1000000);
  until.tv_nsec += (long)(us % 1000000) * 1000;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->lock);
  while (!atomic_load(&s->stopping) &&
         pthread_cond_timedwait(&s->stop_cond, &s->lock, &until) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&s->lock);
}

/* ---- Encodings ------------------------------------------------------- */

/* Feeds one input piece to deflate and appends all output it produces. */
static bool deflate_step(z_stream *z, const unsigned char *in, size_t n, int flush, bytes *out)
{
  z->next_in = in;
  z->avail_in = (uInt)n;
  do {
    if (!bytes_reserve(out, 64 * 1024))
      return false;
    size_t room = min_size(out->cap - out->len, UINT_MAX);
    z->next_out = out->p + out->len;
    z->avail_out = (uInt)room;
    if (deflate(z, flush) == Z_STREAM_ERROR)
      return false;
    out->len += room - z->avail_out;
  } while (z->avail_out == 0);
  return true;
}

/* Compresses len bytes of src (or of the pattern when src is NULL) starting
 * at offset into one stream of the given zlib window bits. */
static bool zcompress(ts_server *s, const unsigned char *src, size_t offset, size_t len, int wbits,
                      int level, bytes *out)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  unsigned char *scratch = NULL;
  size_t done = 0;
  bool ok;
  do {
    size_t n = min_size(len - done, IO_MAX);
    const unsigned char *in =
        src ? src + offset + done : pattern_slice(s, offset + done, n, &scratch);
    int flush = done + n == len ? Z_FINISH : Z_NO_FLUSH;
    ok = in && !atomic_load(&s->stopping) && deflate_step(&z, in, n, flush, out);
    done += n;
  } while (ok && done < len);
  deflateEnd(&z);
  free(scratch);
  return ok;
}

/* K gzip members, each of a consecutive slice of the pattern. */
static bool gzip_members(ts_server *s, size_t n, size_t members, bytes *out)
{
  size_t k = members ? members : 1, offset = 0;
  for (size_t i = 0; i < k; i++) {
    size_t len = n / k + (i < n % k);
    if (!zcompress(s, NULL, offset, len, WB_GZIP, Z_DEFAULT_COMPRESSION, out))
      return false;
    offset += len;
  }
  return true;
}

static void put_le32(unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * One gzip member of `size` zero bytes at level 9. Deflating 1 GiB of zeros
 * takes ~3 s, so the stream is built from repeats instead: after
 * Z_FULL_FLUSH deflate forgets all history, so every BOMB_BLOCK of zeros
 * compresses to the same byte-aligned segment. The segment is emitted as
 * often as needed, the remainder is compressed normally, and the trailer
 * (CRC32, ISIZE) is patched to describe the whole size. If the first two
 * segments ever differ, the whole input is simply streamed through deflate.
 */
static bool gzip_zeros(ts_server *s, size_t size, bytes *out)
{
  unsigned char *zeros = calloc(1, BOMB_BLOCK);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (!zeros || deflateInit2(&z, 9, Z_DEFLATED, WB_GZIP, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(zeros);
    return false;
  }
  size_t blocks = size / BOMB_BLOCK, rest = size % BOMB_BLOCK, emitted = 0;
  bool ok = true;
  if (blocks >= 2) {
    ok = deflate_step(&z, zeros, BOMB_BLOCK, Z_FULL_FLUSH, out);
    size_t first_end = out->len;
    ok = ok && deflate_step(&z, zeros, BOMB_BLOCK, Z_FULL_FLUSH, out);
    size_t seg = out->len - first_end;
    if (ok && seg < first_end && memcmp(out->p + first_end - seg, out->p + first_end, seg) == 0) {
      ok = bytes_reserve(out, seg * (blocks - 2));
      for (emitted = 2; ok && emitted < blocks; emitted++) {
        memcpy(out->p + out->len, out->p + first_end, seg);
        out->len += seg;
      }
    } else if (ok) { /* segments differ: stream everything */
      emitted = blocks;
      for (size_t i = 2; ok && i < blocks; i++)
        ok = !atomic_load(&s->stopping) && deflate_step(&z, zeros, BOMB_BLOCK, Z_NO_FLUSH, out);
    }
  }
  for (; ok && emitted < blocks; emitted++)
    ok = deflate_step(&z, zeros, BOMB_BLOCK, Z_NO_FLUSH, out);
  ok = ok && deflate_step(&z, zeros, rest, Z_FINISH, out);
  deflateEnd(&z);
  if (ok && blocks >= 2) { /* trailer must describe all of size */
    uLong block_crc = crc32(0, zeros, (uInt)BOMB_BLOCK), crc = crc32(0, Z_NULL, 0);
    for (size_t i = 0; i < blocks; i++)
      crc = crc32_combine(crc, block_crc, (z_off_t)BOMB_BLOCK);
    crc = crc32_combine(crc, crc32(0, zeros, (uInt)rest), (z_off_t)rest);
    put_le32(out->p + out->len - 8, (uint32_t)crc);
    put_le32(out->p + out->len - 4, (uint32_t)size);
  }
  free(zeros);
  return ok;
}

/* A gzip of n pattern bytes with the defect named by kind. */
static bool corrupt_gzip(ts_server *s, enc_kind kind, size_t n, bytes *out)
{
  if (!zcompress(s, NULL, 0, n, WB_GZIP, Z_DEFAULT_COMPRESSION, out))
    return false;
  unsigned char *trailer = out->p + out->len - 8;
  switch (kind) {
  case ENC_BAD_MAGIC: out->p[0] ^= 0xff; break;
  case ENC_BAD_CRC: trailer[0] ^= 0xff; break;
  case ENC_BAD_LENGTH: put_le32(trailer + 4, get_le32(trailer + 4) + 1); break;
  case ENC_TRUNCATED: out->len /= 2; break;
  default: return bytes_append(out, "JUNKJUNKJUNKJUNK", 16);
  }
  return true;
}

/* ---- br and zstd encoders -------------------------------------------- */

/* One streaming interface over deflate, libbrotlienc and libzstd, so that
 * the pattern, bombs and wrappings are made the same way for each. */
typedef enum { PUSH_MORE, PUSH_FLUSH, PUSH_END } push_mode;

typedef struct coder coder;
struct coder {
  void *st;
  /* Compresses n bytes of in, then flushes or ends the stream as m says,
   * appending all output to out. */
  bool (*push)(coder *c, const unsigned char *in, size_t n, push_mode m, bytes *out);
  void (*end)(coder *c);
};

int ts_can_encode(const char *coding)
{
  if (strcmp(coding, "gzip") == 0 || strcmp(coding, "deflate") == 0)
    return 1;
  if (strcmp(coding, "br") == 0)
    return TS_HAVE_BR;
  if (strcmp(coding, "zstd") == 0)
    return TS_HAVE_ZSTD;
  return 0;
}

static bool gz_push(coder *c, const unsigned char *in, size_t n, push_mode m, bytes *out)
{
  int flush = m == PUSH_END ? Z_FINISH : m == PUSH_FLUSH ? Z_FULL_FLUSH : Z_NO_FLUSH;
  return deflate_step(c->st, in, n, flush, out);
}

static void gz_end(coder *c)
{
  deflateEnd(c->st);
  free(c->st);
}

static bool coder_gzip(coder *c, int level)
{
  z_stream *z = calloc(1, sizeof *z);
  if (!z || deflateInit2(z, level, Z_DEFLATED, WB_GZIP, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    free(z);
    return false;
  }
  *c = (coder){z, gz_push, gz_end};
  return true;
}

#if TS_HAVE_BR
static bool br_push(coder *c, const unsigned char *in, size_t n, push_mode m, bytes *out)
{
  BrotliEncoderOperation op = m == PUSH_END     ? BROTLI_OPERATION_FINISH
                              : m == PUSH_FLUSH ? BROTLI_OPERATION_FLUSH
                                                : BROTLI_OPERATION_PROCESS;
  const uint8_t *next_in = in;
  size_t avail_in = n;
  for (;;) {
    if (!bytes_reserve(out, 64 * 1024))
      return false;
    uint8_t *next_out = out->p + out->len;
    size_t avail_out = out->cap - out->len;
    if (!BrotliEncoderCompressStream(c->st, op, &avail_in, &next_in, &avail_out, &next_out, NULL))
      return false;
    out->len = (size_t)(next_out - out->p);
    if (avail_in == 0 && !BrotliEncoderHasMoreOutput(c->st) &&
        (m != PUSH_END || BrotliEncoderIsFinished(c->st)))
      return true;
  }
}

static void br_end(coder *c) { BrotliEncoderDestroyInstance(c->st); }

/* lgwin 10..24; large: the large-window extension (lgwin up to 30), which
 * respchain refuses. */
static bool coder_br(coder *c, int quality, int lgwin, bool large)
{
  BrotliEncoderState *st = BrotliEncoderCreateInstance(NULL, NULL, NULL);
  if (!st)
    return false;
  BrotliEncoderSetParameter(st, BROTLI_PARAM_QUALITY, (uint32_t)quality);
  BrotliEncoderSetParameter(st, BROTLI_PARAM_LARGE_WINDOW, large);
  BrotliEncoderSetParameter(st, BROTLI_PARAM_LGWIN, (uint32_t)lgwin);
  *c = (coder){st, br_push, br_end};
  return true;
}
#else
static bool coder_br(coder *c, int quality, int lgwin, bool large)
{
  (void)c, (void)quality, (void)lgwin, (void)large;
  return false;
}
#endif

#if TS_HAVE_ZSTD
static bool zstd_push(coder *c, const unsigned char *in, size_t n, push_mode m, bytes *out)
{
  ZSTD_EndDirective d = m == PUSH_END     ? ZSTD_e_end
                        : m == PUSH_FLUSH ? ZSTD_e_flush
                                          : ZSTD_e_continue;
  ZSTD_inBuffer ib = {in, n, 0};
  for (;;) {
    if (!bytes_reserve(out, 64 * 1024))
      return false;
    ZSTD_outBuffer ob = {out->p + out->len, out->cap - out->len, 0};
    size_t r = ZSTD_compressStream2(c->st, &ob, &ib, d);
    out->len += ob.pos;
    if (ZSTD_isError(r))
      return false;
    if (d == ZSTD_e_continue ? ib.pos == ib.size : r == 0)
      return true;
  }
}

static void zstd_end(coder *c) { ZSTD_freeCCtx(c->st); }

/* Frames of unknown size (the stream is pushed before it is ended), as a
 * server that compresses on the fly sends: the window is the level's, or
 * 2^wlog when wlog > 0. */
static bool coder_zstd(coder *c, int level, int wlog, bool checksum)
{
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (!cc)
    return false;
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, wlog);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum);
  *c = (coder){cc, zstd_push, zstd_end};
  return true;
}
#else
static bool coder_zstd(coder *c, int level, int wlog, bool checksum)
{
  (void)c, (void)level, (void)wlog, (void)checksum;
  return false;
}
#endif

/* The coder for a wrapping or for the base of a br/zstd encoding. */
static bool coder_for(coder *c, enc_wrap w, bool bomb)
{
  switch (w) {
  case WRAP_GZIP: return coder_gzip(c, bomb ? 9 : Z_DEFAULT_COMPRESSION);
  case WRAP_BR: return coder_br(c, 5, 22, false);
  case WRAP_ZSTD: return coder_zstd(c, 3, 0, false);
  default: return false;
  }
}

/* Compresses len bytes of src (or of the pattern when src is NULL) from
 * offset into one stream, and ends it with no input (so that zstd does not
 * learn the size). Takes c over: ends it. */
static bool compress_with(ts_server *s, coder *c, const unsigned char *src, size_t offset,
                          size_t len, bytes *out)
{
  unsigned char *scratch = NULL;
  bool ok = true;
  for (size_t done = 0, n; ok && done < len; done += n) {
    n = min_size(len - done, IO_MAX);
    const unsigned char *in =
        src ? src + offset + done : pattern_slice(s, offset + done, n, &scratch);
    ok = in && !atomic_load(&s->stopping) && c->push(c, in, n, PUSH_MORE, out);
  }
  ok = ok && c->push(c, NULL, 0, PUSH_END, out);
  c->end(c);
  free(scratch);
  return ok;
}

/* K zstd frames, each of a consecutive slice of the pattern. */
static bool zstd_frames(ts_server *s, size_t n, size_t members, bytes *out)
{
  size_t k = members ? members : 1, offset = 0;
  for (size_t i = 0; i < k; i++) {
    size_t len = n / k + (i < n % k);
    coder c;
    if (!coder_zstd(&c, 3, 0, true) || !compress_with(s, &c, NULL, offset, len, out))
      return false;
    offset += len;
  }
  return true;
}

static bool br_pattern(ts_server *s, size_t n, bytes *out)
{
  coder c;
  return coder_br(&c, 5, 22, false) && compress_with(s, &c, NULL, 0, n, out);
}

/*
 * A br or zstd stream of `size` zero bytes, built from repeats as gzip_zeros
 * does: every BOMB_STEP of zeros is flushed to a byte-aligned segment. Both
 * formats keep history across a flush, so the first segment differs; once
 * the second and third are the same, that segment stands for every further
 * step (each copies from distance one back, or is a zstd RLE block). If
 * they differ, the whole input is streamed.
 */
static bool coded_zeros(ts_server *s, coder *c, size_t size, bytes *out)
{
  unsigned char *zeros = calloc(1, BOMB_STEP);
  size_t steps = size / BOMB_STEP, done = 0, ends[3];
  bool ok = zeros != NULL;
  for (; ok && done < steps && done < 3; done++) {
    ok = c->push(c, zeros, BOMB_STEP, PUSH_FLUSH, out);
    ends[done] = out->len;
  }
  if (ok && done == 3 && steps > 3) {
    size_t seg = ends[2] - ends[1];
    if (seg == ends[1] - ends[0] && memcmp(out->p + ends[0], out->p + ends[1], seg) == 0) {
      ok = bytes_reserve(out, seg * (steps - 3));
      for (; ok && done < steps; done++) {
        memcpy(out->p + out->len, out->p + ends[1], seg);
        out->len += seg;
      }
    }
  }
  for (; ok && done < steps; done++)
    ok = !atomic_load(&s->stopping) && c->push(c, zeros, BOMB_STEP, PUSH_MORE, out);
  ok = ok && c->push(c, zeros, size % BOMB_STEP, PUSH_END, out);
  c->end(c);
  free(zeros);
  return ok;
}

/* The bomb of the largest windows respchain accepts: br 16 MiB at quality
 * 5 (quality 11 takes half a minute per GiB of zeros when streamed, and
 * makes the same segments), zstd 8 MiB. */
static bool zeros_bomb(ts_server *s, enc_kind kind, size_t size, bytes *out)
{
  coder c;
  bool made = kind == ENC_BR_BOMB ? coder_br(&c, 5, 24, false) : coder_zstd(&c, 3, 23, false);
  return made && coded_zeros(s, &c, size, out);
}

/* The pattern as br or zstd with a defect: cut in half, junk after the
 * end, a spoiled zstd checksum, or a window over the limits (br's
 * large-window extension, a zstd window of 16 MiB). */
static bool coded_defect(ts_server *s, const enc_args *a, bytes *out)
{
  bool br = a->kind == ENC_BR_DEFECT, window = a->defect == DEF_WINDOW;
  coder c;
  bool made = br ? coder_br(&c, 5, window ? 26 : 22, window)
                 : coder_zstd(&c, 3, window ? 24 : 0, a->defect == DEF_CRC);
  if (!made || !compress_with(s, &c, NULL, 0, a->n, out))
    return false;
  switch (a->defect) {
  case DEF_TRUNCATED: out->len /= 2; return true;
  case DEF_JUNK: return bytes_append(out, "JUNKJUNKJUNKJUNK", 16);
  case DEF_CRC: out->p[out->len - 1] ^= 0xff; return true;
  default: return true;
  }
}

static bool generate(ts_server *s, const enc_args *a, bytes *out);

/* Gzips (at the given level) the encoding described by inner_args. */
static bool gzip_again(ts_server *s, enc_args inner_args, int level, bytes *out)
{
  bytes inner = {0};
  bool ok =
      generate(s, &inner_args, &inner) && zcompress(s, inner.p, 0, inner.len, WB_GZIP, level, out);
  free(inner.p);
  return ok;
}

/* The encoding of inner args, compressed again with a->wrap. */
static bool wrap_again(ts_server *s, const enc_args *a, bytes *out)
{
  enc_args inner = *a;
  inner.wrap = WRAP_NONE;
  bool bomb = a->kind == ENC_BOMB || a->kind == ENC_BR_BOMB || a->kind == ENC_ZSTD_BOMB;
  bytes data = {0};
  coder c;
  bool ok = generate(s, &inner, &data) && coder_for(&c, a->wrap, bomb) &&
            compress_with(s, &c, data.p, 0, data.len, out);
  free(data.p);
  return ok;
}

static bool generate(ts_server *s, const enc_args *a, bytes *out)
{
  if (a->wrap != WRAP_NONE)
    return wrap_again(s, a, out);
  switch (a->kind) {
  case ENC_GZIP: return gzip_members(s, a->n, a->members, out);
  case ENC_ZLIB: return zcompress(s, NULL, 0, a->n, WB_ZLIB, Z_DEFAULT_COMPRESSION, out);
  case ENC_RAW: return zcompress(s, NULL, 0, a->n, WB_RAW, Z_DEFAULT_COMPRESSION, out);
  case ENC_GZIP2:
    return gzip_again(s, (enc_args){.kind = ENC_GZIP, .n = a->n, .members = 1},
                      Z_DEFAULT_COMPRESSION, out);
  case ENC_BOMB: return gzip_zeros(s, a->n, out);
  case ENC_BOMB2:
    return gzip_again(s, (enc_args){.kind = ENC_BOMB, .n = a->n, .members = 1}, 9, out);
  case ENC_IDENTITY: return false; /* served from the pattern directly */
  case ENC_BR: return br_pattern(s, a->n, out);
  case ENC_ZSTD: return zstd_frames(s, a->n, a->members, out);
  case ENC_BR_BOMB:
  case ENC_ZSTD_BOMB: return zeros_bomb(s, a->kind, a->n, out);
  case ENC_BR_DEFECT:
  case ENC_ZSTD_DEFECT: return coded_defect(s, a, out);
  default: return corrupt_gzip(s, a->kind, a->n, out);
  }
}

/* ---- Encoding cache -------------------------------------------------- */

/* Bombs stay for the server's lifetime; other encodings are evicted LRU. */
static bool is_pinned(const cache_entry *e)
{
  enc_kind k = e->args.kind;
  return k == ENC_BOMB || k == ENC_BOMB2 || k == ENC_BR_BOMB || k == ENC_ZSTD_BOMB;
}

static bool same_args(const enc_args *x, const enc_args *y)
{
  return x->kind == y->kind && x->n == y->n && x->members == y->members && x->wrap == y->wrap &&
         x->defect == y->defect;
}

/* Caller holds cache_lock. Takes a reference on a hit. */
static cache_entry *cache_find(ts_server *s, const enc_args *a)
{
  for (cache_entry *e = s->cache; e; e = e->next) {
    if (same_args(&e->args, a)) {
      e->refs++;
      e->last_used = ++s->cache_clock;
      return e;
    }
  }
  return NULL;
}

/* Caller holds cache_lock. Frees unused unpinned entries, oldest first. */
static void cache_evict(ts_server *s)
{
  while (s->cache_bytes > CACHE_LIMIT) {
    cache_entry **victim = NULL;
    for (cache_entry **pp = &s->cache; *pp; pp = &(*pp)->next) {
      cache_entry *e = *pp;
      if (e->refs == 0 && !is_pinned(e) && (!victim || e->last_used < (*victim)->last_used))
        victim = pp;
    }
    if (!victim)
      return;
    cache_entry *e = *victim;
    *victim = e->next;
    s->cache_bytes -= e->data.len;
    free(e->data.p);
    free(e);
  }
}

/* Returns the encoding for a with a reference held, generating it if needed. */
static cache_entry *cache_acquire(ts_server *s, const enc_args *a)
{
  pthread_mutex_lock(&s->cache_lock);
  cache_entry *e = cache_find(s, a);
  pthread_mutex_unlock(&s->cache_lock);
  if (e)
    return e;
  /* Generation is serialised so concurrent first requests for the same
   * (possibly huge) encoding build it once. */
  pthread_mutex_lock(&s->gen_lock);
  pthread_mutex_lock(&s->cache_lock);
  e = cache_find(s, a);
  pthread_mutex_unlock(&s->cache_lock);
  if (!e && (e = calloc(1, sizeof *e)) != NULL) {
    e->args = *a;
    if (generate(s, a, &e->data)) {
      unsigned char *shrunk = realloc(e->data.p, e->data.len ? e->data.len : 1);
      if (shrunk)
        e->data.p = shrunk;
      pthread_mutex_lock(&s->cache_lock);
      e->refs = 1;
      e->last_used = ++s->cache_clock;
      e->next = s->cache;
      s->cache = e;
      s->cache_bytes += e->data.len;
      cache_evict(s);
      pthread_mutex_unlock(&s->cache_lock);
    } else {
      free(e->data.p);
      free(e);
      e = NULL;
    }
  }
  pthread_mutex_unlock(&s->gen_lock);
  return e;
}

static void cache_release(ts_server *s, cache_entry *e)
{
  pthread_mutex_lock(&s->cache_lock);
  e->refs--;
  cache_evict(s);
  pthread_mutex_unlock(&s->cache_lock);
}

/* ---- Output ---------------------------------------------------------- */

/* Sends the buffered response head followed by the given pieces, in as few
 * sendmsg() calls as the kernel allows. */
static void send_pieces(conn *c, struct iovec *pieces, size_t count)
{
  struct iovec iov[4];
  size_t n = 0;
  if (c->out_len > 0)
    iov[n++] = (struct iovec){c->out, c->out_len};
  for (size_t i = 0; i < count && n < 4; i++)
    if (pieces[i].iov_len > 0)
      iov[n++] = pieces[i];
  c->out_len = 0;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
  while (c->ok && msg.msg_iovlen > 0) {
    ssize_t w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      c->ok = errno == EINTR;
      continue;
    }
    size_t left = (size_t)w;
    while (msg.msg_iovlen > 0 && left >= msg.msg_iov[0].iov_len) {
      left -= msg.msg_iov[0].iov_len;
      msg.msg_iov++;
      msg.msg_iovlen--;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov[0].iov_base = (char *)msg.msg_iov[0].iov_base + left;
      msg.msg_iov[0].iov_len -= left;
    }
  }
}

static void out_flush(conn *c) { send_pieces(c, NULL, 0); }

static void out_write(conn *c, const void *data, size_t n)
{
  if (n > OUT_CAP - c->out_len)
    out_flush(c);
  if (n > OUT_CAP) {
    send_pieces(c, &(struct iovec){(void *)(uintptr_t)data, n}, 1);
    return;
  }
  memcpy(c->out + c->out_len, data, n);
  c->out_len += n;
}

__attribute__((format(printf, 2, 3))) static void out_printf(conn *c, const char *fmt, ...)
{
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0)
    out_write(c, line, min_size((size_t)n, sizeof line - 1));
}

static int hex_value(char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* Writes a query value URL-decoded ("+" is a space, "%XX" a byte). */
/* v with '+' as a space and %XX decoded, into out (room for strlen(v)
 * bytes); returns the length. */
static size_t url_decode(const char *v, char *out)
{
  size_t n = 0;
  for (; *v; v++) {
    char ch = *v;
    if (ch == '+') {
      ch = ' ';
    } else if (ch == '%' && hex_value(v[1]) >= 0 && hex_value(v[2]) >= 0) {
      ch = (char)(hex_value(v[1]) * 16 + hex_value(v[2]));
      v += 2;
    }
    out[n++] = ch;
  }
  return n;
}

static void out_write_decoded(conn *c, const char *v)
{
  char *text = malloc(strlen(v) + 1);
  if (!text) {
    c->ok = false;
    return;
  }
  out_write(c, text, url_decode(v, text));
  free(text);
}

static const char *reason_phrase(int code)
{
  static const struct {
    int code;
    const char *text;
  } reasons[] = {
      {100, "Continue"},
      {103, "Early Hints"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {303, "See Other"},
      {304, "Not Modified"},
      {307, "Temporary Redirect"},
      {308, "Permanent Redirect"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {410, "Gone"},
      {413, "Content Too Large"},
      {416, "Range Not Satisfiable"},
      {418, "I'm a teapot"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
  };
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    if (reasons[i].code == code)
      return reasons[i].text;
  return "Unknown";
}

static void begin_response(conn *c, int code)
{
  out_printf(c, "HTTP/1.1 %d %s\r\n", code, reason_phrase(code));
}

/* Writes the framing headers, ends the head and sends the body (not for
 * HEAD) in writes of write_size bytes with delay_us pauses between them. */
static void send_body(conn *c, const request *rq, const body *b)
{
  if (b->te == TE_LENGTH)
    out_printf(c, "Content-Length: %zu\r\n", b->len);
  else if (b->te == TE_CHUNKED)
    out_printf(c, "Transfer-Encoding: chunked\r\n");
  if (b->te == TE_CLOSE || b->te == TE_ABORT || !rq->keep_alive)
    c->close_after = true;
  if (c->close_after && b->te != TE_ABORT)
    out_printf(c, "Connection: close\r\n");
  out_write(c, "\r\n", 2);
  if (rq->is_head || b->te == TE_NOBODY) {
    out_flush(c);
    return;
  }
  size_t step = b->write_size ? min_size(b->write_size, IO_MAX) : IO_MAX;
  for (size_t off = 0, n; off < b->len && c->ok; off += n) {
    n = min_size(step, b->len - off);
    if (off > 0 && b->delay_us > 0)
      pause_us(c->srv, b->delay_us);
    const unsigned char *p = b->data ? b->data + off : pattern_slice(c->srv, off, n, &c->scratch);
    if (!p) {
      c->ok = false;
      return;
    }
    char size_line[32] = "";
    if (b->te == TE_CHUNKED)
      snprintf(size_line, sizeof size_line, "%zx\r\n", n);
    struct iovec pieces[3] = {
        {size_line, strlen(size_line)},
        {(void *)(uintptr_t)p, n},
        {"\r\n", b->te == TE_CHUNKED ? 2 : 0},
    };
    send_pieces(c, pieces, 3);
  }
  if (b->te == TE_CHUNKED) {
    out_write(c, "0\r\n", 3);
    if (b->trailer)
      out_write(c, b->trailer, strlen(b->trailer));
    out_write(c, "\r\n", 2);
  }
  out_flush(c);
}

static void reply_text(conn *c, const request *rq, int code, const char *text)
{
  begin_response(c, code);
  out_printf(c, "Content-Type: text/plain\r\n");
  send_body(c, rq, &(body){.data = (const unsigned char *)text, .len = strlen(text)});
}

/* ---- Query parameters ------------------------------------------------ */

static const char *param_str(const request *rq, const char *key)
{
  for (int i = 0; i < rq->nparams; i++)
    if (strcmp(rq->params[i].key, key) == 0)
      return rq->params[i].val;
  return NULL;
}

/* A size with optional k/m/g suffix; marks the request bad if malformed. */
static size_t param_size(request *rq, const char *key, size_t def)
{
  const char *v = param_str(rq, key);
  if (!v)
    return def;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  int shift = 0;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  default: break;
  }
  if (end == v || *v < '0' || *v > '9' || *end || errno || x > (SIZE_MAX >> shift)) {
    rq->bad = true;
    return def;
  }
  return (size_t)x << shift;
}

static int param_code(request *rq, int def, int lo, int hi)
{
  size_t v = param_size(rq, "code", (size_t)def);
  if (v < (size_t)lo || v > (size_t)hi) {
    rq->bad = true;
    return def;
  }
  return (int)v;
}

/* Fills te, write_size and delay_us from te=, write= and delay_us=. */
static body param_framing(request *rq)
{
  body b = {.te = TE_LENGTH};
  const char *te = param_str(rq, "te");
  if (te && strcmp(te, "chunked") == 0)
    b.te = TE_CHUNKED;
  else if (te && strcmp(te, "close") == 0)
    b.te = TE_CLOSE;
  else if (te && strcmp(te, "length") != 0)
    rq->bad = true;
  b.write_size = param_size(rq, "write", b.te == TE_CHUNKED ? CHUNK_DEFAULT : IO_MAX);
  b.delay_us = (unsigned long)param_size(rq, "delay_us", 0);
  if (b.write_size == 0)
    rq->bad = true;
  return b;
}

/* ---- Routes ---------------------------------------------------------- */

/* Each route returns false when its parameters are invalid (answered 400). */

static bool route_bytes(conn *c, request *rq)
{
  body b = param_framing(rq);
  b.len = param_size(rq, "n", 0);
  if (rq->bad)
    return false;
  begin_response(c, 200);
  out_printf(c, "Content-Type: application/octet-stream\r\n");
  send_body(c, rq, &b);
  return true;
}

/* Sends a cached encoding with the given Content-Encoding header. */
static bool send_encoded(conn *c, request *rq, const enc_args *a, const char *content_encoding,
                         body b)
{
  cache_entry *e = cache_acquire(c->srv, a);
  if (!e) {
    reply_text(c, rq, 503, "encoding failed\n");
    return true;
  }
  begin_response(c, 200);
  out_printf(c, "Content-Type: application/octet-stream\r\n");
  out_printf(c, "Content-Encoding: %s\r\n", content_encoding);
  b.data = e->data.p;
  b.len = e->data.len;
  send_body(c, rq, &b);
  cache_release(c->srv, e);
  return true;
}

static bool route_gzip(conn *c, request *rq)
{
  static const struct {
    const char *name, *header;
    enc_kind kind;
    enc_wrap wrap;
  } codings[] = {
      {"gzip", "gzip", ENC_GZIP, WRAP_NONE},
      {"x-gzip", "x-gzip", ENC_GZIP, WRAP_NONE},
      {"GZIP", "GZIP", ENC_GZIP, WRAP_NONE},
      {"deflate", "deflate", ENC_ZLIB, WRAP_NONE},
      {"deflate-raw", "deflate", ENC_RAW, WRAP_NONE},
      {"gzip2", "gzip, gzip", ENC_GZIP2, WRAP_NONE},
      {"identity", "identity", ENC_IDENTITY, WRAP_NONE},
      {"br", "br", ENC_BR, WRAP_NONE},
      {"BR", "BR", ENC_BR, WRAP_NONE},
      {"zstd", "zstd", ENC_ZSTD, WRAP_NONE},
      {"ZSTD", "ZSTD", ENC_ZSTD, WRAP_NONE},
      {"br-gzip", "br, gzip", ENC_BR, WRAP_GZIP},
      {"gzip-br", "gzip, br", ENC_GZIP, WRAP_BR},
      {"zstd-gzip", "zstd, gzip", ENC_ZSTD, WRAP_GZIP},
      {"gzip-zstd", "gzip, zstd", ENC_GZIP, WRAP_ZSTD},
      {"br-zstd", "br, zstd", ENC_BR, WRAP_ZSTD},
      {"zstd-br", "zstd, br", ENC_ZSTD, WRAP_BR},
  };
  const char *name = param_str(rq, "coding");
  body b = param_framing(rq);
  enc_args a = {
      .kind = ENC_GZIP, .n = param_size(rq, "n", 0), .members = param_size(rq, "members", 1)};
  size_t i = 0, count = sizeof codings / sizeof codings[0];
  while (name && i < count && strcmp(codings[i].name, name) != 0)
    i++;
  if (rq->bad || i == count)
    return false;
  a.kind = codings[i].kind;
  a.wrap = codings[i].wrap;
  if ((a.kind != ENC_GZIP && a.kind != ENC_ZSTD) || a.members == 0)
    a.members = 1; /* members split plain gzip and zstd only */
  if (a.kind != ENC_IDENTITY)
    return send_encoded(c, rq, &a, codings[i].header, b);
  begin_response(c, 200);
  out_printf(c, "Content-Encoding: identity\r\n");
  b.len = a.n;
  send_body(c, rq, &b);
  return true;
}

/* The index of name in names[0..n) (NULL: 0); n when it is not there. */
static size_t pick(const char *name, const char *const *names, size_t n)
{
  size_t i = 0;
  while (name && i < n && strcmp(names[i], name) != 0)
    i++;
  return name ? i : 0;
}

static bool route_bomb(conn *c, request *rq)
{
  static const char *const names[] = {"gzip", "br", "zstd"};
  static const enc_kind kinds[] = {ENC_BOMB, ENC_BR_BOMB, ENC_ZSTD_BOMB};
  static const enc_wrap wraps[] = {WRAP_GZIP, WRAP_BR, WRAP_ZSTD};
  body b = param_framing(rq);
  size_t nest = param_size(rq, "nest", 1);
  size_t k = pick(param_str(rq, "coding"), names, 3);
  size_t w = pick(param_str(rq, "wrap"), names, 3);
  enc_args a = {.kind = ENC_BOMB, .n = param_size(rq, "size", (size_t)1 << 30), .members = 1};
  if (rq->bad || (nest != 1 && nest != 2) || k == 3 || w == 3)
    return false;
  a.kind = kinds[k];
  if (nest == 2 && k == 0 && w == 0)
    a.kind = ENC_BOMB2; /* gzip of gzip: as it always was */
  else if (nest == 2)
    a.wrap = wraps[w];
  char header[32];
  snprintf(header, sizeof header, nest == 2 ? "%s, %s" : "%s", names[k], names[w]);
  return send_encoded(c, rq, &a, header, b);
}

static bool route_corrupt(conn *c, request *rq)
{
  static const struct {
    const char *name;
    enc_kind kind;
  } kinds[] = {
      {"magic", ENC_BAD_MAGIC},     {"crc", ENC_BAD_CRC}, {"length", ENC_BAD_LENGTH},
      {"truncated", ENC_TRUNCATED}, {"junk", ENC_JUNK},
  };
  static const char *const codings[] = {"gzip", "br", "zstd"};
  static const char *const defects[] = {"truncated", "junk", "crc", "window"};
  const char *name = param_str(rq, "kind");
  size_t coding = pick(param_str(rq, "coding"), codings, 3);
  enc_args a = {.kind = ENC_JUNK, .n = param_size(rq, "n", 100000), .members = 1};
  if (coding > 0 && coding < 3) {
    /* br and zstd: truncated, junk, window; zstd also crc. */
    size_t d = pick(name ? name : "", defects, 4);
    if (rq->bad || d == 4 || (coding == 1 && d == DEF_CRC))
      return false;
    a.kind = coding == 1 ? ENC_BR_DEFECT : ENC_ZSTD_DEFECT;
    a.defect = (enc_defect)d;
    return send_encoded(c, rq, &a, codings[coding], (body){.te = TE_LENGTH});
  }
  size_t i = 0, count = sizeof kinds / sizeof kinds[0];
  while (name && i < count && strcmp(kinds[i].name, name) != 0)
    i++;
  if (rq->bad || i == count || coding == 3)
    return false;
  a.kind = kinds[i].kind;
  return send_encoded(c, rq, &a, "gzip", (body){.te = TE_LENGTH});
}

static bool route_encoding(conn *c, request *rq)
{
  const char *value = param_str(rq, "value");
  body b = param_framing(rq);
  b.len = param_size(rq, "n", 0);
  if (rq->bad || !value)
    return false;
  begin_response(c, 200);
  out_printf(c, "Content-Encoding: ");
  out_write_decoded(c, value);
  out_write(c, "\r\n", 2);
  send_body(c, rq, &b);
  return true;
}

static void send_text_body(conn *c, const request *rq, const char *text)
{
  send_body(c, rq, &(body){.data = (const unsigned char *)text, .len = strlen(text)});
}

static bool route_redirect(conn *c, request *rq)
{
  size_t hops = param_size(rq, "n", 0);
  int code = param_code(rq, 302, 300, 399);
  const char *to = param_str(rq, "to");
  if (rq->bad)
    return false;
  begin_response(c, hops > 0 ? code : 302);
  if (hops > 0) {
    /* The next hop keeps "to" exactly as it arrived (still encoded). */
    out_printf(c, "Location: /redirect?n=%zu&code=%d", hops - 1, code);
    if (to) {
      out_write(c, "&to=", 4);
      out_write(c, to, strlen(to));
    }
  } else {
    out_printf(c, "Location: ");
    out_write_decoded(c, to ? to : "/bytes?n=10");
  }
  out_printf(c, "\r\nContent-Type: text/plain\r\n");
  send_text_body(c, rq, "redirect\n");
  return true;
}

static bool route_loop(conn *c, request *rq)
{
  begin_response(c, 302);
  out_printf(c, "Location: /loop\r\nContent-Type: text/plain\r\n");
  send_text_body(c, rq, "loop\n");
  return true;
}

/* A chain of K redirects whose hops each say which they are ("X-Hop: K",
 * "Set-Cookie: hop=K"), then "X-Hop: 0" and 200; with away=HOST the
 * last hop (X-Hop: away) goes instead to /hops?n=0 on HOST, this port. */
static bool route_hops(conn *c, request *rq)
{
  size_t hops = param_size(rq, "n", 0);
  const char *away = param_str(rq, "away");
  if (rq->bad)
    return false;
  begin_response(c, hops > 0 || away ? 302 : 200);
  if (hops > 0) {
    out_printf(c, "X-Hop: %zu\r\nSet-Cookie: hop=%zu\r\nLocation: /hops?n=%zu", hops, hops,
               hops - 1);
    if (away)
      out_printf(c, "&away=%s", away);
    out_printf(c, "\r\n");
  } else if (away) {
    out_printf(c, "X-Hop: away\r\nLocation: http://");
    out_write_decoded(c, away);
    out_printf(c, ":%d/hops?n=0\r\n", c->srv->port);
  } else {
    out_printf(c, "X-Hop: 0\r\n");
  }
  out_printf(c, "Content-Type: text/plain\r\n");
  send_text_body(c, rq, hops > 0 || away ? "redirect\n" : "hops\n");
  return true;
}

static bool route_status(conn *c, request *rq)
{
  int code = param_code(rq, 200, 200, 599);
  body b = {.len = param_size(rq, "n", 0)};
  if (rq->bad)
    return false;
  begin_response(c, code);
  if (code == 204 || code == 304)
    b.te = TE_NOBODY;
  send_body(c, rq, &b);
  return true;
}

static bool route_hints(conn *c, request *rq)
{
  size_t n = param_size(rq, "n", 100);
  if (rq->bad)
    return false;
  out_printf(c, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n");
  out_flush(c); /* the interim response goes out on its own */
  begin_response(c, 200);
  send_body(c, rq, &(body){.len = n});
  return true;
}

static bool route_trailers(conn *c, request *rq)
{
  size_t n = param_size(rq, "n", 1000);
  if (rq->bad)
    return false;
  uLong crc = crc32(0, Z_NULL, 0);
  for (size_t off = 0, len; off < n; off += len) {
    len = min_size(IO_MAX, n - off);
    const unsigned char *p = pattern_slice(c->srv, off, len, &c->scratch);
    if (!p) {
      reply_text(c, rq, 503, "out of memory\n");
      return true;
    }
    crc = crc32(crc, p, (uInt)len);
  }
  char trailer[96];
  snprintf(trailer, sizeof trailer, "X-Checksum: %08lx\r\nX-Count: %zu\r\n", crc, n);
  begin_response(c, 200);
  out_printf(c, "Trailer: X-Checksum, X-Count\r\n");
  send_body(c, rq,
            &(body){.len = n, .te = TE_CHUNKED, .write_size = CHUNK_DEFAULT, .trailer = trailer});
  return true;
}

/* Content-Length says `claimed`, `sent` bytes follow, then the socket closes. */
static bool reply_short(conn *c, request *rq, size_t claimed, size_t sent)
{
  if (rq->bad)
    return false;
  begin_response(c, 200);
  out_printf(c, "Content-Length: %zu\r\n", claimed);
  send_body(c, rq, &(body){.len = sent, .te = TE_ABORT});
  return true;
}

static bool route_lie(conn *c, request *rq)
{
  size_t claim = param_size(rq, "claim", (size_t)4 << 30);
  return reply_short(c, rq, claim, param_size(rq, "send", 10));
}

static bool route_cut(conn *c, request *rq)
{
  size_t n = param_size(rq, "n", 1000);
  return reply_short(c, rq, n, min_size(n, param_size(rq, "at", n / 2)));
}

static bool route_bigheader(conn *c, request *rq)
{
  static const char as[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  size_t size = param_size(rq, "size", (size_t)1 << 20);
  if (rq->bad)
    return false;
  begin_response(c, 200);
  out_write(c, "X-Big: ", 7);
  for (size_t left = size, n; left > 0 && c->ok; left -= n) {
    n = min_size(left, sizeof as - 1);
    out_write(c, as, n);
  }
  out_write(c, "\r\n", 2);
  send_text_body(c, rq, "ok");
  return true;
}

static bool route_manyheaders(conn *c, request *rq)
{
  size_t count = param_size(rq, "count", 100);
  if (rq->bad)
    return false;
  begin_response(c, 200);
  for (size_t i = 0; i < count && c->ok; i++)
    out_printf(c, "X-H%zu: v%zu\r\n", i, i);
  send_text_body(c, rq, "ok");
  return true;
}

static bool route_badchunk(conn *c, request *rq)
{
  unsigned char raw[19];
  memcpy(raw, "a\r\n", 3);
  ts_pattern_fill(raw + 3, 0, 10);
  memcpy(raw + 13, "\r\nzz\r\n", 6);
  begin_response(c, 200);
  out_printf(c, "Transfer-Encoding: chunked\r\n");
  send_body(c, rq, &(body){.data = raw, .len = sizeof raw, .te = TE_ABORT});
  return true;
}

static bool route_headers(conn *c, request *rq)
{
  begin_response(c, 200);
  out_printf(c, "Content-Type: text/plain\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
                "SET-COOKIE: c=3\r\nX-Empty:\r\nX-Spaces:    padded   \r\n");
  send_text_body(c, rq, "hello");
  return true;
}

/* An HTML page whose <title> element holds "title" (URL-decoded, as it is:
 * character references stay for the client to decode). */
static bool route_html(conn *c, request *rq)
{
  static const char head[] =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<TITLE lang=en>";
  static const char tail[] = "</title></head>\n<body><h1>hello</h1></body></html>\n";
  const char *title = param_str(rq, "title");
  if (!title)
    title = "";
  char *page = malloc(sizeof head + strlen(title) + sizeof tail);
  if (!page) {
    c->ok = false;
    return true;
  }
  size_t n = sizeof head - 1;
  memcpy(page, head, n);
  n += url_decode(title, page + n);
  memcpy(page + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  begin_response(c, 200);
  out_printf(c, "Content-Type: text/html; charset=utf-8\r\nServer: respchain-test/1\r\n");
  send_body(c, rq, &(body){.data = (const unsigned char *)page, .len = n});
  free(page);
  return true;
}

/* A body as given: "body" URL-decoded, its type "type" (text/plain by
 * default), a Set-Cookie header of "cookie" (URL-decoded) when given. */
static bool route_text(conn *c, request *rq)
{
  const char *text = param_str(rq, "body"), *type = param_str(rq, "type"),
             *cookie = param_str(rq, "cookie");
  body b = param_framing(rq);
  if (rq->bad)
    return false;
  char *page = malloc(text ? strlen(text) + 1 : 1);
  if (!page) {
    c->ok = false;
    return true;
  }
  size_t n = text ? url_decode(text, page) : 0;
  begin_response(c, 200);
  out_write(c, "Content-Type: ", 14);
  out_write_decoded(c, type ? type : "text/plain");
  out_write(c, "\r\n", 2);
  if (cookie) {
    out_write(c, "Set-Cookie: ", 12);
    out_write_decoded(c, cookie);
    out_write(c, "\r\n", 2);
  }
  b.data = (const unsigned char *)page;
  b.len = n;
  send_body(c, rq, &b);
  free(page);
  return true;
}

/* A JSON document (application/json), inside "nest" arrays ([[...]]). */
static bool route_json(conn *c, request *rq)
{
  static const char doc[] =
      "{\"service\":{\"name\":\"respchain-test\",\"version\":\"1.2.3\",\"build\":4711,"
      "\"ratio\":0.25,\"beta\":false,\"owner\":null},"
      "\"users\":[{\"name\":\"ann\",\"roles\":[\"admin\",\"dev\"],\"id\":1},"
      "{\"name\":\"bob\",\"roles\":[\"dev\"],\"id\":2}],"
      "\"tags\":{\"b\":\"<2>\",\"a\":1}}\n";
  size_t nest = param_size(rq, "nest", 0), n = sizeof doc - 1;
  char *page = rq->bad || nest > ((size_t)1 << 24) ? NULL : malloc(2 * nest + n);
  if (!page)
    return false;
  memset(page, '[', nest);
  memcpy(page + nest, doc, n);
  memset(page + nest + n, ']', nest);
  begin_response(c, 200);
  out_printf(c, "Content-Type: application/json\r\n");
  send_body(c, rq, &(body){.data = (const unsigned char *)page, .len = 2 * nest + n});
  free(page);
  return true;
}

/* 401 with a Basic challenge until the request carries credentials. */
static bool route_auth(conn *c, request *rq)
{
  body b = param_framing(rq);
  b.len = param_size(rq, "n", 100);
  if (rq->bad)
    return false;
  if (!rq->authorized) {
    begin_response(c, 401);
    out_printf(c, "WWW-Authenticate: Basic realm=\"respchain\"\r\n");
    send_text_body(c, rq, "credentials needed\n");
    return true;
  }
  begin_response(c, 200);
  send_body(c, rq, &b);
  return true;
}

/* A login: sets the cookie session=USER (param user, default "guest"). */
static bool route_login(conn *c, request *rq)
{
  const char *user = param_str(rq, "user");
  char name[64];
  if (!user)
    user = "guest";
  if (strlen(user) >= sizeof name)
    return false;
  name[url_decode(user, name)] = '\0';
  if (strpbrk(name, ";\r\n"))
    return false;
  begin_response(c, 200);
  out_printf(c, "Content-Type: text/plain\r\nSet-Cookie: session=%s; Path=/\r\n", name);
  send_text_body(c, rq, "welcome\n");
  return true;
}

/* 200 "secret area" to a request that carries the cookie session, else
 * 403. */
static bool route_private(conn *c, request *rq)
{
  char head[4096];
  size_t n = rq->head_len < sizeof head - 1 ? rq->head_len : sizeof head - 1;
  memcpy(head, rq->head, n);
  head[n] = '\0';
  int in = strstr(head, "\nCookie: session=") || strstr(head, "; session=");
  begin_response(c, in ? 200 : 403);
  out_printf(c, "Content-Type: text/plain\r\n");
  send_text_body(c, rq, in ? "secret area\n" : "login first\n");
  return true;
}

/* Holds the request until n requests (this one included) wait at
 * /gather together, or ms milliseconds pass: "together N" or "alone". */
static bool route_gather(conn *c, request *rq)
{
  ts_server *s = c->srv;
  unsigned long n = (unsigned long)param_size(rq, "n", 2);
  unsigned long ms = (unsigned long)param_size(rq, "ms", 10000);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)(ms / 1000);
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->lock);
  unsigned long round = s->gather_round;
  int together = ++s->gathering >= n;
  if (together) { /* the last of them: the others go too */
    s->gathering = 0;
    s->gather_round++;
    pthread_cond_broadcast(&s->stop_cond);
  }
  while (!together && !atomic_load(&s->stopping) &&
         pthread_cond_timedwait(&s->stop_cond, &s->lock, &until) != ETIMEDOUT)
    together = s->gather_round != round;
  together = together || s->gather_round != round;
  if (!together)
    s->gathering--;
  pthread_mutex_unlock(&s->lock);
  begin_response(c, 200);
  out_printf(c, "Content-Type: text/plain\r\n");
  char text[64];
  snprintf(text, sizeof text, together ? "together %lu\n" : "alone\n", n);
  send_text_body(c, rq, text);
  return true;
}

/* The request's head, then the body bytes read with it. */
static bool route_echo(conn *c, request *rq)
{
  begin_response(c, 200);
  out_printf(c, "Content-Type: text/plain\r\n");
  send_body(c, rq,
            &(body){.data = (const unsigned char *)rq->head, .len = rq->head_len + rq->body_len});
  return true;
}

static const struct route {
  const char *path;
  bool (*handle)(conn *c, request *rq);
} ROUTES[] = {
    {"/bytes", route_bytes},
    {"/gzip", route_gzip},
    {"/bomb", route_bomb},
    {"/corrupt", route_corrupt},
    {"/encoding", route_encoding},
    {"/redirect", route_redirect},
    {"/loop", route_loop},
    {"/hops", route_hops},
    {"/status", route_status},
    {"/hints", route_hints},
    {"/trailers", route_trailers},
    {"/lie", route_lie},
    {"/cut", route_cut},
    {"/bigheader", route_bigheader},
    {"/manyheaders", route_manyheaders},
    {"/badchunk", route_badchunk},
    {"/headers", route_headers},
    {"/html", route_html},
    {"/echo", route_echo},
    {"/gather", route_gather},
    {"/text", route_text},
    {"/json", route_json},
    {"/auth", route_auth},
    {"/login", route_login},
    {"/private", route_private},
};

static void dispatch(conn *c, request *rq)
{
  /* A proxy tunnel to this same server: after the 200, the connection
   * goes on carrying ordinary requests, which are served as usual. */
  if (rq->is_connect) {
    out_printf(c, "HTTP/1.1 200 Connection established\r\n\r\n");
    out_flush(c);
    return;
  }
  if (!strcmp(rq->path, "*")) { /* OPTIONS *, or any method's */
    route_echo(c, rq);
    return;
  }
  for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++) {
    if (strcmp(ROUTES[i].path, rq->path) == 0) {
      if (!ROUTES[i].handle(c, rq))
        reply_text(c, rq, 400, "bad parameter\n");
      return;
    }
  }
  reply_text(c, rq, 404, "not found\n");
}

/* ---- Request parsing ------------------------------------------------- */

static bool name_is(const char *name, size_t len, const char *want)
{
  return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

static bool has_token(const char *v, size_t len, const char *token)
{
  size_t tlen = strlen(token);
  for (size_t i = 0; i + tlen <= len; i++)
    if (strncasecmp(v + i, token, tlen) == 0)
      return true;
  return false;
}

/* Splits "k=v&k2=v2" in place into rq->params. */
static void parse_query(request *rq, char *q)
{
  while (q && *q && rq->nparams < MAX_PARAMS) {
    char *next = strchr(q, '&');
    if (next)
      *next++ = '\0';
    char *eq = strchr(q, '=');
    if (eq)
      *eq = '\0';
    if (*q)
      rq->params[rq->nparams++] = (param){q, eq ? eq + 1 : ""};
    q = next;
  }
}

/* Interprets one header line; false if it makes the request malformed. */
static bool parse_header(request *rq, const char *line, size_t len)
{
  const char *colon = memchr(line, ':', len);
  if (!colon)
    return false;
  size_t nlen = (size_t)(colon - line);
  const char *v = colon + 1, *end = line + len;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  size_t vlen = (size_t)(end - v);
  if (name_is(line, nlen, "content-length")) {
    size_t n = 0;
    for (size_t i = 0; i < vlen; i++) {
      if (v[i] < '0' || v[i] > '9' || n > (SIZE_MAX - 9) / 10)
        return false;
      n = n * 10 + (size_t)(v[i] - '0');
    }
    rq->content_length = n;
    return vlen > 0;
  }
  if (name_is(line, nlen, "transfer-encoding"))
    rq->chunked_body = !has_token(v, vlen, "identity") || has_token(v, vlen, "chunked");
  else if (name_is(line, nlen, "connection") && has_token(v, vlen, "close"))
    rq->keep_alive = false;
  else if (name_is(line, nlen, "connection") && has_token(v, vlen, "keep-alive"))
    rq->keep_alive = true;
  else if (name_is(line, nlen, "expect") && has_token(v, vlen, "100-continue"))
    rq->expect_continue = true;
  else if (name_is(line, nlen, "authorization") && has_token(v, vlen, "basic "))
    rq->authorized = true;
  return true;
}

/* The first CRLF in [p, end), or NULL. */
static const char *find_crlf(const char *p, const char *end)
{
  for (; p + 1 < end; p++)
    if (p[0] == '\r' && p[1] == '\n')
      return p;
  return NULL;
}

/* Parses the head in c->in[0..head_len); false if malformed. The head is
 * known to end with CRLFCRLF, so every line below ends with CRLF. */
static bool parse_request(conn *c, size_t head_len, request *rq)
{
  memset(rq, 0, sizeof *rq);
  rq->head = c->in;
  rq->head_len = head_len;
  const char *line = c->in, *end = c->in + head_len - 2;
  const char *eol = find_crlf(line, c->in + head_len);
  const char *sp1 = eol ? memchr(line, ' ', (size_t)(eol - line)) : NULL;
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
  if (!sp2 || sp2 == sp1 + 1)
    return false;
  rq->is_head = sp1 - line == 4 && memcmp(line, "HEAD", 4) == 0;
  rq->is_connect = sp1 - line == 7 && memcmp(line, "CONNECT", 7) == 0;
  /* HTTP/1.0 closes by default unless it asks for keep-alive. */
  rq->keep_alive = !(eol - sp2 - 1 == 8 && memcmp(sp2 + 1, "HTTP/1.0", 8) == 0);
  size_t tlen = (size_t)(sp2 - sp1 - 1);
  memcpy(c->target, sp1 + 1, tlen);
  c->target[tlen] = '\0';
  char *query = strchr(c->target, '?');
  if (query)
    *query++ = '\0';
  rq->path = c->target;
  /* The absolute form (http://host:port/path) is routed by its path. */
  if (!strncmp(rq->path, "http://", 7) || !strncmp(rq->path, "https://", 8)) {
    char *slash = strchr(strstr(rq->path, "://") + 3, '/');
    rq->path = slash ? slash : "/";
  }
  parse_query(rq, query);
  for (line = eol + 2; line < end; line = eol + 2) {
    eol = find_crlf(line, end + 2);
    if (!eol || !parse_header(rq, line, (size_t)(eol - line)))
      return false;
  }
  return true;
}

/* ---- Connections ----------------------------------------------------- */

/* Reads until a whole head is buffered. Returns its length, 0 on EOF or
 * error, SIZE_MAX when it exceeds HEAD_MAX. */
static size_t read_head(conn *c)
{
  size_t scanned = 0;
  for (;;) {
    while (c->in_len >= 2 && c->in[0] == '\r' && c->in[1] == '\n') {
      memmove(c->in, c->in + 2, c->in_len - 2); /* stray CRLFs */
      c->in_len -= 2;
    }
    size_t from = scanned > 3 ? scanned - 3 : 0;
    char *end = memmem(c->in + from, c->in_len - from, "\r\n\r\n", 4);
    if (end)
      return (size_t)(end - c->in) + 4;
    scanned = c->in_len;
    if (c->in_len == HEAD_MAX)
      return SIZE_MAX;
    ssize_t r = recv(c->fd, c->in + c->in_len, HEAD_MAX - c->in_len, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    c->in_len += (size_t)r;
  }
}

/* Discards the request body; returns how many buffered bytes it used, or
 * SIZE_MAX if the connection failed first. */
static size_t skip_body(conn *c, size_t head_len, size_t len)
{
  size_t buffered = min_size(len, c->in_len - head_len);
  for (size_t left = len - buffered; left > 0;) {
    if (!c->scratch && !(c->scratch = malloc(IO_MAX)))
      return SIZE_MAX;
    ssize_t r = recv(c->fd, c->scratch, min_size(left, IO_MAX), 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return SIZE_MAX;
    left -= (size_t)r;
  }
  return head_len + buffered;
}

static void serve_request(conn *c, size_t head_len)
{
  request rq;
  bool parsed = parse_request(c, head_len, &rq);
  atomic_fetch_add(&c->srv->requests, 1);
  if (!parsed || rq.chunked_body) {
    c->close_after = true; /* the body's extent is unknown */
    reply_text(c, &rq, parsed ? 501 : 400,
               parsed ? "request bodies must use Content-Length\n" : "bad request\n");
    return;
  }
  if (rq.expect_continue && rq.content_length > 0) {
    out_printf(c, "HTTP/1.1 100 Continue\r\n\r\n");
    out_flush(c);
  }
  size_t consumed = skip_body(c, head_len, rq.content_length);
  if (consumed == SIZE_MAX) {
    c->ok = false;
    return;
  }
  rq.body_len = consumed - head_len;
  ts_request_fn *log = atomic_load(&c->srv->on_request);
  if (log)
    log(atomic_load(&c->srv->on_request_ud), c->in, head_len, c->in + head_len, rq.body_len,
        rq.content_length);
  dispatch(c, &rq);
  memmove(c->in, c->in + consumed, c->in_len - consumed);
  c->in_len -= consumed;
}

/* Before the server closes a connection, it half-closes it and drains what
 * the client still sends (for at most a second): closing a socket with unread
 * input makes the kernel send a reset, which can destroy the response. */
static void linger_close(conn *c)
{
  char sink[4096];
  struct pollfd pfd = {c->fd, POLLIN, 0};
  shutdown(c->fd, SHUT_WR);
  for (int rounds = 0; rounds < 100; rounds++) {
    if (poll(&pfd, 1, 10) > 0 && recv(c->fd, sink, sizeof sink, 0) <= 0)
      return;
  }
}

static void *conn_main(void *arg)
{
  conn *c = arg;
  while (c->ok && !c->close_after) {
    size_t head_len = read_head(c);
    if (head_len == 0)
      break;
    if (head_len == SIZE_MAX) {
      request rq = {.keep_alive = false};
      atomic_fetch_add(&c->srv->requests, 1);
      reply_text(c, &rq, 431, "request head too large\n");
      break;
    }
    serve_request(c, head_len);
  }
  if (c->ok && c->close_after)
    linger_close(c);
  pthread_mutex_lock(&c->srv->lock);
  close(c->fd);
  c->fd = -1;
  c->done = true;
  pthread_mutex_unlock(&c->srv->lock);
  return NULL;
}

static void conn_free(conn *c)
{
  free(c->in);
  free(c->target);
  free(c->scratch);
  free(c);
}

/* Joins and frees connections whose threads have finished. */
static void reap_finished(ts_server *s)
{
  conn *finished = NULL;
  pthread_mutex_lock(&s->lock);
  for (conn **pp = &s->conns; *pp;) {
    conn *c = *pp;
    if (c->done) {
      *pp = c->next;
      c->next = finished;
      finished = c;
    } else {
      pp = &c->next;
    }
  }
  pthread_mutex_unlock(&s->lock);
  while (finished) {
    conn *c = finished;
    finished = c->next;
    pthread_join(c->thread, NULL);
    conn_free(c);
  }
}

static void start_conn(ts_server *s, int fd)
{
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn *c = calloc(1, sizeof *c);
  if (c) {
    c->in = malloc(HEAD_MAX);
    c->target = malloc(HEAD_MAX);
  }
  if (!c || !c->in || !c->target) {
    close(fd);
    if (c)
      conn_free(c);
    return;
  }
  c->srv = s;
  c->fd = fd;
  c->ok = true;
  pthread_mutex_lock(&s->lock); /* ts_stop shuts down under it */
  if (!atomic_load(&s->stopping) && pthread_create(&c->thread, NULL, conn_main, c) == 0) {
    c->next = s->conns;
    s->conns = c;
    c = NULL;
  }
  pthread_mutex_unlock(&s->lock);
  if (c) {
    close(fd);
    conn_free(c);
  }
}

static void *accept_main(void *arg)
{
  ts_server *s = arg;
  struct pollfd fds[2] = {{s->listen_fd, POLLIN, 0}, {s->wake_pipe[0], POLLIN, 0}};
  while (!atomic_load(&s->stopping)) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR)
      break;
    if (fds[1].revents)
      break;
    if (!(fds[0].revents & POLLIN))
      continue;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0)
      continue;
    /* Accepted sockets must block even though the listener does not. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    reap_finished(s);
    start_conn(s, fd);
  }
  return NULL;
}

/* ---- Public API ------------------------------------------------------ */

static void server_free(ts_server *s)
{
  while (s->cache) {
    cache_entry *e = s->cache;
    s->cache = e->next;
    free(e->data.p);
    free(e);
  }
  if (s->listen_fd >= 0)
    close(s->listen_fd);
  for (int i = 0; i < 2; i++)
    if (s->wake_pipe[i] >= 0)
      close(s->wake_pipe[i]);
  free(s->pattern);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->cache_lock);
  pthread_mutex_destroy(&s->gen_lock);
  pthread_mutex_destroy(&s->pattern_lock);
  pthread_cond_destroy(&s->stop_cond);
  free(s);
}

static bool open_listener(ts_server *s)
{
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(s->listen_fd, 128) != 0 ||
      getsockname(s->listen_fd, (struct sockaddr *)&addr, &alen) != 0)
    return false;
  s->port = ntohs(addr.sin_port);
  /* Non-blocking so a connection reset between poll and accept cannot
   * block the accept thread. */
  return fcntl(s->listen_fd, F_SETFL, O_NONBLOCK) == 0 && pipe(s->wake_pipe) == 0;
}

ts_server *ts_start(void)
{
  ts_server *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->listen_fd = s->wake_pipe[0] = s->wake_pipe[1] = -1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->stop_cond, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->cache_lock, NULL);
  pthread_mutex_init(&s->gen_lock, NULL);
  pthread_mutex_init(&s->pattern_lock, NULL);
  atomic_init(&s->pattern_ready, 0);
  atomic_init(&s->stopping, false);
  atomic_init(&s->requests, 0);
  s->pattern = malloc(PATTERN_CACHED);
  if (!s->pattern || !open_listener(s) ||
      pthread_create(&s->accept_thread, NULL, accept_main, s) != 0) {
    server_free(s);
    return NULL;
  }
  return s;
}

int ts_port(const ts_server *s) { return s->port; }

char *ts_url(const ts_server *s, const char *path_and_query, char *out, size_t outlen)
{
  snprintf(out, outlen, "http://127.0.0.1:%d%s", s->port, path_and_query ? path_and_query : "");
  return out;
}

unsigned long ts_requests(const ts_server *s) { return atomic_load(&s->requests); }

void ts_on_request(ts_server *s, ts_request_fn *fn, void *ud)
{
  atomic_store(&s->on_request_ud, ud);
  atomic_store(&s->on_request, fn);
}

void ts_stop(ts_server *s)
{
  if (!s)
    return;
  /* Sockets are shut down before sleepers are woken, so a woken response
   * fails its next send instead of racing out the rest of its body. */
  pthread_mutex_lock(&s->lock);
  atomic_store(&s->stopping, true);
  for (conn *c = s->conns; c; c = c->next)
    if (c->fd >= 0)
      shutdown(c->fd, SHUT_RDWR);
  pthread_cond_broadcast(&s->stop_cond);
  pthread_mutex_unlock(&s->lock);
  ssize_t w = write(s->wake_pipe[1], "x", 1);
  (void)w;
  pthread_join(s->accept_thread, NULL);
  while (s->conns) {
    conn *c = s->conns;
    s->conns = c->next;
    pthread_join(c->thread, NULL);
    conn_free(c);
  }
  server_free(s);
}
