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
 *    start. Each turn: idle slots take their next targets and start;
 *    rc_multi_poll sleeps like curl_multi_poll (until curl, the rate limit,
 *    a retry's backoff or the budget has work; a transfer just added is due
 *    at once) and resumes the transfers that the budget paused;
 *    curl_multi_perform; each finished transfer is reported and its
 *    response reset at once, so its memory goes back to the pool (and to
 *    the budget), and the next turn starts its slot's next target before
 *    any wait.
 *  - Matchers run over the body as it arrives, through a body observer
 *    (rc_response_observe; with Vectorscan when built with it), so a body
 *    that no matcher needs whole is not kept at all (RC_KEEP_NONE) and
 *    memory does not grow with bodies.
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
#include <ctype.h>
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

/* Built with Vectorscan (the meson feature vectorscan defines this), --word
 * and --regex run over the body as it streams; without it, over the body
 * kept whole, with regexec. */
#if defined(SCAN_HAVE_VECTORSCAN) && SCAN_HAVE_VECTORSCAN
#define SCAN_VECTORSCAN 1
#include <hs.h>
#else
#define SCAN_VECTORSCAN 0
#endif

#define DEFAULT_CONCURRENCY        50
#define DEFAULT_MAX_REDIRS         10L
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS         30000L
#define PROGRESS_INTERVAL          0.1 /* seconds between progress line updates */
#define RETRY_BACKOFF              0.2 /* seconds before the first retry; doubles */
#define RETRY_BACKOFF_MAX          10.0
/* curl's receive buffer (CURLOPT_BUFFERSIZE; its default is 16 KiB): a
 * larger one takes a large body in a quarter of the reads. The write
 * callback still gets at most CURL_MAX_WRITE_SIZE bytes at a time, and a
 * transfer that the budget pauses leaves curl holding at most this much
 * more. 64 KiB stays below glibc's mmap threshold, so a buffer curl frees
 * and allocates again is reused memory, not fresh pages. */
#define RECV_BUFFER 65536L

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
  const char **regex_texts;  /* as given, for the output */
  unsigned char *regex_ends; /* per --regex: it uses a GNU escape that looks
                                past a match's end (see regex_first_end) */
  size_t nregexes;
  part part;
  int stop_on_match; /* end a transfer once its verdict is known */
} options;

static const char *engine_name(void);

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
        "      --http2-prior-knowledge  HTTP/2 without asking first (before curl\n"
        "                          8.0, a connection per transfer: older curl\n"
        "                          cannot reuse such connections)\n"
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
        "                          temporary file; HTTP/2 spills at once, but\n"
        "                          waits as HTTP/1.x with curl 8.14; the\n"
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
        "      --stop-on-match     end a transfer once its verdict is known: its\n"
        "                          status rules it out, or every --word and\n"
        "                          --regex has hit (\"stopped\": true; no error)\n"
        "A target matches when a response arrived and every kind of matcher given\n"
        "has a hit: its status is one of the --status codes, AND one of the --word\n"
        "words occurs, AND one of the --regex expressions matches. Without\n"
        "matchers every target that got a response matches. Matchers look at\n"
        "what was kept: a body cut at --max-body, or one whose transfer failed\n"
        "midway, is matched as far as it arrived. Regexes see the text as\n"
        "bytes (C locale), NUL bytes included. In a header line ^ and $ anchor\n"
        "at the line's start and end; in a body, at the body's start and end\n"
        "only, and '.' matches line breaks but not NUL.\n"
        "\n",
        out);
#if SCAN_VECTORSCAN
  fprintf(out,
          "Engine: %s. It runs --word and --regex over the body as it\n"
          "arrives (the body is then not kept); a regex it cannot take (a back\n"
          "reference, a GNU escape other than \\w \\W \\s \\S) runs with regexec over\n"
          "the body kept whole, with the same meaning.\n",
          engine_name());
#else
  fputs("Engine: this build has no Vectorscan: --word and --regex run with\n"
        "regexec over the body kept whole once it has arrived.\n",
        out);
