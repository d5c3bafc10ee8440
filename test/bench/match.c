/* Scenario match: matcher throughput on one core, without transfers. 100
 * literals and 10 regexes run over mixed bodies held in memory (slices of
 * the server's pattern, HTML-like pages, JSON-like records; some carry what
 * the matchers look for), two ways, on the calling thread:
 *   Vectorscan: one database of all 110 (HS_MODE_STREAM, each first match
 *     only), a stream per body, fed 16 KiB slices as curl delivers them;
 *   POSIX: memmem per literal and regexec (REG_EXTENDED | REG_NOSUB,
 *     REG_STARTEND) per regex over each whole body, each stopping at its
 *     first hit.
 * The regexes are written in the syntax common to ERE and Vectorscan's PCRE
 * with the same meaning in both: no '.', '^' or '$' (PCRE's '.' takes NUL
 * where regcomp's does not; PCRE's $ matches before a final newline), only
 * byte classes, literals, groups, alternation and greedy quantifiers, in
 * the C locale. Both engines give a verdict per body and matcher, and they
 * must be the same. Both run --runs times, in alternating order; the best
 * run of each is reported, in bytes per second of the thread's CPU time
 * (user + system) and of the wall clock. The bodies (--match-size, 1 GiB;
 * 16 MiB with --quick) are the passes over an arena of at most 256 MiB,
 * generated before any clock starts. Built without libhs, the scenario is
 * skipped, saying so. */
#include "bench.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#if BENCH_HAVE_HS
#include <hs.h>
#endif

match_result match_res;

const char *match_absent(void)
{
#if BENCH_HAVE_HS
  return NULL;
#else
  return "the bench was built without libhs (Debian: libvectorscan-dev)";
#endif
}

#if BENCH_HAVE_HS

#define NLIT    100
#define NRE     10
#define NMATCH  (NLIT + NRE)
#define SLICE   (16 * KiB) /* what curl hands a write callback at most */
#define ARENA   (256 * MiB)
#define PAT_LIT 40 /* literals taken from the server's pattern */

/* Fingerprints a scanner looks for: the generator below puts a few of them
 * in some pages; most occur nowhere. The remaining PAT_LIT literals are 16
 * bytes of the server's pattern (see make_literals). */
static const char *const FINGERPRINTS[NLIT - PAT_LIT] = {
    "Index of /",
    "wp-content/plugins/",
    "wp-login.php",
    "phpinfo()",
    "PHP Version",
    "root:x:0:0:",
    "[boot loader]",
    "<title>Welcome to nginx!</title>",
    "It works!",
    "Apache Tomcat",
    "Whitelabel Error Page",
    "Dashboard [Jenkins]",
    "phpMyAdmin",
    "You have an error in your SQL syntax",
    "mysql_fetch_array()",
    "ORA-01756",
    "Microsoft OLE DB Provider",
    "PostgreSQL query failed",
    "Traceback (most recent call last)",
    "java.lang.NullPointerException",
    "at org.springframework.",
    "DEBUG = True",
    "aws_secret_access_key",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "repositoryformatversion",
    "DB_PASSWORD=",
    "APP_KEY=base64:",
    "xoxb-",
    "sk_live_",
    "Server Error in '/' Application",
    "Fatal error: Uncaught",
    "Warning: include(",
    "swagger-ui-bundle.js",
    "\"openapi\":\"3.",
    "__schema",
    "window.__INITIAL_STATE__",
    "google-analytics.com/analytics.js",
    "jquery-1.12.4.min.js",
    "Powered by Gitea",
    "X-Debug-Token",
    "grafana-app",
    "kibana.bundle.js",
    "/actuator/health",
    "<b>Notice</b>:  Undefined",
    "Invalid CSRF token",
    "admin@example.com",
    "Apache/2.4.57 (Debian) Server at",
    "Forgot your password?",
    "X-Amz-Cf-Id",
    "firebaseio.com",
    "BEGIN PGP PRIVATE KEY BLOCK",
    "Set-Cookie: JSESSIONID",
    "Django Version:",
    "laravel_session",
    "ASP.NET is configured",
    "Werkzeug Debugger",
    "struts.devMode",
    "Grafana v",
    "ELMAH",
};

