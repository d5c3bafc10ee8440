/*
 * bench: respchain against the usual ways of buffering libcurl bodies, over
 * real loopback transfers to an in-process server (test/server.h).
 *
 *   bench [--scenario NAME]... [--contender NAME]... [--quick] [--csv]
 *         [--svg FILE] [--runs N] [--cap SIZE] [--budget SIZE]
 *         [--SCENARIO-count N] [--SCENARIO-size SIZE] [--SCENARIO-conc N]
 *         [--SCENARIO-cap SIZE] [--sustained-seconds S] [--pressure-large N]
 *         [--rc-max-large N] [--rc-chunk SIZE] [--limit SECONDS]
 *         [--idle SECONDS] [--spill-memory SIZE] [--spill-dir DIR]
 *         [--scan PATH] [--no-warmup] [--help] [--version]
 *
 * Exit status: 0 done; 1 setup failure (the server) or a transfer that
 * failed its check; 2 usage.
 *
 * Contenders (one table row each) share one curl multi driver, the same
 * concurrency and the same URLs; they differ only in the write callback and
 * in what they do with the bytes:
 *   discard      the floor: counts bytes, keeps nothing;
 *   one-copy     the limit: one max-body buffer per slot, allocated and
 *                touched before the clock starts, one memcpy per byte;
 *   respchain    rc_attach + rc_multi_poll on a pool with default settings;
 *   rc-budget    the same with a memory budget (--budget, 64 MiB);
 *   rc-spill     the same with lim.max_memory (--spill-memory, 1 MiB): a
 *                body past it moves to a spill file, read back through
 *                rc_body's mapping (scenario large only);
 *   getinmemory  curl's classic example: realloc to the exact size on every
 *                callback, no cap;
 *   doubling     capacity doubles from 16 KiB, capped at the max body.
 * Every contender but getinmemory stops a body at the cap (8 MiB, --cap;
 * a scenario may set its own) by failing the write. In gzip scenarios the
 * baselines let curl decode (CURLOPT_ACCEPT_ENCODING ""); respchain decodes
 * itself. Every finished body is checked: HTTP status, outcome (complete,
 * or stopped at the cap exactly when the body is larger), length, and four
 * bytes (first, last, middle, one varying) against the server's pattern;
 * in scenario large every kept body is compared byte for byte (memcmp
 * against a pattern copy made before the clocks start; discard, which keeps
 * nothing, is checked at its probes).
 *
 * Measurements, per run of one contender in one scenario:
 *   wall, and CPU (getrusage user+sys) of the whole process (client, server
 *   threads and sampler; the server's share is the same for everyone) and of
 *   the driving thread alone (curl plus the contender: the client's cost),
 *   and that thread's minor page faults (first touches of fresh memory);
 *   ratios to discard and one-copy are per completed request;
 *   resident memory from /proc/self/statm, sampled every 10 ms by a thread,
 *   the baseline taken before the contender's setup (so one-copy's buffers
 *   count), peak reported above that baseline and absolute (and, in the
 *   CSV and for scenario large, its anonymous part: without file pages such
 *   as a mapped spill file);
 *   bytes allocated per body byte: malloc sizes plus realloc growth over the
 *   old block's usable size, through a counting allocator (respchain's pool
 *   allocator; the baselines call it for their own buffers). Memory curl
 *   allocates is not counted for anyone (in gzip scenarios this leaves out
 *   curl's zlib state for the baselines, while respchain's is counted).
 *   "warm" counts only after the first wave (the first CONC completions);
 *   bytes copied per body byte: every memcpy made on the driving thread by
 *   statically linked code (this program and librespchain.a), counted by
 *   wrapping memcpy at link time, plus what realloc copied when it moved a
 *   heap block (glibc moves mmapped blocks with mremap, which copies
 *   nothing: those are counted apart, as remaps). Copies inside libcurl and
 *   zlib are not seen: the same for everyone, except that with gzip curl
 *   inflates into its own buffer for the baselines;
 *   memory retained when the transfers are over with the pool (or one-copy's
 *   buffers) still alive; then --idle seconds later (default 2), the
 *   program having done only what one between bursts does: poll its empty
 *   multi handle (rc_multi_poll for respchain) and read the pool's stats,
 *   every 100 ms, without malloc_trim; then after the contender's trim
 *   (rc_pool_trim; one-copy frees its buffers) and malloc_trim(0); all
 *   above the baseline.
 *
 * Fairness: malloc_trim(0) before every run; a warm-up burst (one-copy,
 * unreported) first: it warms the server, and freeing its max-body buffers
 * brings glibc's dynamic mmap threshold to the steady state any process
 * reaches once it has freed its first large block (from then on, blocks
 * below about the max body come from the heap). Before each scenario, one
 * request per distinct URL (discard) fills the server's caches. Each
 * contender runs --runs times (default 2), in table order on odd passes and
 * in reverse order on even ones; the run with the lower wall time per
 * request is reported, and the spread between runs is shown. A run that
 * passes --limit seconds (default 60) stops: a progress callback, set alike
 * on every contender's handles, aborts the transfers in flight, which are
 * dropped and reported (getinmemory on 1 GiB bombs, where every realloc
 * that moves an mmapped block costs a TLB shootdown; one curl_multi_perform
 * decoding a bomb can overshoot the limit).
 *
 * Scenarios scan-burst and scan-small (--scenario scan: every scan-*) run
 * the scan program (examples/scan; --scan PATH, default ../examples/scan
 * beside this program's directory, --scan '' for none) as a whole process
 * on the scenario's URLs, every one distinct, at the same concurrency, pass by pass
 * beside the driver with respchain (scan-burst) or with discard, the bare
 * loop (scan-small): "scan -c CONC --max-body CAP -o FILE -l TARGETS", its
 * stderr to a file (no progress line off a terminal; its summary gives the
 * pool's counts). Measured: its wall time from fork to exit, its peak RSS
 * (ru_maxrss from wait4; the process that forks it is forked at startup,
 * while small, as ru_maxrss starts at the size of the forking process),
 * its CPU, and its JSON lines: one per target, status 200, no error, the
 * body's length, or the run failed. It is killed (SIGALRM) past --limit.
 * Without the program (built with -Dexamples=false) the scan-* scenarios
 * are skipped, saying so.
 *
 * Scenario scan-match runs the program twice per pass on the same URLs, in
 * alternating order: without matchers (contender scan) and with three
 * --word and two --regex (contender scan-match; some occur in the body,
 * some nowhere). Every scan-match line's "matched" and "matches" (which
 * matchers hit, and the offset where each first match ends) must be what
 * memmem and regexec find in the body, worked out once before the runs.
 * Reported: the wall ratio pass by pass and its median, both peak RSS.
 * Scenario scan-stop runs scan-match alone with --stop-on-match and
 * matchers that all occur in the body's first 64 KiB: every line must be
 * "stopped" with that verdict; reported: the body bytes received (the
 * lines' body_bytes; the wire bytes from the summary) against the bodies'
 * total. Scenario match makes no transfers: matcher throughput on one
 * thread, Vectorscan streaming against regexec + memmem (match.c; skipped
 * in a build without libhs).
 *
 * --rc-max-large and --rc-chunk change respchain's pools (every respchain
 * contender) for experiments; the defaults measure the library as
 * configured. --spill-dir sets rc-spill's spill_dir (default: $TMPDIR, else
 * /tmp).
 *
 * Build: meson setup -Dbench=true; linked with -Wl,--wrap=memcpy (copy
 * accounting) and the static librespchain.a; without the flag the link
 * fails on __real_memcpy.
 */