#endif
  fputs("\n"
        "  -h, --help              this text\n"
        "  -V, --version           the version of scan and of the libraries\n"
        "\n"
        "Output, one JSON object per line, named as httpx names them where the\n"
        "meaning is the same (scan(1) describes each field):\n"
        "  timestamp, input, url, final_url, method, status_code (0: no\n"
        "  response), content_length (declared; null: none), content_type,\n"
        "  webserver, title, chain_status_codes, http_version, hops, body_bytes,\n"
        "  truncated, stopped, encoding, spilled, matched, matches (the matchers\n"
        "  that hit, with the body offset where each first match ends), failed,\n"
        "  error, attempts, time (e.g. \"12.3ms\"), time_ms.\n"
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
  OPT_SHARD,
  OPT_STOP_ON_MATCH
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
    {"stop-on-match", no_argument, NULL, OPT_STOP_ON_MATCH},
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

static int ere_looks_past_end(const char *ere);

/* --regex: compiled once for the whole scan. REG_NOSUB: only whether it
 * matches is wanted, which is faster (the offset of a first match is found
 * by matching prefixes), but for a regex whose offset is taken from its
 * match instead (regex_first_end). */
static int add_regex(options *o, const char *ere)
{
  int past_end = ere_looks_past_end(ere);
  int err = regcomp(&o->regexes[o->nregexes], ere, REG_EXTENDED | (past_end ? 0 : REG_NOSUB));
  if (err) {
    char msg[256];
    regerror(err, &o->regexes[o->nregexes], msg, sizeof msg);
    fprintf(stderr, "scan: invalid regex '%s': %s; try 'scan --help'\n", ere, msg);
    return EXIT_USAGE;
  }
  o->regex_ends[o->nregexes] = (unsigned char)past_end;
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
  case OPT_STOP_ON_MATCH: o->stop_on_match = 1; return -1;
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
  o->regex_ends = calloc((size_t)argc, 1);
  if (!o->urls || !o->words || !o->regexes || !o->regex_texts || !o->regex_ends) {
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
      printf("scan (respchain) %s\n%s\nstreaming matchers: %s\n", rc_version(), curl_version(),
             engine_name());
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
  free(o->regex_ends);
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

/* ---- Text built in memory ---------------------------------------------- */

/* Text built in memory: an output line, built whole before it is written,
 * or a rewritten regex. */
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

/* ---- POSIX EREs, read for the streaming engine -------------------------- */

/* A bracket expression, whose '[' is just before *pp, as the set of bytes
 * it matches in the C locale (set: 256 bits), as regcomp reads it: a ']'
 * first is a member, '\' is an ordinary byte, ranges go by byte value,
 * [:class:] by <ctype.h>, [=c=] and [.c.] of one byte are that byte. *pp
 * moves past the closing ']'. Returns 0, or -1 for what is not read here
 * (a collating element of a name, an unknown class). */
static int ere_bracket(const char **pp, unsigned char set[32])
{
  static const struct {
    const char *name;
    int (*is)(int);
  } classes[] = {{"alpha", isalpha}, {"digit", isdigit}, {"alnum", isalnum}, {"upper", isupper},
                 {"lower", islower}, {"space", isspace}, {"blank", isblank}, {"punct", ispunct},
                 {"print", isprint}, {"graph", isgraph}, {"cntrl", iscntrl}, {"xdigit", isxdigit}};
  const char *p = *pp;
  int negate = *p == '^';
  p += negate;
  memset(set, 0, 32);
  for (int first = 1; first || *p != ']'; first = 0) {
    if (!*p)
      return -1;
    if (p[0] == '[' && p[1] == ':') {
      const char *end = strstr(p + 2, ":]");
      size_t i = 0, n = end ? (size_t)(end - p - 2) : 0;
      while (i < sizeof classes / sizeof classes[0] &&
             (strlen(classes[i].name) != n || strncmp(classes[i].name, p + 2, n) != 0))
        i++;
      if (i == sizeof classes / sizeof classes[0])
        return -1;
      for (int c = 0; c < 256; c++)
        if (classes[i].is(c))
          set[c >> 3] |= (unsigned char)(1u << (c & 7));
      p = end + 2;
      continue;
    }
    int lo, hi;
    for (int end = 0; end < 2; end++) {
      int c;
      if (p[0] == '[' && (p[1] == '=' || p[1] == '.')) {
        if (!p[2] || p[3] != p[1] || p[4] != ']')
          return -1;
        c = (unsigned char)p[2];
        p += 5;
      } else if (p[0] == '[' && p[1] == ':') {
        return -1; /* a class as a range's end */
      } else {
        c = (unsigned char)*p++;
      }
      if (end == 0)
        lo = hi = c;
      else
        hi = c;
      /* A '-' makes a range unless it is last ("[a-]"). */
      if (end == 1 || p[0] != '-' || !p[1] || p[1] == ']')
        break;
      p++;
    }
    if (hi < lo)
      return -1;
    for (int c = lo; c <= hi; c++)
      set[c >> 3] |= (unsigned char)(1u << (c & 7));
  }
  if (negate)
    for (int i = 0; i < 32; i++)
      set[i] = (unsigned char)~set[i];
  *pp = p + 1;
  return 0;
}

/* Whether ere uses a GNU escape of glibc's regcomp that looks at the byte
 * after a position: \b, \B, \<, \> or \' (the end of the text). Those
 * match at the end of a prefix where they would not in the whole text. */
static int ere_looks_past_end(const char *ere)
{
  unsigned char set[32];
  for (const char *p = ere; *p;) {
    if (*p == '[') {
      p++;
      if (ere_bracket(&p, set) != 0)
        return 1; /* not read: to be safe */
    } else if (*p == '\\' && p[1]) {
      if (strchr("bB<>'", p[1]))
        return 1;
      p += 2;
    } else {
      p++;
    }
  }
  return 0;
}

#if SCAN_VECTORSCAN
/* An ERE rewritten for Vectorscan, whose syntax is PCRE's, with the same
 * meaning: every literal byte as \xHH, brackets as byte sets, '.' as any
 * byte but NUL (as regcomp's), $ as \z (PCRE's $ also matches before a
 * final newline), groups as (?:...), every quantified atom grouped (so
 * that "a*?" and "a*+" keep ERE's meaning, not PCRE's lazy and possessive
 * ones), intervals written out ({,n} is {0,n}). What has no such
 * translation fails it, and the regex is matched with regexec: back
 * references, GNU escapes other than \w \W \s \S. */
typedef struct ere_out {
  const char *p; /* the next byte of the ERE */
  int depth;     /* open groups */
  int fail;      /* no translation, or out of memory */
  line out;      /* the translation so far */
} ere_out;

static void ere_put(ere_out *e, const char *s)
{
  if (!e->fail)
    puts_line(&e->out, s);
  e->fail |= e->out.nomem;
}

static void ere_byte(ere_out *e, unsigned c)
{
  char hex[8];
  snprintf(hex, sizeof hex, "\\x%02x", c & 0xFF);
  ere_put(e, hex);
}

/* A byte set as a PCRE class of ranges; an empty one fails. */
static void ere_set(ere_out *e, const unsigned char set[32])
{
  int any = 0;
  ere_put(e, "[");
  for (int c = 0; c < 256;) {
    if (!(set[c >> 3] & (1u << (c & 7)))) {
      c++;
      continue;
    }
    int hi = c;
    while (hi < 255 && set[(hi + 1) >> 3] & (1u << ((hi + 1) & 7)))
      hi++;
    ere_byte(e, (unsigned)c);
    if (hi > c) {
      ere_put(e, "-");
      ere_byte(e, (unsigned)hi);
    }
    any = 1;
    c = hi + 1;
  }
  ere_put(e, "]");
  e->fail |= !any;
}

/* The set of \w (ctype 0) or \s (1), complemented for \W and \S. */
static void ere_escape_set(ere_out *e, int space, int negate)
{
  unsigned char set[32] = {0};
  for (int c = 0; c < 256; c++)
    if (space ? isspace(c) != 0 : isalnum(c) || c == '_')
      set[c >> 3] |= (unsigned char)(1u << (c & 7));
  if (negate)
    for (int i = 0; i < 32; i++)
      set[i] = (unsigned char)~set[i];
  ere_set(e, set);
}

static void ere_alternatives(ere_out *e);

/* One atom at e->p. Returns 1 when it may take a quantifier, 0 for an
 * anchor (regcomp refuses "^*"). */
static int ere_atom(ere_out *e)
{
  unsigned char c = (unsigned char)*e->p++;
  unsigned char set[32];
  switch (c) {
  case '(':
    e->depth++;
    ere_put(e, "(?:");
    ere_alternatives(e);
    if (*e->p != ')')
      e->fail = 1;
    else
      e->p++;
    ere_put(e, ")");
    e->depth--;
    return 1;
  case '.': ere_put(e, "[\\x01-\\xff]"); return 1;
  case '^': ere_put(e, "^"); return 0;
  case '$': ere_put(e, "\\z"); return 0;
  case '[':
    if (ere_bracket(&e->p, set) != 0)
      e->fail = 1;
    else
      ere_set(e, set);
    return 1;
  case '*':
  case '+':
  case '?':
  case '{': e->fail = 1; return 1; /* nothing to repeat */
  case '\\':
    c = (unsigned char)*e->p++;
    if (c == 'w' || c == 'W' || c == 's' || c == 'S')
      ere_escape_set(e, c == 's' || c == 'S', c == 'W' || c == 'S');
    else if (!c || strchr("bB<>`'123456789", c))
      e->fail = 1;
    else
      ere_byte(e, c); /* "\." and the like, and glibc's "\n" (an n) */
    return 1;
  default: ere_byte(e, c); return 1;
  }
}

/* A quantifier at e->p into q (room for 32); 0, or -1 when there is none
 * (or an interval regcomp would not take). */
static int ere_quantifier(ere_out *e, char *q)
{
  char c = *e->p;
  if (c == '*' || c == '+' || c == '?') {
    q[0] = c;
    q[1] = '\0';
    e->p++;
    return 0;
  }
  if (c != '{')
    return -1;
  const char *p = e->p + 1;
  long lo = 0, hi = -1;
  char *end;
  if (*p >= '0' && *p <= '9')
    lo = strtol(p, &end, 10), p = end;
  if (*p == ',') {
    p++;
    if (*p >= '0' && *p <= '9')
      hi = strtol(p, &end, 10), p = end;
  } else if (p == e->p + 1) {
    return -1; /* "{}" */
  } else {
    hi = lo;
  }
  if (*p != '}' || lo > 32767 || hi > 32767 || (hi >= 0 && hi < lo))
    return -1;
  e->p = p + 1;
  if (hi < 0)
    snprintf(q, 32, "{%ld,}", lo);
  else
    snprintf(q, 32, "{%ld,%ld}", lo, hi);
  return 0;
}

/* Atoms and their quantifiers until '|', the group's ')' or the end. */
static void ere_branch(ere_out *e)
{
  while (!e->fail && *e->p && *e->p != '|' && !(*e->p == ')' && e->depth > 0)) {
    size_t start = e->out.len;
    int repeatable = ere_atom(e);
    char q[32];
    while (!e->fail && (*e->p == '*' || *e->p == '+' || *e->p == '?' || *e->p == '{')) {
      if (!repeatable || ere_quantifier(e, q) != 0) {
        e->fail = 1;
        break;
      }
      /* (?:atom) then the quantifier: each one applies to what came
       * before, as in ERE. */
      ere_put(e, ")");
      ere_put(e, q);
      ere_put(e, "(?:"); /* room, then moved into place */
      if (!e->fail) {
        memmove(e->out.p + start + 3, e->out.p + start, e->out.len - 3 - start);
        memcpy(e->out.p + start, "(?:", 3);
      }
    }
  }
}

static void ere_alternatives(ere_out *e)
{
  ere_branch(e);
  while (!e->fail && *e->p == '|') {
    e->p++;
    ere_put(e, "|");
    ere_branch(e);
  }
}

/* ere in Vectorscan's syntax, malloc'd; NULL when it has no translation. */
static char *ere_translate(const char *ere)
{
  ere_out e = {.p = ere};
  ere_put(&e, "");
  ere_alternatives(&e);
  if (e.fail || *e.p) {
    free(e.out.p);
    return NULL;
  }
  return e.out.p;
}
#endif

/* ---- Matching ----------------------------------------------------------- */

/* Where a matcher's first hit ends in the body: the count of body bytes
 * up to and including its last byte. NO_OFFSET: not in the body (a
 * header line, or no hit). */
#define NO_OFFSET SIZE_MAX

/* Where needle (nlen > 0 bytes) first occurs in hay, as the offset of its
 * end; NO_OFFSET when it does not. */
static size_t find_word(rc_view hay, const char *needle, size_t nlen)
{
  const char *p = hay.ptr, *end = hay.ptr + hay.len;
  while ((size_t)(end - p) >= nlen) {
    p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);
    if (!p)
      return NO_OFFSET;
    if (memcmp(p, needle, nlen) == 0)
      return (size_t)(p - hay.ptr) + nlen;
    p++;
  }
  return NO_OFFSET;
}

/* Whether re matches in the first len bytes of text, which is longer
 * than len when a prefix is tried (eflags REG_NOTEOL: $ does not match at
 * a prefix's end). Views are not NUL-terminated in general (a hop's header
 * block is not) and bodies may hold NUL bytes, so the text is delimited
 * with REG_STARTEND (glibc, the BSDs, macOS) rather than by a terminating
 * NUL. glibc's offsets are int: past 2 GiB only the start is searched. If
 * pm is not NULL it receives the match (re compiled without REG_NOSUB). */
static int regex_in(const regex_t *re, const char *text, size_t len, int eflags, regmatch_t *pm)
{
#ifdef REG_STARTEND
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = (regoff_t)(len < INT_MAX ? len : INT_MAX);
  int hit = regexec(re, text, 1, range, REG_STARTEND | eflags) == 0;
  if (hit && pm)
    *pm = range[0];
  return hit;
#else
  /* Without REG_STARTEND: a NUL-terminated copy, in which matching stops at
   * the first NUL byte of the text. */
  char *copy = strndup(text, len);
  int hit = copy && regexec(re, copy, pm ? 1 : 0, pm, eflags) == 0;
  free(copy);
  return hit;
#endif
}

static int regex_hit(const regex_t *re, rc_view text)
{
  return regex_in(re, text.ptr, text.len, 0, NULL);
}

/* Where the first match of re in text to end, ends (re matches text).
 * That is where a stream matcher reports it: the shortest prefix of text
 * in which re matches, found by halving. ERE has no look-ahead, so a match
 * in a prefix is one in the text and the prefixes that match are those
 * from some length on; only $ looks past a position, and REG_NOTEOL keeps
 * it from matching at a prefix's end. glibc's \b \B \< \> \' look past it
 * too: for a regex with those (past_end) the end of its leftmost-longest
 * match is taken instead. */
static size_t regex_first_end(const regex_t *re, rc_view text, int past_end)
{
  if (past_end) {
    regmatch_t pm;
    return regex_in(re, text.ptr, text.len, 0, &pm) ? (size_t)pm.rm_eo : NO_OFFSET;
  }
  size_t lo = 0, hi = text.len < INT_MAX ? text.len : INT_MAX;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (regex_in(re, text.ptr, mid, REG_NOTEOL, NULL))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}

/* Which matchers hit one response. */
typedef struct verdict {
  int status;              /* the final status is one of --status */
  int status_missed;       /* --status given and the final status is not in it */
  unsigned char *words;    /* per --word: it occurs */
  unsigned char *regexes;  /* per --regex: it matches */
  size_t *word_at;         /* per --word hit: NO_OFFSET or its body offset */
  size_t *regex_at;        /* per --regex hit: the same */
  size_t nwords, nregexes; /* hits */
} verdict;

static int verdict_init(verdict *v, const options *o)
{
  v->words = calloc(o->nwords + 1, 1);
  v->regexes = calloc(o->nregexes + 1, 1);
  v->word_at = calloc(o->nwords + 1, sizeof *v->word_at);
  v->regex_at = calloc(o->nregexes + 1, sizeof *v->regex_at);
  return v->words && v->regexes && v->word_at && v->regex_at ? 0 : -1;
}

static void verdict_free(verdict *v)
{
  free(v->words);
  free(v->regexes);
  free(v->word_at);
  free(v->regex_at);
}

/* No hits. */
static void verdict_clear(verdict *v, const options *o)
{
  v->status = v->status_missed = 0;
  v->nwords = v->nregexes = 0;
  memset(v->words, 0, o->nwords);
  memset(v->regexes, 0, o->nregexes);
}

/* Matcher id (the words, then the regexes) hit, its first match ending at
 * offset; a matcher that hit already keeps its first hit. Returns 1 when
 * the hit is its first. */
static int verdict_hit(verdict *v, const options *o, size_t id, size_t offset)
{
  if (id < o->nwords && !v->words[id]) {
    v->words[id] = 1;
    v->word_at[id] = offset;
    v->nwords++;
    return 1;
  }
  if (id >= o->nwords && !v->regexes[id - o->nwords]) {
    v->regexes[id - o->nwords] = 1;
    v->regex_at[id - o->nwords] = offset;
    v->nregexes++;
    return 1;
  }
  return 0;
}

#if SCAN_VECTORSCAN
/* Whether matcher id has hit. */
static int verdict_has(const verdict *v, const options *o, size_t id)
{
  return id < o->nwords ? v->words[id] : v->regexes[id - o->nwords];
}
#endif

/* Runs the --word and --regex matchers that have no hit yet, and that
 * run is not NULL for (run[id]: id is matched here), over text: a header
 * line, or the body kept whole. */
static void match_text(const options *o, rc_view text, int body, const unsigned char *skip,
                       verdict *v)
{
  for (size_t i = 0; i < o->nwords; i++) {
    if (v->words[i] || (skip && skip[i]))
      continue;
    size_t at = find_word(text, o->words[i], strlen(o->words[i]));
    if (at != NO_OFFSET)
      verdict_hit(v, o, i, body ? at : NO_OFFSET);
  }
  for (size_t i = 0; i < o->nregexes; i++) {
    if (v->regexes[i] || (skip && skip[o->nwords + i]) || !regex_hit(&o->regexes[i], text))
      continue;
    verdict_hit(v, o, o->nwords + i,
                body ? regex_first_end(&o->regexes[i], text, o->regex_ends[i]) : NO_OFFSET);
  }
}

/* Runs them over each line of a header block, without its line break (CR
 * LF or LF); the blank line that ends the block is not a line. */
static void match_lines(const options *o, rc_view block, verdict *v)
{
  const char *p = block.ptr, *end = block.ptr + block.len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    rc_view one = {p, (size_t)((nl ? nl : end) - p)};
    if (one.len && one.ptr[one.len - 1] == '\r')
      one.len--;
    if (one.len)
      match_text(o, one, 0, NULL, v);
    p = nl ? nl + 1 : end;
  }
}

/* What the final response's head decides, once it is complete: the status
 * matcher, then (when the status does not rule the target out, which
 * makes the text not looked at) the header lines under --part header and
 * all. Clears v first. */
static void match_head(const options *o, rc_response *resp, verdict *v)
{
  verdict_clear(v, o);
  int status = rc_status(resp);
  v->status = o->nstatuses && status >= 0 && status <= STATUS_MAX && o->status_set[status];
  v->status_missed = o->nstatuses && !v->status;
  rc_hop_info last;
  if (!v->status_missed && (o->nwords || o->nregexes) && o->part != PART_BODY &&
      rc_hop(resp, -1, &last) == RC_OK)
    match_lines(o, last.raw, v);
}

/* The matching rule (see usage): every kind of matcher given needs a hit,
 * and the status check comes first. */
static int verdict_matched(const options *o, const verdict *v)
{
  return !v->status_missed && (!o->nwords || v->nwords) && (!o->nregexes || v->nregexes);
}

/* ---- The engine --------------------------------------------------------- */

/* How the --word and --regex matchers of the body run. Vectorscan takes
 * them all in one database, compiled once, and runs it over each body as
 * it arrives, in the body observer (a stream per transfer: matches that
 * straddle the slices curl delivers are found, and the body need not be
 * kept); the others run with regexec over the body kept whole once the
 * transfer ends.
 *
 * A matcher that has hit has nothing more to say about the body, yet a
 * database keeps paying for it: its literals are still found and checked
 * at every occurrence. So a stream narrows: once the matchers still
 * without a hit all have a bounded width (the longest match they can
 * have; a matcher anchored at the start counts as unbounded), the stream
 * is closed and one of a database of those alone takes over, first fed
 * the last width - 1 bytes the old one saw, so that no match ending past
 * the switch is missed. None can end in those replayed bytes: the old
 * stream would have reported it. Narrowed databases are compiled when
 * first wanted and kept, at most NARROW_DBS of them, so that compiling
 * stays a bounded cost of the whole scan. */
#define NARROW_DBS   16
#define NARROW_WIDTH 4096 /* the widest match narrowing replays for */

typedef struct engine {
  unsigned char *streamed;  /* per matcher id (words, then regexes): on the stream */
  size_t nstreamed, nwhole; /* body matchers on the stream, and over the body kept */
  int keep_body;            /* some matcher, or none's output, needs the body kept */
#if SCAN_VECTORSCAN
  hs_database_t *db; /* all streamed matchers; NULL: nothing streams */
  hs_scratch_t *scratch;
  char **exprs;     /* per matcher id: its Vectorscan expression, or NULL */
  unsigned *width;  /* per matcher id: its widest match, UINT_MAX if unbounded */
  struct narrowed { /* a database of the matchers left[id] */
    unsigned char *left;
    hs_database_t *db; /* NULL: it did not compile */
  } narrow[NARROW_DBS];
  size_t nnarrow;
#endif
} engine;

/* The engine this build has, as --help and the summary name it. */
static const char *engine_name(void)
{
#if SCAN_VECTORSCAN
  static char name[64];
  snprintf(name, sizeof name, "Vectorscan %.*s", (int)strcspn(hs_version(), " "), hs_version());
  return name;
#else
  return "none (built without Vectorscan)";
#endif
}

#if SCAN_VECTORSCAN
/* DOTALL only matters for a '.' the translation has not replaced; no
 * MULTILINE: ^ and $ anchor at the body's ends. SINGLEMATCH: the first
 * match of each is all that is reported. */
#define STREAM_FLAGS (HS_FLAG_DOTALL | HS_FLAG_SINGLEMATCH)

/* A database of the matchers take[id] (each with an expression), or
 * NULL with *bad the index among them of one Vectorscan rejects (-1: the
 * set as a whole, or out of memory). */
static hs_database_t *engine_db(const engine *g, size_t n, const unsigned char *take, int *bad)
{
  const char **exprs = calloc(n + 1, sizeof *exprs);
  unsigned *flags = calloc(n + 1, sizeof *flags), *ids = calloc(n + 1, sizeof *ids);
  hs_database_t *db = NULL;
  unsigned k = 0;
  *bad = -1;
  if (exprs && flags && ids) {
    for (size_t id = 0; id < n; id++)
      if (take[id]) {
        exprs[k] = g->exprs[id];
        flags[k] = STREAM_FLAGS;
        ids[k++] = (unsigned)id;
      }
    hs_compile_error_t *err = NULL;
    if (hs_compile_multi(exprs, flags, ids, k, HS_MODE_STREAM, NULL, &db, &err) != HS_SUCCESS) {
      db = NULL;
      if (err && err->expression >= 0 && (unsigned)err->expression < k)
        *bad = (int)ids[err->expression];
      hs_free_compile_error(err);
    }
  }
  free(exprs);
  free(flags);
  free(ids);
  return db;
}

/* Compiles the body matchers that Vectorscan takes. A pattern it rejects
 * (the compile error names it) is left to regexec and the rest compiled
 * again; an error of the whole set leaves them all to regexec. Returns 0,
 * or -1 when out of memory. */
static int engine_compile(engine *g, const options *o)
{
  size_t n = o->nwords + o->nregexes;
  g->exprs = calloc(n + 1, sizeof *g->exprs);
  g->width = calloc(n + 1, sizeof *g->width);
  unsigned char *take = calloc(n + 1, 1);
  int status = g->exprs && g->width && take ? 0 : -1;
  for (size_t id = 0; status == 0 && id < n; id++) {
    char *text = NULL;
    if (id < o->nwords) { /* a word: each byte as \xHH, a literal */
      size_t len = strlen(o->words[id]);
      if ((text = malloc(4 * len + 1)) != NULL)
        for (size_t i = 0; i < len; i++)
          snprintf(text + 4 * i, 5, "\\x%02x", (unsigned char)o->words[id][i]);
      status = text ? 0 : -1;
    } else {
      text = ere_translate(o->regex_texts[id - o->nwords]);
    }
    g->exprs[id] = text;
    take[id] = text != NULL;
  }
  int any = 0;
  for (size_t id = 0; id < n; id++)
    any |= take[id];
  while (status == 0 && any) {
    int bad;
    if ((g->db = engine_db(g, n, take, &bad)) != NULL)
      break;
    if (bad < 0)
      break; /* the set as a whole: none streams */
    take[bad] = 0;
    any = 0;
    for (size_t id = 0; id < n; id++)
      any |= take[id];
  }
  if (status == 0 && g->db && hs_alloc_scratch(g->db, &g->scratch) != HS_SUCCESS)
    status = -1;
  for (size_t id = 0; status == 0 && g->db && id < n; id++) {
    if (!take[id])
      continue;
    g->streamed[id] = 1;
    /* Widths as Vectorscan works them out. The translation writes '^'
     * only as an anchor (bytes are \xHH, sets ranges): a matcher with one
     * can only be followed from the body's start. */
    hs_expr_info_t *info = NULL;
    hs_compile_error_t *err = NULL;
    g->width[id] = UINT_MAX;
    if (!strchr(g->exprs[id], '^') &&
        hs_expression_info(g->exprs[id], STREAM_FLAGS, &info, &err) == HS_SUCCESS)
      g->width[id] = info->max_width;
    free(info);
    hs_free_compile_error(err);
  }
  free(take);
  return status;
}

/* The narrowed database of the streamed matchers left[id] (those without
 * a hit): one compiled before, or compiled now while there is room for
 * it; NULL when there is none, or it did not compile. */
static hs_database_t *engine_narrowed(engine *g, const options *o, const unsigned char *left)
{
  size_t n = o->nwords + o->nregexes;
  size_t i = 0;
  while (i < g->nnarrow && memcmp(g->narrow[i].left, left, n) != 0)
    i++;
  if (i == g->nnarrow) {
    if (i == NARROW_DBS || !(g->narrow[i].left = malloc(n + 1)))
      return NULL;
    memcpy(g->narrow[i].left, left, n);
    int bad;
    g->narrow[i].db = engine_db(g, n, left, &bad);
    /* The scratch grows to fit it: it serves every database. */
    if (g->narrow[i].db && hs_alloc_scratch(g->narrow[i].db, &g->scratch) != HS_SUCCESS) {
      hs_free_database(g->narrow[i].db);
      g->narrow[i].db = NULL;
    }
    g->nnarrow++;
  }
  return g->narrow[i].db;
}
#endif

/* Decides where each matcher runs, and whether bodies are kept: only when
 * a body matcher runs over the kept body (every output field but those is
 * taken from the stream: the body's length is counted, the title read from
 * its first bytes). Returns 0, or -1 when out of memory. */
static int engine_build(engine *g, const options *o)
{
  size_t n = o->nwords + o->nregexes;
  if (!(g->streamed = calloc(n + 1, 1)))
    return -1;
  if (!n || o->part == PART_HEADER)
    return 0;
#if SCAN_VECTORSCAN
  if (engine_compile(g, o) != 0)
    return -1;
#endif
  for (size_t id = 0; id < n; id++) {
    if (g->streamed[id])
      g->nstreamed++;
    else
      g->nwhole++;
  }
  g->keep_body = g->nwhole > 0;
  return 0;
}

static void engine_free(engine *g, const options *o)
{
#if SCAN_VECTORSCAN
  for (size_t i = 0; i < g->nnarrow; i++) {
    hs_free_database(g->narrow[i].db);
    free(g->narrow[i].left);
  }
  hs_free_scratch(g->scratch);
  hs_free_database(g->db);
  for (size_t id = 0; g->exprs && id < o->nwords + o->nregexes; id++)
    free(g->exprs[id]);
  free(g->exprs);
  free(g->width);
#endif
  (void)o;
  free(g->streamed);
}

/* ---- Output ------------------------------------------------------------- */

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

#define TITLE_HEAD (16 * 1024) /* bytes of the body the title is looked for in */
#define TITLE_SCAN 8192        /* bytes of the title element looked at */
#define TITLE_MAX  1024        /* bytes of the title written, at most */

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

struct scan;

/* One unit of concurrency: a transfer at a time. */
typedef struct slot {
  struct scan *scan; /* for the body observer */
  CURL *easy;
  rc_response *resp;
  slot_state state;
  char *url;                    /* the target as given; NULL when idle */
  long attempts;                /* transfers made for this target */
  double due;                   /* READY: seconds since the scan's start */
  struct timespec started;      /* when the transfer was handed to curl */
  char errbuf[CURL_ERROR_SIZE]; /* curl's detailed message for a failure */
  /* What the body observer found in the body of hop number hop (a count:
   * 0 before any body), the final one unless a later hop came: */
  size_t hop;
  verdict v;       /* the hits so far, head and streamed body */
  char *head;      /* the body's first TITLE_HEAD bytes, for the title */
  size_t head_len; /* bytes in head */
#if SCAN_VECTORSCAN
  hs_stream_t *stream; /* from the body's first slice (or a narrowing) to the target's end */
  int stream_over;     /* nothing more to learn from it: no more scanning */
  size_t undecided;    /* streamed matchers without a hit */
  size_t stream_base;  /* the body offset of the stream's first byte */
  size_t body_seen;    /* bytes of this hop's body observed */
  int narrow_due;      /* a streamed matcher hit since the stream opened */
  char *tail;          /* NARROW_WIDTH bytes: the last ones seen, while a */
  size_t tail_len;     /* narrowing waits for enough of them to replay */
#endif
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
  engine engine;
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

/* ---- The body observer -------------------------------------------------- */

#if SCAN_VECTORSCAN
/* A streamed matcher's first match (SINGLEMATCH: its only report in a
 * stream), ending at stream offset to. Once every streamed matcher has a
 * hit, the stream has nothing more to say: a nonzero return ends its
 * scanning. */
static int on_stream_match(unsigned int id, unsigned long long from, unsigned long long to,
                           unsigned int flags, void *ctx)
{
  (void)from;
  (void)flags;
  slot *sl = ctx;
  if (verdict_hit(&sl->v, sl->scan->opt, id, sl->stream_base + (size_t)to)) {
    sl->undecided--;
    sl->narrow_due = 1;
  }
  return sl->undecided == 0;
}

/* Which streamed matchers have no hit yet: left[id]. */
static void undecided_set(const scan *s, const slot *sl, unsigned char *left)
{
  const options *o = s->opt;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++)
    left[id] = s->engine.streamed[id] && !verdict_has(&sl->v, o, id);
}

/* Opens the slot's stream at body offset base on the database of the
 * streamed matchers without a hit, and feeds it the replay bytes that
 * come before base + replay_len. At the body's start (narrowing 0), all
 * of them serve when no narrowed database can be had; a narrowing
 * without one leaves the stream as it is. Returns 0, or -1 when out of
 * memory. */
static int stream_open(scan *s, slot *sl, int narrowing, size_t base, const char *replay,
                       size_t replay_len)
{
  engine *g = &s->engine;
  const options *o = s->opt;
  hs_database_t *db = NULL;
  if (sl->undecided < g->nstreamed) {
    unsigned char *left = malloc(o->nwords + o->nregexes + 1);
    if (!left)
      return -1;
    undecided_set(s, sl, left);
    db = engine_narrowed(g, o, left);
    free(left);
  }
  if (!db && narrowing)
    return 0;
  hs_stream_t *next;
  if (hs_open_stream(db ? db : g->db, 0, &next) != HS_SUCCESS)
    return -1;
  if (sl->stream)
    hs_close_stream(sl->stream, g->scratch, NULL, NULL);
  sl->stream = next;
  sl->stream_base = base;
  if (replay_len) {
    hs_error_t err =
        hs_scan_stream(next, replay, (unsigned)replay_len, 0, g->scratch, on_stream_match, sl);
    if (err == HS_SCAN_TERMINATED)
      sl->stream_over = 1;
    else if (err != HS_SUCCESS)
      return -1;
  }
  return 0;
}

/* After a slice (data, len) that the stream saw: when matchers hit since
 * the stream opened and those left have bounded widths, a stream of them
 * alone takes over (see engine), first fed the bytes it needs from the
 * slice, or from the tail kept for it while the slices are too short.
 * Returns 0, or -1 when out of memory. */
static int stream_narrow(scan *s, slot *sl, const char *data, size_t len)
{
  const options *o = s->opt;
  size_t replay = 0;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++) {
    if (!s->engine.streamed[id] || verdict_has(&sl->v, o, id))
      continue;
    if (s->engine.width[id] > NARROW_WIDTH) {
      sl->narrow_due = 0; /* until that one hits */
      sl->tail_len = 0;
      return 0;
    }
    if (s->engine.width[id] > replay + 1)
      replay = s->engine.width[id] - 1;
  }
  if (replay > sl->body_seen)
    replay = sl->body_seen;
  const char *from;
  if (len >= replay) {
    from = data + len - replay;
  } else {
    /* Keeps the last bytes seen until there are enough of them. */
    if (!sl->tail && !(sl->tail = malloc(NARROW_WIDTH)))
      return -1;
    if (sl->tail_len + len > NARROW_WIDTH) {
      size_t drop = sl->tail_len + len - NARROW_WIDTH;
      memmove(sl->tail, sl->tail + drop, sl->tail_len - drop);
      sl->tail_len -= drop;
    }
    memcpy(sl->tail + sl->tail_len, data, len);
    sl->tail_len += len;
    if (sl->tail_len < replay)
      return 0; /* the next slice */
    from = sl->tail + sl->tail_len - replay;
  }
  sl->narrow_due = 0;
  sl->tail_len = 0;
  return stream_open(s, sl, 1, sl->body_seen - replay, from, replay);
}
#endif

