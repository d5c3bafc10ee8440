/* scan's command line: the options, their usage text, and the targets
 * they name (the -u URLs, then a list read one line at a time). */
#include "main.h"
#include "../args.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <sys/types.h>

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
        "      --iword WORD        WORD occurs in any ASCII case (as httpx -ms\n"
        "                          and nuclei's case-insensitive words); one of\n"
        "                          the --word words, listed as \"word\"\n"
        "      --regex REGEX       the regex matches somewhere: PCRE syntax, as\n"
        "                          nuclei and httpx write them ((?i), (?s), (?m),\n"
        "                          (?:...), \\d \\s \\w \\b, lazy *? +?, {n,m},\n"
        "                          classes; also back references and lookarounds)\n"
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
        "bytes (no UTF-8 mode; \\w \\d \\s and (?i) are ASCII), NUL bytes\n"
        "included, with PCRE's meaning: '.' is any byte but a line feed ((?s):\n"
        "any), ^ the start, $ the end or before a final line feed ((?m): also\n"
        "at each line's). A header line is matched without its line break.\n"
        "\n"
        "Templates (nuclei's format, the subset that scan(1) lists):\n"
        "  -t, --templates PATH    run the templates of PATH, a template file or a\n"
        "                          directory of them (*.yaml, *.yml, subdirectories\n"
        "                          too; repeatable), in place of --word, --regex,\n"
        "                          --status and --extract. Templates whose\n"
        "                          requests are the same share one request per\n"
        "                          target. Output: one line per template, target\n"
        "                          and match, as nuclei writes it (template-id,\n"
        "                          info, type, host, matched-at, matcher-name,\n"
        "                          extracted-results, timestamp; and status-code,\n"
        "                          cluster-requests, body-bytes, truncated,\n"
        "                          stopped: ended once its verdicts were known).\n"
        "                          One raw request is sent as nuclei reads it\n"
        "                          (@Host, @tls-sni, @timeout; unsafe: true as\n"
        "                          written where curl can send it).\n"
        "                          A template with anything else is skipped,\n"
        "                          with its reason, counted in the summary\n"
        "      --validate          load the -t templates, print each skipped one\n"
        "                          with its reason and the counts, and exit\n"
        "      --var NAME=VALUE    give the templates' {{NAME}} VALUE (also -var\n"
        "                          and -V NAME=VALUE, nuclei's; repeatable, a\n"
        "                          later one of a name wins): over a template's\n"
        "                          variable and the target variables of that\n"
        "                          name, under its constants\n"
        "  -v, --verbose           with --validate, first each template loaded and\n"
        "                          what it keeps of the body: streamed atoms and\n"
        "                          matchers, the whole body, or its count only\n"
        "\n",
        out);
  fputs("Extractors (repeatable):\n"
        "      --extract REGEX     report what REGEX finds in the body (also\n"
        "                          --extract-regex): group 1 of each match if it\n"
        "                          has groups, else the whole match; distinct\n"
        "                          values in order, at most 100 per extractor,\n"
        "                          each cut at 1 KiB, in \"extracts\": {REGEX:\n"
        "                          [values]}. The body is not kept for them; a\n"
        "                          match longer than 64 KiB may be missed, and\n"
        "                          the extractor is then listed in\n"
        "                          \"extracts_incomplete\".\n"
        "\n",
        out);
  engine_usage(out);
  fputs("\n"
        "  -h, --help              this text\n"
        "  -V, --version           the version of scan and of the libraries\n"
        "\n"
        "Output, one JSON object per line, named as httpx names them where the\n"
        "meaning is the same (scan(1) describes each field):\n"
        "  timestamp, input, url, final_url, method, status_code (0: no\n"
        "  response), content_length (declared; null: none), content_type,\n"
        "  webserver, title, chain_status_codes (a proxy's CONNECT reply is not\n"
        "  one), connect_status_code (that reply's; null: none), http_version,\n"
        "  hops, body_bytes, truncated, stopped, encoding, spilled, matched,\n"
        "  matches (the matchers that hit, with the body offset where each first\n"
        "  match ends), extracts, extracts_incomplete, failed, error, attempts,\n"
        "  time (e.g. \"12.3ms\"), time_ms.\n"
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

/* --shard K/N: 1 <= K <= N. */
static int parse_shard(const char *s, unsigned long *k, unsigned long *n)
{
  const char *slash = strchr(s, '/');
  char kt[24];
  long kv, nv;
  if (!slash || (size_t)(slash - s) >= sizeof kt)
    return -1;
  memcpy(kt, s, (size_t)(slash - s));
  kt[slash - s] = '\0';
  if (args_long(kt, 1, LONG_MAX, &kv) || args_long(slash + 1, 1, LONG_MAX, &nv) || kv > nv)
    return -1;
  *k = (unsigned long)kv;
  *n = (unsigned long)nv;
  return 0;
}

/* --status CODES: a comma-separated list of codes from 100 to STATUS_MAX,
 * added to the set. */
static int parse_statuses(const char *s, matchers *m)
{
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *s < '0' || *s > '9' || errno || v < 100 || v > STATUS_MAX ||
        (*end && *end != ','))
      return -1;
    if (!m->status_set[v]) {
      m->status_set[v] = 1;
      m->nstatuses++;
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
  OPT_IWORD,
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
  OPT_STOP_ON_MATCH,
  OPT_EXTRACT,
  OPT_VALIDATE,
  OPT_VAR
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
    {"iword", required_argument, NULL, OPT_IWORD},
    {"regex", required_argument, NULL, OPT_REGEX},
    {"part", required_argument, NULL, OPT_PART},
    {"stop-on-match", no_argument, NULL, OPT_STOP_ON_MATCH},
    {"extract", required_argument, NULL, OPT_EXTRACT},
    {"extract-regex", required_argument, NULL, OPT_EXTRACT},
    {"templates", required_argument, NULL, 't'},
    {"validate", no_argument, NULL, OPT_VALIDATE},
    {"var", required_argument, NULL, OPT_VAR},
    {"verbose", no_argument, NULL, 'v'},
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

/* --regex: compiled once for the whole scan; one PCRE2 refuses is a
 * usage error that says why and where. */
static int add_regex(regex *all, size_t *n, const char *text)
{
  char msg[320];
  if (regex_compile(&all[*n], text, msg, sizeof msg) != 0) {
    fprintf(stderr, "scan: invalid regex '%s': %s; try 'scan --help'\n", text, msg);
    return EXIT_USAGE;
  }
  ++*n;
  return -1;
}

/* -H LINE, appended in order. */
static int add_header(options *o, const char *text)
{
  struct curl_slist *more = curl_slist_append(o->headers, text);
  if (!more) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }
  o->headers = more;
  return -1;
}

/* -var NAME=VALUE, in order (a later one of a name wins). */
static int add_var(options *o, const char *text)
{
  size_t n = strcspn(text, "=");
  int ok = text[n] == '=' && n > 0 && (isalpha((unsigned char)text[0]) || text[0] == '_');
  for (size_t i = 1; ok && i < n; i++)
    ok = isalnum((unsigned char)text[i]) || strchr("_-.", text[i]);
  if (!ok)
    return bad_usage("invalid variable (NAME=VALUE, NAME of letters, digits, _ - .)", text);
  o->vars[o->nvars++] = text;
  return -1;
}

/* nuclei's spellings: -var NAME=VALUE, and -V NAME=VALUE (-V alone is
 * --version), as --var. */
static void nuclei_spellings(int argc, char **argv)
{
  static char var[] = "--var";
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "-var") ||
        (!strcmp(argv[i], "-V") && i + 1 < argc && argv[i + 1][0] != '-' && strchr(argv[i + 1], '=')))
      argv[i++] = var;
}

