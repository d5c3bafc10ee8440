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
 *  - The multi loop of respchain.h, which never waits while a target could
 *    start: idle slots take their next targets and start; curl_multi_perform;
 *    each finished transfer is reported and its response reset at once, so
 *    its memory goes back to the pool (and to the budget), and its slot
 *    starts the next target before the loop waits again; only then
 *    rc_multi_poll, which sleeps like curl_multi_poll (until curl, the rate
 *    limit, a retry's backoff or the budget has work) and resumes the
 *    transfers that the budget paused.
 *  - Targets are read one at a time as slots free up, so a list of any length
 *    is scanned in constant memory. A slot waits, out of the multi handle,
 *    for its turn under --rate and for the backoff before a retry.
 *  - Each result is written as one line with one write(2) as soon as its
 *    target ends, so whatever stops the scan, every line written is whole.
 *    SIGINT and SIGTERM stop it cleanly: a handler writes to a pipe that the
 *    loop polls beside curl's sockets; the transfers in flight are reported
 *    as interrupted with what they received.
 *
 * Exit status: 0 the scan ran (whatever the targets answered); 1 setup
 * failure (a file, curl, memory) or the results could not be written; 2
 * usage; 130 or 143 stopped by SIGINT or SIGTERM; 141 the reader of the
 * output went away (a broken pipe, as with "| head").
 *
 * Builds alone: cc scan.c $(pkg-config --cflags --libs respchain) */
/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

enum { EXIT_RAN = 0, EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_BROKEN_PIPE = 128 + SIGPIPE };

/* ---- Options ------------------------------------------------------------ */

/* What --word and --regex look at. */
typedef enum part {
  PART_BODY,   /* the final body, decoded */
  PART_HEADER, /* the final response's header lines, one by one */
  PART_ALL     /* those header lines, and the body */
} part;

#define STATUS_MAX 999 /* --status codes are 100 to STATUS_MAX */

typedef struct options {
  const char **urls; /* -u, in order; room for argc */
  size_t nurls;
  const char *list;            /* -l FILE; "-" or NULL without -u: stdin */
  const char *output;          /* -o FILE; NULL: stdout */
  unsigned long shard, shards; /* --shard K/N: targets K-1, K-1+N, ...; 1/1: all */
  long concurrency;
  size_t max_body, max_memory; /* max_memory 0: no limit */
  long max_redirs;
  long connect_timeout_ms, timeout_ms; /* 0: none */
  size_t budget;                       /* 0: off */
  rc_overflow overflow;
  /* The request. */
  struct curl_slist *headers; /* -H, in order */
  const char *method;         /* the method sent (GET, POST with -d, or -X) */
  const char *data, *proxy, *user_agent;
  long http_version; /* CURL_HTTP_VERSION_*; NONE: curl's */
  int insecure;
  double rate; /* requests per second; 0: no limit */
  long retries;
  /* Output. */
  int matched_only, silent;
  /* Matchers. --word and --regex may repeat (the arrays have room for
   * argc); --status codes are a set. */
  unsigned char status_set[STATUS_MAX + 1];
  size_t nstatuses;
  const char **words;
  size_t nwords;
  regex_t *regexes;
  const char **regex_texts; /* as given, for the output */
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
        "and prints one JSON line per target as soon as it ends.\n"
        "\n"
        "Targets and output:\n"
        "  -u, --url URL           a target (repeatable)\n"
        "  -l, --list FILE         targets from FILE; \"-\" reads stdin\n"
        "      --shard K/N         scan only targets K, K+N, K+2N, ... (counted\n"
        "                          from 1 in the order given), so that N runs\n"
        "                          with K = 1..N split one list between them\n"
        "  -o, --output FILE       write the JSON lines to FILE, not stdout\n"
        "      --matched-only      print only the targets that matched\n"
        "  -s, --silent            no progress line and no summary on stderr\n"
        "\n"
        "Requests:\n"
        "  -H, --header LINE       add a request header (repeatable)\n"
        "  -X, --request METHOD    request method (default GET, or POST with -d);\n"
        "                          HEAD asks for no body\n"
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
        "                          0: none, a redirect is the final response).\n"
        "                          Unlike curl's and fetch's -L, which only turn\n"
        "                          following on, scan always follows and -L\n"
        "                          takes the limit\n"
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
        "      --status CODES      the final status is one of CODES (e.g. 200 or\n"
        "                          200,301,404)\n"
        "      --word WORD         WORD occurs (case-sensitive bytes)\n"
        "      --regex ERE         the POSIX extended regex matches somewhere\n"
        "      --part PART         what --word and --regex look at: body (the\n"
        "                          decoded body, the default), header (each line\n"
        "                          of the final response's header block, status\n"
        "                          line included, without its line break) or all\n"
        "                          (those lines, and the body)\n"
        "A target matches when a response arrived and every kind of matcher given\n"
        "has a hit: its status is one of the --status codes, AND one of the --word\n"
        "words occurs, AND one of the --regex expressions matches. Without\n"
        "matchers every target that got a response matches. Matchers look at\n"
        "what was kept: a body cut at --max-body, or one whose transfer failed\n"
        "midway, is matched as far as it arrived. Regexes see the text as\n"
        "bytes (C locale), NUL bytes included. In a header line ^ and $ anchor\n"
        "at the line's start and end; in a body, at the body's start and end\n"
        "only, and '.' matches line breaks but not NUL.\n"
        "\n"
        "  -h, --help              this text\n"
        "  -V, --version           the version of scan and of the libraries\n"
        "\n"
        "Output, one JSON object per line, named as httpx names them where the\n"
        "meaning is the same (scan(1) describes each field):\n"
        "  timestamp, input, url, final_url, method, status_code (0: no\n"
        "  response), content_length (declared; null: none), content_type,\n"
        "  webserver, title, chain_status_codes, http_version, hops, body_bytes,\n"
        "  truncated, encoding, spilled, matched, matches (the matchers that\n"
        "  hit), failed, error, attempts, time (e.g. \"12.3ms\"), time_ms.\n"
        "Every line is valid UTF-8: a byte of a URL or message that is not part\n"
        "of valid UTF-8 is written as \\u00XX, the code point of the byte's value.\n"
        "A progress line (on a terminal) and a summary go to stderr.\n"
        "\n"
        "SIGINT or SIGTERM stops the scan: no new target starts, the transfers\n"
        "in flight are reported with the error \"interrupted\" and what they\n"
        "received, the summary is printed; a second signal ends scan at once.\n"
        "\n"
        "Exit status: 0 the scan ran, whatever the targets answered; 1 setup\n"
        "failure (a file, curl, memory) or the results could not be written;\n"
        "2 usage; 130 or 143 stopped by SIGINT or SIGTERM; 141 the output's\n"
        "reader went away (a broken pipe).\n",
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

/* --shard K/N: 1 <= K <= N. */
static int parse_shard(const char *s, unsigned long *k, unsigned long *n)
{
  char *end;
  errno = 0;
  unsigned long kv = strtoul(s, &end, 10);
  if (end == s || *s == '-' || *end != '/' || errno)
    return -1;
  const char *ns = end + 1;
  unsigned long nv = strtoul(ns, &end, 10);
  if (end == ns || *ns == '-' || *end || errno || kv < 1 || kv > nv)
    return -1;
  *k = kv;
  *n = nv;
  return 0;
}

/* --status CODES: a comma-separated list of codes from 100 to STATUS_MAX,
 * added to the set. */
static int parse_statuses(const char *s, options *o)
{
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *s == '-' || *s == '+' || errno || v < 100 || v > STATUS_MAX ||
        (*end && *end != ','))
      return -1;
    if (!o->status_set[v]) {
      o->status_set[v] = 1;
      o->nstatuses++;
    }
    if (!*end)
      return 0;
    s = end + 1;
  }
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
  OPT_MATCHED_ONLY,
  OPT_SHARD
};

