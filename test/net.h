/* Shared by the tests that make real transfers: the loopback server as a
 * Check fixture, and checks against its body pattern. */
#ifndef RC_TEST_NET_H
#define RC_TEST_NET_H

#include "server.h"
#include "util.h"

extern ts_server *srv; /* running between server_up and server_down */

void server_up(void);
void server_down(void);
/* The server's URL without a path, "http://127.0.0.1:PORT", into out (a
 * scan target: {{BaseURL}}/x then names /x). */
void server_base(char *out, size_t cap);

/* v holds exactly bytes 0..n-1 of the server's pattern, then a NUL. */
void assert_pattern(rc_view v, size_t n);

/* v has length n, the pattern at four offsets, then a NUL: a quick check. */
int pattern_probes_ok(rc_view v, size_t n);

/* A burst of transfers of one URL whose body is the first size bytes of the
 * pattern. */
typedef struct burst {
  rc_pool *pool;
  const char *url;
  void (*setup)(CURL *easy, void *ud); /* extra options; may be NULL */
  void *ud;
  int total, conc; /* transfers, and how many at once */
  size_t size;
  int exact;  /* check whole bodies, not probes */
  int keep;   /* keep every response; read after */
  int shared; /* other threads run bursts on the pool at the same time: its
                 queue is not this burst's alone when it ends */
} burst;

/* Runs b on one curl multi handle driven with rc_multi_poll. Each body is
 * checked whole (exact) or at a few offsets, as its transfer ends; then the
 * response is reset and reused. With keep, conc must equal total: every
 * transfer starts at once, nothing is read or reset until the loop has
 * ended, and then all are checked. Returns the most responses seen waiting
 * for the budget at once. */
size_t multi_run(const burst *b);

/* multi_run of path on the loopback HTTP/1.1 server. */
size_t multi_burst(rc_pool *pool, const char *path, int total, int conc, size_t size, int exact);

/* What a program printed, and how it ended. */
typedef struct prog_out {
  int status;      /* exit status; -1 when a signal ended it */
  char *out, *err; /* NUL-terminated; free with prog_out_free */
  size_t out_len;
} prog_out;

/* Runs argv[0] with argv (NULL-terminated), standard input from /dev/null,
 * and waits for it. */
prog_out run_program(char *const argv[]);
void prog_out_free(prog_out *o);

#endif
