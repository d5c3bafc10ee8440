/* scan's text built in memory (an output line, a URL, a header: see
 * base.h), written whole, and the clock. */
#include "base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Room for n more bytes and a NUL. */
static int reserve(line *l, size_t n)
{
  if (l->nomem)
    return -1;
  if (l->cap - l->len > n)
    return 0;
  size_t cap = l->cap ? l->cap : 1024;
  while (cap - l->len <= n)
    cap *= 2;
  char *p = realloc(l->p, cap);
  if (!p) {
    l->nomem = 1;
    return -1;
  }
  l->p = p;
  l->cap = cap;
  return 0;
}

void put(line *l, const char *s, size_t n)
{
  if (reserve(l, n) == 0) {
    memcpy(l->p + l->len, s, n);
    l->len += n;
    l->p[l->len] = '\0';
  }
}

void puts_line(line *l, const char *s) { put(l, s, strlen(s)); }

void printf_line(line *l, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = reserve(l, 0) == 0 ? vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap) : -1;
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= l->cap - l->len) { /* it did not fit: again, with room */
    if (reserve(l, (size_t)n) != 0) {
      l->p[l->len] = '\0';
      return;
    }
    va_start(ap, fmt);
    vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
    va_end(ap);
  }
  l->len += (size_t)n;
}

double seconds_since(const struct timespec *t0)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int write_all(int fd, const void *p, size_t n)
{
  for (const char *c = p; n;) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return errno;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}
