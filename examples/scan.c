/* scan: a concurrent HTTP scanner on one curl multi handle, in the manner of
 * template scanners such as nuclei: fetch many targets at once, run simple
 * matchers over each response, print one JSON line per target.
 *
 *   scan [options] [-l FILE]     targets from FILE, or from stdin
 *   scan --demo [options]        a built-in workload against a loopback server
 *
 * Run "scan --help" for the options, the matching rule and the output.
 *
 * How it is put together (the part worth copying):
 *  - One pool for the whole scan, optionally with a memory budget.
 *  - One slot per unit of concurrency. A slot owns an easy handle and a
 *    response, both made once and attached once (rc_attach); a target only
 *    changes CURLOPT_URL. CURLOPT_PRIVATE maps a finished easy handle back to
 *    its slot.
 *  - The multi loop of respchain.h: curl_multi_perform; then each finished
 *    transfer is reported and its response reset at once, so its memory goes
 *    back to the pool (and to the budget) before the slot takes the next
 *    target; then rc_multi_poll, which sleeps like curl_multi_poll and also
 *    resumes the transfers that the budget paused.
 *  - Targets are read one at a time as slots free up, so a list of any length
 *    is scanned in constant memory.
 *
 * Exit status: 0 the scan ran (whatever the targets answered); 1 usage;
 * 2 setup failure (a file, curl, memory, the demo server). */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "respchain.h"
#include "server.h"

#define DEFAULT_CONCURRENCY 50
#define DEFAULT_MAX_REDIRS 10L
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS 30000L
#define PROGRESS_INTERVAL 0.1 /* seconds between progress line updates */

#define MiB (1024.0 * 1024.0)

/* ---- Options ------------------------------------------------------------ */

/* What --word and --regex look at. */
typedef enum part {
  PART_BODY,   /* the final body, decoded */
  PART_HEADER, /* the final response's raw header block */
  PART_ALL     /* that header block followed by the body */
} part;

typedef struct options {
  const char *list; /* -l FILE; NULL: stdin */
  int demo;
  long concurrency;
  size_t max_body;
  long max_redirs;
  long connect_timeout_ms, timeout_ms; /* 0: none */
  size_t budget;                       /* 0: off */
  int insecure;
  /* Matchers. Each option may repeat; the arrays have room for argc. */
  long *statuses;
  size_t nstatuses;
  const char **words;
  size_t nwords;
  regex_t *regexes;
  size_t nregexes;
  part part;
} options;

