/* scan -t: the templates of test/templates/, run against the loopback
 * server. run/ holds one template per feature, skip/ one per reason a
 * template is skipped (its first line says which: "# skip: REASON"),
 * cap/ one for --max-body and one that stops early.
 *
 * The verdicts and extracts that scan prints are checked against an
 * evaluation of each template written here, independently of scan: the
 * test fetches each template's request itself with libcurl and applies
 * the template's matchers by hand (memmem, strcasestr, PCRE2) to what it
 * got. The server's request count shows that templates with the same
 * request shared one.
 *
 * SCAN_BIN is the scan binary, TEMPLATES the directory test/templates. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "net.h"

static char base[128]; /* the target: http://127.0.0.1:PORT */

static void up(void)
{
  server_up();
  ts_url(srv, "", base, sizeof base);
  size_t n = strlen(base);
  if (n && base[n - 1] == '/')
    base[n - 1] = '\0';
}

static void templates_path(const char *sub, char *out, size_t cap)
{
  const char *dir = getenv("TEMPLATES");
  ck_assert_msg(dir && *dir, "TEMPLATES is not set");
  snprintf(out, cap, "%s/%s", dir, sub);
}

/* ---- The independent evaluation ----------------------------------------- */

/* A response as the test fetched it: the final header block and body. */
typedef struct got {
  long status;
  char head[8192], body[65536];
  size_t head_len, body_len;
} got;

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
static void fetch_with(const char *path, const char *method, const char *header, const char *data,
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

static void fetch(const char *path, const char *method, const char *header, long follow, got *g)
{
  fetch_with(path, method, header, NULL, follow, g);
}

static int has(const char *text, size_t len, const char *word)
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

static int regex_in(const char *re, const char *text, size_t len)
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

#define EXPECT_MAX 2048

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

static const struct evaluation {
  const char *id;
  void (*expected)(char *out);
  int one_of; /* stop-at-first-match: one line, one of those expected */
} RUN[] = {
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
#define NRUN (sizeof RUN / sizeof RUN[0])

/* ---- scan's lines ------------------------------------------------------- */

/* The JSON string after "key": in line, unescaped, into out; 0 when the
 * line has no such key. p: where it starts, NULL from the key. */
static const char *json_at(const char *p, char *out, size_t cap)
{
  size_t n = 0;
  ck_assert_int_eq(*p, '"');
  for (p++; *p && *p != '"'; p++) {
    char c = *p;
    if (c == '\\') {
      c = *++p;
      if (c == 'u') {
        c = (char)strtol((char[]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
        p += 4;
      } else if (c == 'n') {
        c = '\n';
      }
    }
    if (n + 1 < cap)
      out[n++] = c;
  }
  out[n] = '\0';
  return *p ? p + 1 : p;
}

static int json_field(const char *line, const char *key, char *out, size_t cap)
{
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  out[0] = '\0';
  if (!p)
    return 0;
  p += strlen(k);
  if (*p == '[') { /* strings, joined by '|' */
    for (p++; *p == '"';) {
      size_t n = strlen(out);
      if (n && n + 1 < cap)
        out[n++] = '|';
      p = json_at(p, out + n, cap - n);
      p += *p == ',';
    }
    return 1;
  }
  json_at(p, out, cap);
  return 1;
}

/* scan's lines for template id, in the form of expect. */
static void reported(const char *lines, const char *id, char *out)
{
  out[0] = '\0';
  for (const char *l = lines; *l;) {
    const char *end = strchr(l, '\n');
    ck_assert_ptr_nonnull(end);
    char one[8192], v[1024], at[512], name[256], extracts[512];
    snprintf(one, sizeof one, "%.*s", (int)(end - l), l);
    ck_assert(json_field(one, "template-id", v, sizeof v));
    if (!strcmp(v, id)) {
      ck_assert(json_field(one, "matched-at", at, sizeof at));
      json_field(one, "matcher-name", name, sizeof name);
      json_field(one, "extracted-results", extracts, sizeof extracts);
      size_t n = strlen(out);
      snprintf(out + n, EXPECT_MAX - n, "%s name=%s extracts=%s\n", at, name, extracts);
    }
    l = end + 1;
  }
}

/* Runs scan -t dir (relative to TEMPLATES) with more arguments. */
static prog_out run_templates(const char *dir, const char *a1, const char *a2, const char *a3)
{
  char path[512];
  templates_path(dir, path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, (char *)a1, (char *)a2, (char *)a3, NULL};
  ck_assert_ptr_nonnull(argv[0]);
  return run_program(argv);
}

/* ---- Tests -------------------------------------------------------------- */

/* Every template of run/ against the server: scan's verdicts and extracts
 * are the evaluation's, and one request served each set of templates with
 * the same request. */
START_TEST(verdicts)
{
  unsigned long before = ts_requests(srv);
  prog_out o = run_templates("run", "-u", base, NULL);
  unsigned long made = ts_requests(srv) - before;
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  /* 19 templates, 20 paths, 12 distinct requests; redirects.yaml follows
   * three redirects, which the server counts too. */
  ck_assert_msg(strstr(o.err, "19 loaded, 0 skipped; 12 clusters, 12 requests"), "%s", o.err);
  ck_assert_uint_eq(made, 12 + 3);
  size_t lines = 0;
  for (size_t i = 0; i < NRUN; i++) {
    char want[EXPECT_MAX] = "", have[EXPECT_MAX];
    RUN[i].expected(want);
    reported(o.out, RUN[i].id, have);
    if (RUN[i].one_of && want[0])
      ck_assert_msg(strchr(have, '\n') == have + strlen(have) - 1 && strstr(want, have),
                    "%s: expected one of\n%sgot\n%s", RUN[i].id, want, have);
    else
      ck_assert_msg(!strcmp(want, have), "%s: expected\n%sgot\n%s", RUN[i].id, want, have);
    for (const char *p = have; (p = strchr(p, '\n')) != NULL; p++)
      lines++;
  }
  /* Only the templates of run/ were reported, and some did not match. */
  size_t all = 0;
  for (const char *p = o.out; (p = strchr(p, '\n')) != NULL; p++)
    all++;
  ck_assert_uint_eq(all, lines);
  ck_assert_uint_lt(lines, NRUN + 2);
  ck_assert_uint_gt(lines, NRUN / 2);
  prog_out_free(&o);
}
END_TEST

/* The fields nuclei writes, and respchain's beside them. */
START_TEST(fields)
{
  prog_out o = run_templates("run/word-and.yaml", "-u", base, "-s");
  ck_assert_int_eq(o.status, 0);
  char v[1024];
  ck_assert(json_field(o.out, "template-id", v, sizeof v) && !strcmp(v, "word-and"));
  ck_assert(strstr(o.out, "\"info\":{\"name\":\"Acme portal page\",\"severity\":\"info\","
                          "\"tags\":[\"test\",\"word\"]}"));
  ck_assert(json_field(o.out, "type", v, sizeof v) && !strcmp(v, "http"));
  ck_assert(json_field(o.out, "host", v, sizeof v) && !strcmp(v, base));
  ck_assert(json_field(o.out, "timestamp", v, sizeof v) && strlen(v) == 27 && v[26] == 'Z');
  ck_assert(!strstr(o.out, "matcher-name") && !strstr(o.out, "extracted-results"));
  ck_assert(strstr(o.out, "\"status-code\":200,\"cluster-requests\":1,\"body-bytes\":"));
  ck_assert(strstr(o.out, ",\"truncated\":false,\"stopped\":"));
  ck_assert_str_eq(o.err, ""); /* -s: no summary */
  prog_out_free(&o);
}
END_TEST

/* Whether scan was built with Vectorscan. */
static int with_vectorscan(void)
{
  char *v[] = {getenv("SCAN_BIN"), "--version", NULL};
  prog_out ver = run_program(v);
  int vs = strstr(ver.out, "matchers: Vectorscan") != NULL;
  prog_out_free(&ver);
  return vs;
}

/* Body words and regexes that Vectorscan takes run on the stream, and the
 * body is not kept for them; without Vectorscan, PCRE2 runs them over the
 * kept body. Same verdicts either way. */
START_TEST(streamed)
{
  int vs = with_vectorscan();
  char one[512], two[512];
  templates_path("run/word-and.yaml", one, sizeof one);
  templates_path("run/negative.yaml", two, sizeof two);
  char *argv[] = {getenv("SCAN_BIN"), "-t", one, "-t", two, "-u", base, NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert(strstr(o.out, "\"template-id\":\"word-and\""));
  ck_assert(strstr(o.out, "\"template-id\":\"negative\""));
  if (vs)
    ck_assert_msg(strstr(o.err, "3 streamed") && strstr(o.err, "bodies not kept"), "%s", o.err);
  else
    ck_assert_msg(strstr(o.err, "3 over the kept body") && strstr(o.err, "bodies kept"), "%s",
                  o.err);
  prog_out_free(&o);
}
END_TEST

/* --validate: each template of skip/ is skipped with the reason its first
 * line names, and counted; nothing is requested. */
START_TEST(validate)
{
  char dir[512];
  templates_path("skip", dir, sizeof dir);
  unsigned long before = ts_requests(srv);
  prog_out o = run_templates("skip", "--validate", "-u", base);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(ts_requests(srv), before);
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[1024], first[256], want[1400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(first, sizeof first, f));
    fclose(f);
    ck_assert_msg(!strncmp(first, "# skip: ", 8), "%s: no '# skip:' line", path);
    first[strcspn(first, "\n")] = '\0';
    snprintf(want, sizeof want, "skipped %s: %s", path, first + 8);
    ck_assert_msg(strstr(o.out, want), "%s not in\n%s", want, o.out);
    n++;
  }
  closedir(d);
  char counts[64];
  snprintf(counts, sizeof counts, "templates: 0 loaded, %zu skipped", n);
  ck_assert_msg(strstr(o.out, counts), "%s", o.out);
  prog_out_free(&o);
  /* run/ loads whole. */
  o = run_templates("run", "--validate", NULL, NULL);
  ck_assert_msg(strstr(o.out, "templates: 19 loaded, 0 skipped"), "%s", o.out);
  prog_out_free(&o);
}
END_TEST

/* A body cut at --max-body is matched as far as kept, and says so; a
 * target that cannot be reached has no lines (an error in the summary). */
START_TEST(cut_and_failed)
{
  prog_out o = run_templates("cap/cut.yaml", "-u", base, "--max-body");
  ck_assert_int_eq(o.status, 2); /* --max-body wants its value */
  prog_out_free(&o);
  char path[512];
  templates_path("cap/cut.yaml", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, "--max-body", "10k", NULL};
  o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "\"body-bytes\":10240,\"truncated\":true,\"stopped\":false}"), "%s",
                o.out);
  prog_out_free(&o);
  char *down[] = {getenv("SCAN_BIN"), "-t", path, "-u", "http://127.0.0.1:1", NULL};
  o = run_program(down);
  ck_assert_int_eq(o.status, 0);
  ck_assert_str_eq(o.out, "");
  ck_assert_msg(strstr(o.err, "0 matched, 1 errors"), "%s", o.err);
  prog_out_free(&o);
}
END_TEST

/* More clusters than the engine keeps databases of their own (16): each
 * template's verdict is its own request's, whichever database streams it.
 * Template i asks for the page of Word<i>, wants Word<i> and not
 * Word<i+1>, which the next template's page holds. */
START_TEST(many_clusters)
{
  enum { N = 24 };
  char dir[256];
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(dir, sizeof dir, "%s/test_templates_XXXXXX", tmp);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  for (int i = 0; i < N; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/t%02d.yaml", dir, i);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "id: many-%d\ninfo: {name: m, severity: info}\nhttp:\n"
            "  - path: [\"{{BaseURL}}/html?title=Word%d\"]\n    matchers-condition: and\n"
            "    matchers:\n      - type: word\n        words: [\"Word%d<\"]\n"
            "      - type: regex\n        negative: true\n        regex: [\"Word%d<\"]\n",
            i, i, i, i + 1);
    fclose(f);
  }
  char *argv[] = {getenv("SCAN_BIN"), "-t", dir, "-u", base, "-s", NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  for (int i = 0; i < N; i++) {
    char page[64], want[128], word[16];
    got g;
    snprintf(page, sizeof page, "/html?title=Word%d", i);
    fetch(page, NULL, NULL, 0, &g);
    snprintf(word, sizeof word, "Word%d<", i + 1);
    int expected = has(g.body, g.body_len, word) ? 0 : 1;
    snprintf(word, sizeof word, "Word%d<", i);
    expected &= has(g.body, g.body_len, word);
    snprintf(want, sizeof want, "\"template-id\":\"many-%d\"", i);
    ck_assert_msg(!!strstr(o.out, want) == expected, "many-%d: expected %d\n%s", i, expected,
                  o.out);
  }
  prog_out_free(&o);
  for (int i = 0; i < N; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/t%02d.yaml", dir, i);
    unlink(path);
  }
  rmdir(dir);
}
END_TEST

/* A request whose verdicts are all known before its body ends stops
 * (with Vectorscan: without it, the words run over the body kept whole). */
START_TEST(early_stop)
{
  int vs = with_vectorscan();
  prog_out o = run_templates("cap/early.yaml", "-u", base, "-s");
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, vs ? "\"truncated\":false,\"stopped\":true}"
                                 : "\"truncated\":false,\"stopped\":false}"),
                "%s", o.out);
  char *p = strstr(o.out, "\"body-bytes\":");
  ck_assert_ptr_nonnull(p);
  if (vs)
    ck_assert_uint_lt(strtoul(p + 13, NULL, 10), 3 * 1024 * 1024);
  prog_out_free(&o);
}
END_TEST

