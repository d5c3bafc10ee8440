/* scan -t: the templates of test/templates/, run against the loopback
 * server. run/ holds one template per feature, skip/ one per reason a
 * template is skipped (its first line says which: "# skip: REASON"),
 * cap/ one for --max-body and one that stops early, jar/ a login sequence
 * and an independent probe of the page it opens, self/ a self-contained
 * template, order/ matchers beside extractors.
 *
 * The verdicts and extracts that scan prints are checked against an
 * evaluation of each template written in templates_eval.c, independently
 * of scan: the
 * test fetches each template's request itself with libcurl and applies
 * the template's matchers by hand (memmem, strcasestr, PCRE2) to what it
 * got. The server's request count shows that templates with the same
 * request shared one. The verdicts of cap/ and of the DSL table (dsl_table,
 * whose templates the test writes) are written in the test instead: the
 * table's values from the DSL library's documented behaviour and the
 * algorithms' own (hashes).
 *
 * SCAN_BIN is the scan binary, TEMPLATES the directory test/templates. */
#include <check.h>
#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "templates_eval.h"

char base[128]; /* the target: http://127.0.0.1:PORT */
const char *reported_lines;

static void up(void)
{
  server_up();
  server_base(base, sizeof base);
}

static void templates_path(const char *sub, char *out, size_t cap)
{
  const char *dir = getenv("TEMPLATES");
  ck_assert_msg(dir && *dir, "TEMPLATES is not set");
  snprintf(out, cap, "%s/%s", dir, sub);
}

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

static int by_text(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text (each ending in a newline) sorted, into text. */
static void sort_lines(char text[EXPECT_MAX])
{
  char copy[EXPECT_MAX], *line[EXPECT_MAX / 2];
  size_t n = 0;
  snprintf(copy, sizeof copy, "%s", text);
  for (char *p = copy, *nl; n < EXPECT_MAX / 2 && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    *nl = '\0';
    line[n++] = p;
  }
  qsort(line, n, sizeof *line, by_text);
  text[0] = '\0';
  for (size_t i = 0; i < n; i++)
    snprintf(text + strlen(text), EXPECT_MAX - strlen(text), "%s\n", line[i]);
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
  /* 83 templates: 62 independent ones, 63 paths, 44 distinct requests
   * (the 11 raw-*.yaml and path-length.yaml each a request of its own);
   * the server counts the redirects followed too: three of
   * redirects.yaml, two of redirect-max.yaml and of redirect-hops.yaml
   * (whose request redirect-first.yaml shares), one of redirect-host.yaml
   * (not the one to localhost). 14 sequences of 29 requests, each a
   * cluster of its own, 32 requests made: stop-first.yaml's first path
   * matches (1 of 2), seq-missing's second request names a value not
   * extracted (1 of 2), seq-stop-first's second path matches (2 of 3),
   * seq-iterate's second runs twice (3), seq-payloads' second value
   * matches (2 of 3 combinations), seq-payload-login's two requests run
   * for each of 2 (4), seq-raw's and seq-raw-unsafe's two raw requests
   * each (4), and seq-once's three for the first of 3 combinations, its
   * second alone for the others (5). And 7 sequences of flows, of 22
   * blocks, 17 sent: flow-and's and flow-or's first and third, flow-if's
   * all but its third, flow-values' first three, flow-back's,
   * flow-bare's and flow-list's two. */
  ck_assert_msg(strstr(o.err, "83 loaded, 0 skipped; 95 clusters, 93 requests"), "%s", o.err);
  ck_assert_uint_eq(made, 44 + 32 + 17 + 3 + 2 + 2 + 1);
  size_t lines = 0, silent = 0;
  for (size_t i = 0; i < NRUN; i++) {
    char want[EXPECT_MAX] = "", have[EXPECT_MAX];
    reported(o.out, RUN[i].id, have);
    reported_lines = have;
    RUN[i].expected(want);
    /* The DSL's templates are written to match the server's answers: a
     * verdict of none would test nothing. */
    ck_assert_msg(strncmp(RUN[i].id, "dsl", 3) || want[0], "%s: no match expected", RUN[i].id);
    if (RUN[i].lines == ANY_ORDER) {
      sort_lines(want);
      sort_lines(have);
    }
    if (RUN[i].lines == ONE_OF && want[0])
      ck_assert_msg(strchr(have, '\n') == have + strlen(have) - 1 && strstr(want, have),
                    "%s: expected one of\n%sgot\n%s", RUN[i].id, want, have);
    else
      ck_assert_msg(!strcmp(want, have), "%s: expected\n%sgot\n%s", RUN[i].id, want, have);
    for (const char *p = have; (p = strchr(p, '\n')) != NULL; p++)
      lines++;
    silent += !have[0];
  }
  /* Only the templates of run/ were reported, and some did not match. */
  size_t all = 0;
  for (const char *p = o.out; (p = strchr(p, '\n')) != NULL; p++)
    all++;
  ck_assert_uint_eq(all, lines);
  ck_assert_uint_gt(silent, 0);
  ck_assert_uint_lt(lines, NRUN + 24); /* named matchers, a chain's responses: a line each */
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
  /* nuclei's fields of the target: its host name, port, scheme and URL,
   * its address; matched-at the URL of the request. */
  ck_assert(json_field(o.out, "host", v, sizeof v) && !strcmp(v, "127.0.0.1"));
  ck_assert(json_field(o.out, "port", v, sizeof v) && !strcmp(v, strrchr(base, ':') + 1));
  ck_assert(json_field(o.out, "scheme", v, sizeof v) && !strcmp(v, "http"));
  ck_assert(json_field(o.out, "url", v, sizeof v) && !strcmp(v, base));
  ck_assert(json_field(o.out, "ip", v, sizeof v) && !strcmp(v, "127.0.0.1"));
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

/* A dsl matcher of atoms over the body runs them on the stream (with
 * Vectorscan), its body not kept; md5(body) keeps the body whole;
 * len(body) of a body cut at --max-body counts the bytes kept, the body
 * not kept for it. */
START_TEST(dsl_bodies)
{
  int vs = with_vectorscan();
  prog_out o = run_templates("run/dsl-stream.yaml", "-u", base, NULL);
  ck_assert_int_eq(o.status, 0);
  ck_assert(strstr(o.out, "\"template-id\":\"dsl-stream\""));
  if (vs)
    ck_assert_msg(strstr(o.err, "2 streamed") && strstr(o.err, "bodies not kept"), "%s", o.err);
  else
    ck_assert_msg(strstr(o.err, "2 over the kept body") && strstr(o.err, "bodies kept"), "%s",
                  o.err);
  prog_out_free(&o);
  o = run_templates("run/dsl-md5.yaml", "-u", base, NULL);
  ck_assert_int_eq(o.status, 0);
  ck_assert(strstr(o.out, "\"template-id\":\"dsl-md5\""));
  ck_assert_msg(strstr(o.err, "bodies kept"), "%s", o.err);
  prog_out_free(&o);
  char path[512];
  templates_path("cap/len-cut.yaml", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, "--max-body", "10k", NULL};
  o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "\"template-id\":\"len-cut\"") &&
                    strstr(o.out, "\"body-bytes\":10240,\"truncated\":true"),
                "%s", o.out);
  ck_assert_msg(!strstr(o.err, "bodies kept"), "%s", o.err);
  prog_out_free(&o);
  /* --validate -v says so per template. */
  char run[512], cap[512];
  templates_path("run", run, sizeof run);
  templates_path("cap", cap, sizeof cap);
  char *v[] = {getenv("SCAN_BIN"), "--validate", "-v", "-t", run, "-t", cap, NULL};
  o = run_program(v);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, vs ? "dsl-stream.yaml: body: streamed atoms and matchers (2, Vectorscan"
                                 : "dsl-stream.yaml: body: whole body (no streaming engine)"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "dsl-md5.yaml: body: whole body\n"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "dsl-favicon.yaml: body: whole body\n"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "len-cut.yaml: body: count only\n"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "dsl-named.yaml: body: none\n"), "%s", o.out);
  /* Words whose {{...}} are the scan's, the same in every scan, stream;
   * those of the target or random ones (kept out of the cached databases)
   * are matched for each response, over the kept body or the header part. */
  ck_assert_msg(strstr(o.out, vs ? "word-const.yaml: body: streamed atoms and matchers (3, Vectorscan"
                                 : "word-const.yaml: body: whole body (no streaming engine)"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "word-const.yaml: body: ") &&
                    strstr(strstr(o.out, "word-const.yaml: body: "),
                           "; {{...}} in words and regexes: 3 replaced once in the scan, 0 for each "
                           "response\n"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "word-rand.yaml: body: whole body; {{...}} in words and regexes: 0 "
                              "replaced once in the scan, 4 for each response\n"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "word-host.yaml: body: none; {{...}} in words and regexes: 0 replaced "
                              "once in the scan, 3 for each response\n"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "dsl-job-vals.yaml: body: whole body; {{...}} in words and regexes: 0 "
                              "replaced once in the scan, 1 for each response\n"),
                "%s", o.out);
  prog_out_free(&o);
  /* A value that would pass the engine's cap fails its expression. */
  o = run_templates("cap/hostile.yaml", "-u", base, "-s");
  ck_assert_int_eq(o.status, 0);
  ck_assert_str_eq(o.out, "");
  prog_out_free(&o);
  /* Not cut, the body is 1 MiB: len(body) is not 10240. */
  o = run_templates("cap/len-cut.yaml", "-u", base, NULL);
  ck_assert_int_eq(o.status, 0);
  ck_assert_str_eq(o.out, "");
  prog_out_free(&o);
}
END_TEST

