/* Scenarios: what is requested from the in-process server, how many at
 * once, and the smaller settings of a --quick smoke run. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

ts_server *srv;

static const size_t MIX[] = {1 * KiB, 100 * KiB, 1 * MiB, 4 * MiB, 8 * MiB};
#define NMIX (sizeof MIX / sizeof MIX[0])

static void set_url(request *rq, const char *path) { ts_url(srv, path, rq->url, sizeof rq->url); }

static void req_bytes(const scenario *sc, size_t i, request *rq)
{
  (void)i;
  char path[64];
  snprintf(path, sizeof path, "/bytes?n=%zu", sc->size);
  set_url(rq, path);
  rq->n = sc->size;
  rq->zeros = false;
}

/* As req_bytes, every URL distinct (the server ignores the parameter i),
 * as a scanner's targets are. */
static void req_bytes_each(const scenario *sc, size_t i, request *rq)
{
  char path[80];
  snprintf(path, sizeof path, "/bytes?n=%zu&i=%zu", sc->size, i);
  set_url(rq, path);
  rq->n = sc->size;
  rq->zeros = false;
}

/* 1K, 100K, 1M, 4M, 8M in turn. */
static void req_mix(const scenario *sc, size_t i, request *rq)
{
  (void)sc;
  char path[64];
  rq->n = MIX[i % NMIX];
  snprintf(path, sizeof path, "/bytes?n=%zu", rq->n);
  set_url(rq, path);
  rq->zeros = false;
}

/* The same sizes, a round plain, then rounds encoded with gzip, br and
 * zstd in turn. */
static void req_mix_gzip(const scenario *sc, size_t i, request *rq)
{
  static const char *const rounds[] = {"bytes?", "gzip?coding=gzip&", "gzip?coding=br&",
                                       "bytes?", "gzip?coding=gzip&", "gzip?coding=zstd&"};
  (void)sc;
  char path[64];
  rq->n = MIX[i % NMIX];
  snprintf(path, sizeof path, "/%sn=%zu", rounds[(i / NMIX) % 6], rq->n);
  set_url(rq, path);
  rq->zeros = false;
}

/* gzip, br and zstd bombs in turn. */
static void req_bomb(const scenario *sc, size_t i, request *rq)
{
  static const char *const codings[] = {"gzip", "br", "zstd"};
  char path[64];
  snprintf(path, sizeof path, "/bomb?size=%zu&coding=%s", sc->size, codings[i % 3]);
  set_url(rq, path);
  rq->n = sc->size;
  rq->zeros = true;
}

#define BIT(k) (1u << (k))

/* Three words and two regexes over 8 MiB of the pattern: a word and a
 * regex that occur nowhere (what scanners look for), a word that first
 * occurs 22 KiB in, one 1.7 MiB in (the pattern's words are 8 bytes,
 * padded with spaces), and a regex 574 KiB in whose [[:space:]] takes the
 * pattern's line break. The regexes mean the same as EREs (regexec works
 * out the expected verdicts) and in PCRE syntax (which scan speaks):
 * '.', which in PCRE does not match a line feed, is not used. */
static const scan_matchers SCAN_MATCH = {
    .words = {"root:x:0:0:", "nostrud exercit", "qui     officia deserun"},
    .regexes = {"AKIA[0-9A-Z]{16}", "[0-9]{7}[[:space:]](lorem|ipsum) +dolor"},
};

/* Every one of these first occurs in the first 64 KiB (the last at
 * 48.8 KiB), so the verdict is known there. */
static const scan_matchers SCAN_STOP = {
    .words = {"nostrud exercit", "officia deserun"},
    .regexes = {"(dolor|labore) +magna"},
    .stop = true,
};

