/* test_templates' evaluation of each template of run/ (templates_eval.h). */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

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

/* Fetches path of the target with method (NULL: GET), one header (NULL:
 * none), a body (NULL: none), following redirects up to follow (0: none). */
void fetch_with(const char *path, const char *method, const char *header, const char *data,
                long follow, got *g)
{
  char url[512];
  snprintf(url, sizeof url, "%s%s", base, path);
  memset(g, 0, sizeof *g);
  CURL *e = curl_easy_init();
  struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
  ck_assert_ptr_nonnull(e);
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
  ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &g->status);
  curl_slist_free_all(h);
  curl_easy_cleanup(e);
}

void fetch(const char *path, const char *method, const char *header, long follow, got *g)
{
  fetch_with(path, method, header, NULL, follow, g);
}

int has(const char *text, size_t len, const char *word)
{
  return memmem(text, len, word, strlen(word)) != NULL;
}

/* The matches of re in text: group g of each, distinct, joined by '|'. */
static void regex_all(const char *re, const char *text, size_t len, int g, char *out, size_t cap)
{
  int err;
  PCRE2_SIZE at;
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, 0, &err, &at, NULL);
  ck_assert_ptr_nonnull(code);
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

int regex_in(const char *re, const char *text, size_t len)
{
  char out[1024];
  regex_all(re, text, len, 0, out, sizeof out);
  return out[0] != '\0';
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

/* ---- What each template of run/ should report ---------------------------- */

/* One line scan should print: "PATH name=NAME extracts=A|B\n". */
static void expect(char *out, const char *path, const char *name, const char *extracts)
{
  size_t n = strlen(out);
  snprintf(out + n, EXPECT_MAX - n, "%s%s name=%s extracts=%s\n", base, path, name ? name : "",
           extracts ? extracts : "");
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

static void redirects(char *out)
{
  got g;
  fetch("/redirect?n=2", NULL, NULL, 3, &g);
  if (g.status == 200 || g.status == 302)
    expect(out, "/redirect?n=2", NULL, NULL);
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
 * as requests run at once), see one_of. */
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
    {"redirects", redirects, 0},
    {"no-redirects", no_redirects, 0},
    {"stop-first", stop_first, 1},
    {"word-all", word_all, 0},
    {"regex-backref", regex_backref, 0},
    {"raw-plain", raw_plain, 0},
    {"dsl", dsl, 0},
};
const size_t NRUN = sizeof RUN / sizeof RUN[0];
