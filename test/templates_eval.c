/* test_templates' evaluation of each template of run/ (templates_eval.h). */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <openssl/evp.h>
#include <pcre2.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "templates_eval.h"

/* ---- The independent evaluation ----------------------------------------- */

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
  got *g = ud;
  n *= size;
  if (n >= 5 && !memcmp(p, "HTTP/", 5))
    g->head_len = 0; /* a later response's block replaces the last */
  if (g->head_len + n < sizeof g->head) {
    memcpy(g->head + g->head_len, p, n);
    g->head_len += n;
    g->head[g->head_len] = '\0';
  }
  return n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
  got *g = ud;
  n *= size;
  if (g->body_len + n < sizeof g->body) {
    memcpy(g->body + g->body_len, p, n);
    g->body_len += n;
    g->body[g->body_len] = '\0';
  }
  return n;
}

/* Fetches url with method (NULL: GET), headers (NULL-terminated; NULL:
 * none), a body (NULL: none), following redirects up to follow (0: none),
 * within timeout_ms (0: no limit), on easy handle e (a session's, see
 * session, else one of its own: NULL); next (may be NULL): where a
 * redirect would take the request (CURLINFO_REDIRECT_URL), "" when it is
 * none. Returns curl's code. */
static CURLcode fetch_url_on(CURL *e, const char *url, const char *method,
                             const char *const *headers, const char *data, long follow,
                             long timeout_ms, got *g, char *next, size_t cap)
{
  memset(g, 0, sizeof *g);
  CURL *own = e ? NULL : curl_easy_init();
  e = e ? e : own;
  struct curl_slist *h = NULL;
  for (size_t i = 0; headers && headers[i]; i++)
    ck_assert_ptr_nonnull(h = curl_slist_append(h, headers[i]));
  ck_assert_ptr_nonnull(e);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, g);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, follow > 0 ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, follow);
  if (data)
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, data);
  if (method)
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  CURLcode rc = curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &g->status);
  char *to = NULL;
  if (next)
    snprintf(next, cap, "%s",
             curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &to) == CURLE_OK && to ? to : "");
  /* a session's next request starts as a plain GET */
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
  curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 0L);
  curl_slist_free_all(h);
  if (own)
    curl_easy_cleanup(own);
  return rc;
}

static CURLcode fetch_url(const char *url, const char *method, const char *const *headers,
                          const char *data, long follow, long timeout_ms, got *g, char *next,
                          size_t cap)
{
  return fetch_url_on(NULL, url, method, headers, data, follow, timeout_ms, g, next, cap);
}

/* fetch_with on a session's easy handle e. */
static void fetch_on(CURL *e, const char *path, const char *method, const char *header,
                     const char *data, long follow, got *g)
{
  char url[512];
  const char *headers[] = {header, NULL};
  snprintf(url, sizeof url, "%s%s", base, path);
  ck_assert_int_eq(fetch_url_on(e, url, method, headers, data, follow, 0, g, NULL, 0), CURLE_OK);
}

/* A session: one easy handle with curl's cookie engine on, its requests
 * made in order (a template's sequence for one target, as nuclei's jar). */
static CURL *session(void)
{
  CURL *e = curl_easy_init();
  ck_assert_ptr_nonnull(e);
  curl_easy_setopt(e, CURLOPT_COOKIEFILE, "");
  return e;
}

/* Fetches path of the target with method (NULL: GET), one header (NULL:
 * none), a body (NULL: none), following redirects up to follow (0: none). */
void fetch_with(const char *path, const char *method, const char *header, const char *data,
                long follow, got *g)
{
  char url[512];
  const char *headers[] = {header, NULL};
  snprintf(url, sizeof url, "%s%s", base, path);
  ck_assert_int_eq(fetch_url(url, method, headers, data, follow, 0, g, NULL, 0), CURLE_OK);
}

void fetch(const char *path, const char *method, const char *header, long follow, got *g)
{
  fetch_with(path, method, header, NULL, follow, g);
}

/* Sends request, bytes as written, to the target over a connection of
 * its own (as nuclei's unsafe: true does), and reads the first response
 * (its head and its Content-Length of body) into g. */
static void send_raw(const char *request, got *g)
{
  memset(g, 0, sizeof *g);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(strrchr(base, ':') + 1))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
  shutdown(fd, SHUT_WR); /* the server answers, then sees the end */
  static char in[sizeof g->head + sizeof g->body];
  size_t n = 0;
  for (ssize_t r; n < sizeof in - 1 && (r = recv(fd, in + n, sizeof in - 1 - n, 0)) > 0;)
    n += (size_t)r;
  close(fd);
  in[n] = '\0';
  char *end = strstr(in, "\r\n\r\n"), *cl = strcasestr(in, "\r\nContent-Length:");
  ck_assert_ptr_nonnull(end);
  g->head_len = (size_t)(end + 4 - in);
  memcpy(g->head, in, g->head_len);
  g->status = strtol(in + 9, NULL, 10);
  g->body_len = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
  ck_assert_uint_le(g->head_len + g->body_len, n);
  memcpy(g->body, end + 4, g->body_len);
}

int has(const char *text, size_t len, const char *word)
{
  return memmem(text, len, word, strlen(word)) != NULL;
}

/* Regex re as RE2 (Go's regexp, nuclei's) reads its anchors: $ outside
 * (?m) at the text's very end, and under (?m) ^ also after a newline that
 * ends it. */
static pcre2_code *compile_re2(const char *re)
{
  int err;
  PCRE2_SIZE at;
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                                   PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_CIRCUMFLEX, &err, &at, NULL);
  ck_assert_ptr_nonnull(code);
  return code;
}

/* The matches of re in text: group g of each, distinct, joined by '|'. */
static void regex_all(const char *re, const char *text, size_t len, int g, char *out, size_t cap)
{
  pcre2_code *code = compile_re2(re);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
  out[0] = '\0';
  for (size_t from = 0; pcre2_match(code, (PCRE2_SPTR)text, len, from, 0, md, NULL) > 0;) {
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    char v[256];
    snprintf(v, sizeof v, "%.*s", (int)(ov[2 * g + 1] - ov[2 * g]), text + ov[2 * g]);
    if (!strstr(out, v))
      snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "|" : "", v);
    from = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
}

/* Whether re matches in text (an empty match too). */
int regex_in(const char *re, const char *text, size_t len)
{
  pcre2_code *code = compile_re2(re);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
  int hit = pcre2_match(code, (PCRE2_SPTR)text, len, 0, 0, md, NULL) >= 0;
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return hit;
}

/* The value of header name in g's header block (case-insensitive), into
 * out; "" when absent. */
