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
#include <ctype.h>
#include <libgen.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "h2.h"
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
  long length; /* content_length: -1 null, ANY_LENGTH some number */
} target;

#define ANY_LENGTH (-2L)

static const target TARGETS[] = {
    {"/bytes?n=1000", 200, 1, 1000, BODY_PATTERN, "identity", 0, 1000},
    {"/bytes?n=100k&te=chunked", 200, 1, 100 * KiB, BODY_PATTERN, "identity", 0, -1},
    {"/bytes?n=3M", 200, 1, 3 * MiB, BODY_PATTERN, "identity", 0, 3 * MiB},
    {"/gzip?n=200k&coding=gzip", 200, 1, 200 * KiB, BODY_PATTERN, "decoded", 0, ANY_LENGTH},
    {"/gzip?n=50k&coding=deflate", 200, 1, 50 * KiB, BODY_PATTERN, "decoded", 0, ANY_LENGTH},
    /* Four redirects (n=3..0), then the final /bytes?n=10. */
    {"/redirect?n=3", 200, 5, 10, BODY_PATTERN, "identity", 0, 10},
    {"/status?code=404&n=100", 404, 1, 100, BODY_PATTERN, "identity", 0, 100},
    {"/status?code=204", 204, 1, 0, BODY_NONE, "identity", 0, -1},
    /* 1 GiB of zeros, gzipped: cut at --max-body. */
    {"/bomb", 200, 1, MAX_BODY, BODY_ZEROS, "decoded", 1, ANY_LENGTH},
    {"/headers", 200, 1, 5, BODY_HELLO, "identity", 0, 5},
    {"/encoding?value=compress&n=100", 200, 1, 100, BODY_PATTERN, "unsupported", 0, 100},
    {NULL, 0, 0, 0, BODY_NONE, "identity", 0, -1},
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

/* Starts program name with args (NULL-terminated, without argv[0]): its
 * stdin comes from in (NULL: /dev/null), its stdout goes to out_fd when it
 * is not -1, else to the file out, its stderr to err_path (NULL: ours).
 * Returns its pid. */
static pid_t start_example(const char *name, const char *const *args, const char *in, int out_fd,
                           const char *out, const char *err_path)
{
  char path[600];
  const char *bin = program(name, path, sizeof path);
  const char *argv[96];
  size_t n = 0;
  argv[n++] = bin;
  while (*args && n < 95)
    argv[n++] = *args++;
  ck_assert_msg(!*args, "too many arguments for %s", name);
  argv[n] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  else
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, in ? in : "/dev/null", O_RDONLY, 0);
  if (err_path)
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
  pid_t pid;
  int err = posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ck_assert_msg(err == 0, "cannot run %s: %s", bin, strerror(err));
  return pid;
}

/* Runs program name with args as start_example does, its stdout going to
 * out_path. Returns its exit status. */
static int run_example(const char *name, const char *const *args, const char *in,
                       const char *err_path)
{
  pid_t pid = start_example(name, args, in, -1, out_path, err_path);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status), "%s died (status %d)", name, status);
  return WEXITSTATUS(status);
}

/* Runs scan with args; stdin empty, stderr ours. */
static int run_scan(const char *const *args) { return run_example("scan", args, NULL, NULL); }

/* ---- A JSON line -------------------------------------------------------- */

#define MAX_CHAIN    32
#define MAX_MATCHES  40
#define MAX_EXTRACTS 12   /* extractors of a record */
#define MAX_VALUES   16   /* values kept of each (all are counted) */
#define VALUE_MAX    1100 /* bytes of a value kept */

/* The fields of one output line. Strings are unescaped; a null string is
 * marked by its *_null flag. status is status_code. */
typedef struct record {
  char timestamp[48], input[4096], url[4096], final_url[4096], method[16];
  char content_type[128], webserver[128], title[1200], http_version[8];
  char encoding[32], error[512], time[32];
  int final_url_null, content_type_null, webserver_null, title_null, http_version_null;
  int error_null, content_length_null;
  long status, hops, attempts, content_length;
  long chain[MAX_CHAIN];
  size_t nchain;
  char match_kind[MAX_MATCHES][16], match_value[MAX_MATCHES][128];
  long match_offset[MAX_MATCHES]; /* -1: null */
  size_t nmatches;
  long connect_code; /* connect_status_code; -1: null */
  char extract_key[MAX_EXTRACTS][128];
  char extract_value[MAX_EXTRACTS][MAX_VALUES][VALUE_MAX];
  size_t extract_len[MAX_EXTRACTS][MAX_VALUES];
  size_t nextracts, nvalues[MAX_EXTRACTS];
  char incomplete[MAX_EXTRACTS][128]; /* extracts_incomplete */
  size_t nincomplete;
  size_t body_bytes;
  int truncated, stopped, spilled, matched, failed;
  double time_ms;
  unsigned long seen; /* bit per field found */
} record;

/* The fields every line has, in the order scan writes them. */
static const char *const FIELDS[] = {"timestamp",
                                     "input",
                                     "url",
                                     "final_url",
                                     "method",
                                     "status_code",
                                     "content_length",
                                     "content_type",
                                     "webserver",
                                     "title",
                                     "chain_status_codes",
                                     "connect_status_code",
                                     "http_version",
                                     "hops",
                                     "body_bytes",
                                     "truncated",
                                     "stopped",
                                     "encoding",
                                     "spilled",
                                     "matched",
                                     "matches",
                                     "extracts",
                                     "extracts_incomplete",
                                     "failed",
                                     "error",
                                     "attempts",
                                     "time",
                                     "time_ms"};
enum { NFIELDS = sizeof FIELDS / sizeof FIELDS[0] };
#define ALL_FIELDS ((1ul << NFIELDS) - 1)

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

/* A scalar value at p: a string (into str), null, true, false or a number.
 * Returns the position after it, or NULL if malformed. */
typedef enum { V_STR, V_NULL, V_BOOL, V_NUM } vkind;
typedef struct scalar {
  vkind kind;
  int boolean;
  double num;
} scalar;

static const char *json_scalar(const char *p, scalar *v, char *str, size_t cap)
{
  memset(v, 0, sizeof *v);
  if (*p == '"') {
    v->kind = V_STR;
    return json_str(p, str, cap);
  }
  if (!strncmp(p, "null", 4)) {
    v->kind = V_NULL;
    return p + 4;
  }
  if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
    v->kind = V_BOOL;
    v->boolean = *p == 't';
    return p + (v->boolean ? 4 : 5);
  }
  char *end;
  v->kind = V_NUM;
  v->num = strtod(p, &end);
  return end == p ? NULL : end;
}

/* Copies a string or null into a field; -1 if it is neither or does not
 * fit. */
static int set_str(char *dst, size_t cap, int *is_null, const scalar *v, const char *str)
{
  if (v->kind != V_STR && !(is_null && v->kind == V_NULL))
    return -1;
  if (is_null)
    *is_null = v->kind == V_NULL;
  size_t n = v->kind == V_STR ? strlen(str) : 0;
  if (n >= cap)
    return -1;
  memcpy(dst, v->kind == V_STR ? str : "", n + 1);
  return 0;
}

/* chain_status_codes at p: an array of numbers. */
/* After an item of an array or an object: past the ',' and the white
 * space before the next item, or at the closing byte; NULL when neither. */
static const char *after_item(const char *p, char close)
{
  p = skip_ws(p);
  if (*p == ',')
    return skip_ws(p + 1);
  return *p == close ? p : NULL;
}

static const char *parse_chain(const char *p, record *r)
{
  if (*p++ != '[')
    return NULL;
  for (p = skip_ws(p); *p != ']';) {
    scalar v;
    char str[8];
    if (!(p = json_scalar(p, &v, str, sizeof str)) || v.kind != V_NUM || r->nchain == MAX_CHAIN)
      return NULL;
    r->chain[r->nchain++] = (long)v.num;
    if (!(p = after_item(p, ']')))
      return NULL;
  }
  return p + 1;
}

/* matches at p: an array of {"matcher": string, "value": string,
 * "offset": number or null}. */
static const char *parse_matches(const char *p, record *r)
{
  if (*p++ != '[')
    return NULL;
  for (p = skip_ws(p); *p != ']';) {
    size_t i = r->nmatches++;
    if (i == MAX_MATCHES)
      return NULL;
    static const char *const keys[] = {"matcher", "value", "offset"};
    char offset[32];
    char *dst[] = {r->match_kind[i], r->match_value[i], offset};
    size_t cap[] = {sizeof r->match_kind[i], sizeof r->match_value[i], sizeof offset};
    if (*p++ != '{')
      return NULL;
    for (int k = 0; k < 3; k++) {
      char key[16];
      scalar v;
      if (!(p = json_str(skip_ws(p), key, sizeof key)) || strcmp(key, keys[k]) != 0)
        return NULL;
      p = skip_ws(p);
      if (*p++ != ':' || !(p = json_scalar(skip_ws(p), &v, dst[k], cap[k])))
        return NULL;
      if (k < 2 ? v.kind != V_STR : v.kind != V_NUM && v.kind != V_NULL)
        return NULL;
      if (k == 2)
        r->match_offset[i] = v.kind == V_NUM ? (long)v.num : -1;
      p = skip_ws(p);
      if (*p++ != (k < 2 ? ',' : '}'))
        return NULL;
    }
    if (!(p = after_item(p, ']')))
      return NULL;
  }
  return p + 1;
}

/* The values of one extractor at p: an array of strings, counted, the
 * first MAX_VALUES kept (with their lengths: they may hold NUL bytes). */
static const char *parse_values(const char *p, record *r, size_t e)
{
  static char value[4096];
  if (*p++ != '[')
    return NULL;
  for (p = skip_ws(p); *p != ']';) {
    const char *start = p;
    if (!(p = json_str(p, value, sizeof value)))
      return NULL;
    size_t k = r->nvalues[e]++;
    if (k < MAX_VALUES) {
      /* json_str stops at a NUL it wrote: unescape again for the length. */
      size_t n = 0;
      for (const char *q = start + 1; q < p - 1; n++)
        q += *q != '\\' ? 1 : q[1] == 'u' ? 6 : 2;
      ck_assert_uint_lt(n, VALUE_MAX);
      memcpy(r->extract_value[e][k], value, n);
      r->extract_len[e][k] = n;
    }
    if (!(p = after_item(p, ']')))
      return NULL;
  }
  return p + 1;
}

/* extracts at p: an object {"REGEX": [values], ...}. */
static const char *parse_extracts(const char *p, record *r)
{
  if (*p++ != '{')
    return NULL;
  for (p = skip_ws(p); *p != '}';) {
    size_t e = r->nextracts++;
    if (e == MAX_EXTRACTS || !(p = json_str(p, r->extract_key[e], sizeof r->extract_key[e])))
      return NULL;
    p = skip_ws(p);
    if (*p++ != ':' || !(p = parse_values(skip_ws(p), r, e)))
      return NULL;
    if (!(p = after_item(p, '}')))
      return NULL;
  }
  return p + 1;
}

