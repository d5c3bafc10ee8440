/* Scenario h2: the memory budget on HTTP/2 streams multiplexed over one TLS
 * connection to a real nginx (test/h2.h), under each overflow mode and
 * against curl alone, every run in a process of its own so that its peak
 * resident set is its own.
 *
 * The parent starts nginx and, pass by pass, runs this program again as
 * "bench --h2-child MODE URL CAFILE COUNT CONC BUDGET LIMIT" for each mode,
 * in table order on odd passes and in reverse order on even ones; a run
 * that passes LIMIT seconds (--limit) is stopped by SIGALRM and fails.
 * The child runs COUNT transfers of URL, CONC at once, on one curl multi
 * handle (HTTP/2 over TLS, CURLOPT_PIPEWAIT), checks every body and prints
 * one line: ok or failed, its wall time (first transfer added to last done),
 * its peak resident set (VmHWM: the child is a fresh process image, so
 * this is its own), the connections curl opened, the pool's spills, pauses
 * and peak bytes in use, the bodies that failed their check, and curl's
 * version. Modes:
 *   discard  curl alone, no respchain: a write callback that counts the
 *            bytes and keeps nothing, curl_multi_poll; each body is
 *            checked by its status (200), curl's result and its length;
 *   none     respchain without a budget (rc_attach, rc_multi_add,
 *            rc_multi_poll);
 *   auto     the budget, RC_OVERFLOW_AUTO (the default);
 *   spill    the budget, RC_OVERFLOW_SPILL: refused streams spill at once;
 *   wait     the budget, RC_OVERFLOW_WAIT: refused streams pause (or are
 *            kept back before their request, see rc_multi_add(3)).
 * respchain's bodies are checked by status 200, RC_OK, their length and
 * four bytes against the server's pattern.
 * Reported per mode: the median wall, the medians of the pass-by-pass
 * ratios to discard and to none, the median and largest peak RSS; for the
 * budgeted modes, against the targets of issue 24 on every curl version:
 * peak RSS <= budget + one body + 40 MiB (112 MiB at the 64 MiB default
 * budget), wall <= 1.25x discard, <= 1.10x on curl 8.14 and newer. With
 * --csv, a CSV row per mode as well (print_h2_csv). */
#include "bench.h"
#include "../h2.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct h2_mode {
  const char *name;
  bool respchain; /* false: curl alone (discard) */
  bool budgeted;
  rc_overflow overflow;
} h2_mode;

static const h2_mode MODES[] = {
    {"discard", false, false, RC_OVERFLOW_AUTO},
    {"none", true, false, RC_OVERFLOW_AUTO},
    {"auto", true, true, RC_OVERFLOW_AUTO},
    {"spill", true, true, RC_OVERFLOW_SPILL},
    {"wait", true, true, RC_OVERFLOW_WAIT},
};
#define NMODES (sizeof MODES / sizeof MODES[0])
enum { M_DISCARD, M_NONE }; /* the ratios' bases, indices in MODES */

typedef struct h2_run {
  bool ok;
  double wall;
  size_t hwm;
  long conns;
  unsigned long long spills, pauses;
  size_t pool_peak;
  long bad; /* bodies that failed their check */
  char curl[32];
  char why[80]; /* a failed run: how it ended */
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
  rc_response *resp; /* NULL in mode discard */
  size_t got;        /* discard: the body bytes received */
} h2_slot;

/* Mode discard's write callback: counts the bytes, keeps nothing. */
static size_t discard_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
  (void)ptr;
  ((h2_slot *)userdata)->got += size * nmemb;
  return size * nmemb;
}

static bool body_ok(const h2_slot *s, CURLcode cc, size_t size)
{
  long status = 0;
  curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    return false;
  if (!s->resp)
    return cc == CURLE_OK && s->got == size;
  if (rc_result(s->resp, cc) != RC_OK)
    return false;
  rc_view b = rc_body(s->resp);
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
  if (s->resp) {
    rc_attach(s->resp, s->easy);
  } else {
    s->got = 0;
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard_write);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
  }
  curl_easy_setopt(s->easy, CURLOPT_URL, url);
  curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
  curl_easy_setopt(s->easy, CURLOPT_CAINFO, cafile);
  curl_easy_setopt(s->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(s->easy, CURLOPT_PIPEWAIT, 1L);
  if (s->resp)
    rc_multi_add(s->resp, multi); /* maybe kept back before its request */
  else
    curl_multi_add_handle(multi, s->easy);
}

