/* scan: a concurrent HTTP scanner on one curl multi handle, in the manner of
 * template scanners such as nuclei and httpx: fetch many targets at once,
 * run simple matchers over each response, print one JSON line per target.
 *
 *   scan [options] -u URL [-u URL ...]
 *   scan [options] [-l FILE]          targets from FILE ("-": stdin)
 *
 * Run "scan --help" for the options, the matching rule and the output; the
 * man page is doc/scan.1. "demo" (examples/demo.c) runs scan against a
 * loopback server it starts itself.
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
 *    is scanned in constant memory. A slot waits, out of the multi handle,
 *    for its turn under --rate and for the backoff before a retry.
 *
 * Exit status: 0 the scan ran (whatever the targets answered); 1 setup
 * failure (a file, curl, memory); 2 usage.
 *
 * Builds alone: cc scan.c $(pkg-config --cflags --libs respchain) */
/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
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

#define DEFAULT_CONCURRENCY        50
#define DEFAULT_MAX_REDIRS         10L
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS         30000L
#define PROGRESS_INTERVAL          0.1 /* seconds between progress line updates */
#define RETRY_BACKOFF              0.2 /* seconds before the first retry; doubles */
#define RETRY_BACKOFF_MAX          10.0

#define MiB (1024.0 * 1024.0)

enum { EXIT_RAN = 0, EXIT_SETUP = 1, EXIT_USAGE = 2 };

/* ---- Options ------------------------------------------------------------ */

/* What --word and --regex look at. */
typedef enum part {
  PART_BODY,   /* the final body, decoded */
  PART_HEADER, /* the final response's raw header block */
  PART_ALL     /* that header block followed by the body */
} part;