scenario SCENARIOS[NSCEN] = {
    {.name = "burst",
     .what = "large bodies, many at once",
     .count = 500,
     .size = 8 * MiB,
     .conc = 50,
     .request = req_bytes,
     .distinct = 1},
    {.name = "sustained",
     .what = "1K/100K/1M/4M/8M in turn for a time",
     .seconds = 5,
     .conc = 50,
     .request = req_mix,
     .distinct = NMIX},
    {.name = "pressure",
     .what = "more large bodies at once than the pool keeps",
     .count = 30,
     .size = 8 * MiB,
     .conc = 30,
     .max_large = 10,
     .request = req_bytes,
     .distinct = 1},
    {.name = "mixed",
     .what = "1K..8M, half plain, then gzip, br, zstd",
     .count = 600,
     .conc = 50,
     .gzip = true,
     .request = req_mix_gzip,
     .distinct = 6 * NMIX},
    {.name = "rapid",
     .what = "create/destroy a response per transfer",
     .count = 1000,
     .size = 10 * KiB,
     .conc = 1,
     .per_transfer = true,
     .request = req_bytes,
     .distinct = 1},
    {.name = "small",
     .what = "many small bodies",
     .count = 20000,
     .size = 1 * KiB,
     .conc = 50,
     .request = req_bytes,
     .distinct = 1},
    /* Two at a time: getinmemory holds each decoded GiB in full. */
    {.name = "bombs",
     .what = "gzip, br, zstd bombs stopped at the cap",
     .count = 12,
     .size = 1 * GiB,
     .conc = 2,
     .gzip = true,
     .request = req_bomb,
     .distinct = 3},
    /* Bodies over max_memory: kept in memory, or spilled to a file (the
     * body cap raised so that they fit). One-copy's slots take the cap
     * each: 4 x 64 MiB. */
    {.name = "large",
     .what = "bodies larger than max_memory, in memory or spilled",
     .count = 24,
     .size = 32 * MiB,
     .conc = 4,
     .cap = 64 * MiB,
     .kinds = BIT(K_DISCARD) | BIT(K_ONECOPY) | BIT(K_RC) | BIT(K_RCS),
     .verify_all = true,
     .request = req_bytes,
     .distinct = 1},
    /* The scan program (examples/scan) as a whole process beside the
     * driver, on the same URLs: respchain in-process against it on large
     * bodies, the bare loop (discard) against it on small ones. */
    {.name = "scan-burst",
     .what = "the scan program beside the driver, large bodies",
     .count = 500,
     .size = 8 * MiB,
     .conc = 50,
     .kinds = BIT(K_RC) | BIT(K_SCAN),
     .request = req_bytes_each,
     .distinct = 1,
     .child = true},
    {.name = "scan-small",
     .what = "the scan program beside the bare loop, small bodies",
     .count = 20000,
     .size = 1 * KiB,
     .conc = 50,
     .kinds = BIT(K_DISCARD) | BIT(K_SCAN),
     .request = req_bytes_each,
     .distinct = 1,
     .child = true},
    /* The scan program with matchers beside itself without, on the same
     * URLs: what streaming matchers cost in time and memory. */
    {.name = "scan-match",
     .what = "the scan program with 3 words and 2 regexes beside it without",
     .count = 500,
     .size = 8 * MiB,
     .conc = 50,
     .kinds = BIT(K_SCAN) | BIT(K_SCANM),
     .request = req_bytes_each,
     .distinct = 1,
     .child = true,
     .match = &SCAN_MATCH},
    {.name = "scan-stop",
     .what = "the scan program with --stop-on-match, every matcher in the first 64 KiB",
     .count = 500,
     .size = 8 * MiB,
     .conc = 50,
     .kinds = BIT(K_SCANM),
     .request = req_bytes_each,
     .distinct = 1,
     .child = true,
     .match = &SCAN_STOP},
    /* No transfers: match.c. size is the bytes each engine goes over. */
    {.name = "match",
     .what = "matcher throughput, one core: Vectorscan streaming against regexec + memmem",
     .size = 1 * GiB,
     .kinds = 1u << NCONT, /* no contender */
     .throughput = true},
    /* The budget on HTTP/2: streams multiplexed over one TLS connection to
     * nginx, each overflow mode in a process of its own (multiplex.c). */
    {.name = "h2",
     .what = "the budget on HTTP/2 streams of one TLS connection, per overflow mode",
     .count = 200,
     .size = 8 * MiB,
     .conc = 50,
     .kinds = 1u << NCONT, /* no contender: modes */
     .multiplexed = true},
};

