/* Runs a fuzz target over saved inputs without libFuzzer, so that the seed
 * corpus and the regression inputs are checked by every ordinary test run,
 * with any compiler. Usage: replay PATH...; a directory stands for every
 * regular file in it (not recursing).
 *
 * Each input runs in a child process, so that an invariant violation (an
 * abort inside the target) or a sanitizer report fails that input and the
 * others still run; the run fails if any input failed, if a path cannot be
 * read, or if there was no input at all. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

/* Reads the whole file at path into a fresh malloc block. */
static int read_file(const char *path, uint8_t **data, size_t *size)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      size_t ncap = cap ? cap * 2 : 4096;
      uint8_t *nbuf = realloc(buf, ncap);
      if (!nbuf) {
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nbuf;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0)
      break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return -1;
  }
  *data = buf;
  *size = len;
  return 0;
}

/* In the child: runs the target on the file's bytes. */
static int run_input(const char *path)
{
  uint8_t *data;
  size_t size;
  if (read_file(path, &data, &size) != 0) {
    fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  /* An exactly sized copy, so that reads past the end are caught by ASan. */
  uint8_t *exact = malloc(size ? size : 1);
  if (!exact) {
    free(data);
    return -1;
  }
  if (size)
    memcpy(exact, data, size);
  free(data);
  LLVMFuzzerTestOneInput(exact, size);
  free(exact);
  return 0;
}

static long failures;

/* Runs one input in a child; a failure is counted, not fatal. */
static int run_file(const char *path)
{
  fprintf(stderr, "replay: %s\n", path);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "replay: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0)
    exit(run_input(path) == 0 ? 0 : 1); /* exit: leak checkers run */
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "replay: waitpid: %s\n", strerror(errno));
      return -1;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFSIGNALED(status))
    fprintf(stderr, "replay: FAILED %s (signal %d)\n", path, WTERMSIG(status));
  else
    fprintf(stderr, "replay: FAILED %s (exit status %d)\n", path, WEXITSTATUS(status));
  failures++;
  return 0;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir, in name order. Returns how many ran, or -1. */
static long run_dir(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  long result = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    size_t len = strlen(dir) + 1 + strlen(e->d_name) + 1;
    char *path = malloc(len);
    if (!path) {
      result = -1;
      break;
    }
    snprintf(path, len, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      char **nn = realloc(names, ncap * sizeof *nn);
      if (!nn) {
        free(path);
        result = -1;
        break;
      }
      names = nn;
      cap = ncap;
    }
    names[n++] = path;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    if (result >= 0) {
      if (run_file(names[i]) != 0)
        result = -1;
      else
        result++;
    }
    free(names[i]);
  }
  free(names);
  return result;
}

int main(int argc, char **argv)
{
  long ran = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    if (S_ISDIR(st.st_mode)) {
      long n = run_dir(argv[i]);
      if (n < 0)
        return 1;
      ran += n;
    } else {
      if (run_file(argv[i]) != 0)
        return 1;
      ran++;
    }
  }
  if (ran == 0) {
    fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  if (failures) {
    fprintf(stderr, "replay: %ld of %ld inputs FAILED\n", failures, ran);
    return 1;
  }
  fprintf(stderr, "replay: %ld inputs passed\n", ran);
  return 0;
}