#include "bench.h"
#include "../../examples/args.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool opt_warmup = true, opt_quick;
static const char *opt_svg = "bench-burst.svg";

static void loadavg(char *out, size_t n)
{
  snprintf(out, n, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fgets(out, (int)n, f))
      out[strcspn(out, "\n")] = '\0';
    fclose(f);
  }
}

/* ---- Options ------------------------------------------------------------ */

/* The usage, on out (stdout for --help). */
static void usage(FILE *out)
{
  fprintf(out, "usage: bench [--scenario NAME]... [--contender NAME]... [--quick] [--csv]\n"
               "             [--svg FILE] [--runs N] [--cap SIZE] [--budget SIZE]\n"
               "             [--SCENARIO-count N] [--SCENARIO-size SIZE] [--SCENARIO-conc N]\n"
               "             [--SCENARIO-cap SIZE] [--sustained-seconds S] [--pressure-large N]\n"
               "             [--rc-max-large N] [--rc-chunk SIZE] [--limit SECONDS]\n"
               "             [--idle SECONDS] [--spill-memory SIZE] [--spill-dir DIR]\n"
               "             [--scan PATH] [--no-warmup] [--help] [--version]\n"
               "scenarios (--scenario scan: every scan-*):");
  for (size_t i = 0; i < NSCEN; i++)
    fprintf(out, " %s", SCENARIOS[i].name);
  fprintf(out, "\ncontenders:");
  for (int k = 0; k < NCONT; k++)
    fprintf(out, " %s", CONTENDERS[k].name);
  fprintf(out, "\nsizes take K, M, G suffixes (powers of 1024)\n"
               "Exit status: 0 done; 1 setup failure (the server) or a body that "
               "failed its check; 2 usage.\n");
}