/* The DSL table: each expression, in a dsl matcher of scan -t as
 * "(EXPR) == EXPECTED", matches the test server's response; the same with
 * a wrong expected value does not. The cases are written from the DSL
 * library's documentation of each function (projectdiscovery/dsl), with
 * inputs of this test's own; the hashes' values are the algorithms'. */
typedef struct dsl_case {
  const char *expr;
  char kind;         /* 's' string, 'n' number, 'b' bool */
  const char *value; /* as the DSL writes it, unquoted */
} dsl_case;

static const dsl_case TABLE[] = {
    /* strings */
    {"to_upper(\"scan me\")", 's', "SCAN ME"},
    {"to_lower(\"MiXeD\")", 's', "mixed"},
    {"tolower(\"ABC\")", 's', "abc"},
    {"toupper(\"abc\")", 's', "ABC"},
    {"to_title(\"hELLO wORLD\")", 's', "Hello World"},
    {"reverse(\"respchain\")", 's', "niahcpser"},
    {"replace(\"a-b-c\", \"-\", \"+\")", 's', "a+b+c"},
    {"replace_regex(\"id=42;\", \"[0-9]+\", \"N\")", 's', "id=N;"},
    {"trim(\"xxcorexx\", \"x\")", 's', "core"},
    {"trim_left(\"--flag--\", \"-\")", 's', "flag--"},
    {"trim_right(\"--flag--\", \"-\")", 's', "--flag"},
    {"trim_prefix(\"prefix-body\", \"prefix-\")", 's', "body"},
    {"trim_suffix(\"name.yaml\", \".yaml\")", 's', "name"},
    {"trim_space(\"   pad   \")", 's', "pad"},
    {"repeat(\"ab\", 3)", 's', "ababab"},
    {"repeat(\"-\", \"4\")", 's', "----"},
    {"repeat(7, 3)", 's', "777"},
    {"concat(\"a\", 1, \"b\", 2)", 's', "a1b2"},
    {"join(\"/\", \"usr\", \"local\", 7)", 's', "usr/local/7"},
    {"substr(\"abcdefgh\", 2, 5)", 's', "cde"},
    {"substr(\"abcdefgh\", 3)", 's', "defgh"},
    {"sort(\"dcba4321\")", 's', "1234abcd"},
    {"sort(53142)", 's', "12345"},
    {"uniq(\"aabbccaa\")", 's', "abc"},
    {"join(\",\", split(\"a;b;c\", \";\"))", 's', "a,b,c"},
    {"join(\",\", split(\"abcdefg\", 3))", 's', "abc,def,g"},
    {"join(\",\", split(\"a;b;c\", \";\", 2))", 's', "a,b;c"},
    {"join(\"|\", sort(\"z\", \"y\", \"x\"))", 's', "x|y|z"},
    {"join(\"|\", uniq(\"q\", \"w\", \"q\", \"e\"))", 's', "q|w|e"},
    {"padding(\"7\", \"0\", 3, \"prefix\")", 's', "007"},
    {"padding(\"ab\", \"-\", 4, \"suffix\")", 's', "ab--"},
    {"remove_bad_chars(\"a.b,c\", \".,\")", 's', "abc"},
    {"to_string(42)", 's', "42"},
    {"\"a\" + \"b\"", 's', "ab"},
    {"\"n\" + 1", 's', "n1"},
    {"status_code == 200 ? \"ok\" : \"no\"", 's', "ok"},
    /* numbers and bools */
    {"len(\"respchain\")", 'n', "9"},
    {"len(12345)", 'n', "5"},
    {"len(split(\"1.2.3\", \".\"))", 'n', "3"},
    {"count(\"mississippi\", \"ss\")", 'n', "2"},
    {"to_number(\"17\")", 'n', "17"},
    {"(2 + 3) * 4", 'n', "20"},
    {"10 / 4", 'n', "2.5"},
    {"7 % 3", 'n', "1"},
    {"-5 + 2", 'n', "-3"},
    {"hex_to_dec(\"1f\")", 'n', "31"},
    {"hex_to_dec(\"0x1f\")", 'n', "31"},
    {"oct_to_dec(\"17\")", 'n', "15"},
    {"bin_to_dec(\"1101\")", 'n', "13"},
    {"bin_to_dec(\"0b1101\")", 'n', "13"},
    {"contains(\"haystack\", \"st\")", 'b', "true"},
    {"contains_all(\"haystack\", \"hay\", \"stack\")", 'b', "true"},
    {"contains_any(\"haystack\", \"x\", \"y\")", 'b', "true"},
    {"starts_with(\"template\", \"temp\")", 'b', "true"},
    {"ends_with(\"template\", \"late\")", 'b', "true"},
    {"regex(\"^re[a-z]+n$\", \"respchain\")", 'b', "true"},
    {"\"abc\" =~ \"^a\"", 'b', "true"},
    {"\"abc\" !~ \"z\"", 'b', "true"},
    {"1 < 2 && \"b\" > \"a\"", 'b', "true"},
    {"to_bool(\"true\")", 'b', "true"},
    {"to_bool(0)", 'b', "false"},
    {"compare_versions(\"2.4.1\", \">=2.4.0\", \"<2.5\")", 'b', "true"},
    {"compare_versions(\"1.9\", \">2.0\")", 'b', "false"},
    /* codings */
    {"base64(\"respchain\")", 's', "cmVzcGNoYWlu"},
    {"base64_decode(\"c2Nhbg==\")", 's', "scan"},
    {"base64_py(\"scan\") == concat(base64(\"scan\"), hex_decode(\"0a\"))", 'b', "true"},
    {"hex_encode(\"scan\")", 's', "7363616e"},
    {"hex_decode(\"7363616e\")", 's', "scan"},
    {"url_encode(\"a/b?c=d&e\")", 's', "a%2Fb%3Fc%3Dd%26e"},
    {"url_decode(\"a%2Fb%3Fc\")", 's', "a/b?c"},
    {"html_escape(\"<b>\")", 's', "&lt;b&gt;"},
    {"html_unescape(\"&lt;i&gt;&amp;\")", 's', "<i>&"},
    {"dec_to_hex(255)", 's', "ff"},
    {"hex_encode(xor(\"ab\", \"  \"))", 's', "4142"},
    {"json_minify('{ \"b\": 1, \"a\": 2 }')", 's', "{\"a\":2,\"b\":1}"},
    {"gzip_decode(gzip(\"round trip\"))", 's', "round trip"},
    {"zlib_decode(zlib(\"payload\"))", 's', "payload"},
    {"inflate(deflate(\"payload\"))", 's', "payload"},
    /* hashes */
    {"md5(\"respchain\")", 's', "878499107ff0aa5646ab542e8ced051f"},
    {"sha1(\"respchain\")", 's', "5b9879647cc663d52675603ab66f680595f61eeb"},
    {"sha256(\"respchain\")", 's', "73b8a73e5cec1ab22026dc893852738f92db461b8b0236a6691f9ed5f7ef6a30"},
    {"sha512(\"respchain\")", 's',
     "8b03dacca6be729782c6fcc5ed11257443a27ad79a60c64b6ed1eadea3bf5d52abaa85104297c8b5974b29bcc961db4af2"
     "beec7631849d52033091809c3b083c"},
    {"mmh3(\"respchain\")", 's', "1042357847"},
    {"mmh3(\"favicon.ico\")", 's', "1099553486"},
    {"hmac(\"sha256\", \"message\", \"key\")", 's',
     "6e9ef29b75fffc5b7abae527d58fdadb2fe42e7219011976917343065f58ed4a"},
    {"hmac(\"sha1\", \"message\", \"key\")", 's', "2088df74d5f2146b48146caf4965377e9d0be3a4"},
};

