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
        "       scan -t TEMPLATES [filters] -u URL ...\n"
        "\n"
        "Fetches every target URL (given with -u, then read from FILE, or from\n"
        "stdin when neither is given; in a file, one per line, blank lines and\n"
        "lines starting with '#' skipped), runs the matchers over each response\n"
        "and prints one JSON line per target as soon as it ends.\n"
        "\n"
        "The options are grouped as nuclei's help groups them. Every long option\n"
        "may also be written with one dash, as nuclei writes them (-tags,\n"
        "-timeout, -silent): a word that is a long option's name is that\n"
        "option, not a cluster of short ones.\n"
        "\n"
        "TARGET:\n"
        "  -u, --url URL           a target (repeatable; also --target)\n"
        "  -l, --list FILE         targets from FILE; \"-\" reads stdin\n"
        "      --shard K/N         scan only targets K, K+N, K+2N, ... (counted\n"
        "                          from 1 in the order given), so that N runs\n"
        "                          with K = 1..N split one list between them\n"
        "\n"
        "TEMPLATES (nuclei's format, the subset that scan(1) lists):\n"
        "  -t, --templates PATH    run the templates of PATH, a template file or a\n"
        "                          directory of them (*.yaml, *.yml, subdirectories\n"
        "                          too; repeatable), in place of --word, --regex,\n"
        "                          --status and --extract. Templates whose\n"
        "                          requests are the same share one request per\n"
        "                          target; a template whose requests depend on\n"
        "                          each other (a login, then a page; a value\n"
        "                          extracted, then sent) runs them in turn, its\n"
        "                          cookies carried (a sequence); a self-contained\n"
        "                          one once in the scan, its URLs its own.\n"
        "                          Output: one line per template, target and\n"
        "                          matching request, as nuclei writes it\n"
        "                          (template-id, info, type, host, port, scheme,\n"
        "                          url, ip, matched-at, matcher-name,\n"
        "                          extracted-results, timestamp; and status-code,\n"
        "                          cluster-requests, body-bytes, truncated,\n"
        "                          stopped: ended once its verdicts were known).\n"
        "                          Raw requests are sent as nuclei reads them\n"
        "                          (@Host, @tls-sni, @timeout; unsafe: true as\n"
        "                          written where curl can send it).\n"
        "                          Redirects as nuclei follows them: redirects,\n"
        "                          host-redirects (same host only), max-redirects\n"
        "                          (default 10); each response of the chain is\n"
        "                          matched on its own, the final one first.\n"
        "                          json extractors run jq's programs (libjq) in a\n"
        "                          child process bounded in CPU time and memory;\n"
        "                          xpath ones and matchers run XPath 1.0\n"
        "                          (libxml2). A template with anything else is\n"
        "                          skipped, with its reason, counted in the summary\n",
        out);
  fputs("      --validate          load the -t templates, print each skipped one\n"
        "                          with its reason and the counts, and exit\n"
        "      --var NAME=VALUE    give the templates' {{NAME}} VALUE (also -var\n"
        "                          and -V NAME=VALUE, nuclei's; repeatable, a\n"
        "                          later one of a name wins): over a template's\n"
        "                          variable and the target variables of that\n"
        "                          name, under its constants; a request that\n"
        "                          reads a name nobody gives is not sent\n"
        "      --attack-type TYPE  how every request's payloads combine, over its\n"
        "                          attack: batteringram, pitchfork or clusterbomb\n"
        "                          (also --at, nuclei's)\n"
        "  -v, --verbose           with --validate, first each template loaded and\n"
        "                          what it keeps of the body: streamed atoms and\n"
        "                          matchers, the whole body, or its count only;\n"
        "                          its words and regexes with {{...}} replaced\n"
        "                          once in the scan (they stream) or for each\n"
        "                          response; the names nobody gives it reads\n"
        "\n",
        out);
  fputs("FILTERING (with -t; nuclei's: comma lists, repeatable, any case):\n"
        "  -a, --author LIST       templates by any of these authors\n"
        "      --tags LIST         templates with any of these tags\n"
        "      --etags, --exclude-tags LIST   templates with none of them\n"
        "      --id, --template-id LIST   templates of these ids; an id with *,\n"
        "                          ? or [...] is a glob pattern\n"
        "      --eid, --exclude-id LIST   not these ids (patterns too)\n"
        "      --severity LIST     templates of any of these severities: info,\n"
        "                          low, medium, high, critical, unknown (nuclei's\n"
        "                          -s; scan's -s is --silent)\n"
        "      --es, --exclude-severity LIST   not these severities\n"
        "      --type, --pt LIST   templates of these protocol types: dns, file,\n"
        "                          http, headless, tcp, workflow, ssl, websocket,\n"
        "                          whois, code, javascript (scan runs http: the\n"
        "                          others are skipped)\n"
        "      --ept, --exclude-type LIST   not these types\n"
        "A template is chosen when it has no excluded tag, id, severity or type\n"
        "and, for each of --author, --tags, --id, --severity and --type given,\n"
        "one of its values: -tags cve -severity critical,high chooses templates\n"
        "tagged cve AND of severity critical or high. One left out is neither\n"
        "loaded nor skipped: --validate and the summary count them. Unlike\n"
        "nuclei, scan leaves no tag out by default (nuclei's templates list\n"
        "some in .nuclei-ignore; today -etags dos,local,fuzz,bruteforce).\n"
        "\n"
        "OUTPUT:\n"
        "  -o, --output FILE       write the JSON lines to FILE, not stdout\n"
        "      --matched-only      print only the targets that matched\n"
        "  -s, --silent            no progress line and no summary on stderr\n"
        "  -j, --jsonl             accepted (nuclei's): the lines are JSON already\n"
        "      --je, --json-export FILE   also write the lines to FILE as one\n"
        "                          JSON array\n"
        "      --nc, --no-color    accepted (nuclei's): there is no colour\n"
        "\n"
        "REQUESTS:\n"
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
        "\n",
        out);
  fputs("RATE-LIMIT:\n"
        "  -c, --concurrency N     transfers at once (default 50)\n"
        "      --bs, --bulk-size N  nuclei's hosts per template in parallel:\n"
        "                          with it, -c is nuclei's templates in parallel\n"
        "                          (default 25) and scan runs c x N transfers at\n"
        "                          once, nuclei's bound on requests in flight.\n"
        "                          scan has one queue of requests (target by\n"
        "                          target, each distinct request once), not a\n"
        "                          grid of templates and hosts: the product is\n"
        "                          all that it bounds\n"
        "      --pc, --payload-concurrency N  with -t, the payload combinations\n"
        "                          of a template run on up to N transfers at\n"
        "                          once for a target, where its threads: says\n"
        "                          none (default 25, nuclei's; 1: in turn)\n"
        "      --rate N            at most N requests per second, all together,\n"
        "                          retries included (fractions allowed; default\n"
        "                          no limit; also --rl, --rate-limit: nuclei's,\n"
        "                          whose default is 150)\n"
        "      --retries N         retry a target up to N times (default 0) after\n"
        "                          a connection error, a timeout or a 5xx status,\n"
        "                          waiting 0.2 s, then twice as long each time\n"
        "\n"
        "OPTIMIZATIONS:\n"
        "      --timeout SEC       whole transfer, waits for the budget included\n"
        "                          (default 30; 0: none)\n"
        "      --connect-timeout SEC   (default 10; 0: curl's default)\n"
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
        "                          takes the limit. With -t it is the limit of\n"
        "                          -fr and -fhr (also -mr, --max-redirects:\n"
        "                          nuclei's)\n"
        "      --fr, --follow-redirects  with -t, every request follows\n"
        "                          redirects (nuclei's)\n"
        "      --fhr, --follow-host-redirects  with -t, every request follows\n"
        "                          the redirects that stay on its host (nuclei's)\n"
        "      --dr, --disable-redirects  with -t, no request follows redirects\n"
        "                          (nuclei's; it wins over -fr and -fhr)\n"
        "      --budget SIZE       memory budget for all responses together\n"
        "                          (default off)\n"
        "      --overflow MODE     what a transfer past the budget does: auto\n"
        "                          (HTTP/1.x waits up to 1 s, then spills to a\n"
        "                          temporary file; HTTP/2 spills at once, but\n"
        "                          waits as HTTP/1.x with curl 8.14; the\n"
        "                          default), wait (waits, never spills) or spill\n"
        "\n"
        "STATISTICS:\n"
        "      --stats             a line on stderr every --si seconds, and a\n"
        "                          last one at the end, as nuclei prints them:\n"
        "                          [h:mm:ss] | Templates: N | Hosts: N | RPS: N |\n"
        "                          Matched: N | Errors: N | Requests: N/TOTAL (P%)\n"
        "                          (TOTAL when the targets are all -u; else\n"
        "                          Requests: N), in place of the progress line\n"
        "      --si, --stats-interval SEC   (default 5)\n"
        "\n",
        out);
  fputs("MATCHERS (without -t; each may be repeated):\n"
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
        "included, with RE2's meaning where PCRE's differs: '.' is any byte but\n"
        "a line feed ((?s): any), ^ the start, $ the very end ((?m): also at\n"
        "each line's), \\s [\\t\\n\\f\\r ] and \\v the vertical tab. A header\n"
        "line is matched without its line break.\n"
        "\n"
        "EXTRACTORS (without -t; repeatable):\n"
        "      --extract REGEX     report what REGEX finds in the body (also\n"
        "                          --extract-regex): group 1 of each match if it\n"
        "                          has groups, else the whole match; distinct\n"
        "                          values in order, at most 100 per extractor,\n"
        "                          each cut at 1 KiB, in \"extracts\": {REGEX:\n"
        "                          [values]}. The body is not kept for them; a\n"
        "                          match longer than 64 KiB may be missed, and\n"
        "                          the extractor is then listed in\n"
        "                          \"extracts_incomplete\".\n"
        "\n"
        "ENGINE:\n",
        out);
  engine_usage(out);
  fputs("\n"
        "HELP:\n"
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
  OPT_VAR,
  OPT_BULK_SIZE,
  OPT_PAYLOAD_CONCURRENCY,
  OPT_STATS,
  OPT_STATS_INTERVAL,
  OPT_ACCEPTED, /* nuclei's -jsonl and -nc: what scan does anyway */
  OPT_JSON_EXPORT,
  OPT_ATTACK_TYPE,
  OPT_FOLLOW,
  OPT_FOLLOW_HOST,
  OPT_NO_REDIRECTS,
  OPT_FILTER = 512 /* + tpl_field */
};

