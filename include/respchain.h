/*
 * respchain: capped, pooled, in-memory capture of libcurl responses.
 *
 * A pool hands out memory; a response captures one transfer at a time (the
 * status and headers of every hop, and the final body) through curl's write
 * and header callbacks; accessors hand out read-only views and copies.
 *
 * Ownership and lifetime, once for the whole API:
 *  - rc_view: a pointer and a length into storage owned by the response.
 *    Read-only. Valid until the response is reset, freed, or receives more
 *    data from a transfer; never NULL (an empty view points at "").
 *    Whether a view shares the response's storage never depends on how curl
 *    chunked the data: views always do, copies never do. Only the body,
 *    the raw body and the full response are NUL-terminated just past their
 *    last byte; header values and raw header blocks are not (use the length).
 *  - *_dup functions return memory allocated with malloc(), owned by the
 *    caller, who releases it with free(); NULL when out of memory. A copy
 *    outlives the response it was taken from.
 *  - Objects made by *_new are released by the matching *_free.
 *
 * Arguments: NULL is accepted for every pointer argument. Where the
 * documentation gives NULL a meaning (defaults, the default pool, no
 * output wanted), that is it; otherwise the outcome is fixed by the return
 * type: rc_code functions return RC_E_INVAL, counts and flags are 0, a view
 * is empty (""), a copy is NULL, and void functions do nothing (those that
 * fill a struct fill it with zeros). rc_write_cb and rc_header_cb fail the
 * transfer (CURL_WRITEFUNC_ERROR) when their userdata is NULL;
 * rc_multi_poll returns CURLM_BAD_HANDLE.
 *
 * Threads: a pool may be shared by any number of threads. A response is
 * filled by one transfer at a time; once its transfer is done, every reading
 * accessor (rc_full_response included) may be called from many threads at
 * once, until the response is reset or freed. rc_attach, rc_detach,
 * rc_response_reset and rc_response_free are called where no callback of
 * the response's transfer runs at the same time: on the thread that drives
 * it (between curl calls), or once it is done.
 *
 * A response and its easy handle may be freed in either order, and either
 * may be reused: rc_attach gives the handle a link to the response, not
 * the response itself, and rc_response_free never touches the handle (so
 * curl_easy_cleanup may come first; but while its transfer waits for the
 * budget, reset or free the response first: see "Memory budget"). A
 * handle whose response was freed,
 * or attached to another handle since, fails its transfer at its next
 * callback (CURLE_WRITE_ERROR; with curl 8.21 before sending a request,
 * CURLE_ABORTED_BY_CALLBACK); a transfer freed mid-way in a multi goes on
 * until then. (rc_detach gives the handle it is passed curl's defaults
 * back.) See rc_attach.
 */
#ifndef RESPCHAIN_H
#define RESPCHAIN_H

#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RC_BUILDING) && defined(__GNUC__)
#define RC_API __attribute__((visibility("default")))
#else
#define RC_API
#endif

/* RC_VERSION (text, "0.2.0") and RC_VERSION_NUM (0xMMmmpp: 0x000200),
 * made from the project version at build time. */
#include "respchain_version.h"

/* Defaults. */
#define RC_DEFAULT_CHUNK_SIZE      (32u * 1024u)        /* growth unit */
#define RC_DEFAULT_LARGE_THRESHOLD (512u * 1024u)       /* large buffer from here */
#define RC_DEFAULT_MAX_LARGE       64u                  /* idle large buffers kept, at most */
#define RC_DEFAULT_MAX_IDLE_SMALL  (8u * 1024u * 1024u) /* idle small bytes kept */
#define RC_DEFAULT_MAX_BODY        (8u * 1024u * 1024u) /* body cap, decoded bytes */
#define RC_DEFAULT_MAX_HEADER      (64u * 1024u)        /* header bytes per hop */
#define RC_DEFAULT_MAX_HOPS        16u                  /* hops kept per transfer */
#define RC_DEFAULT_MAX_CODINGS     5u                   /* Content-Encoding chain */
#define RC_DEFAULT_MAX_WAIT_MS     1000L                /* budget wait, then spill */

/* max_buffer's default: the largest capacity kept idle, a default body and
 * its NUL. */
#define RC_DEFAULT_MAX_BUFFER (RC_DEFAULT_MAX_BODY + 1u)

/*
 * Result codes. RC_OK is 0; the others are positive and stable.
 * X(name, value, message)
 */
/* clang-format off */
#define RC_CODES(X)                                                           \
  X(RC_OK,              0, "complete")                                        \
  X(RC_TRUNCATED,       1, "body truncated at the body cap")                  \
  X(RC_E_TOO_LARGE,     2, "declared Content-Length exceeds the body cap")    \
  X(RC_E_HEADER_CAP,    3, "header bytes of one hop exceed the header cap")   \
  X(RC_E_HOP_CAP,       4, "more hops than the hop cap")                      \
  X(RC_E_NOMEM,         5, "out of memory")                                   \
  X(RC_E_DECODE,        6, "corrupt or truncated compressed body")            \
  X(RC_E_CODINGS,       7, "Content-Encoding chain longer than the limit")    \
  X(RC_E_TRANSFER,      8, "transfer failed (see the CURLcode)")              \
  X(RC_E_TIMEOUT,       9, "timed out waiting for memory budget")             \
  X(RC_E_NOT_FOUND,    10, "no such header")                                  \
  X(RC_E_RANGE,        11, "index out of range")                              \
  X(RC_E_INVAL,        12, "invalid argument")                                \
  X(RC_E_BUSY,         13, "response holds data; reset it first")           \
  X(RC_E_SPILL,        14, "spill file failed: no space, no directory, I/O") \
  X(RC_STOPPED,        15, "stopped by the body observer: its answer is known") \
  X(RC_E_OBSERVER,     16, "the body observer failed")                       \
  X(RC_E_NO_RESPONSE,  17, "nothing received: no transfer filled the response") \
  X(RC_E_KEPT_BACK,    18, "kept back by rc_multi_add, never added: the loop ended first")