static void usage(FILE *out)
{
  fputs(
      "usage: scan [options] [-l FILE]\n"
      "       scan --demo [options]\n"
      "\n"
      "Fetches every target URL (one per line, from FILE or stdin; blank lines\n"
      "and lines starting with '#' are skipped), runs the matchers over each\n"
      "response and prints one JSON line per target, in the order the transfers\n"
      "finish.\n"
      "\n"
      "Transfers:\n"
      "  -c, --concurrency N     transfers at once (default 50)\n"
      "      --max-body SIZE     body bytes kept per target, counted after\n"
      "                          gzip/deflate decoding (default 8m; suffixes k,\n"
      "                          m, g); a longer body is cut there and reported\n"
      "                          as \"truncated\": true\n"
      "  -L, --max-redirs N      redirects followed per target (default 10;\n"
      "                          0: none, a redirect is the final response)\n"
      "      --connect-timeout SEC   (default 10; 0: curl's default)\n"
      "      --timeout SEC       whole transfer, waits for the budget included\n"
      "                          (default 30; 0: none)\n"
      "      --budget SIZE       memory budget for all responses together\n"
      "                          (default off): transfers that would pass it are\n"
      "                          paused until memory is released\n"
      "  -k, --insecure          do not verify TLS certificates\n"
      "\n"
      "Matchers (each may be repeated):\n"
      "      --status CODE       the final status is CODE\n"
      "      --word WORD         WORD occurs (case-sensitive bytes)\n"
      "      --regex ERE         the POSIX extended regex matches somewhere\n"
      "      --part PART         what --word and --regex look at: body (the\n"
      "                          decoded body, the default), header (the final\n"
      "                          response's header block, status line to blank\n"
      "                          line) or all (that header block and the body)\n"
      "A target matches when a response arrived and every kind of matcher given\n"
      "has a hit: its status is one of the --status codes, AND one of the --word\n"
      "words occurs, AND one of the --regex expressions matches. Without\n"
      "matchers every target that got a response matches. Matchers look at\n"
      "what was kept: a body cut at --max-body, or one whose transfer failed\n"
      "midway, is matched as far as it arrived. Regexes see the text as\n"
      "bytes (C locale), NUL bytes included; ^ and $ anchor at its start and\n"
      "end only, and '.' matches line breaks but not NUL.\n"
      "\n"
      "  --demo       scan a built-in workload of 400 targets against a loopback\n"
      "               server started in this process (offline); without\n"
      "               matchers it uses --status 200 --word officia\n"
      "  -h, --help   this text\n"
      "\n"
      "Output, one JSON object per line:\n"
      "  url, final_url (after redirects), status (0: no response), hops\n"
      "  (responses received, redirects and 1xx included), body_bytes (kept),\n"
      "  truncated, encoding (identity, decoded, unsupported, not-decoded),\n"
      "  matched, error (null, or what went wrong; a truncated body is not an\n"
      "  error), time_ms (from the start of the transfer to its end, waits for\n"
      "  a connection or for the budget included).\n"
      "A progress line (on a terminal) and a summary go to stderr.\n"
      "\n"
      "Exit status: 0 the scan ran, whatever the targets answered; 1 usage;\n"
      "2 setup failure.\n",
      out);
}

/* A byte count with an optional k, m or g suffix (powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (end == s || *s == '-' || *end || errno || v > SIZE_MAX / mul)
    return -1;
  *out = (size_t)(v * mul);
  return 0;
}

/* A whole number in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Seconds, fractions allowed, as milliseconds. */
static int parse_seconds(const char *s, long *ms)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !(v >= 0.0) || v > (double)(LONG_MAX / 1000))
    return -1;
  *ms = (long)(v * 1000.0 + 0.5);
  return 0;
}

enum {
  OPT_MAX_BODY = 256, OPT_CONNECT_TIMEOUT, OPT_TIMEOUT, OPT_BUDGET,
  OPT_STATUS, OPT_WORD, OPT_REGEX, OPT_PART, OPT_DEMO
};

