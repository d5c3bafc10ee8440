/* bench-scan: scan -t at scale beside curl's own multi loop over the very
 * same requests (issue 32).
 *
 *   bench-scan -t DIR [--targets N] [--concurrency C] [--runs R] [--scan PATH]
 *
 * The test server (test/server.c) runs in this process and keeps every
 * request it is sent. Each run:
 *   scan: `scan -t DIR -l TARGETS -c C -o /dev/null`, N targets
 *     http://127.0.0.1:PORT/t<i> (pages the server answers 404, as most
 *     hosts answer most templates' paths; the templates' own routes, if
 *     they ask for the server's, get their answers). Its summary gives
 *     the requests and the requesting phase ("N requests in T s"); the
 *     loading phase is the rest of its wall time. Peak RSS from wait4.
 *   curl: a child process that sends the requests the server got from
 *     scan (method, target, header lines, body) with one curl multi
 *     handle, C transfers at a time, a write callback that counts the
 *     bytes and keeps none: the least any program can do to make them.
 * Reported per run, then the medians: both phases, requests/s and peak
 * RSS, and scan's requesting time over curl's. Exit status 0, or 1 when
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

/* What the server got: appended from its threads. */
static struct {
  pthread_mutex_t lock;
  request *r;
  size_t n, cap;
  int nomem;
} got = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

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

static void on_request(void *ud, const char *head, size_t head_len, const char *body, size_t have,
                       size_t len)
{
  (void)ud;
  request q = {0};
  const char *end = memmem(head, head_len, "\r\n", 2), *sp1, *sp2;
  if (!end || !(sp1 = memchr(head, ' ', (size_t)(end - head))) ||
      !(sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))))
    return;
  q.method = strndup(head, (size_t)(sp1 - head));
  q.target = strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
  q.body = len ? malloc(len) : NULL;
  q.len = len;
  int ok = q.method && q.target && (!len || q.body);
  if (q.body) {
    memcpy(q.body, body, have);
    memset(q.body + have, 'x', len - have);
  }
  for (const char *l = end + 2; ok && l < head + head_len;) {
    const char *e = memmem(l, (size_t)(head + head_len - l), "\r\n", 2);
    if (!e || e == l)
      break;
    if (header_kept(l, (size_t)(e - l))) {
      char *h = strndup(l, (size_t)(e - l));
      struct curl_slist *more = h ? curl_slist_append(q.headers, h) : NULL;
      free(h);
      ok = more != NULL;
      if (more)
        q.headers = more;
    }
    l = e + 2;
  }
  pthread_mutex_lock(&got.lock);
  if (ok && got.n == got.cap) {
    request *more = realloc(got.r, (got.cap = got.cap ? 2 * got.cap : 4096) * sizeof *more);
    ok = more != NULL;
    if (more)
      got.r = more;
  }
  if (ok)
    got.r[got.n++] = q;
  else
    got.nomem = 1;
  pthread_mutex_unlock(&got.lock);
  if (!ok) {
    free(q.method);
    free(q.target);
    free(q.body);
    curl_slist_free_all(q.headers);
  }
}

static void forget_requests(void)
{
  for (size_t i = 0; i < got.n; i++) {
    free(got.r[i].method);
    free(got.r[i].target);
    free(got.r[i].body);
    curl_slist_free_all(got.r[i].headers);
  }
  got.n = 0;
  got.nomem = 0;
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- curl's own loop, in a child ----------------------------------------- */

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

/* The requests got, conc at a time; exits 0 when all were answered. */
static void curl_loop(const char *base, long conc)
{
  CURLM *m = curl_multi_init();
  CURL **e = calloc((size_t)conc, sizeof *e);
  char (*urls)[8192] = calloc((size_t)conc, sizeof *urls);
  size_t next = 0, done = 0, failed = 0, bytes = 0;
  if (!m || !e || !urls)
    _exit(1);
  for (long i = 0; i < conc; i++) {
    if (!(e[i] = curl_easy_init()))
      _exit(1);
    curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, count);
    curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &bytes);
    curl_easy_setopt(e[i], CURLOPT_PRIVATE, (void *)(intptr_t)i);
  }
  for (long i = 0; i < conc && next < got.n; i++, next++)
    if (set_request(e[i], &got.r[next], base, urls[i], sizeof urls[i]) != 0 ||
        curl_multi_add_handle(m, e[i]) != CURLM_OK)
      _exit(1);
  int running = 1;
  while (running || done < next) {
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      CURL *h = msg->easy_handle;
      void *slot;
      failed += msg->data.result != CURLE_OK;
      done++;
      curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&slot);
      curl_multi_remove_handle(m, h);
      long i = (long)(intptr_t)slot;
      if (next < got.n) {
        if (set_request(h, &got.r[next++], base, urls[i], sizeof urls[i]) != 0 ||
            curl_multi_add_handle(m, h) != CURLM_OK)
          _exit(1);
        running = 1;
      }
    }
    if (running)
      curl_multi_poll(m, NULL, 0, 1000, NULL);
  }
  fprintf(stderr, "bench-scan: curl: %zu requests, %zu failed, %zu body bytes\n", done, failed,
          bytes);
  _exit(done == got.n ? 0 : 1);
}

