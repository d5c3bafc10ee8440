/* fetch: one transfer into a respchain response.
 *
 *   fetch [options] URL
 *
 * Writes the body to stdout or to -o FILE (-i: every hop's header block, then
 * the body); errors go to stderr, and with -v the limits, every hop's status
 * line and headers, and what became of the body. Run "fetch --help" for the
 * options; the man page is doc/fetch.1.
 *
 * Exit status: 0 complete; 1 the transfer failed; 2 usage; 3 body truncated
 * at the cap; 4 another limit hit, or a decode or spill error; 5 out of
 * memory or setup failure; 6 the output could not be written.
 *
 * Builds alone: cc fetch.c $(pkg-config --cflags --libs respchain) */
/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "respchain.h"

enum {
  EXIT_COMPLETE = 0,
  EXIT_TRANSFER = 1,
  EXIT_USAGE = 2,
  EXIT_TRUNCATED = 3,
  EXIT_LIMIT = 4,
  EXIT_SETUP = 5,
  EXIT_OUTPUT = 6
};

typedef struct options {
  rc_limits lim;
  int full, follow, head, insecure, verbose;
  long max_time_ms, connect_timeout_ms; /* 0: curl's default */
  const char *cacert, *method, *data, *output, *url;
  struct curl_slist *headers; /* -H, in order */
} options;

static void usage(FILE *out)
{
  fputs("usage: fetch [options] URL\n"
        "\n"
        "Fetches URL into a respchain response and writes its body to stdout.\n"
        "\n"
        "  -i, --include           write every hop's header block (redirects and 1xx\n"
        "                          responses too, as curl -i), then the body\n"
        "  -I, --head              a HEAD request: no body (-i writes the headers)\n"
        "  -L, --location          follow redirects, as curl -L does (in scan, -L\n"
        "                          is --max-redirs N: scan always follows redirects,\n"
        "                          up to N)\n"
        "  -m, --max-time SEC      the whole transfer may take SEC seconds, then it\n"
        "                          fails (fractions allowed; default and 0: no limit)\n"
        "      --connect-timeout SEC\n"
        "                          connecting may take SEC seconds (fractions\n"
        "                          allowed; default and 0: curl's, 300)\n"
        "      --max-body SIZE     body bytes kept, after decoding (default 8m;\n"
        "                          suffixes k, m, g)\n"
        "      --max-memory SIZE   body bytes kept in memory; past them the body\n"
        "                          goes to a temporary file (default: no limit)\n"
        "  -p, --policy POLICY     at the body cap: stop (default), drain, reject\n"
        "  -H, --header LINE       add a request header (repeatable)\n"
        "  -X, --request METHOD    request method (default GET, or POST with -d;\n"
        "                          HEAD is -I)\n"
        "  -d, --data DATA         send DATA as the request body (POST)\n"
        "  -k, --insecure          do not verify the server's TLS certificate\n"
        "      --cacert FILE       verify the server against the CAs in FILE\n"
        "  -o, --output FILE       write to FILE instead of stdout\n"
        "  -v, --verbose           the limits, every hop and the body on stderr\n"
        "  -h, --help              this text\n"
        "  -V, --version           the version of fetch and of the libraries\n"
        "\n"
        "Exit status: 0 complete; 1 the transfer failed; 2 usage; 3 body\n"
        "truncated at the cap; 4 another limit hit, or a decode or spill error;\n"
        "5 out of memory or setup failure; 6 the output could not be written.\n",
        out);
}

/* The one-line hint for a bad command line; returns EXIT_USAGE. */
static int bad_usage(const char *what, const char *arg)
{
  fprintf(stderr, "fetch: %s '%s'; try 'fetch --help'\n", what, arg);
  return EXIT_USAGE;
}

static int parse_policy(const char *s, rc_cap_policy *out)
{
  if (!strcmp(s, "stop"))
    *out = RC_CAP_STOP;
  else if (!strcmp(s, "drain"))
    *out = RC_CAP_DRAIN;
  else if (!strcmp(s, "reject"))
    *out = RC_CAP_REJECT;
  else
    return -1;
  return 0;
}

enum { OPT_MAX_BODY = 256, OPT_MAX_MEMORY, OPT_CONNECT_TIMEOUT, OPT_CACERT };

static const struct option LONG_OPTIONS[] = {
    {"include", no_argument, NULL, 'i'},
    {"head", no_argument, NULL, 'I'},
    {"location", no_argument, NULL, 'L'},
    {"max-time", required_argument, NULL, 'm'},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"policy", required_argument, NULL, 'p'},
    {"header", required_argument, NULL, 'H'},
    {"request", required_argument, NULL, 'X'},
    {"data", required_argument, NULL, 'd'},
    {"insecure", no_argument, NULL, 'k'},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"output", required_argument, NULL, 'o'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* The option getopt_long just refused, for the hint. */
static int bad_option(char **argv, int c)
{
  char shortopt[3] = {'-', (char)optopt, '\0'};
  const char *name = optopt > ' ' && optopt < 127 ? shortopt : argv[optind - 1];
  return bad_usage(c == ':' ? "missing value for" : "unknown option", name);
}