static const struct option LONG_OPTIONS[] = {
    {"list", required_argument, NULL, 'l'},
    {"concurrency", required_argument, NULL, 'c'},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-redirs", required_argument, NULL, 'L'},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"insecure", no_argument, NULL, 'k'},
    {"status", required_argument, NULL, OPT_STATUS},
    {"word", required_argument, NULL, OPT_WORD},
    {"regex", required_argument, NULL, OPT_REGEX},
    {"part", required_argument, NULL, OPT_PART},
    {"demo", no_argument, NULL, OPT_DEMO},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Reports a bad value for an option; returns 1 (usage). */
static int bad_value(const char *what, const char *value)
{
  fprintf(stderr, "scan: invalid %s: '%s' (see scan --help)\n", what, value);
  return 1;
}

/* Fills o from the command line. Returns 0 to go on, 1 for a usage error,
 * -1 after --help. Regexes are compiled here, once for the whole scan. */
static int parse_options(int argc, char **argv, options *o)
{
  memset(o, 0, sizeof *o);
  o->concurrency = DEFAULT_CONCURRENCY;
  o->max_body = RC_DEFAULT_MAX_BODY;
  o->max_redirs = DEFAULT_MAX_REDIRS;
  o->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  o->timeout_ms = DEFAULT_TIMEOUT_MS;
  o->part = PART_BODY;
  o->statuses = calloc((size_t)argc, sizeof *o->statuses);
  o->words = calloc((size_t)argc, sizeof *o->words);
  o->regexes = calloc((size_t)argc, sizeof *o->regexes);
  if (!o->statuses || !o->words || !o->regexes) {
    fputs("scan: out of memory\n", stderr);
    return 1;
  }

  int opt;
  while ((opt = getopt_long(argc, argv, "l:c:L:kh", LONG_OPTIONS, NULL)) != -1) {
    switch (opt) {
    case 'l': o->list = optarg; break;
    case 'c':
      if (parse_long(optarg, 1, 100000, &o->concurrency))
        return bad_value("concurrency", optarg);
      break;
    case OPT_MAX_BODY:
      if (parse_size(optarg, &o->max_body))
        return bad_value("body size", optarg);
      break;
    case 'L':
      if (parse_long(optarg, 0, 1000, &o->max_redirs))
        return bad_value("redirect limit", optarg);
      break;
    case OPT_CONNECT_TIMEOUT:
      if (parse_seconds(optarg, &o->connect_timeout_ms))
        return bad_value("timeout", optarg);
      break;
    case OPT_TIMEOUT:
      if (parse_seconds(optarg, &o->timeout_ms))
        return bad_value("timeout", optarg);
      break;
    case OPT_BUDGET:
      if (parse_size(optarg, &o->budget))
        return bad_value("budget", optarg);
      break;
    case 'k': o->insecure = 1; break;
    case OPT_STATUS:
      if (parse_long(optarg, 100, 999, &o->statuses[o->nstatuses]))
        return bad_value("status", optarg);
      o->nstatuses++;
      break;
    case OPT_WORD:
      if (!*optarg)
        return bad_value("word", optarg);
      o->words[o->nwords++] = optarg;
      break;
    case OPT_REGEX: {
      /* REG_NOSUB: only whether it matches is wanted, which is faster. */
      int err = regcomp(&o->regexes[o->nregexes], optarg, REG_EXTENDED | REG_NOSUB);
      if (err) {
        char msg[256];
        regerror(err, &o->regexes[o->nregexes], msg, sizeof msg);
        fprintf(stderr, "scan: invalid regex '%s': %s\n", optarg, msg);
        return 1;
      }
      o->nregexes++;
      break;
    }
    case OPT_PART:
      if (!strcmp(optarg, "body")) o->part = PART_BODY;
      else if (!strcmp(optarg, "header")) o->part = PART_HEADER;
      else if (!strcmp(optarg, "all")) o->part = PART_ALL;
      else return bad_value("part", optarg);
      break;
    case OPT_DEMO: o->demo = 1; break;
    case 'h': usage(stdout); return -1;
    default: usage(stderr); return 1;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "scan: unexpected argument '%s' (targets go in a file: -l)\n",
            argv[optind]);
    return 1;
  }
  if (o->demo && o->list) {
    fputs("scan: --demo brings its own targets; drop -l\n", stderr);
    return 1;
  }
  return 0;
}

static void options_free(options *o)
{
  for (size_t i = 0; i < o->nregexes; i++)
    regfree(&o->regexes[i]);
  free(o->regexes);
  free(o->words);
  free(o->statuses);
}

/* ---- Targets ------------------------------------------------------------ */

/* Where targets come from: a stream read line by line, or a list in memory
 * (the demo). */
typedef struct targets {
  FILE *in;     /* NULL: use list */
  char *line;   /* getline's buffer */
  size_t cap;
  char **list;  /* owned, with every string */
  size_t count, next;
} targets;

/* The next target as a new string (the caller frees it), or NULL at the
 * end. Surrounding white space is dropped; blank lines and # comments are
 * skipped. */
static char *next_target(targets *t)
{
  if (!t->in) {
    if (t->next == t->count)
      return NULL;
    char *url = t->list[t->next];
    t->list[t->next++] = NULL;  /* handed over */
    return url;
  }
  ssize_t n;
  while ((n = getline(&t->line, &t->cap, t->in)) >= 0) {
    char *s = t->line, *end = t->line + n;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
      s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' ||
                       end[-1] == '\n'))
      end--;
    if (s == end || *s == '#')
      continue;
    *end = '\0';
    return strdup(s);  /* NULL on out of memory ends the scan early */
  }
  return NULL;
}

