/* The scan example, run as a program: it scans a targets file against the
 * loopback server, and every JSON line it prints is parsed and checked:
 * status, hops, body size, truncation, encoding, errors, and the matchers
 * (--status, --word, --regex, on the body, the header block and both).
 * Then the demo runs once under a memory budget.
 *
 * The scan binary's path comes from the environment variable SCAN_BIN. */
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"

extern char **environ;

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define MAX_BODY (4 * MiB) /* --max-body of every run but the demo */

/* ---- The targets -------------------------------------------------------- */

typedef enum { BODY_PATTERN, BODY_ZEROS, BODY_HELLO, BODY_NONE } body_kind;

typedef struct target {
  const char *path;     /* NULL: the unreachable port */
  int status;           /* final status; 0 for no response */
  int hops;
  size_t body;          /* body_bytes */
  body_kind kind;       /* what the body holds */
  const char *encoding;
  int truncated;
} target;

static const target TARGETS[] = {
    {"/bytes?n=1000", 200, 1, 1000, BODY_PATTERN, "identity", 0},
    {"/bytes?n=100k&te=chunked", 200, 1, 100 * KiB, BODY_PATTERN, "identity", 0},
    {"/bytes?n=3M", 200, 1, 3 * MiB, BODY_PATTERN, "identity", 0},
    {"/gzip?n=200k&coding=gzip", 200, 1, 200 * KiB, BODY_PATTERN, "decoded", 0},
    {"/gzip?n=50k&coding=deflate", 200, 1, 50 * KiB, BODY_PATTERN, "decoded", 0},
    /* Four redirects (n=3..0), then the final /bytes?n=10. */
    {"/redirect?n=3", 200, 5, 10, BODY_PATTERN, "identity", 0},
    {"/status?code=404&n=100", 404, 1, 100, BODY_PATTERN, "identity", 0},
    {"/status?code=204", 204, 1, 0, BODY_NONE, "identity", 0},
    /* 1 GiB of zeros, gzipped: cut at --max-body. */
    {"/bomb", 200, 1, MAX_BODY, BODY_ZEROS, "decoded", 1},
    {"/headers", 200, 1, 5, BODY_HELLO, "identity", 0},
    {"/encoding?value=br&n=100", 200, 1, 100, BODY_PATTERN, "unsupported", 0},
    {NULL, 0, 0, 0, BODY_NONE, "identity", 0},
};
#define NTARGETS (sizeof TARGETS / sizeof TARGETS[0])
#define REDIRECT 5 /* the index of the redirect chain */

static int down_fd = -1;       /* bound but not listening: connections fail */
static char down_url[64];
static char urls[NTARGETS][160];
static char targets_path[256], out_path[256];
static unsigned char *pattern; /* the first MAX_BODY bytes of the pattern */