static void header_of(const got *g, const char *name, char *out, size_t cap)
{
  out[0] = '\0';
  for (const char *p = g->head; (p = strcasestr(p, name)) != NULL; p++)
    if ((p == g->head || p[-1] == '\n') && p[strlen(name)] == ':') {
      const char *v = p + strlen(name) + 1;
      v += strspn(v, " ");
      snprintf(out, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
      return;
    }
}

/* ---- Chains of redirects, as nuclei follows them -------------------------- */

#define HOPS_MAX 8

/* The responses of a chain, from the first, and each one's request URL. */
typedef struct chain {
  got hop[HOPS_MAX];
  char url[HOPS_MAX][512];
  size_t n;
} chain;

/* The host of url as nuclei's same-host rule compares it: host[:port],
 * the port left out where it is its scheme's default. */
static void host_of(const char *url, char *out, size_t cap)
{
  const char *auth = strstr(url, "://");
  ck_assert_ptr_nonnull(auth);
  size_t scheme = (size_t)(auth - url), n = strcspn(auth += 3, "/?#");
  const char *at = memchr(auth, '@', n);
  if (at)
    n -= (size_t)(at + 1 - auth), auth = at + 1;
  if ((scheme == 4 && n > 3 && !memcmp(auth + n - 3, ":80", 3)) ||
      (scheme == 5 && n > 4 && !memcmp(auth + n - 4, ":443", 4)))
    n -= scheme == 4 ? 3 : 4;
  snprintf(out, cap, "%.*s", (int)n, auth);
}

/* Path of the target with GET, redirects followed as nuclei's client
 * does, each request made alone: a 301, 302, 303, 307 or 308 with a
 * Location is followed while fewer than max were (0: nuclei's default,
 * 10), with same_host only to the host of the first request; the
 * response where that stops is the last. Bodies are kept of the last
 * response only (nuclei reads none of the others). */
static void follow(const char *path, long max, int same_host, chain *c)
{
  char next[512], first[256], host[256];
  memset(c, 0, sizeof *c);
  snprintf(c->url[0], sizeof c->url[0], "%s%s", base, path);
  host_of(c->url[0], first, sizeof first);
  for (;;) {
    got *g = &c->hop[c->n];
    ck_assert_int_eq(fetch_url(c->url[c->n], NULL, NULL, NULL, 0, 0, g, next, sizeof next),
                     CURLE_OK);
    int redirect = g->status == 301 || g->status == 302 || g->status == 303 ||
                   g->status == 307 || g->status == 308;
    if (next[0])
      host_of(next, host, sizeof host);
    if (!redirect || !next[0] || (long)c->n >= (max ? max : 10) ||
        (same_host && strcmp(host, first)))
      break;
    g->body_len = 0;
    g->body[0] = '\0';
    ck_assert_uint_lt(++c->n, HOPS_MAX);
    snprintf(c->url[c->n], sizeof c->url[c->n], "%s", next);
  }
  c->n++;
}

/* ---- What each template of run/ should report ---------------------------- */

/* One line scan should print: "URL name=NAME extracts=A|B\n". */
static void expect_at(char *out, const char *url, const char *name, const char *extracts)
{
  size_t n = strlen(out);
  snprintf(out + n, EXPECT_MAX - n, "%s name=%s extracts=%s\n", url, name ? name : "",
           extracts ? extracts : "");
}

/* The same, for path of the target. */
static void expect(char *out, const char *path, const char *name, const char *extracts)
{
  char url[512];
  snprintf(url, sizeof url, "%s%s", base, path);
  expect_at(out, url, name, extracts);
}

static void word_and(char *out)
{
  got g;
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "Acme") && has(g.body, g.body_len, "Portal") && g.status == 200)
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void word_nocase(char *out)
{
  got g;
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  if (strcasestr(g.body, "ACME PORTAL") || strcasestr(g.body, "never-there"))
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void word_missing(char *out)
{
  got g;
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "Acme") && has(g.body, g.body_len, "never-there"))
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void regex_extract(char *out)
{
  const char *path = "/html?title=Build+4711+and+Build+99";
  got g;
  char values[512];
  fetch(path, NULL, NULL, 0, &g);
  regex_all("Build (\\d+)", g.body, g.body_len, 1, values, sizeof values);
  if (regex_in("<h1>h[a-z]+</h1>", g.body, g.body_len))
    expect(out, path, NULL, values);
}

static void negative(char *out)
{
  got g;
  fetch("/html?title=fine", NULL, NULL, 0, &g);
  if (!has(g.body, g.body_len, "Internal Server Error"))
    expect(out, "/html?title=fine", NULL, NULL);
}

static void header_part(char *out)
{
  got g;
  char server[256];
  fetch("/html?title=fine", NULL, NULL, 0, &g);
  header_of(&g, "Server", server, sizeof server);
  if (has(g.head, g.head_len, "text/html") &&
      regex_in("^respchain-test/\\d$", server, strlen(server)))
    expect(out, "/html?title=fine", NULL, NULL);
}

static void status_404(char *out)
{
  got g;
  fetch("/no-such-page", NULL, NULL, 0, &g);
  if (g.status == 404)
    expect(out, "/no-such-page", NULL, NULL);
}

static void status_200_missed(char *out)
{
  got g;
  fetch("/no-such-page", NULL, NULL, 0, &g);
  if (g.status == 200 || g.status == 301)
    expect(out, "/no-such-page", NULL, NULL);
}

static void size(char *out)
{
  got g;
  fetch("/bytes?n=1000", NULL, NULL, 0, &g);
  if (g.body_len == 999 || g.body_len == 1000)
    expect(out, "/bytes?n=1000", NULL, NULL);
}

static void kval(char *out)
{
  got g;
  char v[256];
  fetch("/headers", NULL, NULL, 0, &g);
  header_of(&g, "Content-Type", v, sizeof v);
  if (v[0])
    expect(out, "/headers", NULL, v);
}

/* regex-end.yaml: $ at the body's end, beside another regex. */
static void regex_end(char *out)
{
  const char *path = "/text?body=hello%0Aversion+1.2";
  got g;
  fetch(path, NULL, NULL, 0, &g);
  if (regex_in("version 1\\.2$", g.body, g.body_len) && regex_in("hel+o", g.body, g.body_len))
    expect(out, path, NULL, NULL);
}

/* A line (path, name) for each of the n named regexes (name, regex) that
 * matches text. */
static void expect_named(char *out, const char *path, const char *const (*named)[2], size_t n,
                         const char *text, size_t len)
{
  for (size_t i = 0; i < n; i++)
    if (regex_in(named[i][1], text, len))
      expect(out, path, named[i][0], NULL);
}

/* expect_named over the body of path. */
static void expect_named_in_body(char *out, const char *path, const char *const (*named)[2],
                                 size_t n)
{
  got g;
  fetch(path, NULL, NULL, 0, &g);
  expect_named(out, path, named, n, g.body, g.body_len);
}

/* regex-end-newline.yaml: the anchors over a body ending in a newline. */
static void regex_end_newline(char *out)
{
  const char *path = "/text?body=hello%0Aversion+1.2%0A";
  static const char *const named[][2] = {
      {"dollar", "version 1\\.2$"},
      {"end", "1\\.2\\z"},
      {"caseless", "(?i)VERSION 1\\.2$"},
      {"dotall", "(?s)hello.version 1\\.2$"},
      {"multiline", "(?m)version 1\\.2$"},
      {"group", "(?m:1\\.2$)\\n$"},
      {"start", "^version"},
      {"line-start", "(?m)^version"},
      {"empty-last-line", "(?m)^$"},
  };
  expect_named_in_body(out, path, named, sizeof named / sizeof named[0]);
}

/* regex-end-chunks.yaml: the anchors over a body sent in chunks. */
static void regex_end_chunks(char *out)
{
  const char *path = "/text?body=abcdefghij%0Aversion+1.2&te=chunked&write=11";
  got g;
  fetch(path, NULL, NULL, 0, &g);
  if (regex_in("version 1\\.2$", g.body, g.body_len) && regex_in("ion 1", g.body, g.body_len) &&
      (regex_in("1\\.2\\z", g.body, g.body_len) || regex_in("never$", g.body, g.body_len)))
    expect(out, path, NULL, NULL);
}

/* regex-space.yaml: RE2's \s is [\t\n\f\r ], its \v the vertical tab
 * (PCRE's are wider: written here as RE2 documents them). */
static void regex_space(char *out)
{
  const char *path = "/text?body=a%0Bb+c%0Ad";
  static const char *const named[][2] = {
      {"space", "a[\\t\\n\\f\\r ]b"},
      {"not-space", "a[^\\t\\n\\f\\r ]b"},
      {"vtab", "a\\x0bb"},
      {"class", "b[\\t\\n\\f\\r ,]c"},
      {"vertical", "c\\x0bd"},
  };
  expect_named_in_body(out, path, named, sizeof named / sizeof named[0]);
}

/* regex-header-end.yaml: the anchors over the header block and a
 * header's value. */
static void regex_header_end(char *out)
{
  const char *path = "/text?body=x&cookie=a%3D1";
  static const char *const named[][2] = {
      {"dollar", "Set-Cookie: a=1$"},
      {"line-end", "(?m)^Set-Cookie: a=1\r$"},
      {"before-last-newline", "\r\n\r$"},
      {"block-end", "\r\n\r\n$"},
  };
  got g;
  char cookie[64];
  fetch(path, NULL, NULL, 0, &g);
  expect_named(out, path, named, sizeof named / sizeof named[0], g.head, g.head_len);
  header_of(&g, "Set-Cookie", cookie, sizeof cookie);
  if (regex_in("^a=1$", cookie, strlen(cookie)))
    expect(out, path, "value", NULL);
}

static void named_or(char *out)
{
  got g;
  fetch("/headers", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "hello"))
    expect(out, "/headers", "hello", NULL);
  if (has(g.head, g.head_len, "b=2"))
    expect(out, "/headers", "cookie", NULL);
  if (has(g.body, g.body_len, "absent-word"))
    expect(out, "/headers", "absent", NULL);
}

