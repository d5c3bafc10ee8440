/* scan --json-export FILE (nuclei's -je): the lines written, also as one
 * JSON array in FILE, an element per line, written as each line is; the
 * array is closed when the scan ends (stopped by a signal too). */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

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
  int err = write_all(o->export_fd, o->exported++ ? ",\n" : "[\n", 2);
  if (!err)
    err = write_all(o->export_fd, o->line.p, len);
  if (err)
    o->write_error = err;
}

/* The array is closed even after the output failed (a reader of stdout
 * gone), so that what it holds stays valid JSON. */
int out_export_close(output *o)
{
  if (o->export_fd <= 0)
    return 0;
  int err = write_all(o->export_fd, o->exported ? "\n]\n" : "[]\n", 3);
  if (close(o->export_fd) != 0 && !err)
    err = errno;
  o->export_fd = 0;
  if (err && !o->write_error)
    o->write_error = err;
  return err ? -1 : 0;
}
