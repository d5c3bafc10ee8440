/* The scan program (examples/scan) run as a whole process on a scenario's
 * workload, beside the in-process driver: its wall clock, its peak resident
 * memory, its JSON lines checked, and its pool summary read from stderr.
 *
 * Children are started by a spawner process forked at startup, while the
 * bench is still small: a forked child's peak RSS (ru_maxrss) starts at the
 * resident size of the process it was forked from, and exec keeps it, so a
 * child forked from the bench itself (hundreds of MiB after a burst) would
 * report the bench's size instead of its own. The spawner forks, execs,
 * times and reaps each child, and sends back its wall time and rusage.
 *
 * With matchers (contender scan-match), every line's "matched" and
 * "matches" are compared with what the matchers find in the scenario's
 * body, worked out once before the runs: memmem for the words, regexec for
 * the regexes, the offset of each first hit being where its first match
 * ends (for a regex, the shortest prefix of the body it matches in, as
 * scan(1) defines it). */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

const char *opt_scan; /* --scan PATH; NULL: beside the bench; "": none */

static char scan_path[PATH_MAX];
static char absent[PATH_MAX + 128]; /* why the program cannot run; "" when it can */
static char tmpdir[PATH_MAX / 2];   /* room for a file name in every path */
static pid_t spawner = -1;
/* Per scenario with matchers: "matched":...,"matches":[...] as every line
 * must have it, and where each matcher first hits. */
static char *expect_text[NSCEN];
static size_t expect_at[NSCEN][8];
static int to_spawner = -1, from_spawner = -1;

#define SPAWN_ARGS 32
#define SPAWN_ARG  (PATH_MAX + 64)

/* What the bench asks of the spawner: one program to run. */
typedef struct spawn_req {
  char err_path[PATH_MAX]; /* the child's stderr */
  unsigned limit_s;        /* SIGALRM after this long (0: none) */
  int argc;
  char argv[SPAWN_ARGS][SPAWN_ARG];
} spawn_req;

/* What it answers. */
typedef struct spawn_rep {
  int started; /* 0: fork failed; errno in err */
  int err;
  int status; /* as from wait4 */
  double wall;
  struct rusage ru;
} spawn_rep;