/* A finished transfer: counts its connections and, when its body fails its
 * check, *bad (saying why for the first), and frees its slot. */
static void finish(CURLM *multi, const h2_mode *mode, h2_slot *s, CURLcode cc, size_t size,
                   long *conns, long *bad)
{
  long n = 0;
  curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &n);
  *conns += n;
  if (!body_ok(s, cc, size) && (*bad)++ == 0)
    fprintf(stderr, "h2 %s: a body failed its check: %s%s%s\n", mode->name, curl_easy_strerror(cc),
            s->resp ? ", " : "", s->resp ? rc_strerror(rc_result(s->resp, cc)) : "");
  curl_multi_remove_handle(multi, s->easy);
  if (s->resp)
    rc_response_reset(s->resp);
}

int h2_child_main(int argc, char **argv)
{
  if (argc != 9)
    return 2;
  const h2_mode *mode = NULL;
  for (size_t i = 0; i < NMODES; i++)
    if (strcmp(argv[2], MODES[i].name) == 0)
      mode = &MODES[i];
  const char *url = argv[3], *cafile = argv[4];
  long count = atol(argv[5]), conc = atol(argv[6]);
  size_t budget = strtoull(argv[7], NULL, 10), size = 0;
  unsigned limit = (unsigned)atoi(argv[8]);
  if (!mode || count < 1 || conc < 1 || conc > count || limit < 1)
    return 2;
  size = strstr(url, "/p/8m") ? 8 * MiB : 1 * MiB;
  alarm(limit); /* SIGALRM ends a run that stalls */
  curl_global_init(CURL_GLOBAL_DEFAULT);
  rc_pool *pool = NULL; /* none in mode discard */
  if (mode->respchain) {
    rc_pool_config cfg;
    rc_pool_config_init(&cfg);
    cfg.budget = mode->budgeted ? budget : 0;
    cfg.overflow = mode->overflow;
    if (rc_pool_new(&cfg, &pool) != RC_OK)
      return 1;
  }
  CURLM *multi = curl_multi_init();
  h2_slot *slots = calloc((size_t)conc, sizeof *slots);
  if (!multi || !slots)
    return 1;
  for (long i = 0; i < conc; i++) {
    slots[i].easy = curl_easy_init();
    if (!slots[i].easy || (pool && rc_response_new(pool, NULL, &slots[i].resp) != RC_OK))
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
      finish(multi, mode, s, m->data.result, size, &conns, &bad);
      done++;
      if (started < count) {
        started++;
        add(multi, s, url, cafile);
      }
    }
    if (done < count && pool)
      rc_multi_poll(pool, multi, NULL, 0, 1000, NULL);
    else if (done < count)
      curl_multi_poll(multi, NULL, 0, 1000, NULL);
  }
  double wall = now_s() - t0;
  rc_pool_stats st;
  memset(&st, 0, sizeof st);
  if (pool)
    rc_pool_stats_get(pool, &st);
  printf("%s %.4f %zu %ld %llu %llu %zu %ld %s\n", bad ? "failed" : "ok", wall,
         status_bytes("VmHWM:"), conns, (unsigned long long)st.spills,
         (unsigned long long)st.pauses, st.peak_in_use, bad,
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
  char count[32], conc[32], budget[32], limit[32];
  snprintf(count, sizeof count, "%zu", sc->count);
  snprintf(conc, sizeof conc, "%ld", sc->conc);
  snprintf(budget, sizeof budget, "%zu", opt_budget);
  snprintf(limit, sizeof limit, "%.0f", opt_limit < 1 ? 1 : opt_limit);
  memset(out, 0, sizeof *out);
  double t0 = now_s();
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
    execl("/proc/self/exe", "bench", "--h2-child", m->name, url, cafile, count, conc, budget, limit,
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
  double took = now_s() - t0;
  char word[16];
  int n = sscanf(line, "%15s %lf %zu %ld %llu %llu %zu %ld %31s", word, &out->wall, &out->hwm,
                 &out->conns, &out->spills, &out->pauses, &out->pool_peak, &out->bad, out->curl);
  out->ok = n == 9 && strcmp(word, "ok") == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (out->ok)
    return true;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    snprintf(out->why, sizeof out->why, "stopped at the %s s limit (--limit)", limit);
  else if (WIFSIGNALED(status))
    snprintf(out->why, sizeof out->why, "killed by signal %d after %.1f s", WTERMSIG(status), took);
  else if (n == 9 && out->bad)
    snprintf(out->why, sizeof out->why, "%ld bodies failed their check", out->bad);
  else
    snprintf(out->why, sizeof out->why, "exit status %d after %.1f s, no result",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, took);
  return false;
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
      fprintf(stderr, "h2: %-7s run %d/%d ... ", MODES[i].name, pass + 1, opt_runs);
      if (!run_h2_child(sc, &MODES[i], url, h2_cafile(h2), r)) {
        fprintf(stderr, "failed: %s\n", r->why);
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

/* One mode over the passes: medians, the largest peak, the targets. */
typedef struct h2_sum {
  int n;                             /* runs that passed */
  double wall, x_discard, x_none;    /* medians; x_*: NAN without a base run */
  double peak, peak_max;             /* MiB */
  long conns;                        /* the most in one run */
  unsigned long long spills, pauses; /* per run */
  size_t pool_peak;                  /* the largest */
  long bad;                          /* failed bodies, over every run */
  const char *why;                   /* how the first failed run ended */
  bool targeted;                     /* the budgeted modes */
  bool rss_met, wall_met;
} h2_sum;

/* curl >= 8.14 has the tighter wall target. */
static bool newer_curl(const char *version)
{
  int major = 0, minor = 0;
  sscanf(version, "%d.%d", &major, &minor);
  return major > 8 || (major == 8 && minor >= 14);
}

static double rss_target(const scenario *sc)
{
  return mib((double)(opt_budget + sc->size) + 40.0 * MiB);
}

static double wall_target(void) { return newer_curl(h2_curl) ? 1.10 : 1.25; }

/* The median over the passes of mode i's wall over mode base's in the same
 * pass (NAN: no pass where both ran). */
static double pass_ratio(size_t i, size_t base)
{
  double v[8];
  int n = 0;
  for (int p = 0; p < h2_passes; p++)
    if (h2_runs[i][p].ok && h2_runs[base][p].ok)
      v[n++] = h2_runs[i][p].wall / h2_runs[base][p].wall;
  return median(v, n);
}

static h2_sum summarize(const scenario *sc, size_t i)
{
  h2_sum u;
  memset(&u, 0, sizeof u);
  double wall[8], peak[8];
  for (int p = 0; p < h2_passes; p++) {
    const h2_run *r = &h2_runs[i][p];
    u.bad += r->bad;
    if (!r->ok && !u.why)
      u.why = r->why;
    if (!r->ok)
      continue;
    wall[u.n] = r->wall;
    peak[u.n] = mib((double)r->hwm);
    u.peak_max = peak[u.n] > u.peak_max ? peak[u.n] : u.peak_max;
    u.conns = r->conns > u.conns ? r->conns : u.conns;
    u.pool_peak = r->pool_peak > u.pool_peak ? r->pool_peak : u.pool_peak;
    u.spills += r->spills;
    u.pauses += r->pauses;
    u.n++;
  }
  if (u.n == 0)
    return u;
  u.spills /= (unsigned long long)u.n;
  u.pauses /= (unsigned long long)u.n;
  u.wall = median(wall, u.n);
  u.peak = median(peak, u.n);
  u.x_discard = pass_ratio(i, M_DISCARD);
  u.x_none = pass_ratio(i, M_NONE);
  u.targeted = MODES[i].budgeted;
  u.rss_met = u.peak_max <= rss_target(sc);
  u.wall_met = !isnan(u.x_discard) && u.x_discard <= wall_target();
  return u;
}

/* A ratio, or "-" without its base run. */
static const char *times(char *out, size_t n, double x)
{
  if (isnan(x))
    snprintf(out, n, "-");
  else
    snprintf(out, n, "%.2f", x);
  return out;
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
  fprintf(f, "| mode | wall | x discard | x none | peak RSS MiB (max) | connections | spills | "
             "pauses | target |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < NMODES; i++) {
    h2_sum u = summarize(sc, i);
    if (u.n == 0) {
      fprintf(f, "| %s | failed | | | | | | | |\n", MODES[i].name);
      continue;
    }
    char target[96] = "", xd[16], xn[16];
    if (u.targeted)
      snprintf(target, sizeof target, "RSS <= %.0f: %s; wall <= %.2fx: %s", rss_target(sc),
               u.rss_met ? "met" : "missed", wall_target(), u.wall_met ? "met" : "missed");
    fprintf(f, "| %s | %.2f s | %s | %s | %.0f (%.0f) | %ld | %llu | %llu | %s |\n", MODES[i].name,
            u.wall, times(xd, sizeof xd, u.x_discard), times(xn, sizeof xn, u.x_none), u.peak,
            u.peak_max, u.conns, u.spills, u.pauses, target);
  }
  for (size_t i = 0; i < NMODES; i++)
    for (int p = 0; p < h2_passes; p++)
      if (!h2_runs[i][p].ok)
        fprintf(f, "  %s, pass %d: failed: %s\n", MODES[i].name, p + 1, h2_runs[i][p].why);
  fprintf(f, "  targets (issue 24, budgeted modes): peak RSS <= budget + one body + 40 MiB; "
             "wall <= 1.25x discard, <= 1.10x on curl 8.14 and newer\n");
  return !h2_failed;
}

void print_h2_csv(const scenario *sc)
{
  if (!h2_ran)
    return;
  for (size_t i = 0; i < NMODES; i++) {
    h2_sum u = summarize(sc, i);
    int failed_runs = h2_passes - u.n;
    const char *target = !u.targeted               ? ""
                         : u.rss_met && u.wall_met ? "met"
                         : u.wall_met              ? "missed rss"
                         : u.rss_met               ? "missed wall"
                                                   : "missed rss wall";
    if (u.n == 0) { /* every run failed: no measures */
      printf("h2,%s,0,%ld,0", MODES[i].name, u.bad);
      for (int c = 5; c < 44; c++)
        putchar(',');
      printf(",curl %s; FAILED %d run(s): %s\n", h2_curl, failed_runs, u.why);
      continue;
    }
    char rss_cell[16] = "", wall_cell[16] = "";
    if (u.targeted) {
      snprintf(rss_cell, sizeof rss_cell, "%.0f", rss_target(sc));
      snprintf(wall_cell, sizeof wall_cell, "%.2f", wall_target());
    }
    /* In print_csv_header's columns: what a run of h2 does not measure is
     * left empty; wall_vs_floor is the ratio to discard. */
    printf("h2,%s,%zu,%ld,%llu,%.4f,%.4f,,,,,,,,,%.1f,,,,,,,,,,,,,,,%llu,%.1f,,,,%llu,,,%.1f,%ld,"
           "%.4f,%s,%s,%s,",
           MODES[i].name, (size_t)u.n * sc->count, u.bad,
           (unsigned long long)u.n * sc->count * sc->size, u.wall, u.x_discard, u.peak, u.pauses,
           mib((double)u.pool_peak), u.spills, u.peak_max, u.conns, u.x_none, rss_cell, wall_cell,
           target);
    printf("curl %s; %d pass(es)", h2_curl, h2_passes);
    if (failed_runs)
      printf("; FAILED %d run(s): %s", failed_runs, u.why);
    printf("\n");
  }
  fflush(stdout);
}