/* extracts_incomplete at p: an array of the regexes, as given. */
static const char *parse_incomplete(const char *p, record *r)
{
  if (*p++ != '[')
    return NULL;
  for (p = skip_ws(p); *p != ']';) {
    size_t e = r->nincomplete++;
    if (e == MAX_EXTRACTS || !(p = json_str(p, r->incomplete[e], sizeof r->incomplete[e])) ||
        !(p = after_item(p, ']')))
      return NULL;
  }
  return p + 1;
}

/* Fills field k of r from a scalar; -1 if the value has the wrong type. */
static int set_field(record *r, size_t k, const scalar *v, const char *str)
{
  int num = v->kind == V_NUM, boolean = v->kind == V_BOOL;
  switch (k) {
  case 0: return set_str(r->timestamp, sizeof r->timestamp, NULL, v, str);
  case 1: return set_str(r->input, sizeof r->input, NULL, v, str);
  case 2: return set_str(r->url, sizeof r->url, NULL, v, str);
  case 3: return set_str(r->final_url, sizeof r->final_url, &r->final_url_null, v, str);
  case 4: return set_str(r->method, sizeof r->method, NULL, v, str);
  case 5: r->status = (long)v->num; return num ? 0 : -1;
  case 6:
    r->content_length_null = v->kind == V_NULL;
    r->content_length = (long)v->num;
    return num || v->kind == V_NULL ? 0 : -1;
  case 7: return set_str(r->content_type, sizeof r->content_type, &r->content_type_null, v, str);
  case 8: return set_str(r->webserver, sizeof r->webserver, &r->webserver_null, v, str);
  case 9: return set_str(r->title, sizeof r->title, &r->title_null, v, str);
  case 11:
    r->connect_code = v->kind == V_NUM ? (long)v->num : -1;
    return num || v->kind == V_NULL ? 0 : -1;
  case 12: return set_str(r->http_version, sizeof r->http_version, &r->http_version_null, v, str);
  case 13: r->hops = (long)v->num; return num ? 0 : -1;
  case 14: r->body_bytes = (size_t)v->num; return num ? 0 : -1;
  case 15: r->truncated = v->boolean; return boolean ? 0 : -1;
  case 16: r->stopped = v->boolean; return boolean ? 0 : -1;
  case 17: return set_str(r->encoding, sizeof r->encoding, NULL, v, str);
  case 18: r->spilled = v->boolean; return boolean ? 0 : -1;
  case 19: r->matched = v->boolean; return boolean ? 0 : -1;
  case 23: r->failed = v->boolean; return boolean ? 0 : -1;
  case 24: return set_str(r->error, sizeof r->error, &r->error_null, v, str);
  case 25: r->attempts = (long)v->num; return num ? 0 : -1;
  case 26: return set_str(r->time, sizeof r->time, NULL, v, str);
  case 27: r->time_ms = v->num; return num ? 0 : -1;
  default: return -1;
  }
}

/* One line of scan's output into r: an object with exactly the fields of
 * FIELDS, each once, in that order. Returns 0, or -1 when the line is not
 * such an object. */
static int parse_record(const char *line, record *r)
{
  memset(r, 0, sizeof *r);
  const char *p = skip_ws(line);
  if (*p++ != '{')
    return -1;
  for (size_t k = 0;; k++) {
    char key[32], str[4096];
    p = skip_ws(p);
    if (k == NFIELDS || !(p = json_str(p, key, sizeof key)) || strcmp(key, FIELDS[k]) != 0)
      return -1; /* unknown, repeated or out of order */
    p = skip_ws(p);
    if (*p++ != ':')
      return -1;
    p = skip_ws(p);
    if (!strcmp(key, "chain_status_codes"))
      p = parse_chain(p, r);
    else if (!strcmp(key, "matches"))
      p = parse_matches(p, r);
    else if (!strcmp(key, "extracts"))
      p = parse_extracts(p, r);
    else if (!strcmp(key, "extracts_incomplete"))
      p = parse_incomplete(p, r);
    else {
      scalar v;
      if (!(p = json_scalar(p, &v, str, sizeof str)) || set_field(r, k, &v, str) != 0)
        return -1;
    }
    if (!p)
      return -1;
    r->seen |= 1ul << k;
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
static size_t read_records_from(const char *path, record **out)
{
  FILE *f = fopen(path, "r");
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
    ck_assert_msg(recs[n].seen == ALL_FIELDS, "fields missing: %s", line);
    ck_assert_msg(strchr(line, '\n') != NULL, "unterminated line: %s", line);
    n++;
  }
  free(line);
  fclose(f);
  *out = recs;
  return n;
}

/* The records scan wrote to out_path. */
static size_t read_records(record **out) { return read_records_from(out_path, out); }

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

/* The milliseconds a "time" string says ("850µs", "12.3ms", "1.5s",
 * "2m3.25s"); -1 when it is not one. */
static double duration_ms(const char *text)
{
  char *end;
  double minutes = 0, v = strtod(text, &end);
  if (end == text)
    return -1;
  if (*end == 'm' && end[1] != 's') {
    minutes = v;
    text = end + 1;
    if ((v = strtod(text, &end)), end == text || strcmp(end, "s") != 0)
      return -1;
    return minutes * 60000.0 + v * 1000.0;
  }
  if (!strcmp(end, "\xC2\xB5s"))
    return v / 1000.0;
  if (!strcmp(end, "ms"))
    return v;
  if (!strcmp(end, "s"))
    return v * 1000.0;
  return -1;
}

/* What every record must hold whatever its target: an RFC 3339 UTC
 * timestamp of today, "url" as given, "failed" exactly when there is an
 * error, a status per hop ending with the final one, and "time" saying
 * what "time_ms" says. */
static void check_common(const record *g)
{
  int y, mo, d, h, mi, sec, usec;
  char z;
  ck_assert_msg(sscanf(g->timestamp, "%4d-%2d-%2dT%2d:%2d:%2d.%6d%c", &y, &mo, &d, &h, &mi, &sec,
                       &usec, &z) == 8 &&
                    z == 'Z' && strlen(g->timestamp) == 27,
                "timestamp %s", g->timestamp);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  ck_assert_msg(y == tm.tm_year + 1900 || y == tm.tm_year + 1899, "timestamp %s", g->timestamp);
  ck_assert_str_eq(g->url, g->input);
  ck_assert_msg(g->failed == !g->error_null, "failed %d, error %s", g->failed, g->error);
  ck_assert_uint_eq(g->nchain, (size_t)g->hops);
  if (g->nchain)
    ck_assert_int_eq(g->chain[g->nchain - 1], g->status);
  double ms = duration_ms(g->time);
  ck_assert_msg(ms >= 0 && ms - g->time_ms < 0.06 && g->time_ms - ms < 0.06, "time %s, time_ms %f",
                g->time, g->time_ms);
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
    check_common(g);
    ck_assert_str_eq(g->input, urls[i]);
    ck_assert_str_eq(g->method, "GET");
    if (t->length == -1)
      ck_assert_msg(g->content_length_null, "%s: content_length %ld", urls[i], g->content_length);
    else
      ck_assert_msg(!g->content_length_null &&
                        (t->length == ANY_LENGTH || g->content_length == t->length),
                    "%s: content_length %ld", urls[i], g->content_length);
    ck_assert_msg(g->title_null && g->webserver_null, "%s: title or webserver", urls[i]);
    ck_assert_msg(g->nmatches == 0, "%s: matches without matchers", urls[i]);
    ck_assert_msg(!g->spilled, "%s: spilled", urls[i]);
    if (t->path && !strncmp(t->path, "/bytes", 6))
      ck_assert_str_eq(g->content_type, "application/octet-stream");
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
  /* Every hop's status, in order. */
  static const long chain[] = {302, 302, 302, 302, 200};
  ck_assert_uint_eq(r[REDIRECT].nchain, 5);
  for (size_t i = 0; i < 5; i++)
    ck_assert_int_eq(r[REDIRECT].chain[i], chain[i]);
  ck_assert_str_eq(r[9].content_type, "text/plain");
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
  const char *const list[] = {"--status", "204,404", NULL};
  scan_targets(list, r);
  check_matched(r, is_404_or_204, "--status 204,404");
  for (size_t i = 0; i < NTARGETS; i++) {
    if (!r[i].matched) {
      ck_assert_uint_eq(r[i].nmatches, 0);
      continue;
    }
    char code[8];
    snprintf(code, sizeof code, "%d", TARGETS[i].status);
    ck_assert_uint_eq(r[i].nmatches, 1);
    ck_assert_str_eq(r[i].match_kind[0], "status");
    ck_assert_str_eq(r[i].match_value[0], code);
  }
  /* Codes out of range, empty items and stray characters are refused. */
  static const char *const bad[] = {"99", "1000", "200,", ",200", "200,,404", "2OO", "-200"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[] = {"-u", urls[0], "--status", bad[i], NULL};
    ck_assert_msg(run_scan(args) == 2, "--status %s", bad[i]);
  }
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
  /* Each matcher that hit is listed, the ones that did not are not. */
  const size_t hello = 9;
  ck_assert_uint_eq(r[hello].nmatches, 2);
  ck_assert_str_eq(r[hello].match_kind[0], "status");
  ck_assert_str_eq(r[hello].match_value[0], "200");
  ck_assert_str_eq(r[hello].match_kind[1], "word");
  ck_assert_str_eq(r[hello].match_value[1], "hello");
}
END_TEST

/* The pattern's binary word holds NUL, 0x01, 0x7f, 0x80: "\x01\x7f\x80" is
 * only ever found right after a NUL byte, so it matches only when PCRE2
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
  ck_assert_uint_eq(r[9].nmatches, 1);
  ck_assert_str_eq(r[9].match_kind[0], "regex");
  ck_assert_str_eq(r[9].match_value[0], "^hel+o$");
}
END_TEST

static int is_404(const target *t) { return t->status == 404; }

static int is_none(const target *t)
{
  (void)t;
  return 0;
}

/* --part header: the final response's header lines, each on its own. */
START_TEST(header_part)
{
  static const struct {
    const char *kind, *pattern;
    int (*want)(const target *);
  } cases[] = {
      {"--word", "Set-Cookie", is_hello_200},
      {"--regex", "^HTTP/1\\.1 404 ", is_404},
      /* Only the redirects have a Location, and they are not the final hop. */
      {"--word", "Location:", is_none},
      /* ^ and $ anchor at a line's ends (its line break is not part of
       * it), whichever line it is; no match spans two lines. */
      {"--regex", "^set-cookie: b=2$", is_hello_200},
      {"--regex", "^X-Spaces: +padded +$", is_hello_200},
      {"--regex", "a=1.*b=2", is_none},
      /* The body is not looked at. */
      {"--word", "hello", is_none},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    record r[NTARGETS];
    const char *const opts[] = {"--part", "header", cases[i].kind, cases[i].pattern, NULL};
    scan_targets(opts, r);
    check_matched(r, cases[i].want, cases[i].pattern);
  }
}
END_TEST

static int is_hello_or_compress(const target *t)
{
  return t->kind == BODY_HELLO || strcmp(t->encoding, "unsupported") == 0;
}

/* --part all: the header lines one by one, and the body. */
START_TEST(all_part)
{
  record r[NTARGETS];
  const char *const opts[] = {
      "--part", "all", "--regex", "^hello$", "--regex", "^Content-Encoding: compress$", NULL};
  scan_targets(opts, r);
  check_matched(r, is_hello_or_compress, "--part all");
}
END_TEST

/* ---- The command line ----------------------------------------------------- */

/* Scans one target (a server path, or a URL) with the options given; checks
 * exit status 0 and one record, and returns it. */
static record scan_one(const char *where, const char *const *opts)
{
  char url[4096];
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

/* ---- Streaming matchers --------------------------------------------------- */

/* Whether this scan streams its matchers (built with Vectorscan), as its
 * --version says. */
static int scan_streams(void)
{
  const char *version[] = {"--version", NULL};
  ck_assert_int_eq(run_scan(version), 0);
  char *out = slurp(out_path);
  int streams = strstr(out, "streaming matchers: Vectorscan") != NULL;
  free(out);
  return streams;
}

/* The first occurrence of needle in hay, as the offset of its end; -1
 * when there is none. */
static long first_end(const unsigned char *hay, size_t n, const char *needle, size_t k)
{
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(hay + i, needle, k) == 0)
      return (long)(i + k);
  return -1;
}

/* A regex compiled by PCRE2, the reference for what scan's regexes mean. */
static pcre2_code *pcre(const char *re)
{
  int err;
  PCRE2_SIZE at;
  /* Auto-possessification, which keeps the meaning, would make the DFA
   * matcher's shortest matches longer (regex_end). The anchors as RE2
   * reads them: $ at the very end, (?m)^ also after a final line feed
   * (RE2's \s and \v differ from PCRE's only at a vertical tab, which no
   * body here has). */
  pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                                   PCRE2_NO_AUTO_POSSESS | PCRE2_DOLLAR_ENDONLY |
                                       PCRE2_ALT_CIRCUMFLEX,
                                   &err, &at, NULL);
  ck_assert_msg(code, "PCRE2 refuses %s", re);
  return code;
}