/* Options of the request and the output. Returns -1 when taken, -2 when c
 * is not one of them, else the exit status. */
static int take_request_option(options *o, int c)
{
  switch (c) {
  case 'u': o->urls[o->nurls++] = optarg; return -1;
  case 'l': o->list = optarg; return -1;
  case 't': o->templates[o->ntemplates++] = optarg; return -1;
  case OPT_VALIDATE: o->validate = 1; return -1;
  case OPT_VAR: return add_var(o, optarg);
  case 'v': o->verbose = 1; return -1;
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
  case 'c': return checked(args_long(optarg, 1, 100000, &o->concurrency), "invalid concurrency");
  case OPT_RATE: return checked(args_positive(optarg, 1e6, &o->rate), "invalid rate");
  case OPT_RETRIES: return checked(args_long(optarg, 0, 100, &o->retries), "invalid retry count");
  case OPT_MAX_BODY: return checked(args_size(optarg, &o->max_body), "invalid size");
  case OPT_MAX_MEMORY: return checked(args_size(optarg, &o->max_memory), "invalid size");
  case 'L': return checked(args_long(optarg, 0, 1000, &o->max_redirs), "invalid redirect limit");
  case OPT_CONNECT_TIMEOUT:
    return checked(args_seconds(optarg, &o->connect_timeout_ms), "invalid timeout");
  case OPT_TIMEOUT: return checked(args_seconds(optarg, &o->timeout_ms), "invalid timeout");
  case OPT_BUDGET: return checked(args_size(optarg, &o->budget), "invalid budget");
  case OPT_OVERFLOW: return checked(parse_overflow(optarg, &o->overflow), "invalid overflow mode");
  case OPT_STATUS:
    return checked(parse_statuses(optarg, &o->m), "invalid status (codes 100-999, comma-separated)");
  case OPT_WORD:
  case OPT_IWORD:
    if (!*optarg)
      return bad_usage("empty word", optarg);
    o->m.word_nocase[o->m.nwords] = c == OPT_IWORD;
    o->m.words[o->m.nwords++] = optarg;
    return -1;
  case OPT_REGEX: return add_regex(o->m.regexes, &o->m.nregexes, optarg);
  case OPT_EXTRACT: return add_regex(o->m.extracts, &o->m.nextracts, optarg);
  case OPT_PART: return checked(parse_part(optarg, &o->m.part), "invalid part");
  case OPT_STOP_ON_MATCH: o->m.stop_on_match = 1; return -1;
  default: return -2;
  }
}

