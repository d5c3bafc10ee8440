/* scan -t's disk cache of compiled databases (examples/scan/eval-cache.c):
 * a second scan of the same templates reads its databases instead of
 * compiling them, and gives the same lines; a cache file that is cut,
 * corrupt or another key's is not trusted (compiled again, rewritten); a
 * cache directory that cannot be made costs only the time. The summary
 * line "databases: N from the cache, M compiled" says which happened.
 * Without Vectorscan there are no databases: no line, no file.
 *
 * SCAN_BIN is the scan binary, TEMPLATES the directory test/templates. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

static char base[128];  /* the target */
static char home[256];  /* a fresh directory per test: XDG_CACHE_HOME */
static char files[320]; /* where the cache's files go under it */

/* Templates whose words and regexes stream (the databases' patterns). */
static const char *const TEMPLATES[] = {"word-and.yaml", "word-all.yaml",      "word-nocase.yaml",
                                        "negative.yaml", "regex-extract.yaml", "named-or.yaml",
                                        "dsl-stream.yaml"};
#define NTEMPLATES (sizeof TEMPLATES / sizeof *TEMPLATES)

static void setup(void)
{
  server_up();
  server_base(base, sizeof base);
  snprintf(home, sizeof home, "/tmp/rc-scan-cache-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(home));
  snprintf(files, sizeof files, "%s/respchain-scan", home);
  setenv("XDG_CACHE_HOME", home, 1);
}

/* Removes dir's files, then dir. */
static void remove_dir(const char *dir)
{
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') {
      char p[600];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  if (d)
    closedir(d);
  rmdir(dir);
}

static void teardown(void)
{
  char dot[300];
  remove_dir(files);
  snprintf(dot, sizeof dot, "%s/.cache", home);
  rmdir(dot);
  rmdir(home);
  server_down();
}

static int with_vectorscan(void)
{
  char *v[] = {getenv("SCAN_BIN"), "--version", NULL};
  prog_out ver = run_program(v);
  int vs = strstr(ver.out, "matchers: Vectorscan") != NULL;
  prog_out_free(&ver);
  return vs;
}

/* What a scan said: its lines without their timestamps, sorted (the
 * targets' order is the transfers'), and its databases. */
typedef struct result {
  char *lines;
  long cached, compiled; /* -1: no "databases:" line */
} result;

static int by_text(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *canonical(const char *out)
{
  char *copy = strdup(out), *rows[256];
  size_t n = 0, len = 0;
  ck_assert_ptr_nonnull(copy);
  for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char *t = strstr(l, "\"timestamp\":\"");
    if (t) { /* "timestamp":"...", out */
      char *end = strchr(t + 13, '"');
      ck_assert_ptr_nonnull(end);
      memmove(t, end + 2, strlen(end + 2) + 1);
    }
    ck_assert_uint_lt(n, 256);
    rows[n++] = l;
    len += strlen(l) + 1;
  }
  qsort(rows, n, sizeof *rows, by_text);
  char *joined = calloc(len + 1, 1);
  ck_assert_ptr_nonnull(joined);
  for (size_t i = 0; i < n; i++)
    strcat(strcat(joined, rows[i]), "\n");
  free(copy);
  return joined;
}

/* A scan of the templates names[0 .. n-1] of run/ (n <= NTEMPLATES). */
static result scan_of(const char *const *names, size_t n)
{
  char *argv[6 + 2 * NTEMPLATES], paths[NTEMPLATES][512];
  size_t k = 0;
  ck_assert_uint_le(n, NTEMPLATES);
  argv[k++] = getenv("SCAN_BIN");
  for (size_t i = 0; i < n; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/run/%s", getenv("TEMPLATES"), names[i]);
    argv[k++] = "-t";
    argv[k++] = paths[i];
  }
  argv[k++] = "-u";
  argv[k++] = base;
  argv[k] = NULL;
  ck_assert_ptr_nonnull(argv[0]);
  prog_out o = run_program(argv);
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  result r = {canonical(o.out), -1, -1};
  const char *d = strstr(o.err, "scan: databases: ");
  if (d)
    ck_assert_int_eq(sscanf(d, "scan: databases: %ld from the cache, %ld compiled", &r.cached,
                            &r.compiled),
                     2);
  prog_out_free(&o);
  return r;
}

static result scan(void) { return scan_of(TEMPLATES, NTEMPLATES); }

/* The cache's files, each with f applied. */
static size_t each_file(void (*f)(const char *path))
{
  DIR *d = opendir(files);
  size_t n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') {
      char p[600];
      snprintf(p, sizeof p, "%s/%s", files, e->d_name);
      if (f)
        f(p);
      n++;
    }
  if (d)
    closedir(d);
  return n;
}

/* The first run fills the cache; the lines it gave, checked against the
 * second's. */
static result cold(void)
{
  result r = scan();
  if (!with_vectorscan()) {
    ck_assert_int_eq(r.cached, -1);
    ck_assert_uint_eq(each_file(NULL), 0);
    return r;
  }
  ck_assert_int_gt(r.compiled, 0); /* some read back in the run: a narrowing's */
  ck_assert_uint_gt(each_file(NULL), 0);
  ck_assert_msg(strchr(r.lines, '\n'), "no line: the templates were meant to match");
  return r;
}

/* A scan whose databases all came from the cache, with want's lines. */
static void warm(const result *want)
{
  result r = scan();
  ck_assert_int_eq(r.cached, want->cached + want->compiled);
  ck_assert_int_eq(r.compiled, 0);
  ck_assert_str_eq(r.lines, want->lines);
  free(r.lines);
}

