/* The scan example, run as a program: it scans a targets file against the
 * loopback server, and every JSON line it prints is parsed and checked:
 * valid UTF-8, status, HTTP version, hops, body size, truncation, encoding,
 * errors, attempts, and the matchers (--status, --word, --regex, on the
 * body, the header block and both). Then each option of the command line,
 * through what the server saw (/echo answers with the request head, and the
 * server counts requests), and the demo once under a memory budget.
 *
 * The scan binary's path comes from the environment variable SCAN_BIN; the
 * demo program is found beside it. */
#include <check.h>
#include <libgen.h>
#include <time.h>
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

#define KiB      ((size_t)1024)
#define MiB      (1024 * KiB)
#define MAX_BODY (4 * MiB) /* --max-body of every run but the demo */

/* ---- The targets -------------------------------------------------------- */

typedef enum { BODY_PATTERN, BODY_ZEROS, BODY_HELLO, BODY_NONE } body_kind;

typedef struct target {
  const char *path; /* NULL: the unreachable port */
  int status;       /* final status; 0 for no response */
  int hops;
  size_t body;    /* body_bytes */
  body_kind kind; /* what the body holds */
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
    {"/encoding?value=compress&n=100", 200, 1, 100, BODY_PATTERN, "unsupported", 0},
    {NULL, 0, 0, 0, BODY_NONE, "identity", 0},
};
#define NTARGETS (sizeof TARGETS / sizeof TARGETS[0])
#define REDIRECT 5 /* the index of the redirect chain */

static int down_fd = -1; /* bound but not listening: connections fail */
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
    fprintf(f, "%s%s\n", i % 2 ? "  " : "", urls[i]); /* white space is dropped */
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

/* The path of an example program: SCAN_BIN, or name beside it. */
static const char *program(const char *name, char *out, size_t cap)
{
  const char *bin = getenv("SCAN_BIN");
  ck_assert_msg(bin && *bin, "SCAN_BIN is not set");
  if (!strcmp(name, "scan"))
    return bin;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", bin);
  snprintf(out, cap, "%s/%s", dirname(dir), name);
  return out;
}

/* Runs program name with args (NULL-terminated, without argv[0]); its
 * stdout goes to out_path, its stdin comes from in (NULL: /dev/null), its
 * stderr goes to err (NULL: ours). Returns its exit status. */
static int run_example(const char *name, const char *const *args, const char *in,
                       const char *err_path)
{
  char path[600];
  const char *bin = program(name, path, sizeof path);
  const char *argv[48];
  size_t n = 0;
  argv[n++] = bin;
  while (*args && n < 47)
    argv[n++] = *args++;
  argv[n] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, in ? in : "/dev/null", O_RDONLY, 0);
  if (err_path)
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
  pid_t pid;
  int err = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ck_assert_msg(err == 0, "cannot run %s: %s", bin, strerror(err));
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status), "%s died (status %d)", name, status);
  return WEXITSTATUS(status);
}

/* Runs scan with args; stdin empty, stderr ours. */
static int run_scan(const char *const *args) { return run_example("scan", args, NULL, NULL); }

/* ---- A JSON line -------------------------------------------------------- */

/* The fields of one output line. Strings are unescaped; a null string is
 * marked by its *_null flag. */