/* clang-format on */

typedef enum rc_code {
#define RC__ENUM(name, value, msg) name = value,
  RC_CODES(RC__ENUM)
#undef RC__ENUM
} rc_code;

/* The library's version at run time, e.g. "0.2.0": compare with
 * RC_VERSION, the version of the header compiled against. Static. */
RC_API const char *rc_version(void);

/* A static, never NULL, English description of code. */
RC_API const char *rc_strerror(rc_code code);

/* The text for an outcome: curl's own message (curl_easy_strerror) for
 * RC_E_TRANSFER, rc_strerror(code) otherwise. Static, never NULL. */
RC_API const char *rc_result_text(rc_code code, CURLcode curlcode);

/* A read-only pointer + length; see the lifetime rules at the top. */
typedef struct rc_view {
  const char *ptr;
  size_t len;
} rc_view;

/* ------------------------------------------------------------------------
 * Allocator: replaceable per pool. All memory the library keeps for a pool
 * and its responses (buffers, hop tables, decoder state) goes through it;
 * *_dup copies use malloc(). realloc(NULL, n) must behave as malloc(n).
 * One exception: the links rc_attach gives easy handles (32 bytes each on
 * 64-bit systems, as many as responses attached at once) live in one
 * process-wide table from malloc, reused, and kept until exit (a handle may
 * hold a link that long).
 */
typedef struct rc_allocator {
  void *(*malloc)(size_t size, void *ud);
  void *(*realloc)(void *ptr, size_t size, void *ud);
  void (*free)(void *ptr, void *ud);
  void *ud;
} rc_allocator;

/* ------------------------------------------------------------------------
 * Pool: thread-safe source of buffers. Small buffers (capacity below
 * large_threshold) are kept idle for reuse up to max_idle_small bytes; large
 * buffers as many as recent demand calls for, up to max_large; anything
 * over max_buffer is never kept. Demand decays, and idle large buffers with
 * it, as the pool is used (buffers taken and released, rc_pool_stats_get,
 * rc_multi_poll); rc_pool_trim frees every idle buffer at once.
 * The most recently released buffer is reused first.
 * Spill files are reused the same way: the file of a spilled body is kept
 * open when the response is reset or freed, as many as spilled lately (at
 * most max_large, none larger than max_buffer), decaying to none within
 * about 2 s of no spilling as the pool is used (as above), and the next
 * spill writes over it (its pages are in the page cache already).
 * rc_pool_trim and the pool's end close them. A pool left unused keeps
 * them open; after some 30 s the kernel writes their dirty pages to disk.
 */
typedef struct rc_pool rc_pool;

/* What a transfer refused memory by the budget does (see "Memory budget"). */
typedef enum rc_overflow {
  RC_OVERFLOW_AUTO = 0, /* HTTP/1.x: waits (pauses), at most max_wait_ms,
                           then spills; a multiplexed stream (HTTP/2,
                           HTTP/3): spills at once, but with curl 8.14
                           and 8.21 waits as HTTP/1.x does (held back) */
  RC_OVERFLOW_WAIT = 1, /* always waits, without bound; never spills */
  RC_OVERFLOW_SPILL = 2 /* always spills at once; never waits */
} rc_overflow;

typedef struct rc_pool_config {
  size_t chunk_size;             /* growth unit of a body of unknown size: it
                                    grows by an eighth of its size at a time (at
                                    least one chunk), in whole chunks (a declared
                                    size within the cap is allocated at once);
                                    >= 1 */
  size_t large_threshold;        /* capacity from which a buffer counts as large;
                                    >= 1 */
  size_t max_large;              /* idle large buffers kept, at most: within it
                                    the pool keeps as many as were in use lately
                                    (released ones a burst will take again),
                                    decaying to 2 within about 2 s of quiet;
                                    0 keeps none */
  size_t max_idle_small;         /* idle bytes of small buffers kept */
  size_t max_buffer;             /* largest capacity kept idle */
  size_t budget;                 /* memory budget in bytes, 0 = off: see below */
  rc_overflow overflow;          /* what a transfer refused by the budget does */
  long max_wait_ms;              /* RC_OVERFLOW_AUTO: longest wait before spilling;
                                    <= 0 waits without bound */
  const char *spill_dir;         /* directory of spill files, copied at creation;
                                    NULL or "": $TMPDIR (if not empty), else
                                    /tmp */
  const rc_allocator *allocator; /* copied at creation; NULL = malloc family */
} rc_pool_config;