static void setup(void)
{
  srv = ts_start();
  ck_assert_ptr_nonnull(srv);
  pattern = malloc(MAX_BODY);
  ck_assert_ptr_nonnull(pattern);
  ts_pattern_fill(pattern, 0, MAX_BODY);

  struct sockaddr_in addr;
  socklen_t alen = sizeof addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  down_fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(down_fd, 0);
  ck_assert_int_eq(bind(down_fd, (struct sockaddr *)&addr, sizeof addr), 0);
  ck_assert_int_eq(getsockname(down_fd, (struct sockaddr *)&addr, &alen), 0);
  snprintf(down_url, sizeof down_url, "http://127.0.0.1:%d/", ntohs(addr.sin_port));

  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(targets_path, sizeof targets_path, "%s/test_scan_targets_XXXXXX", tmp);
  snprintf(out_path, sizeof out_path, "%s/test_scan_out_XXXXXX", tmp);
  int fd = mkstemp(targets_path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs("# scan test targets\n\n", f);
  for (size_t i = 0; i < NTARGETS; i++) {
    if (TARGETS[i].path)
      ts_url(srv, TARGETS[i].path, urls[i], sizeof urls[i]);
    else
      snprintf(urls[i], sizeof urls[i], "%s", down_url);
    fprintf(f, "%s%s\n", i % 2 ? "  " : "", urls[i]);  /* white space is dropped */
  }
  ck_assert_int_eq(fclose(f), 0);
  fd = mkstemp(out_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

static void teardown(void)
{
  unlink(targets_path);
  unlink(out_path);
  close(down_fd);
  free(pattern);
  ts_stop(srv);
}

/* The body a target's response holds. */
static void expected_body(const target *t, const unsigned char **p, size_t *len)
{
  static const unsigned char zeros[MAX_BODY];
  *len = t->body;
  switch (t->kind) {
  case BODY_PATTERN: *p = pattern; break;
  case BODY_ZEROS: *p = zeros; break;
  case BODY_HELLO: *p = (const unsigned char *)"hello"; break;
  default: *p = (const unsigned char *)""; break;
  }
}

static int body_contains(const target *t, const char *needle, size_t nlen)
{
  const unsigned char *p;
  size_t len;
  expected_body(t, &p, &len);
  for (size_t i = 0; i + nlen <= len; i++)
    if (memcmp(p + i, needle, nlen) == 0)
      return 1;
  return 0;
}

/* ---- Running scan ------------------------------------------------------- */

/* Runs SCAN_BIN with args (NULL-terminated, without argv[0]); its stdout
 * goes to out_path, its stderr to ours. Returns its exit status. */
static int run_scan(const char *const *args)
{
  const char *bin = getenv("SCAN_BIN");
  ck_assert_msg(bin && *bin, "SCAN_BIN is not set");
  const char *argv[32];
  size_t n = 0;
  argv[n++] = bin;
  while (*args && n < 31)
    argv[n++] = *args++;
  argv[n] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int err = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ck_assert_msg(err == 0, "cannot run %s: %s", bin, strerror(err));
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status), "scan died (status %d)", status);
  return WEXITSTATUS(status);
}

/* ---- A JSON line -------------------------------------------------------- */

/* The fields of one output line. Strings are unescaped; a null string is
 * marked by its *_null flag. */
typedef struct record {
  char url[256], final_url[256], encoding[32], error[512];
  int final_url_null, error_null;
  long status, hops;
  size_t body_bytes;
  int truncated, matched;
  double time_ms;
  unsigned seen; /* bit per field found */
} record;

static const char *skip_ws(const char *p)
{
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

static int hex(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A JSON string at p (at its opening quote) into out; returns the position
 * after the closing quote, or NULL if malformed or too long. Control bytes
 * must be escaped; \u escapes must stay below 0x100 (all scan writes). */
static const char *json_str(const char *p, char *out, size_t cap)
{
  size_t n = 0;
  if (*p++ != '"')
    return NULL;
  while (*p != '"') {
    unsigned char c = (unsigned char)*p++;
    if (c < 0x20)
      return NULL;
    if (c == '\\') {
      char e = *p++;
      switch (e) {
      case '"': case '\\': case '/': c = (unsigned char)e; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'u':
        if (p[0] != '0' || p[1] != '0' || hex(p[2]) < 0 || hex(p[3]) < 0)
          return NULL;
        c = (unsigned char)(hex(p[2]) * 16 + hex(p[3]));
        p += 4;
        break;
      default: return NULL;
      }
    }
    if (n + 1 >= cap)
      return NULL;
    out[n++] = (char)c;
  }
  out[n] = '\0';
  return p + 1;
}

/* Copies a string into a field; -1 if it does not fit. */
static int set_str(char *dst, size_t cap, const char *src)
{
  size_t n = strlen(src);
  if (n >= cap)
    return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

/* A flat JSON object of strings, numbers, booleans and nulls into r.
 * Returns 0, or -1 when the line is not such an object. */
static int parse_record(const char *line, record *r)
{
  static const char *const keys[] = {
      "url", "final_url", "status", "hops", "body_bytes", "truncated",
      "encoding", "matched", "error", "time_ms"};
  memset(r, 0, sizeof *r);
  const char *p = skip_ws(line);
  if (*p++ != '{')
    return -1;
  for (;;) {
    char key[32], str[512];
    p = skip_ws(p);
    if (!(p = json_str(p, key, sizeof key)))
      return -1;
    p = skip_ws(p);
    if (*p++ != ':')
      return -1;
    p = skip_ws(p);
    int is_null = 0, is_bool = 0, is_str = 0, boolean = 0;
    double num = 0;
    if (*p == '"') {
      if (!(p = json_str(p, str, sizeof str)))
        return -1;
      is_str = 1;
    } else if (!strncmp(p, "null", 4)) {
      is_null = 1, p += 4;
    } else if (!strncmp(p, "true", 4)) {
      is_bool = boolean = 1, p += 4;
    } else if (!strncmp(p, "false", 5)) {
      is_bool = 1, p += 5;
    } else {
      char *end;
      num = strtod(p, &end);
      if (end == p)
        return -1;
      p = end;
    }
    size_t k = 0;
    while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k], key) != 0)
      k++;
    if (k == sizeof keys / sizeof keys[0] || (r->seen & (1u << k)))
      return -1;  /* unknown or repeated key */
    r->seen |= 1u << k;
    int num_ok = !is_str && !is_null && !is_bool;
    switch (k) {
    case 0: if (!is_str || set_str(r->url, sizeof r->url, str)) return -1; break;
    case 1:
      if (!is_str && !is_null) return -1;
      r->final_url_null = is_null;
      if (set_str(r->final_url, sizeof r->final_url, is_str ? str : ""))
        return -1;
      break;
    case 2: if (!num_ok) return -1; r->status = (long)num; break;
    case 3: if (!num_ok) return -1; r->hops = (long)num; break;
    case 4: if (!num_ok) return -1; r->body_bytes = (size_t)num; break;
    case 5: if (!is_bool) return -1; r->truncated = boolean; break;
    case 6: if (!is_str || set_str(r->encoding, sizeof r->encoding, str)) return -1; break;
    case 7: if (!is_bool) return -1; r->matched = boolean; break;
    case 8:
      if (!is_str && !is_null) return -1;
      r->error_null = is_null;
      if (set_str(r->error, sizeof r->error, is_str ? str : ""))
        return -1;
      break;
    default: if (!num_ok) return -1; r->time_ms = num; break;
    }
    p = skip_ws(p);
    if (*p == '}')
      break;
    if (*p++ != ',')
      return -1;
  }
  p = skip_ws(p + 1);
  return *p == '\0' || *p == '\n' ? 0 : -1;
}

/* Reads scan's output: every line must be a record with all fields.
 * Returns the number of records; *out (malloc'd) holds them. */
static size_t read_records(record **out)
{
  FILE *f = fopen(out_path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = 0, room = 0;
  record *recs = NULL;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) >= 0) {
    if (n == room) {
      room = room ? 2 * room : 64;
      recs = realloc(recs, room * sizeof *recs);
      ck_assert_ptr_nonnull(recs);
    }
    ck_assert_msg(parse_record(line, &recs[n]) == 0, "not a scan record: %s", line);
    ck_assert_msg(recs[n].seen == (1u << 10) - 1, "fields missing: %s", line);
    ck_assert_msg(strchr(line, '\n') != NULL, "unterminated line: %s", line);
    n++;
  }
  free(line);
  fclose(f);
  *out = recs;
  return n;
}