static void targets_free(targets *t)
{
  for (size_t i = t->next; i < t->count; i++)
    free(t->list[i]);
  free(t->list);
  free(t->line);
}

/* ---- The demo workload -------------------------------------------------- */

#define DEMO_TARGETS 400

/* A word of the server's body pattern (its dictionary holds "officia "):
 * the demo's default --word, found in most bodies but not in every small one. */
#define DEMO_WORD "officia"

/* The server's odd cases, spread through the scan. */
static const char *const DEMO_SPECIAL[] = {
    "/status?code=404&n=512",    /* an error status with a body */
    "/status?code=204",          /* no body at all */
    "/bomb",                     /* gzip of 1 GiB of zeros: cut at --max-body */
    "/lie?claim=1G&send=100",    /* a Content-Length that lies: partial file */
    "/trailers?n=100k",          /* chunked, with trailers after the body */
    "/hints?n=4k",               /* 103 Early Hints, then 200: two hops */
    "/gzip?n=256k&coding=gzip2", /* "gzip, gzip": decoded twice */
    "/encoding?value=br&n=4k",   /* a coding that is not decoded */
    "/corrupt?kind=crc",         /* a broken gzip stream */
    "/nowhere",                  /* an unknown path: 404 */
    "/redirect?n=12",            /* more redirects than the default limit */
    "/loop",                     /* a redirect to itself */
};

/* The demo's targets: mostly small bodies (1-100 KiB), 25 large ones
 * (1-8 MiB), gzip and deflate bodies, redirect chains and the odd cases
 * above, interleaved so that every stretch of the scan has a mix. */
static int demo_targets(const ts_server *srv, targets *t)
{
  t->list = calloc(DEMO_TARGETS, sizeof *t->list);
  if (!t->list)
    return -1;
  size_t special = 0, nspecial = sizeof DEMO_SPECIAL / sizeof DEMO_SPECIAL[0];
  for (size_t i = 0; i < DEMO_TARGETS; i++) {
    char path[128], url[192];
    if (i % 32 == 16 && special < nspecial)
      snprintf(path, sizeof path, "%s", DEMO_SPECIAL[special++]);
    else if (i % 16 == 5)
      snprintf(path, sizeof path, "/bytes?n=%zuM", i / 16 % 8 + 1);
    else if (i % 8 == 3)
      snprintf(path, sizeof path, "/gzip?n=%zuk&coding=gzip", (size_t)16 << (i / 8 % 5));
    else if (i % 8 == 7)
      snprintf(path, sizeof path, "/gzip?n=%zuk&coding=deflate&te=chunked",
               (size_t)16 << (i / 8 % 5));
    else if (i % 16 == 10)  /* n + 1 redirects, then a small body */
      snprintf(path, sizeof path, "/redirect?n=%zu&to=%%2Fbytes%%3Fn%%3D%zu",
               i / 16 % 3 + 1, 512 + i);
    else
      snprintf(path, sizeof path, "/bytes?n=%zu%s", 1024 + i * 7919 % 100 * 1024,
               i % 3 ? "" : "&te=chunked");
    if (!(t->list[i] = strdup(ts_url(srv, path, url, sizeof url))))
      return -1;
    t->count++;
  }
  return 0;
}

/* ---- Matching ----------------------------------------------------------- */

/* Whether needle (nlen > 0 bytes) occurs in hay. */
static int contains(rc_view hay, const char *needle, size_t nlen)
{
  const char *p = hay.ptr, *end = hay.ptr + hay.len;
  while ((size_t)(end - p) >= nlen) {
    p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);
    if (!p)
      return 0;
    if (memcmp(p, needle, nlen) == 0)
      return 1;
    p++;
  }
  return 0;
}