/* Where the leftmost match of re in body[0..n) ends; -1 when none. */
static long leftmost_end(pcre2_code *code, const unsigned char *body, size_t n)
{
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
  int rc = pcre2_match(code, body, n, 0, 0, md, NULL);
  long end = rc >= 0 ? (long)pcre2_get_ovector_pointer(md)[1] : -1;
  pcre2_match_data_free(md);
  return end;
}

/* Where the first match of re in body to end, ends, by its definition:
 * the least end of any match of PCRE2 over the whole body; -1 when it
 * does not match. Found start by start with PCRE2's DFA matcher (the
 * shortest match anchored there), independently of scan's halving and of
 * the stream's reports. A regex the DFA matcher does not take (a back
 * reference) must have a fixed width, whose first end is its leftmost. */
static long regex_end(const char *re, const unsigned char *body, size_t n)
{
  pcre2_code *code = pcre(re);
  pcre2_match_data *md = pcre2_match_data_create(4, NULL);
  int ws[4096];
  long best = leftmost_end(code, body, n);
  for (size_t s = 0; best >= 0 && (long)s < best; s++) {
    int rc = pcre2_dfa_match(code, body, n, s, PCRE2_ANCHORED | PCRE2_DFA_SHORTEST, md, NULL, ws,
                             sizeof ws / sizeof ws[0]);
    if (rc == PCRE2_ERROR_DFA_UITEM || rc == PCRE2_ERROR_DFA_UCOND)
      break; /* leftmost, as for a back reference */
    ck_assert_msg(rc >= 0 || rc == PCRE2_ERROR_NOMATCH, "%s: DFA error %d", re, rc);
    if (rc >= 0 && (long)pcre2_get_ovector_pointer(md)[1] < best)
      best = (long)pcre2_get_ovector_pointer(md)[1];
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return best;
}

/* A fixed-width regex's first match ends where its leftmost one does. */
static long fixed_regex_end(const char *re, const unsigned char *body, size_t n)
{
  pcre2_code *code = pcre(re);
  long end = leftmost_end(code, body, n);
  pcre2_code_free(code);
  return end;
}

/* Checks that r lists matcher kind/value exactly when end >= 0, with
 * that offset. */
static void check_hit(const record *r, const char *kind, const char *value, long end,
                      const char *where)
{
  size_t i = 0;
  while (i < r->nmatches && (strcmp(r->match_kind[i], kind) || strcmp(r->match_value[i], value)))
    i++;
  if (end < 0) {
    ck_assert_msg(i == r->nmatches, "%s: %s %s hit at %ld, want none", where, kind, value,
                  r->match_offset[i]);
    return;
  }
  ck_assert_msg(i < r->nmatches, "%s: %s %s did not hit (want offset %ld)", where, kind, value,
                end);
  ck_assert_msg(r->match_offset[i] == end, "%s: %s %s at %ld, want %ld", where, kind, value,
                r->match_offset[i], end);
}

/* len pattern bytes from about at as text for a --word: the first
 * position from at - len + 1 on whose bytes hold no NUL, so that the word
 * takes in offset at when it can. */
static size_t pattern_text(size_t at, size_t len, char *out)
{
  size_t from = at >= len ? at - len + 1 : 0;
  while (memchr(pattern + from, '\0', len))
    from++;
  memcpy(out, pattern + from, len);
  out[len] = '\0';
  return from;
}

/* Bytes as a regex that matches them literally. */
static void re_literal(const char *bytes, size_t n, char *out)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strchr(".[]()*+?{}|^$\\", bytes[i]))
      out[k++] = '\\';
    out[k++] = bytes[i];
  }
  out[k] = '\0';
}

/* Verdicts equal to the whole-body matcher's, with the offsets where the
 * first matches end, over bodies in many slicings (1 byte, 7, 1000, 4 KiB
 * sends; chunked), codings (gzip, br, zstd, stacked), cut at caps, with
 * the words straddling slice boundaries, at the very end, past the cap
 * and absent. */
START_TEST(stream_verdicts)
{
  static const struct {
    const char *path;
    size_t n, cap; /* body length; --max-body (0: 4M) */
  } cases[] = {
      {"/bytes?n=300000&write=4096&delay_us=50", 300000, 0},
      {"/bytes?n=70000&te=chunked&write=7", 70000, 0},
      {"/bytes?n=3000&write=1", 3000, 0},
      {"/bytes?n=300000&write=1000", 300000, 200005}, /* the cap cuts word 2 */
      {"/bytes?n=300000", 300000, 10000},             /* the cap is before most */
      {"/gzip?n=300000&coding=gzip&write=1000", 300000, 0},
      {"/gzip?n=300000&coding=br", 300000, 0},
      {"/gzip?n=300000&coding=zstd&members=3", 300000, 0},
      {"/gzip?n=300000&coding=gzip-br", 300000, 0},
      {"/gzip?n=300000&coding=zstd", 300000, 100000},
  };
  /* Words across 3 * 4096, 65536 - 1 (a regex) and past 200000. */
  char w1[16], w2[16], r1[64], r2[64], a[16], b[8];
  pattern_text(3 * 4096, 10, w1);
  pattern_text(200004, 10, w2);
  size_t r1_at = pattern_text(65536, 12, a);
  memcpy(a, pattern + r1_at, 4);
  memcpy(b, pattern + r1_at + 9, 3);
  char ea[16], eb[16];
  re_literal(a, 4, ea);
  re_literal(b, 3, eb);
  snprintf(r1, sizeof r1, "%s.{5}%s", ea, eb);
  re_literal((const char *)pattern, 6, ea);
  snprintf(r2, sizeof r2, "^%s", ea);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *coding = strstr(cases[c].path, "coding=");
    if (coding && ((strstr(coding, "br") && !ts_can_encode("br")) ||
                   (strstr(coding, "zstd") && !ts_can_encode("zstd"))))
      continue; /* this server cannot send it */
    size_t n = cases[c].cap && cases[c].cap < cases[c].n ? cases[c].cap : cases[c].n;
    /* The body's last 8 bytes as a word, and its last 5 as "...$". */
    char w_end[16], r_end[64], tail[8];
    memcpy(w_end, pattern + n - 8, 8);
    w_end[8] = '\0';
    ck_assert_msg(!memchr(w_end, '\0', 8), "the body ends in a NUL; pick another length");
    memcpy(tail, pattern + n - 5, 5);
    re_literal(tail, 5, ea);
    snprintf(r_end, sizeof r_end, "%s$", ea);
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", cases[c].cap ? cases[c].cap : 4 * MiB);
    const char *opts[] = {"--max-body", cap,       "--word",     w1,       "--word",
                          w2,           "--word",  w_end,        "--word", "absent-word-!",
                          "--regex",    r1,        "--regex",    r2,       "--regex",
                          r_end,        "--regex", "absent-(x)", NULL};
    record r = scan_one(cases[c].path, opts);
    ck_assert_msg(r.error_null && r.body_bytes == n && r.truncated == (n < cases[c].n),
                  "%s: error %s, %zu bytes", cases[c].path, r.error, r.body_bytes);
    const char *const words[] = {w1, w2, w_end, "absent-word-!"};
    int any_word = 0, any_regex = 0;
    for (size_t i = 0; i < 4; i++) {
      long end = first_end(pattern, n, words[i], strlen(words[i]));
      check_hit(&r, "word", words[i], end, cases[c].path);
      any_word |= end >= 0;
    }
    const char *const regexes[] = {r1, r2, r_end, "absent-(x)"};
    for (size_t i = 0; i < 4; i++) {
      long end = fixed_regex_end(regexes[i], pattern, n);
      check_hit(&r, "regex", regexes[i], end, cases[c].path);
      any_regex |= end >= 0;
    }
    ck_assert_int_eq(r.matched, any_word && any_regex);
    ck_assert(!r.stopped);
  }
}
END_TEST

/* The first occurrence of needle in hay in any ASCII case, as the offset
 * of its end; -1 when there is none. */
static long first_end_nocase(const unsigned char *hay, size_t n, const char *needle, size_t k)
{
  for (size_t i = 0; i + k <= n; i++)
    if (strncasecmp((const char *)hay + i, needle, k) == 0)
      return (long)(i + k);
  return -1;
}

/* --iword: a word in any ASCII case, on the stream and off it (header
 * lines), at the offset where its first occurrence in any case ends; the
 * same text given to --word, in the case it is not written, misses. */