/* Runs scan over the targets file with the given extra options, checks that
 * it exits 0 with one record per target, and orders the records like
 * TARGETS (scan prints them in completion order). */
static void scan_targets(const char *const *opts, record *by_target)
{
  const char *args[24] = {"-l", targets_path, "-c", "4", "--max-body", "4M"};
  size_t n = 6;
  while (*opts && n < 23)
    args[n++] = *opts++;
  args[n] = NULL;
  ck_assert_int_eq(run_scan(args), 0);
  record *recs;
  size_t count = read_records(&recs);
  ck_assert_uint_eq(count, NTARGETS);
  int found[NTARGETS] = {0};
  for (size_t i = 0; i < count; i++) {
    size_t t = 0;
    while (t < NTARGETS && strcmp(urls[t], recs[i].url) != 0)
      t++;
    ck_assert_msg(t < NTARGETS, "unknown url %s", recs[i].url);
    ck_assert_msg(!found[t], "url twice: %s", recs[i].url);
    found[t] = 1;
    by_target[t] = recs[i];
  }
  free(recs);
}

/* Checks matched against want(target) for every target. */
static void check_matched(const record *r, int (*want)(const target *), const char *what)
{
  for (size_t i = 0; i < NTARGETS; i++)
    ck_assert_msg(r[i].matched == want(&TARGETS[i]), "%s: %s matched %d", what,
                  urls[i], r[i].matched);
}