/* --help and --version: what parse_args found. */
static bool opt_help, opt_version;

/* Sizes as the example programs read them (examples/args.h): digits and
 * an optional k, m or g. */
bool parse_size(const char *s, size_t *out) { return args_size(s, out) == 0; }

bool opt_is(const char *arg, const char *name)
{
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* --name=value or --name value. */
static const char *opt_value(int argc, char **argv, int *i, const char *arg)
{
  const char *eq = strchr(arg, '=');
  if (eq)
    return eq + 1;
  return *i + 1 < argc ? argv[++*i] : NULL;
}

/* --scenario NAME and --contender NAME: only those run. */
static bool select_option(const char *a, const char *v, bool *any_scen, bool *any_cont)
{
  if (opt_is(a, "--scenario") && strcmp(v, "scan") == 0) {
    for (size_t i = 0; i < NSCEN; i++)
      if (SCENARIOS[i].child)
        scen_on[i] = *any_scen = true;
    return true;
  }
  if (opt_is(a, "--scenario")) {
    int si = scen_index(v);
    if (si < 0)
      fprintf(stderr, "bench: no scenario %s; try 'bench --help'\n", v);
    else
      scen_on[si] = *any_scen = true;
    return si >= 0;
  }
  int k = 0;
  while (k < NCONT && strcmp(CONTENDERS[k].name, v) != 0)
    k++;
  if (k == NCONT)
    fprintf(stderr, "bench: no contender %s; try 'bench --help'\n", v);
  else
    cont_on[k] = *any_cont = true;
  return k < NCONT;
}

/* An option with a value, but for the selections. */
static bool value_option(const char *a, const char *v)
{
  size_t n;
  if (opt_is(a, "--svg"))
    opt_svg = v;
  else if (opt_is(a, "--runs") && parse_size(v, &n) && n >= 1 && n <= 8)
    opt_runs = (int)n;
  else if (opt_is(a, "--cap") && parse_size(v, &n) && n > 0)
    opt_cap = n;
  else if (opt_is(a, "--budget") && parse_size(v, &n) && n > 0)
    opt_budget = n;
  else if (opt_is(a, "--limit") && atof(v) > 0)
    opt_limit = atof(v);
  else if (opt_is(a, "--idle") && atof(v) >= 0)
    opt_idle = atof(v);
  else if (opt_is(a, "--rc-max-large") && parse_size(v, &n))
    opt_rc_max_large = n;
  else if (opt_is(a, "--rc-chunk") && parse_size(v, &n) && n > 0)
    opt_rc_chunk = n;
  else if (opt_is(a, "--spill-memory") && parse_size(v, &n) && n > 0)
    opt_spill_memory = n;
  else if (opt_is(a, "--spill-dir"))
    opt_spill_dir = v;
  else if (opt_is(a, "--scan"))
    opt_scan = v;
  else if (!scenario_option(a, v)) {
    fprintf(stderr, "bench: bad option or value: %s %s; try 'bench --help'\n", a, v);
    return false;
  }
  return true;
}

static bool parse_args(int argc, char **argv)
{
  bool any_scen = false, any_cont = false;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--quick") == 0)
      opt_quick = true;
  if (opt_quick)
    apply_quick();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    bool ok = true;
    if (strcmp(a, "--quick") == 0)
      continue;
    if (strcmp(a, "--csv") == 0)
      opt_csv = true;
    else if (strcmp(a, "--no-warmup") == 0)
      opt_warmup = false;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      opt_help = true;
    else if (strcmp(a, "--version") == 0)
      opt_version = true;
    else if (strncmp(a, "--", 2) != 0 || !(v = opt_value(argc, argv, &i, a))) {
      fprintf(stderr, "bench: bad argument %s; try 'bench --help'\n", a);
      return false;
    } else if (opt_is(a, "--scenario") || opt_is(a, "--contender"))
      ok = select_option(a, v, &any_scen, &any_cont);
    else
      ok = value_option(a, v);
    if (!ok)
      return false;
  }
  for (size_t i = 0; !any_scen && i < NSCEN; i++)
    scen_on[i] = true;
  for (int k = 0; !any_cont && k < NCONT; k++)
    cont_on[k] = true;
  return true;
}

/* ---- Runs ------------------------------------------------------------------ */