/* ---- A run --------------------------------------------------------------- */

/* Runs argv with stderr into err (cap bytes); its wall time (seconds) and
 * peak RSS (MiB). 0, or -1 when it did not exit 0. */
static int run(char *const argv[], char *err, size_t cap, double *wall, double *rss)
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
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The requests got, into path: per request its method, target, header
 * lines and body, each as a length and its bytes. 0 or -1. */
static int save_requests(const char *path)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  for (size_t i = 0; i < got.n; i++) {
    const request *q = &got.r[i];
    size_t nh = 0;
    for (const struct curl_slist *h = q->headers; h; h = h->next)
      nh++;
    fprintf(f, "%zu %s\n%zu %s\n%zu\n", strlen(q->method), q->method, strlen(q->target),
            q->target, nh);
    for (const struct curl_slist *h = q->headers; h; h = h->next)
      fprintf(f, "%zu %s\n", strlen(h->data), h->data);
    fprintf(f, "%zu ", q->len);
    fwrite(q->body ? q->body : "", 1, q->len, f);
    fputc('\n', f);
  }
  return fclose(f) == 0 ? 0 : -1;
}

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

/* save_requests' file, into got. 0 or -1. */
static int load_requests(const char *path)
{
  FILE *f = fopen(path, "r");
  size_t len, nh;
  char *method;
  while (f && (method = read_field(f, &len)) != NULL) {
    request q = {.method = method};
    int ok = (q.target = read_field(f, &len)) != NULL && fscanf(f, "%zu\n", &nh) == 1;
    for (size_t k = 0; ok && k < nh; k++) {
      char *h = read_field(f, &len);
      struct curl_slist *more = h ? curl_slist_append(q.headers, h) : NULL;
      free(h);
      if ((ok = more != NULL))
        q.headers = more;
    }
    ok = ok && (q.body = read_field(f, &q.len)) != NULL;
    request *more = ok && got.n == got.cap
                        ? realloc(got.r, (got.cap = got.cap ? 2 * got.cap : 4096) * sizeof *more)
                        : got.r;
    if (!ok || !more) {
      fclose(f);
      return -1;
    }
    got.r = more;
    got.r[got.n++] = q;
  }
  return f && fclose(f) == 0 ? 0 : -1;
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
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (load_requests(argv[2]) != 0)
      return 1;
    curl_loop(argv[3], atol(argv[4]));
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
  int fd = srv ? mkstemp(list) : -1, fd2 = fd >= 0 ? mkstemp(saved) : -1;
  if (fd2 >= 0)
    close(fd2);
  if (fd < 0 || fd2 < 0) {
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
  char *args[] = {(char *)scan, "-t", (char *)dir, "-l", list, "-c", conc_s, "-o", "/dev/null",
                  NULL};
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
    forget_requests();
    int ran = run(args, err, sizeof err, &wall, &rss) == 0;
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
    size_t sent = got.n;
    ts_on_request(srv, NULL, NULL); /* curl's requests are not scan's */
    int saved_ok = !got.nomem && save_requests(saved) == 0;
    forget_requests();
    if (!saved_ok || run(replay, err, sizeof err, &c_req[r], &c_rss[r]) != 0) {
      fprintf(stderr, "bench-scan: curl's loop failed:\n%s\n", err);
      status = 1;
      break;
    }
    ts_on_request(srv, on_request, NULL);
    printf("%-4ld %8.2fs %11.2fs %10.0f %5.1f MiB | %11.2fs %10.0f %5.1f MiB | %6.2fx\n", r + 1,
           s_load[r], s_req[r], (double)requests / s_req[r], s_rss[r], c_req[r],
           (double)sent / c_req[r], c_rss[r], s_req[r] / c_req[r]);
    if (requests != sent)
      printf("     (scan counted %lu requests, the server got %zu: one that curl refused to "
             "send, or a redirect that curl followed, is counted on one side only)\n",
             requests, sent);
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
  forget_requests();
  free(got.r);
  ts_stop(srv);
  unlink(list);
  unlink(saved);
  curl_global_cleanup();
  return status;
}