typedef struct options {
  const char **urls; /* -u, in order; room for argc */
  size_t nurls;
  const char *list;   /* -l FILE; "-" or NULL without -u: stdin */
  const char *output; /* -o FILE; NULL: stdout */
  long concurrency;
  size_t max_body, max_memory; /* max_memory 0: no limit */
  long max_redirs;
  long connect_timeout_ms, timeout_ms; /* 0: none */
  size_t budget;                       /* 0: off */
  rc_overflow overflow;
  /* The request. */
  struct curl_slist *headers; /* -H, in order */
  const char *method, *data, *proxy, *user_agent;
  long http_version; /* CURL_HTTP_VERSION_*; NONE: curl's */
  int insecure;
  double rate; /* requests per second; 0: no limit */
  long retries;
  /* Output. */
  int matched_only, silent;
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
  fputs("usage: scan [options] -u URL [-u URL ...]\n"
        "       scan [options] [-l FILE]\n"
        "\n"
        "Fetches every target URL (given with -u, then read from FILE, or from\n"
        "stdin when neither is given; in a file, one per line, blank lines and\n"
        "lines starting with '#' skipped), runs the matchers over each response\n"
        "and prints one JSON line per target, in the order the transfers finish.\n"
        "\n"
        "Targets and output:\n"
        "  -u, --url URL           a target (repeatable)\n"
        "  -l, --list FILE         targets from FILE; \"-\" reads stdin\n"
        "  -o, --output FILE       write the JSON lines to FILE, not stdout\n"
        "      --matched-only      print only the targets that matched\n"
        "  -s, --silent            no progress line and no summary on stderr\n"
        "\n"
        "Requests:\n"
        "  -H, --header LINE       add a request header (repeatable)\n"
        "  -X, --request METHOD    request method (default GET, or POST with -d)\n"
        "  -d, --data DATA         send DATA as the request body (POST)\n"
        "      --user-agent TEXT   the User-Agent (default respchain-scan/VERSION)\n"
        "      --proxy URL         send every request through this proxy\n"
        "      --http1.1           use HTTP/1.1\n"
        "      --http2             try HTTP/2 (TLS: ALPN; cleartext: Upgrade)\n"
        "      --http2-prior-knowledge  HTTP/2 without asking first\n"
        "  -k, --insecure          do not verify TLS certificates\n"
        "\n"
        "Transfers:\n"
        "  -c, --concurrency N     transfers at once (default 50)\n"
        "      --rate N            at most N requests per second, all together,\n"
        "                          retries included (fractions allowed; default\n"
        "                          no limit)\n"
        "      --retries N         retry a target up to N times (default 0) after\n"
        "                          a connection error, a timeout or a 5xx status,\n"
        "                          waiting 0.2 s, then twice as long each time\n"
        "      --max-body SIZE     body bytes kept per target, counted after\n"
        "                          decoding (default 8m; suffixes k, m, g); a\n"
        "                          longer body is cut there: \"truncated\": true\n"
        "      --max-memory SIZE   body bytes kept in memory per target; past them\n"
        "                          the body goes to a temporary file (default: no\n"
        "                          limit)\n"
        "  -L, --max-redirs N      redirects followed per target (default 10;\n"
        "                          0: none, a redirect is the final response)\n"
        "      --connect-timeout SEC   (default 10; 0: curl's default)\n"
        "      --timeout SEC       whole transfer, waits for the budget included\n"
        "                          (default 30; 0: none)\n"
        "      --budget SIZE       memory budget for all responses together\n"
        "                          (default off)\n"
        "      --overflow MODE     what a transfer past the budget does: auto\n"
        "                          (HTTP/1.x waits up to 1 s, then spills to a\n"
        "                          temporary file; HTTP/2 spills at once; the\n"
        "                          default), wait (waits, never spills) or spill\n"
        "\n",
        out);
  fputs("Matchers (each may be repeated):\n"
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
        "  -h, --help              this text\n"
        "  -V, --version           the version of scan and of the libraries\n"
        "\n"
        "Output, one JSON object per line:\n"
        "  url, final_url (after redirects), status (0: no response),\n"
        "  http_version (\"1.0\", \"1.1\", \"2\", \"3\"; null: no response), hops\n"
        "  (responses received, redirects and 1xx included), body_bytes (kept),\n"
        "  truncated, encoding (identity, decoded, unsupported, not-decoded),\n"
        "  matched, error (null, or what went wrong; a truncated body is not an\n"
        "  error), attempts (1 + retries made), time_ms (the last attempt, from\n"
        "  its start to its end, waits for a connection or the budget included).\n"
        "Every line is valid UTF-8: a byte of a URL or message that is not part\n"
        "of valid UTF-8 is written as \\u00XX, the code point of the byte's value.\n"
        "A progress line (on a terminal) and a summary go to stderr.\n"
        "\n"
        "Exit status: 0 the scan ran, whatever the targets answered; 1 setup\n"
        "failure (a file, curl, memory); 2 usage.\n",
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
  case 'k':
  case 'K':
    mul = 1ull << 10;
    end++;
    break;
  case 'm':
  case 'M':
    mul = 1ull << 20;
    end++;
    break;
  case 'g':
  case 'G':
    mul = 1ull << 30;
    end++;
    break;
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

/* A number in (0, hi], fractions allowed. */
static int parse_positive(const char *s, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !(v > 0.0) || v > hi)
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

static int parse_overflow(const char *s, rc_overflow *out)
{
  if (!strcmp(s, "auto"))
    *out = RC_OVERFLOW_AUTO;
  else if (!strcmp(s, "wait"))
    *out = RC_OVERFLOW_WAIT;
  else if (!strcmp(s, "spill"))
    *out = RC_OVERFLOW_SPILL;
  else
    return -1;
  return 0;
}

static int parse_part(const char *s, part *out)
{
  if (!strcmp(s, "body"))
    *out = PART_BODY;
  else if (!strcmp(s, "header"))
    *out = PART_HEADER;
  else if (!strcmp(s, "all"))
    *out = PART_ALL;
  else
    return -1;
  return 0;
}

enum {
  OPT_MAX_BODY = 256,
  OPT_MAX_MEMORY,
  OPT_CONNECT_TIMEOUT,
  OPT_TIMEOUT,
  OPT_BUDGET,
  OPT_OVERFLOW,
  OPT_STATUS,
  OPT_WORD,
  OPT_REGEX,
  OPT_PART,
  OPT_PROXY,
  OPT_RATE,
  OPT_RETRIES,
  OPT_HTTP11,
  OPT_HTTP2,
  OPT_HTTP2_PRIOR,
  OPT_USER_AGENT,
  OPT_MATCHED_ONLY
};

static const struct option LONG_OPTIONS[] = {
    {"url", required_argument, NULL, 'u'},
    {"list", required_argument, NULL, 'l'},
    {"output", required_argument, NULL, 'o'},
    {"matched-only", no_argument, NULL, OPT_MATCHED_ONLY},
    {"silent", no_argument, NULL, 's'},
    {"header", required_argument, NULL, 'H'},
    {"request", required_argument, NULL, 'X'},
    {"data", required_argument, NULL, 'd'},
    {"user-agent", required_argument, NULL, OPT_USER_AGENT},
    {"proxy", required_argument, NULL, OPT_PROXY},
    {"http1.1", no_argument, NULL, OPT_HTTP11},
    {"http2", no_argument, NULL, OPT_HTTP2},
    {"http2-prior-knowledge", no_argument, NULL, OPT_HTTP2_PRIOR},
    {"insecure", no_argument, NULL, 'k'},
    {"concurrency", required_argument, NULL, 'c'},
    {"rate", required_argument, NULL, OPT_RATE},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"max-redirs", required_argument, NULL, 'L'},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"overflow", required_argument, NULL, OPT_OVERFLOW},
    {"status", required_argument, NULL, OPT_STATUS},
    {"word", required_argument, NULL, OPT_WORD},
    {"regex", required_argument, NULL, OPT_REGEX},
    {"part", required_argument, NULL, OPT_PART},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* The one-line hint for a bad command line; returns EXIT_USAGE. */
static int bad_usage(const char *what, const char *arg)
{
  fprintf(stderr, "scan: %s '%s'; try 'scan --help'\n", what, arg);
  return EXIT_USAGE;
}

/* The option getopt_long just refused, for the hint. */
static int bad_option(char **argv, int c)
{
  char shortopt[3] = {'-', (char)optopt, '\0'};
  const char *name = optopt > ' ' && optopt < 127 ? shortopt : argv[optind - 1];
  return bad_usage(c == ':' ? "missing value for" : "unknown option", name);
}

/* --regex: compiled once for the whole scan. REG_NOSUB: only whether it
 * matches is wanted, which is faster. */
static int add_regex(options *o, const char *ere)
{
  int err = regcomp(&o->regexes[o->nregexes], ere, REG_EXTENDED | REG_NOSUB);
  if (err) {
    char msg[256];
    regerror(err, &o->regexes[o->nregexes], msg, sizeof msg);
    fprintf(stderr, "scan: invalid regex '%s': %s; try 'scan --help'\n", ere, msg);
    return EXIT_USAGE;
  }
  o->nregexes++;
  return -1;
}

/* -H LINE, appended in order. */
static int add_header(options *o, const char *line)
{
  struct curl_slist *more = curl_slist_append(o->headers, line);
  if (!more) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }
  o->headers = more;
  return -1;
}

