/* Reporting: one table per scenario (or CSV rows), then the targets the
 * issues set, each met or missed. */
#include "bench.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

bool opt_csv;
int opt_runs = 2;
tally results[NSCEN][NCONT];
bool scen_on[NSCEN], cont_on[NCONT];

double per_req(double v, const tally *t) { return t->done ? v / (double)t->done : NAN; }

double ratio(double a, double b) { return b > 0 && !isnan(a) && !isnan(b) ? a / b : NAN; }

double signed_mib(size_t a, size_t b) { return mib((double)a - (double)b); }

/* v with prec decimals and a suffix; "-" when there is no value. */
static void num(char *out, size_t n, double v, int prec, const char *suffix)
{
  if (isnan(v) || isinf(v))
    snprintf(out, n, "-");
  else
    snprintf(out, n, "%.*f%s", prec, v, suffix);
}

#define NCOL 22
#define CELL 160
static const char *const COLS[NCOL] = {
    "contender", "reqs",       "MiB",        "wall s",    NULL /* idle N s MiB */,
    "/floor",    "/1copy",     "cpu s",      "/floor",    "/1copy",
    "drv cpu",   "faults/MiB", "peakΔ MiB",  "peak MiB",  "alloc/B",
    "warm/B",    "copy/B",     "pooled MiB", "keptΔ MiB", "trimΔ MiB",
    "spread",    "notes"};
static const char *const CSV_COLS[] = {"scenario",
                                       "contender",
                                       "requests",
                                       "failed",
                                       "body_bytes",
                                       "wall_s",
                                       "wall_vs_floor",
                                       "wall_vs_onecopy",
                                       "cpu_s",
                                       "cpu_vs_floor",
                                       "cpu_vs_onecopy",
                                       "driver_cpu_s",
                                       "driver_faults",
                                       "rss_start_mib",
                                       "peak_delta_mib",
                                       "peak_mib",
                                       "alloc_per_byte",
                                       "alloc_per_byte_warm",
                                       "copy_per_byte",
                                       "memcpy_bytes",
                                       "realloc_moved_bytes",
                                       "realloc_remaps",
                                       "alloc_calls",
                                       "idle_mib",
                                       "retained_delta_mib",
                                       "trimmed_delta_mib",
                                       "wall_spread",
                                       "pool_fresh",
                                       "pool_reuses",
                                       "pool_discards",
                                       "pool_pauses",
                                       "pool_peak_in_use_mib",
                                       "idle_wait_s",
                                       "idle_wait_delta_mib",
                                       "peak_anon_delta_mib",
                                       "pool_spills",
                                       "pool_wakeups",
                                       "verified_full",
                                       "peak_max_mib",
                                       "connections",
                                       "wall_vs_none",
                                       "target_rss_mib",
                                       "target_wall_x",
                                       "target",
                                       "notes"};

/* Appends to out (n bytes) at *at, as snprintf would; what does not fit is
 * left out. */