static void method_headers(char *out)
{
  char path[128], header[64];
  const char *port = strrchr(base, ':') + 1;
  got g;
  snprintf(path, sizeof path, "/echo?from=127.0.0.1");
  snprintf(header, sizeof header, "X-Probe: port-%s", port);
  fetch(path, "PUT", header, 0, &g);
  if (has(g.body, g.body_len, "PUT /echo?from=127.0.0.1") &&
      regex_in("X-Probe: port-[0-9]+\\r", g.body, g.body_len))
    expect(out, path, NULL, NULL);
}

/* /echo answers with the request it got, header lines as sent: what
 * default-headers and own-agent look for in scan's requests. */
static int echoes_headers(const char *path)
{
  got g;
  fetch(path, NULL, "X-Echo: seen", 0, &g);
  return has(g.body, g.body_len, "\r\nX-Echo: seen\r\n");
}

static void default_headers(char *out)
{
  if (echoes_headers("/echo?defaults=1"))
    expect(out, "/echo?defaults=1", NULL, NULL);
}

static void own_agent(char *out)
{
  if (echoes_headers("/echo?agent=own"))
    expect(out, "/echo?agent=own", NULL, NULL);
}

/* The server's gzip body, 5,000 bytes decoded, is not 5,000 on the wire. */
static void gzip_body(char *out)
{
  got g;
  fetch("/gzip?n=5000&coding=gzip", NULL, "Accept-Encoding: identity", 0, &g);
  if (g.body_len != 5000)
    expect(out, "/gzip?n=5000&coding=gzip", NULL, NULL);
}

/* Each response of a chain is matched on its own, the last first. */
static void redirects(char *out)
{
  static chain c;
  follow("/redirect?n=2", 3, 0, &c);
  for (size_t i = c.n; i-- > 0;)
    if (c.hop[i].status == 200 || c.hop[i].status == 302)
      expect_at(out, c.url[i], NULL, NULL);
}

static void redirect_max(char *out)
{
  static chain c;
  follow("/hops?n=3", 2, 0, &c);
  for (size_t i = c.n; i-- > 0;)
    if (c.hop[i].status == 302 && has(c.hop[i].head, c.hop[i].head_len, "X-Hop: 1"))
      expect_at(out, c.url[i], NULL, NULL);
}

static void redirect_host(char *out)
{
  static chain c;
  char hop[64], location[256];
  follow("/hops?n=1&away=localhost", 0, 1, &c);
  for (size_t i = c.n; i-- > 0;) {
    header_of(&c.hop[i], "X-Hop", hop, sizeof hop);
    header_of(&c.hop[i], "Location", location, sizeof location);
    if (c.hop[i].status == 302 && strstr(hop, "away") && strstr(location, "http://localhost:"))
      expect_at(out, c.url[i], NULL, NULL);
  }
}

static void redirect_hops(char *out)
{
  static chain c;
  char hop[64], cookie[64];
  follow("/hops?n=2", 0, 0, &c);
  for (size_t i = c.n; i-- > 0;) { /* named matchers: a line each, in order */
    const got *g = &c.hop[i];
    header_of(g, "X-Hop", hop, sizeof hop);
    header_of(g, "Set-Cookie", cookie, sizeof cookie);
    if (has(g->head, g->head_len, "Set-Cookie: hop=2"))
      expect_at(out, c.url[i], "first", NULL);
    if (!strcmp(hop, "1") && g->status == 302 && !strcmp(cookie, "hop=1"))
      expect_at(out, c.url[i], "second", NULL);
    if (!strcmp(hop, "0") && has(g->body, g->body_len, "hops") && g->status == 200)
      expect_at(out, c.url[i], "last", NULL);
  }
}

static void no_redirects(char *out)
{
  got g;
  char location[256];
  fetch("/redirect?n=2", NULL, NULL, 0, &g);
  header_of(&g, "Location", location, sizeof location);
  if (g.status == 302 && strstr(location, "n=1"))
    expect(out, "/redirect?n=2", NULL, NULL);
}

/* Every path that matches: scan reports one of them (the first to finish,
 * as requests run at once), see ONE_OF. */
static void stop_first(char *out)
{
  got g;
  fetch("/bytes?n=10", NULL, NULL, 0, &g);
  if (g.status == 200)
    expect(out, "/bytes?n=10", NULL, NULL);
  fetch("/bytes?n=20", NULL, NULL, 0, &g);
  if (g.status == 200)
    expect(out, "/bytes?n=20", NULL, NULL);
}

static void word_all(char *out)
{
  got g;
  fetch("/html?title=fine", NULL, NULL, 0, &g);
  if ((has(g.head, g.head_len, "respchain-test/1") ||
       has(g.body, g.body_len, "respchain-test/1")) &&
      (has(g.head, g.head_len, "<h1>hello") || has(g.body, g.body_len, "<h1>hello")))
    expect(out, "/html?title=fine", NULL, NULL);
}

static void regex_backref(char *out)
{
  const char *path = "/html?title=Build+4711+and+Build+99";
  got g;
  fetch(path, NULL, NULL, 0, &g);
  if (regex_in("(Build) \\d+ and \\1 \\d\\d$", g.body, g.body_len) ||
      regex_in("(Build) \\d+ and \\1", g.body, g.body_len))
    expect(out, path, NULL, NULL);
}

static void raw_plain(char *out)
{
  got g;
  fetch_with("/echo?raw=1", "PATCH", "X-Raw: from-http", "a=1", 0, &g);
  if (has(g.body, g.body_len, "PATCH /echo?raw=1 HTTP/1.1") &&
      has(g.body, g.body_len, "X-Raw: from-http") && has(g.body, g.body_len, "Content-Length: 3"))
    expect(out, "/echo?raw=1", NULL, NULL);
}

static void dsl(char *out)
{
  got g;
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "Acme") && strcasestr(g.body, "acme portal") && g.status == 200 &&
      !has(g.head, g.head_len, "X-Nope") && g.status != 404)
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

/* ---- The DSL templates (run/dsl-*.yaml) ---------------------------------- */

/* text in ASCII lower case, into out (cap > len). */
static void lowered(const char *text, size_t len, char *out)
{
  for (size_t i = 0; i < len; i++)
    out[i] = (char)tolower((unsigned char)text[i]);
  out[len] = '\0';
}