/* --shard splits the targets, not the templates' requests: shard 2/2 of
 * two targets scans the second, with all its templates. */
START_TEST(shard)
{
  char second[200];
  snprintf(second, sizeof second, "%s/sub", base);
  char path[512];
  templates_path("run/status-404.yaml", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t",  path, "-u", base, "-u", second,
                  "--shard",          "2/2", "-s", NULL};
  unsigned long before = ts_requests(srv);
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(ts_requests(srv) - before, 1);
  char host[256];
  ck_assert(json_field(o.out, "host", host, sizeof host));
  ck_assert_str_eq(host, second);
  ck_assert_ptr_eq(strchr(o.out, '\n'), o.out + strlen(o.out) - 1); /* one line */
  prog_out_free(&o);
}
END_TEST

/* Usage: --validate without -t, and -t beside the command line's matchers. */
START_TEST(usage)
{
  char *a[] = {getenv("SCAN_BIN"), "--validate", NULL};
  prog_out o = run_program(a);
  ck_assert_int_eq(o.status, 2);
  prog_out_free(&o);
  o = run_templates("run", "--word", "x", NULL);
  ck_assert_int_eq(o.status, 2);
  prog_out_free(&o);
  o = run_templates("no-such-dir", "--validate", NULL, NULL);
  ck_assert_int_eq(o.status, 1);
  prog_out_free(&o);
}
END_TEST

int main(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
  Suite *s = suite_create("templates");
  TCase *tc = tcase_create("scan -t");
  tcase_add_checked_fixture(tc, up, server_down);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, verdicts);
  tcase_add_test(tc, fields);
  tcase_add_test(tc, streamed);
  tcase_add_test(tc, shard);
  tcase_add_test(tc, many_clusters);
  tcase_add_test(tc, cut_and_failed);
  tcase_add_test(tc, early_stop);
  tcase_add_test(tc, validate);
  tcase_add_test(tc, usage);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? 1 : 0;
}
