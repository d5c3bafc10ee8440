/* Scenario h2: the memory budget on HTTP/2 streams multiplexed over one TLS
 * connection to a real nginx (test/h2.h), under each overflow mode, every
 * run in a process of its own so that its peak resident set is its own.
 *
 * The parent starts nginx and, pass by pass, runs this program again as
 * "bench --h2-child MODE URL CAFILE COUNT CONC BUDGET" for each mode, in
 * table order on odd passes and in reverse order on even ones. The child
 * runs COUNT transfers of URL, CONC at once, on one curl multi handle driven
 * with rc_multi_poll, checks every body (status 200, RC_OK, its length and
 * four bytes against the server's pattern) and prints one line: its wall
 * time (first transfer added to last done), its peak resident set (VmHWM:
 * the child is a fresh process image, so this is its own), the connections
 * curl opened, the pool's spills, pauses and peak bytes in use, and curl's
 * version. Modes:
 *   none   no budget;
 *   auto   the budget, RC_OVERFLOW_AUTO (the default);
 *   spill  the budget, RC_OVERFLOW_SPILL: refused streams spill at once;
 *   wait   the budget, RC_OVERFLOW_WAIT: refused streams pause, no bound.
 * Reported per mode: the median wall, the median of the pass-by-pass ratio
 * to none, the median and largest peak RSS, against the targets of issue
 * 18: peak <= budget + one body + 40 MiB; wall <= 0.9x none on curl >= 8.10,
 * <= 1.05x on older curl. */
#include "bench.h"
#include "../h2.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct h2_mode {
  const char *name;
  bool budgeted;
  rc_overflow overflow;
} h2_mode;

static const h2_mode MODES[] = {
    {"none", false, RC_OVERFLOW_AUTO},
    {"auto", true, RC_OVERFLOW_AUTO},
    {"spill", true, RC_OVERFLOW_SPILL},
    {"wait", true, RC_OVERFLOW_WAIT},
};
#define NMODES (sizeof MODES / sizeof MODES[0])

typedef struct h2_run {
  bool ok;
  double wall;
  size_t hwm;
  long conns;
  unsigned long long spills, pauses;
  size_t pool_peak;
  char curl[32];
} h2_run;

static h2_run h2_runs[NMODES][8];
static int h2_passes;
static bool h2_ran, h2_failed;
static char h2_curl[32];
static const char *h2_why;

/* ---- The child. */

static size_t status_bytes(const char *key)
{
  FILE *f = fopen("/proc/self/status", "r");
  size_t kib = 0, n = strlen(key);
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0)
      kib = strtoul(line + n, NULL, 10);
  if (f)
    fclose(f);
  return kib * KiB;
}

typedef struct h2_slot {
  CURL *easy;
  rc_response *resp;
} h2_slot;

static bool body_ok(rc_response *r, CURL *e, CURLcode cc, size_t size)
{
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 || rc_result(r, cc) != RC_OK)
    return false;
  rc_view b = rc_body(r);
  if (b.len != size)
    return false;
  size_t probe[4] = {0, size - 1, size / 2, size / 3 + 7};
  for (int i = 0; i < 4; i++)
    if ((unsigned char)b.ptr[probe[i]] != ts_pattern_byte(probe[i]))
      return false;
  return true;
}