static void dsl_or(char *out)
{
  got g;
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  int any = has(g.body, g.body_len, "absent-word") || regex_in("<h1>[a-z]+</h1>", g.body, g.body_len);
  int all = g.status == 200 && g.body_len > 100 && g.body_len < 200 &&
            has(g.body, g.body_len, "<h1>") && has(g.body, g.body_len, "</h1>");
  size_t n = strlen(base); /* BaseURL: the target without a final slash */
  all &= !strncmp(base, "http://", 7) && (n && base[n - 1] == '/' ? 0 : 1);
  char length[32]; /* content_length: Content-Length, else the body's bytes */
  header_of(&g, "Content-Length", length, sizeof length);
  all &= !length[0] || strtoul(length, NULL, 10) == g.body_len;
  if (any && all)
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void dsl_negative(char *out)
{
  got g;
  static char low[sizeof g.body];
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  lowered(g.body, g.body_len, low);
  int first = g.status == 200 &&
              (has(g.body, g.body_len, "nope-1") || has(g.body, g.body_len, "nope-2"));
  if (!first && !has(low, g.body_len, "ACME"))
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void dsl_named(char *out)
{
  got g;
  char v[256];
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  header_of(&g, "Server", v, sizeof v);
  if (strstr(v, "respchain-test"))
    expect(out, "/html?title=Acme+Portal", "server", NULL);
  if (g.status == 404)
    expect(out, "/html?title=Acme+Portal", "not-found", NULL);
  header_of(&g, "Set-Cookie", v, sizeof v);
  if (v[0])
    expect(out, "/html?title=Acme+Portal", "no-cookie", NULL);
}

/* Every value of header name, joined by a space, into out. */
static void header_values(const got *g, const char *name, char *out, size_t cap)
{
  out[0] = '\0';
  for (const char *p = g->head; *p; p += strcspn(p, "\n"), p += *p == '\n')
    if (!strncasecmp(p, name, strlen(name)) && p[strlen(name)] == ':') {
      const char *v = p + strlen(name) + 1;
      v += strspn(v, " ");
      snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", out[0] ? " " : "",
               (int)strcspn(v, "\r\n"), v);
    }
}

static void dsl_extract(char *out)
{
  got g;
  char greeting[64], type[128], cookies[256], want[1024], length[32];
  fetch("/headers", NULL, NULL, 0, &g);
  regex_all("h(el+)o", g.body, g.body_len, 1, greeting, sizeof greeting);
  for (char *p = greeting; *p; p++)
    *p = (char)toupper((unsigned char)*p);
  header_of(&g, "Content-Type", type, sizeof type);
  header_values(&g, "Set-Cookie", cookies, sizeof cookies);
  const char *b = strstr(cookies, "b="); /* the cookie b's value */
  header_of(&g, "Content-Length", length, sizeof length);
  double half = (length[0] ? strtod(length, NULL) : (double)g.body_len) / 2;
  snprintf(want, sizeof want, "%s|%ld|%zu|%s|%.*s|%s|true|%g|%s", greeting, g.status * 2,
           g.body_len, type, b ? (int)strcspn(b + 2, " ;") : 0, b ? b + 2 : "", cookies, half,
           strrchr(base, ':') + 1);
  expect(out, "/headers", NULL, want);
}

static void dsl_part(char *out)
{
  got g;
  char server[128], type[128], charset[64];
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  header_of(&g, "Server", server, sizeof server);
  header_of(&g, "Content-Type", type, sizeof type);
  regex_all("charset=([a-z0-9-]+)", type, strlen(type), 1, charset, sizeof charset);
  if (strstr(server, "respchain-test/1") && !strcmp(type, "text/html; charset=utf-8") &&
      g.status == 200)
    expect(out, "/html?title=Acme+Portal", NULL, charset);
}

static void dsl_content_type(char *out)
{
  got g;
  char type[128], low[sizeof g.head];
  fetch("/headers", NULL, NULL, 0, &g);
  header_of(&g, "Content-Type", type, sizeof type);
  lowered(g.head, g.head_len, low);
  if (!strcmp(type, "text/plain") && strstr(low, "content-type: text/plain"))
    expect(out, "/headers", NULL, NULL);
}

static void dsl_md5(char *out)
{
  got g;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  ck_assert(EVP_Digest(g.body, g.body_len, md, &n, EVP_md5(), NULL));
  for (unsigned i = 0; i < n; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  if (!strcmp(hex, "65326d3fbcf14cf801cc669b65dcbf44"))
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

/* MurmurHash3's 32-bit hash (seed 0), as a signed number. */
static int32_t murmur3(const unsigned char *p, size_t n)
{
  uint32_t h = 0, k;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
    k *= 0xcc9e2d51u, k = k << 15 | k >> 17, k *= 0x1b873593u;
    h ^= k, h = h << 13 | h >> 19, h = h * 5 + 0xe6546b64u;
  }
  k = 0;
  switch (n & 3) {
  case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
  case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
  case 1: k ^= p[i], k *= 0xcc9e2d51u, k = k << 15 | k >> 17, k *= 0x1b873593u, h ^= k;
  }
  h ^= (uint32_t)n, h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
  return (int32_t)h;
}

/* Base64 as Python's encodebytes writes it: lines of 76, each ended by a
 * newline. Returns its length. */
static size_t base64_lines(const unsigned char *p, size_t n, char *out)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i += 57) {
    size_t take = n - i < 57 ? n - i : 57;
    k += (size_t)EVP_EncodeBlock((unsigned char *)out + k, p + i, (int)take);
    out[k++] = '\n';
  }
  return k;
}

static void dsl_favicon(char *out)
{
  static const char path[] =
      "/html?title=Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+"
      "Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+"
      "Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+"
      "Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+Favicon+";
  got g;
  static char b64[2 * sizeof g.body];
  fetch(path, NULL, NULL, 0, &g);
  size_t n = base64_lines((const unsigned char *)g.body, g.body_len, b64);
  if (g.status == 200 && murmur3((const unsigned char *)b64, n) == 854774093)
    expect(out, path, NULL, NULL);
}

static void dsl_tolower(char *out)
{
  got g;
  static char low[sizeof g.body];
  fetch("/html?title=Acme+Portal", NULL, NULL, 0, &g);
  lowered(g.body, g.body_len, low);
  if (regex_in("<title[^>]*>acme portal</title>", low, g.body_len))
    expect(out, "/html?title=Acme+Portal", NULL, NULL);
}

static void dsl_stream(char *out)
{
  got g;
  fetch("/html?title=Streamed+Page", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "Streamed Page") && !has(g.body, g.body_len, "absent-word"))
    expect(out, "/html?title=Streamed+Page", NULL, NULL);
}

static void internal(char *out)
{
  got g;
  fetch("/headers", NULL, NULL, 0, &g); /* the first request's are internal: no line */
  if (has(g.body, g.body_len, "hello"))
    expect(out, "/headers", NULL, NULL);
}

/* ---- Raw requests as nuclei reads them (run/raw-*.yaml) ------------------ */

/* The target's port. */
static const char *port(void) { return strrchr(base, ':') + 1; }

/* nuclei sends the body's own length, whatever Content-Length the
 * template writes; the body after its {{...}} are replaced. */
static void raw_length(char *out)
{
  char body[64];
  got g;
  snprintf(body, sizeof body, "abcdef%s", port());
  fetch_with("/echo?length=raw", "POST", "Content-Type: text/plain", body, 0, &g);
  if (!has(g.body, g.body_len, "Content-Length: 1\r") &&
      regex_in("Content-Length: 1[0-9]\r\n", g.body, g.body_len) &&
      regex_in("\r\n\r\nabcdef[0-9]+$", g.body, g.body_len))
    expect(out, "/echo?length=raw", NULL, NULL);
}

static void path_length(char *out)
{
  got g;
  fetch_with("/echo?length=path", "POST", "Content-Type: text/plain", "0123456789", 0, &g);
  if (has(g.body, g.body_len, "Content-Length: 10\r\n") &&
      has(g.body, g.body_len, "\r\n\r\n0123456789"))
    expect(out, "/echo?length=path", NULL, NULL);
}

/* An absolute URL as the request target: its path, to the target. */
static void raw_absolute(char *out)
{
  got g;
  fetch("/echo?absolute=1", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "GET /echo?absolute=1 HTTP/1.1\r\nHost: 127.0.0.1:"))
    expect(out, "/echo?absolute=1", NULL, NULL);
}

/* The fields of the request line and the headers, trimmed; the body's
 * line breaks CRLF, without the last; no Content-Type (nuclei adds none). */
static void raw_spacing(char *out)
{
  const char *headers[] = {"X-Tight: tight", "X-Wide: wide", "Content-Type:", NULL};
  char url[256];
  got g;
  snprintf(url, sizeof url, "%s/echo?q=a&r=two", base);
  ck_assert_int_eq(fetch_url(url, "PUT", headers, "a=1\r\nb=2", 0, 0, &g, NULL, 0), CURLE_OK);
  if (regex_in("^PUT /echo\\?q=a&r=two HTTP/1\\.1\r\nHost: 127\\.0\\.0\\.1:[0-9]+\r\n", g.body,
               g.body_len) &&
      has(g.body, g.body_len, "X-Tight: tight\r\n") && has(g.body, g.body_len, "X-Wide: wide\r\n") &&
      has(g.body, g.body_len, "\r\n\r\na=1\r\nb=2") && !has(g.body, g.body_len, "b=2\r") &&
      !has(g.body, g.body_len, "Content-Type:"))
    expect(out, "/echo?q=a&r=two", NULL, NULL);
}

/* No body, a method other than GET and HEAD: Content-Length: 0 (Go's). */
static void raw_empty(char *out)
{
  const char *headers[] = {"Content-Type:", NULL};
  char url[256];
  got g;
  snprintf(url, sizeof url, "%s/echo?empty=1", base);
  ck_assert_int_eq(fetch_url(url, "DELETE", headers, "", 0, 0, &g, NULL, 0), CURLE_OK);
  if (has(g.body, g.body_len, "DELETE /echo?empty=1 HTTP/1.1\r\n") &&
      has(g.body, g.body_len, "\r\nContent-Length: 0\r\n") &&
      !has(g.body, g.body_len, "Content-Type:"))
    expect(out, "/echo?empty=1", NULL, NULL);
}

/* Dot segments, as written: the server has no such path. */
static void raw_dots(char *out)
{
  char request[256];
  got g;
  snprintf(request, sizeof request, "GET /x/../echo?dots=1 HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n",
           port());
  send_raw(request, &g);
  if (g.status == 404 && has(g.body, g.body_len, "not found"))
    expect(out, "/x/../echo?dots=1", NULL, NULL);
}

