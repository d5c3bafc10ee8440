#include "net.h"

#include <stdlib.h>
#include <string.h>

ts_server *srv;

void server_up(void)
{
  srv = ts_start();
  ck_assert_ptr_nonnull(srv);
}

void server_down(void)
{
  ts_stop(srv);
  srv = NULL;
}

void assert_pattern(rc_view v, size_t n)
{
  ck_assert_uint_eq(v.len, n);
  unsigned char *want = malloc(n ? n : 1);
  ts_pattern_fill(want, 0, n);
  ck_assert_msg(memcmp(v.ptr, want, n) == 0, "body differs from the pattern");
  free(want);
  ck_assert_int_eq(v.ptr[n], '\0');
}