START_TEST(iword_matcher)
{
  static const char *const paths[] = {"/bytes?n=200000&write=7",
                                      "/gzip?n=200000&coding=gzip&write=1000"};
  char w1[16], w2[16], upper[16];
  pattern_text(3 * 4096, 10, w1);
  pattern_text(150001, 9, w2);
  for (size_t i = 0; w1[i]; i++)
    w1[i] = (char)toupper((unsigned char)w1[i]);
  for (size_t i = 0; w2[i]; i++)
    w2[i] = (char)(i % 2 ? toupper((unsigned char)w2[i]) : w2[i]);
  snprintf(upper, sizeof upper, "%s", w1);
  ck_assert_msg(first_end(pattern, 200000, upper, strlen(upper)) < 0, "%s: pick another", upper);
  const char *opts[] = {"--iword", w1, "--iword", w2, "--iword", "ABSENT-word", "--word", upper,
                        NULL};
  for (size_t c = 0; c < sizeof paths / sizeof paths[0]; c++) {
    record r = scan_one(paths[c], opts);
    ck_assert(r.error_null && r.matched);
    check_hit(&r, "word", w1, first_end_nocase(pattern, 200000, w1, strlen(w1)), paths[c]);
    check_hit(&r, "word", w2, first_end_nocase(pattern, 200000, w2, strlen(w2)), paths[c]);
    check_hit(&r, "word", "ABSENT-word", -1, paths[c]);
    ck_assert_uint_eq(r.nmatches, 2); /* not the --word in upper case */
  }
  const char *header[] = {"--part", "header", "--iword", "SET-COOKIE: B=2", NULL};
  record r = scan_one("/headers", header);
  ck_assert(r.matched && r.nmatches == 1 && r.match_offset[0] == -1);
}
END_TEST

/* A stream narrows to the matchers still without a hit once those all
 * have a bounded width, and replays what it needs of the bytes it saw:
 * words packed close behind one another (the next one often straddles
 * the slice after which the last hit narrowed the stream) and words
 * across 4 KiB boundaries (the slices of write=4096) must still be found
 * at their first ends, in slicings down to single bytes. An unbounded
 * regex that hits at once holds narrowing back until it does; an absent
 * word and regex keep the stream going to the end. */
START_TEST(narrowing)
{
  static const struct {
    const char *path;
    size_t n;
  } cases[] = {
      {"/bytes?n=400&write=1&delay_us=100", 400}, /* one byte per slice */
      {"/bytes?n=30000&write=1", 30000},
      {"/bytes?n=30000&write=7", 30000},
      {"/bytes?n=30000&te=chunked&write=13", 30000},
      {"/bytes?n=30000&write=4096&delay_us=50", 30000},
      {"/gzip?n=30000&coding=gzip&write=1000", 30000},
  };
  enum { PACKED = 6, ACROSS = 4, NWORDS = PACKED + ACROSS };
  char words[NWORDS][20];
  for (size_t i = 0; i < PACKED; i++)
    pattern_text(55 + 3 * i, 16, words[i]);
  for (size_t i = 0; i < ACROSS; i++)
    pattern_text(4096 * (i + 2) + 7, 16, words[PACKED + i]);
  const char *unbounded = "[a-z]+ +[a-z]+";
  const char *opts[2 * (NWORDS + 3) + 1];
  size_t k = 0;
  for (size_t i = 0; i < NWORDS; i++) {
    opts[k++] = "--word";
    opts[k++] = words[i];
  }
  const char *const more[] = {"--word",  "absent-word-!", "--regex",
                              unbounded, "--regex",       "absent-(x)"};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    opts[k++] = more[i];
  opts[k] = NULL;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *path = cases[c].path;
    size_t n = cases[c].n;
    record r = scan_one(path, opts);
    ck_assert_msg(r.error_null && r.body_bytes == n, "%s: error %s, %zu bytes", path, r.error,
                  r.body_bytes);
    for (size_t i = 0; i < NWORDS; i++)
      check_hit(&r, "word", words[i], first_end(pattern, n, words[i], strlen(words[i])), path);
    check_hit(&r, "word", "absent-word-!", -1, path);
    check_hit(&r, "regex", unbounded, regex_end(unbounded, pattern, n), path);
    check_hit(&r, "regex", "absent-(x)", -1, path);
    ck_assert(r.matched);
  }
}
END_TEST

/* The body of /html?title=T, T given decoded: as the server writes it. */
static size_t html_body(const char *title, size_t tlen, unsigned char *out)
{
  static const char head[] =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<TITLE lang=en>";
  static const char tail[] = "</title></head>\n<body><h1>hello</h1></body></html>\n";
  size_t n = 0;
  memcpy(out, head, sizeof head - 1);
  n += sizeof head - 1;
  memcpy(out + n, title, tlen);
  n += tlen;
  memcpy(out + n, tail, sizeof tail - 1);
  return n + sizeof tail - 1;
}

/* The meaning of a regex is PCRE2's, whichever engine runs it, with
 * RE2's anchors: PCRE syntax as scanners write it ((?i), (?s), (?m),
 * (?:...), \d \s \w \b, lazy quantifiers, {n,m}, classes); '.' is any
 * byte but a line feed, $ the very end (not before a final line feed),
 * ^ the start; NUL bytes are bytes.
 * The first set streams where Vectorscan is built in; the second (back
 * references, lookarounds, an empty match) runs with PCRE2 over the kept
 * body in both builds. Offsets too, against PCRE2 over the whole body,
 * delivered 3 bytes at a time. */
START_TEST(regex_meaning)
{
  static const char title[] = "a\0b a\nb anb n\\k ]q 12345 (x) aaaaaa xyzzy "
                              "bitrix/js/main/core Scanner";
  static const char encoded[] = "a%00b+a%0Ab+anb+n%5Ck+%5Dq+12345+%28x%29+aaaaaa+xyzzy+"
                                "bitrix%2Fjs%2Fmain%2Fcore+Scanner&write=3&delay_us=20";
  static const char *const streamable[] = {
      "a.b",         "(?s)a.b",           "a[^x]b",
      "a\\nb",       "html>$",            "html>\\z",
      "html>\\n\\z", "^<!DOCTYPE",        "(?m)^<body",
      "^html",       "[]q]q",             "[[:digit:]]{3}",
      "\\d{2,4}",    "a+?b",              "(?:a|b)*nb",
      "\\(x\\)",     "\\w\\w\\W\\S",      "\\s+a",
      "title.*xyzzy", "(?i)TITLE LANG",   "\\bxyzzy\\b",
      "\\Bnb",       "z{2}y|>hel",        "a.*?y",
      "x{0,2}yz+y",  "^$",                "(?m)y$",
      "bitrix(?:\\.info/|/js/main/core)", "(?i)scanner", "\\d+"};
  static const char *const whole[] = {"(a)\\1\\1", "x*",       "(z)\\1y",   "(?<=12)345",
                                      "(?<!a)nb",  "a(?=\\x00)", "\\](?C1)q", "(?C2)\\d+?5"};
  unsigned char body[1024];
  size_t n = html_body(title, sizeof title - 1, body);
  char path[256];
  snprintf(path, sizeof path, "/html?title=%s", encoded);
  int streams = scan_streams();
  for (int set = 0; set < 2; set++) {
    const char *const *res = set ? whole : streamable;
    size_t count = set ? sizeof whole / sizeof *whole : sizeof streamable / sizeof *streamable;
    char err_path[256];
    temp_path(err_path, sizeof err_path, "err");
    char url[256];
    const char *args[64] = {"-u", ts_url(srv, path, url, sizeof url)};
    size_t k = 2;
    for (size_t i = 0; i < count; i++) {
      args[k++] = "--regex";
      args[k++] = res[i];
    }
    args[k] = NULL;
    ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
    record *recs;
    ck_assert_uint_eq(read_records(&recs), 1);
    ck_assert_uint_eq(recs[0].body_bytes, n);
    for (size_t i = 0; i < count; i++)
      check_hit(&recs[0], "regex", res[i], regex_end(res[i], body, n), "/html");
    free(recs);
    /* Bodies are kept only for matchers that need them whole: none of
     * the first set's when they stream. */
    char *err = slurp(err_path);
    int kept = strstr(err, "bodies kept") != NULL;
    ck_assert_msg(kept == (set == 1 || !streams), "%s", err);
    free(err);
    unlink(err_path);
  }
}
END_TEST

/* The regexes of pcre_bodies: PCRE syntax over the pattern's words, some
 * that Vectorscan takes (the first PCRE_STREAMABLE) and some only PCRE2
 * does (a back reference, lookarounds). */
static const char *const PCRE_PATTERNS[] = {
    "(?i)OFFICIA ",  "\\d{7}\\n",        "\\blaborum\\.",     "(?:pariat|except)\\.? +\\w",
    "\\x00\\x01\\x7f\\x80", "(?s)0123456.\\x00", "mollit\\s+\\w+?\\s", "(?m)^\\x00",
    "[[:upper:]]",   "(?i)absent-\\d+",  "sunt {4}c[a-z]{1,4}a",
    "(l)\\1",        "(?<=qui {5})[a-z]+", "culpa(?! {3}qui)"};
#define PCRE_STREAMABLE 11

/* Verdicts and offsets of PCRE syntax over bodies in slices of every size
 * and in each coding: the same as PCRE2's over the whole body, in both
 * builds (so the builds agree), with the matches straddling slices. */
START_TEST(pcre_bodies)
{
  static const struct {
    const char *path;
    size_t n;
  } cases[] = {
      {"/bytes?n=200000&write=7", 200000},
      {"/bytes?n=100000&te=chunked&write=4096&delay_us=50", 100000},
      {"/gzip?n=200000&coding=gzip&write=1000", 200000},
      {"/gzip?n=200000&coding=br", 200000},
      {"/gzip?n=200000&coding=zstd&members=3", 200000},
  };
  size_t count = sizeof PCRE_PATTERNS / sizeof *PCRE_PATTERNS;
  const char *opts[2 * 16 + 1];
  for (size_t i = 0; i < count; i++) {
    opts[2 * i] = "--regex";
    opts[2 * i + 1] = PCRE_PATTERNS[i];
  }
  opts[2 * count] = NULL;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *coding = strstr(cases[c].path, "coding=");
    if (coding && ((strstr(coding, "br") && !ts_can_encode("br")) ||
                   (strstr(coding, "zstd") && !ts_can_encode("zstd"))))
      continue; /* this server cannot send it */
    record r = scan_one(cases[c].path, opts);
    ck_assert_msg(r.error_null && r.body_bytes == cases[c].n, "%s: error %s, %zu bytes",
                  cases[c].path, r.error, r.body_bytes);
    int any = 0;
    for (size_t i = 0; i < count; i++) {
      long end = regex_end(PCRE_PATTERNS[i], pattern, cases[c].n);
      check_hit(&r, "regex", PCRE_PATTERNS[i], end, cases[c].path);
      any |= end >= 0;
    }
    ck_assert_int_eq(r.matched, any);
  }
}
END_TEST