/* The DSL literal of c's value, or of a wrong one, into out. */
static void dsl_literal(const dsl_case *c, int wrong, char *out, size_t cap)
{
  if (c->kind == 'n')
    snprintf(out, cap, "%s%s", c->value, wrong ? " + 1" : "");
  else if (c->kind == 'b')
    snprintf(out, cap, "%s", (!strcmp(c->value, "true") ^ wrong) ? "true" : "false");
  else if (strchr(c->value, '"'))
    snprintf(out, cap, "'%s%s'", c->value, wrong ? "x" : "");
  else
    snprintf(out, cap, "\"%s%s\"", c->value, wrong ? "x" : "");
}

/* A new directory under $TMPDIR (else /tmp) named prefix_XXXXXX, into dir. */
static void scratch_dir(char *dir, size_t cap, const char *prefix)
{
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(dir, cap, "%s/%s_XXXXXX", tmp, prefix);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* dir/name (its path into path, 512 bytes), created for writing. */
static FILE *created(char path[512], const char *dir, const char *name)
{
  ck_assert_int_lt(snprintf(path, 512, "%s/%s", dir, name), 512);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  return f;
}

/* scan -t over one template, yaml, written to a scratch directory of its
 * own (removed after), with args after it (at most 8, NULL-ended). */
static prog_out run_yaml(const char *yaml, const char *const args[])
{
  char dir[256], path[512];
  scratch_dir(dir, sizeof dir, "test_templates");
  FILE *f = created(path, dir, "t.yaml");
  fputs(yaml, f);
  ck_assert_int_eq(fclose(f), 0);
  char *argv[12] = {getenv("SCAN_BIN"), "-t", path};
  size_t n = 3;
  for (size_t i = 0; args[i]; i++) {
    ck_assert_uint_lt(n, 11);
    argv[n++] = (char *)args[i];
  }
  argv[n] = NULL;
  prog_out o = run_program(argv);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(rmdir(dir), 0);
  return o;
}

START_TEST(dsl_table)
{
  enum { N = sizeof TABLE / sizeof *TABLE };
  char dir[256];
  scratch_dir(dir, sizeof dir, "test_dsl_table");
  for (int i = 0; i < 2 * N; i++) {
    char path[512], want[512], name[32];
    snprintf(name, sizeof name, "t%03d%s.yaml", i / 2, i % 2 ? "-wrong" : "");
    dsl_literal(&TABLE[i / 2], i % 2, want, sizeof want);
    FILE *f = created(path, dir, name);
    fprintf(f,
            "id: table-%03d%s\ninfo: {name: t, severity: info}\nhttp:\n"
            "  - path: [\"{{BaseURL}}/html?title=Table\"]\n    matchers:\n"
            "      - type: dsl\n        dsl:\n          - |-\n            (%s) == %s\n",
            i / 2, i % 2 ? "-wrong" : "", TABLE[i / 2].expr, want);
    fclose(f);
  }
  char *argv[] = {getenv("SCAN_BIN"), "-t", dir, "-u", base, NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  char counts[64];
  snprintf(counts, sizeof counts, "%d loaded, 0 skipped; 1 clusters", 2 * N);
  ck_assert_msg(strstr(o.err, counts), "%s", o.err);
  char failed[4096] = "";
  for (int i = 0; i < 2 * N; i++) {
    char id[64];
    snprintf(id, sizeof id, "\"template-id\":\"table-%03d%s\"", i / 2, i % 2 ? "-wrong" : "");
    if ((strstr(o.out, id) == NULL) != (i % 2))
      snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "\n%s == %s: %s",
               TABLE[i / 2].expr, TABLE[i / 2].value, i % 2 ? "a wrong value matched" : "no match");
  }
  ck_assert_msg(!failed[0], "%s", failed);
  prog_out_free(&o);
  for (int i = 0; i < 2 * N; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/t%03d%s.yaml", dir, i / 2, i % 2 ? "-wrong" : "");
    unlink(path);
  }
  rmdir(dir);
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
  /* -v: how the payloads of one that waits combine; --attack-type (-at)
   * over the request's own. */
  char want[1200];
  o = run_templates("run/seq-payloads.yaml", "--validate", "-v", "-at");
  ck_assert_int_eq(o.status, 2); /* -at without its type */
  prog_out_free(&o);
  char run[560];
  templates_path("run", run, sizeof run);
  o = run_templates("run/seq-payloads.yaml", "--validate", "-v", NULL);
  snprintf(want, sizeof want,
           "payloads %s/seq-payloads.yaml: request 1: batteringram of word: 3 combinations\n", run);
  ck_assert_msg(strstr(o.out, want), "%s not in\n%s", want, o.out);
  prog_out_free(&o);
  char path[600];
  snprintf(path, sizeof path, "%s/payload-battering.yaml", dir);
  char *at[] = {getenv("SCAN_BIN"), "--validate", "-v", "-at", "Clusterbomb", "-t", path, NULL};
  o = run_program(at);
  ck_assert_int_eq(o.status, 0); /* its own attack, batteringram, takes one payload still */
  ck_assert_msg(strstr(o.out, "payloads: batteringram of 2 payloads"), "%s", o.out);
  prog_out_free(&o);
  snprintf(path, sizeof path, "%s/seq-payloads.yaml", run);
  at[4] = "pitchfork";
  o = run_program(at);
  snprintf(want, sizeof want, "payloads %s: request 1: pitchfork of word: 3 combinations\n", path);
  ck_assert_msg(strstr(o.out, want), "%s not in\n%s", want, o.out);
  prog_out_free(&o);
  /* run/ loads whole. */
  o = run_templates("run", "--validate", NULL, NULL);
  ck_assert_msg(strstr(o.out, "templates: 83 loaded, 0 skipped"), "%s", o.out);
  prog_out_free(&o);
  /* With skip/ beside it too: the json queries of all are compiled as one
   * program, and those of skip/ that fail are found among the others. */
  char *both[] = {getenv("SCAN_BIN"), "--validate", "-t", run, "-t", dir, NULL};
  o = run_program(both);
  snprintf(counts, sizeof counts, "templates: 83 loaded, %zu skipped", n);
  ck_assert_msg(strstr(o.out, counts), "%s", o.out);
  ck_assert_msg(strstr(o.out, "skip/json-syntax.yaml: json: syntax error"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "skip/json-undefined.yaml: json: no_such_function/0 is not defined"),
                "%s", o.out);
  prog_out_free(&o);
}
END_TEST

/* json extractors over hostile input (cap/json-hostile.yaml): a document
 * nested 100,000 arrays deep gives no values and no crash; programs that
 * loop or grow without end are ended at their bounds, and the plain
 * query beside them still answers. json and xpath keep the body whole. */
START_TEST(json_hostile)
{
  prog_out o = run_templates("cap/json-hostile.yaml", "-u", base, NULL);
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  char want[512];
  snprintf(want, sizeof want,
           "\"matched-at\":\"%s/json\",\"extracted-results\":[\"respchain-test\"]", base);
  ck_assert_msg(strstr(o.out, want), "%s", o.out);
  ck_assert_msg(!strstr(o.out, "nest=100000"), "%s", o.out);
  ck_assert_msg(strstr(o.err, "1 matched, 0 errors"), "%s", o.err);
  prog_out_free(&o);
  char run[512];
  templates_path("run", run, sizeof run);
  char *v[] = {getenv("SCAN_BIN"), "--validate", "-v", "-t", run, NULL};
  o = run_program(v);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "json.yaml: body: whole body\n"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "xpath.yaml: body: whole body\n"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "kval-cookie.yaml: body: none\n"), "%s", o.out);
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
  scratch_dir(dir, sizeof dir, "test_templates");
  for (int i = 0; i < N; i++) {
    char path[512], name[32];
    snprintf(name, sizeof name, "t%02d.yaml", i);
    FILE *f = created(path, dir, name);
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

/* Two targets, one name each for the server (127.0.0.1, localhost): each
 * target's requests carry its own values, in the URL, a header and the
 * body, for every payload combination of a raw sequence (values made once
 * per target and texts kept per job must not cross targets). */
START_TEST(targets_own_values)
{
  char local[160];
  snprintf(local, sizeof local, "http://localhost:%s", strrchr(base, ':') + 1);
  const char *args[] = {"-u", base, "-u", local, NULL};
  prog_out o = run_yaml(
      "id: own-values\ninfo: {name: v, severity: info}\nhttp:\n  - raw:\n"
      "      - |\n        POST /echo?h={{Hostname}}&u={{user}} HTTP/1.1\n"
      "        Host: {{Hostname}}\n        X-Host: {{Hostname}}\n\n        b={{Hostname}}\n"
      "      - |\n        GET /echo?again={{Hostname}}&u={{user}} HTTP/1.1\n"
      "        Host: {{Hostname}}\n        X-Host: {{Hostname}}\n\n"
      "    payloads:\n      user: [ann, bob]\n"
      "    matchers:\n      - type: regex\n"
      "        regex: ['(?s)[?&]h=([^&]+)&[^\\r]*\\r\\n.*X-Host: \\1\\r\\n.*b=\\1$']\n",
      args);
  ck_assert_msg(o.status == 0, "%s", o.err);
  /* Each combination's first request matches, at its own target. */
  const char *hosts[] = {"127.0.0.1", "localhost"}, *users[] = {"ann", "bob"};
  size_t lines = 0;
  for (const char *p = o.out; (p = strchr(p, '\n')) != NULL; p++)
    lines++;
  ck_assert_msg(lines == 4, "%s", o.out);
  for (int t = 0; t < 2; t++)
    for (int u = 0; u < 2; u++) {
      char want[256];
      const char *port = strrchr(base, ':') + 1; /* Hostname: host and port */
      snprintf(want, sizeof want, "\"matched-at\":\"http://%s:%s/echo?h=%s:%s&u=%s\"", hosts[t],
               port, hosts[t], port, users[u]);
      ck_assert_msg(strstr(o.out, want), "%s not in %s", want, o.out);
    }
  prog_out_free(&o);
}
END_TEST

/* -H's User-Agent with -t: sent once, in place of scan's own. */
START_TEST(agent_option)
{
  const char *args[] = {"-u", base, "-H", "User-Agent: cli/2", NULL};
  prog_out o = run_yaml(
      "id: agent-given\ninfo: {name: a, severity: info}\nhttp:\n"
      "  - path: [\"{{BaseURL}}/echo?agent=given\"]\n    matchers-condition: and\n"
      "    matchers:\n      - type: word\n        words: [\"\\r\\nUser-Agent: cli/2\\r\\n\"]\n"
      "      - type: regex\n        negative: true\n"
      "        regex: ['(?s)User-Agent:.*User-Agent:', 'respchain-scan']\n",
      args);
  ck_assert_msg(o.status == 0, "%s", o.err);
  ck_assert_msg(strstr(o.out, "\"template-id\":\"agent-given\""), "%s", o.out);
  prog_out_free(&o);
}
END_TEST

/* More words than one database of the engine holds (4,096: it compiles
 * them in parts, and streams a body through each part): a template wants
 * three words of its page, one at the start, one in the middle and one at
 * the end of the 9,003 its templates hold, and none of 9,000 absent words
 * between them; another wants the first and not the last; a third the
 * last absent word. One cluster holds them all, so the parts stream it
 * (a cluster's own database holds only some of them); an unbounded regex
 * that never hits keeps the stream from narrowing (which would compile a
 * database of those left). Twenty clusters of other pages each want a
 * word of their page that no other template has, never the regex and
 * never one of the last absent words (read last: a word's id is given
 * when first read, so their matchers are in the last part alone); ten of
 * them are blocks of 32 payload combinations (EVAL_HOT_COMBOS: their
 * responses come many times) and get a database of their own (a narrowed
 * one), the others, whose responses come once, go through that part's
 * stream alone (though 16 narrowed databases could be had), and all
 * match. */
START_TEST(words_in_parts)
{
  enum { ABSENT = 4500, LAST_ONLY = 20, HOTS = 10, HOT = 32 /* EVAL_HOT_COMBOS */ };
  static const char *const page = "/html?title=Alpha-one%20Beta-two%20Gamma-three";
  char dir[256], path[512];
  scratch_dir(dir, sizeof dir, "test_templates");
  FILE *f = created(path, dir, "parts.yaml");
  fprintf(f, "id: parts-and\ninfo: {name: p, severity: info}\nhttp:\n"
             "  - path: [\"{{BaseURL}}%s\"]\n    matchers-condition: and\n    matchers:\n",
          page);
  for (int m = 0; m < 3; m++) {
    static const char *const want[] = {"Alpha-one", "Beta-two", "Gamma-three"};
    fprintf(f, "      - type: word\n        words: [\"%s\"]\n", want[m]);
    for (int k = 0; m < 2 && k < ABSENT; k++)
      fprintf(f, "%s\"absent-%05d\"%s", k ? ", " : "      - type: word\n        negative: true\n"
                                                  "        words: [", m * ABSENT + k,
              k == ABSENT - 1 ? "]\n" : "");
  }
  fclose(f);
  f = created(path, dir, "others.yaml");
  fprintf(f, "id: parts-not-last\ninfo: {name: p, severity: info}\nhttp:\n"
             "  - path: [\"{{BaseURL}}%s\"]\n    matchers-condition: and\n    matchers:\n"
             "      - type: word\n        words: [\"Alpha-one\"]\n"
             "      - type: word\n        negative: true\n        words: [\"Gamma-three\"]\n"
             "      - type: regex\n        negative: true\n        regex: [\"absent-[a-z]+!\"]\n",
          page);
  fclose(f);
  char combos[HOT * 4] = "";
  for (int n = 0; n < HOT; n++)
    snprintf(combos + strlen(combos), sizeof combos - strlen(combos), "%s%d", n ? ", " : "", n);
  for (int c = 0; c < LAST_ONLY; c++) {
    char name[32];
    snprintf(name, sizeof name, "z-last-%02d.yaml", c);
    f = created(path, dir, name);
    fprintf(f, "id: parts-last-%02d\ninfo: {name: p, severity: info}\nhttp:\n"
               "  - path: [\"{{BaseURL}}/html?title=Zeta-last%%20alone-%02d%s\"]\n%s%s%s"
               "    matchers-condition: and\n    matchers:\n"
               "      - type: word\n        words: [\"Zeta-last\"]\n"
               "      - type: word\n        negative: true\n        words: [\"absent-%05d\"]\n"
               "      - type: regex\n        negative: true\n        regex: [\"absent-[a-z]+!\"]\n",
            c, c, c < HOTS ? "-{{n}}" : "", c < HOTS ? "    payloads:\n      n: [" : "",
            c < HOTS ? combos : "", c < HOTS ? "]\n" : "", 2 * ABSENT - 2 - c);
    fclose(f);
  }
  f = created(path, dir, "absent.yaml");
  fprintf(f, "id: parts-absent\ninfo: {name: p, severity: info}\nhttp:\n"
             "  - path: [\"{{BaseURL}}%s\"]\n    matchers:\n"
             "      - type: word\n        words: [\"absent-%05d\"]\n",
          page, 2 * ABSENT - 1);
  fclose(f);
  char *argv[] = {getenv("SCAN_BIN"), "-t", dir, "-u", base, NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  got g;
  fetch(page, NULL, NULL, 0, &g);
  int all = has(g.body, g.body_len, "Alpha-one") && has(g.body, g.body_len, "Beta-two") &&
            has(g.body, g.body_len, "Gamma-three") && !has(g.body, g.body_len, "absent-");
  ck_assert_msg(all, "the page lacks a word, or holds an absent one");
  ck_assert_msg(strstr(o.out, "\"template-id\":\"parts-and\""), "%s", o.out);
  ck_assert_msg(!strstr(o.out, "\"template-id\":\"parts-not-last\""), "%s", o.out);
  ck_assert_msg(!strstr(o.out, "\"template-id\":\"parts-absent\""), "%s", o.out);
  for (int c = 0; c < LAST_ONLY; c++) {
    char id[64];
    snprintf(id, sizeof id, "\"template-id\":\"parts-last-%02d\"", c);
    ck_assert_msg(strstr(o.out, id), "%s did not match", id);
  }
  /* Three parts and the narrowed databases, from the cache or compiled. */
  unsigned cached = 0, compiled = 0;
  const char *line = strstr(o.err, "databases: ");
  if (with_vectorscan()) {
    ck_assert_msg(line && sscanf(line, "databases: %u from the cache, %u compiled", &cached,
                                 &compiled) == 2, "%s", o.err);
    ck_assert_uint_eq(cached + compiled, 3 + HOTS);
  }
  prog_out_free(&o);
  const char *const names[] = {"parts.yaml", "others.yaml", "absent.yaml"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  for (int c = 0; c < LAST_ONLY; c++) {
    snprintf(path, sizeof path, "%s/z-last-%02d.yaml", dir, c);
    unlink(path);
  }
  rmdir(dir);
}
END_TEST

/* A cluster of a few words is matched by memmem as its body streams
 * (eval-literal.c), one of more words by the engine: both find a word
 * that two slices of the body split, in any case where the matcher says
 * so. The bodies come in chunks of 1000 bytes (curl hands each chunk to
 * the write callback on its own), and each word is the pattern's bytes
 * around a multiple of 1000. The templates ask for different lengths of
 * the same body, so that each is a cluster of its own. */
START_TEST(words_across_slices)
{
  enum { LEN = 20000, SPLIT = 6 };
  char dir[256], words[4][16];
  scratch_dir(dir, sizeof dir, "test_templates");
  /* Four words of printable bytes (no quote or backslash: they are written
   * in double quotes) across four chunk boundaries. */
  size_t nwords = 0;
  for (size_t at = 1000; at + SPLIT < LEN && nwords < 4; at += 1000) {
    unsigned char b[2 * SPLIT];
    ts_pattern_fill(b, at - SPLIT, sizeof b);
    int plain = 1;
    for (size_t i = 0; i < sizeof b; i++)
      plain &= b[i] >= ' ' && b[i] <= '~' && b[i] != '"' && b[i] != '\\';
    if (plain)
      snprintf(words[nwords++], sizeof words[0], "%.*s", (int)sizeof b, (const char *)b);
  }
  ck_assert_uint_eq(nwords, 4);
  /* Templates: [0] the word; [1] it in upper case, case-insensitive; [2]
   * it with a byte changed (absent); [3] it among nine absent words (the
   * engine's: more than a few). */
  char miss[16], upper[16];
  snprintf(miss, sizeof miss, "%s", words[1]);
  miss[SPLIT] = miss[SPLIT] == 'q' ? 'r' : 'q';
  for (size_t i = 0; i <= strlen(words[1]); i++)
    upper[i] = (char)toupper((unsigned char)words[1][i]);
  const char *matchers[4][2] = {
      {words[0], ""},
      {upper, "        case-insensitive: true\n"},
      {miss, ""},
      {words[3], ""},
  };
  for (int t = 0; t < 4; t++) {
    char path[512], name[32];
    snprintf(name, sizeof name, "w%d.yaml", t);
    FILE *f = created(path, dir, name);
    fprintf(f,
            "id: across-%d\ninfo: {name: a, severity: info}\nhttp:\n"
            "  - path: [\"{{BaseURL}}/bytes?n=%d&te=chunked&write=1000\"]\n"
            "    matchers:\n      - type: word\n%s        words: [\"%s\"",
            t, LEN + t, matchers[t][1], matchers[t][0]);
    for (int k = 0; t == 3 && k < 9; k++)
      fprintf(f, ", \"absent-%d\"", k);
    fprintf(f, "]\n");
    fclose(f);
  }
  char *argv[] = {getenv("SCAN_BIN"), "-t", dir, "-u", base, "-s", NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  for (int t = 0; t < 4; t++) {
    char want[64];
    snprintf(want, sizeof want, "\"template-id\":\"across-%d\"", t);
    ck_assert_msg(!!strstr(o.out, want) == (t != 2), "across-%d\n%s", t, o.out);
    char path[512];
    snprintf(path, sizeof path, "%s/w%d.yaml", dir, t);
    unlink(path);
  }
  prog_out_free(&o);
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

/* The number of lines of template id in scan's output. */
static size_t lines_of(const char *out, const char *id)
{
  char key[128];
  size_t n = 0;
  snprintf(key, sizeof key, "\"template-id\":\"%s\"", id);
  for (const char *p = out; (p = strstr(p, key)) != NULL; p++)
    n++;
  return n;
}

/* A sequence's cookies are its own: on one slot (-c 1), the independent
 * request of the page that comes after another target's login sequence
 * carries no cookie (the jar is emptied), and each target's sequence logs
 * in for itself. */
START_TEST(jar_apart)
{
  char path[512];
  templates_path("jar", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, "-u", base, "-c", "1", "-s", NULL};
  unsigned long before = ts_requests(srv);
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(ts_requests(srv) - before, 6); /* per target: the probe, the login, the page */
  ck_assert_uint_eq(lines_of(o.out, "jar-probe"), 2);
  ck_assert_uint_eq(lines_of(o.out, "jar-login"), 2);
  prog_out_free(&o);
}
END_TEST

/* The url and matched-at of template id's line in out, into url and at. */
static void line_urls(const char *out, const char *id, char *url, char *at, size_t cap)
{
  char want[128];
  snprintf(want, sizeof want, "{\"template-id\":\"%s\"", id);
  const char *l = strstr(out, want);
  ck_assert_ptr_nonnull(l);
  char one[4096];
  snprintf(one, sizeof one, "%.*s", (int)strcspn(l, "\n"), l);
  ck_assert(json_field(one, "url", url, cap)); /* nuclei's input: the URL */
  ck_assert(json_field(one, "matched-at", at, cap));
}

/* self-contained: the template's URL from -var values, requested once in
 * the scan (not once per target), its input (url) that URL; without the
 * values it sends nothing, as nuclei. A raw request's target that is such a URL is its
 * own whole (its query once). */
START_TEST(self_contained)
{
  char path[512], site[200], second[200], url[300], host[300], at[300];
  templates_path("self", path, sizeof path);
  snprintf(site, sizeof site, "site=%s", base);
  snprintf(second, sizeof second, "%s/sub", base);
  snprintf(url, sizeof url, "%s/html?title=self-ann", base);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path,   "-u",     base,       "-u", second,
                  "--var",            site, "--var", "who=ann", "-s", NULL};
  unsigned long before = ts_requests(srv);
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(ts_requests(srv) - before, 2);
  ck_assert_uint_eq(lines_of(o.out, "self-page"), 1);
  line_urls(o.out, "self-page", host, at, sizeof host);
  ck_assert_str_eq(host, url);
  ck_assert_str_eq(at, url);
  ck_assert_uint_eq(lines_of(o.out, "self-raw"), 1);
  snprintf(url, sizeof url, "%s/html?title=self-raw-ann", base);
  line_urls(o.out, "self-raw", host, at, sizeof host);
  ck_assert_str_eq(host, url);
  ck_assert_str_eq(at, url);
  prog_out_free(&o);
  /* Without the values: loaded, nothing planned, nothing sent. */
  char *bare[] = {getenv("SCAN_BIN"), "-t", path, "--validate", "-v", NULL};
  o = run_program(bare);
  ck_assert_msg(strstr(o.out, "templates: 2 loaded, 0 skipped; 0 clusters, 0 sequences"), "%s",
                o.out);
  ck_assert_msg(strstr(o.out, "self-page.yaml: site (its requests that read it are not sent"),
                "%s", o.out);
  ck_assert_msg(strstr(o.out, "self-raw.yaml: site (its requests that read it are not sent"),
                "%s", o.out);
  prog_out_free(&o);
  char *none[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, NULL};
  before = ts_requests(srv);
  o = run_program(none);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(ts_requests(srv) - before, 0);
  ck_assert_str_eq(o.out, "");
  ck_assert_msg(strstr(o.err, "2 read names nobody gives: 2 send no request"), "%s", o.err);
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
  char url[256];
  ck_assert(json_field(o.out, "url", url, sizeof url));
  ck_assert_str_eq(url, second);
  ck_assert_ptr_eq(strchr(o.out, '\n'), o.out + strlen(o.out) - 1); /* one line */
  prog_out_free(&o);
}
END_TEST

/* nuclei's -dr, -fr and -fhr with -mr (scan's -L) over redirect-max.yaml
 * (status 302 and "X-Hop: 1" over /hops?n=3, redirects: true,
 * max-redirects: 2): -dr follows none, so its only response (X-Hop: 3)
 * does not match; -fr -mr 3 follows to the final 200, and the response
 * of /hops?n=1 matches on its own; -fhr -mr 1 ends the chain at X-Hop: 2,
 * which does not match. The server counts each request. */
START_TEST(redirect_flags)
{
  static const struct {
    const char *flag, *limit, *at; /* at: the line's URL; NULL: no line */
    unsigned long requests;
  } runs[] = {{"-dr", NULL, NULL, 1}, {"-fr", "3", "/hops?n=1", 4}, {"-fhr", "1", NULL, 2}};
  char path[512];
  templates_path("run/redirect-max.yaml", path, sizeof path);
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, "-s", (char *)runs[i].flag,
                    runs[i].limit ? "-mr" : NULL, (char *)runs[i].limit, NULL};
    unsigned long before = ts_requests(srv);
    prog_out o = run_program(argv);
    ck_assert_msg(o.status == 0, "%s: %d: %s", runs[i].flag, o.status, o.err);
    ck_assert_uint_eq(ts_requests(srv) - before, runs[i].requests);
    char want[512] = "", at[512];
    if (runs[i].at)
      snprintf(want, sizeof want, "%s%s", base, runs[i].at);
    json_field(o.out, "matched-at", at, sizeof at);
    ck_assert_str_eq(at, want);
    ck_assert_ptr_eq(strchr(o.out, '\n'), runs[i].at ? o.out + strlen(o.out) - 1 : NULL);
    prog_out_free(&o);
  }
  char *plain[] = {getenv("SCAN_BIN"), "-fr", "-u", base, NULL}; /* the templates' flags */
  prog_out o = run_program(plain);
  ck_assert_int_eq(o.status, 2);
  prog_out_free(&o);
}
END_TEST

/* host-redirects holds when curl has a connection to the other host
 * already: the sequence's first request (@Host: localhost) leaves one
 * open, idle in curl's pool, and its second request's redirect points
 * there. The chain ends at that redirect, which matches (X-Hop: away): no
 * request goes to localhost over the connection that waits for it. */
START_TEST(redirect_host_reused)
{
  const char *args[] = {"-u", base, "-s", NULL};
  unsigned long before = ts_requests(srv);
  prog_out o = run_yaml("id: reused\n"
        "info: {name: Same host over a kept connection, severity: info}\n"
        "http:\n"
        "  - raw:\n"
        "      - |\n"
        "        @Host: localhost\n"
        "        GET /echo?at=kept HTTP/1.1\n"
        "      - |\n"
        "        GET /hops?n=1&away=localhost HTTP/1.1\n"
        "    host-redirects: true\n"
        "    matchers:\n"
        "      - type: word\n"
        "        part: x_hop\n"
        "        words: [\"away\"]\n",
        args);
  ck_assert_msg(o.status == 0, "%d: %s", o.status, o.err);
  ck_assert_uint_eq(ts_requests(srv) - before, 3); /* /echo, /hops?n=1, /hops?n=0&away=localhost */
  ck_assert_uint_eq(lines_of(o.out, "reused"), 1);
  prog_out_free(&o);
}
END_TEST

/* disable-path-automerge: a raw request's target is not merged with the
 * target's path, its query still is: /echo echoes its request line;
 * without it, the request goes to /deep/echo, which the server does not
 * serve (nuclei's raw parser merges the two paths). */
START_TEST(raw_automerge)
{
  char target[256];
  snprintf(target, sizeof target, "%s/deep?t=1", base);
  const char *args[] = {"-u", target, "-s", NULL};
  for (int off = 0; off <= 1; off++) {
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "id: merge\n"
             "info: {name: Path merge, severity: info}\n"
             "http:\n"
             "  - raw:\n"
             "      - |\n"
             "        GET /echo?x=1 HTTP/1.1\n"
             "        Host: {{Hostname}}\n"
             "%s"
             "    matchers:\n"
             "      - type: word\n"
             "        words: [\"GET /echo?t=1&x=1 HTTP/1.1\"]\n",
             off ? "    disable-path-automerge: true\n" : "");
    prog_out o = run_yaml(yaml, args);
    ck_assert_msg(o.status == 0, "%d: %s", o.status, o.err);
    ck_assert_msg(lines_of(o.out, "merge") == (size_t)off, "automerge %s: %s", off ? "off" : "on",
                  o.out);
    prog_out_free(&o);
  }
}
END_TEST

/* Runs scan with a template of one path over payload v (values, a YAML
 * list), its block's extra keys (more), matching word: the lines it
 * printed; the requests the server got into *requests. */
static size_t payload_run(const char *path_query, const char *values, const char *more,
                          const char *word, const char *flag, const char *value,
                          unsigned long *requests)
{
  char yaml[1024];
  int len = snprintf(yaml, sizeof yaml,
                     "id: lanes\n"
                     "info: {name: Payload combinations, severity: info}\n"
                     "http:\n"
                     "  - path: [\"{{BaseURL}}%s&v={{v}}\"]\n"
                     "    payloads:\n"
                     "      v: %s\n"
                     "%s"
                     "    matchers:\n"
                     "      - type: word\n"
                     "        words: [\"%s\"]\n",
                     path_query, values, more, word);
  ck_assert_int_lt(len, (int)sizeof yaml);
  const char *args[] = {"-u", base, "-s", flag, value, NULL};
  unsigned long before = ts_requests(srv);
  prog_out o = run_yaml(yaml, args);
  ck_assert_msg(o.status == 0, "%d: %s", o.status, o.err);
  *requests = ts_requests(srv) - before;
  size_t lines = lines_of(o.out, "lanes");
  prog_out_free(&o);
  return lines;
}

/* A payload block's combinations run side by side, as nuclei's payload
 * concurrency: the server's /gather answers "together N" only to N
 * requests in flight at once, "alone" to one that waited alone. Four
 * combinations are together (-pc's default, 25); with -pc 1 they come
 * one after another; a template's threads: wins over -pc; and
 * stop-at-first-match keeps them in turn, its first match the end. */
START_TEST(payload_lanes)
{
  unsigned long requests;
  ck_assert_uint_eq(payload_run("/gather?n=4", "[a, b, c, d]", "", "together 4", NULL, NULL,
                                &requests),
                    4);
  ck_assert_uint_eq(requests, 4);
  ck_assert_uint_eq(payload_run("/gather?n=2&ms=300", "[a, b]", "", "alone", "-pc", "1",
                                &requests),
                    2);
  ck_assert_uint_eq(requests, 2);
  ck_assert_uint_eq(payload_run("/gather?n=2", "[a, b]", "    threads: 2\n", "together 2", "-pc",
                                "1", &requests),
                    2);
  ck_assert_uint_eq(requests, 2);
  ck_assert_uint_eq(payload_run("/gather?n=2&ms=300", "[a, b, c]",
                                "    stop-at-first-match: true\n", "alone", NULL, NULL, &requests),
                    1);
  ck_assert_uint_eq(requests, 1);
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


/* nuclei's spellings of the options: long ones with one dash (-timeout
 * is not -t imeout, -tags=cve), the filters (with -t only), the run
 * controls; a value that looks like an option is left as it is. */
START_TEST(nuclei_options)
{
  char dir[512];
  templates_path("filter", dir, sizeof dir);
  char *scan = getenv("SCAN_BIN");
  char *a[] = {scan,  "-t",  dir, "--validate", "-timeout", "5",  "-tags=cve", "-severity",
               "critical,high", "-rl", "10", "-retries", "1", "-c", "2", "-bs", "3",
               "-silent", "-nc", "-j", "-jsonl", "-stats", "-si", "1", NULL};
  prog_out o = run_program(a);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "templates: 3 loaded, 1 skipped"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "templates: 4 left out by the filters"), "%s", o.out);
  prog_out_free(&o);
  /* Two dashes, nuclei's short names, and -a. */
  char *b[] = {scan, "-t", dir, "--validate", "--etags", "dos", "-es", "medium", "--type=http",
               "-eid", "*-0002", "-a", "alice,frank", "-pt", "http", NULL};
  o = run_program(b);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "templates: 1 loaded, 0 skipped"), "%s", o.out);
  ck_assert_msg(strstr(o.out, "templates: 7 left out by the filters"), "%s", o.out);
  prog_out_free(&o);
  /* A scan's summary counts them too. */
  char *c[] = {scan, "-t", dir, "-u", base, "-tags", "panel", NULL};
  o = run_program(c);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.err, "scan: templates: 1 loaded, 0 skipped; 1 clusters, 1 requests"),
                "%s", o.err);
  ck_assert_msg(strstr(o.err, "scan: templates: 7 left out by the filters"), "%s", o.err);
  prog_out_free(&o);
  static const struct {
    const char *args[5], *why;
  } bad[] = {
      {{"--shard", "-stats"}, "invalid shard (K/N with 1 <= K <= N) '-stats'"},
      {{"-t", "x", "-severity", "severe"}, "invalid severity"},
      {{"-t", "x", "-type", "network"}, "invalid protocol type"},
      {{"-t", "x", "-tags", ","}, "empty list"},
      {{"-tags", "cve", "-u", "http://127.0.0.1:1"}, "the filters choose templates: give -t"},
      {{"-c", "1000", "-bs", "1000"}, "-c x -bs above 100000"},
      {{"-bs", "0"}, "invalid bulk size"},
      {{"-si", "0"}, "invalid interval"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *argv[7] = {scan};
    for (size_t k = 0; k < 5 && bad[i].args[k]; k++)
      argv[k + 1] = (char *)bad[i].args[k];
    o = run_program(argv);
    ck_assert_msg(o.status == 2, "%s: status %d", bad[i].why, o.status);
    ck_assert_msg(strstr(o.err, bad[i].why), "%s not in %s", bad[i].why, o.err);
    prog_out_free(&o);
  }
}
END_TEST