/* Options of the request and the output. Returns -1 when taken, -2 when c
 * is not one of them, else the exit status. */
static int take_request_option(options *o, int c)
{
  switch (c) {
  case 'u': o->urls[o->nurls++] = optarg; return -1;
  case 'l': o->list = optarg; return -1;
  case 'o': o->output = optarg; return -1;
  case OPT_MATCHED_ONLY: o->matched_only = 1; return -1;
  case 's': o->silent = 1; return -1;
  case 'H': return add_header(o, optarg);
  case 'X': o->method = optarg; return -1;
  case 'd': o->data = optarg; return -1;
  case OPT_USER_AGENT: o->user_agent = optarg; return -1;
  case OPT_PROXY: o->proxy = optarg; return -1;
  case OPT_HTTP11: o->http_version = CURL_HTTP_VERSION_1_1; return -1;
  case OPT_HTTP2: o->http_version = CURL_HTTP_VERSION_2_0; return -1;
  case OPT_HTTP2_PRIOR: o->http_version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE; return -1;
  case 'k': o->insecure = 1; return -1;
  default: return -2;
  }
}

/* -1 when a value parsed (failed 0), else the usage hint for it. */
static int checked(int failed, const char *what) { return failed ? bad_usage(what, optarg) : -1; }

/* Options of the transfers and the matchers; as take_request_option. */
static int take_transfer_option(options *o, int c)
{
  switch (c) {
  case 'c': return checked(parse_long(optarg, 1, 100000, &o->concurrency), "invalid concurrency");
  case OPT_RATE: return checked(parse_positive(optarg, 1e6, &o->rate), "invalid rate");
  case OPT_RETRIES: return checked(parse_long(optarg, 0, 100, &o->retries), "invalid retry count");
  case OPT_MAX_BODY: return checked(parse_size(optarg, &o->max_body), "invalid size");
  case OPT_MAX_MEMORY: return checked(parse_size(optarg, &o->max_memory), "invalid size");
  case 'L': return checked(parse_long(optarg, 0, 1000, &o->max_redirs), "invalid redirect limit");
  case OPT_CONNECT_TIMEOUT:
    return checked(parse_seconds(optarg, &o->connect_timeout_ms), "invalid timeout");
  case OPT_TIMEOUT: return checked(parse_seconds(optarg, &o->timeout_ms), "invalid timeout");
  case OPT_BUDGET: return checked(parse_size(optarg, &o->budget), "invalid budget");
  case OPT_OVERFLOW: return checked(parse_overflow(optarg, &o->overflow), "invalid overflow mode");
  case OPT_STATUS:
    if (parse_long(optarg, 100, 999, &o->statuses[o->nstatuses]))
      return bad_usage("invalid status", optarg);
    o->nstatuses++;
    return -1;
  case OPT_WORD:
    if (!*optarg)
      return bad_usage("empty word", optarg);
    o->words[o->nwords++] = optarg;
    return -1;
  case OPT_REGEX: return add_regex(o, optarg);
  case OPT_PART: return checked(parse_part(optarg, &o->part), "invalid part");
  default: return -2;
  }
}