/* Where each regex runs: where Vectorscan is built in, on the stream for
 * those it takes, the others with PCRE2 over the kept body; without it,
 * all with PCRE2. The summary says so. */
START_TEST(pcre_engines)
{
  int streams = scan_streams();
  for (int set = 0; set < 2; set++) {
    size_t from = set ? PCRE_STREAMABLE : 0;
    size_t to = set ? sizeof PCRE_PATTERNS / sizeof *PCRE_PATTERNS : PCRE_STREAMABLE;
    const char *args[2 * 16 + 4] = {"-u", urls[0]};
    size_t k = 2;
    for (size_t i = from; i < to; i++) {
      args[k++] = "--regex";
      args[k++] = PCRE_PATTERNS[i];
    }
    args[k] = NULL;
    char err_path[256], want[128];
    temp_path(err_path, sizeof err_path, "err");
    ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
    snprintf(want, sizeof want, "body matchers: %zu streamed", streams && !set ? to - from : 0);
    char *err = slurp(err_path);
    ck_assert_msg(strstr(err, want), "want \"%s\": %s", want, err);
    free(err);
    unlink(err_path);
  }
}
END_TEST

/* A regex PCRE2 refuses is a usage error that gives PCRE2's message and
 * the offset where it stopped; in both builds, whatever Vectorscan takes. */
START_TEST(regex_refused)
{
  static const struct {
    const char *re, *message;
  } cases[] = {
      {"a(b", "missing closing parenthesis at offset 3"},
      {"(?<=a+)b", "lookbehind assertion is not fixed length at offset"},
      {"x{2,1}", "numbers out of order in {} quantifier at offset 5"},
      {"[z-a]", "range out of order in character class at offset 3"},
      {"\\", "\\ at end of pattern at offset 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err_path[256];
    temp_path(err_path, sizeof err_path, "err");
    const char *args[] = {"-u", urls[0], "--regex", cases[i].re, NULL};
    ck_assert_int_eq(run_example("scan", args, NULL, err_path), 2);
    char *err = slurp(err_path);
    ck_assert_msg(strstr(err, "invalid regex") && strstr(err, cases[i].message), "%s: %s",
                  cases[i].re, err);
    free(err);
    unlink(err_path);
  }
}
END_TEST

/* Reads "peak in use N MiB" from scan's summary. */
static double pool_peak(const char *err_path)
{
  char *err = slurp(err_path);
  const char *p = strstr(err, "peak in use ");
  ck_assert_msg(p, "no summary: %s", err);
  double mib = strtod(p + 12, NULL);
  free(err);
  return mib;
}

/* What extractor re finds in body[0..n), by its definition, into the
 * values of a record (e: its index): successive matches of PCRE2 over the
 * whole body, each search from where the last match ended (one byte on
 * after an empty one); group 1 when the regex has groups, else the whole
 * match; cut at 1 KiB; empty and repeated values left out; the first 100.
 * Returns the number of values. */
static size_t extract_ref(const char *re, const unsigned char *body, size_t n, record *want,
                          size_t e)
{
  pcre2_code *code = pcre(re);
  uint32_t groups;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
  static char seen[100][1024];
  static size_t lens[100];
  want->nvalues[e] = 0;
  for (size_t at = 0; at <= n && want->nvalues[e] < 100;) {
    if (pcre2_match(code, body, n, at, 0, md, NULL) < 0)
      break;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t from = groups ? ov[2] : ov[0], to = groups ? ov[3] : ov[1];
    at = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
    if (from == PCRE2_UNSET || to == from)
      continue;
    size_t len = to - from < 1024 ? to - from : 1024, k = 0;
    while (k < want->nvalues[e] && (lens[k] != len || memcmp(seen[k], body + from, len)))
      k++;
    if (k < want->nvalues[e])
      continue;
    memcpy(seen[k], body + from, len);
    lens[k] = len;
    if (k < MAX_VALUES) {
      memcpy(want->extract_value[e][k], body + from, len);
      want->extract_len[e][k] = len;
    }
    want->nvalues[e]++;
  }
  pcre2_match_data_free(md);
  pcre2_code_free(code);
  return want->nvalues[e];
}

/* Checks that r's extracts for re are the values want holds at e (or
 * that re has none in r when there are none). */
static void check_extract(const record *r, const char *re, const record *want, size_t e,
                          const char *where)
{
  size_t i = 0;
  while (i < r->nextracts && strcmp(r->extract_key[i], re) != 0)
    i++;
  if (want->nvalues[e] == 0) {
    ck_assert_msg(i == r->nextracts, "%s: %s extracted %zu values, want none", where, re,
                  r->nvalues[i]);
    return;
  }
  ck_assert_msg(i < r->nextracts, "%s: %s extracted nothing", where, re);
  ck_assert_msg(r->nvalues[i] == want->nvalues[e], "%s: %s: %zu values, want %zu", where, re,
                r->nvalues[i], want->nvalues[e]);
  for (size_t k = 0; k < want->nvalues[e] && k < MAX_VALUES; k++)
    ck_assert_msg(r->extract_len[i][k] == want->extract_len[e][k] &&
                      !memcmp(r->extract_value[i][k], want->extract_value[e][k],
                              want->extract_len[e][k]),
                  "%s: %s: value %zu differs", where, re, k);
}

/* --extract over bodies in slices down to one byte and in each coding:
 * the values PCRE2 finds over the whole body, in both builds, whether the
 * matches straddle slices or not, with a group or without, and the body
 * is not kept for them. */
START_TEST(extracts)
{
  static const struct {
    const char *path;
    size_t n;
  } cases[] = {
      {"/bytes?n=30000&write=1", 30000},
      {"/bytes?n=200000&write=7", 200000},
      {"/bytes?n=100000&te=chunked&write=4096&delay_us=50", 100000},
      {"/gzip?n=200000&coding=gzip&write=1000", 200000},
      {"/gzip?n=200000&coding=br", 200000},
      {"/gzip?n=200000&coding=zstd&members=3", 200000},
  };
  static const char *const res[] = {"(?i)(officia) ",
                                    "(\\d{3})\\d{4}\\n",
                                    "(?:pariat|except)\\.? +(\\w)",
                                    "\\bl[a-z]+",
                                    "(l)\\1",
                                    "(?<=qui {5})[a-z]+",
                                    "absent-(\\d)",
                                    "(?s)(.{4})$",
                                    "cupidat +(n)on",
                                    "(?s)sunt.{0,40}?(culpa|qui)"};
  size_t count = sizeof res / sizeof *res;
  const char *opts[2 * 12 + 1];
  for (size_t i = 0; i < count; i++) {
    opts[2 * i] = "--extract";
    opts[2 * i + 1] = res[i];
  }
  opts[2 * count] = NULL;
  static record want;
  for (size_t i = 0; i < count; i++)
    extract_ref(res[i], pattern, 200000, &want, i);
  ck_assert_uint_gt(want.nvalues[3], 3); /* several values, in order */
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *coding = strstr(cases[c].path, "coding=");
    if (coding && ((strstr(coding, "br") && !ts_can_encode("br")) ||
                   (strstr(coding, "zstd") && !ts_can_encode("zstd"))))
      continue; /* this server cannot send it */
    for (size_t i = 0; i < count; i++)
      extract_ref(res[i], pattern, cases[c].n, &want, i);
    record r = scan_one(cases[c].path, opts);
    ck_assert_msg(r.error_null && r.body_bytes == cases[c].n, "%s: error %s", cases[c].path,
                  r.error);
    for (size_t i = 0; i < count; i++)
      check_extract(&r, res[i], &want, i, cases[c].path);
  }
}
END_TEST

/* The bounds: at most 100 values per extractor, each cut at 1 KiB; a
 * body of 3 MiB is not kept for them (the pool's peak stays under it). */
START_TEST(extract_bounds)
{
  char err_path[256], url[256];
  temp_path(err_path, sizeof err_path, "err");
  ts_url(srv, "/bytes?n=3M&write=65536", url, sizeof url);
  const char *args[] = {"-u", url, "--extract", "(?s)...", "--extract", "(?s)(.{1500})", NULL};
  ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 1);
  static record want;
  extract_ref("(?s)...", pattern, 3 * MiB, &want, 0);
  extract_ref("(?s)(.{1500})", pattern, 3 * MiB, &want, 1);
  ck_assert_uint_eq(want.nvalues[0], 100);
  ck_assert_uint_eq(want.extract_len[1][0], 1024);
  check_extract(&recs[0], "(?s)...", &want, 0, "3M");
  check_extract(&recs[0], "(?s)(.{1500})", &want, 1, "3M");
  free(recs);
  ck_assert_msg(pool_peak(err_path) < 1.0, "the body was kept");
  /* Vectorscan takes both, as a prefilter, where it is built in. */
  char *err = slurp(err_path);
  ck_assert_msg(strstr(err, scan_streams() ? "extractors: 2 on the stream (PCRE2), 2 of them"
                                           : "extractors: 2 on the stream (PCRE2), 0 of them"),
                "%s", err);
  free(err);
  unlink(err_path);
}
END_TEST


/* A body that no matcher needs whole is not kept: the pool holds no body
 * memory, however large the bodies; body_bytes still counts them, and the
 * title is read from the stream. */
START_TEST(bodies_not_kept)
{
  char err_path[256], url[160];
  temp_path(err_path, sizeof err_path, "err");
  ts_url(srv, "/bytes?n=3M", url, sizeof url);
  const char *plain[] = {"-u", url, "-u", url, NULL};
  ck_assert_int_eq(run_example("scan", plain, NULL, err_path), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 2);
  ck_assert_uint_eq(recs[0].body_bytes, 3 * MiB);
  free(recs);
  ck_assert_double_lt(pool_peak(err_path), 1.0);

  /* A word: streamed with Vectorscan (not kept), else over the body kept. */
  const char *word[] = {"-u", url, "--word", "officia", NULL};
  ck_assert_int_eq(run_example("scan", word, NULL, err_path), 0);
  if (scan_streams())
    ck_assert_double_lt(pool_peak(err_path), 1.0);
  else
    ck_assert_double_ge(pool_peak(err_path), 3.0);

  /* The title of an HTML page, from the stream. */
  const char *title[] = {"-u", ts_url(srv, "/html?title=Streamed&write=5", url, sizeof url), NULL};
  ck_assert_int_eq(run_example("scan", title, NULL, err_path), 0);
  ck_assert_uint_eq(read_records(&recs), 1);
  ck_assert_str_eq(recs[0].title, "Streamed");
  free(recs);
  unlink(err_path);
}
END_TEST

/* --stop-on-match: a transfer ends once its verdict is known (every
 * matcher hit, or the status rules the target out), far before a large
 * slow body ends; "stopped" says so, and it is not an error. A matcher
 * that needs the whole body lets it run to the end. */