/* nuclei's templates in parallel (-c) when -bs is given without it. */
#define NUCLEI_TEMPLATE_THREADS 25
/* nuclei's payload combinations of a template at once (-pc). */
#define NUCLEI_PAYLOAD_CONCURRENCY 25
#define NUCLEI_STATS_INTERVAL_MS 5000L
#define MAX_CONCURRENCY 100000L

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
    /* nuclei's, and its short names of them, which take one dash too. */
    {"target", required_argument, NULL, 'u'},
    {"author", required_argument, NULL, OPT_FILTER + TF_AUTHOR},
    {"tags", required_argument, NULL, OPT_FILTER + TF_TAGS},
    {"exclude-tags", required_argument, NULL, OPT_FILTER + TF_ETAGS},
    {"etags", required_argument, NULL, OPT_FILTER + TF_ETAGS},
    {"template-id", required_argument, NULL, OPT_FILTER + TF_ID},
    {"id", required_argument, NULL, OPT_FILTER + TF_ID},
    {"exclude-id", required_argument, NULL, OPT_FILTER + TF_EID},
    {"eid", required_argument, NULL, OPT_FILTER + TF_EID},
    {"severity", required_argument, NULL, OPT_FILTER + TF_SEVERITY},
    {"exclude-severity", required_argument, NULL, OPT_FILTER + TF_ESEVERITY},
    {"es", required_argument, NULL, OPT_FILTER + TF_ESEVERITY},
    {"type", required_argument, NULL, OPT_FILTER + TF_TYPE},
    {"pt", required_argument, NULL, OPT_FILTER + TF_TYPE},
    {"exclude-type", required_argument, NULL, OPT_FILTER + TF_ETYPE},
    {"ept", required_argument, NULL, OPT_FILTER + TF_ETYPE},
    {"bulk-size", required_argument, NULL, OPT_BULK_SIZE},
    {"bs", required_argument, NULL, OPT_BULK_SIZE},
    {"payload-concurrency", required_argument, NULL, OPT_PAYLOAD_CONCURRENCY},
    {"pc", required_argument, NULL, OPT_PAYLOAD_CONCURRENCY},
    {"rate-limit", required_argument, NULL, OPT_RATE},
    {"rl", required_argument, NULL, OPT_RATE},
    {"stats", no_argument, NULL, OPT_STATS},
    {"stats-interval", required_argument, NULL, OPT_STATS_INTERVAL},
    {"si", required_argument, NULL, OPT_STATS_INTERVAL},
    {"jsonl", no_argument, NULL, OPT_ACCEPTED},
    {"json-export", required_argument, NULL, OPT_JSON_EXPORT},
    {"je", required_argument, NULL, OPT_JSON_EXPORT},
    {"follow-redirects", no_argument, NULL, OPT_FOLLOW},
    {"fr", no_argument, NULL, OPT_FOLLOW},
    {"follow-host-redirects", no_argument, NULL, OPT_FOLLOW_HOST},
    {"fhr", no_argument, NULL, OPT_FOLLOW_HOST},
    {"disable-redirects", no_argument, NULL, OPT_NO_REDIRECTS},
    {"dr", no_argument, NULL, OPT_NO_REDIRECTS},
    {"max-redirects", required_argument, NULL, 'L'},
    {"mr", required_argument, NULL, 'L'},
    {"no-color", no_argument, NULL, OPT_ACCEPTED},
    {"nc", no_argument, NULL, OPT_ACCEPTED},
    {"attack-type", required_argument, NULL, OPT_ATTACK_TYPE},
    {"at", required_argument, NULL, OPT_ATTACK_TYPE},
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