static const struct option LONG_OPTIONS[] = {
    {"url", required_argument, NULL, 'u'},
    {"list", required_argument, NULL, 'l'},
    {"shard", required_argument, NULL, OPT_SHARD},
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
  o->regex_texts[o->nregexes++] = ere;
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
  case OPT_SHARD:
    if (parse_shard(optarg, &o->shard, &o->shards))
      return bad_usage("invalid shard (K/N with 1 <= K <= N)", optarg);
    return -1;
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
    return checked(parse_statuses(optarg, o), "invalid status (codes 100-999, comma-separated)");
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
  o->shard = o->shards = 1;
  o->urls = calloc((size_t)argc, sizeof *o->urls);
  o->words = calloc((size_t)argc, sizeof *o->words);
  o->regexes = calloc((size_t)argc, sizeof *o->regexes);
  o->regex_texts = calloc((size_t)argc, sizeof *o->regex_texts);
  if (!o->urls || !o->words || !o->regexes || !o->regex_texts) {
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
  if (!o->method)
    o->method = o->data ? "POST" : "GET";
  return -1;
}

static void options_free(options *o)
{
  for (size_t i = 0; i < o->nregexes; i++)
    regfree(&o->regexes[i]);
  free(o->regexes);
  free(o->regex_texts);
  free(o->words);
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
  unsigned long shard, shards; /* --shard K/N */
  unsigned long seen;          /* targets read so far, kept or not */
} targets;

/* The next target of the whole list, pointing into t (valid until the
 * next call), or NULL at the end. In a stream, surrounding white space is
 * dropped; blank lines and # comments are skipped. */
static const char *next_in_list(targets *t)
{
  if (t->next < t->count)
    return t->urls[t->next++];
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
    return s;
  }
  return NULL;
}