/* Closes the slot's stream, if open; eod: first reporting the matches
 * that the body's end decides ($), the body being whole. */
static void stream_close(scan *s, slot *sl, int eod)
{
#if SCAN_VECTORSCAN
  if (sl->stream)
    hs_close_stream(sl->stream, s->engine.scratch, eod && !sl->stream_over ? on_stream_match : NULL,
                    sl);
  sl->stream = NULL;
#endif
  (void)s;
  (void)sl;
  (void)eod;
}

/* Before a transfer: nothing observed yet. */
static void observed_reset(scan *s, slot *sl)
{
  stream_close(s, sl, 0);
  sl->hop = 0;
  sl->head_len = 0;
}

/* The first slice of a hop's body: its head is complete, so the status
 * and the header lines are matched now; the body's matchers start afresh
 * (a hop's body that a later hop follows, a redirect's, is not the final
 * body), on a stream of those that the header lines have not decided
 * (--part all). Returns 0, or -1 when a stream cannot be opened. */
static int body_begin(scan *s, slot *sl, size_t hops)
{
  observed_reset(s, sl);
  sl->hop = hops;
  match_head(s->opt, sl->resp, &sl->v);
#if SCAN_VECTORSCAN
  const options *o = s->opt;
  sl->undecided = 0;
  for (size_t id = 0; id < o->nwords + o->nregexes; id++)
    sl->undecided += s->engine.streamed[id] && !verdict_has(&sl->v, o, id);
  sl->stream_base = sl->body_seen = sl->tail_len = 0;
  sl->narrow_due = 0;
  /* A target that its status rules out is not looked at. */
  sl->stream_over = sl->v.status_missed || sl->undecided == 0;
  if (s->engine.db && !sl->stream_over && stream_open(s, sl, 0, 0, NULL, 0) != 0) {
    stream_close(s, sl, 0);
    return -1;
  }
#endif
  return 0;
}