typedef struct rc_pool_stats {
  uint64_t acquisitions; /* buffers handed to responses */
  uint64_t releases;     /* buffers given back by responses */
  uint64_t reuses;       /* acquisitions served from idle buffers */
  uint64_t fresh;        /* acquisitions served by a new allocation */
  uint64_t discards;     /* releases freed instead of kept idle */
  uint64_t pauses;       /* times a transfer began to wait for the budget */
  uint64_t wakeups;      /* times a waiting transfer was told to go on; may
                            exceed pauses: a woken transfer refused again
                            (it asks for more than it was woken for) waits
                            on without a new pause, and is woken again */
  uint64_t spills;       /* bodies that went on to a spill file */
  size_t bytes_in_use;   /* capacity held by responses now */
  size_t peak_in_use;    /* highest bytes_in_use seen */
  size_t bytes_idle;     /* capacity kept idle in the pool */
  size_t idle_small;     /* idle small buffers */
  size_t idle_large;     /* idle large buffers */
  size_t waiting;        /* responses waiting for the budget now */
  uint64_t deferrals;    /* transfers rc_multi_add kept back before their
                            request */
  size_t deferred;       /* transfers kept back by rc_multi_add now */
} rc_pool_stats;

/* Fills cfg with the RC_DEFAULT_* values (budget off, RC_OVERFLOW_AUTO,
 * spill files in $TMPDIR or /tmp, malloc family). */
RC_API void rc_pool_config_init(rc_pool_config *cfg);

/* Creates a pool from cfg (NULL: defaults). On success *out owns a new pool
 * (release with rc_pool_free). RC_E_INVAL for a NULL out, a zero chunk_size
 * or large_threshold, a partial allocator or an unknown overflow mode;
 * RC_E_NOMEM. */
RC_API rc_code rc_pool_new(const rc_pool_config *cfg, rc_pool **out);

/* Drops the caller's reference. Responses created on the pool keep it alive;
 * the pool and its idle buffers are freed once the last of them is freed.
 * NULL is a no-op, and so is rc_pool_default(): the default pool lives
 * until exit, whatever is freed. Returns RC_OK, or RC_E_KEPT_BACK when
 * transfers of the pool that rc_multi_add kept back are still waiting to
 * be added: freed once its loops ended, that says a loop ended before
 * them (their responses' rc_result says so too). */
RC_API rc_code rc_pool_free(rc_pool *pool);

/* The process-wide pool with default settings, created on first use and
 * kept until exit (rc_pool_free does not end it). Never NULL (aborts if it
 * cannot be created). */
RC_API rc_pool *rc_pool_default(void);

/* Frees every idle buffer and closes the spill files kept for reuse.
 * Buffers and files held by responses are unaffected. */
RC_API void rc_pool_trim(rc_pool *pool);

/* A snapshot of the counters (those of idle buffers and those of the
 * budget are read one after the other). Also lets idle large buffers
 * decay (see max_large). */
RC_API void rc_pool_stats_get(rc_pool *pool, rc_pool_stats *out);

/* Runtime setters; each takes effect at once, for buffers released or grown
 * from then on, and frees idle buffers the new setting no longer allows
 * (keeping the most recently released).
 * RC_E_INVAL for a zero chunk size or threshold. */
RC_API rc_code rc_pool_set_chunk_size(rc_pool *pool, size_t bytes);
RC_API rc_code rc_pool_set_large_threshold(rc_pool *pool, size_t bytes);
RC_API rc_code rc_pool_set_max_large(rc_pool *pool, size_t count);
RC_API rc_code rc_pool_set_max_idle_small(rc_pool *pool, size_t bytes);
RC_API rc_code rc_pool_set_max_buffer(rc_pool *pool, size_t bytes);

/* A copy of the pool's current configuration. cfg->allocator is set to
 * NULL; cfg->spill_dir points at the pool's own copy (valid while the pool
 * lives) or is NULL. */
RC_API void rc_pool_config_get(rc_pool *pool, rc_pool_config *cfg);