/* @timeout: 1s over a response that takes three: no response whole. */
static void raw_timeout(char *out)
{
  const char *path = "/bytes?n=3&write=1&delay_us=1500000";
  char url[256];
  got g;
  snprintf(url, sizeof url, "%s%s", base, path);
  if (fetch_url(url, NULL, NULL, NULL, 0, 1000, &g, NULL, 0) == CURLE_OK && g.body_len == 3)
    expect(out, path, NULL, NULL);
}

/* @Host: connected to localhost (the line's URL), the Host header the
 * target's. */
static void raw_host(char *out)
{
  char url[256], host[64];
  const char *headers[] = {host, NULL};
  got g;
  snprintf(url, sizeof url, "http://localhost:%s/echo?at=host", port());
  snprintf(host, sizeof host, "Host: 127.0.0.1:%s", port());
  ck_assert_int_eq(fetch_url(url, NULL, headers, NULL, 0, 0, &g, NULL, 0), CURLE_OK);
  if (regex_in("^GET /echo\\?at=host HTTP/1\\.1\r\nHost: 127\\.0\\.0\\.1:[0-9]+\r\n", g.body,
               g.body_len))
    expect_at(out, url, NULL, NULL);
}

/* unsafe: true: the bytes as written, the template's line breaks CRLF. */
static void raw_unsafe_headers(char *out)
{
  char request[256];
  got g;
  snprintf(request, sizeof request,
           "GET /echo?unsafe=headers HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-Odd :  spaced\r\n"
           "x-lower:v\r\n\r\n",
           port());
  send_raw(request, &g);
  if (has(g.body, g.body_len, "\r\nX-Odd :  spaced\r\nx-lower:v\r\n\r\n") &&
      !has(g.body, g.body_len, "User-Agent:") && !has(g.body, g.body_len, "Accept:"))
    expect(out, "/echo?unsafe=headers", NULL, NULL);
}

static void raw_unsafe_length(char *out)
{
  char request[256];
  got g;
  snprintf(request, sizeof request,
           "POST /echo?unsafe=length HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: 3\r\n"
           "\r\nabcdef\r\n",
           port());
  send_raw(request, &g);
  if (regex_in("\r\nContent-Length: 3\r\n\r\nabc$", g.body, g.body_len) &&
      !has(g.body, g.body_len, "Content-Type:"))
    expect(out, "/echo?unsafe=length", NULL, NULL);
}

/* "*": nuclei reports the target's own URL (the path it merges is "*"'s
 * no more). */
static void raw_unsafe_star(char *out)
{
  char request[256];
  got g;
  snprintf(request, sizeof request, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n", port());
  send_raw(request, &g);
  if (has(g.body, g.body_len, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:"))
    expect(out, "", NULL, NULL);
}

/* json.yaml: the test server's JSON document read by regexes written for
 * it, each value in the form nuclei prints (eval-json.c's comment). */
static void json(char *out)
{
  got g;
  char version[64], names[128], admin[64], build[64], ratio[64], b[64], a[64], roles[64];
  char tags[160] = "{\"a\":", values[1024];
  fetch("/json", NULL, NULL, 0, &g);
  regex_all("\"version\":\"([^\"]*)\"", g.body, g.body_len, 1, version, sizeof version);
  regex_all("\\{\"name\":\"([^\"]*)\",\"roles\"", g.body, g.body_len, 1, names, sizeof names);
  regex_all("\"roles\":\\[[^\\]]*\"admin\"[^\\]]*\\],\"id\":(\\d+)", g.body, g.body_len, 1, admin,
            sizeof admin);
  regex_all("\"build\":(\\d+)", g.body, g.body_len, 1, build, sizeof build);
  regex_all("\"ratio\":([0-9.]+)", g.body, g.body_len, 1, ratio, sizeof ratio);
  /* .tags: keys sorted, no spaces, < and > as \u003c and \u003e */
  regex_all("\"tags\":\\{\"b\":\"([^\"]*)\",\"a\":\\d+\\}", g.body, g.body_len, 1, b, sizeof b);
  regex_all("\"tags\":\\{\"b\":\"[^\"]*\",\"a\":(\\d+)\\}", g.body, g.body_len, 1, a, sizeof a);
  snprintf(tags + strlen(tags), sizeof tags - strlen(tags), "%s,\"b\":\"", a);
  for (const char *p = b; *p; p++)
    snprintf(tags + strlen(tags), sizeof tags - strlen(tags), "%s",
             *p == '<' ? "\\u003c" : *p == '>' ? "\\u003e" : (char[]){*p, 0});
  strcat(tags, "\"}");
  /* .users[1].roles: the second user's roles, as written (compact) */
  regex_all("\"id\":1\\},\\{[^}]*\"roles\":(\\[[^\\]]*\\])", g.body, g.body_len, 1, roles,
            sizeof roles);
  ck_assert(has(g.body, g.body_len, "\"owner\":null")); /* .service.owner: "" */
  snprintf(values, sizeof values, "%s|%s|%s|%s|%s||%s|%s", version, names, admin, build, ratio,
           tags, roles);
  if (version[0] && names[0] && admin[0] && b[0] && roles[0])
    expect(out, "/json", NULL, values);
}

static void json_nested(char *out)
{
  got g;
  char role[64], name[64], version[64], values[256];
  fetch("/json?nest=3", NULL, NULL, 0, &g);
  ck_assert(g.body_len > 8 && !memcmp(g.body, "[[[{", 4));
  /* ann's last role; the service's name and version */
  regex_all("\"name\":\"ann\",\"roles\":\\[[^\\]]*\"([^\"]*)\"\\]", g.body, g.body_len, 1, role,
            sizeof role);
  regex_all("\"service\":\\{\"name\":\"([^\"]*)\"", g.body, g.body_len, 1, name, sizeof name);
  regex_all("\"version\":\"([^\"]*)\"", g.body, g.body_len, 1, version, sizeof version);
  snprintf(values, sizeof values, "%s|%s %s", role, name, version);
  if (role[0] && name[0])
    expect(out, "/json?nest=3", NULL, values);
}

/* xpath.yaml: the title's text and its lang attribute, the h1's text; an
 * h1 in the body and no table. */
static void xpath(char *out)
{
  const char *path = "/html?title=Build+42";
  got g;
  char title[128], h1[128], lang[32], values[512];
  fetch(path, NULL, NULL, 0, &g);
  regex_all("(?i)<title[^>]*>([^<]*)</title>", g.body, g.body_len, 1, title, sizeof title);
  regex_all("<body><h1>([^<]*)</h1>", g.body, g.body_len, 1, h1, sizeof h1);
  regex_all("(?i)<title lang=([a-z]+)>", g.body, g.body_len, 1, lang, sizeof lang);
  snprintf(values, sizeof values, "%s|%s|%s", title, h1, lang);
  int h1_in_body = h1[0] != '\0', table = has(g.body, g.body_len, "<table");
  if (h1_in_body && !(h1_in_body && table))
    expect(out, path, NULL, values);
}

static void xpath_xml(char *out)
{
  const char *path =
      "/text?type=application/xml&body=%3C%3Fxml+version%3D%221.0%22%3F%3E%3Cusers%3E%3Cuser+id%"
      "3D%227%22%3E%3Cname%3Eann%3C%2Fname%3E%3C%2Fuser%3E%3Cuser+id%3D%229%22%3E%3Cname%3Ebob%"
      "3C%2Fname%3E%3C%2Fuser%3E%3C%2Fusers%3E";
  got g;
  char names[128], ids[64], values[256];
  fetch(path, NULL, NULL, 0, &g);
  ck_assert(g.body_len > 5 && !memcmp(g.body, "<?xml", 5));
  regex_all("<user id=\"\\d+\"><name>([^<]*)</name>", g.body, g.body_len, 1, names, sizeof names);
  regex_all("<user id=\"(\\d+)\"", g.body, g.body_len, 1, ids, sizeof ids);
  snprintf(values, sizeof values, "%s|%s", names, ids);
  if (names[0] && ids[0])
    expect(out, path, NULL, values);
}

/* kval-cookie.yaml: the cookie's value (its name in any case), then the
 * Content-Type header's. */
static void kval_cookie(char *out)
{
  const char *path = "/text?body=ok&cookie=Session_Token%3Dabc123%3B+Path%3D%2F%3B+HttpOnly";
  got g;
  char cookie[256], type[128], values[512];
  fetch(path, NULL, NULL, 0, &g);
  header_of(&g, "Set-Cookie", cookie, sizeof cookie);
  header_of(&g, "Content-Type", type, sizeof type);
  char *eq = strchr(cookie, '=');
  ck_assert_ptr_nonnull(eq);
  *eq = '\0';
  snprintf(values, sizeof values, "%.*s|%s", (int)strcspn(eq + 1, ";"), eq + 1, type);
  if (!strcasecmp(cookie, "session_token"))
    expect(out, path, NULL, values);
}

/* max-size.yaml: the first 40 bytes of the page hold DOCTYPE, not Zebra
 * (which the whole page holds). */
static void max_size(char *out)
{
  got g;
  fetch("/html?title=Zebra", NULL, NULL, 0, &g);
  size_t read = g.body_len < 40 ? g.body_len : 40;
  ck_assert(has(g.body, g.body_len, "Zebra"));
  if (has(g.body, read, "DOCTYPE") && !has(g.body, read, "Zebra"))
    expect(out, "/html?title=Zebra", NULL, NULL);
}

/* stop-at-first-match: the first response that matches, from the last. */
static void redirect_first(char *out)
{
  static chain c;
  follow("/hops?n=2", 0, 0, &c);
  for (size_t i = c.n; i-- > 0;)
    if (c.hop[i].status == 200 || c.hop[i].status == 302) {
      expect_at(out, c.url[i], NULL, NULL);
      break;
    }
}

/* ---- Sequences (run/seq-*.yaml) ------------------------------------------ */

/* Each response of a sequence is matched alone: the page, which the
 * login's cookie opens. */
static void seq_cookie(char *out)
{
  got g;
  CURL *e = session();
  fetch_on(e, "/login?user=alice", NULL, NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "secret area"))
    expect(out, "/login?user=alice", NULL, NULL);
  fetch_on(e, "/private", NULL, NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "secret area"))
    expect(out, "/private", NULL, NULL);
  curl_easy_cleanup(e);
}

/* disable-cookie: each request on its own, no jar. */
static void seq_no_cookie(char *out)
{
  got g;
  fetch("/login?user=bob", NULL, NULL, 0, &g);
  if (g.status == 403 && has(g.body, g.body_len, "login first"))
    expect(out, "/login?user=bob", NULL, NULL);
  fetch("/private", NULL, NULL, 0, &g);
  if (g.status == 403 && has(g.body, g.body_len, "login first"))
    expect(out, "/private", NULL, NULL);
}

/* Two blocks, one jar; the first block's matcher is internal: no line. */
static void seq_blocks(char *out)
{
  got g;
  CURL *e = session();
  fetch_on(e, "/login?user=carol", "POST", NULL, "remember=1", 0, &g);
  fetch_on(e, "/private", NULL, NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "secret area"))
    expect(out, "/private", NULL, NULL);
  curl_easy_cleanup(e);
}

