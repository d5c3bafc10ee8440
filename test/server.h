/*
 * In-process HTTP/1.1 test server for respchain's tests, benchmarks and
 * examples.
 *
 * ts_start() binds 127.0.0.1 on an ephemeral port and serves from background
 * threads (one accept thread plus one thread per connection) until ts_stop().
 * Connections are keep-alive (HTTP/1.0 requests and "Connection: close" end
 * them) and pipelined requests are answered in order. HEAD gets the same
 * headers as GET without a body; every other method (POST, ...) is served
 * like GET. A request body must use Content-Length (it is read and
 * discarded; "Expect: 100-continue" is answered with 100 Continue first);
 * chunked request bodies get 501. A request head over 64 KiB gets 431.
 *
 * A request target in absolute form (http://host:port/path?query) is
 * routed by its path; "*" (as in OPTIONS *) is answered as /echo.
 *
 * Query parameters are key=value pairs separated by '&'. Sizes accept the
 * suffixes k/K, m/M, g/G (powers of 1024), e.g. n=8M. An unparsable number
 * gives 400, as does an unknown coding/kind/te value. Unknown paths give 404.
 *
 * Body pattern: byte i is taken from a 64-entry dictionary of 8-byte words
 * (63 text words of letters, punctuation, digits or a newline, and one
 * binary word holding NUL, CR, LF and high bytes);
 * word number i / 8 is chosen by a 64-bit mixing hash of i / 8. It is thus
 * text-like (gzip shrinks it to about a sixth) yet has no period, so
 * truncation, duplication or reordering at any offset shows up. The server
 * keeps the first 16 MiB + 256 KiB of it precomputed (filled in on demand)
 * and generates bytes beyond that on the fly.
 *
 * Framing parameters, accepted by /bytes, /gzip, /bomb, /encoding and /text:
 *   te=length (default, Content-Length) | chunked | close (no length,
 *   "Connection: close", closed after the body); write=W: body bytes per
 *   send() (chunk size when chunked; default 256 KiB, or 16 KiB chunks;
 *   capped at 256 KiB); delay_us=D: pause between those writes.
 *
 * Routes (all sizes default as noted):
 *   /bytes?n=N                 pattern bytes 0..N-1 (default N=0).
 *   /gzip?n=N&coding=C&members=K
 *        pattern encoded with C: gzip, x-gzip, GZIP, deflate (zlib wrapper),
 *        deflate-raw (raw deflate, header "deflate"), gzip2 (gzip of gzip,
 *        header "gzip, gzip"), identity; br, BR (quality 5, 4 MiB window),
 *        zstd, ZSTD (level 3, with checksums, size not declared); and
 *        stacked pairs A-B (header "A, B": A applied first) of two
 *        different codings of gzip, br, zstd. members=K splits gzip
 *        data into K concatenated members and zstd data into K frames.
 *        Encodings are cached (LRU, 256 MiB).
 *   /bomb?size=S&coding=gzip|br|zstd&nest=1|2&wrap=gzip|br|zstd
 *        the coding of S zero bytes (default 1G, gzip): gzip one member at
 *        level 9; br with a 16 MiB window and zstd with an 8 MiB one (the
 *        largest respchain accepts), flushed every 64 KiB. nest=2
 *        compresses that again with wrap (header "C, W"; default gzip).
 *        Cached for the server's lifetime.
 *   /corrupt?kind=magic|crc|length|truncated|junk&n=N
 *        defective gzip of N pattern bytes (default 100000).
 *   /corrupt?coding=br|zstd&kind=truncated|junk|crc|window&n=N
 *        defective br or zstd of N pattern bytes: cut in half, junk after
 *        the end, a spoiled checksum (zstd only), or a window over the
 *        limits (br's large-window extension; a 16 MiB zstd window).
 *   /encoding?value=V&n=N      raw pattern bytes with "Content-Encoding: V"
 *                              (V URL-decoded: "+" and %XX).
 *   /redirect?n=K&code=C&to=PATH  K hops of status C, then 302 to PATH
 *                              (default /bytes?n=10).  /loop: 302 to itself.
 *   /hops?n=K&away=HOST        K hops of 302, each with "X-Hop: K" and
 *                              "Set-Cookie: hop=K", then 200 with "X-Hop: 0";
 *                              with away, a last 302 ("X-Hop: away") to
 *                              /hops?n=0 on HOST (URL-decoded), this port.
 *   /status?code=C&n=N         status C (200-599) with N pattern bytes
 *                              (204/304: no body, no Content-Length).
 *   /hints?n=N                 103 Early Hints, then 200 (default N=100).
 *   /trailers?n=N              chunked, trailers X-Checksum (crc32 hex) and
 *                              X-Count (default N=1000).
 *   /lie?claim=C&send=S        Content-Length C (default 4G), S bytes
 *                              (default 10), then close.
 *   /cut?n=N&at=A              Content-Length N, A bytes, then close
 *                              (defaults N=1000, A=N/2).
 *   /bigheader?size=S          one "X-Big:" header of S 'a's (default 1M).
 *   /manyheaders?count=K       K headers "X-H<i>: v<i>" (default 100).
 *   /badchunk                  valid 10-byte chunk, then chunk size "zz".
 *   /headers                   assorted header spellings, body "hello".
 *   /html?title=T              text/html page whose <title> holds T
 *                              (URL-decoded; references left as they are),
 *                              with "Server: respchain-test/1".
 *   /echo                      body is the request head as received, then the
 *                              request body (the bytes read with the head).
 *   /gather?n=N&ms=T           held until N requests (default 2) wait at
 *                              /gather at once, then each answers "together
 *                              N"; one that waits T ms (default 10000)
 *                              alone answers "alone".
 *   /text?body=B&type=T&cookie=C  body B (URL-decoded) of type T
 *                              (text/plain), with "Set-Cookie: C" when given.
 *   /json?nest=N               a JSON document (application/json) inside N
 *                              arrays (0).
 *   /auth?n=N                  401 with a Basic challenge, or with Basic
 *                              credentials 200 and N pattern bytes (100).
 *   CONNECT host:port          200 Connection established; the connection
 *                              then serves requests as usual (a proxy tunnel
 *                              back to this server).
 *   /login?user=U              200, "Set-Cookie: session=U; Path=/" (default
 *                              U=guest).
 *   /private                   200 "secret area" when the request carries
 *                              the cookie session, else 403 "login first".
 */