/* The copy accounting sees the library only if it was linked statically
 * with the wrap; a copy of an empty body makes one memcpy call there. */
static bool library_copies_counted(void)
{
  rc_pool *p;
  rc_response *r;
  if (rc_pool_new(NULL, &p) != RC_OK)
    return false;
  if (rc_response_new(p, NULL, &r) != RC_OK) {
    rc_pool_free(p);
    return false;
  }
  uint64_t before = t_copy_calls;
  free(rc_body_dup(r, NULL));
  bool seen = t_copy_calls > before;
  rc_response_free(r);
  rc_pool_free(p);
  return seen;
}

/* Keeps run t of contender k in the scenario's results if it is the best
 * so far (lower wall per request); every run's wall is listed, and every
 * run's failed checks are counted. */
static void keep_best(size_t si, int k, tally *t)
{
  tally *best = &results[si][k];
  double w = per_req(t->wall, t);
  int runs = best->runs;
  size_t failed_all = best->failed_all + t->failed;
  double walls[8];
  memcpy(walls, best->wall_runs, sizeof walls);
  if (!best->ran ||
      (!isnan(w) && (isnan(per_req(best->wall, best)) || w < per_req(best->wall, best)))) {
    free(best->series);
    *best = *t;
  } else {
    free(t->series);
  }
  memcpy(best->wall_runs, walls, sizeof walls);
  best->runs = runs;
  best->failed_all = failed_all;
  best->wall_runs[best->runs++] = w;
}

static void run_scenario(size_t si)
{
  const scenario *sc = &SCENARIOS[si];
  bool chart = strcmp(sc->name, "burst") == 0;
  tally t;
  if (!expected_prepare(sc)) {
    fprintf(stderr, "bench: no memory for the expected body of %s\n", sc->name);
    exit(1);
  }
  if (!child_expect(sc))
    exit(1);
  /* One request per distinct URL fills the server's caches first. */
  scenario prime = *sc;
  prime.count = sc->distinct;
  prime.seconds = 0;
  prime.conc = 1;
  run_once(&prime, K_DISCARD, &t, false);
  for (int pass = 0; pass < opt_runs; pass++) {
    for (int j = 0; j < NCONT; j++) {
      int k = pass % 2 ? NCONT - 1 - j : j;
      if (!cont_on[k] || !scenario_runs(sc, k))
        continue;
      fprintf(stderr, "%s: %-12s run %d/%d ... ", sc->name, CONTENDERS[k].name, pass + 1, opt_runs);
      fflush(stderr);
      if (IS_CHILD(k)) {
        run_child(sc, &t, k == K_SCANM);
        fprintf(stderr, "%.2f s, %zu ok, %zu failed, %zu JSON lines, peak RSS %.0f MiB\n", t.wall,
                t.done, t.failed, t.lines, mib((double)t.child_peak));
      } else {
        run_once(sc, k, &t, chart);
        fprintf(stderr, "%.2f s, %zu ok, %zu failed, peak +%.0f MiB, after %g s +%.0f MiB\n",
                t.wall, t.done, t.failed, signed_mib(t.peak, t.rss0), opt_idle,
                signed_mib(t.rss_idle, t.rss0));
      }
      keep_best(si, k, &t);
    }
  }
}

/* ---- Main ----------------------------------------------------------------- */

static void print_machine(FILE *f, const char *load_start)
{
  char load_end[64];
  loadavg(load_end, sizeof load_end);
  fprintf(f, "\nMachine: %ld cores, curl %s; /proc/loadavg at start: %s; at end: %s\n",
          sysconf(_SC_NPROCESSORS_ONLN), curl_version_info(CURLVERSION_NOW)->version, load_start,
          load_end);
}

static void print_legend(bool lib_counted)
{
  printf("\nColumns: ratios are per completed request, best of %d run(s); idle %g s = "
         "RSS above the contender's start %g s after its last transfer, its pool "
         "alive; cpu = process (client + server threads), drv cpu = the driving "
         "thread; faults/MiB = its minor page faults per MiB of body; "
         "peakΔ/keptΔ/trimΔ = RSS above the contender's start (peak during "
         "transfers; kept with its pool alive; after its trim + malloc_trim(0)); "
         "pooled = bytes it keeps for reuse; "
         "alloc/B, copy/B per delivered body byte (copy = memcpy%s + realloc "
         "moves of heap blocks); spread = wall difference between runs.\n",
         opt_runs, opt_idle, opt_idle, lib_counted ? "" : ", respchain's NOT counted");
}