/* ------------------------------------------------------------------------
 * Memory budget (off by default): a limit on the bytes that all responses of
 * a pool hold in memory at once (bytes_in_use: body, header and
 * full-response storage, until each response is reset or freed). Bytes in
 * spill files do not count.
 *
 * A body that needs memory the budget cannot give never loses data: its
 * transfer waits, or its body spills to a temporary file (as past
 * max_memory), by the pool's overflow mode:
 *  - RC_OVERFLOW_AUTO (the default): a transfer that owns its connection
 *    (HTTP/1.x) waits, at most max_wait_ms (1 s), then spills. A multiplexed
 *    stream (HTTP/2, HTTP/3) spills at once: pausing one stream of a shared
 *    connection does not stop the peer at once, and curl keeps what arrives
 *    for the paused stream in its own buffers: curl 7.x (7.88) up to 64 MiB
 *    per stream (past that the transfer fails, CURLE_OUT_OF_MEMORY); curl
 *    8.x up to the stream's flow-control window, at most 10 MB. With curl
 *    8.14 and 8.21 (checked at run time), which size a stream's window from
 *    its CURLOPT_MAX_RECV_SPEED_LARGE, a stream that may be refused is held
 *    (a low speed limit keeps its window at 64 KiB or below): from its
 *    status line with 8.14, from its request with 8.21 (an HTTP/1.x
 *    response is let go at its status line); lifted (the limit set to 0,
 *    unlimited) once admitted, when its header block says no body comes,
 *    or by rc_detach: there such a stream waits as HTTP/1.x does.
 *  - RC_OVERFLOW_WAIT: waits without bound, never touches the disk; but
 *    curl before 7.88 loses the data of a paused HTTP/2 stream (7.76.1:
 *    CURLE_PARTIAL_FILE, 7.81.0: CURLE_HTTP2_STREAM), so there a refused
 *    multiplexed stream spills. On HTTP/2, see rc_multi_add.
 *  - RC_OVERFLOW_SPILL: spills at once, never waits.
 * How a transfer waits: one attached with rc_attach pauses
 * (CURL_WRITEFUNC_PAUSE) and the thread that drives it resumes it with
 * rc_pool_resume (or rc_multi_poll, which calls it); one given a wait time
 * with rc_response_set_budget_wait blocks in its callback instead (threads
 * on curl_easy_perform). Only rc_attach tells the response its easy
 * handle: with rc_write_cb set up by hand it cannot pause. Nor does a
 * transfer pause on a thread that never called rc_pool_resume,
 * rc_multi_poll, rc_pool_timeout, rc_pool_on_wake or rc_multi_add (on any
 * pool): nothing
 * there would resume it, and it would stay paused, past its wait bound,
 * until its CURLOPT_TIMEOUT (a program on curl_multi_perform and
 * curl_multi_poll alone, or on curl_easy_perform). A response that can do
 * neither takes the
 * holder's place (below) when it is free, else spills (under
 * RC_OVERFLOW_WAIT: fails with RC_E_TIMEOUT). A blocking wait that expires
 * spills too (under RC_OVERFLOW_WAIT: RC_E_TIMEOUT). The wait bound is
 * kept by rc_pool_resume: a thread that calls it (or rc_multi_poll) less
 * often than every max_wait_ms leaves its paused transfers waiting until
 * it does.
 *
 * Progress: the oldest waiting response (or, when none waits, the first one
 * refused that does not spill) is let past the limit, alone, until it is
 * reset or freed, so bytes_in_use stays under budget + one response's
 * own caps (its max body or max memory, + 1, plus its header blocks), and a
 * state where every transfer waits still drains. Released memory wakes
 * waiters oldest first while their needs added up fit, so one release
 * resumes only the transfers it can carry. The wait bound makes a program
 * that keeps finished responses (reading them after its loop) finish too:
 * what does not fit goes to disk.
 * Not held back, though counted: header blocks (capped per hop; pausing a
 * header line would break curl's one-line-per-call delivery), the full
 * response (assembled after the transfer), the raw body copy, and the
 * decoded output of one 1 KiB input slice per decoding transfer. Not
 * counted: decoder state, spill files, their mappings and the batches
 * that gather their bytes (see max_memory: at most 16 MiB, and 16 KiB per
 * body spilling past 64 at once).
 * On curl before 8.14 the budget holds HTTP/2 transfers added with
 * rc_multi_add back before their request while memory is short; so it
 * holds the process there (curl 8.1 to 8.6 buffer every stream
 * themselves: only rc_multi_add bounds them).
 * Time spent waiting counts toward CURLOPT_TIMEOUT; rc_pool_stats.waiting
 * tells how many wait now. A transfer that ends while it waits (its
 * timeout, an error, curl_multi_remove_handle) keeps its place in the
 * queue until its response is reset, freed or detached (rc_detach): do
 * one of these as soon as it ended, and before curl_easy_cleanup of its
 * handle. A response keeps the handle it was attached to (reset keeps it,
 * for the next transfer on the same handle) until rc_detach, rc_attach to
 * another handle, or rc_response_free: one that outlives its handle is
 * detached before curl_easy_cleanup, or attached again before its next
 * transfer. respchain-multi(3) shows the whole lifecycle.
 *
 * The curl_multi_perform loop, in curl's own shape with three calls
 * swapped (rc_multi_add, rc_multi_perform, rc_multi_poll):
 *
 *     ... rc_attach, then rc_multi_add for each transfer ...
 *     do {
 *       rc_multi_perform(pool, multi, &running);
 *       ... curl_multi_info_read: read results, rc_response_reset ...
 *       if (running)
 *         rc_multi_poll(pool, multi, NULL, 0, 1000, NULL);
 *     } while (running);
 *
 * An event loop on curl_multi_socket_action (libuv, libevent, epoll):
 * register a wake callback once on the loop's thread (rc_pool_on_wake: it
 * may post to the loop, e.g. uv_async_send or a write to an eventfd); call
 * rc_pool_resume when it fires and after each curl_multi_socket_action;
 * and arm a timer for rc_pool_timeout(), calling rc_pool_resume when it
 * expires (the wait bound). See examples/uvscan.c.
 */

/* Sets the budget (0: off), at once; waiting transfers that now fit may go
 * on. RC_E_INVAL for a NULL pool. */
RC_API rc_code rc_pool_set_budget(rc_pool *pool, size_t bytes);

/* Resumes the transfers paused by the budget on the calling thread that
 * may go on now: memory was released for them, or their wait bound passed
 * (they then spill). curl_easy_pause(CURLPAUSE_CONT) is called for each,
 * which curl allows only from the thread driving the handle, and which may
 * run their callbacks before it returns. First it adds to their multi
 * handles the transfers that rc_multi_add kept back on this thread and
 * that may go in now. Returns how many were resumed or added; 0 for a NULL
 * pool. */
RC_API int rc_pool_resume(rc_pool *pool);

/* Milliseconds until rc_pool_resume has work on the calling thread: 0 when
 * it has now, -1 when nothing of this thread's is due: none of its
 * transfers waits, or they wait without bound (RC_OVERFLOW_WAIT), or the
 * pool is NULL. For an event loop's timer; rc_multi_poll uses it itself. */
RC_API long rc_pool_timeout(rc_pool *pool);

/* Called when a transfer paused on the registering thread may resume; from
 * any thread, with a lock of the pool held: it must not call into
 * respchain, only post to the loop (uv_async_send, an eventfd write,
 * curl_multi_wakeup). */