#define SHORT_OPTIONS ":u:l:t:o:sH:X:d:kc:L:hVva:j"

/* The long option that name[0..len) names: exactly, or as getopt_long
 * takes it, the one option it begins; NULL: none. */
static const struct option *long_option(const char *name, size_t len, int exact)
{
  const struct option *found = NULL;
  size_t n = 0;
  for (const struct option *o = LONG_OPTIONS; o->name; o++) {
    if (strncmp(o->name, name, len))
      continue;
    if (!o->name[len])
      return o;
    found = o;
    n++;
  }
  return !exact && n == 1 ? found : NULL;
}

/* Whether arg, an option, takes the next argument as its value. */
static int value_follows(const char *arg)
{
  if (arg[0] != '-' || !arg[1])
    return 0;
  if (arg[1] == '-') {
    size_t len = strcspn(arg + 2, "=");
    const struct option *o = arg[2 + len] ? NULL : long_option(arg + 2, len, 0);
    return o && o->has_arg == required_argument;
  }
  for (const char *c = arg + 1; *c; c++) {
    const char *in = *c == ':' ? NULL : strchr(SHORT_OPTIONS, *c);
    if (!in)
      return 0;
    if (in[1] == ':')
      return c[1] == '\0';
  }
  return 0;
}

/* nuclei's spellings, rewritten for getopt_long: a long option with one
 * dash (-tags cve, -timeout=5) as with two, and -V NAME=VALUE (-V alone
 * is --version) as --var. A value of an option is left as it is. */