/* Fills o from the command line. Returns -1 to go on, else the exit status
 * (after --help, --version or a usage error). */
static int parse_options(int argc, char **argv, options *o)
{
  memset(o, 0, sizeof *o);
  o->concurrency = DEFAULT_CONCURRENCY;
  o->max_body = RC_DEFAULT_MAX_BODY;
  o->max_redirs = DEFAULT_MAX_REDIRS;
  o->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  o->timeout_ms = DEFAULT_TIMEOUT_MS;
  o->overflow = RC_OVERFLOW_AUTO;
  o->http_version = CURL_HTTP_VERSION_NONE;
  o->user_agent = "respchain-scan/" RC_VERSION;
  o->part = PART_BODY;
  o->urls = calloc((size_t)argc, sizeof *o->urls);
  o->statuses = calloc((size_t)argc, sizeof *o->statuses);
  o->words = calloc((size_t)argc, sizeof *o->words);
  o->regexes = calloc((size_t)argc, sizeof *o->regexes);
  if (!o->urls || !o->statuses || !o->words || !o->regexes) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }

  opterr = 0; /* bad options get our one-line hint instead */
  int c;
  while ((c = getopt_long(argc, argv, ":u:l:o:sH:X:d:kc:L:hV", LONG_OPTIONS, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return EXIT_RAN;
    }
    if (c == 'V') {
      printf("scan (respchain) %s\n%s\n", rc_version(), curl_version());
      return EXIT_RAN;
    }
    int status = take_request_option(o, c);
    if (status == -2)
      status = take_transfer_option(o, c);
    if (status == -2)
      return bad_option(argv, c);
    if (status >= 0)
      return status;
  }
  if (optind != argc)
    return bad_usage("unexpected argument (targets go with -u or -l)", argv[optind]);
  return -1;
}

static void options_free(options *o)
{
  for (size_t i = 0; i < o->nregexes; i++)
    regfree(&o->regexes[i]);
  free(o->regexes);
  free(o->words);
  free(o->statuses);
  free(o->urls);
  curl_slist_free_all(o->headers);
}

/* ---- Targets ------------------------------------------------------------ */

/* Where targets come from: the -u URLs, then a stream read line by line. */
typedef struct targets {
  const char *const *urls; /* -u, not owned */
  size_t count, next;
  FILE *in;   /* NULL: none */
  char *line; /* getline's buffer */
  size_t cap;
} targets;

/* The next target as a new string (the caller frees it), or NULL at the
 * end. In a stream, surrounding white space is dropped; blank lines and #
 * comments are skipped. */
static char *next_target(targets *t)
{
  if (t->next < t->count)
    return strdup(t->urls[t->next++]); /* NULL on out of memory ends early */
  if (!t->in)
    return NULL;
  ssize_t n;
  while ((n = getline(&t->line, &t->cap, t->in)) >= 0) {
    char *s = t->line, *end = t->line + n;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
      s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
      end--;
    if (s == end || *s == '#')
      continue;
    *end = '\0';
    return strdup(s);
  }
  return NULL;
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
  case PART_ALL: return rc_full_response(resp, out);
  default: *out = rc_body(resp); return RC_OK;
  }
}