typedef void (*rc_wake_fn)(void *ud);

/* Sets the calling thread's wake callback for pool (one per thread; a new
 * one replaces it; fn NULL removes it). It stays until removed or the pool
 * is destroyed. RC_E_INVAL for a NULL pool, RC_E_NOMEM. */
RC_API rc_code rc_pool_on_wake(rc_pool *pool, rc_wake_fn fn, void *ud);

/* rc_pool_resume, then curl_multi_poll(multi, ...) for at most timeout_ms
 * (less when a wait bound falls due), woken early when memory for one of
 * this thread's paused transfers is released, then rc_pool_resume again.
 * With curl 8.1 to 8.4, which can leave work of an HTTP/2 stream undone
 * with no timer until the next curl_multi_perform, it waits at most 20 ms
 * while a transfer of pool that rc_multi_add put into a multi handle was
 * not reset, freed or detached since (the few streams a budget lets run
 * would otherwise wait out timeout_ms). Returns curl_multi_poll's result;
 * CURLM_BAD_HANDLE for a NULL pool. */
RC_API CURLMcode rc_multi_poll(rc_pool *pool, CURLM *multi, struct curl_waitfd extra_fds[],
                               unsigned int extra_nfds, int timeout_ms, int *numfds);

/* rc_pool_resume, then curl_multi_perform(multi, running), with *running
 * counting also the transfers of pool that rc_multi_add keeps back for
 * multi (not yet in curl's count): a loop that goes on while it is not 0
 * ends only when every transfer added with rc_multi_add has run. running
 * may be NULL. Returns curl_multi_perform's result; CURLM_BAD_HANDLE for a
 * NULL pool or multi. */
RC_API CURLMcode rc_multi_perform(rc_pool *pool, CURLM *multi, int *running);

/* ------------------------------------------------------------------------
 * Response: captures one transfer at a time; reusable.
 */
typedef struct rc_response rc_response;

typedef enum rc_cap_policy {
  RC_CAP_STOP = 0,  /* at the body cap, stop the transfer (saves bandwidth) */
  RC_CAP_DRAIN = 1, /* read and discard the rest (keeps the connection) */
  RC_CAP_REJECT = 2 /* as STOP, and a declared Content-Length (bytes on the
                       wire, even when decoding) over the cap stops the
                       transfer before any body byte is kept */
} rc_cap_policy;

/* Limits of one response. Sizes above SIZE_MAX / 2 count as SIZE_MAX / 2. */
typedef struct rc_limits {
  size_t max_body;         /* body bytes kept (decoded bytes when decoding);
                              0 is a cap of 0 bytes (any body byte is at the
                              cap, as on_cap says), not "no cap" as 0 is for
                              max_memory and the budget */
  size_t max_header_bytes; /* raw header bytes per hop, trailers included */
  size_t max_hops;         /* hops kept per transfer; >= 1, and values over
                              INT_MAX count as INT_MAX (hops are named by
                              int). Every status line counts (1xx,
                              redirects, auth, CONNECT): keep it above
                              CURLOPT_MAXREDIRS + 1 */
  rc_cap_policy on_cap;    /* what happens at the body cap */
  size_t max_codings;      /* longest Content-Encoding chain decoded; at
                              most 16 (larger values count as 16) */
  size_t max_raw;          /* when decoding, also keep up to this many bytes
                              of the body as received; 0 keeps none */
  size_t max_memory;       /* body bytes kept in memory; past them the whole
                              body moves to an unlinked temporary file in the
                              pool's spill_dir (0: no limit), written 256 KiB
                              at a time (a spilling body holds a batch of
                              that much heap, outside the budget, until its
                              end or first read; 16 KiB when 64 bodies of
                              the pool have one already). max_body still
                              caps the body */
} rc_limits;

/* Fills lim with the RC_DEFAULT_* values, RC_CAP_STOP, max_raw 0 and
 * max_memory 0. */
RC_API void rc_limits_init(rc_limits *lim);

/* Creates a response drawing from pool (NULL: rc_pool_default()) with lim
 * (NULL: defaults). *out owns it; release with rc_response_free.
 * RC_E_INVAL for a NULL out or limits rc_response_set_limits refuses;
 * RC_E_NOMEM. */
RC_API rc_code rc_response_new(rc_pool *pool, const rc_limits *lim, rc_response **out);

/* Returns all storage to the pool and frees the response. NULL is a no-op.
 * Every view into it becomes invalid; copies stay valid. It never touches
 * the easy handle it was attached to, which may be gone already: the
 * handle's next callback fails its transfer (see rc_attach). A transfer
 * paused for the budget then stays paused until the program removes it or
 * it times out (curl_easy_pause(easy, CURLPAUSE_CONT) ends it at once). */
RC_API void rc_response_free(rc_response *resp);

/* Returns all storage to the pool and empties the response for the next
 * transfer; limits and settings are kept. Every view becomes invalid.
 * A response attached with rc_attach also resets itself at the first
 * header line of a new transfer on its handle, if it still holds the last
 * one's (so hops do not pile up, nor an old failure fail the new
 * transfer); one set up by hand does not. Resetting yourself stays the
 * rule: a transfer that fails before any header line (a refused
 * connection) leaves the last one's data in place, though rc_result
 * then says RC_E_TRANSFER unless the old data carried a limit's code. */
RC_API void rc_response_reset(rc_response *resp);

/* Changes the limits. Only between transfers: RC_E_BUSY if the response
 * holds any data (reset it first); RC_E_INVAL for a NULL argument,
 * max_hops == 0 or an on_cap that is not an rc_cap_policy. */