/* Whether re matches somewhere in text. Views are not NUL-terminated in
 * general (a hop's header block is not) and bodies may hold NUL bytes, so the
 * text is delimited with REG_STARTEND (glibc, the BSDs, macOS) rather than
 * by a terminating NUL. glibc's offsets are int: past 2 GiB only the start is
 * searched. */
static int regex_hit(const regex_t *re, rc_view text)
{
#ifdef REG_STARTEND
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = (regoff_t)(text.len < INT_MAX ? text.len : INT_MAX);
  return regexec(re, text.ptr, 1, range, REG_STARTEND) == 0;
#else
  /* Without REG_STARTEND: a NUL-terminated copy, in which matching stops at
   * the first NUL byte of the text. */
  char *copy = strndup(text.ptr, text.len);
  int hit = copy && regexec(re, copy, 0, NULL, 0) == 0;
  free(copy);
  return hit;
#endif
}

/* The text --word and --regex look at. rc_full_response assembles (and
 * caches in the response) the header block followed by the body: it costs a
 * copy, so it is only asked for here, when a matcher needs it. */
static rc_code part_text(part p, rc_response *resp, rc_view *out)
{
  rc_hop_info last;
  switch (p) {
  case PART_HEADER:
    if (rc_hop(resp, -1, &last) != RC_OK)
      return RC_E_RANGE;
    *out = last.raw;
    return RC_OK;
  case PART_ALL:
    return rc_full_response(resp, out);
  default:
    *out = rc_body(resp);
    return RC_OK;
  }
}

/* The matching rule (see usage): every kind of matcher given needs a hit.
 * Cheap checks first: the text is only looked at when the status passed.
 * *err is set when the text to match could not be had. */
static int matches(const options *o, rc_response *resp, rc_code *err)
{
  *err = RC_OK;
  if (rc_hop_count(resp) == 0)
    return 0;  /* no response arrived */
  if (o->nstatuses) {
    size_t i = 0;
    while (i < o->nstatuses && o->statuses[i] != rc_status(resp))
      i++;
    if (i == o->nstatuses)
      return 0;
  }
  if (!o->nwords && !o->nregexes)
    return 1;
  rc_view text;
  if ((*err = part_text(o->part, resp, &text)) != RC_OK)
    return 0;
  if (o->nwords) {
    size_t i = 0;
    while (i < o->nwords && !contains(text, o->words[i], strlen(o->words[i])))
      i++;
    if (i == o->nwords)
      return 0;
  }
  if (o->nregexes) {
    size_t i = 0;
    while (i < o->nregexes && !regex_hit(&o->regexes[i], text))
      i++;
    if (i == o->nregexes)
      return 0;
  }
  return 1;
}

/* ---- Output ------------------------------------------------------------- */

/* s as a JSON string (null for NULL): quote and backslash escaped, control
 * bytes as \u00XX, every other byte as it is. */
static void json_string(FILE *out, const char *s)
{
  if (!s) {
    fputs("null", out);
    return;
  }
  putc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      putc(*p, out);
  }
  putc('"', out);
}

static const char *encoding_name(rc_encoding e)
{
  switch (e) {
  case RC_ENC_DECODED: return "decoded";
  case RC_ENC_UNSUPPORTED: return "unsupported";
  case RC_ENC_NOT_DECODED: return "not-decoded";
  default: return "identity";
  }
}

/* ---- The scan ----------------------------------------------------------- */

/* One unit of concurrency: a transfer at a time. */
typedef struct slot {
  CURL *easy;
  rc_response *resp;
  char *url;                       /* the target as given; NULL when idle */
  struct timespec started;         /* when the transfer was handed to curl */
  char errbuf[CURL_ERROR_SIZE];    /* curl's detailed message for a failure */
} slot;