/* The matching rule (see usage): every kind of matcher given needs a hit.
 * Cheap checks first: the text is only looked at when the status passed.
 * *err is set when the text to match could not be had. */
static int matches(const options *o, rc_response *resp, rc_code *err)
{
  *err = RC_OK;
  if (rc_hop_count(resp) == 0)
    return 0; /* no response arrived */
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

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when the byte
 * at p does not start one: a stray continuation byte, an overlong form, a
 * surrogate, a code point past U+10FFFF, or a sequence cut short (the NUL
 * that ends the string is never a continuation byte). */
static size_t utf8_sequence(const unsigned char *p)
{
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else
    return 0;
  if (p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

/* s as a JSON string (null for NULL), always valid UTF-8: quote and
 * backslash escaped, control bytes and DEL as \u00XX, valid UTF-8 as it
 * is, and every other byte as \u00XX, the code point of its value. */
static void json_string(FILE *out, const char *s)
{
  if (!s) {
    fputs("null", out);
    return;
  }
  putc('"', out);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t n = utf8_sequence(p);
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (n == 0 || *p < 0x20 || *p == 0x7F)
      fprintf(out, "\\u%04x", *p);
    else
      fwrite(p, 1, n, out);
    p += n ? n : 1;
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

/* The final response's HTTP version as JSON: "1.1", "2", ...; null when no
 * response arrived. */
static const char *http_version_json(rc_response *r)
{
  rc_hop_info last;
  if (rc_hop(r, -1, &last) != RC_OK)
    return "null";
  switch (last.version) {
  case 10: return "\"1.0\"";
  case 11: return "\"1.1\"";
  case 20: return "\"2\"";
  case 30: return "\"3\"";
  default: return "null";
  }
}

/* ---- The scan ----------------------------------------------------------- */

typedef enum slot_state {
  SLOT_IDLE,   /* no target */
  SLOT_READY,  /* a target, waiting for its time (rate, retry backoff) */
  SLOT_RUNNING /* its transfer is in the multi handle */
} slot_state;

/* One unit of concurrency: a transfer at a time. */
typedef struct slot {
  CURL *easy;
  rc_response *resp;
  slot_state state;
  char *url;                    /* the target as given; NULL when idle */
  long attempts;                /* transfers made for this target */
  double due;                   /* READY: seconds since the scan's start */
  struct timespec started;      /* when the transfer was handed to curl */
  char errbuf[CURL_ERROR_SIZE]; /* curl's detailed message for a failure */
} slot;

typedef struct scan {
  const options *opt;
  FILE *out; /* the JSON lines */
  rc_pool *pool;
  CURLM *multi;
  slot *slots;
  size_t nslots;
  targets src;
  int src_done;      /* next_target returned NULL */
  size_t active;     /* transfers in the multi handle */
  double next_start; /* --rate: earliest next request */
  unsigned long done, matched, errors, retried;
  uint64_t body_bytes, wire_bytes;
  struct timespec start;
  double last_progress;
  int progress; /* stderr is a terminal, not --silent */
} scan;

static double seconds_since(const struct timespec *t0)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The request options from the command line, the same for every target. */
static int set_request(CURL *e, const options *o)
{
  int ok = curl_easy_setopt(e, CURLOPT_USERAGENT, o->user_agent) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTP_VERSION, o->http_version) == CURLE_OK;
  if (ok && o->data)
    ok =
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(o->data)) == CURLE_OK &&
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, o->data) == CURLE_OK;
  if (ok && o->method)
    ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, o->method) == CURLE_OK;
  if (ok && o->proxy)
    ok = curl_easy_setopt(e, CURLOPT_PROXY, o->proxy) == CURLE_OK;
  if (ok && o->insecure)
    ok = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
  return ok ? 0 : -1;
}

/* Makes the slot's easy handle and response, and sets every option that
 * stays the same from one target to the next. */
static int slot_init(scan *s, slot *sl, const rc_limits *lim)
{
  const options *o = s->opt;
  if (rc_response_new(s->pool, lim, &sl->resp) != RC_OK || !(sl->easy = curl_easy_init()))
    return -1;
  /* The response's callbacks; it decodes the body itself, so that
   * --max-body counts decoded bytes. */
  if (rc_attach(sl->resp, sl->easy) != RC_OK)
    return -1;
  CURL *e = sl->easy;
  int ok = curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)sl) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_ERRORBUFFER, sl->errbuf) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, o->max_redirs > 0 ? 1L : 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_MAXREDIRS, o->max_redirs) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms) == CURLE_OK &&
           /* Targets come from outside: only web URLs, also after a redirect. */
           curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
  return ok && set_request(e, o) == 0 ? 0 : -1;
}