START_TEST(stop_on_match)
{
  const char *slow = "/bytes?n=8M&write=16384&delay_us=2000";
  char word[16];
  pattern_text(40000, 10, word);
  long end = first_end(pattern, MAX_BODY, word, 10);
  int streams = scan_streams();
  const char *opts[] = {"--max-body", "8M", "--stop-on-match", "--word", word, NULL};
  record r = scan_one(slow, opts);
  if (streams) {
    ck_assert_msg(r.stopped && r.error_null && r.matched, "stopped %d, error %s", r.stopped,
                  r.error);
    ck_assert_uint_lt(r.body_bytes, MiB); /* the word is at 40 KB of 8 MiB */
    ck_assert_uint_ge(r.body_bytes, (size_t)end);
    check_hit(&r, "word", word, end, slow);
  } else {
    /* The word is matched over the body kept whole: it runs to the end. */
    ck_assert(!r.stopped && r.matched && r.body_bytes == 8 * MiB);
  }

  /* The status rules the target out: it stops at the body's first bytes. */
  const char *status[] = {"--max-body", "8M", "--stop-on-match", "--status", "404", "--word",
                          word,         NULL};
  r = scan_one(slow, status);
  ck_assert_msg(r.stopped && r.error_null && !r.matched && r.nmatches == 0, "%s", r.error);
  ck_assert_uint_lt(r.body_bytes, MiB);

  /* Two words, one absent: the verdict is known only at the end. */
  const char *absent[] = {"--stop-on-match", "--word", word, "--word", "absent-word-!", NULL};
  r = scan_one("/bytes?n=300000", absent);
  ck_assert(!r.stopped && r.error_null && r.matched && r.body_bytes == 300000);

  /* A matcher that needs the body whole (a back reference). */
  const char *whole[] = {"--stop-on-match", "--word", word, "--regex", "(q)\\1", NULL};
  r = scan_one("/bytes?n=300000", whole);
  ck_assert(!r.stopped && r.body_bytes == 300000);

  /* Header lines only: known once the head is in. */
  const char *header[] = {"--max-body", "8M",     "--stop-on-match", "--part",
                          "header",     "--word", "Content-Length",  NULL};
  r = scan_one(slow, header);
  ck_assert(r.stopped && r.matched && r.body_bytes < MiB);
}
END_TEST

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
                          {"stray", NULL},
                          /* Values as examples/args.h reads them. */
                          {"--max-body", " -5", NULL},
                          {"--max-body", "0x10", NULL},
                          {"--timeout", "0x1p-3", NULL},
                          {"--timeout", "1e3", NULL},
                          {"--shard", " 1/2", NULL},
                          {"--status", " 200", NULL},
                          {"-c", "+5", NULL}};
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

/* A timeout under a millisecond is one millisecond, not 0 (which would
 * mean none): a body sent over 40 ms does not arrive in time. The time may
 * run out while connecting or while the body arrives, by how the machine
 * schedules the two: either is a timeout. */
START_TEST(short_timeout)
{
  const char *opts[] = {"--timeout", "0.0004", NULL};
  record r = scan_one("/bytes?n=400&write=1&delay_us=100", opts);
  const char *prefix = "transfer failed: ";
  ck_assert_msg(!r.error_null && strncmp(r.error, prefix, strlen(prefix)) == 0 &&
                    curl_says_timeout(r.error + strlen(prefix)),
                "error %s", r.error);
  ck_assert(r.failed);
  ck_assert_uint_lt(r.body_bytes, 400);
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
  record r;
  ck_assert_msg(parse_record(got, &r) == 0 && !strcmp(r.input, a) && r.body_bytes == 11, "%s", got);
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
  const char *plain[] = {"--regex", "(?s)^GET /echo .*\r\nUser-Agent: respchain-scan/", NULL};
  ck_assert(scan_one("/echo", plain).matched);
}
END_TEST

/* --proxy: the loopback server is the proxy; a target on a name that does
 * not resolve reaches it (as an absolute URL, which it routes by its path:
 * one it does not serve, 404). */
START_TEST(proxy)
{
  char proxy_url[96];
  ts_url(srv, "", proxy_url, sizeof proxy_url);
  const char *via[] = {"--proxy", proxy_url, NULL};
  unsigned long before = ts_requests(srv);
  record r = scan_one("http://rc-scan-test.invalid/no-such-page", via);
  ck_assert_msg(r.error_null && r.status == 404, "status %ld, error %s", r.status, r.error);
  ck_assert_uint_eq(ts_requests(srv) - before, 1);

  const char *direct[] = {NULL};
  r = scan_one("http://rc-scan-test.invalid/no-such-page", direct);
  ck_assert(!r.error_null && r.status == 0);
}
END_TEST

/* A CONNECT proxy for proxy_connect: one connection at a time, each
 * tunnelled to the 127.0.0.1 port its CONNECT names. */
typedef struct relay {
  int fd, port;
  int connects; /* CONNECT requests answered */
  pthread_t thread;
} relay;

/* Copies what arrives on either socket to the other until one closes. */
static void relay_pipe(int a, int b)
{
  struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  char buf[16384];
  while (poll(p, 2, 10000) > 0) {
    for (int i = 0; i < 2; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n <= 0 || write(p[1 - i].fd, buf, (size_t)n) != n)
        return;
    }
  }
}

/* Reads a CONNECT request head, connects, answers 200, then relays. */
static void relay_one(relay *rl, int c)
{
  char head[4096];
  size_t n = 0;
  head[0] = '\0';
  while (n < sizeof head - 1 && !strstr(head, "\r\n\r\n")) {
    ssize_t k = read(c, head + n, sizeof head - 1 - n);
    if (k <= 0)
      return;
    n += (size_t)k;
    head[n] = '\0';
  }
  int port;
  if (sscanf(head, "CONNECT 127.0.0.1:%d ", &port) != 1)
    return;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int up = socket(AF_INET, SOCK_STREAM, 0);
  if (up >= 0 && connect(up, (struct sockaddr *)&addr, sizeof addr) == 0) {
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    rl->connects++;
    if (write(c, ok, sizeof ok - 1) == (ssize_t)(sizeof ok - 1))
      relay_pipe(c, up);
  }
  if (up >= 0)
    close(up);
}

static void *relay_main(void *arg)
{
  relay *rl = arg;
  int c;
  while ((c = accept(rl->fd, NULL, NULL)) >= 0) {
    relay_one(rl, c);
    close(c);
  }
  return NULL;
}

static void relay_start(relay *rl)
{
  struct sockaddr_in addr = {.sin_family = AF_INET};
  socklen_t alen = sizeof addr;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  memset(rl, 0, sizeof *rl);
  rl->fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(rl->fd, 0);
  ck_assert_int_eq(bind(rl->fd, (struct sockaddr *)&addr, sizeof addr), 0);
  ck_assert_int_eq(listen(rl->fd, 8), 0);
  ck_assert_int_eq(getsockname(rl->fd, (struct sockaddr *)&addr, &alen), 0);
  rl->port = ntohs(addr.sin_port);
  ck_assert_int_eq(pthread_create(&rl->thread, NULL, relay_main, rl), 0);
}

static void relay_stop(relay *rl)
{
  shutdown(rl->fd, SHUT_RDWR); /* accept fails: the thread ends */
  pthread_join(rl->thread, NULL);
  close(rl->fd);
}

/* An https target through a CONNECT proxy: the proxy's 200 to CONNECT is
 * not a hop of the target's chain (chain_status_codes and hops as without
 * the proxy), and is reported on its own as connect_status_code, null
 * without a proxy. Over HTTP/1.1 and HTTP/2 (ALPN inside the tunnel). */
START_TEST(proxy_connect)
{
  h2_server *h2 = h2_start();
  ck_assert_ptr_nonnull(h2);
  char url[256], proxy_url[64];
  h2_url(h2, "/p/1k", url, sizeof url);
  relay rl;
  relay_start(&rl);
  snprintf(proxy_url, sizeof proxy_url, "http://127.0.0.1:%d", rl.port);
  static const char *const versions[] = {"--http1.1", "--http2"};
  for (size_t i = 0; i < 2; i++) {
    const char *direct[] = {"-k", versions[i], NULL};
    const char *via[] = {"-k", versions[i], "--proxy", proxy_url, NULL};
    record d = scan_one(url, direct);
    int before = rl.connects;
    record p = scan_one(url, via);
    ck_assert_int_eq(rl.connects, before + 1);
    for (int k = 0; k < 2; k++) {
      const record *r = k ? &p : &d;
      ck_assert_msg(r->error_null && r->status == 200, "%s: error %s", versions[i], r->error);
      ck_assert_msg(r->nchain == 1 && r->chain[0] == 200 && r->hops == 1,
                    "%s%s: %zu hops in the chain", versions[i], k ? " via the proxy" : "",
                    r->nchain);
      ck_assert_uint_eq(r->body_bytes, 1024);
    }
    ck_assert_int_eq(d.connect_code, -1);
    ck_assert_int_eq(p.connect_code, 200);
  }
  relay_stop(&rl);
  h2_stop(h2);
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
 * (a generous lower bound measured around the whole run); a rate of 1000
 * lets the same 10 go. How fast a run without a limit is, or how much
 * later than its slots a rated one ends, depends on the machine's load and
 * is not asserted. */
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
  ck_assert_msg(took >= 0.42, "10 requests at 20/s took %.3f s", took);

  args[4] = "1000";
  before = ts_requests(srv);
  ck_assert_int_eq(run_scan(args), 0);
  ck_assert_uint_eq(ts_requests(srv) - before, 10);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 10);
  free(recs);
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

/* A regex with a back reference: no streaming engine takes it, so it runs
 * over the body kept whole, and bodies are kept (without a matcher that
 * needs them they are not, and nothing spills or waits). */