static const char *const REGEXES[NRE] = {
    "[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\\.[A-Za-z]{2,6}",
    "AKIA[0-9A-Z]{16}",
    "<title>[^<]{1,128}</title>",
    "(dolor|labore) +magna",
    "[0-9]{3}-[0-9]{3}-[0-9]{4}",
    "(password|passwd|pwd) *[=:] *[A-Za-z0-9]{6,}",
    "Apache/2\\.[0-9]+\\.[0-9]+",
    "eyJ[A-Za-z0-9_-]{10,}\\.eyJ[A-Za-z0-9_-]{10,}",
    "(sit|sed) +(amet,|do) +[a-z]+",
    "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?"
    "[0-9])){3}",
};

/* The literals: bytes and lengths (pattern slices hold NUL bytes). */
static unsigned char lit_buf[PAT_LIT][16];
static const unsigned char *lit[NLIT];
static size_t lit_len[NLIT];

static void make_literals(void)
{
  for (size_t i = 0; i < NLIT - PAT_LIT; i++) {
    lit[i] = (const unsigned char *)FINGERPRINTS[i];
    lit_len[i] = strlen(FINGERPRINTS[i]);
  }
  /* Two words of the pattern, from word-aligned offsets far apart: each
   * pair occurs about once in 32 KiB of pattern. */
  for (size_t k = 0; k < PAT_LIT; k++) {
    ts_pattern_fill(lit_buf[k], 8 * (k * 4099 + 17), 16);
    lit[NLIT - PAT_LIT + k] = lit_buf[k];
    lit_len[NLIT - PAT_LIT + k] = 16;
  }
}

/* ---- The bodies ----------------------------------------------------------- */

typedef struct mbody {
  size_t off, len; /* in the arena */
  unsigned kind;   /* MB_PATTERN, MB_HTML or MB_JSON */
} mbody;

static unsigned char *arena;
static size_t arena_len;
static mbody *bodies;
static size_t nbodies;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
  uint64_t x = (rng_state += 0x9e3779b97f4a7c15u);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static const char *const TEXT_WORDS[] = {
    "the",     "service", "account", "request", "server",  "page",    "login",  "user",
    "data",    "report",  "network", "access",  "version", "update",  "status", "of",
    "and",     "to",      "for",     "with",    "your",    "support", "home",   "news",
    "contact", "about",   "search",  "privacy", "terms",   "product", "price",  "order",
};

/* Fragments HTML-like pages are made of; the ones after the first few
 * carry something a matcher looks for, and are rarer. */
static const char *const HTML_PARTS[] = {
    "<div class=\"row\"><div class=\"col-md-6\">",
    "</div></div>\n",
    "<a href=\"/products/item?id=",
    "\">more</a>\n",
    "<script src=\"/static/js/app.bundle.js\"></script>\n",
    "<link rel=\"stylesheet\" href=\"/static/css/site.css\">\n",
    "<img src=\"/img/banner.png\" alt=\"banner\">\n",
    "<li><a href=\"/news/\">News</a></li>\n",
    "<p class=\"lead\">",
    "</p>\n",
    /* rarer, with needles */
    "<address>Apache/2.4.57 (Debian) Server at www.example.com Port 80</address>\n",
    "<a href=\"mailto:admin@example.com\">admin@example.com</a>\n",
    "<script src=\"/wp-content/plugins/contact-form-7/includes/js/index.js\"></script>\n",
    "<!-- db: 10.0.12.7 -->\n",
    "<p>Call us: 555-867-5309</p>\n",
    "<input type=\"hidden\" name=\"csrf\" value=\"c2VjcmV0\">\n",
};
#define HTML_COMMON 10
#define NHTML_PARTS (sizeof HTML_PARTS / sizeof HTML_PARTS[0])

static const char *const JSON_NEEDLES[] = {
    "\"aws_access_key_id\":\"AKIAIOSFODNN7EXAMPLE\",",
    "\"token\":\"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0\",",
    "\"email\":\"jane.doe@mail.example.org\",",
    "\"password\":\"hunter2hunter2\",",
    "\"remote\":\"192.168.1.20\",",
};
#define NJSON_NEEDLES (sizeof JSON_NEEDLES / sizeof JSON_NEEDLES[0])