/* The internal extractor's first value, in the next request's path. */
static void seq_extract(char *out)
{
  got g;
  char token[64] = "", path[128];
  CURL *e = session();
  fetch_on(e, "/html?title=tok-4711", NULL, NULL, NULL, 0, &g);
  regex_all("tok-[0-9]+", g.body, g.body_len, 0, token, sizeof token);
  if (has(g.body, g.body_len, "GET /echo?t=tok-4711 HTTP/1.1"))
    expect(out, "/html?title=tok-4711", NULL, NULL);
  if (!token[0] || strchr(token, '|')) { /* none, or several: not this test's case */
    curl_easy_cleanup(e);
    return;
  }
  snprintf(path, sizeof path, "/echo?t=%s", token);
  fetch_on(e, path, NULL, NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "GET /echo?t=tok-4711 HTTP/1.1"))
    expect(out, path, NULL, NULL);
  curl_easy_cleanup(e);
}

/* iterate-all: the second request once per value of the first response,
 * in order. */
static void seq_iterate(char *out)
{
  got g;
  char tokens[128] = "", path[160];
  CURL *e = session();
  fetch_on(e, "/html?title=tok-1+tok-2", NULL, NULL, NULL, 0, &g);
  regex_all("tok-[0-9]+", g.body, g.body_len, 0, tokens, sizeof tokens);
  if (has(g.body, g.body_len, "GET /echo?t=tok-"))
    expect(out, "/html?title=tok-1+tok-2", NULL, NULL);
  for (char *t = tokens, *end; *t; t = *end ? end + 1 : end) {
    end = t + strcspn(t, "|");
    snprintf(path, sizeof path, "/echo?t=%.*s", (int)(end - t), t);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, "GET /echo?t=tok-"))
      expect(out, path, NULL, NULL);
  }
  curl_easy_cleanup(e);
}

/* Nothing extracted: the second request is not made. */
static void seq_missing(char *out)
{
  got g;
  char token[64] = "";
  fetch("/html?title=nothing", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "GET /echo"))
    expect(out, "/html?title=nothing", NULL, NULL);
  regex_all("tok-[0-9]+", g.body, g.body_len, 0, token, sizeof token);
  if (token[0])
    expect(out, "/echo?t=", NULL, NULL); /* not this test's case: fails it */
}

/* req-condition: the second response's matchers see the first's status
 * and body by number; the first's cannot (status_code_2 has no value:
 * the expression fails, under and the matcher does). */
static void seq_req_condition(char *out)
{
  got one, two;
  char type[128];
  fetch("/status?code=404&n=5", NULL, NULL, 0, &one);
  fetch("/html?title=second", NULL, NULL, 0, &two);
  header_of(&two, "Content-Type", type, sizeof type);
  if (one.status == 404 && two.status == 200 && has(two.body, two.body_len, "second") &&
      one.body_len == 5 && !has(one.body, one.body_len, "second") && strstr(type, "text/html"))
    expect(out, "/html?title=second", NULL, NULL);
}

/* stop-at-first-match: the paths in order until one matches. */
static void seq_stop_first(char *out)
{
  static const char *const paths[] = {"/status?code=404&n=1", "/html?title=first-hit",
                                      "/html?title=never-asked"};
  for (size_t i = 0; i < 3; i++) {
    got g;
    fetch(paths[i], NULL, NULL, 0, &g);
    if (g.status == 200) {
      expect(out, paths[i], NULL, NULL);
      return;
    }
  }
}

/* payloads: the values in turn until one matches (stop-at-first-match);
 * the DSL's word is the value. */
static void seq_payloads(char *out)
{
  static const char *const words[] = {"a", "b", "c"};
  for (size_t i = 0; i < 3; i++) {
    char path[64], want[16];
    got g;
    snprintf(path, sizeof path, "/html?title=p-%s", words[i]);
    snprintf(want, sizeof want, "p-%s", words[i]);
    fetch(path, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, want) && !strcmp(words[i], "b")) {
      expect(out, path, NULL, NULL);
      return;
    }
  }
}

/* Each combination runs the block's requests in order, one jar for the
 * template: the login's cookie is the one its echo carries. */
static void seq_payload_login(char *out)
{
  static const char *const users[] = {"ann", "bob"};
  CURL *e = session();
  for (size_t i = 0; i < 2; i++) {
    char path[64], cookie[64];
    got g;
    snprintf(path, sizeof path, "/login?user=%s", users[i]);
    snprintf(cookie, sizeof cookie, "Cookie: session=%s", users[i]);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, cookie))
      expect(out, path, NULL, NULL);
    snprintf(path, sizeof path, "/echo?u=%s", users[i]);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, cookie))
      expect(out, path, NULL, NULL);
  }
  curl_easy_cleanup(e);
}

/* @once: the login and the tail with the first combination only; the
 * echo with each, the login's cookie on every one. */
static void seq_once(char *out)
{
  static const char *const values[] = {"x", "y", "z"};
  CURL *e = session();
  got g;
  fetch_on(e, "/login?user=first", NULL, NULL, NULL, 0, &g);
  for (size_t i = 0; i < 3; i++) {
    char path[64];
    snprintf(path, sizeof path, "/echo?v=%s", values[i]);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, "Cookie: session=first"))
      expect(out, path, NULL, NULL);
    if (i == 0)
      fetch_on(e, "/echo?tail=1", NULL, NULL, NULL, 0, &g);
    if (i == 0 && has(g.body, g.body_len, "Cookie: session=first"))
      expect(out, "/echo?tail=1", NULL, NULL);
  }
  curl_easy_cleanup(e);
}

/* Raw requests of a block, in order: each as raw_length and raw_absolute
 * send one alone (the body's own length, an absolute URL's path and
 * query to the target); a line per response that matches. */