/* ---- Tests -------------------------------------------------------------- */

/* Without matchers: every field of every target. */
START_TEST(fields)
{
  record r[NTARGETS];
  const char *const opts[] = {NULL};
  scan_targets(opts, r);
  for (size_t i = 0; i < NTARGETS; i++) {
    const target *t = &TARGETS[i];
    const record *g = &r[i];
    ck_assert_msg(g->status == t->status, "%s: status %ld", urls[i], g->status);
    ck_assert_msg(g->hops == t->hops, "%s: hops %ld", urls[i], g->hops);
    ck_assert_msg(g->body_bytes == t->body, "%s: body_bytes %zu", urls[i], g->body_bytes);
    ck_assert_msg(g->truncated == t->truncated, "%s: truncated %d", urls[i], g->truncated);
    ck_assert_msg(!strcmp(g->encoding, t->encoding), "%s: encoding %s", urls[i], g->encoding);
    ck_assert_msg(g->time_ms >= 0, "%s: time_ms %f", urls[i], g->time_ms);
    if (t->path) {
      ck_assert_msg(g->error_null, "%s: error %s", urls[i], g->error);
      ck_assert_msg(g->matched, "%s: a response without matchers matches", urls[i]);
    } else {
      ck_assert_msg(!g->error_null && strstr(g->error, "transfer failed"),
                    "unreachable: error %s", g->error);
      ck_assert(!g->matched);
    }
  }
  /* The redirect chain ends at its target; the others stay where they are. */
  ck_assert_str_eq(TARGETS[REDIRECT].path, "/redirect?n=3");
  char final[160];
  ck_assert_str_eq(r[REDIRECT].final_url, ts_url(srv, "/bytes?n=10", final, sizeof final));
  ck_assert_str_eq(r[0].final_url, urls[0]);
}
END_TEST

/* -L 0: a redirect is the final response. */
START_TEST(no_follow)
{
  record r[NTARGETS];
  const char *const opts[] = {"-L", "0", "--status", "302", NULL};
  scan_targets(opts, r);
  ck_assert_int_eq(r[REDIRECT].status, 302);
  ck_assert_int_eq(r[REDIRECT].hops, 1);
  ck_assert_str_eq(r[REDIRECT].final_url, urls[REDIRECT]);
  ck_assert(r[REDIRECT].matched);
  ck_assert(!r[0].matched);
}
END_TEST

static int is_200(const target *t) { return t->status == 200; }
static int is_404_or_204(const target *t) { return t->status == 404 || t->status == 204; }

START_TEST(status_matcher)
{
  record r[NTARGETS];
  const char *const one[] = {"--status", "200", NULL};
  scan_targets(one, r);
  check_matched(r, is_200, "--status 200");
  const char *const two[] = {"--status", "404", "--status", "204", NULL};
  scan_targets(two, r);
  check_matched(r, is_404_or_204, "--status 404 --status 204");
}
END_TEST

static int has_word(const target *t)
{
  return body_contains(t, "officia", 7) || body_contains(t, "hello", 5);
}
static int is_hello_200(const target *t) { return t->kind == BODY_HELLO; }

