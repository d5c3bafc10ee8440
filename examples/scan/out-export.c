/* scan --json-export FILE (nuclei's -je): the lines written, also as one
 * JSON array in FILE, an element per line, written as each line is; the
 * array is closed when the scan ends (stopped by a signal too). */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Writes n bytes of p to fd: 0, or errno. */
static int put_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return errno;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int out_export_open(output *o, const char *path)
{
  o->export_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  return o->export_fd < 0 ? (o->export_fd = 0, -1) : 0;
}

void out_export(output *o)
{
  if (o->export_fd <= 0 || o->write_error)
    return;
  size_t len = o->line.len;
  if (len && o->line.p[len - 1] == '\n')
    len--;
  int err = put_all(o->export_fd, o->exported++ ? ",\n" : "[\n", 2);
  if (!err)
    err = put_all(o->export_fd, o->line.p, len);
  if (err)
    o->write_error = err;
}

/* The array is closed even after the output failed (a reader of stdout
 * gone), so that what it holds stays valid JSON. */
int out_export_close(output *o)
{
  if (o->export_fd <= 0)
    return 0;
  int err = put_all(o->export_fd, o->exported ? "\n]\n" : "[]\n", 3);
  if (close(o->export_fd) != 0 && !err)
    err = errno;
  o->export_fd = 0;
  if (err && !o->write_error)
    o->write_error = err;
  return err ? -1 : 0;
}