static void add(CURLM *multi, h2_slot *s, const char *url, const char *cafile)
{
  rc_attach(s->resp, s->easy);
  curl_easy_setopt(s->easy, CURLOPT_URL, url);
  curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
  curl_easy_setopt(s->easy, CURLOPT_CAINFO, cafile);
  curl_easy_setopt(s->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(s->easy, CURLOPT_PIPEWAIT, 1L);
  curl_multi_add_handle(multi, s->easy);
}

int h2_child_main(int argc, char **argv)
{
  if (argc != 8)
    return 2;
  const h2_mode *mode = NULL;
  for (size_t i = 0; i < NMODES; i++)
    if (strcmp(argv[2], MODES[i].name) == 0)
      mode = &MODES[i];
  const char *url = argv[3], *cafile = argv[4];
  long count = atol(argv[5]), conc = atol(argv[6]);
  size_t budget = strtoull(argv[7], NULL, 10), size = 0;
  if (!mode || count < 1 || conc < 1 || conc > count)
    return 2;
  size = strstr(url, "/p/8m") ? 8 * MiB : 1 * MiB;
  alarm((unsigned)opt_limit);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = mode->budgeted ? budget : 0;
  cfg.overflow = mode->overflow;
  rc_pool *pool;
  if (rc_pool_new(&cfg, &pool) != RC_OK)
    return 1;
  CURLM *multi = curl_multi_init();
  h2_slot *slots = calloc((size_t)conc, sizeof *slots);
  if (!multi || !slots)
    return 1;
  for (long i = 0; i < conc; i++) {
    slots[i].easy = curl_easy_init();
    if (!slots[i].easy || rc_response_new(pool, NULL, &slots[i].resp) != RC_OK)
      return 1;
  }
  double t0 = now_s();
  long started = 0, done = 0, bad = 0, conns = 0;
  for (; started < conc; started++)
    add(multi, &slots[started], url, cafile);
  int running = 1;
  while (done < count) {
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left))) {
      h2_slot *s;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
      long n = 0;
      curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &n);
      conns += n;
      if (!body_ok(s->resp, s->easy, m->data.result, size)) {
        if (bad++ == 0)
          fprintf(stderr, "h2 %s: a body failed its check: %s, %s\n", mode->name,
                  curl_easy_strerror(m->data.result),
                  rc_strerror(rc_result(s->resp, m->data.result)));
      }
      done++;
      curl_multi_remove_handle(multi, s->easy);
      rc_response_reset(s->resp);
      if (started < count) {
        started++;
        add(multi, s, url, cafile);
      }
    }
    if (done < count)
      rc_multi_poll(pool, multi, NULL, 0, 1000, NULL);
  }
  double wall = now_s() - t0;
  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  printf("%s %.4f %zu %ld %llu %llu %zu %s\n", bad ? "failed" : "ok", wall, status_bytes("VmHWM:"),
         conns, (unsigned long long)st.spills, (unsigned long long)st.pauses, st.peak_in_use,
         curl_version_info(CURLVERSION_NOW)->version);
  fflush(stdout);
  for (long i = 0; i < conc; i++) {
    curl_multi_remove_handle(multi, slots[i].easy);
    curl_easy_cleanup(slots[i].easy);
    rc_response_free(slots[i].resp);
  }
  free(slots);
  curl_multi_cleanup(multi);
  rc_pool_free(pool);
  curl_global_cleanup();
  return bad ? 1 : 0;
}

/* ---- The parent. */