int scen_index(const char *name)
{
  for (size_t i = 0; i < NSCEN; i++)
    if (strcmp(SCENARIOS[i].name, name) == 0)
      return (int)i;
  return -1;
}

bool scenario_runs(const scenario *sc, int k)
{
  unsigned kinds = sc->kinds ? sc->kinds : ~(BIT(K_RCS) | BIT(K_SCAN) | BIT(K_SCANM));
  return (kinds & BIT(k)) != 0;
}

unsigned char expected_byte(const request *rq, size_t off)
{
  return rq->zeros ? 0 : ts_pattern_byte(off);
}

/* ---- Whole-body verification ------------------------------------------- */

static unsigned char *expect_buf;
static size_t expect_len;

bool expected_prepare(const scenario *sc)
{
  size_t cap = scenario_cap(sc), n = sc->size < cap ? sc->size : cap;
  if (!sc->verify_all || n <= expect_len)
    return true;
  unsigned char *p = realloc(expect_buf, n);
  if (!p)
    return false;
  ts_pattern_fill(p, 0, n); /* resident before any baseline is taken */
  expect_buf = p;
  expect_len = n;
  return true;
}

const unsigned char *expected_body(size_t n) { return n <= expect_len ? expect_buf : NULL; }

/* ---- Quick runs and per-scenario options ------------------------------- */

/* Small sizes for a smoke run of a few seconds. */
void apply_quick(void)
{
  static const struct {
    const char *name;
    size_t count, size;
    long conc;
  } q[] = {
      {"burst", 40, 2 * MiB, 10},
      {"sustained", 0, 0, 10},
      {"pressure", 12, 2 * MiB, 12},
      {"mixed", 30, 0, 10},
      {"rapid", 100, 0, 1},
      {"small", 1000, 0, 10},
      {"bombs", 3, 16 * MiB, 2},
      {"large", 4, 2 * MiB, 2},
      {"scan-burst", 20, 1 * MiB, 10},
      {"scan-small", 500, 0, 50},
      {"scan-match", 20, 1 * MiB, 10},
      {"scan-stop", 20, 2 * MiB, 10},
      {"match", 0, 16 * MiB, 0},
      {"h2", 20, 1 * MiB, 10},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    scenario *sc = &SCENARIOS[scen_index(q[i].name)];
    if (q[i].count)
      sc->count = q[i].count;
    if (q[i].size)
      sc->size = q[i].size;
    sc->conc = q[i].conc;
  }
  SCENARIOS[scen_index("sustained")].seconds = 0.3;
  SCENARIOS[scen_index("pressure")].max_large = 4;
  SCENARIOS[scen_index("large")].cap = 8 * MiB;
  opt_budget = 8 * MiB;
  opt_runs = 1;
  opt_idle = 0.005;
}

/* Sets one field of sc from --SCENARIO-FIELD's value. */
static bool set_field(scenario *sc, const char *field, const char *val)
{
  size_t v;
  if (opt_is(field, "count") && parse_size(val, &v) && v > 0)
    sc->count = v, sc->seconds = 0;
  else if (opt_is(field, "size") && parse_size(val, &v))
    sc->size = v;
  else if (opt_is(field, "conc") && parse_size(val, &v) && v > 0)
    sc->conc = (long)v;
  else if (opt_is(field, "seconds") && atof(val) > 0 && sc->request == req_mix)
    sc->seconds = atof(val);
  else if (opt_is(field, "large") && parse_size(val, &v))
    sc->max_large = v;
  else if (opt_is(field, "cap") && parse_size(val, &v) && v > 0)
    sc->cap = v;
  else
    return false;
  return true;
}

/* --SCENARIO-FIELD. */
bool scenario_option(const char *arg, const char *val)
{
  for (size_t i = 0; i < NSCEN; i++) {
    scenario *sc = &SCENARIOS[i];
    size_t n = strlen(sc->name);
    if (strncmp(arg + 2, sc->name, n) != 0 || arg[2 + n] != '-')
      continue;
    return set_field(sc, arg + 3 + n, val);
  }
  return false;
}
