/* The spill file: an unlinked temporary file, written a batch at a time at
 * its end, each write followed by the NUL of the view; mapped for reading.
 * Files come from the pool's shelf and go back to it. */
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

static int new_file(const char *dir)
{
  int fd = -1;
#ifdef O_TMPFILE
  fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  return fd >= 0 ? fd : open_unlinked(dir);
}

rc_code rc__spill_open(rc__spill *s, rc__shelf *shelf, const char *dir)
{
  rc__shelved *entry = rc__shelf_take(shelf);
  if (!entry)
    return RC_E_NOMEM;
  int fd = entry->fd >= 0 ? entry->fd : new_file(dir);
  if (fd < 0 || pwrite(fd, "", 1, 0) != 1) {
    if (fd >= 0)
      close(fd);
    entry->fd = -1;
    rc__shelf_give(shelf, entry);
    return RC_E_SPILL;
  }
  s->fd = fd;
  s->len = s->filed = 0;
  s->size = entry->size ? entry->size : 1;
  s->entry = entry;
  s->batch = NULL;
  s->batch_cap = 0;
  s->shelf = shelf;
  s->map = NULL;
  s->map_len = 0;
  s->ended = 1;
  s->failed = 0;
  return RC_OK;
}

/* Writes the batch's bytes at the file's end, then the NUL past them,
 * which the next write overwrites: a file too small for that byte fails
 * the write, not a later view. RC_OK or RC_E_SPILL. */
static rc_code write_batch(rc__spill *s)
{
  static const char nul = '\0';
  size_t k = s->len - s->filed, done = 0;
  while (done <= k) {
    struct iovec io[2] = {{s->batch + done, k - done}, {(void *)&nul, 1}};
    int first = done < k ? 0 : 1;
    ssize_t w = pwritev(s->fd, io + first, 2 - first, (off_t)(s->filed + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      /* ENOSPC, EFBIG, EIO...: the body is what the file took but for
       * its last byte, the place of the NUL that rc__spill_map puts back. */
      if (done) {
        s->filed += done - 1;
        s->ended = 0;
      }
      s->len = s->filed;
      s->failed = 1;
      return RC_E_SPILL;
    }
    done += (size_t)w;
  }
  s->filed += k;
  if (s->size < s->filed + 1)
    s->size = s->filed + 1;
  return RC_OK;
}

rc_code rc__spill_tail(rc__spill *s, unsigned char **out, size_t *avail)
{
  RC__ASSERT(s->fd >= 0);
  if (s->failed)
    return RC_E_SPILL;
  if (s->batch && s->len - s->filed == s->batch_cap && write_batch(s) != RC_OK)
    return RC_E_SPILL;
  if (!s->batch && !(s->batch = rc__shelf_batch(s->shelf, &s->batch_cap)))
    return RC_E_NOMEM;
  size_t used = s->len - s->filed;
  *out = s->batch + used;
  *avail = s->batch_cap - used;
  return RC_OK;
}

void rc__spill_commit(rc__spill *s, size_t n)
{
  RC__ASSERT(s->batch && s->len - s->filed + n <= s->batch_cap);
  s->len += n;
}

rc_code rc__spill_write(rc__spill *s, const void *data, size_t n)
{
  const unsigned char *p = data;
  while (n > 0) {
    unsigned char *t;
    size_t avail;
    rc_code rc = rc__spill_tail(s, &t, &avail);
    if (rc != RC_OK)
      return rc;
    size_t take = n < avail ? n : avail;
    memcpy(t, p, take);
    rc__spill_commit(s, take);
    p += take;
    n -= take;
  }
  return s->failed ? RC_E_SPILL : RC_OK;
}

static void unmap(rc__spill *s)
{
  if (s->map)
    munmap(s->map, s->map_len + 1);
  s->map = NULL;
  s->map_len = 0;
}

static void free_batch(rc__spill *s)
{
  if (!s->batch)
    return;
  rc__shelf_batch_back(s->shelf, s->batch, s->batch_cap);
  s->batch = NULL;
}

rc_code rc__spill_flush(rc__spill *s)
{
  if (s->len > s->filed && !s->failed)
    write_batch(s);
  free_batch(s);
  return s->failed ? RC_E_SPILL : RC_OK;
}

const char *rc__spill_map(rc__spill *s)
{
  rc__spill_flush(s); /* a failure is in s->failed; the file's bytes map */
  if (s->map && s->map_len == s->filed)
    return s->map;
  unmap(s);
  /* After a failed write, the NUL goes back in its place (inside the file:
   * it takes no more room), and what the write left after it is cut off. */
  if (!s->ended) {
    if (pwrite(s->fd, "", 1, (off_t)s->filed) != 1 || ftruncate(s->fd, (off_t)(s->filed + 1)) != 0)
      return NULL;
    s->ended = 1;
    s->size = s->filed + 1;
  }
  void *m = mmap(NULL, s->filed + 1, PROT_READ, MAP_SHARED, s->fd, 0);
  if (m == MAP_FAILED)
    return NULL;
  s->map = m;
  s->map_len = s->filed;
  return s->map;
}

void rc__spill_close(rc__spill *s)
{
  unmap(s);
  free_batch(s);
  if (s->fd >= 0) {
    /* A file a write failed in is not written again. */
    if (s->failed) {
      close(s->fd);
      s->fd = -1;
    }
    s->entry->fd = s->fd;
    s->entry->size = s->size;
    rc__shelf_give(s->shelf, s->entry);
    s->entry = NULL;
  }
  s->fd = -1;
  s->len = s->filed = 0;
  s->failed = 0;
}
