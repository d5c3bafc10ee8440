/* Fuzz target: scan's template loader (examples/scan/tpl.h), as a template
 * from a stranger's repository reaches it: a file of YAML.
 *
 * Input: the file's bytes, whole.
 *
 * The file is written to a directory of the run's own, beside fixed
 * payload files (words.txt, and helpers/words.txt, the names in
 * tpl.dict), which is the templates' files_root: the payload files a
 * template may name are those, never a path of the input's choosing
 * elsewhere. The directory is removed after each input.
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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "tpl.h"

/* The fixed files beside the template, and their text. */
static const char *const FILES[][2] = {
    {"words.txt", "alpha\r\nbeta\n\n gamma \n"},
    {"helpers/words.txt", "one\ntwo\nthree"},
};
#define NFILES (sizeof FILES / sizeof *FILES)

static int write_file(const char *dir, const char *name, const void *data, size_t n)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Removes what make_dir made. */
static void remove_dir(const char *dir)
{
  char path[512];
  for (size_t i = 0; i < NFILES; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, FILES[i][0]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/t.yaml", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/helpers", dir);
  rmdir(path);
  rmdir(dir);
}

/* A new directory with the fixed files and the input as t.yaml. */
static int make_dir(char *dir, size_t n, const uint8_t *data, size_t size)
{
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, n, "%s/fuzz_tpl.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return -1;
  char helpers[512];
  snprintf(helpers, sizeof helpers, "%s/helpers", dir);
  int rc = mkdir(helpers, 0700);
  for (size_t i = 0; rc == 0 && i < NFILES; i++)
    rc = write_file(dir, FILES[i][0], FILES[i][1], strlen(FILES[i][1]));
  if (rc == 0)
    rc = write_file(dir, "t.yaml", data, size);
  if (rc != 0)
    remove_dir(dir);
  return rc;
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

/* The file read again under the exclusions, its payload files in dir;
 * loaded is the id the first read loaded (NULL: it skipped the template). */
static void filtered(const char *path, const char *dir, const char *loaded)
{
  templates ts;
  memset(&ts, 0, sizeof ts);
  ts.files_root = dir;
  ts.run_payloads = 1;
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
  char dir[256], path[300];
  FZ_CHECK(make_dir(dir, sizeof dir, data, size) == 0);
  snprintf(path, sizeof path, "%s/t.yaml", dir);
  templates ts;
  memset(&ts, 0, sizeof ts);
  ts.files_root = dir;
  ts.run_payloads = 1; /* the whole model, not the skip that waits for it */
  FZ_CHECK(tpl_load_file(&ts, path) == 0);
  FZ_CHECK(tpl_json_compile(&ts) == 0); /* as tpl_load ends */
  FZ_CHECK(ts.n + ts.nskips == 1);
  if (ts.n) {
    FZ_CHECK(ts.t[0].id && ts.t[0].id[0]);
    FZ_CHECK(ts.t[0].nreqs > 0);
    for (size_t i = 0; i < ts.t[0].nreqs; i++) { /* every combination has its values */
      const tpl_payloads *ps = &ts.t[0].reqs[i].payloads;
      FZ_CHECK(!ps->n || (ps->combos >= 1 && ps->combos <= TPL_PAYLOAD_MAX));
      for (size_t k = 0; ps->n && k < ps->combos; k += ps->combos / 7 + 1)
        for (size_t j = 0; j < ps->n; j++)
          FZ_CHECK(tpl_payload_value(ps, j, k) != NULL);
    }
  } else {
    const char *why = ts.skips[0].reason;
    FZ_CHECK(why && why[0] && !strchr(why, '\n'));
  }
  filtered(path, dir, ts.n ? ts.t[0].id : NULL);
  remove_dir(dir);
  tpl_free(&ts);
  return 0;
}