static int nuclei_spellings(int argc, char **argv, options *o)
{
  static char var[] = "--var";
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-V") && i + 1 < argc && argv[i + 1][0] != '-' && strchr(argv[i + 1], '=')) {
      argv[i++] = var;
      continue;
    }
    size_t len = strcspn(a + 1, "=");
    if (a[0] == '-' && a[1] != '-' && len > 1 && long_option(a + 1, len, 1)) {
      if (!(o->spelled[i] = malloc(strlen(a) + 2)))
        return -1;
      sprintf(o->spelled[i], "-%s", a);
      argv[i] = o->spelled[i];
    }
    if (value_follows(argv[i]))
      i++;
  }
  return 0;
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
  case 'c': return checked(args_long(optarg, 1, MAX_CONCURRENCY, &o->concurrency), "invalid concurrency");
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

/* -tags and the other filters: a comma list into the field. */
static int add_filter(options *o, tpl_field field)
{
  int rc = tpl_filter_add(&o->filter, field, optarg);
  if (rc == -2) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }
  if (rc == -1 && (field == TF_SEVERITY || field == TF_ESEVERITY))
    return bad_usage("invalid severity (info, low, medium, high, critical, unknown)", optarg);
  if (rc == -1 && (field == TF_TYPE || field == TF_ETYPE))
    return bad_usage("invalid protocol type (dns, file, http, headless, tcp, workflow, ssl, "
                     "websocket, whois, code, javascript)",
                     optarg);
  return rc == -1 ? bad_usage("empty list", optarg) : -1;
}

/* nuclei's options of its own: the filters, the run controls, the
 * statistics, the exports; as take_request_option. */