typedef struct scan {
  const options *opt;
  rc_pool *pool;
  CURLM *multi;
  slot *slots;
  size_t nslots;
  targets src;
  size_t active;                   /* transfers in the multi handle */
  unsigned long done, matched, errors;
  uint64_t body_bytes, wire_bytes;
  struct timespec start;
  double last_progress;
  int progress;                    /* stderr is a terminal */
} scan;

static double seconds_since(const struct timespec *t0)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Makes the slot's easy handle and response, and sets every option that
 * stays the same from one target to the next. */
static int slot_init(scan *s, slot *sl, const rc_limits *lim)
{
  const options *o = s->opt;
  if (rc_response_new(s->pool, lim, &sl->resp) != RC_OK || !(sl->easy = curl_easy_init()))
    return -1;
  /* The response's callbacks; it decodes gzip/deflate itself, so that
   * --max-body counts decoded bytes. */
  if (rc_attach(sl->resp, sl->easy) != RC_OK)
    return -1;
  CURL *e = sl->easy;
  int ok =
      curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)sl) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_ERRORBUFFER, sl->errbuf) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, o->max_redirs > 0 ? 1L : 0L) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_MAXREDIRS, o->max_redirs) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms) == CURLE_OK &&
      /* Targets come from outside: only web URLs, also after a redirect. */
      curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_USERAGENT, "respchain-scan/" RC_VERSION) == CURLE_OK &&
      curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
  if (ok && o->insecure)
    ok = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
  return ok ? 0 : -1;
}

/* Prints the slot's result as one JSON line and counts it. performed is 0
 * when the transfer could not even be started (cc says why). */
static void report(scan *s, slot *sl, CURLcode cc, int performed)
{
  rc_response *r = sl->resp;
  rc_code rc = rc_result(r, cc);
  rc_code match_err;
  int matched = matches(s->opt, r, &match_err);

  /* A body cut at the cap is reported by "truncated", not as an error. */
  char error[CURL_ERROR_SIZE + 128];
  const char *err = NULL;
  if (rc == RC_E_TRANSFER) {
    snprintf(error, sizeof error, "%s: %s", rc_strerror(rc),
             sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(cc));
    err = error;
  } else if (rc != RC_OK && rc != RC_TRUNCATED) {
    err = rc_strerror(rc);
  } else if (match_err != RC_OK) {
    snprintf(error, sizeof error, "matching: %s", rc_strerror(match_err));
    err = error;
  }

  char *final_url = NULL;
  curl_off_t wire = 0;
  if (performed) {
    curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &final_url);
    curl_easy_getinfo(sl->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
  }
  rc_view body = rc_body(r);

  FILE *out = stdout;
  fputs("{\"url\":", out);
  json_string(out, sl->url);
  fputs(",\"final_url\":", out);
  json_string(out, final_url);
  fprintf(out, ",\"status\":%d,\"hops\":%zu,\"body_bytes\":%zu,\"truncated\":%s,"
               "\"encoding\":\"%s\",\"matched\":%s,\"error\":",
          rc_status(r), rc_hop_count(r), body.len, rc_truncated(r) ? "true" : "false",
          encoding_name(rc_body_encoding(r)), matched ? "true" : "false");
  json_string(out, err);
  fprintf(out, ",\"time_ms\":%.1f}\n", seconds_since(&sl->started) * 1000.0);

  s->done++;
  s->matched += matched != 0;
  s->errors += err != NULL;
  s->body_bytes += body.len;
  s->wire_bytes += (uint64_t)wire;
}

/* Gives the slot its next target and starts the transfer. Returns 1 when a
 * transfer started, 0 when the targets are used up. */
