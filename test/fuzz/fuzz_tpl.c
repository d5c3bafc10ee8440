/* Fuzz target: scan's template loader (examples/scan/tpl.h), as a template
 * from a stranger's repository reaches it: a file of YAML.
 *
 * Input: the file's bytes, whole.
 *
 * Checked: tpl_load_file reads the file (0), tpl_json_compile compiles
 * its json queries or skips it (0); the template is either
 * loaded, with an id and at least one request, or skipped with a reason
 * (a non-empty line of text); never both, never neither; tpl_free frees
 * it all (leaks are LeakSanitizer's). Read again under a filter of every
 * kind of exclusion (tpl-filter.c), it is loaded, skipped or left out,
 * one of them; loaded, it is the template loaded without the filter, and
 * one the filter chooses. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "tpl.h"

/* The input as a file: a memory file named by its /proc path. */
static int as_file(const uint8_t *data, size_t size, char *path, size_t n)
{
  int fd = memfd_create("template.yaml", 0);
  if (fd < 0)
    return -1;
  for (size_t off = 0; off < size;) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t)w;
  }
  snprintf(path, n, "/proc/self/fd/%d", fd);
  return fd;
}

/* -etags fuzz -eid 'fuzz-*' -es unknown -ept code, once. */
static const tpl_filter *exclusions(void)
{
  static tpl_filter f;
  static int made;
  if (!made) {
    FZ_CHECK(tpl_filter_add(&f, TF_ETAGS, "fuzz") == 0);
    FZ_CHECK(tpl_filter_add(&f, TF_EID, "fuzz-*") == 0);
    FZ_CHECK(tpl_filter_add(&f, TF_ESEVERITY, "unknown") == 0);
    FZ_CHECK(tpl_filter_add(&f, TF_ETYPE, "code") == 0);
    made = 1;
  }
  return &f;
}

/* The file read again under the exclusions; loaded is the id the first
 * read loaded (NULL: it skipped the template). */
static void filtered(const char *path, const char *loaded)
{
  templates ts;
  memset(&ts, 0, sizeof ts);
  ts.filter = exclusions();
  FZ_CHECK(tpl_load_file(&ts, path) == 0);
  FZ_CHECK(tpl_json_compile(&ts) == 0);
  FZ_CHECK(ts.n + ts.nskips + ts.nfiltered == 1);
  if (ts.n) {
    FZ_CHECK(loaded && !strcmp(ts.t[0].id, loaded));
    FZ_CHECK(tpl_filter_match(ts.filter, &ts.t[0]));
  }
  tpl_free(&ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char path[64];
  int fd = as_file(data, size, path, sizeof path);
  FZ_CHECK(fd >= 0);
  templates ts;
  memset(&ts, 0, sizeof ts);
  FZ_CHECK(tpl_load_file(&ts, path) == 0);
  FZ_CHECK(tpl_json_compile(&ts) == 0); /* as tpl_load ends */
  FZ_CHECK(ts.n + ts.nskips == 1);
  if (ts.n) {
    FZ_CHECK(ts.t[0].id && ts.t[0].id[0]);
    FZ_CHECK(ts.t[0].nreqs > 0);
  } else {
    const char *why = ts.skips[0].reason;
    FZ_CHECK(why && why[0] && !strchr(why, '\n'));
  }
  filtered(path, ts.n ? ts.t[0].id : NULL);
  close(fd);
  tpl_free(&ts);
  return 0;
}