/* The next target of this shard as a new string (the caller frees it), or
 * NULL at the end (or when out of memory, which ends the list early). The
 * i-th target of the list (from 0) belongs to shard i mod N + 1: a rule of
 * the list alone, so N runs split it with no coordination. */
static char *next_target(targets *t)
{
  const char *url;
  while ((url = next_in_list(t)) != NULL)
    if (t->seen++ % t->shards == t->shard - 1)
      return strdup(url);
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

/* Which matchers hit one response. */
typedef struct verdict {
  int status;              /* the final status is one of --status */
  unsigned char *words;    /* per --word: it occurs */
  unsigned char *regexes;  /* per --regex: it matches */
  size_t nwords, nregexes; /* hits */
} verdict;

/* Runs the --word and --regex matchers that have no hit yet over text. */
static void match_text(const options *o, rc_view text, verdict *v)
{
  for (size_t i = 0; i < o->nwords; i++)
    if (!v->words[i] && contains(text, o->words[i], strlen(o->words[i]))) {
      v->words[i] = 1;
      v->nwords++;
    }
  for (size_t i = 0; i < o->nregexes; i++)
    if (!v->regexes[i] && regex_hit(&o->regexes[i], text)) {
      v->regexes[i] = 1;
      v->nregexes++;
    }
}

/* Runs them over each line of a header block, without its line break (CR
 * LF or LF); the blank line that ends the block is not a line. */
static void match_lines(const options *o, rc_view block, verdict *v)
{
  const char *p = block.ptr, *end = block.ptr + block.len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    rc_view line = {p, (size_t)((nl ? nl : end) - p)};
    if (line.len && line.ptr[line.len - 1] == '\r')
      line.len--;
    if (line.len)
      match_text(o, line, v);
    p = nl ? nl + 1 : end;
  }
}

/* The matching rule (see usage): every kind of matcher given needs a hit.
 * Fills v with what hit. The cheap check first: when the status misses, the
 * target cannot match and its text is not looked at. */
static int matches(const options *o, rc_response *resp, verdict *v)
{
  v->status = 0;
  v->nwords = v->nregexes = 0;
  memset(v->words, 0, o->nwords);
  memset(v->regexes, 0, o->nregexes);
  if (rc_hop_count(resp) == 0)
    return 0; /* no response arrived */
  int status = rc_status(resp);
  v->status = o->nstatuses && status >= 0 && status <= STATUS_MAX && o->status_set[status];
  if (o->nstatuses && !v->status)
    return 0;
  if (o->nwords || o->nregexes) {
    rc_hop_info last;
    if (o->part != PART_BODY && rc_hop(resp, -1, &last) == RC_OK)
      match_lines(o, last.raw, v);
    if (o->part != PART_HEADER)
      match_text(o, rc_body(resp), v);
  }
  return (!o->nwords || v->nwords) && (!o->nregexes || v->nregexes);
}

/* ---- Output ------------------------------------------------------------- */

/* One output line, built whole before it is written. */
typedef struct line {
  char *p;
  size_t len, cap;
  int nomem; /* an append failed: the line is incomplete */
} line;

/* Room for n more bytes and a NUL. */
static int reserve(line *l, size_t n)
{
  if (l->nomem)
    return -1;
  if (l->cap - l->len > n)
    return 0;
  size_t cap = l->cap ? l->cap : 1024;
  while (cap - l->len <= n)
    cap *= 2;
  char *p = realloc(l->p, cap);
  if (!p) {
    l->nomem = 1;
    return -1;
  }
  l->p = p;
  l->cap = cap;
  return 0;
}

static void put(line *l, const char *s, size_t n)
{
  if (reserve(l, n) == 0) {
    memcpy(l->p + l->len, s, n);
    l->len += n;
    l->p[l->len] = '\0';
  }
}

static void puts_line(line *l, const char *s) { put(l, s, strlen(s)); }