static int slot_start(scan *s, slot *sl)
{
  while ((sl->url = next_target(&s->src)) != NULL) {
    sl->errbuf[0] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &sl->started);
    CURLcode cc = curl_easy_setopt(sl->easy, CURLOPT_URL, sl->url);
    if (cc == CURLE_OK && curl_multi_add_handle(s->multi, sl->easy) == CURLM_OK) {
      s->active++;
      return 1;
    }
    /* Not startable (e.g. a URL past curl's length limit): reported as such,
     * and on to the next target. */
    report(s, sl, cc != CURLE_OK ? cc : CURLE_FAILED_INIT, 0);
    rc_response_reset(sl->resp);
    free(sl->url);
  }
  return 0;
}

static void show_progress(scan *s, int force)
{
  if (!s->progress)
    return;
  double t = seconds_since(&s->start);
  if (!force && t - s->last_progress < PROGRESS_INTERVAL)
    return;
  s->last_progress = t;
  /* \r returns to the line's start, ESC[K clears what the last update left. */
  fprintf(stderr, "\rscan: %lu done, %zu running, %lu matched, %lu errors, %.0f req/s\033[K",
          s->done, s->active, s->matched, s->errors, t > 0 ? (double)s->done / t : 0.0);
  fflush(stderr);
}

/* Reads every finished transfer: report, reset, refill. */
static void collect(scan *s)
{
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    /* msg is invalid once its handle is removed: read it first. */
    CURL *easy = msg->easy_handle;
    CURLcode cc = msg->data.result;
    char *priv;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    slot *sl = (slot *)(void *)priv;
    curl_multi_remove_handle(s->multi, easy);
    s->active--;

    report(s, sl, cc, 1);
    /* At once: the response's memory goes back to the pool, and to the
     * budget, where paused transfers may be waiting for it. */
    rc_response_reset(sl->resp);
    free(sl->url);
    sl->url = NULL;
    slot_start(s, sl);
  }
}

/* Runs the whole scan. Returns 0, or -1 when curl's multi interface fails. */
static int run(scan *s)
{
  for (size_t i = 0; i < s->nslots && slot_start(s, &s->slots[i]); i++)
    ;
  while (s->active > 0) {
    int running;
    CURLMcode mc = curl_multi_perform(s->multi, &running);
    if (mc == CURLM_OK) {
      collect(s);
      show_progress(s, 0);
      if (s->active == 0)
        break;
      /* Waits for activity (at most a second), and resumes the transfers the
       * budget paused once memory for them is released. */
      mc = rc_multi_poll(s->pool, s->multi, NULL, 0, 1000, NULL);
    }
    if (mc != CURLM_OK) {
      fprintf(stderr, "\nscan: curl multi: %s\n", curl_multi_strerror(mc));
      return -1;
    }
  }
  show_progress(s, 1);
  if (s->progress)
    fputc('\n', stderr);
  return 0;
}

/* The summary on stderr: throughput, memory, and what the pool did. */
static void summary(scan *s)
{
  double t = seconds_since(&s->start);
  fprintf(stderr, "scan: %lu requests in %.2f s, %.1f requests/s; %lu matched, %lu errors\n",
          s->done, t, t > 0 ? (double)s->done / t : 0.0, s->matched, s->errors);
  fprintf(stderr, "scan: received %.1f MiB of bodies (%.1f MiB on the wire)\n",
          (double)s->body_bytes / MiB, (double)s->wire_bytes / MiB);
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)  /* ru_maxrss: KiB on Linux */
    fprintf(stderr, "scan: peak RSS %.1f MiB%s\n", (double)ru.ru_maxrss / 1024.0,
            s->opt->demo ? " (the demo server included)" : "");
  rc_pool_stats st;
  rc_pool_stats_get(s->pool, &st);
  fprintf(stderr,
          "scan: pool: %llu acquisitions (%llu reuses, %llu fresh), %llu discards, "
          "peak in use %.1f MiB, %llu pauses",
          (unsigned long long)st.acquisitions, (unsigned long long)st.reuses,
          (unsigned long long)st.fresh, (unsigned long long)st.discards,
          (double)st.peak_in_use / MiB, (unsigned long long)st.pauses);
  if (s->opt->budget)
    fprintf(stderr, " (budget %.1f MiB)", (double)s->opt->budget / MiB);
  fputc('\n', stderr);
}