/* Whether the target's verdict is known before its body ends (for
 * --stop-on-match): its status rules it out, or every --word and --regex
 * has hit or looks only at header lines, which are all in. An HTML body's
 * first TITLE_HEAD bytes are read first, for its title. */
static int settled(const scan *s, const slot *sl)
{
  const options *o = s->opt;
  if (!sl->v.status_missed && o->part != PART_HEADER &&
      (s->engine.nwhole || sl->v.nwords < o->nwords || sl->v.nregexes < o->nregexes))
    return 0;
  return sl->head_len >= TITLE_HEAD || !is_html(sl->resp);
}

/* The body observer: sees each slice of the decoded body as it arrives
 * (within --max-body), kept or not. It keeps the first TITLE_HEAD bytes
 * for the title and runs the streamed matchers over the slice; a match
 * that straddles slices is found, as the stream carries what it needs
 * from one to the next. */
static rc_code observe(void *ud, const char *data, size_t len)
{
  slot *sl = ud;
  scan *s = sl->scan;
  size_t hops = rc_hop_count(sl->resp);
  if (hops != sl->hop && body_begin(s, sl, hops) != 0)
    return RC_E_NOMEM;
  if (sl->head_len < TITLE_HEAD) {
    size_t n = len < TITLE_HEAD - sl->head_len ? len : TITLE_HEAD - sl->head_len;
    memcpy(sl->head + sl->head_len, data, n);
    sl->head_len += n;
  }
#if SCAN_VECTORSCAN
  for (size_t done = 0; sl->stream && !sl->stream_over && done < len;) {
    unsigned n = len - done < UINT_MAX / 2 ? (unsigned)(len - done) : UINT_MAX / 2;
    hs_error_t err =
        hs_scan_stream(sl->stream, data + done, n, 0, s->engine.scratch, on_stream_match, sl);
    if (err == HS_SCAN_TERMINATED)
      sl->stream_over = 1;
    else if (err != HS_SUCCESS)
      return RC_E_NOMEM; /* fails the transfer: RC_E_OBSERVER */
    done += n;
  }
  sl->body_seen += len;
  if (sl->stream && !sl->stream_over && sl->narrow_due && stream_narrow(s, sl, data, len) != 0)
    return RC_E_NOMEM;
#endif
  if (s->opt->stop_on_match && settled(s, sl))
    return RC_STOPPED;
  return RC_OK;
}