/* A scan that trusted nothing in the cache, with want's lines. */
static void rebuilt(const result *want)
{
  result r = scan();
  ck_assert_int_eq(r.cached, want->cached);
  ck_assert_int_eq(r.compiled, want->compiled);
  ck_assert_str_eq(r.lines, want->lines);
  free(r.lines);
}

START_TEST(warm_same_lines)
{
  result first = cold();
  if (first.cached >= 0) {
    warm(&first);
    warm(&first);
  }
  free(first.lines);
}
END_TEST

/* Words and regexes whose {{...}} are random (another value in each scan)
 * are kept out of the databases; those of constants stream: a second scan
 * of such templates reads its databases from the cache all the same. Its
 * lines differ (the random values are in them). */
START_TEST(random_words_warm)
{
  static const char *const names[] = {"word-const.yaml", "word-rand.yaml", "word-and.yaml",
                                      "regex-extract.yaml"};
  result first = scan_of(names, 4);
  ck_assert_msg(strstr(first.lines, "word-rand"), "%s", first.lines);
  if (with_vectorscan()) {
    ck_assert_int_gt(first.compiled, 0);
    result second = scan_of(names, 4);
    ck_assert_int_eq(second.cached, first.cached + first.compiled);
    ck_assert_int_eq(second.compiled, 0);
    ck_assert_msg(strstr(second.lines, "word-rand"), "%s", second.lines);
    free(second.lines);
  }
  free(first.lines);
}
END_TEST

/* Byte at (from the end when negative) changed. */
static void flip_at(const char *path, long at)
{
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  off_t where = lseek(fd, at, at < 0 ? SEEK_END : SEEK_SET);
  ck_assert_int_ge(where, 0);
  unsigned char c;
  ck_assert_int_eq(pread(fd, &c, 1, where), 1);
  c ^= 0x5a;
  ck_assert_int_eq(pwrite(fd, &c, 1, where), 1);
  close(fd);
}

static void flip_last(const char *path) { flip_at(path, -1); }
static void flip_key(const char *path) { flip_at(path, 12); } /* in the header's key */
static void cut(const char *path)
{
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
}

START_TEST(corrupt_rebuilt)
{
  result first = cold();
  if (first.cached >= 0) {
    void (*const harm[])(const char *) = {flip_last, flip_key, cut};
    for (size_t i = 0; i < sizeof harm / sizeof *harm; i++) {
      each_file(harm[i]);
      rebuilt(&first);
      warm(&first); /* written anew */
    }
  }
  free(first.lines);
}
END_TEST

/* XDG_CACHE_HOME under a regular file: no directory can be made. */
START_TEST(unwritable)
{
  char file[300], under[320];
  snprintf(file, sizeof file, "%s/file", home);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  snprintf(under, sizeof under, "%s/cache", file);
  setenv("XDG_CACHE_HOME", under, 1);
  result first = scan();
  if (with_vectorscan()) {
    ck_assert_int_eq(first.cached, 0);
    ck_assert_int_gt(first.compiled, 0);
    rebuilt(&first);
  }
  unlink(file);
  free(first.lines);
}
END_TEST

/* A cache directory that others may write is not the user's own: nothing
 * is read from it or written to it. */
START_TEST(shared_directory)
{
  if (!with_vectorscan())
    return; /* no databases: test_scan_cache's other tests say there are no files */
  ck_assert_int_eq(mkdir(files, 0700), 0);
  ck_assert_int_eq(chmod(files, 0777), 0);
  result first = scan();
  ck_assert_int_eq(first.cached, 0);
  ck_assert_int_gt(first.compiled, 0);
  ck_assert_uint_eq(each_file(NULL), 0);
  rebuilt(&first);
  /* Once it is the user's alone again, it serves. */
  ck_assert_int_eq(chmod(files, 0700), 0);
  result second = cold();
  ck_assert_str_eq(second.lines, first.lines);
  warm(&second);
  free(second.lines);
  free(first.lines);
}
END_TEST

/* A temporary file that a killed scan left goes once it is an hour old;
 * a younger one (a scan writing now) stays. */
START_TEST(dead_temporaries)
{
  if (!with_vectorscan())
    return;
  ck_assert_int_eq(mkdir(files, 0700), 0);
  char old[600], young[600];
  snprintf(old, sizeof old, "%s/%064d.db.1.tmp", files, 0);
  snprintf(young, sizeof young, "%s/%064d.db.2.tmp", files, 0);
  FILE *f = fopen(old, "w"), *g = fopen(young, "w");
  ck_assert(f && g);
  fclose(f);
  fclose(g);
  struct timespec times[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  ck_assert_int_eq(utimensat(AT_FDCWD, old, times, 0), 0);
  result first = cold();
  ck_assert_int_ne(access(old, F_OK), 0);
  ck_assert_int_eq(access(young, F_OK), 0);
  free(first.lines);
}
END_TEST

/* Without XDG_CACHE_HOME: ~/.cache/respchain-scan. */
START_TEST(home_fallback)
{
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", home, 1);
  snprintf(files, sizeof files, "%s/.cache/respchain-scan", home);
  result first = cold();
  if (first.cached >= 0)
    warm(&first);
  free(first.lines);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("scan_cache");
  TCase *tc = tcase_create("scan_cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, warm_same_lines);
  tcase_add_test(tc, random_words_warm);
  tcase_add_test(tc, corrupt_rebuilt);
  tcase_add_test(tc, unwritable);
  tcase_add_test(tc, home_fallback);
  tcase_add_test(tc, shared_directory);
  tcase_add_test(tc, dead_temporaries);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