/* Appends s to p (room for at least n - *at bytes); false once full. */
static bool put(unsigned char *p, size_t n, size_t *at, const char *s)
{
  size_t len = strlen(s);
  if (*at + len > n)
    return false;
  memcpy(p + *at, s, len);
  *at += len;
  return true;
}

static void fill_html(unsigned char *p, size_t n)
{
  size_t at = 0;
  char title[64];
  snprintf(title, sizeof title, "<html><head><title>%s %s</title></head><body>\n",
           TEXT_WORDS[rng() % 32], TEXT_WORDS[rng() % 32]);
  bool room = put(p, n, &at, "<!DOCTYPE html>\n") && put(p, n, &at, title);
  while (room) {
    uint64_t r = rng();
    if (r % 8 == 0) {
      /* one needle in about 8 000 fragments */
      size_t part = r % 8192 < 8 ? HTML_COMMON + (r >> 20) % (NHTML_PARTS - HTML_COMMON)
                                 : (r >> 20) % HTML_COMMON;
      room = put(p, n, &at, HTML_PARTS[part]);
    } else {
      room = put(p, n, &at, TEXT_WORDS[(r >> 8) % 32]) && put(p, n, &at, " ");
    }
  }
  memset(p + at, ' ', n - at);
}

static void fill_json(unsigned char *p, size_t n)
{
  size_t at = 0;
  bool room = put(p, n, &at, "{\"items\":[");
  for (unsigned long id = 0; room; id++) {
    uint64_t r = rng();
    char rec[160];
    snprintf(rec, sizeof rec, "{\"id\":%lu,\"name\":\"%s %s\",\"score\":%u,", id,
             TEXT_WORDS[r % 32], TEXT_WORDS[(r >> 5) % 32], (unsigned)(r >> 40) % 1000);
    room = put(p, n, &at, rec);
    if (room && (r >> 10) % 4096 == 0)
      room = put(p, n, &at, JSON_NEEDLES[(r >> 22) % NJSON_NEEDLES]);
    room = room && put(p, n, &at, "\"ok\":true},\n");
  }
  memset(p + at, ' ', n - at);
}

/* Bodies of 1 KiB to 4 MiB, back to back in an arena of n bytes, a third
 * of the bytes each of pattern, HTML and JSON: each body is of the kind
 * that has the fewest bytes so far. (Taking the kinds in turn made them a
 * third each by count only: with a few bodies of random sizes, as in the
 * 15 of a 16 MiB arena, the kinds' shares of the bytes were far apart.) */
static bool make_bodies(size_t n)
{
  static const size_t SIZES[] = {1 * KiB, 8 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB};
  arena = malloc(n);
  bodies = calloc(n / KiB + 1, sizeof *bodies);
  if (!arena || !bodies)
    return false;
  size_t at = 0, kind_bytes[MB_KINDS] = {0};
  while (at < n) {
    size_t len = SIZES[rng() % (sizeof SIZES / sizeof SIZES[0])];
    if (len > n - at)
      len = n - at;
    unsigned kind = 0;
    for (unsigned k = 1; k < MB_KINDS; k++)
      if (kind_bytes[k] < kind_bytes[kind])
        kind = k;
    unsigned char *p = arena + at;
    switch (kind) {
    case MB_PATTERN: ts_pattern_fill(p, rng() % (64 * MiB), len); break;
    case MB_HTML: fill_html(p, len); break;
    default: fill_json(p, len); break;
    }
    bodies[nbodies++] = (mbody){at, len, kind};
    kind_bytes[kind] += len;
    at += len;
  }
  arena_len = n;
  return true;
}

/* ---- The engines ----------------------------------------------------------- */

/* A body's verdict: bit m set when matcher m (literals, then regexes) hits. */
typedef struct verdict_bits {
  uint64_t w[2];
} verdict_bits;

static verdict_bits *v_hs, *v_posix;
static regex_t re[NRE];

static void set_bit(verdict_bits *v, unsigned m) { v->w[m / 64] |= (uint64_t)1 << (m % 64); }

