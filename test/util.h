/* Helpers shared by the test programs: a counting allocator that can fail
 * the Nth allocation, and feeding a canned exchange through the callbacks. */
#ifndef RC_TEST_UTIL_H
#define RC_TEST_UTIL_H

#include <check.h>
#include <stddef.h>
#include "curl_compat.h" /* CURL_WRITEFUNC_ERROR on curl before 7.87 */
#include "respchain.h"

typedef struct counting_alloc {
  rc_allocator a;         /* pass &ca.a as rc_pool_config.allocator */
  long live;              /* blocks not yet freed */
  long total;             /* successful malloc/realloc(NULL) calls */
  long calls;             /* allocation attempts, failed ones included */
  long fail_at;           /* fail the attempt with this number (1-based); 0 never */
  size_t bytes_requested; /* sum of sizes asked for */
  size_t live_bytes;      /* bytes in blocks not yet freed */
  size_t peak_bytes;      /* highest live_bytes (may be reset by a test) */
} counting_alloc;

void counting_alloc_init(counting_alloc *ca);

/* A pool over ca with the given chunk size (0: default). Like exact_pool,
 * it hands released blocks out again at once, even under AddressSanitizer
 * (no quarantine), so that counts of reuse and live blocks are exact. */
rc_pool *pool_with(counting_alloc *ca, size_t chunk);

/* A pool with default settings and no quarantine. */
rc_pool *exact_pool(void);

/* A pool with default settings but a memory budget of budget bytes and
 * the given overflow (RC_OVERFLOW_AUTO is the default one). */
rc_pool *pool_with_budget(size_t budget, rc_overflow overflow);

/* Feeds header lines (each with its CRLF), then body in pieces of chunk
 * bytes (0: one piece), through rc_header_cb / rc_write_cb, as curl would.
 * Returns the first callback return value that was not the piece length,
 * or 0 when every callback accepted its bytes. */
size_t feed(rc_response *resp, const char *const *lines, const char *body, size_t body_len,
            size_t chunk);

/* Deterministic test bytes. */
void fill_pattern(char *dst, size_t n, unsigned seed);

/* Descriptors of this process open on a file directly in dir ("": the
 * root directory): spill files, unlinked, still show there. */
int fds_open_in(const char *dir);

/* A snapshot of pool's counters. */
rc_pool_stats pool_stats(rc_pool *pool);

/* A response on pool (NULL: default) with default limits but max_body (0:
 * default) and policy. */
rc_response *new_response(rc_pool *pool, size_t max_body, rc_cap_policy policy);

/* Runs every test of s with curl initialised; the process exit status. */
int run_suite(Suite *s);

/* Whether the libcurl this process runs with (not the one it was compiled
 * against) is at least version num, as in 0x080e00 for 8.14.0. Where curl's
 * own behaviour differs by version, a test asserts the outcome for this. */
int curl_at_least(unsigned int num);

/* Whether this libcurl keeps a held HTTP/2 stream's window small (curl
 * 8.14 sizes stream windows from CURLOPT_MAX_RECV_SPEED_LARGE and opens them
 * at the response headers; 8.21 at every read, the first before the
 * headers): there respchain holds streams back (8.14 to 8.20 from the
 * status line, measured on 8.14.1 and 8.17.0; 8.21 and later from the
 * request, when built against curl 7.80 or newer) and refused ones pause
 * under RC_OVERFLOW_AUTO; with older curls they spill. */
int curl_holds_streams(void);

/* Whether this libcurl loses data of a paused HTTP/2 stream (before 7.88):
 * respchain never pauses one there, it spills under RC_OVERFLOW_WAIT too. */
int curl_loses_paused_streams(void);

/* Whether this libcurl reads every HTTP/2 stream into its own buffers from
 * its request on, paused or not (8.1 to 8.6). */
int curl_buffers_streams(void);

/* Whether text (curl's error buffer, or curl_easy_strerror) is one of the
 * texts curl gives CURLE_OPERATION_TIMEDOUT over HTTP, in whichever phase
 * the time ran out: 7.76.1 to 8.21.0 say "Connection time-out", "Connection
 * timed out after", "Connection timeout after" or "connect timeout" while
 * connecting, "Operation timed out after" later, "Timeout was reached"
 * without a message. */
int curl_says_timeout(const char *text);

/* Where curl holds no stream (!curl_holds_streams()), rc_multi_add keeps
 * back under a budget a handle whose last transfer was HTTP/2, and one that
 * has not run yet where this says so: on 8.1 to 8.6, before 7.88, or under
 * RC_OVERFLOW_WAIT. */
int curl_keeps_back_fresh(rc_overflow mode);

#endif