static int take_nuclei_option(options *o, int c)
{
  if (c >= OPT_FILTER && c < OPT_FILTER + TF_FIELDS)
    return add_filter(o, (tpl_field)(c - OPT_FILTER));
  switch (c) {
  case 'a': return add_filter(o, TF_AUTHOR);
  case OPT_BULK_SIZE:
    return checked(args_long(optarg, 1, MAX_CONCURRENCY, &o->bulk_size), "invalid bulk size");
  case OPT_PAYLOAD_CONCURRENCY:
    return checked(args_long(optarg, 1, MAX_CONCURRENCY, &o->payload_concurrency),
                   "invalid payload concurrency");
  case OPT_STATS: o->stats = 1; return -1;
  case OPT_STATS_INTERVAL:
    return checked(args_seconds(optarg, &o->stats_interval_ms) || !o->stats_interval_ms,
                   "invalid interval");
  case OPT_JSON_EXPORT: o->json_export = optarg; return -1;
  case OPT_ATTACK_TYPE:
    return checked(tpl_attack_parse(optarg, &o->attack),
                   "invalid attack type (batteringram, pitchfork or clusterbomb)");
  /* As nuclei: -dr wins, then -fhr. */
  case OPT_FOLLOW: o->redirects = o->redirects ? o->redirects : TPL_REDIRECTS_ALL; return -1;
  case OPT_FOLLOW_HOST:
    o->redirects = o->redirects == REDIRECTS_NONE ? REDIRECTS_NONE : TPL_REDIRECTS_HOST;
    return -1;
  case OPT_NO_REDIRECTS: o->redirects = REDIRECTS_NONE; return -1;
  case 'j':
  case OPT_ACCEPTED: return -1;
  default: return -2;
  }
}

/* The checks of what the options give together. -1, or the usage
 * status. */
static int check_together(options *o, int concurrency_given)
{
  if (!o->method)
    o->method = o->data ? "POST" : "GET";
  if (o->nvars && !o->ntemplates)
    return bad_usage("-var gives templates values: give -t", o->vars[0]);
  if (o->validate && !o->ntemplates)
    return bad_usage("--validate checks templates: give -t", "--validate");
  if (o->attack && !o->ntemplates)
    return bad_usage("--attack-type combines templates' payloads: give -t",
                     tpl_attack_name(o->attack));
  if (o->ntemplates && (o->m.nwords || o->m.nregexes || o->m.nstatuses || o->m.nextracts))
    return bad_usage("-t takes its matchers from the templates", "--word, --regex, --status, --extract");
  if (o->redirects && !o->ntemplates)
    return bad_usage("the templates' redirects: give -t", "-fr, -fhr, -dr");
  if (tpl_filter_any(&o->filter) && !o->ntemplates)
    return bad_usage("the filters choose templates: give -t", "-tags, -severity, -id, ...");
  if (o->bulk_size) { /* nuclei's bound: -c templates, each over -bs hosts */
    long parallel = concurrency_given ? o->concurrency : NUCLEI_TEMPLATE_THREADS;
    if (parallel > MAX_CONCURRENCY / o->bulk_size)
      return bad_usage("invalid concurrency (-c x -bs above 100000)", "-bs");
    o->concurrency = parallel * o->bulk_size;
  }
  return -1;
}

int parse_options(int argc, char **argv, options *o)
{
  memset(o, 0, sizeof *o);
  o->concurrency = DEFAULT_CONCURRENCY;
  o->payload_concurrency = NUCLEI_PAYLOAD_CONCURRENCY;
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
  o->spelled = calloc((size_t)argc, sizeof *o->spelled);
  o->nspelled = o->spelled ? (size_t)argc : 0;
  o->stats_interval_ms = NUCLEI_STATS_INTERVAL_MS;
  if (!o->spelled || nuclei_spellings(argc, argv, o) != 0 || !o->templates || !o->vars || !o->urls || !o->m.words || !o->m.word_nocase || !o->m.regexes || !o->m.extracts) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }

  opterr = 0; /* bad options get our one-line hint instead */
  int c, concurrency_given = 0;
  while ((c = getopt_long(argc, argv, SHORT_OPTIONS, LONG_OPTIONS, NULL)) != -1) {
    concurrency_given |= c == 'c';
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
      status = take_nuclei_option(o, c);
    if (status == -2)
      return bad_option(argv, c);
    if (status >= 0)
      return status;
  }
  if (optind != argc)
    return bad_usage("unexpected argument (targets go with -u or -l)", argv[optind]);
  return check_together(o, concurrency_given);
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
  for (size_t i = 0; o->spelled && i < o->nspelled; i++)
    free(o->spelled[i]);
  free(o->spelled);
  tpl_filter_free(&o->filter);
  curl_slist_free_all(o->headers);
}
