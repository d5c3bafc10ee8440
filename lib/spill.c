/* The spill file: an unlinked temporary file, written with pwritev at its
 * end, each write followed by the NUL of the view; mapped for reading. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "spill.h"
#include "debug.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* A named file, unlinked at once: where O_TMPFILE is not supported. */
static int open_unlinked(const char *dir)
{
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/respchain-XXXXXX", dir);
  if (n < 0 || (size_t)n >= sizeof path)
    return -1;
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  unlink(path);
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

rc_code rc__spill_open(rc__spill *s, const char *dir)
{
  int fd = -1;
#ifdef O_TMPFILE
  fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd < 0)
    fd = open_unlinked(dir);
  if (fd < 0)
    return RC_E_SPILL;
  if (pwrite(fd, "", 1, 0) != 1) {
    close(fd);
    return RC_E_SPILL;
  }
  s->fd = fd;
  s->len = 0;
  s->ended = 1;
  s->map = NULL;
  s->map_len = 0;
  return RC_OK;
}

rc_code rc__spill_write(rc__spill *s, const void *data, size_t n)
{
  RC__ASSERT(s->fd >= 0);
  /* The data, then the NUL past it, which the next write overwrites: a
   * file too small for that byte fails the write, not a later view. */
  static const char nul = '\0';
  const char *p = data;
  size_t done = 0;
  while (done <= n) {
    struct iovec io[2] = {{(void *)(p + done), n - done}, {(void *)&nul, 1}};
    int first = done < n ? 0 : 1;
    ssize_t w = pwritev(s->fd, io + first, 2 - first, (off_t)(s->len + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      /* ENOSPC, EFBIG, EIO...; a short write is kept on disk but not
       * counted, and may have overwritten the NUL. */
      s->ended = s->ended && done == 0;
      return RC_E_SPILL;
    }
    done += (size_t)w;
  }
  s->len += n;
  return RC_OK;
}

static void unmap(rc__spill *s)
{
  if (s->map)
    munmap(s->map, s->map_len + 1);
  s->map = NULL;
  s->map_len = 0;
}

const char *rc__spill_map(rc__spill *s)
{
  if (s->map && s->map_len == s->len)
    return s->map;
  unmap(s);
  /* After a failed write, the NUL goes back in its place (inside the file:
   * it takes no more room), and what the write left after it is cut off. */
  if (!s->ended) {
    if (pwrite(s->fd, "", 1, (off_t)s->len) != 1 || ftruncate(s->fd, (off_t)(s->len + 1)) != 0)
      return NULL;
    s->ended = 1;
  }
  void *m = mmap(NULL, s->len + 1, PROT_READ, MAP_SHARED, s->fd, 0);
  if (m == MAP_FAILED)
    return NULL;
  s->map = m;
  s->map_len = s->len;
  return s->map;
}

void rc__spill_close(rc__spill *s)
{
  unmap(s);
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  s->len = 0;
}