/* Runs every selected scenario; the report follows each. */
static void run_all(void)
{
  bool transfers = false;
  for (size_t si = 0; si < NSCEN; si++)
    transfers |= scen_on[si] && !SCENARIOS[si].throughput && !SCENARIOS[si].multiplexed;
  if (opt_warmup && transfers) {
    tally t;
    fprintf(stderr, "warm-up burst (one-copy) ... ");
    fflush(stderr);
    run_once(&SCENARIOS[scen_index("burst")], K_ONECOPY, &t, false);
    fprintf(stderr, "%.2f s\n", t.wall);
  }
  if (opt_csv)
    print_csv_header();
  for (size_t si = 0; si < NSCEN; si++) {
    if (!scen_on[si])
      continue;
    const char *absent = SCENARIOS[si].child         ? child_absent()
                         : SCENARIOS[si].throughput  ? match_absent()
                         : SCENARIOS[si].multiplexed ? h2_absent()
                                                     : NULL;
    if (absent) {
      fprintf(opt_csv ? stderr : stdout, "\n== %s: skipped: %s ==\n", SCENARIOS[si].name, absent);
      continue;
    }
    if (SCENARIOS[si].throughput) {
      run_match(&SCENARIOS[si]);
      continue;
    }
    if (SCENARIOS[si].multiplexed) {
      run_h2(&SCENARIOS[si]);
      if (opt_csv)
        print_h2_csv(&SCENARIOS[si]);
      continue;
    }
    run_scenario(si);
    if (opt_csv)
      print_csv(si);
    else
      print_scenario(si);
  }
  int bi = scen_index("burst");
  if (scen_on[bi] && opt_svg[0]) {
    if (write_svg(opt_svg, (size_t)bi))
      fprintf(stderr, "bench: burst chart written to %s\n", opt_svg);
    else
      fprintf(stderr, "bench: cannot write %s\n", opt_svg);
  }
}

/* Frees the results; returns how many transfers failed their check. */
static size_t release_results(void)
{
  size_t failed = 0;
  for (size_t si = 0; si < NSCEN; si++)
    for (int k = 0; k < NCONT; k++) {
      failed += results[si][k].failed_all;
      free(results[si][k].series);
    }
  return failed;
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--h2-child") == 0)
    return h2_child_main(argc, argv); /* one run of scenario h2 */
  if (!parse_args(argc, argv))
    return 2; /* parse_args said why, on one line */
  if (opt_help || opt_version) {
    if (opt_help)
      usage(stdout);
    else
      printf("bench (respchain) %s\n%s\n", rc_version(), curl_version());
    return 0;
  }
  bool child_wanted = false;
  for (size_t i = 0; i < NSCEN; i++)
    child_wanted |= scen_on[i] && SCENARIOS[i].child;
  if (child_wanted)
    child_init(); /* first: the process that starts the scan program forks now */
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  srv = ts_start();
  if (!srv) {
    fprintf(stderr, "bench: cannot start the server\n");
    return 1;
  }
  char load_start[64];
  loadavg(load_start, sizeof load_start);
  mon_start();
  bool lib_counted = library_copies_counted();
  if (!lib_counted)
    fprintf(stderr, "bench: warning: respchain's memcpy calls are not counted "
                    "(link librespchain.a statically with -Wl,--wrap=memcpy)\n");
  fprintf(stderr,
          "bench: %ld cores, curl %s, cap %.3g MiB, budget %.3g MiB, "
          "%d run(s) per contender\n",
          sysconf(_SC_NPROCESSORS_ONLN), curl_version_info(CURLVERSION_NOW)->version,
          mib((double)opt_cap), mib((double)opt_budget), opt_runs);
  run_all();
  report_targets(opt_csv ? stderr : stdout);
  report_scan(opt_csv ? stderr : stdout);
  report_match(opt_csv ? stderr : stdout);
  bool h2_ok = report_h2(opt_csv ? stderr : stdout, &SCENARIOS[scen_index("h2")]);
  print_machine(opt_csv ? stderr : stdout, load_start);
  if (!opt_csv)
    print_legend(lib_counted);
  size_t failed = release_results();
  bool match_failed = match_res.ran && (match_res.failed || match_res.disagree);
  if (match_failed)
    fprintf(stderr, "bench: match: the engines' verdicts differ, or a stream failed\n");
  child_shutdown();
  mon_shutdown();
  ts_stop(srv);
  curl_global_cleanup();
  if (failed)
    fprintf(stderr, "bench: %zu transfers failed their check\n", failed);
  if (!h2_ok)
    fprintf(stderr, "bench: h2: a run failed\n");
  return failed || match_failed || !h2_ok ? 1 : 0;
}