__attribute__((format(printf, 4, 5))) static void note(char *out, size_t n, size_t *at,
                                                       const char *fmt, ...)
{
  if (*at + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(out + *at, n - *at, fmt, ap);
  va_end(ap);
  if (w > 0)
    *at = *at + (size_t)w < n - 1 ? *at + (size_t)w : n - 1;
}

static void notes_of(const tally *t, char *out, size_t n)
{
  size_t at = 0;
  out[0] = '\0';
  if (t->child)
    note(out, n, &at, "child process, %zu JSON lines; ", t->lines);
  if (t->child && t->engine[0])
    note(out, n, &at, "%zu verdicts right, %zu stopped; ", t->verdicts_ok, t->stopped_lines);
  if (t->failed)
    note(out, n, &at, "FAILED %zu; ", t->failed);
  if (t->failed_all > t->failed)
    note(out, n, &at, "FAILED %zu in other runs; ", t->failed_all - t->failed);
  if (t->stopped)
    note(out, n, &at, "STOPPED at the %.0f s limit, %zu dropped; ", opt_limit, t->dropped);
  if (t->has_pool)
    note(out, n, &at,
         "fresh %" PRIu64 " reuse %" PRIu64 " discard %" PRIu64 " pause %" PRIu64
         " inuse-peak %.0fM; ",
         t->ps.fresh, t->ps.reuses, t->ps.discards, t->ps.pauses, mib((double)t->ps.peak_in_use));
  if (t->ps.spills || t->ps.wakeups)
    note(out, n, &at, "spill %" PRIu64 " wake %" PRIu64 "; ", t->ps.spills, t->ps.wakeups);
  if (t->verified_full)
    note(out, n, &at, "%zu byte-exact; ", t->verified_full);
  if (t->cnt.moved_bytes || t->cnt.remaps)
    note(out, n, &at, "realloc moved %.0fM, remaps %" PRIu64 "; ", mib((double)t->cnt.moved_bytes),
         t->cnt.remaps);
  if (at >= 2 && at + 1 < n)
    out[at - 2] = '\0'; /* the last "; " */
}

static double spread_of(const tally *t)
{
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < t->runs; i++) {
    lo = t->wall_runs[i] < lo ? t->wall_runs[i] : lo;
    hi = t->wall_runs[i] > hi ? t->wall_runs[i] : hi;
  }
  return t->runs > 1 ? (hi - lo) / lo : NAN;
}

static const tally *ran(size_t si, int k) { return results[si][k].ran ? &results[si][k] : NULL; }

static double warm_per_byte(const tally *t)
{
  return t->warm_marked ? ratio((double)(t->cnt.alloc_bytes - t->warm_alloc0),
                                (double)(t->body_bytes - t->warm_body0))
                        : NAN;
}

/* The cells of one contender's row. */
static void fill_row(size_t si, int k, char (*row)[CELL])
{
  const tally *t = &results[si][k], *fl = ran(si, K_DISCARD), *oc = ran(si, K_ONECOPY);
  double wr = per_req(t->wall, t), cr = per_req(t->cpu, t);
  double bb = (double)t->body_bytes;
  double in_proc = t->child ? NAN : 1; /* what a child process is not measured by: "-" */
  int c = 0;
  snprintf(row[c++], CELL, "%s", CONTENDERS[k].name);
  snprintf(row[c++], CELL, "%zu", t->done);
  num(row[c++], CELL, mib(bb), 1, "");
  num(row[c++], CELL, t->wall, 2, "");
  num(row[c++], CELL, in_proc * signed_mib(t->rss_idle, t->rss0), 0, "");
  num(row[c++], CELL, fl ? ratio(wr, per_req(fl->wall, fl)) : NAN, 2, "");
  num(row[c++], CELL, oc ? ratio(wr, per_req(oc->wall, oc)) : NAN, 2, "");
  num(row[c++], CELL, t->cpu, 2, "");
  num(row[c++], CELL, fl ? ratio(cr, per_req(fl->cpu, fl)) : NAN, 2, "");
  num(row[c++], CELL, oc ? ratio(cr, per_req(oc->cpu, oc)) : NAN, 2, "");
  num(row[c++], CELL, t->cpu_drv, 2, "");
  num(row[c++], CELL, ratio((double)t->faults_drv, mib(bb)), 0, "");
  num(row[c++], CELL, in_proc * signed_mib(t->peak, t->rss0), 0, "");
  num(row[c++], CELL, mib((double)(t->child ? t->child_peak : t->peak)), 0, "");
  num(row[c++], CELL, in_proc * ratio((double)t->cnt.alloc_bytes, bb), 3, "");
  num(row[c++], CELL, in_proc * warm_per_byte(t), 3, "");
  num(row[c++], CELL, in_proc * ratio((double)(t->copy_bytes + t->cnt.moved_bytes), bb), 2, "");
  num(row[c++], CELL, in_proc * mib((double)t->idle), 0, "");
  num(row[c++], CELL, in_proc * signed_mib(t->rss_end, t->rss0), 0, "");
  num(row[c++], CELL, in_proc * signed_mib(t->rss_trim, t->rss0), 0, "");
  num(row[c++], CELL, spread_of(t) * 100, 0, "%");
  notes_of(t, row[c], CELL);
}

