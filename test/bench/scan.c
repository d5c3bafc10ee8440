/* bench-scan: scan -t at scale beside curl's own multi loop over the very
 * same requests (issue 32).
 *
 *   bench-scan -t DIR [--targets N] [--concurrency C] [--runs R] [--scan PATH]
 *
 * The test server (test/server.c) runs in this process and writes every
 * request it is sent to a file, scan's and curl's alike, so that it does
 * the same work per request for both. Each run:
 *   scan: `scan -t DIR -l TARGETS -c C -o /dev/null`, N targets
 *     http://127.0.0.1:PORT/t<i> (pages the server answers 404, as most
 *     hosts answer most templates' paths; the templates' own routes, if
 *     they ask for the server's, get their answers). Its summary gives
 *     the requests and the requesting phase ("N requests in T s"); the
 *     loading phase is the rest of its wall time. Peak RSS from wait4.
 *   curl: a child process that sends the requests the server got from
 *     scan (method, target, header lines, body) with one curl multi
 *     handle, C transfers at a time, a write callback that counts the
 *     bytes and keeps none: the least any program can do to make them
 *     (CURLOPT_NOSIGNAL, as scan).
 * Reported per run, then the medians: both phases, requests/s and peak
 * RSS, and scan's requesting time over curl's; per run also each side's
 * CPU time, in its own code and in the kernel. Exit status 0, or 1 when
 * a step fails (scan not found, a failed run, curl's count differing).
 *
 * The run is on loopback on this machine, so the ratio is what scan's own
 * work costs per request: compare runs made side by side, never alone.
 * Built with -Dbench=true and the examples: build/test/bench-scan. */
#define _GNU_SOURCE /* memmem */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../server.h"

#define RUNS_MAX 16

/* A request the server got, as curl is told to send it again. */
typedef struct request {
  char *method, *target; /* the request line's */
  struct curl_slist *headers;
  char *body; /* len bytes (those that did not come with the head are 'x') */
  size_t len;
} request;

/* What the server got, written to a file as it comes (from the server's
 * threads), so that the bench itself stays small: a child inherits its
 * memory as its peak RSS until it execs. */
static struct {
  pthread_mutex_t lock;
  FILE *f;  /* NULL: none kept */
  size_t n; /* requests written */
  int failed;
} got = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* One header line of a logged head, for curl to send as it came: the
 * ones curl writes itself from what it is told (the host, the body's
 * length) are left to it. */
static int header_kept(const char *line, size_t len)
{
  static const char *const own[] = {"host:", "content-length:", "transfer-encoding:"};
  for (size_t i = 0; i < sizeof own / sizeof *own; i++)
    if (len >= strlen(own[i]) && !strncasecmp(line, own[i], strlen(own[i])))
      return 0;
  return 1;
}

static void request_free(request *q)
{
  free(q->method);
  free(q->target);
  free(q->body);
  curl_slist_free_all(q->headers);
  memset(q, 0, sizeof *q);
}

/* The file holds, per request, its method, target, header lines (their
 * count first) and body, each field as its length, a space, its bytes and
 * a newline; a body's bytes that did not come with the head are 'x'. */
static void field(FILE *f, const char *p, size_t len)
{
  fprintf(f, "%zu ", len);
  fwrite(p, 1, len, f);
  fputc('\n', f);
}

/* The header lines kept between from and to (header_kept), written to f
 * when not NULL; how many. */
static size_t header_lines(const char *from, const char *to, FILE *f)
{
  size_t n = 0;
  for (const char *l = from, *e; l < to && (e = memmem(l, (size_t)(to - l), "\r\n", 2)) && e != l;
       l = e + 2)
    if (header_kept(l, (size_t)(e - l))) {
      if (f)
        field(f, l, (size_t)(e - l));
      n++;
    }
  return n;
}

static void on_request(void *ud, const char *head, size_t head_len, const char *body, size_t have,
                       size_t len)
{
  (void)ud;
  const char *end = memmem(head, head_len, "\r\n", 2), *sp1, *sp2;
  if (!end || !(sp1 = memchr(head, ' ', (size_t)(end - head))) ||
      !(sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))))
    return;
  pthread_mutex_lock(&got.lock);
  if (got.f) {
    field(got.f, head, (size_t)(sp1 - head));
    field(got.f, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    fprintf(got.f, "%zu\n", header_lines(end + 2, head + head_len, NULL));
    header_lines(end + 2, head + head_len, got.f);
    fprintf(got.f, "%zu ", len);
    fwrite(body, 1, have, got.f);
    for (size_t i = have; i < len; i++)
      fputc('x', got.f);
    fputc('\n', got.f);
    got.n++;
    got.failed |= ferror(got.f);
  }
  pthread_mutex_unlock(&got.lock);
}