RC_API rc_code rc_response_set_limits(rc_response *resp, const rc_limits *lim);

/* What became of the last hop's Content-Encoding. */
typedef enum rc_encoding {
  RC_ENC_IDENTITY = 0,    /* none, or identity: the body is as sent */
  RC_ENC_DECODED = 1,     /* a chain of gzip, deflate, br and zstd decoded by
                             the response (br, zstd: when built with them) */
  RC_ENC_UNSUPPORTED = 2, /* a coding it cannot decode (compress, ..., br
                             or zstd in a build without them): the
                             body is kept as received */
  RC_ENC_NOT_DECODED = 3  /* decoding is off: the body is kept as received */
} rc_encoding;

/* Turns decoding of Content-Encoding on or off for the next transfers.
 * Off by default; rc_attach turns it on together with curl's options. Turn it
 * on only when curl's own decoding is off (CURLOPT_HTTP_CONTENT_DECODING 0),
 * or the body would be decoded twice. RC_E_BUSY while holding data.
 * Decoder memory, per coding of the chain, comes from the pool's allocator
 * and is not counted by the memory budget: about 40 KiB for gzip or
 * deflate, up to 8.5 MiB for zstd (windows over 8 MiB are refused, as RFC
 * 9659 allows) and up to 24 MiB for br (its 16 MiB window, while the ring
 * buffer grows); br state, and zstd state over 1 MiB, is freed when its
 * stream ends or the body stops. */
RC_API rc_code rc_response_set_decoding(rc_response *resp, int on);

/* For the memory budget: 0 (the default) pauses the transfer when memory is
 * refused; timeout_ms > 0 blocks in the write callback up to that long, then
 * spills (RC_OVERFLOW_WAIT: fails with RC_E_TIMEOUT). RC_E_INVAL for a
 * negative value. */
RC_API rc_code rc_response_set_budget_wait(rc_response *resp, long timeout_ms);

/* A body observer: called with every slice of the body as it arrives, in
 * order, decoded when the response decodes, after the body cap (all
 * slices together are at most max_body bytes; a slice is never empty).
 * data is read-only and valid only during the call: no copy is made for
 * the observer (it points into the body's storage, the decoder's output or
 * curl's buffer). Called on the thread driving the transfer, from inside
 * curl's write callback; it must not reset or free the response, read its
 * body (rc_body, rc_full_response), or call curl on the transfer. It may
 * read the final hop's status and headers (rc_hop, rc_header).
 * Returns RC_OK to go on; RC_STOPPED when its answer is known: the
 * transfer stops, rc_result says RC_STOPPED (not RC_E_TRANSFER) and what
 * was kept stays readable; any other code fails the transfer with
 * RC_E_OBSERVER. A stop said with the last bytes of a body whose length
 * its Content-Length gave (not decoded, not a 3xx's) stops nothing: curl
 * ends the transfer as usual (CURLE_OK) and keeps the connection for the
 * next, and rc_result says RC_STOPPED all the same; earlier, curl's
 * transfer fails (CURLE_WRITE_ERROR) and closes its connection. */
typedef rc_code (*rc_observer_fn)(void *ud, const char *data, size_t len);

/* What rc_response_observe does with the body besides observing it. */
typedef enum rc_keep {
  RC_KEEP_BODY = 0, /* kept as usual (rc_body) */
  RC_KEEP_NONE = 1  /* not stored at all: no pool memory, no budget, no
                       spill file; rc_body is empty, rc_body_kept 0,
                       rc_body_length counts the bytes that went by */
} rc_keep;

/* Sets the response's body observer (fn NULL: none) and whether the body
 * is kept, for the next transfers: like limits and decoding, they stay
 * across rc_response_reset. ud is the observer's, passed as it is.
 * RC_E_BUSY while the response holds data (reset it first); RC_E_INVAL for
 * an unknown keep. */
RC_API rc_code rc_response_observe(rc_response *resp, rc_observer_fn fn, void *ud, rc_keep keep);