/* One option into o. Returns -1 to go on, else the exit status. */
static int take_option(options *o, int c, char **argv)
{
  switch (c) {
  case 'i': o->full = 1; break;
  case 'I': o->head = 1; break;
  case 'L': o->follow = 1; break;
  case 'm':
    if (args_seconds(optarg, &o->max_time_ms))
      return bad_usage("invalid time", optarg);
    break;
  case OPT_CONNECT_TIMEOUT:
    if (args_seconds(optarg, &o->connect_timeout_ms))
      return bad_usage("invalid time", optarg);
    break;
  case OPT_MAX_BODY:
    if (args_size(optarg, &o->lim.max_body))
      return bad_usage("invalid size", optarg);
    break;
  case OPT_MAX_MEMORY:
    if (args_size(optarg, &o->lim.max_memory))
      return bad_usage("invalid size", optarg);
    break;
  case 'p':
    if (parse_policy(optarg, &o->lim.on_cap))
      return bad_usage("invalid policy", optarg);
    break;
  case 'H': {
    struct curl_slist *more = curl_slist_append(o->headers, optarg);
    if (!more) {
      fputs("fetch: out of memory\n", stderr);
      return EXIT_SETUP;
    }
    o->headers = more;
    break;
  }
  case 'X': o->method = optarg; break;
  case 'd': o->data = optarg; break;
  case 'k': o->insecure = 1; break;
  case OPT_CACERT: o->cacert = optarg; break;
  case 'o': o->output = optarg; break;
  case 'v': o->verbose = 1; break;
  case 'h': usage(stdout); return EXIT_COMPLETE;
  case 'V':
    printf("fetch (respchain) %s\n%s\n", rc_version(), curl_version());
    return EXIT_COMPLETE;
  default: return bad_option(argv, c);
  }
  return -1;
}

/* Fills o from the command line. Returns -1 to go on, else the exit status
 * (after --help, --version or a usage error). */
static int parse_options(int argc, char **argv, options *o)
{
  memset(o, 0, sizeof *o);
  rc_limits_init(&o->lim);
  opterr = 0; /* bad options get our one-line hint instead */
  int c;
  while ((c = getopt_long(argc, argv, ":iILm:p:H:X:d:ko:vhV", LONG_OPTIONS, NULL)) != -1) {
    int status = take_option(o, c, argv);
    if (status >= 0)
      return status;
  }
  if (optind == argc) {
    fputs("fetch: no URL; try 'fetch --help'\n", stderr);
    return EXIT_USAGE;
  }
  if (optind != argc - 1)
    return bad_usage("one URL only; unexpected", argv[optind + 1]);
  o->url = argv[optind];
  /* -X HEAD is -I: a HEAD request, whose response has no body to wait for. */
  if (o->method && !strcmp(o->method, "HEAD"))
    o->head = 1;
  else if (o->head && o->method)
    return bad_usage("-I sends HEAD; unexpected -X", o->method);
  if (o->head && o->data)
    return bad_usage("a HEAD request sends no body; unexpected", "-d");
  return -1;
}

static const char *policy_name(rc_cap_policy p)
{
  return p == RC_CAP_DRAIN ? "drain" : p == RC_CAP_REJECT ? "reject" : "stop";
}

static int exit_status(rc_code rc)
{
  switch (rc) {
  case RC_OK: return EXIT_COMPLETE;
  case RC_TRUNCATED: return EXIT_TRUNCATED;
  case RC_E_TRANSFER: return EXIT_TRANSFER;
  case RC_E_NOMEM: return EXIT_SETUP;
  default: return EXIT_LIMIT;
  }
}

/* The request: URL, redirects, time limits, method, body, headers and TLS. */
static int set_request(CURL *easy, const options *o)
{
  int ok = curl_easy_setopt(easy, CURLOPT_URL, o->url) == CURLE_OK &&
           curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, (long)o->follow) == CURLE_OK &&
           curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, o->max_time_ms) == CURLE_OK &&
           curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms) == CURLE_OK &&
           curl_easy_setopt(easy, CURLOPT_HTTPHEADER, o->headers) == CURLE_OK &&
           curl_easy_setopt(easy, CURLOPT_USERAGENT, "respchain-fetch/" RC_VERSION) == CURLE_OK;
  if (ok && o->data)
    ok = curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(o->data)) ==
             CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_POSTFIELDS, o->data) == CURLE_OK;
  if (ok && o->head) /* HEAD, with no body awaited whatever the headers say */
    ok = curl_easy_setopt(easy, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && o->method)
    ok = curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, o->method) == CURLE_OK;
  if (ok && o->insecure)
    ok = curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
  if (ok && o->cacert)
    ok = curl_easy_setopt(easy, CURLOPT_CAINFO, o->cacert) == CURLE_OK;
  return ok ? 0 : -1;
}