/* The server writes the requests it gets to path from now on. */
static void record_to(const char *path)
{
  pthread_mutex_lock(&got.lock);
  got.f = fopen(path, "w");
  got.n = 0;
  got.failed = !got.f;
  pthread_mutex_unlock(&got.lock);
}

/* It stops; *n: the requests written. 0, or -1 when the file is not whole. */
static int record_end(size_t *n)
{
  pthread_mutex_lock(&got.lock);
  *n = got.n;
  int ok = !got.failed;
  if (got.f && fclose(got.f) != 0)
    ok = 0;
  got.f = NULL;
  pthread_mutex_unlock(&got.lock);
  return ok ? 0 : -1;
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- The requests, kept in a file ----------------------------------------- */

/* A length, a space, that many bytes and a newline from f, new; NULL at
 * the end or on a malformed file. */
static char *read_field(FILE *f, size_t *len)
{
  size_t n;
  if (fscanf(f, "%zu", &n) != 1 || fgetc(f) != ' ' || n > (1u << 30))
    return NULL;
  char *p = malloc(n + 1);
  if (p && fread(p, 1, n, f) == n && fgetc(f) == '\n') {
    p[n] = '\0';
    *len = n;
    return p;
  }
  free(p);
  return NULL;
}

/* The next request of the file on_request writes into q: 1, or 0 at the end (or
 * on a malformed file, which the count then tells). */
static int read_request(FILE *f, request *q)
{
  size_t len, nh;
  memset(q, 0, sizeof *q);
  if (!(q->method = read_field(f, &len)))
    return 0;
  int ok = (q->target = read_field(f, &len)) != NULL && fscanf(f, "%zu\n", &nh) == 1;
  for (size_t k = 0; ok && k < nh; k++) {
    char *h = read_field(f, &len);
    struct curl_slist *more = h ? curl_slist_append(q->headers, h) : NULL;
    free(h);
    if ((ok = more != NULL))
      q->headers = more;
  }
  if (ok && (q->body = read_field(f, &q->len)) != NULL)
    return 1;
  request_free(q);
  return 0;
}

/* ---- curl's own loop, in a process of its own ----------------------------- */

static size_t count(char *p, size_t size, size_t n, void *ud)
{
  (void)p;
  *(size_t *)ud += size * n;
  return size * n;
}

/* Request q on handle e, to the server at base. 0 or -1. */
static int set_request(CURL *e, const request *q, const char *base, char *url, size_t cap)
{
  int absolute = !strncmp(q->target, "http://", 7) || !strncmp(q->target, "https://", 8);
  snprintf(url, cap, "%s%s", absolute ? "" : base, q->target);
  int head = !strcmp(q->method, "HEAD"), get = !strcmp(q->method, "GET");
  int ok = curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOBODY, (long)head) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, head || get ? NULL : q->method) == CURLE_OK;
  if (ok && q->len)
    ok = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, q->method) == CURLE_OK;
  return ok ? 0 : -1;
}

/* The requests of file f (on_request's), conc at a time, each read when
 * a handle is free for it (curl's loop holds no more of them than it
 * runs); exits 0 when all were answered, 1 when one could not be made. */
static void curl_loop(FILE *f, const char *base, long conc)
{
  CURLM *m = curl_multi_init();
  CURL **e = calloc((size_t)conc, sizeof *e);
  request *q = calloc((size_t)conc, sizeof *q);
  char(*urls)[8192] = calloc((size_t)conc, sizeof *urls);
  size_t started = 0, done = 0, failed = 0, bytes = 0;
  if (!m || !e || !q || !urls)
    _exit(1);
  for (long i = 0; i < conc; i++) {
    if (!(e[i] = curl_easy_init()))
      _exit(1);
    curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, count);
    curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &bytes);
    curl_easy_setopt(e[i], CURLOPT_PRIVATE, (void *)(intptr_t)i);
    curl_easy_setopt(e[i], CURLOPT_NOSIGNAL, 1L); /* as scan: no signal handling per call */
  }
  for (long i = 0; i < conc && read_request(f, &q[i]); i++, started++)
    if (set_request(e[i], &q[i], base, urls[i], sizeof urls[i]) != 0 ||
        curl_multi_add_handle(m, e[i]) != CURLM_OK)
      _exit(1);
  int running = 1;
  while (running || done < started) {
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      CURL *h = msg->easy_handle;
      char *slot;
      failed += msg->data.result != CURLE_OK;
      done++;
      curl_easy_getinfo(h, CURLINFO_PRIVATE, &slot);
      curl_multi_remove_handle(m, h);
      long i = (long)(intptr_t)slot;
      request_free(&q[i]);
      if (read_request(f, &q[i])) {
        if (set_request(h, &q[i], base, urls[i], sizeof urls[i]) != 0 ||
            curl_multi_add_handle(m, h) != CURLM_OK)
          _exit(1);
        started++;
        running = 1;
      }
    }
    if (running)
      curl_multi_poll(m, NULL, 0, 1000, NULL);
  }
  fprintf(stderr, "bench-scan: curl: %zu requests, %zu failed, %zu body bytes\n", done, failed,
          bytes);
  _exit(feof(f) ? 0 : 1);
}