static bool posix_body(const unsigned char *p, size_t len, verdict_bits *v)
{
  memset(v, 0, sizeof *v);
  for (unsigned m = 0; m < NLIT; m++)
    if (memmem(p, len, lit[m], lit_len[m]))
      set_bit(v, m);
  for (unsigned m = 0; m < NRE; m++) {
    regmatch_t range = {.rm_so = 0, .rm_eo = (regoff_t)len};
    if (regexec(&re[m], (const char *)p, 1, &range, REG_STARTEND) == 0)
      set_bit(v, NLIT + m);
  }
  return true;
}

static hs_database_t *db;
static hs_scratch_t *scratch;

static int on_match(unsigned id, unsigned long long from, unsigned long long to, unsigned flags,
                    void *ctx)
{
  (void)from, (void)to, (void)flags;
  set_bit(ctx, id);
  return 0;
}

static bool hs_body(const unsigned char *p, size_t len, verdict_bits *v)
{
  hs_stream_t *st;
  memset(v, 0, sizeof *v);
  if (hs_open_stream(db, 0, &st) != HS_SUCCESS)
    return false;
  bool ok = true;
  for (size_t at = 0; ok && at < len; at += SLICE) {
    size_t n = len - at < SLICE ? len - at : SLICE;
    ok = hs_scan_stream(st, (const char *)p + at, (unsigned)n, 0, scratch, on_match, v) ==
         HS_SUCCESS;
  }
  return hs_close_stream(st, scratch, on_match, v) == HS_SUCCESS && ok;
}

/* Every literal as \xHH bytes, then the regexes as written. */
static const char *compile_db(void)
{
  static char why[256];
  char *exprs[NMATCH];
  unsigned flags[NMATCH], ids[NMATCH];
  for (unsigned m = 0; m < NMATCH; m++) {
    if (m < NLIT) {
      exprs[m] = malloc(4 * lit_len[m] + 1);
      if (!exprs[m])
        return "out of memory";
      for (size_t i = 0; i < lit_len[m]; i++)
        snprintf(exprs[m] + 4 * i, 5, "\\x%02x", lit[m][i]);
    } else {
      exprs[m] = strdup(REGEXES[m - NLIT]);
      if (!exprs[m])
        return "out of memory";
    }
    flags[m] = HS_FLAG_SINGLEMATCH;
    ids[m] = m;
  }
  hs_compile_error_t *err = NULL;
  const char *fail = NULL;
  if (hs_compile_multi((const char *const *)exprs, flags, ids, NMATCH, HS_MODE_STREAM, NULL, &db,
                       &err) != HS_SUCCESS) {
    snprintf(why, sizeof why, "Vectorscan rejects matcher %d: %s", err ? err->expression : -1,
             err ? err->message : "?");
    hs_free_compile_error(err);
    fail = why;
  } else if (hs_alloc_scratch(db, &scratch) != HS_SUCCESS) {
    fail = "hs_alloc_scratch failed";
  }
  for (unsigned m = 0; m < NMATCH; m++)
    free(exprs[m]);
  return fail;
}

/* The calling thread's CPU time in seconds, to the nanosecond: for the
 * share of each body kind, taken body by body. */