/* The error field: NULL, or what went wrong. A body cut at the cap is
 * reported by "truncated", not as an error. */
static const char *error_text(slot *sl, rc_code rc, CURLcode cc, rc_code match_err, char *buf,
                              size_t cap)
{
  if (rc == RC_E_TRANSFER) {
    snprintf(buf, cap, "transfer failed: %s", sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(cc));
    return buf;
  }
  if (rc != RC_OK && rc != RC_TRUNCATED)
    return rc_strerror(rc);
  if (match_err != RC_OK) {
    snprintf(buf, cap, "matching: %s", rc_strerror(match_err));
    return buf;
  }
  return NULL;
}

/* Prints the slot's result as one JSON line (unless --matched-only leaves
 * it out) and counts it. performed is 0 when the transfer could not even be
 * started (cc says why). */
static void report(scan *s, slot *sl, CURLcode cc, int performed)
{
  rc_response *r = sl->resp;
  rc_code rc = rc_result(r, cc);
  rc_code match_err;
  int matched = matches(s->opt, r, &match_err);
  char buf[CURL_ERROR_SIZE + 128];
  const char *err = error_text(sl, rc, cc, match_err, buf, sizeof buf);

  char *final_url = NULL;
  curl_off_t wire = 0;
  if (performed) {
    curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &final_url);
    curl_easy_getinfo(sl->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
  }
  rc_view body = rc_body(r);

  if (matched || !s->opt->matched_only) {
    FILE *out = s->out;
    fputs("{\"url\":", out);
    json_string(out, sl->url);
    fputs(",\"final_url\":", out);
    json_string(out, final_url);
    fprintf(out,
            ",\"status\":%d,\"http_version\":%s,\"hops\":%zu,\"body_bytes\":%zu,"
            "\"truncated\":%s,\"encoding\":\"%s\",\"matched\":%s,\"error\":",
            rc_status(r), http_version_json(r), rc_hop_count(r), body.len,
            rc_truncated(r) ? "true" : "false", encoding_name(rc_body_encoding(r)),
            matched ? "true" : "false");
    json_string(out, err);
    fprintf(out, ",\"attempts\":%ld,\"time_ms\":%.1f}\n", sl->attempts,
            seconds_since(&sl->started) * 1000.0);
  }
  s->done++;
  s->matched += matched != 0;
  s->errors += err != NULL;
  s->body_bytes += body.len;
  s->wire_bytes += (uint64_t)wire;
}

/* Whether an attempt that ended so is worth another: a connection that
 * failed or broke, a timeout, or a 5xx status. */
static int retryable(rc_response *r, CURLcode cc)
{
  switch (cc) {
  case CURLE_OK: return rc_result(r, cc) == RC_OK && rc_status(r) >= 500 && rc_status(r) <= 599;
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    /* Only when no limit of the response ended it. */
    return rc_result(r, cc) == RC_E_TRANSFER;
  default: return 0;
  }
}

/* Ends the slot's target: the slot becomes idle. */
static void slot_finish(slot *sl)
{
  rc_response_reset(sl->resp);
  free(sl->url);
  sl->url = NULL;
  sl->state = SLOT_IDLE;
}

/* Hands the slot's target to curl. A target that cannot be started (e.g. a
 * URL past curl's length limit) is reported as such and ends. */
static void slot_start(scan *s, slot *sl)
{
  sl->errbuf[0] = '\0';
  sl->attempts++;
  clock_gettime(CLOCK_MONOTONIC, &sl->started);
  CURLcode cc = curl_easy_setopt(sl->easy, CURLOPT_URL, sl->url);
  if (cc == CURLE_OK && curl_multi_add_handle(s->multi, sl->easy) == CURLM_OK) {
    sl->state = SLOT_RUNNING;
    s->active++;
    return;
  }
  report(s, sl, cc != CURLE_OK ? cc : CURLE_FAILED_INIT, 0);
  slot_finish(sl);
}

/* Gives idle slots their next targets, then starts the slots whose time has
 * come, as far as --rate allows. */
