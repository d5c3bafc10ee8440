/* scan's work in a child process: what a library may not end by itself (a
 * jq program can loop, or grow without end), run in a forked child with
 * a bound on its CPU time and on the memory it may add, so that neither a
 * loop nor a crash of that library reaches the scan. The child writes its
 * answer to a pipe; what it wrote before it ended is the answer. */
#include "base.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The bytes of address space the process holds, from /proc; 0 when
 * unknown. */
static size_t address_space(void)
{
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f && fscanf(f, "%lu", &pages) != 1)
    pages = 0;
  if (f)
    fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 && pages < SIZE_MAX / (size_t)page ? (size_t)pages * (size_t)page : 0;
}

/* In the child: the bounds, the default answer to signals, then fn. */
static void child(int (*fn)(void *ud, int fd), void *ud, int fd, size_t space)
{
  struct rlimit cpu = {CHILD_CPU_SECONDS, CHILD_CPU_SECONDS + 1}, none = {0, 0};
  setrlimit(RLIMIT_CPU, &cpu);
  setrlimit(RLIMIT_CORE, &none); /* ended by a bound (SIGXCPU, abort): no core file */
  if (space && space < SIZE_MAX - CHILD_MEMORY) {
    struct rlimit as = {(rlim_t)(space + CHILD_MEMORY), (rlim_t)(space + CHILD_MEMORY)};
    setrlimit(RLIMIT_AS, &as);
  }
  signal(SIGXCPU, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  _exit(fn(ud, fd) == 0 ? 0 : 1);
}

ssize_t child_run(int (*fn)(void *ud, int fd), void *ud, char *out, size_t cap, int *ok)
{
  int p[2];
  size_t space = address_space();
  *ok = 0;
  if (pipe(p) != 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    child(fn, ud, p[1], space);
  }
  close(p[1]);
  size_t len = 0;
  for (;;) {
    ssize_t n = len < cap ? read(p[0], out + len, cap - len) : 0;
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(p[0]);
  if (len == cap)
    kill(pid, SIGKILL); /* the answer is all that is taken */
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return (ssize_t)len;
  *ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return (ssize_t)len;
}