static double thread_cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One run of an engine over total bytes (whole passes over the arena, the
 * last one cut short at a body's end): bytes, thread CPU and wall into *r,
 * with the CPU and bytes of each body kind for the best run; verdicts of
 * the last pass into v. */
static bool engine_run(bool (*scan_body)(const unsigned char *, size_t, verdict_bits *),
                       size_t total, verdict_bits *v, match_engine *r)
{
  double kind_cpu[MB_KINDS] = {0};
  uint64_t kind_bytes[MB_KINDS] = {0};
  double c0 = cpu_s(RUSAGE_THREAD), t0 = now_s();
  uint64_t bytes = 0;
  bool ok = true;
  while (ok && bytes < total)
    for (size_t i = 0; ok && i < nbodies && bytes < total; i++) {
      double b0 = thread_cpu_s();
      ok = scan_body(arena + bodies[i].off, bodies[i].len, &v[i]);
      kind_cpu[bodies[i].kind] += thread_cpu_s() - b0;
      kind_bytes[bodies[i].kind] += bodies[i].len;
      bytes += bodies[i].len;
    }
  double cpu = cpu_s(RUSAGE_THREAD) - c0, wall = now_s() - t0;
  if (!r->runs || (double)bytes / cpu > r->bps_cpu) {
    r->bps_cpu = (double)bytes / cpu;
    r->bps_wall = (double)bytes / wall;
    memcpy(r->kind_cpu, kind_cpu, sizeof kind_cpu);
    memcpy(r->kind_bytes, kind_bytes, sizeof kind_bytes);
  }
  r->bytes = bytes;
  r->runs++;
  return ok;
}

static void release(void)
{
  free(arena);
  free(bodies);
  free(v_hs);
  free(v_posix);
  arena = NULL;
  bodies = NULL;
  v_hs = v_posix = NULL;
  nbodies = 0;
  for (unsigned m = 0; m < NRE; m++)
    regfree(&re[m]);
  hs_free_scratch(scratch);
  hs_free_database(db);
  scratch = NULL;
  db = NULL;
}

/* Compares the verdicts of the two engines body by body. */
static void compare(match_result *m)
{
  m->bodies = nbodies;
  for (size_t i = 0; i < nbodies; i++) {
    if (memcmp(&v_hs[i], &v_posix[i], sizeof v_hs[i]) != 0 && m->disagree++ < 5) {
      for (unsigned b = 0; b < NMATCH; b++) {
        bool h = v_hs[i].w[b / 64] >> (b % 64) & 1, p = v_posix[i].w[b / 64] >> (b % 64) & 1;
        if (h != p)
          fprintf(stderr, "  match: body %zu (%zu bytes): matcher %u: Vectorscan %d, POSIX %d\n", i,
                  bodies[i].len, b, h, p);
      }
    }
    for (unsigned b = 0; b < NMATCH; b++)
      if (v_posix[i].w[b / 64] >> (b % 64) & 1) {
        m->hits++;
        m->hit_by[b] = true;
      }
  }
  for (unsigned b = 0; b < NMATCH; b++)
    m->matchers_hit += m->hit_by[b];
}

void run_match(const scenario *sc)
{
  match_result *m = &match_res;
  memset(m, 0, sizeof *m);
  m->nlit = NLIT;
  m->nre = NRE;
  make_literals();
  for (unsigned i = 0; i < NRE; i++)
    if (regcomp(&re[i], REGEXES[i], REG_EXTENDED | REG_NOSUB) != 0) {
      fprintf(stderr, "bench: regcomp refuses %s\n", REGEXES[i]);
      exit(1);
    }
  const char *why = compile_db();
  if (why) {
    fprintf(stderr, "bench: match: %s\n", why);
    exit(1);
  }
  size_t n = sc->size < ARENA ? sc->size : ARENA;
  fprintf(stderr, "match: generating %.0f MiB of bodies ... ", mib((double)n));
  fflush(stderr);
  if (!make_bodies(n) || !(v_hs = calloc(nbodies, sizeof *v_hs)) ||
      !(v_posix = calloc(nbodies, sizeof *v_posix))) {
    fprintf(stderr, "bench: no memory for the match scenario\n");
    exit(1);
  }
  m->arena = n;
  fprintf(stderr, "%zu bodies\n", nbodies);
  for (int pass = 0; pass < opt_runs; pass++)
    for (int j = 0; j < 2; j++) {
      bool vs = (pass + j) % 2 == 0;
      fprintf(stderr, "match: %-10s run %d/%d ... ", vs ? "vectorscan" : "posix", pass + 1,
              opt_runs);
      fflush(stderr);
      match_engine *e = vs ? &m->hs : &m->posix;
      if (!engine_run(vs ? hs_body : posix_body, sc->size, vs ? v_hs : v_posix, e)) {
        fprintf(stderr, "bench: match: a Vectorscan stream failed\n");
        m->failed = true;
      }
      fprintf(stderr, "%.3f GB/s (thread CPU)\n", e->bps_cpu / 1e9);
    }
  compare(m);
  m->ran = true;
  release();
}
#else
void run_match(const scenario *sc) { (void)sc; }
#endif
