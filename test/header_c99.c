/* The public header alone compiles as strict C99 (built with -std=c99
 * -pedantic -Werror) and is usable from a program that includes nothing else. */
#include "respchain.h"

int main(void)
{
  rc_limits lim;
  rc_limits_init(&lim);
  return rc_strerror(RC_OK)[0] == 'c' && lim.max_hops > 0 ? 0 : 1;
}