#ifndef RESPCHAIN_TEST_SERVER_H
#define RESPCHAIN_TEST_SERVER_H

#include <stddef.h>

typedef struct ts_server ts_server;

/* Binds 127.0.0.1:0 and starts serving; NULL on failure. */
ts_server *ts_start(void);

/* The port the server listens on. */
int ts_port(const ts_server *s);

/* Writes "http://127.0.0.1:PORT" + path_and_query into out; returns out. */
char *ts_url(const ts_server *s, const char *path_and_query, char *out, size_t outlen);

/* Stops accepting, closes all connections, joins all threads, frees all.
 * NULL is ignored. */
void ts_stop(ts_server *s);

/* Requests answered so far (counted when the response starts). */
unsigned long ts_requests(const ts_server *s);

/* fn is called for each request with a well-formed head and a body of
 * Content-Length, before it is answered, from the thread that answers it
 * (others may call it at the same time): the head as received (request
 * line, header lines, the empty line), the body's first have bytes (those
 * that came with the head; the rest is not kept) and its length. Set it
 * before the requests it is for are sent; fn NULL: none. */
typedef void ts_request_fn(void *ud, const char *head, size_t head_len, const char *body,
                           size_t have, size_t len);
void ts_on_request(ts_server *s, ts_request_fn *fn, void *ud);

/* Nonzero when the server can send coding ("gzip", "deflate", "br",
 * "zstd"): br and zstd need libbrotlienc and libzstd at build time, and are
 * answered 503 without them. */
int ts_can_encode(const char *coding);

/* Byte i of the deterministic body pattern. */
unsigned char ts_pattern_byte(size_t i);

/* dst[k] = ts_pattern_byte(offset + k) for k in 0..n-1. */
void ts_pattern_fill(unsigned char *dst, size_t offset, size_t n);

#endif