static void printf_line(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void printf_line(line *l, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = reserve(l, 0) == 0 ? vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap) : -1;
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= l->cap - l->len) { /* it did not fit: again, with room */
    if (reserve(l, (size_t)n) != 0) {
      l->p[l->len] = '\0';
      return;
    }
    va_start(ap, fmt);
    vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
    va_end(ap);
  }
  l->len += (size_t)n;
}

/* The length of the valid UTF-8 sequence at p (1 to 4 of the n > 0 bytes
 * there), or 0 when the byte at p does not start one: a stray continuation
 * byte, an overlong form, a surrogate, a code point past U+10FFFF, or a
 * sequence cut short. */
static size_t utf8_sequence(const unsigned char *p, size_t avail)
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
  if (avail < n || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

/* n bytes at s as a JSON string, always valid UTF-8: quote and backslash
 * escaped, control bytes and DEL as \u00XX, valid UTF-8 as it is, and
 * every other byte as \u00XX, the code point of its value. */
static void json_bytes(line *l, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  put(l, "\"", 1);
  while (p < end) {
    size_t k = utf8_sequence(p, (size_t)(end - p));
    if (*p == '"' || *p == '\\')
      printf_line(l, "\\%c", *p);
    else if (k == 0 || *p < 0x20 || *p == 0x7F)
      printf_line(l, "\\u%04x", *p);
    else
      put(l, (const char *)p, k);
    p += k ? k : 1;
  }
  put(l, "\"", 1);
}

/* s as a JSON string; null for NULL. */
static void json_string(line *l, const char *s)
{
  if (s)
    json_bytes(l, s, strlen(s));
  else
    puts_line(l, "null");
}

/* A view as a JSON string; null for NULL. */
static void json_view(line *l, const rc_view *v)
{
  if (v)
    json_bytes(l, v->ptr, v->len);
  else
    puts_line(l, "null");
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

/* A duration as httpx writes it (Go's time.Duration): "850µs", "12.3ms",
 * "1.5s", "2m3.25s"; the number without trailing zeros. */
static void json_duration(line *l, double seconds)
{
  char num[32];
  const char *unit;
  double v;
  long minutes = 0;
  if (seconds < 1e-3)
    v = seconds * 1e6, unit = "\xC2\xB5s"; /* µs */
  else if (seconds < 1.0)
    v = seconds * 1e3, unit = "ms";
  else {
    minutes = (long)(seconds / 60.0);
    v = seconds - 60.0 * (double)minutes, unit = "s";
  }
  snprintf(num, sizeof num, "%.6f", v);
  char *end = num + strlen(num);
  while (end[-1] == '0')
    end--;
  if (end[-1] == '.')
    end--;
  *end = '\0';
  if (minutes)
    printf_line(l, "\"%ldm%s%s\"", minutes, num, unit);
  else
    printf_line(l, "\"%s%s\"", num, unit);
}

/* The wall-clock time as RFC 3339, UTC, with microseconds. */
static void json_timestamp(line *l)
{
  struct timespec now;
  struct tm tm;
  char text[40];
  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  printf_line(l, "\"%s.%06ldZ\"", text, now.tv_nsec / 1000);
}

/* ---- The page title ----------------------------------------------------- */

#define TITLE_SCAN 8192 /* bytes of the title element looked at */
#define TITLE_MAX  1024 /* bytes of the title written, at most */

/* The first occurrence of needle (ASCII, lower case) in hay[0..n), in any
 * case; NULL if none. */
static const char *find_nocase(const char *hay, size_t n, const char *needle)
{
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (strncasecmp(hay + i, needle, k) == 0)
      return hay + i;
  return NULL;
}

/* Appends code point cp as UTF-8 (U+FFFD for one that is not a character's). */
static size_t put_utf8(char *out, unsigned long cp)
{
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    cp = 0xFFFD;
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The character reference at p (after its '&', n bytes left) into out;
 * returns the bytes of p it took (through ';'), or 0 when it is not one
 * that is decoded: &amp; &lt; &gt; &quot; &apos; &nbsp; and numeric ones. */
static size_t entity(const char *p, size_t n, char *out, size_t *outlen)
{
  static const struct {
    const char *name, *text;
  } named[] = {{"amp;", "&"},   {"lt;", "<"},   {"gt;", ">"},
               {"quot;", "\""}, {"apos;", "'"}, {"nbsp;", " "}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
    size_t k = strlen(named[i].name);
    if (n >= k && strncasecmp(p, named[i].name, k) == 0) {
      *outlen = strlen(named[i].text);
      memcpy(out, named[i].text, *outlen);
      return k;
    }
  }
  if (n < 3 || p[0] != '#')
    return 0;
  int hexa = p[1] == 'x' || p[1] == 'X';
  size_t i = hexa ? 2 : 1, start = i;
  unsigned long cp = 0;
  for (; i < n && i < start + 8; i++) {
    int d = p[i] >= '0' && p[i] <= '9'                             ? p[i] - '0'
            : hexa && (p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f' ? (p[i] | 0x20) - 'a' + 10
                                                                   : -1;
    if (d < 0)
      break;
    cp = cp * (hexa ? 16u : 10u) + (unsigned long)d;
  }
  if (i == start || i >= n || p[i] != ';')
    return 0;
  *outlen = put_utf8(out, cp);
  return i + 1;
}

/* The text of the first <title> element of an HTML body into out (at most
 * TITLE_MAX bytes, cut at a character's end): character references decoded,
 * white space runs as one space, none at the ends. Returns 0, or -1 when
 * the body has no title. */
static int html_title(rc_view body, char *out, size_t *outlen)
{
  const char *open = find_nocase(body.ptr, body.len, "<title");
  if (!open)
    return -1;
  const char *end = body.ptr + body.len;
  const char *p = memchr(open, '>', (size_t)(end - open));
  if (!p)
    return -1;
  p++;
  size_t scan = (size_t)(end - p) < TITLE_SCAN ? (size_t)(end - p) : TITLE_SCAN;
  const char *close = find_nocase(p, scan, "</title");
  const char *stop = close ? close : p + scan;
  size_t n = 0;
  int space = 0;
  while (p < stop) {
    char buf[8];
    size_t k = 1, blen = 1;
    buf[0] = *p;
    if (*p == '&') {
      size_t taken = entity(p + 1, (size_t)(stop - p - 1), buf, &blen);
      if (taken)
        k = taken + 1;
    }
    p += k;
    if (buf[0] == ' ' || buf[0] == '\t' || buf[0] == '\n' || buf[0] == '\r' || buf[0] == '\f') {
      space = n > 0;
      continue;
    }
    if (n + space + blen > TITLE_MAX)
      break;
    if (space)
      out[n++] = ' ';
    space = 0;
    memcpy(out + n, buf, blen);
    n += blen;
  }
  /* Not cut inside a UTF-8 sequence: drop a lead byte whose sequence did
   * not fit (other invalid bytes are escaped by json_bytes). */
  size_t back = 0;
  while (back < 3 && back < n && ((unsigned char)out[n - 1 - back] & 0xC0) == 0x80)
    back++;
  if (back < n && utf8_sequence((const unsigned char *)out + n - 1 - back, back + 1) == 0 &&
      (unsigned char)out[n - 1 - back] >= 0xC2)
    n -= back + 1;
  *outlen = n;
  return 0;
}

/* Whether the final response says its body is HTML. */
static int is_html(rc_response *r)
{
  rc_view type;
  return rc_header(r, -1, "content-type", 0, &type) == RC_OK && type.len >= 9 &&
         strncasecmp(type.ptr, "text/html", 9) == 0;
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

/* How a target's last transfer ended, for its report. */
typedef enum ending {
  ENDED,       /* curl finished it */
  NOT_STARTED, /* curl refused to start it */
  INTERRUPTED  /* the scan stopped while it ran or waited for a retry */
} ending;

typedef struct scan {
  const options *opt;
  int out;   /* the JSON lines' file descriptor */
  line line; /* the line being built; its memory is reused */
  verdict verdict;
  rc_pool *pool;
  CURLM *multi;
  slot *slots;
  size_t nslots;
  targets src;
  int src_done;      /* next_target returned NULL */
  size_t active;     /* slots RUNNING: transfers in the multi handle */
  size_t ready;      /* slots READY */
  double next_start; /* --rate: earliest next request */
  int write_error;   /* errno of a failed write of a result; 0: none */
  unsigned long done, matched, errors, retried, interrupted;
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

/* ---- Signals ------------------------------------------------------------ */

/* The first SIGINT or SIGTERM; 0 while none came. The handler also writes
 * a byte to the pipe, which the loop polls beside curl's sockets, so that a
 * signal ends its wait at once. */
static volatile sig_atomic_t caught;
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
  if (caught) { /* the second: end at once, by the signal */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  caught = sig;
  int saved = errno;
  ssize_t ignored = write(signal_pipe[1], "", 1);
  (void)ignored;
  errno = saved;
}

/* Installs the handlers. SIGPIPE is ignored: a write to a reader that went
 * away fails with EPIPE, and scan ends quietly. */
static int catch_signals(void)
{
  if (pipe(signal_pipe) != 0)
    return -1;
  for (int i = 0; i < 2; i++)
    if (fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(signal_pipe[i], F_SETFL, O_NONBLOCK) != 0)
      return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  return sigaction(SIGINT, &sa, NULL) == 0 && sigaction(SIGTERM, &sa, NULL) == 0 ? 0 : -1;
}

/* ---- Transfers ---------------------------------------------------------- */

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
  /* HEAD is CURLOPT_NOBODY: as a custom method curl would wait for the
   * body that the headers announce. */
  if (ok && !strcmp(o->method, "HEAD"))
    ok = curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && strcmp(o->method, o->data ? "POST" : "GET") != 0)
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

/* ---- Reports ------------------------------------------------------------ */

/* The error field: NULL, or what went wrong. A body cut at the cap is
 * reported by "truncated", not as an error. */
static const char *error_text(slot *sl, ending how, CURLcode cc, char *buf, size_t cap)
{
  if (how == INTERRUPTED)
    return "interrupted";
  rc_code rc = rc_result(sl->resp, cc);
  if (rc == RC_E_TRANSFER) {
    snprintf(buf, cap, "transfer failed: %s", sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(cc));
    return buf;
  }
  return rc != RC_OK && rc != RC_TRUNCATED ? rc_strerror(rc) : NULL;
}

/* A header of the final response as a JSON string; null when absent. */
static void json_header(line *l, rc_response *r, const char *name)
{
  rc_view v;
  json_view(l, rc_header(r, -1, name, 0, &v) == RC_OK ? &v : NULL);
}

/* The final response's declared Content-Length; null when absent or not a
 * number. */
static void json_content_length(line *l, rc_response *r)
{
  rc_view v;
  unsigned long long n = 0;
  size_t i = 0;
  if (rc_header(r, -1, "content-length", 0, &v) == RC_OK)
    for (; i < v.len && v.ptr[i] >= '0' && v.ptr[i] <= '9' && n < 1000000000000000000ull; i++)
      n = n * 10 + (unsigned long long)(v.ptr[i] - '0');
  if (i > 0 && i == v.len)
    printf_line(l, "%llu", n);
  else
    puts_line(l, "null");
}

/* The title of an HTML body; null for other bodies, or without one. */
static void json_title(line *l, rc_response *r, rc_view body)
{
  char title[TITLE_MAX];
  size_t n;
  if (body.len && is_html(r) && html_title(body, title, &n) == 0)
    json_bytes(l, title, n);
  else
    puts_line(l, "null");
}

/* Every hop's status, in order. */
static void json_chain(line *l, rc_response *r)
{
  size_t hops = rc_hop_count(r);
  puts_line(l, "[");
  for (size_t i = 0; i < hops; i++) {
    rc_hop_info hop;
    rc_hop(r, (int)i, &hop);
    printf_line(l, "%s%d", i ? "," : "", hop.status);
  }
  puts_line(l, "]");
}

/* One hit of the matches array. */
static void json_hit(line *l, int *first, const char *kind, const char *value)
{
  printf_line(l, "%s{\"matcher\":\"%s\",\"value\":", *first ? "" : ",", kind);
  json_string(l, value);
  puts_line(l, "}");
  *first = 0;
}

/* The matchers that hit: [{"matcher":"status","value":"200"}, ...]. */
static void json_matches(line *l, const options *o, const verdict *v, int status)
{
  int first = 1;
  puts_line(l, "[");
  if (v->status) {
    char code[8];
    snprintf(code, sizeof code, "%d", status);
    json_hit(l, &first, "status", code);
  }
  for (size_t i = 0; i < o->nwords; i++)
    if (v->words[i])
      json_hit(l, &first, "word", o->words[i]);
  for (size_t i = 0; i < o->nregexes; i++)
    if (v->regexes[i])
      json_hit(l, &first, "regex", o->regex_texts[i]);
  puts_line(l, "]");
}

/* Writes the line built in s->line with as few write(2) calls as the
 * kernel allows (one, for a file or a pipe with room); a failure stops
 * the scan (EPIPE: the reader went away). */
static void write_line(scan *s)
{
  line *l = &s->line;
  if (l->nomem) {
    s->write_error = ENOMEM;
    return;
  }
  const char *p = l->p;
  size_t left = l->len;
  while (left) {
    ssize_t n = write(s->out, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      s->write_error = errno;
      return;
    }
    p += n;
    left -= (size_t)n;
  }
}

/* Reports the slot's target as one JSON line (unless --matched-only
 * leaves it out) and counts it. */
static void report(scan *s, slot *sl, CURLcode cc, ending how)
{
  const options *o = s->opt;
  rc_response *r = sl->resp;
  verdict *v = &s->verdict;
  int matched = matches(o, r, v);
  char buf[CURL_ERROR_SIZE + 128];
  const char *err = error_text(sl, how, cc, buf, sizeof buf);
  char *final_url = NULL;
  curl_off_t wire = 0;
  if (how != NOT_STARTED) {
    curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &final_url);
    curl_easy_getinfo(sl->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
  }
  rc_view body = rc_body(r);
  double took = seconds_since(&sl->started);

  s->done++;
  s->matched += matched != 0;
  s->errors += err != NULL;
  s->interrupted += how == INTERRUPTED;
  s->body_bytes += body.len;
  s->wire_bytes += (uint64_t)wire;
  if (!matched && o->matched_only)
    return;

  line *l = &s->line;
  l->len = 0;
  puts_line(l, "{\"timestamp\":");
  json_timestamp(l);
  puts_line(l, ",\"input\":");
  json_string(l, sl->url);
  puts_line(l, ",\"url\":");
  json_string(l, sl->url);
  puts_line(l, ",\"final_url\":");
  json_string(l, final_url);
  puts_line(l, ",\"method\":");
  json_string(l, o->method);
  printf_line(l, ",\"status_code\":%d,\"content_length\":", rc_status(r));
  json_content_length(l, r);
  puts_line(l, ",\"content_type\":");
  json_header(l, r, "content-type");
  puts_line(l, ",\"webserver\":");
  json_header(l, r, "server");
  puts_line(l, ",\"title\":");
  json_title(l, r, body);
  puts_line(l, ",\"chain_status_codes\":");
  json_chain(l, r);
  printf_line(l,
              ",\"http_version\":%s,\"hops\":%zu,\"body_bytes\":%zu,\"truncated\":%s,"
              "\"encoding\":\"%s\",\"spilled\":%s,\"matched\":%s,\"matches\":",
              http_version_json(r), rc_hop_count(r), body.len, rc_truncated(r) ? "true" : "false",
              encoding_name(rc_body_encoding(r)), rc_body_spilled(r) ? "true" : "false",
              matched ? "true" : "false");
  json_matches(l, o, v, rc_status(r));
  printf_line(l, ",\"failed\":%s,\"error\":", err ? "true" : "false");
  json_string(l, err);
  printf_line(l, ",\"attempts\":%ld,\"time\":", sl->attempts);
  json_duration(l, took);
  printf_line(l, ",\"time_ms\":%.1f}\n", took * 1000.0);
  write_line(s);
}

/* ---- The loop ----------------------------------------------------------- */

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

/* Ends the slot's target: the response's memory goes back to the pool (and
 * to the budget, where paused transfers may be waiting for it) and the slot
 * becomes idle. */
static void slot_finish(scan *s, slot *sl)
{
  if (sl->state == SLOT_READY)
    s->ready--;
  rc_response_reset(sl->resp);
  free(sl->url);
  sl->url = NULL;
  sl->state = SLOT_IDLE;
}

/* Hands the slot's target to curl. A target that cannot be started (e.g. a
 * URL past curl's length limit) is reported as such and ends. */
static void slot_start(scan *s, slot *sl)
{
  s->ready--;
  sl->state = SLOT_IDLE;
  sl->errbuf[0] = '\0';
  sl->attempts++;
  clock_gettime(CLOCK_MONOTONIC, &sl->started);
  CURLcode cc = curl_easy_setopt(sl->easy, CURLOPT_URL, sl->url);
  if (cc == CURLE_OK && curl_multi_add_handle(s->multi, sl->easy) == CURLM_OK) {
    sl->state = SLOT_RUNNING;
    s->active++;
    return;
  }
  report(s, sl, cc != CURLE_OK ? cc : CURLE_FAILED_INIT, NOT_STARTED);
  slot_finish(s, sl);
}

/* Gives idle slots their next targets, then starts the slots whose time has
 * come, as far as --rate allows. */
static void start_ready(scan *s)
{
  if (s->src_done && !s->ready)
    return; /* nothing to start: the common case at the end of a scan */
  double now = seconds_since(&s->start);
  for (size_t i = 0; i < s->nslots && !caught && !s->write_error; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_IDLE && !s->src_done) {
      if ((sl->url = next_target(&s->src)) != NULL) {
        sl->state = SLOT_READY;
        sl->attempts = 0;
        sl->due = now;
        s->ready++;
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

/* Milliseconds the loop may wait for curl: until the first READY slot's
 * time (its retry backoff, and the rate's next start); with none, until
 * the next progress update or 1 s. Transfers, curl's timers, the budget
 * and signals end the wait earlier on their own. Called right after
 * start_ready, so no idle slot has a target waiting for it. */
static int wait_ms(const scan *s)
{
  double now = seconds_since(&s->start);
  double wait = s->progress ? PROGRESS_INTERVAL : 1.0;
  for (size_t i = 0; s->ready && i < s->nslots; i++) {
    const slot *sl = &s->slots[i];
    if (sl->state != SLOT_READY)
      continue;
    double at = sl->due > s->next_start ? sl->due : s->next_start;
    if (at - now < wait)
      wait = at - now;
  }
  return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
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
    s->ready++;
    s->retried++;
    rc_response_reset(sl->resp);
    return;
  }
  report(s, sl, cc, ENDED);
  slot_finish(s, sl);
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

/* After a signal: every transfer in flight, and every target waiting for a
 * retry, is reported as interrupted with what it received; nothing more
 * starts. After a failed write nothing can be reported: they just end. */
static void interrupt_all(scan *s)
{
  for (size_t i = 0; i < s->nslots; i++) {
    slot *sl = &s->slots[i];
    if (sl->state == SLOT_RUNNING) {
      curl_multi_remove_handle(s->multi, sl->easy);
      s->active--;
    } else if (sl->state != SLOT_READY || sl->attempts == 0) {
      if (sl->state == SLOT_READY)
        slot_finish(s, sl); /* never started: not a result */
      continue;
    }
    if (!s->write_error)
      report(s, sl, CURLE_ABORTED_BY_CALLBACK, INTERRUPTED);
    slot_finish(s, sl);
  }
}

/* Runs the whole scan until every target is done, a signal or a failed
 * write stops it. Returns 0, or -1 when curl's multi interface fails. */
static int run(scan *s)
{
  struct curl_waitfd wake = {signal_pipe[0], CURL_WAIT_POLLIN, 0};
  while (!caught && !s->write_error) {
    /* Slots freed by the transfers that just finished take their next
     * targets now, before any wait. */
    start_ready(s);
    if (!s->active && !s->ready && s->src_done)
      break;
    /* Waits for curl's sockets and timers (a transfer just added is due
     * at once), the next slot's time, the budget (rc_multi_poll resumes
     * the transfers it paused once memory is released) or a signal. */
    CURLMcode mc = rc_multi_poll(s->pool, s->multi, &wake, 1, wait_ms(s), NULL);
    if (mc == CURLM_OK && s->active) {
      int running;
      mc = curl_multi_perform(s->multi, &running);
      if (mc == CURLM_OK)
        collect(s);
    }
    if (mc != CURLM_OK) {
      fprintf(stderr, "\nscan: curl multi: %s\n", curl_multi_strerror(mc));
      return -1;
    }
    show_progress(s, 0);
  }
  if (caught || s->write_error)
    interrupt_all(s);
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
  if (caught)
    fprintf(stderr, "scan: stopped by %s: %lu transfers interrupted\n",
            caught == SIGINT ? "SIGINT" : "SIGTERM", s->interrupted);
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
  s->out = STDOUT_FILENO;
  if (o->output && (s->out = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
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
  s->verdict.words = calloc(o->nwords + 1, 1);
  s->verdict.regexes = calloc(o->nregexes + 1, 1);
  s->src.shard = o->shard;
  s->src.shards = o->shards;
  if (!s->slots || !s->multi || !s->verdict.words || !s->verdict.regexes) {
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
  free(s->verdict.words);
  free(s->verdict.regexes);
  free(s->line.p);
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
  if (s->write_error == EPIPE)
    return EXIT_BROKEN_PIPE; /* quietly: whoever wanted the output is gone */
  int status = caught ? 128 + caught : EXIT_RAN;
  if (s->src.in && ferror(s->src.in)) {
    fputs("scan: reading targets failed\n", stderr);
    status = EXIT_SETUP;
  }
  if (s->write_error) {
    fprintf(stderr, "scan: writing results failed: %s\n", strerror(s->write_error));
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
  s.out = -1;
  s.progress = !opt.silent && isatty(STDERR_FILENO);
  status = EXIT_SETUP;
  if (catch_signals() != 0)
    fprintf(stderr, "scan: cannot catch signals: %s\n", strerror(errno));
  else if (open_files(&s) == 0 && setup(&s) == 0)
    status = scan_all(&s);
  if (s.out > STDOUT_FILENO && close(s.out) != 0 && status == EXIT_RAN) {
    fprintf(stderr, "scan: writing results failed: %s\n", strerror(errno));
    status = EXIT_SETUP;
  }
  teardown(&s);
  curl_global_cleanup();
  options_free(&opt);
  return status;
}