/* -v, before the transfer: the limits the response applies. */
static void show_limits(const options *o)
{
  char memory[32] = "no limit";
  if (o->lim.max_memory)
    snprintf(memory, sizeof memory, "%zu bytes", o->lim.max_memory);
  fprintf(stderr,
          "* limits: body %zu bytes (%s at the cap), memory %s, headers %zu "
          "bytes per hop, %zu hops, %zu codings%s\n",
          o->lim.max_body, policy_name(o->lim.on_cap), memory, o->lim.max_header_bytes,
          o->lim.max_hops, o->lim.max_codings, o->insecure ? "; TLS peer not verified" : "");
}

/* -v, after the transfer: every hop's status line and headers. */
static void show_hops(const rc_response *resp)
{
  for (size_t i = 0; i < rc_hop_count(resp); i++) {
    rc_hop_info hop;
    rc_hop(resp, (int)i, &hop);
    fprintf(stderr, "* hop %zu: HTTP/%d.%d %d %.*s\n", i, hop.version / 10, hop.version % 10,
            hop.status, (int)hop.reason.len, hop.reason.ptr);
    /* The header lines after the status line, each as "< line". */
    const char *p = memchr(hop.raw.ptr, '\n', hop.raw.len);
    const char *end = hop.raw.ptr + hop.raw.len;
    while (p && ++p < end) {
      const char *eol = memchr(p, '\n', (size_t)(end - p));
      size_t len = (size_t)((eol ? eol : end) - p);
      while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'))
        len--;
      if (len)
        fprintf(stderr, "< %.*s\n", (int)len, p);
      p = eol;
    }
  }
}

/* -i: every hop's header block as received, status line to blank line, in
 * order: redirects and 1xx responses too, as curl -i writes them. */
static int write_headers(const rc_response *resp, FILE *f)
{
  for (size_t i = 0; i < rc_hop_count(resp); i++) {
    rc_hop_info hop;
    if (rc_hop(resp, (int)i, &hop) == RC_OK &&
        fwrite(hop.raw.ptr, 1, hop.raw.len, f) != hop.raw.len)
      return -1;
  }
  return 0;
}

/* Writes the body (after the header blocks with -i) to stdout or -o FILE. */
static int write_output(const rc_response *resp, const options *o)
{
  rc_view body = rc_body(resp);
  FILE *f = o->output ? fopen(o->output, "wb") : stdout;
  if (!f) {
    fprintf(stderr, "fetch: %s: %s\n", o->output, strerror(errno));
    return -1;
  }
  int ok =
      (!o->full || write_headers(resp, f) == 0) && fwrite(body.ptr, 1, body.len, f) == body.len;
  ok = (f == stdout ? fflush(f) : fclose(f)) == 0 && ok;
  if (!ok)
    fprintf(stderr, "fetch: writing %s failed\n", o->output ? o->output : "stdout");
  return ok ? 0 : -1;
}

/* Runs the transfer and reports it. Returns the exit status. */
static int fetch(CURL *easy, rc_response *resp, const options *o)
{
  char errbuf[CURL_ERROR_SIZE] = "";
  if (rc_attach(resp, easy) != RC_OK || set_request(easy, o) != 0 ||
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK) {
    fputs("fetch: cannot set up the transfer\n", stderr);
    return EXIT_SETUP;
  }
  if (o->verbose)
    show_limits(o);
  CURLcode cc = curl_easy_perform(easy);
  rc_code rc = rc_result(resp, cc);
  if (o->verbose) {
    show_hops(resp);
    fprintf(stderr, "* body: %zu bytes, encoding: %s%s\n", rc_body(resp).len,
            example_encoding_name(rc_body_encoding(resp)),
            rc_body_spilled(resp) ? ", spilled to a temporary file" : "");
  }
  int status = write_output(resp, o) == 0 ? exit_status(rc) : EXIT_OUTPUT;
  if (rc == RC_E_TRANSFER)
    fprintf(stderr, "fetch: transfer failed: %s\n", errbuf[0] ? errbuf : curl_easy_strerror(cc));
  else if (rc != RC_OK)
    fprintf(stderr, "fetch: %s\n", rc_strerror(rc));
  return status;
}

int main(int argc, char **argv)
{
  options o;
  int status = parse_options(argc, argv, &o);
  if (status >= 0) {
    curl_slist_free_all(o.headers);
    return status;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs("fetch: curl_global_init failed\n", stderr);
    return EXIT_SETUP;
  }
  CURL *easy = curl_easy_init();
  rc_response *resp = NULL;
  rc_code rc = easy ? rc_response_new(NULL, &o.lim, &resp) : RC_E_NOMEM;
  if (rc != RC_OK) {
    fprintf(stderr, "fetch: %s\n", rc_strerror(rc));
    status = EXIT_SETUP;
  } else {
    status = fetch(easy, resp, &o);
  }
  rc_response_free(resp);
  curl_easy_cleanup(easy);
  curl_slist_free_all(o.headers);
  curl_global_cleanup();
  return status;
}