static void seq_raw(char *out)
{
  got g;
  CURL *e = session();
  const char *blank[] = {"Content-Type:", NULL};
  char url[512];
  snprintf(url, sizeof url, "%s/echo?seq=raw-length", base);
  ck_assert_int_eq(fetch_url_on(e, url, "POST", blank, "abcdef", 0, 0, &g, NULL, 0), CURLE_OK);
  if (has(g.body, g.body_len, "Content-Length: 6\r\n\r\nabcdef"))
    expect(out, "/echo?seq=raw-length", NULL, NULL);
  fetch_on(e, "/echo?seq=raw-absolute", NULL, NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "GET /echo?seq=raw-absolute HTTP/1.1\r\nHost: 127.0.0.1:"))
    expect(out, "/echo?seq=raw-absolute", NULL, NULL);
  curl_easy_cleanup(e);
}

/* unsafe: true over the block: each request's bytes as written, as
 * raw_unsafe_headers and raw_unsafe_length send them. */
static void seq_raw_unsafe(char *out)
{
  char request[256];
  got g;
  snprintf(request, sizeof request,
           "GET /echo?seq=unsafe-headers HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-Odd :  spaced\r\n\r\n",
           port());
  send_raw(request, &g);
  if (has(g.body, g.body_len, "\r\nX-Odd :  spaced\r\n\r\n"))
    expect(out, "/echo?seq=unsafe-headers", NULL, NULL);
  snprintf(request, sizeof request,
           "POST /echo?seq=unsafe-length HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: 3\r\n"
           "\r\nabcdef\r\n",
           port());
  send_raw(request, &g);
  if (regex_in("\r\nContent-Length: 3\r\n\r\nabc$", g.body, g.body_len))
    expect(out, "/echo?seq=unsafe-length", NULL, NULL);
}

/* ---- flow: (run/flow-*.yaml) ------------------------------------------- */

/* The flow's http(N) of a block of one path and one matcher, on the
 * template's session e: true when its word is in the body (status: when
 * the status is that), its line expected when it is not internal.
 * Written with C's && and ||, whose short-circuit is JavaScript's. */
static int block_word(char *out, CURL *e, const char *path, const char *word, int internal)
{
  got g;
  fetch_on(e, path, NULL, NULL, NULL, 0, &g);
  int hit = has(g.body, g.body_len, word);
  if (hit && !internal)
    expect(out, path, NULL, NULL);
  return hit;
}

static int block_status(char *out, CURL *e, const char *path, long status)
{
  got g;
  fetch_on(e, path, NULL, NULL, NULL, 0, &g);
  if (g.status == status)
    expect(out, path, NULL, NULL);
  return g.status == status;
}

static void flow_and(char *out)
{
  CURL *e = session();
  (void)((block_status(out, e, "/status?code=404", 200) &&
          block_word(out, e, "/text?body=flow-skipped", "flow-skipped", 0)) ||
         block_word(out, e, "/text?body=flow-third", "flow-third", 0));
  curl_easy_cleanup(e);
}

static void flow_or(char *out)
{
  CURL *e = session();
  (void)((block_word(out, e, "/text?body=flow-gate", "flow-gate", 1) ||
          block_word(out, e, "/text?body=flow-not-sent", "flow-not-sent", 0)) &&
         block_word(out, e, "/text?body=flow-after-gate", "flow-after-gate", 0));
  curl_easy_cleanup(e);
}

static void flow_if(char *out)
{
  CURL *e = session();
  if (!block_status(out, e, "/status?code=404", 200))
    block_word(out, e, "/text?body=flow-then", "flow-then", 0);
  else
    block_word(out, e, "/text?body=flow-else", "flow-else", 0);
  const int ninth = 0; /* the template has no block 9 */
  (void)(ninth || block_word(out, e, "/text?body=flow-missing-block", "flow-missing-block", 0));
  block_word(out, e, "/text?body=flow-last", "flow-last", 0);
  curl_easy_cleanup(e);
}

/* Several values of block 1, as their list in block 2's header. */
static void flow_list(char *out)
{
  got g;
  char tokens[128], header[160];
  CURL *e = session();
  fetch_on(e, "/text?body=tok-5150%20tok-6160", NULL, NULL, NULL, 0, &g);
  regex_all("tok-[0-9]+", g.body, g.body_len, 0, tokens, sizeof tokens); /* "a|b" */
  for (char *bar = tokens; (bar = strchr(bar, '|')) != NULL;)
    *bar = ' ';
  if (tokens[0]) {
    snprintf(header, sizeof header, "X-Token: [%s]", tokens);
    fetch_on(e, "/echo", NULL, header, NULL, 0, &g);
    if (has(g.body, g.body_len, "X-Token: [tok-5150 tok-6160]"))
      expect(out, "/echo", NULL, NULL);
  }
  curl_easy_cleanup(e);
}

/* A block without operators is true once a response came. */
static void flow_bare(char *out)
{
  got g;
  CURL *e = session();
  fetch_on(e, "/status?code=404", "POST", NULL, "step=1", 0, &g);
  if (g.status > 0)
    block_word(out, e, "/text?body=flow-after-bare", "flow-after-bare", 0);
  curl_easy_cleanup(e);
}

/* Block 2 first, its value in block 1's request. */
static void flow_back(char *out)
{
  got g;
  char code[64], path[128];
  CURL *e = session();
  fetch_on(e, "/text?body=code-88", NULL, NULL, NULL, 0, &g);
  regex_all("code-[0-9]+", g.body, g.body_len, 0, code, sizeof code);
  if (code[0]) {
    snprintf(path, sizeof path, "/echo?back=%s", code);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, "GET /echo?back=code-88 HTTP/1.1"))
      expect(out, path, NULL, NULL);
  }
  curl_easy_cleanup(e);
}

/* Blocks without matchers are true when their extractor finds a value. */
static void flow_values(char *out)
{
  got g;
  char token[64], other[64], path[128];
  CURL *e = session();
  fetch_on(e, "/text?body=tok-5150&cookie=flowc%3D7", NULL, NULL, NULL, 0, &g);
  regex_all("tok-[0-9]+", g.body, g.body_len, 0, token, sizeof token);
  if (token[0]) {
    snprintf(path, sizeof path, "/echo?t=%s", token);
    fetch_on(e, path, NULL, NULL, NULL, 0, &g);
    if (has(g.body, g.body_len, "GET /echo?t=tok-5150 HTTP/1.1") &&
        has(g.body, g.body_len, "flowc=7")) {
      expect(out, path, NULL, NULL);
      fetch_on(e, "/text?body=no-token-here", NULL, NULL, NULL, 0, &g);
      regex_all("tok-[0-9]+", g.body, g.body_len, 0, other, sizeof other);
      if (other[0])
        block_word(out, e, "/text?body=flow-after-nothing", "flow-after-nothing", 0);
    }
  }
  curl_easy_cleanup(e);
}

/* ---- {{...}} in matchers (run/word-*.yaml, dsl-job-vals.yaml) ---------- */

static void word_const(char *out)
{
  got g;
  fetch("/html?title=Acme-Portal", NULL, NULL, 0, &g);
  if (has(g.body, g.body_len, "<TITLE lang=en>Acme-Portal</title>"))
    expect(out, "/html?title=Acme-Portal", "title", NULL);
  if (has(g.body, g.body_len, "ACME-PORTAL"))
    expect(out, "/html?title=Acme-Portal", "upper", NULL);
  if (strcasestr(g.body, "acme-portal</title>"))
    expect(out, "/html?title=Acme-Portal", "nocase", NULL);
}

/* The path of scan's line for a URL of base + prefix, into out (cap
 * bytes); "" when it has none. */
static void reported_path(const char *prefix, char *out, size_t cap)
{
  char start[256];
  snprintf(start, sizeof start, "%s%s", base, prefix);
  out[0] = '\0';
  for (const char *l = reported_lines; l && *l; l += strcspn(l, "\n"), l += *l == '\n')
    if (!strncmp(l, start, strlen(start))) {
      snprintf(out, cap, "%.*s", (int)strcspn(l + strlen(base), " \n"), l + strlen(base));
      return;
    }
}

/* Parameter key of path's query (up to '&'), into out (64 bytes). */
static void param_of(const char *path, const char *key, char *out)
{
  char k[32];
  snprintf(k, sizeof k, "%s=", key);
  const char *p = strstr(path, k);
  out[0] = '\0';
  if (p && (p[-1] == '?' || p[-1] == '&'))
    snprintf(out, 64, "%.*s", (int)strcspn(p + strlen(k), "&"), p + strlen(k));
}