/* The target's verdict, once its transfer is over: the stream's matches
 * at the body's end, then the matchers that run over the body kept. */
static int matches(scan *s, slot *sl)
{
  const options *o = s->opt;
  verdict *v = &sl->v;
  size_t hops = rc_hop_count(sl->resp);
  if (hops != sl->hop) {
    /* No body of the final response was observed (none came, or it was
     * empty): an empty stream, for what matches an empty body ("^$"). */
    observed_reset(s, sl);
    if (hops > 0 && body_begin(s, sl, hops) != 0)
      match_head(o, sl->resp, v); /* no stream: the head alone */
  }
  stream_close(s, sl, 1);
  if (hops == 0) {
    verdict_clear(v, o); /* no response arrived */
    return 0;
  }
  if (v->status_missed) {
    verdict_clear(v, o);
    v->status_missed = 1;
    return 0;
  }
  if (o->part != PART_HEADER && s->engine.nwhole)
    match_text(o, rc_body(sl->resp), 1, s->engine.streamed, v);
  return verdict_matched(o, v);
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

/* Whether curl cannot reuse an HTTP/2 prior-knowledge connection: from
 * 7.87.0 to before 8.0.0 a second transfer on one fails (curl issue
 * 10634), so each transfer then gets a connection of its own. */
static int h2c_unreusable(const options *o)
{
  unsigned int num = curl_version_info(CURLVERSION_NOW)->version_num;
  return o->http_version == CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE && num >= 0x075700 &&
         num < 0x080000;
}

/* Targets come from outside: only web URLs, also after a redirect
 * (CURLOPT_PROTOCOLS_STR is curl 7.85 and newer). */
static int web_only(CURL *e)
{
#if LIBCURL_VERSION_NUM >= 0x075500
  return curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK;
#else
  long web = CURLPROTO_HTTP | CURLPROTO_HTTPS;
  return curl_easy_setopt(e, CURLOPT_PROTOCOLS, web) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, web) == CURLE_OK;
#endif
}