/* -stats: nuclei's line on stderr, at least its last one at the end,
 * with the run's counts; -je: the lines as one JSON array. */
START_TEST(stats_and_export)
{
  char path[512], json[256];
  templates_path("run/status-404.yaml", path, sizeof path);
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(json, sizeof json, "%s/test_templates_je_%d.json", tmp, (int)getpid());
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, "-stats", "-je", json, NULL};
  prog_out o = run_program(argv);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "\"template-id\":\"status-404\""), "%s", o.out);
  unsigned long lines = 0;
  for (const char *p = o.out; (p = strchr(p, '\n')) != NULL; p++)
    lines++;
  /* The last line of stderr that starts with '[': the last stats line. */
  const char *last = NULL;
  for (const char *p = o.err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (*p == '[')
      last = p;
  ck_assert_msg(last, "no stats line in %s", o.err);
  unsigned h, m, sec;
  size_t templates;
  unsigned long hosts, rps, matched, errors, done, total, pct;
  char end = 0;
  int n = sscanf(last,
                 "[%u:%2u:%2u] | Templates: %zu | Hosts: %lu | RPS: %lu | Matched: %lu | "
                 "Errors: %lu | Requests: %lu/%lu (%lu%%)%c",
                 &h, &m, &sec, &templates, &hosts, &rps, &matched, &errors, &done, &total, &pct,
                 &end);
  ck_assert_msg(n == 12 && end == '\n', "%d fields: %s", n, last);
  ck_assert_uint_eq(templates, 1);
  ck_assert_uint_eq(hosts, 1);
  ck_assert_uint_eq(matched, lines);
  ck_assert_uint_eq(errors, 0);
  ck_assert_uint_eq(done, 1);
  ck_assert_uint_eq(total, 1);
  ck_assert_uint_eq(pct, 100);
  /* The export: "[", the lines joined by ",", "]". */
  FILE *f = fopen(json, "r");
  ck_assert_ptr_nonnull(f);
  char array[8192] = "", want[8192] = "[\n";
  size_t len = fread(array, 1, sizeof array - 1, f);
  array[len] = '\0';
  fclose(f);
  unlink(json);
  for (const char *p = o.out; *p;) {
    const char *nl = strchr(p, '\n');
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%.*s", p == o.out ? "" : ",\n",
             (int)(nl - p), p);
    p = nl + 1;
  }
  snprintf(want + strlen(want), sizeof want - strlen(want), "\n]\n");
  ck_assert_str_eq(array, want);
  prog_out_free(&o);
}
END_TEST