/* A size as "N KiB" or "N MiB". */
static void size_text(char *out, size_t n, size_t v)
{
  if (v >= MiB)
    snprintf(out, n, "%.3g MiB", mib((double)v));
  else
    snprintf(out, n, "%.3g KiB", (double)v / (double)KiB);
}

static void print_title(const scenario *sc)
{
  char title[256];
  if (sc->seconds > 0)
    snprintf(title, sizeof title, "%s: %s; %.1f s at %ld concurrent", sc->name, sc->what,
             sc->seconds, sc->conc);
  else if (sc->size) {
    char size[32];
    size_text(size, sizeof size, sc->size);
    snprintf(title, sizeof title, "%s: %s; %zu x %s at %ld concurrent", sc->name, sc->what,
             sc->count, size, sc->conc);
  } else
    snprintf(title, sizeof title, "%s: %s; %zu requests at %ld concurrent", sc->name, sc->what,
             sc->count, sc->conc);
  printf("\n== %s%s", title,
         sc->max_large ? " (respchain pools keep that many large buffers)" : "");
  if (sc->cap)
    printf(" (cap %.3g MiB)", mib((double)sc->cap));
  if (scenario_runs(sc, K_RCS))
    printf(" (rc-spill: max_memory %.3g MiB)", mib((double)opt_spill_memory));
  if (sc->child)
    printf(" (scan: %s)", child_program());
  printf(" ==\n");
}

/* Display width: UTF-8 characters, not bytes. */
static int width_of(const char *s)
{
  int w = 0;
  for (const char *p = s; *p; p++)
    w += ((unsigned char)*p & 0xC0) != 0x80;
  return w;
}

static void print_cells(char (*cells)[NCOL][CELL], int rows)
{
  int width[NCOL] = {0};
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < NCOL; c++) {
      int w = width_of(cells[r][c]);
      width[c] = w > width[c] ? w : width[c];
    }
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < NCOL; c++) {
      int pad = width[c] - width_of(cells[r][c]);
      bool left = c == 0 || c == NCOL - 1;
      if (left)
        printf("%s%*s", cells[r][c], c == NCOL - 1 ? 0 : pad, "");
      else
        printf("%*s%s", pad, "", cells[r][c]);
      printf(c == NCOL - 1 ? "\n" : "  ");
    }
  }
}

void print_scenario(size_t si)
{
  static char cells[NCONT + 1][NCOL][CELL];
  for (int c = 0; c < NCOL; c++)
    if (COLS[c])
      snprintf(cells[0][c], CELL, "%s", COLS[c]);
    else
      snprintf(cells[0][c], CELL, "idle %g s MiB", opt_idle);
  int rows = 1;
  for (int k = 0; k < NCONT; k++)
    if (results[si][k].ran)
      fill_row(si, k, cells[rows++]);
  print_title(&SCENARIOS[si]);
  print_cells(cells, rows);
  fflush(stdout);
}

void print_csv_header(void)
{
  for (size_t i = 0; i < sizeof CSV_COLS / sizeof CSV_COLS[0]; i++)
    printf("%s%s", i ? "," : "", CSV_COLS[i]);
  printf("\n");
}

/* The columns added with retention and spilling, before the notes. */
static void print_csv_tail(const tally *t)
{
  printf(",%.2f,%.1f,%.1f,%" PRIu64 ",%" PRIu64 ",%zu", opt_idle, signed_mib(t->rss_idle, t->rss0),
         signed_mib(t->peak_anon, t->anon0), t->ps.spills, t->ps.wakeups, t->verified_full);
}

/* The end of a row: the columns of scenario h2 (multiplex.c), empty, then
 * the notes. */
static void print_csv_end(const char *notes) { printf(",,,,,,,%s\n", notes); }