/* Runs one child; false when it failed or said nothing. */
static bool run_h2_child(const scenario *sc, const h2_mode *m, const char *url, const char *cafile,
                         h2_run *out)
{
  char count[32], conc[32], budget[32];
  snprintf(count, sizeof count, "%zu", sc->count);
  snprintf(conc, sizeof conc, "%ld", sc->conc);
  snprintf(budget, sizeof budget, "%zu", opt_budget);
  int fd[2];
  if (pipe(fd) != 0)
    return false;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execl("/proc/self/exe", "bench", "--h2-child", m->name, url, cafile, count, conc, budget,
          (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char line[256] = "";
  FILE *f = fdopen(fd[0], "r");
  if (!f || !fgets(line, sizeof line, f))
    line[0] = '\0';
  if (f)
    fclose(f);
  int status;
  waitpid(pid, &status, 0);
  char word[16];
  memset(out, 0, sizeof *out);
  int n = sscanf(line, "%15s %lf %zu %ld %llu %llu %zu %31s", word, &out->wall, &out->hwm,
                 &out->conns, &out->spills, &out->pauses, &out->pool_peak, out->curl);
  out->ok = n == 8 && strcmp(word, "ok") == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out->ok;
}

const char *h2_absent(void)
{
  if (access("/usr/sbin/nginx", X_OK) != 0 && system("command -v nginx >/dev/null 2>&1") != 0)
    return "nginx is not installed";
  return NULL;
}

void run_h2(const scenario *sc)
{
  h2_server *h2 = h2_start();
  if (!h2) {
    h2_why = "nginx did not start";
    h2_failed = true;
    return;
  }
  char url[256];
  h2_url(h2, sc->size >= 8 * MiB ? "/p/8m" : "/p/1m", url, sizeof url);
  h2_ran = true;
  for (int pass = 0; pass < opt_runs; pass++) {
    for (size_t j = 0; j < NMODES; j++) {
      size_t i = pass % 2 ? NMODES - 1 - j : j;
      h2_run *r = &h2_runs[i][pass];
      fprintf(stderr, "h2: %-6s run %d/%d ... ", MODES[i].name, pass + 1, opt_runs);
      if (!run_h2_child(sc, &MODES[i], url, h2_cafile(h2), r)) {
        fprintf(stderr, "failed\n");
        h2_failed = true;
        continue;
      }
      snprintf(h2_curl, sizeof h2_curl, "%s", r->curl);
      fprintf(stderr, "%.2f s, peak RSS %.0f MiB, %ld connection(s), %llu spills, %llu pauses\n",
              r->wall, mib((double)r->hwm), r->conns, r->spills, r->pauses);
    }
    h2_passes = pass + 1;
  }
  h2_stop(h2);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* curl >= 8.10 (its stream windows follow the receive speed limit). */
static bool newer_curl(const char *version)
{
  int major = 0, minor = 0;
  sscanf(version, "%d.%d", &major, &minor);
  return major > 8 || (major == 8 && minor >= 10);
}

bool report_h2(FILE *f, const scenario *sc)
{
  if (!h2_ran && !h2_why)
    return true;
  fprintf(f,
          "\nHTTP/2 over TLS to nginx, %zu x %.0f MiB, %ld streams on one connection, "
          "%.0f MiB budget, curl %s (medians of %d pass(es), one process per run):\n",
          sc->count, mib((double)sc->size), sc->conc, mib((double)opt_budget), h2_curl, h2_passes);
  if (h2_why) {
    fprintf(f, "  not run: %s\n", h2_why);
    return false;
  }
  double rss_target = mib((double)(opt_budget + sc->size) + 40.0 * MiB);
  double wall_target = newer_curl(h2_curl) ? 0.9 : 1.05;
  fprintf(f, "| mode | wall | x none | peak RSS MiB (max) | connections | spills | pauses | "
             "target |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < NMODES; i++) {
    double wall[8], ratio[8], peak[8], max_rss = 0;
    int n = 0, nr = 0;
    long conns = 0;
    unsigned long long spills = 0, pauses = 0;
    for (int p = 0; p < h2_passes; p++) {
      const h2_run *r = &h2_runs[i][p], *none = &h2_runs[0][p];
      if (!r->ok)
        continue;
      wall[n] = r->wall;
      peak[n] = mib((double)r->hwm);
      if (peak[n] > max_rss)
        max_rss = peak[n];
      conns = r->conns > conns ? r->conns : conns;
      spills += r->spills;
      pauses += r->pauses;
      n++;
      if (none->ok)
        ratio[nr++] = r->wall / none->wall;
    }
    if (n == 0) {
      fprintf(f, "| %s | failed | | | | | | |\n", MODES[i].name);
      continue;
    }
    double w = median(wall, n), x = nr ? median(ratio, nr) : 0, m = median(peak, n);
    char target[96] = "";
    if (MODES[i].budgeted)
      snprintf(target, sizeof target, "RSS <= %.0f: %s; wall <= %.2fx: %s", rss_target,
               max_rss <= rss_target ? "met" : "missed", wall_target,
               x <= wall_target ? "met" : "missed");
    fprintf(f, "| %s | %.2f s | %.2f | %.0f (%.0f) | %ld | %llu | %llu | %s |\n", MODES[i].name, w,
            x, m, max_rss, conns, spills / (unsigned long long)n, pauses / (unsigned long long)n,
            target);
  }
  return !h2_failed;
}