#define KEEP_BODIES "--regex", "(q)\\1"

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

  const char *spilling[] = {"-l", targets_path, "--max-memory", "64k", KEEP_BODIES, NULL};
  ck_assert_int_eq(run_example("scan", spilling, NULL, err_path), 0);
  unsigned long pauses, spills;
  pool_counts(err_path, &pauses, &spills);
  ck_assert_uint_ge(spills, 3); /* 100k, 3M, 200k, the bomb at least */
  /* Without such a matcher no body is kept: nothing to spill. */
  const char *not_kept[] = {"-l", targets_path, "--max-memory", "64k", NULL};
  ck_assert_int_eq(run_example("scan", not_kept, NULL, err_path), 0);
  pool_counts(err_path, &pauses, &spills);
  ck_assert_uint_eq(spills, 0);

  char big[160];
  /* Each body takes the server at least 127 ms (128 writes 1 ms apart):
   * the six overlap, so under --overflow wait the budget makes some wait. */
  ts_url(srv, "/bytes?n=2M&write=16384&delay_us=1000", big, sizeof big);
  static const char *const modes[] = {"spill", "wait"};
  for (size_t m = 0; m < 2; m++) {
    const char *args[32] = {"-c", "6", "--budget", "1M", "--overflow", modes[m], KEEP_BODIES};
    size_t n = 8;
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

/* -X HEAD: the headers of a response that announces a body, and no body
 * (without CURLOPT_NOBODY curl would wait for it until --timeout). */
START_TEST(head_method)
{
  const char *head[] = {"-X", "HEAD", "--timeout", "20", NULL};
  record r = scan_one("/bytes?n=3M", head);
  ck_assert_msg(r.error_null, "%s", r.error);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.method, "HEAD");
  ck_assert(!r.content_length_null);
  ck_assert_int_eq(r.content_length, 3 * MiB);
  ck_assert_uint_eq(r.body_bytes, 0);
  ck_assert(r.matched);

  r = scan_one("/redirect?n=1", head);
  ck_assert_msg(r.error_null, "%s", r.error);
  ck_assert_int_eq(r.hops, 3);
  ck_assert_int_eq(r.chain[0], 302);
  ck_assert_int_eq(r.chain[2], 200);
  ck_assert_int_eq(r.content_length, 10);
  ck_assert_uint_eq(r.body_bytes, 0);
}
END_TEST

/* Scans /html with the given (URL-encoded) title; returns the record. */
static record scan_title(const char *encoded)
{
  size_t cap = strlen(encoded) + 32;
  char *path = malloc(cap);
  ck_assert_ptr_nonnull(path);
  snprintf(path, cap, "/html?title=%s", encoded);
  const char *none[] = {NULL};
  record r = scan_one(path, none);
  free(path);
  ck_assert_msg(r.error_null, "%s", r.error);
  return r;
}

/* "title": the text of an HTML body's <title>, references decoded, white
 * space folded, bounded, valid UTF-8; null for other bodies. */
START_TEST(title)
{
  static const struct {
    const char *encoded, *want;
  } cases[] = {
      {"Hello", "Hello"},
      {"%20%20A%0A%09B%20%20", "A B"},
      {"Tom+%26amp%3B+Jerry", "Tom & Jerry"},
      {"%26lt%3Bb%26gt%3B+%26quot%3Bq%26quot%3B+%26%2339%3B+%26apos%3B", "<b> \"q\" ' '"},
      {"caf%26%23xE9%3B+%26%23233%3B", "caf\xc3\xa9 \xc3\xa9"},
      {"%26%23x1F600%3B", "\xf0\x9f\x98\x80"},
      {"%26%230%3B%26%23xD800%3B", "\xef\xbf\xbd\xef\xbf\xbd"}, /* not characters */
      {"%26bogus%3B+%26+%26%23x%3B", "&bogus; & &#x;"},
      {"caf%C3%A9", "caf\xc3\xa9"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    record r = scan_title(cases[i].encoded);
    ck_assert_msg(!r.title_null && !strcmp(r.title, cases[i].want), "title %s: got %s",
                  cases[i].encoded, r.title);
    ck_assert_str_eq(r.content_type, "text/html; charset=utf-8");
    ck_assert_str_eq(r.webserver, "respchain-test/1");
  }
  /* A long title is cut at 1024 bytes, never inside a character. */
  char *long_title = malloc(4096);
  ck_assert_ptr_nonnull(long_title);
  memset(long_title, 'a', 3000);
  long_title[3000] = '\0';
  record r = scan_title(long_title);
  ck_assert_uint_eq(strlen(r.title), 1024);
  memset(long_title, 'a', 1023);
  strcpy(long_title + 1023, "%C3%A9%C3%A9");
  r = scan_title(long_title);
  ck_assert_uint_eq(strlen(r.title), 1023);
  free(long_title);
  /* Not HTML: no title, whatever the body holds. */
  const char *opts[] = {"-H", "X-T: <title>x</title>", NULL};
  r = scan_one("/echo", opts);
  ck_assert(r.title_null);
}
END_TEST

/* --shard K/N: the targets of K, K+N, ... (from 1), so that N runs split a
 * list exactly. */
START_TEST(shard)
{
  enum { COUNT = 10, SHARDS = 3 };
  char list[256], url[COUNT][160];
  temp_path(list, sizeof list, "shard");
  FILE *f = fopen(list, "w");
  ck_assert_ptr_nonnull(f);
  fputs("# comments and blank lines are not targets\n\n", f);
  for (int i = 0; i < COUNT; i++) {
    char path[32];
    snprintf(path, sizeof path, "/bytes?n=%d", i + 1);
    fprintf(f, "%s\n\n", ts_url(srv, path, url[i], sizeof url[i]));
  }
  ck_assert_int_eq(fclose(f), 0);
  int seen[COUNT] = {0};
  for (int k = 1; k <= SHARDS; k++) {
    char part[16];
    snprintf(part, sizeof part, "%d/%d", k, SHARDS);
    const char *args[] = {"-l", list, "-s", "--shard", part, NULL};
    ck_assert_int_eq(run_scan(args), 0);
    record *recs;
    size_t n = read_records(&recs);
    ck_assert_uint_eq(n, (COUNT - k) / SHARDS + 1);
    for (size_t i = 0; i < n; i++) {
      int t = 0;
      while (t < COUNT && strcmp(recs[i].input, url[t]) != 0)
        t++;
      ck_assert_msg(t < COUNT && t % SHARDS == k - 1, "shard %s scanned %s", part, recs[i].input);
      seen[t]++;
    }
    free(recs);
  }
  for (int t = 0; t < COUNT; t++)
    ck_assert_msg(seen[t] == 1, "%s scanned %d times", url[t], seen[t]);
  const char *all[] = {"-l", list, "-s", "--shard", "1/1", NULL};
  ck_assert_int_eq(run_scan(all), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), COUNT);
  free(recs);
  static const char *const bad[] = {"0/3", "4/3", "1/0", "x", "1/", "/3", "1/3/2", "-1/3", "1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[] = {"-l", list, "--shard", bad[i], NULL};
    ck_assert_msg(run_scan(args) == 2, "--shard %s", bad[i]);
  }
  unlink(list);
}
END_TEST

/* --http2-prior-knowledge against nginx's cleartext HTTP/2: every target is
 * answered over HTTP/2 whatever the curl (before 8.0.0, which cannot reuse
 * such a connection, each transfer gets one of its own). */
START_TEST(h2c_prior_knowledge)
{
  h2_server *h2 = h2_start();
  ck_assert_ptr_nonnull(h2);
  char list[256];
  temp_path(list, sizeof list, "h2c");
  FILE *f = fopen(list, "w");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 20; i++) {
    char url[256];
    h2c_url(h2, i % 2 ? "/p/1k" : "/p/100k", url, sizeof url);
    fprintf(f, "%s\n", url);
  }
  ck_assert_int_eq(fclose(f), 0);
  const char *args[] = {"-l", list, "-s", "-c", "5", "--http2-prior-knowledge", NULL};
  ck_assert_int_eq(run_scan(args), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 20);
  for (size_t i = 0; i < 20; i++) {
    ck_assert_msg(recs[i].error_null, "%s: %s", recs[i].input, recs[i].error);
    ck_assert_int_eq(recs[i].status, 200);
    ck_assert_str_eq(recs[i].http_version, "2");
    ck_assert_uint_eq(recs[i].body_bytes, strstr(recs[i].input, "/p/1k") ? 1024 : 102400);
  }
  free(recs);
  unlink(list);
  h2_stop(h2);
}
END_TEST

/* Lines in a file so far. */
static size_t count_lines(const char *path)
{
  char *text = slurp(path);
  size_t n = 0;
  for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++)
    n++;
  free(text);
  return n;
}

/* A targets file: the slow target first, then count quick ones. */
static void write_slow_list(const char *list, const char *slow, int count)
{
  FILE *f = fopen(list, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "%s\n", slow);
  for (int i = 0; i < count; i++) {
    char path[48], url[160];
    snprintf(path, sizeof path, "/bytes?n=100&i=%d", i);
    fprintf(f, "%s\n", ts_url(srv, path, url, sizeof url));
  }
  ck_assert_int_eq(fclose(f), 0);
}

/* Starts scan on list under --rate 20 with -o, and waits until it has
 * written at least lines results: each line is written as its target
 * ends, not when the scan does. */
static pid_t start_rated_scan(const char *list, const char *out, const char *err, size_t lines)
{
  const char *args[] = {"-l", list, "-c", "2", "--rate", "20", "-o", out, NULL};
  ck_assert_int_eq(truncate(out, 0), 0); /* nothing of an earlier run */
  pid_t pid = start_example("scan", args, NULL, -1, "/dev/null", err);
  double t0 = now_s();
  while (count_lines(out) < lines) {
    ck_assert_msg(now_s() - t0 < 30, "no results written while scanning");
    int status;
    ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);
    nanosleep(&(struct timespec){0, 20000000}, NULL);
  }
  return pid;
}

/* SIGINT and SIGTERM: no new target starts, the transfer in flight is
 * reported as interrupted with what it received, every line is whole, the
 * summary says so, and the exit status is 128 + the signal. */
START_TEST(interrupted)
{
  char list[256], out[256], err[256], slow[160];
  temp_path(list, sizeof list, "sig_list");
  temp_path(out, sizeof out, "sig_out");
  temp_path(err, sizeof err, "sig_err");
  /* 4 MiB in 16 KiB writes 50 ms apart: 12.8 s, in flight when the signal
   * comes (the 200 quick targets at 20 a second take 10 s; the signal
   * comes after 5 of them). */
  ts_url(srv, "/bytes?n=4M&write=16k&delay_us=50000", slow, sizeof slow);
  write_slow_list(list, slow, 200);
  static const int sigs[] = {SIGINT, SIGTERM};
  for (size_t i = 0; i < 2; i++) {
    pid_t pid = start_rated_scan(list, out, err, 5);
    ck_assert_int_eq(kill(pid, sigs[i]), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sigs[i], "status %d", status);
    record *recs;
    size_t n = read_records_from(out, &recs); /* every line whole */
    ck_assert_uint_ge(n, 5);
    ck_assert_uint_lt(n, 201);
    /* The slow one is in flight; the other slot's quick target may be
     * too, by when the signal lands: then it is interrupted as well. */
    size_t slow_seen = 0, cut = 0;
    for (size_t k = 0; k < n; k++) {
      check_common(&recs[k]);
      if (strcmp(recs[k].input, slow) != 0) {
        ck_assert_msg(recs[k].error_null || !strcmp(recs[k].error, "interrupted"), "%s: %s",
                      recs[k].input, recs[k].error);
        cut += !recs[k].error_null;
        continue;
      }
      slow_seen++;
      cut++;
      ck_assert_str_eq(recs[k].error, "interrupted");
      ck_assert(recs[k].failed);
      ck_assert_int_eq(recs[k].status, 200);
      ck_assert_msg(recs[k].body_bytes > 0 && recs[k].body_bytes < 4 * MiB, "received %zu",
                    recs[k].body_bytes);
    }
    ck_assert_uint_eq(slow_seen, 1);
    ck_assert_uint_le(cut, 2); /* -c 2 */
    free(recs);
    char *text = slurp(err), want[80];
    snprintf(want, sizeof want, "stopped by %s: %zu transfers interrupted",
             sigs[i] == SIGINT ? "SIGINT" : "SIGTERM", cut);
    ck_assert_msg(strstr(text, want), "want \"%s\": %s", want, text);
    free(text);
  }

  /* A second signal ends scan at once: by the signal, or by the first if it
   * had already ended; every line written is whole either way. */
  pid_t pid = start_rated_scan(list, out, err, 1);
  ck_assert_int_eq(kill(pid, SIGINT), 0);
  ck_assert_int_eq(kill(pid, SIGINT), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) ||
                    (WIFEXITED(status) && WEXITSTATUS(status) == 130),
                "status %d", status);
  record *recs;
  ck_assert_uint_ge(read_records_from(out, &recs), 1);
  free(recs);
  unlink(list);
  unlink(out);
  unlink(err);
}
END_TEST