/* A child process's row: what it is not measured by is left empty. */
static void print_csv_child(size_t si, int k, const char *notes)
{
  const tally *t = &results[si][k], *fl = ran(si, K_DISCARD), *oc = ran(si, K_ONECOPY);
  double wr = per_req(t->wall, t), cr = per_req(t->cpu, t);
  printf("%s,%s,%zu,%zu,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%ld,,,%.1f,,,,,,,,,,,%.4f,",
         SCENARIOS[si].name, CONTENDERS[k].name, t->done, t->failed, t->body_bytes, t->wall,
         fl ? ratio(wr, per_req(fl->wall, fl)) : NAN, oc ? ratio(wr, per_req(oc->wall, oc)) : NAN,
         t->cpu, fl ? ratio(cr, per_req(fl->cpu, fl)) : NAN,
         oc ? ratio(cr, per_req(oc->cpu, oc)) : NAN, t->cpu_drv, t->faults_drv,
         mib((double)t->child_peak), spread_of(t));
  if (t->has_pool)
    printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,,,,%" PRIu64 ",,", t->ps.fresh,
           t->ps.reuses, t->ps.discards, t->ps.pauses, mib((double)t->ps.peak_in_use),
           t->ps.spills);
  else
    printf(",,,,,,,,,,");
  print_csv_end(notes);
}

void print_csv(size_t si)
{
  const tally *fl = ran(si, K_DISCARD), *oc = ran(si, K_ONECOPY);
  for (int k = 0; k < NCONT; k++) {
    const tally *t = &results[si][k];
    if (!t->ran)
      continue;
    double wr = per_req(t->wall, t), cr = per_req(t->cpu, t), bb = (double)t->body_bytes;
    char notes[256];
    notes_of(t, notes, sizeof notes);
    for (char *p = notes; *p; p++)
      if (*p == ',')
        *p = ';';
    if (t->child) {
      print_csv_child(si, k, notes);
      continue;
    }
    printf("%s,%s,%zu,%zu,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%ld,"
           "%.1f,%.1f,%.1f,%.4f,%.4f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
           ",%.1f,%.1f,%.1f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f",
           SCENARIOS[si].name, CONTENDERS[k].name, t->done, t->failed, t->body_bytes, t->wall,
           fl ? ratio(wr, per_req(fl->wall, fl)) : NAN, oc ? ratio(wr, per_req(oc->wall, oc)) : NAN,
           t->cpu, fl ? ratio(cr, per_req(fl->cpu, fl)) : NAN,
           oc ? ratio(cr, per_req(oc->cpu, oc)) : NAN, t->cpu_drv, t->faults_drv,
           mib((double)t->rss0), signed_mib(t->peak, t->rss0), mib((double)t->peak),
           ratio((double)t->cnt.alloc_bytes, bb), warm_per_byte(t),
           ratio((double)(t->copy_bytes + t->cnt.moved_bytes), bb), t->copy_bytes,
           t->cnt.moved_bytes, t->cnt.remaps, t->cnt.alloc_calls, mib((double)t->idle),
           signed_mib(t->rss_end, t->rss0), signed_mib(t->rss_trim, t->rss0), spread_of(t),
           t->ps.fresh, t->ps.reuses, t->ps.discards, t->ps.pauses, mib((double)t->ps.peak_in_use));
    print_csv_tail(t);
    print_csv_end(notes);
  }
  fflush(stdout);
}

/* ---- Targets --------------------------------------------------------------- */

static void target(FILE *f, const char *what, double got, double limit, const char *unit)
{
  if (isnan(got))
    return;
  fprintf(f, "  %-58s %8.2f%s  target <= %.2f%s  %s\n", what, got, unit, limit, unit,
          got <= limit ? "met" : "MISSED");
}

/* The same for a value that must reach limit. */
static void target_min(FILE *f, const char *what, double got, double limit, const char *unit)
{
  if (isnan(got))
    return;
  fprintf(f, "  %-58s %8.2f%s  target >= %.2f%s  %s\n", what, got, unit, limit, unit,
          got >= limit ? "met" : "MISSED");
}

static const tally *res(const char *scen, int k)
{
  int si = scen_index(scen);
  return si >= 0 && results[si][k].ran && results[si][k].done ? &results[si][k] : NULL;
}