int parse_options(int argc, char **argv, options *o)
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
  o->m.part = PART_BODY;
  o->shard = o->shards = 1;
  o->urls = calloc((size_t)argc, sizeof *o->urls);
  o->m.words = calloc((size_t)argc, sizeof *o->m.words);
  o->m.word_nocase = calloc((size_t)argc, 1);
  o->m.regexes = calloc((size_t)argc, sizeof *o->m.regexes);
  o->m.extracts = calloc((size_t)argc, sizeof *o->m.extracts);
  o->templates = calloc((size_t)argc, sizeof *o->templates);
  o->vars = calloc((size_t)argc, sizeof *o->vars);
  if (!o->templates || !o->vars || !o->urls || !o->m.words || !o->m.word_nocase || !o->m.regexes || !o->m.extracts) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }

  opterr = 0; /* bad options get our one-line hint instead */
  nuclei_spellings(argc, argv);
  int c;
  while ((c = getopt_long(argc, argv, ":u:l:t:o:sH:X:d:kc:L:hVv", LONG_OPTIONS, NULL)) != -1) {
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
  if (o->nvars && !o->ntemplates)
    return bad_usage("-var gives templates values: give -t", o->vars[0]);
  if (o->validate && !o->ntemplates)
    return bad_usage("--validate checks templates: give -t", "--validate");
  if (o->ntemplates && (o->m.nwords || o->m.nregexes || o->m.nstatuses || o->m.nextracts))
    return bad_usage("-t takes its matchers from the templates", "--word, --regex, --status, --extract");
  return -1;
}

void options_free(options *o)
{
  for (size_t i = 0; i < o->m.nregexes; i++)
    regex_free(&o->m.regexes[i]);
  for (size_t i = 0; i < o->m.nextracts; i++)
    regex_free(&o->m.extracts[i]);
  regex_done();
  free(o->m.regexes);
  free(o->m.extracts);
  free(o->m.words);
  free(o->m.word_nocase);
  free(o->urls);
  free(o->templates);
  free(o->vars);
  curl_slist_free_all(o->headers);
}