/* The extracted-results of template id in scan's lines ('|'-joined), of
 * its first line, or of each followed by ";" (all), into out ("" when it
 * has no line); the count of its lines. */
static int extracts(const char *lines, const char *id, char *out, size_t cap, int all)
{
  int n = 0;
  out[0] = '\0';
  for (const char *l = lines; *l;) {
    const char *end = strchr(l, '\n');
    ck_assert_ptr_nonnull(end);
    char one[8192], v[256], x[1024];
    snprintf(one, sizeof one, "%.*s", (int)(end - l), l);
    if (json_field(one, "template-id", v, sizeof v) && !strcmp(v, id) && (n++ == 0 || all) &&
        json_field(one, "extracted-results", x, sizeof x))
      snprintf(out + strlen(out), cap - strlen(out), all ? "%s;" : "%s", x);
    l = end + 1;
  }
  return n;
}

static int extracts_of(const char *lines, const char *id, char *out, size_t cap)
{
  return extracts(lines, id, out, cap, 0);
}

static int all_extracts_of(const char *lines, const char *id, char *out, size_t cap)
{
  return extracts(lines, id, out, cap, 1);
}

/* order/: the verdicts of matchers that read a named extractor's value,
 * and of matchers that decide alone beside extractors. As nuclei, the
 * extractors run first and their named values are the DSL's variables
 * for the matchers; a request that does not match writes no line. The
 * verdicts are written here by hand: /headers answers 200 with the body
 * "hello". */