/* ---- A run --------------------------------------------------------------- */

/* CPU seconds a child spent: in its own code, and in the kernel. */
typedef struct cpu {
  double user, sys;
  long faults; /* minor page faults: fresh memory */
  long waits, preempted; /* context switches: it waited (in poll), it was preempted */
} cpu;

/* Runs argv with stderr into err (cap bytes); its wall time (seconds),
 * peak RSS (MiB) and CPU time. 0, or -1 when it did not exit 0. */
static int run(char *const argv[], char *err, size_t cap, double *wall, double *rss, cpu *used)
{
  int pipefd[2];
  if (pipe(pipefd) != 0)
    return -1;
  double t0 = now();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(pipefd[1]);
  size_t n = 0;
  for (ssize_t r; (r = read(pipefd[0], err + n, cap - 1 - n)) > 0 || (r < 0 && errno == EINTR);)
    if (r > 0 && (n += (size_t)r) == cap - 1)
      n = 0; /* keep the end: the summary */
  err[n] = '\0';
  close(pipefd[0]);
  int status;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
    return -1;
  *wall = now() - t0;
  *rss = (double)ru.ru_maxrss / 1024.0;
  used->user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
  used->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  used->faults = ru.ru_minflt;
  used->waits = ru.ru_nvcsw;
  used->preempted = ru.ru_nivcsw;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *out)
{
  fputs("usage: bench-scan -t DIR [--targets N] [--concurrency C] [--runs R] [--scan PATH]\n"
        "  -t DIR           templates for scan -t (e.g. nuclei's http/ folder)\n"
        "  --targets N      targets (default 20)\n"
        "  --concurrency C  transfers at a time, scan's -c and curl's (default 50)\n"
        "  --runs R         runs of each (default 3, at most 16); medians reported\n"
        "  --scan PATH      the scan binary (default: ../examples/scan beside this one)\n",
        out);
}