/* The reader of the output goes away (as "| head" does): scan ends at
 * once, quietly, with 141, and what it wrote was whole lines. */
START_TEST(broken_pipe)
{
  char list[256], err[256];
  temp_path(list, sizeof list, "pipe_list");
  temp_path(err, sizeof err, "pipe_err");
  /* 2000 results are far more than a pipe holds. */
  write_slow_list(list, "http://127.0.0.1:1/never-started-first", 2000);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  /* Only the write end goes to scan, as its stdout: were the read end
   * inherited, the pipe would never break. */
  ck_assert_int_eq(fcntl(fds[0], F_SETFD, FD_CLOEXEC), 0);
  ck_assert_int_eq(fcntl(fds[1], F_SETFD, FD_CLOEXEC), 0);
  const char *args[] = {"-l", list, "-c", "4", NULL};
  pid_t pid = start_example("scan", args, NULL, fds[1], NULL, err);
  close(fds[1]);
  char buf[4096];
  size_t have = 0;
  while (!memchr(buf, '\n', have)) {
    ssize_t n = read(fds[0], buf + have, sizeof buf - 1 - have);
    ck_assert_int_gt(n, 0);
    have += (size_t)n;
  }
  buf[have] = '\0';
  *strchr(buf, '\n') = '\0';
  record r;
  ck_assert_msg(parse_record(buf, &r) == 0, "%s", buf);
  close(fds[0]);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 141, "status %d", status);
  char *text = slurp(err);
  ck_assert_str_eq(text, "");
  free(text);
  unlink(list);
  unlink(err);
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

/* Whether r lists extractor re in extracts_incomplete. */
static int listed_incomplete(const record *r, const char *re)
{
  for (size_t i = 0; i < r->nincomplete; i++)
    if (!strcmp(r->incomplete[i], re))
      return 1;
  return 0;
}

/* Whether r's values for re are exactly those want holds at e. */
static int same_values(const record *r, const char *re, const record *want, size_t e)
{
  size_t i = 0;
  while (i < r->nextracts && strcmp(r->extract_key[i], re) != 0)
    i++;
  size_t n = i < r->nextracts ? r->nvalues[i] : 0;
  if (n != want->nvalues[e])
    return 0;
  for (size_t k = 0; k < n && k < MAX_VALUES; k++)
    if (r->extract_len[i][k] != want->extract_len[e][k] ||
        memcmp(r->extract_value[i][k], want->extract_value[e][k], want->extract_len[e][k]))
      return 0;
  return 1;
}

/* A match longer than the 64 KiB window is not found, and never silently:
 * over real transfers of pattern bytes (written 1000 bytes at a time, and
 * whole), each extractor has exactly the values PCRE2 finds over the
 * whole body, or it is listed in extracts_incomplete and its values are
 * not those; the summary counts the targets. Matches of 100000 bytes
 * (longer than the window and a slice of at most 16 KiB together) and
 * the whole body of 300000 are listed, whether PCRE2 alone runs the
 * extractor (the lookbehind) or the prefilter too, where Vectorscan takes
 * it; matches of 60000 bytes, and all of a body of 60000, are found. */
START_TEST(extract_outgrown)
{
  static const char *const res[] = {"(?s)^(.{50000}.{50000})", "(?s)(?<=m)(.{50000}.{50000})",
                                    "(?s)(.+)",                 "(?s)(.{60000})",
                                    "(\\d{3})\\d{4}\\n",        "\\bl[a-z]+"};
  static const struct {
    const char *path;
    size_t n;
    int incomplete[6]; /* per extractor: listed */
  } cases[] = {
      {"/bytes?n=300000&write=1000", 300000, {1, 1, 1, 0, 0, 0}},
      {"/bytes?n=300000", 300000, {1, 1, 1, 0, 0, 0}},
      {"/bytes?n=60000&write=1000", 60000, {0, 0, 0, 0, 0, 0}},
  };
  const size_t count = sizeof res / sizeof *res;
  char err_path[256], url[256];
  temp_path(err_path, sizeof err_path, "err");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ts_url(srv, cases[c].path, url, sizeof url);
    const char *args[2 + 2 * 6 + 1] = {"-u", url};
    for (size_t i = 0; i < count; i++) {
      args[2 + 2 * i] = "--extract";
      args[3 + 2 * i] = res[i];
    }
    ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
    record *recs;
    ck_assert_uint_eq(read_records(&recs), 1);
    const record *r = &recs[0];
    ck_assert_msg(r->error_null && r->body_bytes == cases[c].n, "%s: %s", cases[c].path, r->error);
    static record want;
    size_t listed = 0;
    for (size_t i = 0; i < count; i++) {
      extract_ref(res[i], pattern, cases[c].n, &want, i);
      int is_listed = listed_incomplete(r, res[i]);
      listed += (size_t)is_listed;
      ck_assert_msg(is_listed == cases[c].incomplete[i], "%s: %s %s in extracts_incomplete",
                    cases[c].path, res[i], is_listed ? "is" : "is not");
      if (is_listed) /* the values it has are not all there are */
        ck_assert_msg(want.nvalues[i] > 0 && !same_values(r, res[i], &want, i),
                      "%s: %s listed, with every value", cases[c].path, res[i]);
      else
        check_extract(r, res[i], &want, i, cases[c].path);
    }
    ck_assert_uint_eq(r->nincomplete, listed);
    free(recs);
    char *err = slurp(err_path);
    char line[64];
    snprintf(line, sizeof line, "; %d targets with extracts_incomplete\n", listed ? 1 : 0);
    ck_assert_msg(strstr(err, line), "%s: %s", cases[c].path, err);
    free(err);
  }
  unlink(err_path);
}
END_TEST

/* The offset, from about `from` on, of three words of the first n pattern
 * bytes (24, no NUL) first seen there; seen nowhere else when once. */
static size_t words_first_at(size_t from, size_t n, int once)
{
  for (size_t at = from; at + 24 <= n; at += 8) {
    const char *w = (const char *)pattern + at;
    if (!memchr(w, '\0', 24) && first_end(pattern, n, w, 24) == (long)(at + 24) &&
        (!once || first_end(pattern + at + 1, n - at - 1, w, 24) < 0))
      return at;
  }
  ck_abort_msg("no such words after %zu", from);
  return 0;
}

/* The same for extractors that the prefilter lets PCRE2 skip, where the
 * build has Vectorscan (PCRE2 alone runs them in the other): "^(.*?)" then
 * three words of the body first seen past 100000 bytes, so that no match
 * ends before and PCRE2 never searches the start, which leaves the window
 * unsearched; the prefilter sees the match end, PCRE2 cannot find it, and
 * the extractor is listed. The same with three words seen once, within
 * the window, is found. */
START_TEST(extract_outgrown_skipped)
{
  const size_t n = 3 * MiB;
  size_t far = words_first_at(100000, n, 0), near = words_first_at(8000, n, 1);
  ck_assert_uint_lt(near, 60000);
  char res[2][128] = {"(?s)^(.*?)", "(?s)^(.*?)"};
  re_literal((const char *)pattern + far, 24, res[0] + strlen(res[0]));
  re_literal((const char *)pattern + near, 24, res[1] + strlen(res[1]));

  char err_path[256], url[256];
  temp_path(err_path, sizeof err_path, "err");
  ts_url(srv, "/bytes?n=3M", url, sizeof url);
  const char *args[] = {"-u", url, "--extract", res[0], "--extract", res[1], NULL};
  ck_assert_int_eq(run_example("scan", args, NULL, err_path), 0);
  record *recs;
  ck_assert_uint_eq(read_records(&recs), 1);
  static record want;
  extract_ref(res[0], pattern, n, &want, 0);
  extract_ref(res[1], pattern, n, &want, 1);
  ck_assert_uint_eq(want.nvalues[0], 1);
  ck_assert_msg(listed_incomplete(&recs[0], res[0]) && !same_values(&recs[0], res[0], &want, 0),
                "%s: not listed, or with its value", res[0]);
  ck_assert_msg(!listed_incomplete(&recs[0], res[1]), "%s listed", res[1]);
  check_extract(&recs[0], res[1], &want, 1, "3M");
  free(recs);
  char *err = slurp(err_path);
  ck_assert_msg(strstr(err, scan_streams() ? "extractors: 2 on the stream (PCRE2), 2 of them"
                                           : "extractors: 2 on the stream (PCRE2), 0 of them"),
                "%s", err);
  ck_assert_msg(strstr(err, "; 1 targets with extracts_incomplete\n"), "%s", err);
  free(err);
  unlink(err_path);
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
  tcase_add_test(tc, stream_verdicts);
  tcase_add_test(tc, narrowing);
  tcase_add_test(tc, regex_meaning);
  tcase_add_test(tc, pcre_bodies);
  tcase_add_test(tc, pcre_engines);
  tcase_add_test(tc, regex_refused);
  tcase_add_test(tc, short_timeout);
  tcase_add_test(tc, extracts);
  tcase_add_test(tc, extract_bounds);
  tcase_add_test(tc, proxy_connect);
  tcase_add_test(tc, iword_matcher);
  tcase_add_test(tc, bodies_not_kept);
  tcase_add_test(tc, stop_on_match);
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
  tcase_add_test(tc, head_method);
  tcase_add_test(tc, title);
  tcase_add_test(tc, shard);
  tcase_add_test(tc, h2c_prior_knowledge);
  tcase_add_test(tc, interrupted);
  tcase_add_test(tc, broken_pipe);
  tcase_add_test(tc, demo);
  tcase_add_test(tc, extract_outgrown);
  tcase_add_test(tc, extract_outgrown_skipped);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