/* Makes the slot's easy handle and response, and sets every option that
 * stays the same from one target to the next. */
static int slot_init(scan *s, slot *sl, const rc_limits *lim)
{
  const options *o = s->opt;
  sl->scan = s;
  if (rc_response_new(s->pool, lim, &sl->resp) != RC_OK || !(sl->easy = curl_easy_init()) ||
      verdict_init(&sl->v, o) != 0 || !(sl->head = malloc(TITLE_HEAD)))
    return -1;
  /* Every body goes by the observer; it is stored only when a matcher
   * needs it whole, so that otherwise memory does not grow with bodies. */
  if (rc_response_observe(sl->resp, observe, sl,
                          s->engine.keep_body ? RC_KEEP_BODY : RC_KEEP_NONE) != RC_OK)
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
           web_only(e) &&
           curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_BUFFERSIZE, RECV_BUFFER) == CURLE_OK &&
           (!h2c_unreusable(o) || curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L) == CURLE_OK);
  return ok && set_request(e, o) == 0 ? 0 : -1;
}

/* ---- Reports ------------------------------------------------------------ */

/* The error field: NULL, or what went wrong. A body cut at the cap is
 * reported by "truncated", a transfer that --stop-on-match ended by
 * "stopped", not as errors. */
static const char *error_text(slot *sl, ending how, CURLcode cc, char *buf, size_t cap)
{
  if (how == INTERRUPTED)
    return "interrupted";
  rc_code rc = rc_result(sl->resp, cc);
  if (rc == RC_E_TRANSFER) {
    snprintf(buf, cap, "transfer failed: %s", sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(cc));
    return buf;
  }
  return rc != RC_OK && rc != RC_TRUNCATED && rc != RC_STOPPED ? rc_strerror(rc) : NULL;
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

/* The title of an HTML body, from its first bytes; null for other bodies,
 * or without one. */
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

/* One hit of the matches array; offset NO_OFFSET is null. */
static void json_hit(line *l, int *first, const char *kind, const char *value, size_t offset)
{
  printf_line(l, "%s{\"matcher\":\"%s\",\"value\":", *first ? "" : ",", kind);
  json_string(l, value);
  if (offset == NO_OFFSET)
    puts_line(l, ",\"offset\":null}");
  else
    printf_line(l, ",\"offset\":%zu}", offset);
  *first = 0;
}

/* The matchers that hit: [{"matcher":"status","value":"200","offset":null},
 * {"matcher":"word","value":"admin","offset":1234}, ...]. */
static void json_matches(line *l, const options *o, const verdict *v, int status)
{
  int first = 1;
  puts_line(l, "[");
  if (v->status) {
    char code[8];
    snprintf(code, sizeof code, "%d", status);
    json_hit(l, &first, "status", code, NO_OFFSET);
  }
  for (size_t i = 0; i < o->nwords; i++)
    if (v->words[i])
      json_hit(l, &first, "word", o->words[i], v->word_at[i]);
  for (size_t i = 0; i < o->nregexes; i++)
    if (v->regexes[i])
      json_hit(l, &first, "regex", o->regex_texts[i], v->regex_at[i]);
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
  verdict *v = &sl->v;
  int matched = matches(s, sl);
  int stopped = how != NOT_STARTED && rc_result(r, cc) == RC_STOPPED;
  char buf[CURL_ERROR_SIZE + 128];
  const char *err = error_text(sl, how, cc, buf, sizeof buf);
  char *final_url = NULL;
  curl_off_t wire = 0;
  if (how != NOT_STARTED) {
    curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &final_url);
    curl_easy_getinfo(sl->easy, CURLINFO_SIZE_DOWNLOAD_T, &wire);
  }
  /* Counted whether or not the body was kept. */
  size_t body_bytes = rc_body_length(r);
  rc_view head = {sl->head, sl->head_len};
  double took = seconds_since(&sl->started);

  s->done++;
  s->matched += matched != 0;
  s->errors += err != NULL;
  s->interrupted += how == INTERRUPTED;
  s->body_bytes += body_bytes;
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
  json_title(l, r, head);
  puts_line(l, ",\"chain_status_codes\":");
  json_chain(l, r);
  printf_line(l,
              ",\"http_version\":%s,\"hops\":%zu,\"body_bytes\":%zu,\"truncated\":%s,"
              "\"stopped\":%s,\"encoding\":\"%s\",\"spilled\":%s,\"matched\":%s,\"matches\":",
              http_version_json(r), rc_hop_count(r), body_bytes, rc_truncated(r) ? "true" : "false",
              stopped ? "true" : "false", encoding_name(rc_body_encoding(r)),
              rc_body_spilled(r) ? "true" : "false", matched ? "true" : "false");
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
  observed_reset(s, sl);
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
  const engine *g = &s->engine;
  if (g->nstreamed || g->nwhole)
    fprintf(stderr,
            "scan: body matchers: %zu streamed (%s), %zu over the kept body (regexec); bodies %s\n",
            g->nstreamed, engine_name(), g->nwhole, g->keep_body ? "kept" : "not kept");
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
  if (s->multi && h2c_unreusable(o)) /* no multiplexing on one either */
    curl_multi_setopt(s->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
  s->src.shard = o->shard;
  s->src.shards = o->shards;
  if (!s->slots || !s->multi || engine_build(&s->engine, o) != 0) {
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
    stream_close(s, sl, 0);
    verdict_free(&sl->v);
    free(sl->head);
#if SCAN_VECTORSCAN
    free(sl->tail);
#endif
  }
  free(s->slots);
  engine_free(&s->engine, s->opt);
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