/* ---- Setup -------------------------------------------------------------- */

int main(int argc, char **argv)
{
  options opt;
  int rc = parse_options(argc, argv, &opt);
  if (rc != 0) {
    options_free(&opt);
    return rc < 0 ? 0 : 1;
  }

  scan s;
  memset(&s, 0, sizeof s);
  s.opt = &opt;
  s.progress = isatty(STDERR_FILENO);
  ts_server *srv = NULL;
  int status = 2;  /* until the scan has run */

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs("scan: curl_global_init failed\n", stderr);
    options_free(&opt);
    return 2;
  }

  /* Targets. */
  if (opt.demo) {
    if (!(srv = ts_start())) {
      fputs("scan: cannot start the demo server\n", stderr);
      goto out;
    }
    if (demo_targets(srv, &s.src) != 0) {
      fputs("scan: out of memory\n", stderr);
      goto out;
    }
    if (!opt.nstatuses && !opt.nwords && !opt.nregexes) {
      opt.statuses[opt.nstatuses++] = 200;
      opt.words[opt.nwords++] = DEMO_WORD;
    }
    char base[64];
    fprintf(stderr, "scan: demo: %d targets on %s\n", DEMO_TARGETS,
            ts_url(srv, "", base, sizeof base));
  } else if (opt.list) {
    if (!(s.src.in = fopen(opt.list, "r"))) {
      fprintf(stderr, "scan: %s: %s\n", opt.list, strerror(errno));
      goto out;
    }
  } else {
    s.src.in = stdin;
  }

  /* The pool: one for the whole scan; the budget bounds what all responses
   * hold at once. */
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = opt.budget;
  if (rc_pool_new(&cfg, &s.pool) != RC_OK) {
    fputs("scan: cannot create the pool\n", stderr);
    goto out;
  }

  /* Limits of every response: the body cap, and room for every hop of a
   * redirect chain plus a few 1xx interim responses. */
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = opt.max_body;
  lim.max_hops = (size_t)opt.max_redirs + 8;
  lim.on_cap = RC_CAP_STOP;  /* a scanner has no use for the rest */

  s.nslots = (size_t)opt.concurrency;
  s.slots = calloc(s.nslots, sizeof *s.slots);
  s.multi = curl_multi_init();
  if (!s.slots || !s.multi) {
    fputs("scan: out of memory\n", stderr);
    goto out;
  }
  for (size_t i = 0; i < s.nslots; i++) {
    if (slot_init(&s, &s.slots[i], &lim) != 0) {
      fputs("scan: cannot set up a transfer (out of memory?)\n", stderr);
      goto out;
    }
  }

  clock_gettime(CLOCK_MONOTONIC, &s.start);
  if (run(&s) != 0)
    goto out;
  status = 0;
  if (s.src.in && ferror(s.src.in)) {
    fprintf(stderr, "scan: reading targets failed\n");
    status = 2;
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "scan: writing results failed\n");
    status = 2;
  }
  summary(&s);

out:
  /* Easy handles leave the multi handle before either is cleaned up. */
  for (size_t i = 0; s.slots && i < s.nslots; i++) {
    slot *sl = &s.slots[i];
    if (sl->url && s.multi)
      curl_multi_remove_handle(s.multi, sl->easy);
    free(sl->url);
    if (sl->easy)
      curl_easy_cleanup(sl->easy);
    rc_response_free(sl->resp);
  }
  free(s.slots);
  if (s.multi)
    curl_multi_cleanup(s.multi);
  rc_pool_free(s.pool);
  if (s.src.in && s.src.in != stdin)
    fclose(s.src.in);
  targets_free(&s.src);
  ts_stop(srv);
  curl_global_cleanup();
  options_free(&opt);
  return status;
}