static bool write_full(int fd, const void *p, size_t n)
{
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

static bool read_full(int fd, void *p, size_t n)
{
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

/* In the grandchild: stdin from /dev/null, stdout to /dev/null, stderr to
 * the request's file; then the program. */
static void exec_child(const spawn_req *rq)
{
  char *argv[SPAWN_ARGS + 1];
  for (int i = 0; i < rq->argc; i++)
    argv[i] = (char *)rq->argv[i];
  argv[rq->argc] = NULL;
  int null = open("/dev/null", O_RDWR);
  int err = open(rq->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (null < 0 || err < 0)
    _exit(127);
  dup2(null, 0);
  dup2(null, 1);
  dup2(err, 2);
  if (rq->limit_s)
    alarm(rq->limit_s); /* kept across exec: a program that hangs is killed */
  execv(argv[0], argv);
  _exit(127);
}

/* The spawner's loop: one request, one child, one answer, until the bench
 * closes its end. */
static void spawner_main(int in, int out)
{
  static spawn_req rq;
  while (read_full(in, &rq, sizeof rq)) {
    spawn_rep rep;
    memset(&rep, 0, sizeof rep);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
      close(in);
      close(out);
      exec_child(&rq);
    }
    if (pid < 0) {
      rep.err = errno;
    } else {
      rep.started = 1;
      while (wait4(pid, &rep.status, 0, &rep.ru) < 0 && errno == EINTR)
        ;
      rep.wall = now_s() - t0;
    }
    if (!write_full(out, &rep, sizeof rep))
      break;
  }
  _exit(0);
}

/* The program's path: --scan, else examples/scan beside the bench's
 * directory (build/test/bench -> build/examples/scan). */
static void resolve(void)
{
  char self[PATH_MAX];
  if (opt_scan) {
    snprintf(scan_path, sizeof scan_path, "%s", opt_scan);
    return;
  }
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    snprintf(absent, sizeof absent,
             "cannot find the bench's own path; name the program with --scan");
    return;
  }
  self[n] = '\0';
  snprintf(scan_path, sizeof scan_path, "%s/../examples/scan", dirname(self));
  char real[PATH_MAX];
  if (realpath(scan_path, real))
    snprintf(scan_path, sizeof scan_path, "%s", real);
}

void child_init(void)
{
  if (opt_scan && !opt_scan[0]) {
    snprintf(absent, sizeof absent, "turned off with --scan ''");
    return;
  }
  resolve();
  if (absent[0])
    return;
  if (access(scan_path, X_OK) != 0) {
    snprintf(absent, sizeof absent, "no scan program at %s (%s); %s", scan_path, strerror(errno),
             opt_scan ? "check --scan"
                      : "build with -Dexamples=true, or name one with --scan PATH");
    return;
  }
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/bench-scan.XXXXXX", base && base[0] ? base : "/tmp");
  int down[2], up[2];
  if (!mkdtemp(tmpdir) || pipe(down) != 0 || pipe(up) != 0) {
    snprintf(absent, sizeof absent, "cannot set up its files or pipes: %s", strerror(errno));
    tmpdir[0] = '\0';
    return;
  }
  fflush(NULL);
  spawner = fork();
  if (spawner == 0) {
    close(down[1]);
    close(up[0]);
    spawner_main(down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  if (spawner < 0) {
    snprintf(absent, sizeof absent, "cannot fork: %s", strerror(errno));
    close(down[1]);
    close(up[0]);
    return;
  }
  to_spawner = down[1];
  from_spawner = up[0];
  atexit(child_shutdown); /* also when the bench exits on a failure */
}

const char *child_absent(void) { return absent[0] ? absent : NULL; }

const char *child_program(void) { return scan_path; }

static void tmp_path(char *out, size_t n, const char *name)
{
  snprintf(out, n, "%s/%s", tmpdir, name);
}

void child_shutdown(void)
{
  if (to_spawner >= 0) {
    close(to_spawner);
    close(from_spawner);
    waitpid(spawner, NULL, 0);
    to_spawner = from_spawner = -1;
  }
  if (tmpdir[0]) {
    const char *names[] = {"targets", "out.jsonl", "stderr"};
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      tmp_path(p, sizeof p, names[i]);
      unlink(p);
    }
    rmdir(tmpdir);
    tmpdir[0] = '\0';
  }
  for (size_t i = 0; i < NSCEN; i++) {
    free(expect_text[i]);
    expect_text[i] = NULL;
  }
}

/* ---- What the matchers find -------------------------------------------- */

/* Appends s, an ASCII pattern, as a JSON string escaped as scan escapes
 * ASCII: quote and backslash, control bytes and DEL as \u00XX. (scan also
 * writes each byte that is not part of valid UTF-8 as \u00XX; the patterns
 * here are ASCII.) */
static void json_append(char *out, size_t n, size_t *at, const char *s)
{
  *at += (size_t)snprintf(out + *at, n - *at, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p && *at < n; p++) {
    if (*p == '"' || *p == '\\')
      *at += (size_t)snprintf(out + *at, n - *at, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7F)
      *at += (size_t)snprintf(out + *at, n - *at, "\\u%04x", *p);
    else
      *at += (size_t)snprintf(out + *at, n - *at, "%c", *p);
  }
  *at += (size_t)snprintf(out + *at, n - *at, "\"");
}

/* Where re's first match in s (len bytes) ends: the shortest prefix it
 * matches in (REG_NOTEOL: $ does not match at a prefix's end); SIZE_MAX:
 * none. */
static size_t regex_first_end(const regex_t *re, const unsigned char *s, size_t len)
{
  regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)len};
  if (regexec(re, (const char *)s, 1, &m, REG_STARTEND) != 0)
    return SIZE_MAX;
  size_t lo = 0, hi = len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    m.rm_so = 0;
    m.rm_eo = (regoff_t)mid;
    if (regexec(re, (const char *)s, 1, &m, REG_STARTEND | REG_NOTEOL) == 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

/* The matchers' first hits in the pattern's first len bytes, into at[]
 * (words, then regexes); false when a regex is not an ERE. */
static bool first_hits(const scan_matchers *mt, size_t len, size_t *at, const char *name)
{
  unsigned char *pat = malloc(len ? len : 1);
  if (!pat) {
    fprintf(stderr, "bench: no memory for the expected verdict of %s\n", name);
    exit(1);
  }
  ts_pattern_fill(pat, 0, len);
  size_t id = 0;
  bool ok = true;
  for (size_t i = 0; mt->words[i]; i++, id++) {
    size_t n = strlen(mt->words[i]);
    const unsigned char *p = memmem(pat, len, mt->words[i], n);
    at[id] = p ? (size_t)(p - pat) + n : SIZE_MAX;
  }
  for (size_t i = 0; mt->regexes[i]; i++, id++) {
    regex_t re;
    at[id] = SIZE_MAX;
    if (regcomp(&re, mt->regexes[i], REG_EXTENDED) != 0) {
      fprintf(stderr, "bench: %s: not an ERE: %s\n", name, mt->regexes[i]);
      ok = false;
      continue;
    }
    at[id] = regex_first_end(&re, pat, len);
    regfree(&re);
  }
  free(pat);
  return ok;
}

bool child_expect(const scenario *sc)
{
  const scan_matchers *mt = sc->match;
  size_t si = (size_t)(sc - SCENARIOS), cap = scenario_cap(sc);
  if (!mt)
    return true;
  size_t *at = expect_at[si];
  bool ok = first_hits(mt, sc->size < cap ? sc->size : cap, at, sc->name);
  /* As scan writes them: the words that hit, then the regexes. */
  char hits[2048] = "";
  size_t n = 0, id = 0;
  bool hit[2] = {false, false};
  for (int kind = 0; kind < 2; kind++)
    for (const char *const *m = kind ? mt->regexes : mt->words; *m; m++, id++) {
      if (at[id] == SIZE_MAX)
        continue;
      hit[kind] = true;
      n += (size_t)snprintf(hits + n, sizeof hits - n,
                            "%s{\"matcher\":\"%s\",\"value\":", n ? "," : "",
                            kind ? "regex" : "word");
      json_append(hits, sizeof hits, &n, *m);
      n += (size_t)snprintf(hits + n, sizeof hits - n, ",\"offset\":%zu}", at[id]);
    }
  bool matched = (!mt->words[0] || hit[0]) && (!mt->regexes[0] || hit[1]);
  char *text = malloc(sizeof hits + 64);
  if (!text) {
    fprintf(stderr, "bench: no memory for the expected verdict of %s\n", sc->name);
    exit(1);
  }
  snprintf(text, sizeof hits + 64, "\"matched\":%s,\"matches\":[%s]", matched ? "true" : "false",
           hits);
  free(expect_text[si]);
  expect_text[si] = text;
  return ok;
}

const size_t *child_expected_at(const scenario *sc)
{
  return sc->match ? expect_at[sc - SCENARIOS] : NULL;
}

/* ---- One run ----------------------------------------------------------- */

/* The scenario's URLs, one a line: the ones the driver requests. */
static bool write_targets(const scenario *sc, const char *path)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  request rq;
  for (size_t i = 0; i < sc->count; i++) {
    sc->request(sc, i, &rq);
    fprintf(f, "%s\n", rq.url);
  }
  return fclose(f) == 0;
}

/* A JSON line of a target fetched whole (or cut at the cap when larger):
 * status 200, no error, the body's length. */
static bool line_ok(const char *line, size_t want, bool truncated, uint64_t *bytes)
{
  const char *b = strstr(line, "\"body_bytes\":");
  if (!strstr(line, "\"status_code\":200,") || !strstr(line, "\"error\":null") || !b)
    return false;
  unsigned long long got = strtoull(b + strlen("\"body_bytes\":"), NULL, 10);
  if (got != want || !strstr(line, truncated ? "\"truncated\":true" : "\"truncated\":false"))
    return false;
  *bytes += got;
  return true;
}

/* A JSON line of a target that --stop-on-match ended: status 200, no
 * error, "stopped", fewer bytes than the body has. */
static bool line_stopped(const char *line, size_t want, uint64_t *bytes)
{
  const char *b = strstr(line, "\"body_bytes\":");
  if (!strstr(line, "\"status_code\":200,") || !strstr(line, "\"error\":null") || !b ||
      !strstr(line, "\"stopped\":true"))
    return false;
  unsigned long long got = strtoull(b + strlen("\"body_bytes\":"), NULL, 10);
  *bytes += got;
  return got < want;
}

/* Counts the JSON lines of the output, and those that are right: with
 * matchers, their verdict too. */
static void check_output(const scenario *sc, const char *path, tally *t, bool with_matchers)
{
  size_t cap = scenario_cap(sc), want = sc->size < cap ? sc->size : cap;
  const char *verdict = with_matchers ? expect_text[sc - SCENARIOS] : NULL;
  bool stop = with_matchers && sc->match->stop;
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t n = 0;
  ssize_t len;
  while (f && (len = getline(&line, &n, f)) > 0) {
    if (line[len - 1] != '\n')
      continue; /* a line cut short */
    t->lines++;
    bool ok = stop ? line_stopped(line, want, &t->body_bytes)
                   : line_ok(line, want, sc->size > cap, &t->body_bytes);
    bool right = !verdict || strstr(line, verdict);
    t->verdicts_ok += verdict && right;
    t->stopped_lines += strstr(line, "\"stopped\":true") != NULL;
    if (ok && right)
      t->done++;
    else if (t->failed++ < 5)
      fprintf(stderr, "  scan: wrong line%s: %.*s\n", right ? "" : " (verdict)",
              (int)(len > 600 ? 600 : len - 1), line);
  }
  free(line);
  if (f)
    fclose(f);
  if (t->lines < sc->count)
    t->failed += sc->count - t->lines;
}

/* The pool summary scan prints on stderr at the end. */
static void read_summary(const char *path, tally *t)
{
  FILE *f = fopen(path, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    unsigned long long acq, reuses, fresh, discards, pauses, spills;
    double peak, body_mib, wire_mib;
    if (sscanf(line, "scan: received %lf MiB of bodies (%lf MiB on the wire)", &body_mib,
               &wire_mib) == 2) {
      t->summary_body_mib = body_mib;
      t->summary_wire_mib = wire_mib;
    }
    const char *e = strstr(line, "scan: body matchers: ");
    if (e)
      snprintf(t->engine, sizeof t->engine, "%.*s", (int)strcspn(e + 21, "\n"), e + 21);
    const char *p = strstr(line, "pool: ");
    if (p && sscanf(p,
                    "pool: %llu acquisitions (%llu reuses, %llu fresh), %llu discards, "
                    "peak in use %lf MiB, %llu pauses, %llu spills",
                    &acq, &reuses, &fresh, &discards, &peak, &pauses, &spills) == 7) {
      t->has_pool = true;
      t->ps.acquisitions = acq;
      t->ps.reuses = reuses;
      t->ps.fresh = fresh;
      t->ps.discards = discards;
      t->ps.peak_in_use = (size_t)(peak * (double)MiB);
      t->ps.pauses = pauses;
      t->ps.spills = spills;
    }
  }
  if (f)
    fclose(f);
}

static void arg(spawn_req *rq, const char *s)
{
  snprintf(rq->argv[rq->argc++], SPAWN_ARG, "%s", s);
}

void run_child(const scenario *sc, tally *t, bool with_matchers)
{
  static spawn_req rq;
  char targets[PATH_MAX], out[PATH_MAX], conc[32], cap[32];
  memset(t, 0, sizeof *t);
  t->child = true;
  tmp_path(targets, sizeof targets, "targets");
  tmp_path(out, sizeof out, "out.jsonl");
  memset(&rq, 0, sizeof rq);
  tmp_path(rq.err_path, sizeof rq.err_path, "stderr");
  if (!write_targets(sc, targets)) {
    fprintf(stderr, "bench: cannot write %s: %s\n", targets, strerror(errno));
    exit(1);
  }
  unlink(out);
  snprintf(conc, sizeof conc, "%ld", sc->conc);
  snprintf(cap, sizeof cap, "%zu", scenario_cap(sc));
  arg(&rq, scan_path);
  arg(&rq, "-c");
  arg(&rq, conc);
  arg(&rq, "--max-body");
  arg(&rq, cap);
  arg(&rq, "-o");
  arg(&rq, out);
  arg(&rq, "-l");
  arg(&rq, targets);
  for (size_t i = 0; with_matchers && sc->match->words[i]; i++) {
    arg(&rq, "--word");
    arg(&rq, sc->match->words[i]);
  }
  for (size_t i = 0; with_matchers && sc->match->regexes[i]; i++) {
    arg(&rq, "--regex");
    arg(&rq, sc->match->regexes[i]);
  }
  if (with_matchers && sc->match->stop)
    arg(&rq, "--stop-on-match");
  rq.limit_s = (unsigned)ceil(opt_limit);
  spawn_rep rep;
  double c0 = cpu_s(RUSAGE_SELF);
  if (!write_full(to_spawner, &rq, sizeof rq) || !read_full(from_spawner, &rep, sizeof rep) ||
      !rep.started) {
    fprintf(stderr, "bench: cannot run %s: %s\n", scan_path,
            rep.started ? "the spawner is gone" : strerror(rep.err));
    exit(1);
  }
  double child_cpu = (double)rep.ru.ru_utime.tv_sec + (double)rep.ru.ru_utime.tv_usec / 1e6 +
                     (double)rep.ru.ru_stime.tv_sec + (double)rep.ru.ru_stime.tv_usec / 1e6;
  t->ran = true;
  t->wall = rep.wall;
  t->cpu_drv = child_cpu;
  t->cpu = cpu_s(RUSAGE_SELF) - c0 + child_cpu; /* the server's share, and the program */
  t->child_peak = (size_t)rep.ru.ru_maxrss * KiB;
  t->child_status = rep.status;
  t->faults_drv = rep.ru.ru_minflt;
  check_output(sc, out, t, with_matchers);
  read_summary(rq.err_path, t);
  if (WIFSIGNALED(rep.status) && WTERMSIG(rep.status) == SIGALRM) {
    t->stopped = true;
    t->dropped = sc->count - t->lines;
  }
  if (!WIFEXITED(rep.status) || WEXITSTATUS(rep.status) != 0) {
    char line[256] = "";
    FILE *f = fopen(rq.err_path, "r");
    if (f && !fgets(line, sizeof line, f))
      line[0] = '\0';
    if (f)
      fclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (WIFEXITED(rep.status))
      fprintf(stderr, "  scan: exit status %d; stderr: %s\n", WEXITSTATUS(rep.status), line);
    else
      fprintf(stderr, "  scan: killed by signal %d (%s)\n", WTERMSIG(rep.status),
              strsignal(WTERMSIG(rep.status)));
    if (!t->failed)
      t->failed = 1; /* the run failed even if every line was written */
  }
}