/* Resident memory opt_idle seconds after the burst, every contender. */
static void report_burst_idle(FILE *f)
{
  bool any = false;
  for (int k = 0; k < NCONT; k++) {
    const tally *t = res("burst", k);
    if (!t)
      continue;
    if (!any)
      fprintf(f, "  burst: RSS above start %g s after it, contender alive, MiB:", opt_idle);
    fprintf(f, "%s %s %.0f", any ? "," : "", CONTENDERS[k].name, signed_mib(t->rss_idle, t->rss0));
    any = true;
  }
  if (any)
    fprintf(f, "\n");
}

static void report_burst(FILE *f)
{
  const tally *fl = res("burst", K_DISCARD), *oc = res("burst", K_ONECOPY),
              *rc = res("burst", K_RC), *gim = res("burst", K_GIM);
  const scenario *b = &SCENARIOS[scen_index("burst")];
  if (fl && oc)
    fprintf(f, "  context: burst wall vs the floor: one-copy %.2fx, getinmemory %.2fx\n",
            ratio(per_req(oc->wall, oc), per_req(fl->wall, fl)),
            gim ? ratio(per_req(gim->wall, gim), per_req(fl->wall, fl)) : NAN);
  if (rc && oc)
    target(f, "burst: wall vs the one-copy limit",
           ratio(per_req(rc->wall, rc), per_req(oc->wall, oc)), 1.10, "x");
  if (rc) {
    size_t cap = scenario_cap(b);
    double held = (double)b->conc * (double)(b->size < cap ? b->size : cap);
    char what[96];
    snprintf(what, sizeof what, "burst: peak RSS above start, MiB (1.05 x %.0f + 32)", mib(held));
    target(f, what, signed_mib(rc->peak, rc->rss0), mib(1.05 * held) + 32, "");
    target(f, "burst: bytes allocated per body byte, pool warm", warm_per_byte(rc), 0.10, "");
    target(f, "burst: bytes allocated per body byte, whole burst (info)",
           ratio((double)rc->cnt.alloc_bytes, (double)rc->body_bytes), 0.10, "");
  }
  report_burst_idle(f);
}

