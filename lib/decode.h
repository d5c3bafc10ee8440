/* Streaming Content-Encoding decoder: chains of gzip and deflate (zlib),
 * br (libbrotli) and zstd (libzstd), the last two when built with them,
 * writing decoded bytes into a capped sink. Internal. */
#ifndef RC_DECODE_H
#define RC_DECODE_H

#include <stddef.h>
#include "rc_config.h" /* RC_HAVE_BROTLI, RC_HAVE_ZSTD: 1 or 0 */
#include "respchain.h"

/* Where decoded bytes go. reserve() offers a writable region: *avail bytes at
 * *out; *avail == 0 means the cap is reached. It returns RC_OK or an error
 * (RC_E_NOMEM, ...) that the decoder passes up unchanged. commit(n) says n
 * bytes were written at the region last offered. */
typedef struct rc__sink {
  rc_code (*reserve)(void *ctx, unsigned char **out, size_t *avail);
  void (*commit)(void *ctx, size_t n);
  void *ctx;
} rc__sink;

#define RC__MAX_CODINGS 16 /* the largest max_codings honoured */

typedef enum rc__coding {
  RC__CODING_GZIP,    /* gzip, x-gzip: one or more RFC 1952 members */
  RC__CODING_DEFLATE, /* deflate: zlib-wrapped (RFC 1950) or raw (RFC 1951) */
  RC__CODING_BR,      /* br: one RFC 7932 stream, window up to 16 MiB */
  RC__CODING_ZSTD     /* zstd: one or more RFC 8878 frames, window up to
                         8 MiB (RFC 9659) */
} rc__coding;

/* The codings this build decodes, for Accept-Encoding: "gzip, deflate",
 * then ", br" and ", zstd" when built with them. Static storage. */
const char *rc__decoder_accept(void);

/* Parses a Content-Encoding value (list in the order applied, names
 * case-insensitive, "identity" and empty elements skipped) into chain[0..*n).
 * RC_OK; RC_E_CODINGS when more than max codings are listed; RC_E_INVAL when
 * a coding is unknown (compress, or br and zstd in a build without them):
 * the caller then keeps the body raw. */
rc_code rc__coding_parse(const char *value, size_t len, rc__coding *chain, size_t max, size_t *n);

typedef struct rc__decoder rc__decoder;

/* A decoder whose state and buffers (the libraries' too) come from a (all
 * three functions set). NULL when out of memory. Per stage of a chain it
 * holds, while a stream is decoded, about 40 KiB for gzip or deflate, up to
 * 8.5 MiB for zstd (8 MiB window, buffers, context) and up to 24 MiB for br
 * (libbrotli grows its ring buffer toward the 16 MiB window, the old and
 * new one side by side for a moment), plus a 16 KiB buffer for each stage
 * that feeds another; see codec.h for what is kept between bodies. */
rc__decoder *rc__decoder_new(const rc_allocator *a);
void rc__decoder_free(rc__decoder *d);

/* Prepares to decode one body encoded with chain[0..n) (1 <= n), reusing
 * state kept from earlier bodies. RC_OK, RC_E_NOMEM; RC_E_INVAL for an
 * empty chain or a coding this build does not decode. */
rc_code rc__decoder_start(rc__decoder *d, const rc__coding *chain, size_t n);

/* Decodes len more encoded bytes into sink. RC_OK when all were consumed
 * and passed through the whole chain (nothing waits in between writes);
 * RC_TRUNCATED when the sink is full and the stream holds more decoded bytes
 * (the caller stops feeding: nothing more is decoded); RC_E_DECODE for a
 * corrupt stream, a zstd window over 8 MiB, or data after the end (except
 * another gzip member or zstd frame); sink errors as returned by it.
 * After anything but RC_OK the same result comes back until the next start;
 * before any start, RC_E_INVAL. */
rc_code rc__decoder_write(rc__decoder *d, const void *in, size_t len, const rc__sink *sink);

/* Nonzero when every stream of the chain has ended cleanly and no partial
 * data is pending: the body is complete. A body of no encoded bytes at all
 * never ends: the caller starts decoding only at its first byte. */
int rc__decoder_ended(const rc__decoder *d);

#endif
