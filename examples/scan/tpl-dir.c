/* scan's templates on disk: the -t paths, files or directories of them
 * (*.yaml, *.yml, subdirectories too), in name order; each file is read
 * by tpl_load_file (tpl-load.c). */
#include "tpl.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int yaml_name(const char *n)
{
  size_t len = strlen(n);
  return n[0] != '.' &&
         ((len > 5 && !strcmp(n + len - 5, ".yaml")) || (len > 4 && !strcmp(n + len - 4, ".yml")));
}

static int load_path(templates *ts, const char *path);

/* A directory's entries, in name order: its templates and subdirectories. */
static int load_dir(templates *ts, const char *path, DIR *d)
{
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      char **g = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
      if (!g) {
        rc = -1;
        break;
      }
      names = g;
    }
    if (!(names[n] = malloc(strlen(path) + strlen(e->d_name) + 2)))
      rc = -1;
    else
      sprintf(names[n++], "%s/%s", path, e->d_name);
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    const char *base = strrchr(names[i], '/') + 1;
    if (rc == 0 && stat(names[i], &st) == 0 && (S_ISDIR(st.st_mode) || yaml_name(base)))
      rc = load_path(ts, names[i]);
    free(names[i]);
  }
  free(names);
  return rc;
}

static int load_path(templates *ts, const char *path)
{
  DIR *d = opendir(path);
  if (d)
    return load_dir(ts, path, d);
  return tpl_load_file(ts, path); /* a file, or the reason it cannot be read */
}

int tpl_load(templates *ts, const char *const *paths, size_t npaths)
{
  for (size_t i = 0; i < npaths; i++)
    if (load_path(ts, paths[i]) != 0)
      return -1;
  if (tpl_json_compile(ts) != 0) {
    fputs("scan: cannot compile the json queries (out of memory?)\n", stderr);
    return -1;
  }
  return 0;
}
