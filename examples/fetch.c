/* fetch: one transfer into a respchain response.
 *
 *   fetch [-i] [-L] [-m BYTES] [-p stop|drain|reject] URL
 *
 * Writes the body to stdout (-i: the full response of the last hop), and to
 * stderr every hop's status, the encoding, and any truncation or error.
 * -L follows redirects; -m sets the body cap (suffixes k, m, g).
 *
 * Exit status: 0 complete; 1 usage; 2 body truncated at the cap;
 * 3 another limit or a decode error; 4 transfer failed; 5 out of memory. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "respchain.h"

static int usage(void)
{
  fputs("usage: fetch [-i] [-L] [-m BYTES] [-p stop|drain|reject] URL\n", stderr);
  return 1;
}

static int parse_size(const char *s, size_t *out)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (end == s || *end || v > SIZE_MAX / mul)
    return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static const char *encoding_name(rc_encoding e)
{
  switch (e) {
  case RC_ENC_DECODED: return "decoded";
  case RC_ENC_UNSUPPORTED: return "unsupported, kept as received";
  case RC_ENC_NOT_DECODED: return "not decoded";
  default: return "identity";
  }
}

static int exit_status(rc_code rc)
{
  switch (rc) {
  case RC_OK: return 0;
  case RC_TRUNCATED: return 2;
  case RC_E_TRANSFER: return 4;
  case RC_E_NOMEM: return 5;
  default: return 3;
  }
}

int main(int argc, char **argv)
{
  rc_limits lim;
  rc_limits_init(&lim);
  int full = 0, follow = 0, opt;
  while ((opt = getopt(argc, argv, "iLm:p:")) != -1) {
    switch (opt) {
    case 'i': full = 1; break;
    case 'L': follow = 1; break;
    case 'm': if (parse_size(optarg, &lim.max_body)) return usage(); break;
    case 'p':
      if (!strcmp(optarg, "stop")) lim.on_cap = RC_CAP_STOP;
      else if (!strcmp(optarg, "drain")) lim.on_cap = RC_CAP_DRAIN;
      else if (!strcmp(optarg, "reject")) lim.on_cap = RC_CAP_REJECT;
      else return usage();
      break;
    default: return usage();
    }
  }
  if (optind != argc - 1)
    return usage();

  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL *easy = curl_easy_init();
  rc_response *resp = NULL;
  rc_code rc = easy ? rc_response_new(NULL, &lim, &resp) : RC_E_NOMEM;
  if (rc != RC_OK) {
    fprintf(stderr, "fetch: %s\n", rc_strerror(rc));
    return exit_status(rc);
  }
  rc_attach(resp, easy);
  curl_easy_setopt(easy, CURLOPT_URL, argv[optind]);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, (long)follow);
  CURLcode cc = curl_easy_perform(easy);
  rc = rc_result(resp, cc);

  for (size_t i = 0; i < rc_hop_count(resp); i++) {
    rc_hop_info hop;
    rc_hop(resp, (int)i, &hop);
    fprintf(stderr, "hop %zu: HTTP/%d.%d %d %.*s\n", i, hop.version / 10,
            hop.version % 10, hop.status, (int)hop.reason.len, hop.reason.ptr);
  }
  rc_view out = rc_body(resp);
  if (full && rc_full_response(resp, &out) != RC_OK)
    out = rc_body(resp);
  fwrite(out.ptr, 1, out.len, stdout);
  fprintf(stderr, "body: %zu bytes, encoding: %s\n", rc_body(resp).len,
          encoding_name(rc_body_encoding(resp)));
  if (rc != RC_OK)
    fprintf(stderr, "fetch: %s%s%s\n", rc_strerror(rc), rc == RC_E_TRANSFER ? ": " : "",
            rc == RC_E_TRANSFER ? curl_easy_strerror(cc) : "");

  rc_response_free(resp);
  curl_easy_cleanup(easy);
  curl_global_cleanup();
  return exit_status(rc);
}