static void report_budget(FILE *f)
{
  const tally *rc = res("burst", K_RC), *rcb = res("burst", K_RCB);
  if (!rcb)
    return;
  char what[96];
  snprintf(what, sizeof what, "budgeted burst: peak RSS above start, MiB (%.0f + 8)",
           mib((double)opt_budget));
  target(f, what, signed_mib(rcb->peak, rcb->rss0), mib((double)opt_budget) + 8, "");
  if (rc)
    target(f, "budgeted burst: wall vs unbudgeted (>= 0.7x throughput)",
           ratio(per_req(rcb->wall, rcb), per_req(rc->wall, rc)), 1 / 0.7, "x");
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median(double *v, int n)
{
  if (n < 1)
    return NAN;
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* rc-spill over respchain, wall per request, pass by pass (both ran in
 * every pass, in alternating order). */
static void report_pass_ratios(FILE *f, const tally *rc, const tally *rs)
{
  double r[8];
  int n = rc->runs < rs->runs ? rc->runs : rs->runs;
  for (int i = 0; i < n; i++)
    r[i] = ratio(rs->wall_runs[i], rc->wall_runs[i]);
  if (n < 2)
    return;
  fprintf(f, "  large: rc-spill/respchain wall, pass by pass:");
  for (int i = 0; i < n; i++)
    fprintf(f, " %.3f", r[i]);
  qsort(r, (size_t)n, sizeof r[0], cmp_double);
  fprintf(f, " (min %.3f, median %.3f, max %.3f)\n", r[0],
          n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2, r[n - 1]);
}

/* Bodies larger than max_memory: spilled against kept in memory. */
static void report_large(FILE *f)
{
  const tally *rc = res("large", K_RC), *rs = res("large", K_RCS);
  const scenario *sc = &SCENARIOS[scen_index("large")];
  if (!rs)
    return;
  if (rc) {
    target(f, "large: rc-spill wall vs respchain in memory",
           ratio(per_req(rs->wall, rs), per_req(rc->wall, rc)), 1.10, "x");
    report_pass_ratios(f, rc, rs);
  }
  char what[96];
  double bound = (double)sc->conc * (double)(opt_spill_memory + 4 * KiB);
  snprintf(what, sizeof what, "large: rc-spill pool peak in use, MiB (%ld x (%.3g MiB + 4 KiB))",
           sc->conc, mib((double)opt_spill_memory));
  target(f, what, mib((double)rs->ps.peak_in_use), mib(bound), "");
  fprintf(f,
          "  large: rc-spill: %" PRIu64 " spills for %zu bodies, %zu compared byte for "
          "byte; peak RSS above start %.0f MiB (anonymous %.0f)",
          rs->ps.spills, rs->done, rs->verified_full, signed_mib(rs->peak, rs->rss0),
          signed_mib(rs->peak_anon, rs->anon0));
  if (rc)
    fprintf(f, "; respchain: %.0f MiB (anonymous %.0f), pool peak in use %.0f MiB",
            signed_mib(rc->peak, rc->rss0), signed_mib(rc->peak_anon, rc->anon0),
            mib((double)rc->ps.peak_in_use));
  fprintf(f, "\n");
}

/* ---- The scan program beside the driver ---------------------------------- */

/* One scan-* scenario: the program against the in-process contender that
 * ran beside it, wall per request pass by pass (both ran in every pass, in
 * alternating order), medians over the passes. */
static void report_scan_one(FILE *f, size_t si)
{
  const scenario *sc = &SCENARIOS[si];
  int kd = 0;
  while (kd < K_SCAN && !(scenario_runs(sc, kd) && ran(si, kd)))
    kd++;
  const tally *sp = ran(si, K_SCAN), *dr = kd < K_SCAN ? ran(si, kd) : NULL;
  if (!sp || !dr)
    return;
  double r[8], ws[8], wd[8];
  int n = sp->runs < dr->runs ? sp->runs : dr->runs;
  for (int i = 0; i < n; i++) {
    r[i] = ratio(sp->wall_runs[i], dr->wall_runs[i]);
    ws[i] = sp->wall_runs[i];
    wd[i] = dr->wall_runs[i];
  }
  char size[32];
  size_text(size, sizeof size, sc->size);
  fprintf(f, "  %s, %zu x %s at %ld:", sc->name, sc->count, size, sc->conc);
  if (!sp->done || !dr->done) {
    fprintf(f, " FAILED: %zu of %zu done by scan (%zu JSON lines), %zu by %s\n", sp->done,
            sc->count, sp->lines, dr->done, CONTENDERS[kd].name);
    return;
  }
  fprintf(f, " scan/%s wall per request, pass by pass:", CONTENDERS[kd].name);
  for (int i = 0; i < n; i++)
    fprintf(f, " %.2f", r[i]);
  double mr = median(r, n), ms = median(ws, n), md = median(wd, n);
  fprintf(f, "; median %.2fx\n", mr);
  fprintf(f,
          "    medians over %d pass(es): %s %.2f s (%.0f requests/s), scan %.2f s (%.0f "
          "requests/s); scan/%s requests/s %.3f\n",
          n, CONTENDERS[kd].name, md * (double)sc->count, 1 / md, ms * (double)sc->count, 1 / ms,
          CONTENDERS[kd].name, ratio(1 / ms, 1 / md));
  fprintf(f,
          "    scan (best pass): %zu/%zu JSON lines right (%zu written), peak RSS %.0f MiB (whole "
          "process); %s: peak RSS %+.0f MiB above its start",
          sp->done, sc->count, sp->lines, mib((double)sp->child_peak), CONTENDERS[kd].name,
          signed_mib(dr->peak, dr->rss0));
  if (!sp->has_pool)
    fprintf(f, "; no pool summary from scan");
  else if (dr->has_pool)
    fprintf(f, "; pool discards: scan %" PRIu64 ", %s %" PRIu64, sp->ps.discards,
            CONTENDERS[kd].name, dr->ps.discards);
  else
    fprintf(f, "; pool discards: scan %" PRIu64, sp->ps.discards);
  fprintf(f, "%s\n", sp->failed ? "; FAILED" : "");
}

void report_scan(FILE *f)
{
  bool any = false;
  for (size_t si = 0; si < NSCEN; si++)
    any |= SCENARIOS[si].child && !SCENARIOS[si].match && ran(si, K_SCAN);
  if (!any)
    return;
  fprintf(f, "\nThe scan program as a whole process beside the in-process loop (%s):\n",
          child_program());
  for (size_t si = 0; si < NSCEN; si++)
    if (SCENARIOS[si].child && !SCENARIOS[si].match)
      report_scan_one(f, si);
}

void report_targets(FILE *f)
{
  fprintf(f, "\nTargets (respchain = the default-settings contender):\n");
  report_burst(f);
  const char *small[] = {"small", "rapid"};
  for (int i = 0; i < 2; i++) {
    const tally *sfl = res(small[i], K_DISCARD), *src = res(small[i], K_RC);
    char what[96];
    snprintf(what, sizeof what, "%s: wall vs the floor", small[i]);
    if (sfl && src)
      target(f, what, ratio(per_req(src->wall, src), per_req(sfl->wall, sfl)), 1.05, "x");
  }
  const tally *bomb = res("bombs", K_RC);
  if (bomb) {
    char what[96];
    snprintf(what, sizeof what, "bombs: wall for all %zu at the cap, s", bomb->done);
    target(f, what, bomb->wall, 0.5, "");
  }
  report_budget(f);
  report_large(f);
}

/* ---- Matchers ------------------------------------------------------------ */

/* scan-match: the program with matchers against itself without, wall per
 * request pass by pass (both ran in every pass, in alternating order). */
static void report_scan_match(FILE *f)
{
  int si = scen_index("scan-match");
  const scenario *sc = &SCENARIOS[si];
  const tally *sm = ran((size_t)si, K_SCANM), *sp = ran((size_t)si, K_SCAN);
  if (!sm)
    return;
  char size[32];
  size_text(size, sizeof size, sc->size);
  fprintf(f, "  scan-match, %zu x %s at %ld: %zu/%zu verdicts right (%zu JSON lines); %s\n",
          sc->count, size, sc->conc, sm->verdicts_ok, sc->count, sm->lines,
          sm->engine[0] ? sm->engine : "no engine line in the summary");
  fprintf(f, "    peak RSS (whole process): with matchers %.1f MiB", mib((double)sm->child_peak));
  if (sp)
    fprintf(f, ", without %.1f MiB", mib((double)sp->child_peak));
  fprintf(f, "\n");
  double r[8];
  int n = sp ? (sm->runs < sp->runs ? sm->runs : sp->runs) : 0;
  for (int i = 0; i < n; i++)
    r[i] = ratio(sm->wall_runs[i], sp->wall_runs[i]);
  if (n > 0) {
    fprintf(f, "    scan-match/scan wall per request, pass by pass:");
    for (int i = 0; i < n; i++)
      fprintf(f, " %.3f", r[i]);
    fprintf(f, "\n");
  }
  target(f, "scan-match: peak RSS with matchers, MiB", mib((double)sm->child_peak), 48, "");
  if (n > 0)
    target(f, "scan-match: wall vs no matchers (median of passes)", median(r, n), 1.05, "x");
  if (sm->failed_all)
    fprintf(f, "    FAILED: %zu lines wrong over all passes\n", sm->failed_all);
}

/* scan-stop: what the transfers received, against the bodies' total. */
static void report_scan_stop(FILE *f)
{
  int si = scen_index("scan-stop");
  const scenario *sc = &SCENARIOS[si];
  const tally *t = ran((size_t)si, K_SCANM);
  if (!t)
    return;
  /* Where the last of the matchers first hits: the verdict is known there. */
  const size_t *at = child_expected_at(sc);
  size_t nm = 0, last = 0;
  while (sc->match->words[nm])
    nm++;
  for (size_t i = 0; sc->match->regexes[i]; i++)
    nm++;
  for (size_t i = 0; i < nm; i++)
    last = at[i] > last ? at[i] : last;
  size_t cap = scenario_cap(sc), want = sc->size < cap ? sc->size : cap;
  double total = (double)sc->count * (double)want;
  char size[32];
  size_text(size, sizeof size, sc->size);
  fprintf(f,
          "  scan-stop, %zu x %s at %ld, --stop-on-match, verdict known at %.1f KiB: %zu/%zu "
          "verdicts right, %zu stopped; received %.1f MiB of bodies (%.1f MiB on the wire) of "
          "%.0f MiB; peak RSS %.1f MiB; %.2f s\n",
          sc->count, size, sc->conc, (double)last / KiB, t->verdicts_ok, sc->count,
          t->stopped_lines, mib((double)t->body_bytes), t->summary_wire_mib, mib(total),
          mib((double)t->child_peak), t->wall);
  target(f, "scan-stop: body bytes received / bodies' total, %",
         100 * ratio((double)t->body_bytes, total), 5, "");
  target(f, "scan-stop: wire bytes received / bodies' total (info), %",
         100 * ratio(t->summary_wire_mib * (double)MiB, total), 5, "");
  if (t->failed_all)
    fprintf(f, "    FAILED: %zu lines wrong over all passes\n", t->failed_all);
}

static void report_throughput(FILE *f)
{
  const match_result *m = &match_res;
  if (!m->ran)
    return;
  fprintf(f,
          "  match: %zu literals + %zu regexes over %.0f MiB per run (%zu bodies, %.0f MiB "
          "distinct), one thread, best of %d run(s):\n",
          m->nlit, m->nre, mib((double)m->hs.bytes), m->bodies, mib((double)m->arena), m->hs.runs);
  fprintf(f,
          "    Vectorscan (stream, 16 KiB slices) %.3f GB/s CPU (%.3f wall); POSIX regexec + "
          "memmem (whole bodies) %.3f GB/s CPU (%.3f wall); ratio %.1fx\n",
          m->hs.bps_cpu / 1e9, m->hs.bps_wall / 1e9, m->posix.bps_cpu / 1e9,
          m->posix.bps_wall / 1e9, ratio(m->hs.bps_cpu, m->posix.bps_cpu));
  static const char *const KIND[MB_KINDS] = {"pattern", "HTML", "JSON"};
  for (int e = 0; e < 2; e++) {
    const match_engine *g = e ? &m->posix : &m->hs;
    double cpu = 0;
    for (int k = 0; k < MB_KINDS; k++)
      cpu += g->kind_cpu[k];
    fprintf(f, "    %s by body kind:", e ? "POSIX" : "Vectorscan");
    for (int k = 0; k < MB_KINDS; k++)
      fprintf(f, "%s %s %.3f GB/s (%.0f%% of bytes, %.0f%% of CPU)", k ? ";" : "", KIND[k],
              ratio((double)g->kind_bytes[k], g->kind_cpu[k]) / 1e9,
              100 * ratio((double)g->kind_bytes[k], (double)g->bytes),
              100 * ratio(g->kind_cpu[k], cpu));
    fprintf(f, "\n");
  }
  fprintf(f, "    verdicts: %zu bodies, %zu differ; %zu hits of %zu matchers\n", m->bodies,
          m->disagree, m->hits, m->matchers_hit);
  target_min(f, "match: Vectorscan throughput, GB/s of CPU (10^9 bytes)", m->hs.bps_cpu / 1e9, 1,
             "");
}

void report_match(FILE *f)
{
  int a = scen_index("scan-match"), b = scen_index("scan-stop");
  if (!ran((size_t)a, K_SCANM) && !ran((size_t)b, K_SCANM) && !match_res.ran)
    return;
  fprintf(f, "\nMatchers:\n");
  report_scan_match(f);
  report_scan_stop(f);
  report_throughput(f);
}