/* ------------------------------------------------------------------------
 * curl adapters.
 *
 * rc_attach sets on easy exactly: CURLOPT_WRITEFUNCTION/WRITEDATA,
 * CURLOPT_HEADERFUNCTION/HEADERDATA, CURLOPT_ACCEPT_ENCODING with the
 * codings this build decodes ("gzip, deflate", then ", br" and ", zstd"
 * when built with libbrotlidec and libzstd) and
 * CURLOPT_HTTP_CONTENT_DECODING 0, and turns the response's decoding on:
 * the response decodes, so that its body cap counts decoded bytes. Change
 * those two curl options afterwards if you like; if curl is to decode, call
 * rc_response_set_decoding(resp, 0). CURLOPT_PRIVATE stays the caller's.
 * With curl 8.14 and 8.21, under a budget (not RC_OVERFLOW_SPILL), the
 * response also sets CURLOPT_MAX_RECV_SPEED_LARGE of an HTTP/2 transfer:
 * lowered to hold the stream back (8.14: from its status line; 8.21: from
 * its request, let go at the status line of an HTTP/1.x one), 0
 * (unlimited) once it is admitted, when its header block says no body
 * comes, and in rc_detach; a limit of the program's own does not survive
 * that. With curl 8.21 rc_attach also sets CURLOPT_PREREQFUNCTION and
 * CURLOPT_PREREQDATA (to hold each request before curl sends it), and
 * rc_detach sets them back to NULL.
 * rc_detach restores curl's defaults for those six options and turns
 * decoding off.
 * Both return RC_E_INVAL on a NULL argument or a curl setopt failure.
 *
 * The data options rc_attach sets (WRITEDATA, HEADERDATA, PREREQDATA) hold
 * a link to the response, not the response: a link lives until rc_detach,
 * the next rc_attach of the response (to this handle or another), or
 * rc_response_free. A handle whose link is gone fails its transfer at its
 * next callback: write and header calls return CURL_WRITEFUNC_ERROR
 * (CURLE_WRITE_ERROR), the request-time hold callback aborts
 * (CURLE_ABORTED_BY_CALLBACK). One response, one handle: rc_attach of a
 * response attached to another handle and still holding data (a transfer
 * running there, or a finished one not reset) returns RC_E_BUSY and
 * changes nothing; once reset or detached, the response moves, and the
 * handle it left fails as above. Attaching to the handle it is attached to
 * is always allowed. rc_attach returns RC_E_NOMEM when no link can be made.
 *
 * rc_write_cb / rc_header_cb are the callbacks themselves, with curl's
 * signatures and the response as userdata, for callers who set them up by
 * hand. Set up so, the response does not know its easy handle and cannot
 * pause for the memory budget: refused memory makes it take the holder's
 * place when that is free, else spill (under RC_OVERFLOW_WAIT: fail with
 * RC_E_TIMEOUT), unless rc_response_set_budget_wait lets it block. Such a
 * caller also sets CURLOPT_ACCEPT_ENCODING and decoding itself.
 *
 * rc_accept_encoding is the value rc_attach gives CURLOPT_ACCEPT_ENCODING:
 * the codings this build decodes, "gzip, deflate", then ", br" and
 * ", zstd" when built in. Static, never NULL.
 */
RC_API rc_code rc_attach(rc_response *resp, CURL *easy);
RC_API rc_code rc_detach(rc_response *resp, CURL *easy);
RC_API size_t rc_write_cb(char *ptr, size_t size, size_t nmemb, void *resp);
RC_API size_t rc_header_cb(char *ptr, size_t size, size_t nitems, void *resp);
RC_API const char *rc_accept_encoding(void);

/* Adds resp's transfer (the easy handle it was attached to with rc_attach)
 * to multi: curl_multi_add_handle, at once or, where the budget holds
 * HTTP/2 streams back this way, later. That is every curl before 8.14
 * (for handles that have not run yet, only some of them: below), which
 * cannot keep a stream's window small: pausing a stream does not
 * stop it receiving the stream (up to 64 MiB in 7.88, the 10 MB window in
 * 8.7 to 8.13), and 8.1 to 8.6 read every stream into their own buffers
 * from its request on, paused or not (8.5.0, 50 streams of 8 MiB on one
 * connection, a callback that keeps nothing: 400 MiB). There, while pool's
 * budget is on, a transfer goes in only when the bytes in use and admitted
 * (but the bodies of running streams), plus a reserve for each admitted
 * stream that runs, leave room for its own reserve, or when no such stream
 * runs; under RC_OVERFLOW_AUTO also when none went in for max_wait_ms. A
 * reserve is one and a half times the stream's window (at most the
 * response's max_body): what curl reads and the body it becomes; it is
 * given back when the body ends (its length, its coding's end, its cap),
 * when its status line says HTTP/1.x, or when the response is reset, freed
 * or detached. A handle whose last transfer spoke HTTP/1.x goes in at
 * once; one whose last spoke HTTP/2 is kept back so. A handle that has not
 * run yet is kept back so on 8.1 to 8.6, before 7.88 (where a refused
 * stream can only spill), and under RC_OVERFLOW_WAIT; on 7.88 and 8.7 to
 * 8.13 it goes in at once. Keeping back bounds how many streams run at
 * once, and with them their decoders' state (a zstd window, a br ring
 * buffer), which the budget does not count. A kept-back transfer waits, oldest first, and goes in from
 * rc_pool_resume (and rc_multi_poll) on the calling thread; that thread's
 * wake callback says when. From 8.14 on (streams held, see the budget
 * above), and without a budget, this is curl_multi_add_handle. A kept-back
 * transfer is not in curl's running count: rc_multi_perform's count has
 * it (rc_pool_stats.deferred counts them all); one that is never added
 * (a loop that ended on curl_multi_perform's count) is reported:
 * rc_result says RC_E_KEPT_BACK, and so does rc_pool_free while it is
 * kept. To take one back, reset, free or detach its response
 * (curl_multi_remove_handle knows nothing of it). Returns
 * curl_multi_add_handle's result, CURLM_OK when kept back,
 * CURLM_BAD_HANDLE for a NULL multi, CURLM_BAD_EASY_HANDLE for a NULL or
 * unattached resp, CURLM_ADDED_ALREADY for one kept back. */
RC_API CURLMcode rc_multi_add(rc_response *resp, CURLM *multi);