START_TEST(matchers_and_values)
{
  char path[512], have[256];
  templates_path("order", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, NULL};
  prog_out o = run_program(argv);
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  ck_assert_msg(strstr(o.err, "5 loaded, 0 skipped; 1 clusters"), "%s", o.err);
  ck_assert_int_eq(extracts_of(o.out, "order-named", have, sizeof have), 1);
  ck_assert_str_eq(have, "ell");
  ck_assert_int_eq(extracts_of(o.out, "order-or", have, sizeof have), 1);
  ck_assert_str_eq(have, "ell");
  ck_assert_int_eq(extracts_of(o.out, "order-plain", have, sizeof have), 1);
  ck_assert_str_eq(have, "e");
  ck_assert_uint_eq(lines_of(o.out, "order-status"), 0);
  ck_assert_uint_eq(lines_of(o.out, "order-plain-miss"), 0);
  prog_out_free(&o);
}
END_TEST

/* Runs scan -t vars/ with -var arguments (NULL: none) against the server. */
static prog_out run_vars(const char *a1, const char *a2, const char *a3, const char *a4)
{
  char path[512];
  templates_path("vars", path, sizeof path);
  char *argv[] = {getenv("SCAN_BIN"), "-t", path, "-u", base, (char *)a1, (char *)a2,
                  (char *)a3, (char *)a4, NULL};
  return run_program(argv);
}