typedef struct record {
  char url[256], final_url[256], encoding[32], error[512], http_version[8];
  int final_url_null, error_null, http_version_null;
  long status, hops, attempts;
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
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
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
      case '"':
      case '\\':
      case '/': c = (unsigned char)e; break;
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
  static const char *const keys[] = {"url",        "final_url", "status",       "hops",
                                     "body_bytes", "truncated", "encoding",     "matched",
                                     "error",      "time_ms",   "http_version", "attempts"};
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
      return -1; /* unknown or repeated key */
    r->seen |= 1u << k;
    int num_ok = !is_str && !is_null && !is_bool;
    switch (k) {
    case 0:
      if (!is_str || set_str(r->url, sizeof r->url, str))
        return -1;
      break;
    case 1:
      if (!is_str && !is_null)
        return -1;
      r->final_url_null = is_null;
      if (set_str(r->final_url, sizeof r->final_url, is_str ? str : ""))
        return -1;
      break;
    case 2:
      if (!num_ok)
        return -1;
      r->status = (long)num;
      break;
    case 3:
      if (!num_ok)
        return -1;
      r->hops = (long)num;
      break;
    case 4:
      if (!num_ok)
        return -1;
      r->body_bytes = (size_t)num;
      break;
    case 5:
      if (!is_bool)
        return -1;
      r->truncated = boolean;
      break;
    case 6:
      if (!is_str || set_str(r->encoding, sizeof r->encoding, str))
        return -1;
      break;
    case 7:
      if (!is_bool)
        return -1;
      r->matched = boolean;
      break;
    case 8:
      if (!is_str && !is_null)
        return -1;
      r->error_null = is_null;
      if (set_str(r->error, sizeof r->error, is_str ? str : ""))
        return -1;
      break;
    case 9:
      if (!num_ok)
        return -1;
      r->time_ms = num;
      break;
    case 10:
      if (!is_str && !is_null)
        return -1;
      r->http_version_null = is_null;
      if (set_str(r->http_version, sizeof r->http_version, is_str ? str : ""))
        return -1;
      break;
    default:
      if (!num_ok)
        return -1;
      r->attempts = (long)num;
      break;
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

/* Whether s is valid UTF-8 (no overlong forms, surrogates, or code points
 * past U+10FFFF), decoded the long way round as a cross-check of scan's
 * table. */
static int valid_utf8(const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned cp;
    int n;
    if (*p < 0x80) {
      p++;
      continue;
    } else if ((*p & 0xE0) == 0xC0)
      n = 1, cp = *p & 0x1F;
    else if ((*p & 0xF0) == 0xE0)
      n = 2, cp = *p & 0x0F;
    else if ((*p & 0xF8) == 0xF0)
      n = 3, cp = *p & 0x07;
    else
      return 0;
    for (int i = 1; i <= n; i++) {
      if ((p[i] & 0xC0) != 0x80)
        return 0;
      cp = cp << 6 | (p[i] & 0x3F);
    }
    static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    p += n + 1;
  }
  return 1;
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
    ck_assert_msg(valid_utf8(line), "not UTF-8: %s", line);
    ck_assert_msg(parse_record(line, &recs[n]) == 0, "not a scan record: %s", line);
    ck_assert_msg(recs[n].seen == (1u << 12) - 1, "fields missing: %s", line);
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
    ck_assert_msg(r[i].matched == want(&TARGETS[i]), "%s: %s matched %d", what, urls[i],
                  r[i].matched);
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
    ck_assert_msg(g->attempts == 1, "%s: attempts %ld", urls[i], g->attempts);
    if (t->path)
      ck_assert_msg(!strcmp(g->http_version, "1.1"), "%s: http_version %s", urls[i],
                    g->http_version);
    else
      ck_assert_msg(g->http_version_null, "unreachable: http_version %s", g->http_version);
    if (t->path) {
      ck_assert_msg(g->error_null, "%s: error %s", urls[i], g->error);
      ck_assert_msg(g->matched, "%s: a response without matchers matches", urls[i]);
    } else {
      ck_assert_msg(!g->error_null && strstr(g->error, "transfer failed"), "unreachable: error %s",
                    g->error);
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
  ck_assert(r[1].matched); /* 100 KiB of pattern: it is in there */

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

static int is_hello_or_compress(const target *t)
{
  return t->kind == BODY_HELLO || strcmp(t->encoding, "unsupported") == 0;
}

/* --part all: the header block followed by the body, as one text. */
START_TEST(all_part)
{
  record r[NTARGETS];
  const char *const opts[] = {"--part",  "all",
                              "--regex", "^HTTP/1\\.1 200 OK\r\n.*\r\n\r\nhello$",
                              "--regex", "Content-Encoding: compress",
                              NULL};
  scan_targets(opts, r);
  check_matched(r, is_hello_or_compress, "--part all");
}
END_TEST

/* ---- The command line ----------------------------------------------------- */

/* Scans one target (a server path, or a URL) with the options given; checks
 * exit status 0 and one record, and returns it. */
static record scan_one(const char *where, const char *const *opts)
{
  char url[512];
  if (where[0] == '/')
    ts_url(srv, where, url, sizeof url);
  else
    snprintf(url, sizeof url, "%s", where);
  const char *args[40] = {"-u", url, "-s"};
  size_t n = 3;
  while (*opts && n < 39)
    args[n++] = *opts++;
  args[n] = NULL;
  ck_assert_int_eq(run_scan(args), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 1);
  record r = recs[0];
  free(recs);
  return r;
}

/* A scratch file for a test; removed by the caller. */
static void temp_path(char *out, size_t cap, const char *what)
{
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(out, cap, "%s/test_scan_%s_XXXXXX", tmp, what);
  int fd = mkstemp(out);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  char *buf = calloc(1, 1 << 20);
  ck_assert_ptr_nonnull(buf);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* --help, --version and a bad option, for scan and the demo. */
START_TEST(conventions)
{
  static const char *const progs[] = {"scan", "demo"};
  char err_path[256];
  temp_path(err_path, sizeof err_path, "err");
  for (size_t i = 0; i < 2; i++) {
    const char *help[] = {"--help", NULL};
    ck_assert_int_eq(run_example(progs[i], help, NULL, err_path), 0);
    char *out = slurp(out_path), *err = slurp(err_path);
    ck_assert_msg(strstr(out, "usage: ") && strstr(out, "Exit status"), "%s", out);
    ck_assert_str_eq(err, "");
    free(out);
    free(err);

    const char *version[] = {"--version", NULL};
    ck_assert_int_eq(run_example(progs[i], version, NULL, err_path), 0);
    out = slurp(out_path);
    char want[64];
    snprintf(want, sizeof want, "%s (respchain) %s\n", progs[i], rc_version());
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
    free(out);
  }
  const char *bad[][3] = {{"--no-such", NULL},
                          {"--rate", "fast", NULL},
                          {"--overflow", "sometimes", NULL},
                          {"-u", NULL},
                          {"stray", NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(run_example("scan", bad[i], NULL, err_path), 2);
    char *err = slurp(err_path);
    char *nl = strchr(err, '\n');
    ck_assert_msg(nl && nl[1] == '\0' && strstr(err, "try 'scan --help'"), "%s", err);
    free(err);
  }
  unlink(err_path);
}
END_TEST

/* -u (repeatable), -l -, both together, and -o FILE. */
START_TEST(targets_and_output)
{
  char a[160], b[160];
  ts_url(srv, "/bytes?n=11", a, sizeof a);
  ts_url(srv, "/bytes?n=22", b, sizeof b);
  const char *two[] = {"-u", a, "-u", b, NULL};
  ck_assert_int_eq(run_scan(two), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 2);
  ck_assert_uint_eq(recs[0].body_bytes + recs[1].body_bytes, 33);
  free(recs);

  const char *stdin_list[] = {"-l", "-", "-c", "4", NULL};
  ck_assert_int_eq(run_example("scan", stdin_list, targets_path, NULL), 0);
  ck_assert_uint_eq(read_records(&recs), NTARGETS);
  free(recs);

  const char *both[] = {"-u", a, "-l", targets_path, NULL};
  ck_assert_int_eq(run_scan(both), 0);
  ck_assert_uint_eq(read_records(&recs), NTARGETS + 1);
  size_t found = 0;
  for (size_t i = 0; i < NTARGETS + 1; i++)
    found += strcmp(recs[i].url, a) == 0;
  ck_assert_uint_eq(found, 1);
  free(recs);

  char file[256];
  temp_path(file, sizeof file, "o");
  const char *out[] = {"-u", a, "-o", file, NULL};
  ck_assert_int_eq(run_scan(out), 0);
  ck_assert_uint_eq(read_records(&recs), 0); /* stdout stays empty */
  free(recs);
  char *got = slurp(file);
  ck_assert_msg(strncmp(got, "{\"url\":\"", 8) == 0 && strstr(got, "\"body_bytes\":11,"), "%s",
                got);
  free(got);
  unlink(file);
}
END_TEST

/* --matched-only and -s. */
START_TEST(matched_only_and_silent)
{
  char err_path[256];
  temp_path(err_path, sizeof err_path, "err");
  const char *opts[] = {"-l", targets_path, "--status", "404", "--matched-only", NULL};
  ck_assert_int_eq(run_example("scan", opts, NULL, err_path), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 1);
  ck_assert_int_eq(recs[0].status, 404);
  free(recs);
  char *err = slurp(err_path);
  ck_assert_ptr_nonnull(strstr(err, "scan: 12 requests")); /* the summary */
  free(err);

  const char *silent[] = {"-l", targets_path, "-s", NULL};
  ck_assert_int_eq(run_example("scan", silent, NULL, err_path), 0);
  err = slurp(err_path);
  ck_assert_str_eq(err, "");
  free(err);
  unlink(err_path);
}
END_TEST

/* -X, -H, -d and --user-agent, as /echo saw them. */
START_TEST(request_options)
{
  const char *put[] = {"-X",
                       "PUT",
                       "-H",
                       "X-Scan-Test: yes",
                       "-d",
                       "hello",
                       "--user-agent",
                       "rc-test/1",
                       "--regex",
                       "^PUT /echo HTTP/1\\.1\r\n",
                       "--regex",
                       "\r\nX-Scan-Test: yes\r\n",
                       NULL};
  /* Regexes of one kind are alternatives: check each alone. */
  const char *checks[] = {"^PUT /echo HTTP/1\\.1\r\n", "\r\nX-Scan-Test: yes\r\n",
                          "\r\nContent-Length: 5\r\n", "\r\nUser-Agent: rc-test/1\r\n"};
  for (size_t i = 0; i < 4; i++) {
    const char *opts[16];
    memcpy(opts, put, 8 * sizeof *opts);
    opts[8] = "--regex";
    opts[9] = checks[i];
    opts[10] = NULL;
    record r = scan_one("/echo", opts);
    ck_assert_msg(r.matched, "not seen by the server: %s", checks[i]);
  }
  const char *post[] = {"-d", "a=1", "--regex", "^POST /echo ", NULL};
  ck_assert(scan_one("/echo", post).matched);
  const char *plain[] = {"--regex", "^GET /echo .*\r\nUser-Agent: respchain-scan/", NULL};
  ck_assert(scan_one("/echo", plain).matched);
}
END_TEST

/* --proxy: the loopback server is the proxy; a target on a name that does
 * not resolve reaches it (as an absolute URL, which it answers 404). */
START_TEST(proxy)
{
  char proxy_url[96];
  ts_url(srv, "", proxy_url, sizeof proxy_url);
  const char *via[] = {"--proxy", proxy_url, NULL};
  unsigned long before = ts_requests(srv);
  record r = scan_one("http://rc-scan-test.invalid/echo", via);
  ck_assert_msg(r.error_null && r.status == 404, "status %ld, error %s", r.status, r.error);
  ck_assert_uint_eq(ts_requests(srv) - before, 1);

  const char *direct[] = {NULL};
  r = scan_one("http://rc-scan-test.invalid/echo", direct);
  ck_assert(!r.error_null && r.status == 0);
}
END_TEST

/* --http1.1, --http2 (cleartext: an Upgrade request, which the server
 * ignores), --http2-prior-knowledge (an HTTP/2 preface the HTTP/1.1 server
 * cannot answer), -k (no effect over http). */
START_TEST(http_versions)
{
  const char *h1[] = {"--http1.1", "-k", "--word", "Upgrade: h2c", NULL};
  record r = scan_one("/echo", h1);
  ck_assert(!r.matched);
  ck_assert_str_eq(r.http_version, "1.1");

  const char *h2[] = {"--http2", "--word", "Upgrade: h2c", NULL};
  r = scan_one("/echo", h2);
  ck_assert(r.matched);
  ck_assert_str_eq(r.http_version, "1.1");

  const char *prior[] = {"--http2-prior-knowledge", "--timeout", "5", NULL};
  r = scan_one("/echo", prior);
  ck_assert(!r.error_null);
  ck_assert(r.status == 0 || r.status >= 400);
}
END_TEST

/* --rate: 10 requests at 20 per second span at least 9 intervals of 50 ms
 * (a generous lower bound measured around the whole run). */
START_TEST(rate)
{
  char url[160];
  ts_url(srv, "/bytes?n=100", url, sizeof url);
  const char *args[32] = {"-s", "-c", "10", "--rate", "20"};
  size_t n = 5;
  for (int i = 0; i < 10; i++) {
    args[n++] = "-u";
    args[n++] = url;
  }
  args[n] = NULL;
  unsigned long before = ts_requests(srv);
  double t0 = now_s();
  ck_assert_int_eq(run_scan(args), 0);
  double took = now_s() - t0;
  ck_assert_uint_eq(ts_requests(srv) - before, 10);
  ck_assert_msg(took >= 0.42 && took < 10, "10 requests at 20/s took %.3f s", took);

  args[4] = "1000"; /* the same without a real limit: fast */
  t0 = now_s();
  ck_assert_int_eq(run_scan(args), 0);
  ck_assert_msg(now_s() - t0 < 0.42, "unlimited took %.3f s", now_s() - t0);
}
END_TEST

/* --retries: a 5xx and a refused connection are retried with backoff
 * (0.2 s, then 0.4 s), a 404 is not; the server counts the attempts. */
START_TEST(retries)
{
  const char *two[] = {"--retries", "2", NULL};
  unsigned long before = ts_requests(srv);
  double t0 = now_s();
  record r = scan_one("/status?code=503&n=10", two);
  double took = now_s() - t0;
  ck_assert_int_eq(r.status, 503);
  ck_assert_int_eq(r.attempts, 3);
  ck_assert_uint_eq(ts_requests(srv) - before, 3);
  ck_assert_msg(took >= 0.55, "two retries took %.3f s", took);

  before = ts_requests(srv);
  r = scan_one("/status?code=404&n=10", two);
  ck_assert_int_eq(r.attempts, 1);
  ck_assert_uint_eq(ts_requests(srv) - before, 1);

  const char *one[] = {"--retries", "1", NULL};
  r = scan_one(down_url, one);
  ck_assert_int_eq(r.attempts, 2);
  ck_assert(!r.error_null);

  const char *none[] = {NULL};
  r = scan_one("/status?code=500", none);
  ck_assert_int_eq(r.attempts, 1);
}
END_TEST

/* Reads "N spills" and "N pauses" from scan's summary. */
static void pool_counts(const char *err_path, unsigned long *pauses, unsigned long *spills)
{
  char *err = slurp(err_path);
  const char *p = strstr(err, " pauses, ");
  ck_assert_msg(p, "no summary: %s", err);
  while (p > err && p[-1] >= '0' && p[-1] <= '9')
    p--;
  ck_assert_int_eq(sscanf(p, "%lu pauses, %lu spills", pauses, spills), 2);
  free(err);
}

/* --max-memory: every field as without it, bodies past it in spill files;
 * --overflow: under a small budget, spill never pauses, wait never spills. */
START_TEST(memory_options)
{
  char err_path[256];
  temp_path(err_path, sizeof err_path, "err");
  record r[NTARGETS];
  const char *const mem[] = {"--max-memory", "64k", NULL};
  scan_targets(mem, r);
  for (size_t i = 0; i < NTARGETS; i++)
    ck_assert_msg(r[i].body_bytes == TARGETS[i].body, "%s: body_bytes %zu", urls[i],
                  r[i].body_bytes);

  const char *spilling[] = {"-l", targets_path, "--max-memory", "64k", NULL};
  ck_assert_int_eq(run_example("scan", spilling, NULL, err_path), 0);
  unsigned long pauses, spills;
  pool_counts(err_path, &pauses, &spills);
  ck_assert_uint_ge(spills, 3); /* 100k, 3M, 200k, the bomb at least */

  char big[160];
  ts_url(srv, "/bytes?n=2M&write=16384&delay_us=200", big, sizeof big);
  static const char *const modes[] = {"spill", "wait"};
  for (size_t m = 0; m < 2; m++) {
    const char *args[32] = {"-c", "6", "--budget", "1M", "--overflow", modes[m]};
    size_t n = 6;
    for (int i = 0; i < 6; i++) {
      args[n++] = "-u";
      args[n++] = big;
    }
    args[n] = NULL;
    ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
    record *recs;
    ck_assert_uint_eq(read_records(&recs), 6);
    for (size_t i = 0; i < 6; i++)
      ck_assert_msg(recs[i].error_null && recs[i].body_bytes == 2 * MiB, "%s: %s", modes[m],
                    recs[i].error);
    free(recs);
    pool_counts(err_path, &pauses, &spills);
    if (m == 0)
      ck_assert_msg(spills > 0 && pauses == 0, "spill: %lu pauses, %lu spills", pauses, spills);
    else
      ck_assert_msg(spills == 0 && pauses > 0, "wait: %lu pauses, %lu spills", pauses, spills);
  }
  unlink(err_path);
}
END_TEST

/* URLs that are not UTF-8: every line stays valid UTF-8 (read_records
 * checks), and bytes outside UTF-8 come back as \u00XX of their value, so
 * the URL round-trips; a Location header with such a byte likewise. */
START_TEST(utf8_output)
{
  static const char *const odd[] = {
      "/bytes?n=1&x=\xff",         /* a byte that never starts UTF-8 */
      "/bytes?n=2&x=caf\xc3\xa9",  /* valid UTF-8: kept as it is */
      "/bytes?n=3&x=\xe9t\xe9",    /* Latin-1 */
      "/bytes?n=4&x=\xed\xa0\x80", /* a surrogate */
      "/bytes?n=5&x=\xc0\xaf",     /* an overlong '/' */
      "/bytes?n=6&x=\xf0\x9f\x98", /* a sequence cut short */
      "/bytes?n=7&x=\x7f\x01",     /* DEL and a control byte */
  };
  enum { N = sizeof odd / sizeof odd[0] };
  char list[256], want[N][192];
  temp_path(list, sizeof list, "utf8");
  FILE *f = fopen(list, "w");
  for (size_t i = 0; i < N; i++)
    fprintf(f, "%s\n", ts_url(srv, odd[i], want[i], sizeof want[i]));
  fclose(f);
  const char *args[] = {"-l", list, "-s", NULL};
  ck_assert_int_eq(run_scan(args), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), N);
  int seen[N] = {0}; /* each URL comes back byte for byte, once */
  for (size_t i = 0; i < N; i++) {
    size_t k = 0;
    while (k < N && strcmp(recs[i].url, want[k]) != 0)
      k++;
    ck_assert_msg(k < N && !seen[k], "url %s", recs[i].url);
    seen[k] = 1;
  }
  free(recs);
  char *raw = slurp(out_path);
  ck_assert_ptr_nonnull(strstr(raw, "&x=\\u00ff\""));
  ck_assert_ptr_nonnull(strstr(raw, "&x=caf\xc3\xa9\""));
  ck_assert_ptr_nonnull(strstr(raw, "&x=\\u00e9t\\u00e9\""));
  ck_assert_ptr_nonnull(strstr(raw, "&x=\\u007f\\u0001\""));
  free(raw);
  unlink(list);

  const char *none[] = {NULL};
  record r = scan_one("/redirect?n=0&to=%2Fbytes%3Fn%3D9%26x%3D%FF", none);
  ck_assert_int_eq(r.status, 200);
  ck_assert_int_eq(r.hops, 2);
}
END_TEST

/* The demo under a budget smaller than its large bodies together. */
START_TEST(demo)
{
  const char *const args[] = {"scan", "--budget", "32M", "-s", NULL};
  ck_assert_int_eq(run_example("demo", args, NULL, NULL), 0);
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
  tcase_add_test(tc, conventions);
  tcase_add_test(tc, targets_and_output);
  tcase_add_test(tc, matched_only_and_silent);
  tcase_add_test(tc, request_options);
  tcase_add_test(tc, proxy);
  tcase_add_test(tc, http_versions);
  tcase_add_test(tc, rate);
  tcase_add_test(tc, retries);
  tcase_add_test(tc, memory_options);
  tcase_add_test(tc, utf8_output);
  tcase_add_test(tc, demo);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