/* The outcome of the transfer, given curl's result for it: the first limit
 * the response hit (RC_TRUNCATED, RC_E_TOO_LARGE, RC_E_HEADER_CAP,
 * RC_E_HOP_CAP, RC_E_NOMEM, ...), else RC_E_TRANSFER when curlcode is not
 * CURLE_OK, else RC_OK. What was read before a limit was hit is kept.
 * A response that received nothing at all (no header line, no body byte:
 * new, reset, or its transfer never ran) is RC_E_NO_RESPONSE with
 * CURLE_OK, RC_E_TRANSFER otherwise; never RC_OK. (Set up by hand
 * without rc_header_cb, an empty body is such a response.) One whose
 * transfer rc_multi_add kept back and that was never added (a loop ended
 * on curl's own running count) is RC_E_KEPT_BACK, before any other
 * outcome.
 * Corrupt compressed data is RC_E_DECODE whatever curlcode says; a
 * compressed body that ends before its stream does is RC_E_DECODE only
 * with CURLE_OK (with a curl failure, such as CURLE_PARTIAL_FILE, the
 * failure explains the short body: RC_E_TRANSFER).
 * A body in a spill file is mapped here as by rc_body: when that fails
 * (address space exhausted), RC_E_NOMEM instead of RC_OK or RC_TRUNCATED,
 * so that with those two rc_body always gives the whole body. A spill
 * file's last bytes are written when the body's end is known (its
 * Content-Length, the end of its coding, the cap), else when it is first
 * read: a write that fails then (disk full) makes this RC_E_SPILL whatever
 * curlcode says, and the body is what the file took. */
RC_API rc_code rc_result(const rc_response *resp, CURLcode curlcode);

/* Nonzero when the body stopped at the cap (under any policy). */
RC_API int rc_truncated(const rc_response *resp);

/* ------------------------------------------------------------------------
 * Reading. Hop indexes are int and count from 0 (the first response seen)
 * to rc_hop_count()-1; -1 (and any negative n: -n from the end) names the
 * last. rc_hop_count returns size_t, yet never more than INT_MAX (max_hops
 * counts as INT_MAX at most), so (int)i for i < rc_hop_count() is a valid
 * index.
 *
 * Every reader takes a const response: reading never changes what the
 * response holds. The caches some fill on first use (the spill file's
 * mapping, the assembled full response) are made once, under a lock.
 */

/* The final body: contiguous, NUL-terminated just past its last byte. A
 * body in a spill file is mapped read-only on the first call (of this or
 * rc_result) after it changed (once, thread-safe), its last bytes written
 * out first if they were not yet (see rc_result); the view is then valid
 * as any other. Empty if that mapping fails (address space exhausted):
 * rc_result then says RC_E_NOMEM, and rc_body_dup returns NULL. */
RC_API rc_view rc_body(const rc_response *resp);

/* Nonzero when the body is in a spill file (max_memory or the budget). */
RC_API int rc_body_spilled(const rc_response *resp);

/* Nonzero when the body is kept (the default); 0 under RC_KEEP_NONE, where
 * rc_body is empty and that is no error. */
RC_API int rc_body_kept(const rc_response *resp);

/* Body bytes received for the last hop so far, decoded when decoding, up to
 * the cap: those observed, whether kept or not (kept: rc_body's length). */
RC_API size_t rc_body_length(const rc_response *resp);

/* The last hop's body as received, before decoding: kept only when decoding
 * with lim.max_raw > 0, and at most max_raw bytes. rc_raw_truncated is
 * nonzero when it may miss bytes: max_raw was reached, or the body cap
 * ended the body before the rest was received. Same view rules as rc_body;
 * empty otherwise. */
RC_API rc_view rc_raw_body(const rc_response *resp);
RC_API int rc_raw_truncated(const rc_response *resp);

/* What became of the last hop's Content-Encoding. */
RC_API rc_encoding rc_body_encoding(const rc_response *resp);

/* Number of hops seen (status lines), 0 before any header arrived. */
RC_API size_t rc_hop_count(const rc_response *resp);

typedef struct rc_hop_info {
  int status;       /* e.g. 200; 0 if the status line was unreadable */
  int version;      /* HTTP version x10: 10, 11, 20, 30 */
  int is_final;     /* nonzero for the last hop */
  rc_view reason;   /* reason phrase, may be empty */
  rc_view raw;      /* status line through the blank line, as received */
  rc_view trailers; /* trailer lines received after the body, raw */
} rc_hop_info;

/* Fills *out for hop; RC_E_RANGE when there is no such hop. */
RC_API rc_code rc_hop(const rc_response *resp, int hop, rc_hop_info *out);

/* Status of the last hop, 0 before any. */
RC_API int rc_status(const rc_response *resp);

/* The nth (from 0) value of header name (case-insensitive) in hop, with
 * surrounding white space removed. A value folded over several lines
 * (obsolete line folding) is given as received, line breaks included:
 * "first\r\n second". RC_E_NOT_FOUND, RC_E_RANGE (no hop). */
RC_API rc_code rc_header(const rc_response *resp, int hop, const char *name, size_t nth,
                         rc_view *out);

/* As rc_header, over the trailers of the last hop. */
RC_API rc_code rc_trailer(const rc_response *resp, const char *name, size_t nth, rc_view *out);

/* The full response of the last hop: its raw header block (status line,
 * headers, blank line) followed by the body; NUL-terminated. Assembled on the
 * first call and cached in the response (at most once, thread-safe), freed
 * with it. RC_E_NOMEM, and RC_E_RANGE before any hop. (resp was not const
 * before 0.2.0; callers compile and link unchanged.) */
RC_API rc_code rc_full_response(const rc_response *resp, rc_view *out);

/* Copies, owned by the caller (free()), NUL-terminated; *len (may be NULL)
 * receives the length without the NUL, 0 when NULL is returned. NULL when
 * out of memory, for a NULL response, or for rc_full_response_dup before
 * any hop. */
RC_API char *rc_body_dup(const rc_response *resp, size_t *len);
RC_API char *rc_full_response_dup(const rc_response *resp, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* RESPCHAIN_H */