/* Whether s is n (0: any number but none) bytes of set. */
static int shaped(const char *s, size_t n, const char *set)
{
  size_t len = strlen(s);
  return len && (!n || len == n) && strspn(s, set) == len;
}

#define LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define ALNUM   LETTERS "0123456789"

/* n random characters of set into out, of the evaluation's own. */
static void own_random(char *out, size_t n, const char *set)
{
  static unsigned long x;
  if (!x)
    x = (unsigned long)time(NULL) ^ (unsigned long)getpid() << 16;
  for (size_t i = 0; i < n; i++, x = x * 6364136223846793005UL + 1442695040888963407UL)
    out[i] = set[(x >> 33) % strlen(set)];
  out[n] = '\0';
}

/* scan's values are taken where they have their shape (rand_base(8): 8
 * letters or digits; randstr and randstr_N: letters); else the
 * evaluation's own, which scan's line then does not show. */
static void word_rand(char *out)
{
  char path[256], t[64], r[64], s[64], other[16], want[128];
  got g;
  reported_path("/echo?r=", path, sizeof path);
  param_of(path, "t", t);
  param_of(path, "r", r);
  param_of(path, "s", s);
  /* {{randstr}} and {{randstr_N}} are KSUIDs, 27 letters and digits */
  if (!shaped(t, 8, ALNUM) || !shaped(r, 27, ALNUM) || !shaped(s, 27, ALNUM)) {
    own_random(t, 8, ALNUM);
    own_random(r, 27, ALNUM);
    own_random(s, 27, ALNUM);
  }
  snprintf(path, sizeof path, "/echo?r=%s&s=%s&t=%s", r, s, t);
  fetch(path, NULL, NULL, 0, &g);
  snprintf(want, sizeof want, "&t=%s HTTP/1.1", t);
  if (has(g.body, g.body_len, want))
    expect(out, path, "sent", NULL);
  own_random(other, 8, ALNUM); /* another rand_base(8), never sent */
  snprintf(want, sizeof want, "t=%s", other);
  if (has(g.body, g.body_len, want))
    expect(out, path, "other", NULL);
  snprintf(want, sizeof want, "\\?r=%s&", r);
  if (regex_in(want, g.body, g.body_len))
    expect(out, path, "randstr", NULL);
  snprintf(want, sizeof want, "&s=%s&t=[A-Za-z0-9]{8} ", s);
  if (regex_in(want, g.body, g.body_len))
    expect(out, path, "randstr-n", NULL);
}

/* {{Hostname}} is host:port (the port is not the scheme's), {{Host}} the
 * host alone; a regex is compiled as written. */
static void word_host(char *out)
{
  const char *hostname = base + strlen("http://");
  char path[256], want[256], location[256];
  got g;
  snprintf(path, sizeof path, "/redirect?n=0&to=//%s/home", hostname);
  fetch(path, NULL, NULL, 0, &g);
  header_of(&g, "Location", location, sizeof location);
  snprintf(want, sizeof want, "Location: //%s/home", hostname);
  if (has(g.head, g.head_len, want))
    expect(out, path, "header", NULL);
  snprintf(want, sizeof want, "//%s/", hostname);
  if (strstr(location, want))
    expect(out, path, "location", NULL);
  snprintf(want, sizeof want, "Location: //%.*s/home", (int)strcspn(hostname, ":"), hostname);
  if (has(g.head, g.head_len, want))
    expect(out, path, "wrong", NULL);
  if (regex_in("//{{Hostname}}/home", g.head, g.head_len))
    expect(out, path, "regex", NULL);
}

/* tok: 10 letters, then the port. */
static void dsl_job_vals(char *out)
{
  const char *port = strrchr(base, ':') + 1;
  char path[256], tok[64], want[300];
  got g;
  reported_path("/echo?t=", path, sizeof path);
  param_of(path, "t", tok);
  if (strlen(tok) != 10 + strlen(port) || strspn(tok, LETTERS) != 10 || strcmp(tok + 10, port))
    own_random(tok, 10, LETTERS), strcat(tok, port);
  snprintf(path, sizeof path, "/echo?t=%s", tok);
  fetch(path, NULL, NULL, 0, &g);
  snprintf(want, sizeof want, "GET %s HTTP/1.1", path);
  if (has(g.body, g.body_len, want))
    expect(out, path, NULL, NULL);
}

const evaluation RUN[] = {
    {"word-and", word_and, 0},
    {"word-nocase", word_nocase, 0},
    {"word-missing", word_missing, 0},
    {"regex-extract", regex_extract, 0},
    {"negative", negative, 0},
    {"header-part", header_part, 0},
    {"status-404", status_404, 0},
    {"status-200-missed", status_200_missed, 0},
    {"size", size, 0},
    {"kval", kval, 0},
    {"named-or", named_or, 0},
    {"method-headers", method_headers, 0},
    {"default-headers", default_headers, 0},
    {"own-agent", own_agent, 0},
    {"gzip-body", gzip_body, 0},
    {"redirects", redirects, 0},
    {"redirect-max", redirect_max, 0},
    {"redirect-host", redirect_host, 0},
    {"redirect-hops", redirect_hops, 0},
    {"redirect-first", redirect_first, 0},
    {"no-redirects", no_redirects, 0},
    {"stop-first", stop_first, ONE_OF},
    {"word-all", word_all, 0},
    {"regex-backref", regex_backref, 0},
    {"regex-end", regex_end, 0},
    {"regex-end-newline", regex_end_newline, 0},
    {"regex-end-chunks", regex_end_chunks, 0},
    {"regex-space", regex_space, 0},
    {"regex-header-end", regex_header_end, 0},
    {"raw-plain", raw_plain, 0},
    {"dsl", dsl, 0},
    {"dsl-or", dsl_or, 0},
    {"dsl-negative", dsl_negative, 0},
    {"dsl-named", dsl_named, 0},
    {"dsl-extract", dsl_extract, 0},
    {"dsl-part", dsl_part, 0},
    {"dsl-content-type", dsl_content_type, 0},
    {"dsl-md5", dsl_md5, 0},
    {"dsl-favicon", dsl_favicon, 0},
    {"dsl-tolower", dsl_tolower, 0},
    {"dsl-stream", dsl_stream, 0},
    {"internal", internal, 0},
    {"raw-length", raw_length, 0},
    {"path-length", path_length, 0},
    {"raw-absolute", raw_absolute, 0},
    {"raw-spacing", raw_spacing, 0},
    {"raw-empty", raw_empty, 0},
    {"raw-dots", raw_dots, 0},
    {"raw-timeout", raw_timeout, 0},
    {"raw-host", raw_host, 0},
    {"raw-unsafe-headers", raw_unsafe_headers, 0},
    {"raw-unsafe-length", raw_unsafe_length, 0},
    {"raw-unsafe-star", raw_unsafe_star, 0},
    {"json", json, 0},
    {"json-nested", json_nested, 0},
    {"xpath", xpath, 0},
    {"xpath-xml", xpath_xml, 0},
    {"kval-cookie", kval_cookie, 0},
    {"max-size", max_size, 0},
    {"seq-cookie", seq_cookie, 0},
    {"seq-no-cookie", seq_no_cookie, 0},
    {"seq-blocks", seq_blocks, 0},
    {"seq-extract", seq_extract, 0},
    {"seq-missing", seq_missing, 0},
    {"seq-iterate", seq_iterate, 0},
    {"seq-req-condition", seq_req_condition, 0},
    {"seq-stop-first", seq_stop_first, 0},
    {"seq-payloads", seq_payloads, 0},
    {"seq-payload-login", seq_payload_login, ANY_ORDER},
    {"seq-once", seq_once, 0},
    {"seq-raw", seq_raw, 0},
    {"seq-raw-unsafe", seq_raw_unsafe, 0},
    {"flow-and", flow_and, 0},
    {"flow-or", flow_or, 0},
    {"flow-if", flow_if, 0},
    {"flow-values", flow_values, 0},
    {"flow-back", flow_back, 0},
    {"flow-bare", flow_bare, 0},
    {"flow-list", flow_list, 0},
    {"word-const", word_const, 0},
    {"word-rand", word_rand, 0},
    {"word-host", word_host, 0},
    {"dsl-job-vals", dsl_job_vals, 0},
};
const size_t NRUN = sizeof RUN / sizeof RUN[0];
