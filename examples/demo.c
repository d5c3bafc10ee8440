/* demo: the scan and threads examples against a loopback HTTP server that
 * this program starts itself (test/server.h), offline.
 *
 *   demo [scan] [scan options]       400 targets through scan
 *   demo threads [threads options]   240 URLs through threads
 *
 * It writes the workload's URLs to a temporary file, runs the program (found
 * beside this one) with "-l FILE" and the options given, and exits with its
 * status. Without matchers, scan gets "--status 200 --word officia". Unlike
 * scan (examples/scan/) and threads.c, this program needs the test server,
 * so it is built only in this project's tree.
 *
 * Exit status: that of the program run; 1 when the demo cannot be set up;
 * 2 usage. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "respchain.h"
#include "server.h"

extern char **environ;

#define SCAN_TARGETS 400
#define THREADS_URLS 240

/* A word of the server's body pattern (its dictionary holds "officia "):
 * the scan's default --word, found in most bodies but not in every small
 * one. */
#define DEMO_WORD "officia"

/* The server's odd cases, spread through the scan. */
static const char *const SPECIAL[] = {
    "/status?code=404&n=512",        /* an error status with a body */
    "/status?code=204",              /* no body at all */
    "/bomb",                         /* gzip of 1 GiB of zeros: cut at --max-body */
    "/lie?claim=1G&send=100",        /* a Content-Length that lies: partial file */
    "/trailers?n=100k",              /* chunked, with trailers after the body */
    "/hints?n=4k",                   /* 103 Early Hints, then 200: two hops */
    "/gzip?n=256k&coding=gzip2",     /* "gzip, gzip": decoded twice */
    "/encoding?value=compress&n=4k", /* a coding that is not decoded */
    "/corrupt?kind=crc",             /* a broken gzip stream */
    "/nowhere",                      /* an unknown path: 404 */
    "/redirect?n=12",                /* more redirects than the default limit */
    "/loop",                         /* a redirect to itself */
};

/* Path i of the scan workload: mostly small bodies (1-100 KiB), 25 large
 * ones (1-8 MiB), gzip and deflate bodies, redirect chains and the odd
 * cases above, interleaved so that every stretch of the scan has a mix. */
static void scan_path(size_t i, char *path, size_t cap)
{
  size_t nspecial = sizeof SPECIAL / sizeof SPECIAL[0];
  if (i % 32 == 16 && i / 32 < nspecial)
    snprintf(path, cap, "%s", SPECIAL[i / 32]);
  else if (i % 16 == 5)
    snprintf(path, cap, "/bytes?n=%zuM", i / 16 % 8 + 1);
  else if (i % 8 == 3)
    snprintf(path, cap, "/gzip?n=%zuk&coding=gzip", (size_t)16 << (i / 8 % 5));
  else if (i % 8 == 7)
    snprintf(path, cap, "/gzip?n=%zuk&coding=deflate&te=chunked", (size_t)16 << (i / 8 % 5));
  else if (i % 16 == 10) /* n + 1 redirects, then a small body */
    snprintf(path, cap, "/redirect?n=%zu&to=%%2Fbytes%%3Fn%%3D%zu", i / 16 % 3 + 1, 512 + i);
  else
    snprintf(path, cap, "/bytes?n=%zu%s", 1024 + i * 7919 % 100 * 1024, i % 3 ? "" : "&te=chunked");
}

/* Path i of the threads workload: small and large bodies, gzip, a redirect
 * chain. */
static void threads_path(size_t i, char *path, size_t cap)
{
  if (i % 12 == 0)
    snprintf(path, cap, "/bytes?n=%zuM", i / 12 % 6 + 1);
  else if (i % 6 == 3)
    snprintf(path, cap, "/gzip?n=%zuk&coding=gzip", (size_t)32 << (i / 6 % 4));
  else if (i % 10 == 7)
    snprintf(path, cap, "/redirect?n=2");
  else
    snprintf(path, cap, "/bytes?n=%zu", 1024 + i * 7919 % 64 * 1024);
}

/* Writes count URLs of the workload to a new temporary file, whose name
 * goes to list. */
static int write_list(const ts_server *srv, int scan, size_t count, char *list, size_t cap)
{
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(list, cap, "%s/respchain-demo-XXXXXX", tmp);
  int fd = mkstemp(list);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f)
    return -1;
  for (size_t i = 0; i < count; i++) {
    char path[128], url[192];
    if (scan)
      scan_path(i, path, sizeof path);
    else
      threads_path(i, path, sizeof path);
    fprintf(f, "%s\n", ts_url(srv, path, url, sizeof url));
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* The program name beside this one (via /proc/self/exe). */
static int sibling(const char *name, char *out, size_t cap)
{
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  return snprintf(out, cap, "%s/%s", dirname(self), name) < (int)cap ? 0 : -1;
}

/* Whether args hold a matcher option of scan. */
static int has_matcher(char **args, int n)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(args[i], "--status") || !strcmp(args[i], "--word") || !strcmp(args[i], "--regex"))
      return 1;
  return 0;
}

/* Runs prog -l list [defaults] args...; returns its exit status. */
static int run(const char *prog, const char *list, char **args, int nargs, int scan)
{
  char **argv = calloc((size_t)nargs + 8, sizeof *argv);
  if (!argv)
    return 1;
  int n = 0;
  argv[n++] = (char *)prog;
  argv[n++] = "-l";
  argv[n++] = (char *)list;
  if (scan && !has_matcher(args, nargs)) {
    argv[n++] = "--status";
    argv[n++] = "200";
    argv[n++] = "--word";
    argv[n++] = DEMO_WORD;
  }
  for (int i = 0; i < nargs; i++)
    argv[n++] = args[i];
  pid_t pid;
  int err = posix_spawn(&pid, prog, NULL, NULL, argv, environ), status = 1;
  free(argv);
  if (err) {
    fprintf(stderr, "demo: cannot run %s: %s\n", prog, strerror(err));
    return 1;
  }
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return 1;
  return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
  int scan = 1, first = 1;
  if (argc > 1 && (!strcmp(argv[1], "scan") || !strcmp(argv[1], "threads"))) {
    scan = !strcmp(argv[1], "scan");
    first = 2;
  } else if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    puts("usage: demo [scan] [scan options]\n"
         "       demo threads [threads options]\n"
         "\n"
         "Runs scan (400 targets) or threads (240 URLs) against a loopback\n"
         "server started in this process, offline.\n"
         "\n"
         "Exit status: that of the program run; 1 when the demo cannot be set\n"
         "up; 2 usage.");
    return 0;
  } else if (argc > 1 && !strcmp(argv[1], "--version")) {
    printf("demo (respchain) %s\n", rc_version());
    return 0;
  }
  char prog[PATH_MAX + 16], list[PATH_MAX];
  if (sibling(scan ? "scan" : "threads", prog, sizeof prog) != 0) {
    fputs("demo: cannot find the example programs\n", stderr);
    return 1;
  }
  ts_server *srv = ts_start();
  if (!srv) {
    fputs("demo: cannot start the loopback server\n", stderr);
    return 1;
  }
  size_t count = scan ? SCAN_TARGETS : THREADS_URLS;
  int status = 1;
  if (write_list(srv, scan, count, list, sizeof list) == 0) {
    char base[64];
    fprintf(stderr, "demo: %zu targets on %s\n", count, ts_url(srv, "", base, sizeof base));
    status = run(prog, list, argv + first, argc - first, scan);
    unlink(list);
  } else {
    fprintf(stderr, "demo: cannot write the targets: %s\n", strerror(errno));
  }
  ts_stop(srv);
  return status;
}
