/* Monotonic time for the budget's waits and the pool's demand decay.
 * Internal. */
#ifndef RC_CLOCK_H
#define RC_CLOCK_H

#include <time.h>

static inline struct timespec rc__now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t;
}

/* t plus ms milliseconds (ms >= 0). */
static inline struct timespec rc__after_ms(struct timespec t, long ms)
{
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

/* Milliseconds from a to b; negative when b is earlier. */
static inline long long rc__ms_between(struct timespec a, struct timespec b)
{
  return (long long)(b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

#endif