static void start_ready(scan *s)
{
  double now = seconds_since(&s->start);
  for (size_t i = 0; i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_IDLE && !s->src_done) {
      if ((sl->url = next_target(&s->src)) != NULL) {
        sl->state = SLOT_READY;
        sl->attempts = 0;
        sl->due = now;
      } else {
        s->src_done = 1;
      }
    }
    if (sl->state != SLOT_READY || sl->due > now || s->next_start > now)
      continue;
    if (s->opt->rate > 0) /* evenly spaced: no bursts after a pause */
      s->next_start = (s->next_start > now ? s->next_start : now) + 1.0 / s->opt->rate;
    slot_start(s, sl);
  }
}

/* Milliseconds the loop may sleep: until the next ready slot's time (and
 * the rate's), at most a second. */
static int sleep_ms(const scan *s)
{
  double now = seconds_since(&s->start), wait = 1.0;
  for (size_t i = 0; i < s->nslots; i++) {
    const slot *sl = &s->slots[i];
    if (sl->state != SLOT_READY)
      continue;
    double at = sl->due > s->next_start ? sl->due : s->next_start;
    if (at - now < wait)
      wait = at - now;
  }
  return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
}

/* Whether any target is still to be done. */
static int pending(const scan *s)
{
  if (s->active || !s->src_done)
    return 1;
  for (size_t i = 0; i < s->nslots; i++)
    if (s->slots[i].state == SLOT_READY)
      return 1;
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

/* Seconds to wait before another attempt, after attempts made so far:
 * RETRY_BACKOFF, doubled for each earlier retry, at most RETRY_BACKOFF_MAX. */
static double backoff(long attempts)
{
  double wait = RETRY_BACKOFF;
  for (long i = 1; i < attempts && wait < RETRY_BACKOFF_MAX; i++)
    wait *= 2;
  return wait < RETRY_BACKOFF_MAX ? wait : RETRY_BACKOFF_MAX;
}

/* A finished transfer: retried after a backoff when it may be, else
 * reported, and the slot freed for the next target. */
static void finished(scan *s, slot *sl, CURLcode cc)
{
  if (sl->attempts <= s->opt->retries && retryable(sl->resp, cc)) {
    sl->due = seconds_since(&s->start) + backoff(sl->attempts);
    sl->state = SLOT_READY;
    s->retried++;
    rc_response_reset(sl->resp);
    return;
  }
  report(s, sl, cc, 1);
  /* At once: the response's memory goes back to the pool, and to the
   * budget, where paused transfers may be waiting for it. */
  slot_finish(sl);
}

/* Reads every finished transfer. */
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
    curl_multi_remove_handle(s->multi, easy);
    s->active--;
    finished(s, (slot *)(void *)priv, cc);
  }
}