int main(int argc, char **argv)
{
  const char *dir = NULL, *scan = NULL;
  long targets = 20, conc = 50, runs = 3;
  /* The curl side, in a process of its own: --replay FILE BASE C. */
  if (argc == 5 && !strcmp(argv[1], "--replay")) {
    FILE *f = fopen(argv[2], "r");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!f)
      return 1;
    curl_loop(f, argv[3], atol(argv[4]));
  }
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-t") && v)
      dir = v, i++;
    else if (!strcmp(argv[i], "--scan") && v)
      scan = v, i++;
    else if (!strcmp(argv[i], "--targets") && v)
      targets = atol(v), i++;
    else if (!strcmp(argv[i], "--concurrency") && v)
      conc = atol(v), i++;
    else if (!strcmp(argv[i], "--runs") && v)
      runs = atol(v), i++;
    else {
      usage(stderr);
      return 2;
    }
  }
  if (!dir || targets < 1 || conc < 1 || conc > 10000 || runs < 1 || runs > RUNS_MAX) {
    usage(stderr);
    return 2;
  }
  char self[PATH_MAX], self_path[PATH_MAX], scan_path[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "bench-scan: cannot find itself\n");
    return 1;
  }
  self[n] = '\0';
  memcpy(self_path, self, (size_t)n + 1);
  *strrchr(self, '/') = '\0';
  if (!scan) {
    snprintf(scan_path, sizeof scan_path, "%s/../examples/scan", self);
    scan = scan_path;
  }
  if (!scan || access(scan, X_OK) != 0) {
    fprintf(stderr, "bench-scan: no scan binary (--scan PATH)\n");
    return 1;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  ts_server *srv = ts_start();
  char base[64], list[] = "/tmp/bench-scan-targets-XXXXXX", conc_s[32];
  char saved[] = "/tmp/bench-scan-requests-XXXXXX";
  char replayed[] = "/tmp/bench-scan-replayed-XXXXXX";
  int fd = srv ? mkstemp(list) : -1, fd2 = fd >= 0 ? mkstemp(saved) : -1;
  int fd3 = fd2 >= 0 ? mkstemp(replayed) : -1;
  if (fd2 >= 0)
    close(fd2);
  if (fd3 >= 0)
    close(fd3);
  if (fd < 0 || fd2 < 0 || fd3 < 0) {
    fprintf(stderr, "bench-scan: cannot start the server or write the targets\n");
    return 1;
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d", ts_port(srv));
  FILE *f = fdopen(fd, "w");
  for (long i = 0; i < targets; i++)
    fprintf(f, "%s/t%ld\n", base, i);
  fclose(f);
  snprintf(conc_s, sizeof conc_s, "%ld", conc);
  ts_on_request(srv, on_request, NULL);
  char *args[] = {(char *)scan, "-t",   (char *)dir, "-l",        list,
                  "-c",         conc_s, "-o",        "/dev/null", NULL};
  char *replay[] = {self_path, "--replay", saved, base, conc_s, NULL};
  static char err[1 << 16];
  double s_load[RUNS_MAX], s_req[RUNS_MAX], s_rss[RUNS_MAX], c_req[RUNS_MAX], c_rss[RUNS_MAX];
  unsigned long requests = 0;
  int status = 0;
  printf("bench-scan: %s, %ld targets, %ld at a time\n", dir, targets, conc);
  printf("%-4s %9s %12s %10s %9s | %12s %10s %9s | %7s\n", "run", "scan load", "scan request",
         "scan req/s", "scan RSS", "curl request", "curl req/s", "curl RSS", "ratio");
  for (long r = 0; r < runs && status == 0; r++) {
    double wall, rss;
    /* The server writes what scan sends, for curl to send again; and what
     * curl sends, so that it does the same work for both. */
    record_to(saved);
    cpu s_cpu, c_cpu;
    int ran = run(args, err, sizeof err, &wall, &rss, &s_cpu) == 0;
    size_t sent = 0, again = 0;
    int saved_ok = record_end(&sent) == 0;
    const char *line = err;
    while (line && sscanf(line, "scan: %lu requests in %lf s", &requests, &s_req[r]) != 2)
      line = (line = strstr(line + 1, "\nscan: ")) ? line + 1 : NULL;
    if (!ran || !line) {
      fprintf(stderr, "bench-scan: scan failed:\n%s\n", err);
      status = 1;
      break;
    }
    s_load[r] = wall - s_req[r];
    s_rss[r] = rss;
    record_to(replayed);
    int replayed_ok = saved_ok && run(replay, err, sizeof err, &c_req[r], &c_rss[r], &c_cpu) == 0;
    if (record_end(&again) != 0 || !replayed_ok) {
      fprintf(stderr, "bench-scan: curl's loop failed:\n%s\n", err);
      status = 1;
      break;
    }
    printf("%-4ld %8.2fs %11.2fs %10.0f %5.1f MiB | %11.2fs %10.0f %5.1f MiB | %6.2fx\n", r + 1,
           s_load[r], s_req[r], (double)requests / s_req[r], s_rss[r], c_req[r],
           (double)sent / c_req[r], c_rss[r], s_req[r] / c_req[r]);
    if (requests != sent)
      printf("     (scan counted %lu requests, the server got %zu: one that curl refused to "
             "send, or a redirect that curl followed, is counted on one side only)\n",
             requests, sent);
    if (again != sent)
      printf("     (the server got %zu requests from scan, %zu from curl's loop)\n", sent, again);
    printf("     CPU seconds, user + system: scan %.2f + %.2f (loading too), curl %.2f + %.2f;"
           " page faults: scan %ld, curl %ld\n",
           s_cpu.user, s_cpu.sys, c_cpu.user, c_cpu.sys, s_cpu.faults, c_cpu.faults);
    printf("     context switches, waited + preempted: scan %ld + %ld, curl %ld + %ld\n",
           s_cpu.waits, s_cpu.preempted, c_cpu.waits, c_cpu.preempted);
    fflush(stdout);
  }
  if (status == 0) {
    double ratio[RUNS_MAX];
    for (long r = 0; r < runs; r++)
      ratio[r] = s_req[r] / c_req[r];
    printf("%-4s %8.2fs %11.2fs %10s %5.1f MiB | %11.2fs %10s %5.1f MiB | %6.2fx\n", "med",
           median(s_load, (int)runs), median(s_req, (int)runs), "", median(s_rss, (int)runs),
           median(c_req, (int)runs), "", median(c_rss, (int)runs), median(ratio, (int)runs));
  }
  ts_stop(srv);
  unlink(list);
  unlink(saved);
  unlink(replayed);
  curl_global_cleanup();
  return status;
}
