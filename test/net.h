/* Shared by the tests that make real transfers: the loopback server as a
 * Check fixture, and checks against its body pattern. */
#ifndef RC_TEST_NET_H
#define RC_TEST_NET_H

#include "server.h"
#include "util.h"

extern ts_server *srv;  /* running between server_up and server_down */

void server_up(void);
void server_down(void);

/* v holds exactly bytes 0..n-1 of the server's pattern, then a NUL. */
void assert_pattern(rc_view v, size_t n);

/* v has length n, the pattern at four offsets, then a NUL: a quick check. */
int pattern_probes_ok(rc_view v, size_t n);

/* total transfers of path (whose body is the first size bytes of the
 * pattern), conc at a time, on one curl multi handle driven with
 * rc_multi_poll, responses on pool reset and reused; each body is checked
 * whole (exact) or at a few offsets. Returns the most responses seen
 * waiting for the budget at once. */
size_t multi_burst(rc_pool *pool, const char *path, int total, int conc, size_t size,
                   int exact);

#endif