/* vars/: constants, variables (each using those before it and helpers),
 * {{expr}} in paths, headers, bodies and raw requests, as /echo saw them.
 * The expected values are written here by hand (base64, md5 and sha1 of
 * the literals as coreutils' base64, md5sum and sha1sum give them), not by
 * templates_eval.c. */
START_TEST(variables)
{
  const char *port = strrchr(base, ':') + 1;
  char want[2048], have[2048];
  unsigned long before = ts_requests(srv);
  prog_out o = run_vars(NULL, NULL, NULL, NULL);
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  /* 13 templates; random-a and random-b apart, shared-a and shared-b one;
   * unsent.yaml's request not sent; unresolved.yaml a sequence of four
   * requests of which two are sent; unresolved-only.yaml not planned. */
  ck_assert_msg(strstr(o.err, "13 loaded, 0 skipped; 14 clusters, 11 requests"), "%s", o.err);
  ck_assert_uint_eq(ts_requests(srv) - before, 11);
  ck_assert_msg(strstr(o.err, "scan: templates: 1 requests not sent, an expression failed "
                              "(first: vars-unsent: "),
                "%s", o.err);
  ck_assert_int_eq(extracts_of(o.out, "vars-unsent", have, sizeof have), 0);
  ck_assert_msg(strstr(o.err, "scan: templates: 2 read names nobody gives: 1 send no request, "
                              "1 only those before the first that reads one"),
                "%s", o.err);

  /* unresolved.yaml: the first raw request and the second block sent;
   * unresolved-only.yaml nothing. */
  ck_assert_int_eq(all_extracts_of(o.out, "vars-unresolved", have, sizeof have), 2);
  ck_assert_str_eq(have, "/echo?step=1;/echo?block=2;");
  ck_assert_int_eq(extracts_of(o.out, "vars-unresolved-only", have, sizeof have), 0);
  /* skip-check.yaml: what nobody gives sent as written. */
  ck_assert_int_eq(extracts_of(o.out, "vars-skip-check", have, sizeof have), 1);
  ck_assert_str_eq(have, "POST /echo?m=mark|a={{nobody}}&b={{config.items()}}&c={{7*7}}");

  /* exprs.yaml: the nonce is 12 letters, the same in the path and a
   * header (the template's own regex checks it too: it matched). */
  ck_assert_int_eq(extracts_of(o.out, "vars-exprs", have, sizeof have), 1);
  const char *n = strstr(have, "&n=");
  ck_assert_ptr_nonnull(n);
  char nonce[13];
  snprintf(nonce, sizeof nonce, "%s", n + 3);
  ck_assert_uint_eq(strspn(nonce, "abcdefghijklmnopqrstuvwxyz"), 12);
  snprintf(want, sizeof want,
           "/echo?u=admin%%20s3cret&n=%s|Authorization: Basic YWRtaW46czNjcmV0|X-Nonce: %s|"
           "X-Host: f528764d624db129b32c21fbca0cb8d6|X-Upper: HTTP-%s|"
           "len=16&h=21232f297a57a5a743894a0e4a801fc3&q=YWRtaW46eA==&lit={{2+2}}&"
           "s={{'as is'}}&n={{ - }}&t={{open",
           nonce, nonce, port);
  ck_assert_str_eq(have, want);

  /* raw.yaml: the sha1 of Hostname is 40 hex digits. */
  ck_assert_int_eq(extracts_of(o.out, "vars-raw", have, sizeof have), 1);
  ck_assert_msg(!strncmp(have, "PUT /echo?raw=abc|", 18), "%s", have);
  ck_assert_msg(strlen(have) == 18 + 40 + 7 && strspn(have + 18, "0123456789abcdef") == 40 &&
                    !strcmp(have + 18 + 40, "|ababab"),
                "%s", have);

  /* random-a and random-b: each its own value; shared-a and shared-b one. */
  char a[256], b[256];
  ck_assert_int_eq(extracts_of(o.out, "vars-random-a", a, sizeof a), 1);
  ck_assert_int_eq(extracts_of(o.out, "vars-random-b", b, sizeof b), 1);
  ck_assert_uint_eq(strlen(a), 10);
  ck_assert_uint_eq(strlen(b), 10);
  ck_assert_str_ne(a, b);
  ck_assert_int_eq(extracts_of(o.out, "vars-shared-a", a, sizeof a), 1);
  ck_assert_int_eq(extracts_of(o.out, "vars-shared-b", b, sizeof b), 1);
  ck_assert_str_eq(a, "/echo?h=127.0.0.1&s=6162");
  ck_assert_str_eq(b, a);

  /* randstr.yaml: randstr_1 twice the same, randstr_2 another, randstr a
   * third (distinct values in order: three), each of nuclei's shape, a
   * KSUID: 27 letters and digits. */
  static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  ck_assert_int_eq(extracts_of(o.out, "vars-randstr", have, sizeof have), 1);
  ck_assert_msg(strlen(have) == 3 * 27 + 2 && have[27] == '|' && have[55] == '|' &&
                    strspn(have, alnum) == 27 && strspn(have + 28, alnum) == 27 &&
                    strspn(have + 56, alnum) == 27 && strncmp(have, have + 28, 27) &&
                    strncmp(have, have + 56, 27) && strncmp(have + 28, have + 56, 27),
                "%s", have);

  /* override.yaml, without -var, then with it (its spellings). */
  ck_assert_int_eq(extracts_of(o.out, "vars-override", have, sizeof have), 1);
  ck_assert_str_eq(have, "/echo?g=hi-template&w=template&f=const");
  /* dsl.yaml: its expressions see the values its request was made with. */
  ck_assert_int_eq(extracts_of(o.out, "vars-dsl", have, sizeof have), 1);
  ck_assert_str_eq(have, "TEMPLATE-const");
  prog_out_free(&o);
  const char *spellings[][2] = {{"--var", "who=cli"}, {"-var", "who=cli"}, {"-V", "who=cli"}};
  for (size_t i = 0; i < 3; i++) {
    o = run_vars(spellings[i][0], spellings[i][1], "--var", "fixed=cli");
    ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
    ck_assert_int_eq(extracts_of(o.out, "vars-override", have, sizeof have), 1);
    ck_assert_str_eq(have, "/echo?g=hi-cli&w=cli&f=const");
    ck_assert_int_eq(extracts_of(o.out, "vars-dsl", have, sizeof have), 1);
    ck_assert_str_eq(have, "CLI-const");
    prog_out_free(&o);
  }
  /* -var gives the names: every request of unresolved.yaml and
   * unresolved-only.yaml sent, in order, with them. */
  o = run_vars("--var", "login=ann", "-var", "api_token=t0k");
  ck_assert_msg(o.status == 0, "scan: %d: %s", o.status, o.err);
  ck_assert_msg(!strstr(o.err, "names nobody gives"), "%s", o.err);
  ck_assert_int_eq(all_extracts_of(o.out, "vars-unresolved", have, sizeof have), 4);
  ck_assert_str_eq(have, "/echo?step=1;/echo?step=2&u=ann|YW5uOnB3;/echo?step=3;/echo?block=2;");
  ck_assert_int_eq(extracts_of(o.out, "vars-unresolved-only", have, sizeof have), 1);
  ck_assert_str_eq(have, "/echo?token=t0k");
  prog_out_free(&o);
  /* A later -var of a name wins; a bad one is a usage error. */
  o = run_vars("--var", "who=one", "--var", "who=two");
  ck_assert_int_eq(extracts_of(o.out, "vars-override", have, sizeof have), 1);
  ck_assert_str_eq(have, "/echo?g=hi-two&w=two&f=const");
  prog_out_free(&o);
  o = run_vars("--var", "=x", NULL, NULL);
  ck_assert_int_eq(o.status, 2);
  ck_assert_msg(strstr(o.err, "invalid variable"), "%s", o.err);
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
  tcase_add_test(tc, dsl_bodies);
  tcase_add_test(tc, dsl_table);
  tcase_add_test(tc, shard);
  tcase_add_test(tc, jar_apart);
  tcase_add_test(tc, self_contained);
  tcase_add_test(tc, redirect_flags);
  tcase_add_test(tc, payload_lanes);
  tcase_add_test(tc, redirect_host_reused);
  tcase_add_test(tc, raw_automerge);
  tcase_add_test(tc, many_clusters);
  tcase_add_test(tc, words_in_parts);
  tcase_add_test(tc, agent_option);
  tcase_add_test(tc, targets_own_values);
  tcase_add_test(tc, words_across_slices);
  tcase_add_test(tc, cut_and_failed);
  tcase_add_test(tc, json_hostile);
  tcase_add_test(tc, early_stop);
  tcase_add_test(tc, validate);
  tcase_add_test(tc, usage);
  tcase_add_test(tc, variables);
  tcase_add_test(tc, matchers_and_values);
  tcase_add_test(tc, nuclei_options);
  tcase_add_test(tc, stats_and_export);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? 1 : 0;
}