/* Runs the whole scan. Returns 0, or -1 when curl's multi interface fails. */
static int run(scan *s)
{
  for (;;) {
    start_ready(s);
    if (!pending(s))
      break;
    CURLMcode mc = CURLM_OK;
    if (s->active) {
      int running;
      mc = curl_multi_perform(s->multi, &running);
      if (mc == CURLM_OK)
        collect(s);
      show_progress(s, 0);
    }
    /* Waits for activity or the next slot's time, and resumes the
     * transfers the budget paused once memory for them is released. */
    if (mc == CURLM_OK && pending(s))
      mc = rc_multi_poll(s->pool, s->multi, NULL, 0, sleep_ms(s), NULL);
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
  fprintf(stderr,
          "scan: %lu requests in %.2f s, %.1f requests/s; %lu matched, %lu errors, "
          "%lu retries\n",
          s->done, t, t > 0 ? (double)s->done / t : 0.0, s->matched, s->errors, s->retried);
  fprintf(stderr, "scan: received %.1f MiB of bodies (%.1f MiB on the wire)\n",
          (double)s->body_bytes / MiB, (double)s->wire_bytes / MiB);
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) /* ru_maxrss: KiB on Linux */
    fprintf(stderr, "scan: peak RSS %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  rc_pool_stats st;
  rc_pool_stats_get(s->pool, &st);
  fprintf(stderr,
          "scan: pool: %llu acquisitions (%llu reuses, %llu fresh), %llu discards, "
          "peak in use %.1f MiB, %llu pauses, %llu spills",
          (unsigned long long)st.acquisitions, (unsigned long long)st.reuses,
          (unsigned long long)st.fresh, (unsigned long long)st.discards,
          (double)st.peak_in_use / MiB, (unsigned long long)st.pauses,
          (unsigned long long)st.spills);
  if (s->opt->budget)
    fprintf(stderr, " (budget %.1f MiB)", (double)s->opt->budget / MiB);
  fputc('\n', stderr);
}

/* ---- Setup -------------------------------------------------------------- */

/* Opens the targets' stream and the output. */
static int open_files(scan *s)
{
  const options *o = s->opt;
  s->src.urls = o->urls;
  s->src.count = o->nurls;
  if (o->list && strcmp(o->list, "-") != 0) {
    if (!(s->src.in = fopen(o->list, "r"))) {
      fprintf(stderr, "scan: %s: %s\n", o->list, strerror(errno));
      return -1;
    }
  } else if (o->list || !o->nurls) {
    s->src.in = stdin;
  }
  s->out = stdout;
  if (o->output && !(s->out = fopen(o->output, "w"))) {
    fprintf(stderr, "scan: %s: %s\n", o->output, strerror(errno));
    return -1;
  }
  return 0;
}

/* The pool and the slots. The pool is one for the whole scan; the budget
 * bounds what all responses hold at once. */
static int setup(scan *s)
{
  const options *o = s->opt;
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = o->budget;
  cfg.overflow = o->overflow;
  if (rc_pool_new(&cfg, &s->pool) != RC_OK) {
    fputs("scan: cannot create the pool\n", stderr);
    return -1;
  }
  /* Limits of every response: the body cap, the memory limit, and room for
   * every hop of a redirect chain plus a few 1xx interim responses. */
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_body = o->max_body;
  lim.max_memory = o->max_memory;
  lim.max_hops = (size_t)o->max_redirs + 8;
  lim.on_cap = RC_CAP_STOP; /* a scanner has no use for the rest */

  s->nslots = (size_t)o->concurrency;
  s->slots = calloc(s->nslots, sizeof *s->slots);
  s->multi = curl_multi_init();
  if (!s->slots || !s->multi) {
    fputs("scan: out of memory\n", stderr);
    return -1;
  }
  for (size_t i = 0; i < s->nslots; i++) {
    if (slot_init(s, &s->slots[i], &lim) != 0) {
      fputs("scan: cannot set up a transfer (out of memory?)\n", stderr);
      return -1;
    }
  }
  return 0;
}

/* Everything setup and open_files made. */
static void teardown(scan *s)
{
  /* Easy handles leave the multi handle before either is cleaned up. */
  for (size_t i = 0; s->slots && i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_RUNNING)
      curl_multi_remove_handle(s->multi, sl->easy);
    free(sl->url);
    if (sl->easy)
      curl_easy_cleanup(sl->easy);
    rc_response_free(sl->resp);
  }
  free(s->slots);
  if (s->multi)
    curl_multi_cleanup(s->multi);
  rc_pool_free(s->pool);
  if (s->src.in && s->src.in != stdin)
    fclose(s->src.in);
  free(s->src.line);
}

/* Runs the scan once set up; returns the exit status. */
static int scan_all(scan *s)
{
  clock_gettime(CLOCK_MONOTONIC, &s->start);
  if (run(s) != 0)
    return EXIT_SETUP;
  int status = EXIT_RAN;
  if (s->src.in && ferror(s->src.in)) {
    fputs("scan: reading targets failed\n", stderr);
    status = EXIT_SETUP;
  }
  if (fflush(s->out) != 0 || ferror(s->out)) {
    fputs("scan: writing results failed\n", stderr);
    status = EXIT_SETUP;
  }
  if (!s->opt->silent)
    summary(s);
  return status;
}

int main(int argc, char **argv)
{
  options opt;
  int status = parse_options(argc, argv, &opt);
  if (status >= 0) {
    options_free(&opt);
    return status;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs("scan: curl_global_init failed\n", stderr);
    options_free(&opt);
    return EXIT_SETUP;
  }
  scan s;
  memset(&s, 0, sizeof s);
  s.opt = &opt;
  s.progress = !opt.silent && isatty(STDERR_FILENO);
  status = EXIT_SETUP;
  if (open_files(&s) == 0 && setup(&s) == 0)
    status = scan_all(&s);
  if (s.out && s.out != stdout && fclose(s.out) != 0 && status == EXIT_RAN) {
    fputs("scan: writing results failed\n", stderr);
    status = EXIT_SETUP;
  }
  teardown(&s);
  curl_global_cleanup();
  options_free(&opt);
  return status;
}
