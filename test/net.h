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

#endif