/* Any word may hit; kinds of matchers must all hit. */
START_TEST(word_matcher)
{
  record r[NTARGETS];
  const char *const words[] = {"--word", "officia", "--word", "hello", NULL};
  scan_targets(words, r);
  check_matched(r, has_word, "--word officia --word hello");
  int hits = 0;
  for (size_t i = 0; i < NTARGETS; i++)
    hits += r[i].matched;
  ck_assert_int_gt(hits, 2);
  ck_assert_int_lt(hits, (int)NTARGETS - 2);

  const char *const both[] = {"--status", "200", "--status", "404", "--word", "hello", NULL};
  scan_targets(both, r);
  check_matched(r, is_hello_200, "--status 200 --status 404 --word hello");
}
END_TEST

/* The pattern's binary word holds NUL, 0x01, 0x7f, 0x80: "\x01\x7f\x80" is
 * only ever found right after a NUL byte, so it matches only when regexec
 * sees the whole body rather than a NUL-terminated prefix. */
static int has_binary(const target *t) { return body_contains(t, "\x01\x7f\x80", 3); }

START_TEST(regex_body)
{
  record r[NTARGETS];
  const char *const bin[] = {"--regex", "\x01\x7f\x80", NULL};
  scan_targets(bin, r);
  check_matched(r, has_binary, "--regex binary");
  ck_assert(r[1].matched);  /* 100 KiB of pattern: it is in there */

  const char *const anchored[] = {"--regex", "^hel+o$", "--regex", "^zzz", NULL};
  scan_targets(anchored, r);
  check_matched(r, is_hello_200, "--regex ^hel+o$");
}
END_TEST

static int is_404(const target *t) { return t->status == 404; }

/* --part header: the final response's header block only. */
START_TEST(header_part)
{
  record r[NTARGETS];
  const char *const cookie[] = {"--part", "header", "--word", "Set-Cookie", NULL};
  scan_targets(cookie, r);
  check_matched(r, is_hello_200, "--part header --word Set-Cookie");

  const char *const status[] = {"--part", "header", "--regex", "^HTTP/1\\.1 404 ", NULL};
  scan_targets(status, r);
  check_matched(r, is_404, "--part header --regex 404");

  /* Only the redirects have a Location, and they are not the final hop. */
  const char *const loc[] = {"--part", "header", "--word", "Location:", NULL};
  scan_targets(loc, r);
  for (size_t i = 0; i < NTARGETS; i++)
    ck_assert_msg(!r[i].matched, "%s matched Location", urls[i]);

  /* The body is not looked at. */
  const char *const body[] = {"--part", "header", "--word", "hello", NULL};
  scan_targets(body, r);
  for (size_t i = 0; i < NTARGETS; i++)
    ck_assert_msg(!r[i].matched, "%s matched hello in the header", urls[i]);
}
END_TEST

static int is_hello_or_br(const target *t)
{
  return t->kind == BODY_HELLO || strcmp(t->encoding, "unsupported") == 0;
}

/* --part all: the header block followed by the body, as one text. */
START_TEST(all_part)
{
  record r[NTARGETS];
  const char *const opts[] = {
      "--part", "all", "--regex", "^HTTP/1\\.1 200 OK\r\n.*\r\n\r\nhello$",
      "--regex", "Content-Encoding: br", NULL};
  scan_targets(opts, r);
  check_matched(r, is_hello_or_br, "--part all");
}
END_TEST

/* The demo under a budget smaller than its large bodies together. */
START_TEST(demo)
{
  const char *const args[] = {"--demo", "--budget", "32M", NULL};
  ck_assert_int_eq(run_scan(args), 0);
  record *recs;
  size_t n = read_records(&recs);
  ck_assert_uint_eq(n, 400);
  size_t statuses = 0;
  for (size_t i = 0; i < n; i++)
    statuses += recs[i].status == 200;
  ck_assert_uint_gt(statuses, 350);
  free(recs);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("scan");
  TCase *tc = tcase_create("scan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, fields);
  tcase_add_test(tc, no_follow);
  tcase_add_test(tc, status_matcher);
  tcase_add_test(tc, word_matcher);
  tcase_add_test(tc, regex_body);
  tcase_add_test(tc, header_part);
  tcase_add_test(tc, all_part);
  tcase_add_test(tc, demo);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
