/* The fetch example against the loopback server: output, exit statuses,
 * what it reports on stderr, each request option as the server saw it
 * (/echo answers with the request head), HEAD requests, the time limits,
 * every hop's header block under -i, and -k/--cacert against
 * openssl s_server with a self-signed certificate. Also the conventions
 * every example program follows (--help, --version, a bad option), and that
 * the version macros agree with rc_version(). The binary comes from
 * FETCH_BIN; threads and scan are found beside it. */
#include <arpa/inet.h>
#include <check.h>
#include <libgen.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

extern char **environ;

struct out {
  int status; /* the exit status; -1 if killed */
  char *out;
  size_t out_len;
  char *err;
};

/* A program still running after this many seconds is killed: a hang fails
 * its test instead of stalling it. */
#define RUN_LIMIT_S 60.0

static double seconds_since(const struct timespec *t0)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  if (len)
    *len = (size_t)n;
  return buf;
}

/* The path of an example program: FETCH_BIN, or name beside it. */
static const char *program(const char *name, char *out, size_t cap)
{
  const char *bin = getenv("FETCH_BIN");
  ck_assert_ptr_nonnull(bin);
  if (!strcmp(name, "fetch"))
    return bin;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", bin);
  snprintf(out, cap, "%s/%s", dirname(dir), name);
  return out;
}

static struct out run_bin(const char *bin, const char *const *args);

/* Runs fetch with args (NULL-terminated; a last argument that is a path
 * is turned into a URL of the server). */
static struct out run(const char *const *args)
{
  char path[600];
  return run_bin(program("fetch", path, sizeof path), args);
}

/* Runs bin with args; its stdout and stderr are kept. */
static struct out run_bin(const char *bin, const char *const *args)
{
  char *argv[16];
  char url[256];
  int argc = 0;
  argv[argc++] = (char *)bin;
  for (; *args; args++) /* the last argument, a path, is the URL */
    argv[argc++] =
        (*args)[0] == '/' && !args[1] ? ts_url(srv, *args, url, sizeof url) : (char *)*args;
  argv[argc] = NULL;
  char out_path[] = "/tmp/rc-fetch-out-XXXXXX", err_path[] = "/tmp/rc-fetch-err-XXXXXX";
  int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  pid_t pid;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
  int ws = 0;
  while (waitpid(pid, &ws, WNOHANG) == 0) {
    if (seconds_since(&t0) > RUN_LIMIT_S) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      break;
    }
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  }
  posix_spawn_file_actions_destroy(&fa);
  close(out_fd);
  close(err_fd);
  struct out o;
  o.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  o.out = slurp(out_path, &o.out_len);
  o.err = slurp(err_path, NULL);
  unlink(out_path);
  unlink(err_path);
  return o;
}

static void drop(struct out *o)
{
  free(o->out);
  free(o->err);
}

static int is_pattern(const char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] != ts_pattern_byte(i))
      return 0;
  return 1;
}

START_TEST(body_to_stdout)
{
  const char *args[] = {"/bytes?n=5000", NULL};
  struct out o = run(args);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 5000);
  ck_assert(is_pattern(o.out, 5000));
  ck_assert_str_eq(o.err, ""); /* quiet without -v */
  drop(&o);

  const char *verbose[] = {"-v", "/bytes?n=5000", NULL};
  o = run(verbose);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 5000);
  ck_assert_ptr_nonnull(strstr(o.err, "* limits: body 8388608 bytes (stop at the cap)"));
  ck_assert_ptr_nonnull(strstr(o.err, "* hop 0: HTTP/1.1 200 OK"));
  ck_assert_ptr_nonnull(strstr(o.err, "< Content-Length: 5000\n"));
  ck_assert_ptr_nonnull(strstr(o.err, "* body: 5000 bytes, encoding: identity\n"));
  drop(&o);
}
END_TEST

/* Checks that text holds the header block of each of the n hops in want, in
 * order (status line first, then one header line of it), and returns where
 * the body starts. */
static const char *check_blocks(const char *text, const char *const (*want)[2], size_t n)
{
  const char *p = text;
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(strncmp(p, want[i][0], strlen(want[i][0])) == 0, "hop %zu: %s", i, p);
    const char *blank = strstr(p, "\r\n\r\n");
    ck_assert_ptr_nonnull(blank);
    const char *line = strstr(p, want[i][1]);
    ck_assert_msg(line && line < blank, "hop %zu lacks %s", i, want[i][1]);
    p = blank + 4;
  }
  return p;
}

/* -i writes every hop's header block in order, then the body, as curl -i
 * does: with -L each redirect's, and 1xx responses' too. */
START_TEST(full_response_and_redirects)
{
  const char *args[] = {"-i", "-L", "-v", "/redirect?n=2", NULL};
  struct out o = run(args);
  ck_assert_int_eq(o.status, 0);
  static const char *const hops[][2] = {
      {"HTTP/1.1 302 Found\r\n", "\r\nLocation: /redirect?n=1&code=302\r\n"},
      {"HTTP/1.1 302 Found\r\n", "\r\nLocation: /redirect?n=0&code=302\r\n"},
      {"HTTP/1.1 302 Found\r\n", "\r\nLocation: /bytes?n=10\r\n"},
      {"HTTP/1.1 200 OK\r\n", "\r\nContent-Length: 10\r\n"},
  };
  const char *body = check_blocks(o.out, hops, 4);
  ck_assert_uint_eq(o.out_len - (size_t)(body - o.out), 10);
  ck_assert(is_pattern(body, 10));
  ck_assert_ptr_nonnull(strstr(o.err, "* hop 0: HTTP/1.1 302"));
  ck_assert_ptr_nonnull(strstr(o.err, "< Location: "));
  ck_assert_ptr_nonnull(strstr(o.err, "* hop 3: HTTP/1.1 200"));
  drop(&o);

  /* Without -L the redirect is the response: its block and its body. */
  const char *one[] = {"-i", "/redirect?n=1", NULL};
  o = run(one);
  ck_assert_int_eq(o.status, 0);
  body = check_blocks(o.out, hops + 1, 1);
  ck_assert_ptr_null(strstr(body, "HTTP/1.1"));
  drop(&o);

  /* 103 Early Hints, then the final response. */
  const char *hints[] = {"-i", "/hints?n=100", NULL};
  o = run(hints);
  ck_assert_int_eq(o.status, 0);
  static const char *const interim[][2] = {
      {"HTTP/1.1 103 Early Hints\r\n", "\r\nLink: "},
      {"HTTP/1.1 200 OK\r\n", "\r\nContent-Length: 100\r\n"},
  };
  body = check_blocks(o.out, interim, 2);
  ck_assert_uint_eq(o.out_len - (size_t)(body - o.out), 100);
  ck_assert(is_pattern(body, 100));
  drop(&o);

  /* --help tells fetch's -L from scan's (-L N, --max-redirs). */
  const char *help[] = {"--help", NULL};
  o = run(help);
  ck_assert_int_eq(o.status, 0);
  const char *follow = strstr(o.out, "  -L, --location ");
  ck_assert_ptr_nonnull(follow);
  ck_assert_ptr_nonnull(strstr(follow, "in scan, -L"));
  ck_assert_ptr_nonnull(strstr(follow, "--max-redirs N"));
  drop(&o);
}
END_TEST

/* -I and -X HEAD: the server answers with GET's headers, a Content-Length
 * of 5000 among them, and no body; fetch must not wait for those bytes (a
 * fetch that did would end with curl's error when the server closes the
 * connection, or be killed at RUN_LIMIT_S: either fails its status). */
START_TEST(head_requests)
{
  const char *head[] = {"-I", "-i", "/bytes?n=5000", NULL};
  const char *long_head[] = {"--head", "--include", "/bytes?n=5000", NULL};
  const char *method[] = {"-X", "HEAD", "-i", "/bytes?n=5000", NULL};
  const char *const *runs[] = {head, long_head, method};
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    struct out o = run(runs[i]);
    ck_assert_msg(o.status == 0, "run %zu: status %d: %s", i, o.status, o.err);
    ck_assert_msg(strncmp(o.out, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", o.out);
    ck_assert_ptr_nonnull(strstr(o.out, "\r\nContent-Length: 5000\r\n"));
    /* The header block and nothing after it. */
    ck_assert_ptr_eq(strstr(o.out, "\r\n\r\n"), o.out + o.out_len - 4);
    ck_assert_str_eq(o.err, "");
    drop(&o);
  }

  /* Without -i there is nothing to write: the body is empty. */
  const char *quiet[] = {"-X", "HEAD", "-v", "/bytes?n=5000", NULL};
  struct out o = run(quiet);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 0);
  ck_assert_ptr_nonnull(strstr(o.err, "* hop 0: HTTP/1.1 200 OK"));
  ck_assert_ptr_nonnull(strstr(o.err, "< Content-Length: 5000\n"));
  ck_assert_ptr_nonnull(strstr(o.err, "* body: 0 bytes"));
  drop(&o);

  /* With -L every hop is asked with HEAD. */
  const char *follow[] = {"-I", "-i", "-L", "/redirect?n=1", NULL};
  o = run(follow);
  ck_assert_int_eq(o.status, 0);
  static const char *const hops[][2] = {
      {"HTTP/1.1 302 Found\r\n", "\r\nLocation: /redirect?n=0&code=302\r\n"},
      {"HTTP/1.1 302 Found\r\n", "\r\nLocation: /bytes?n=10\r\n"},
      {"HTTP/1.1 200 OK\r\n", "\r\nContent-Length: 10\r\n"},
  };
  ck_assert_str_eq(check_blocks(o.out, hops, 3), "");
  drop(&o);

  /* A HEAD request has no body to send, and -I no other method. */
  const char *data[] = {"-I", "-d", "x", "/echo", NULL};
  o = run(data);
  ck_assert_int_eq(o.status, 2);
  ck_assert_str_eq(o.err, "fetch: a HEAD request sends no body; unexpected '-d'; try 'fetch "
                          "--help'\n");
  drop(&o);
  const char *put[] = {"-I", "-X", "PUT", "/echo", NULL};
  o = run(put);
  ck_assert_int_eq(o.status, 2);
  ck_assert_str_eq(o.err, "fetch: -I sends HEAD; unexpected -X 'PUT'; try 'fetch --help'\n");
  drop(&o);
}
END_TEST

/* A listening socket whose accept queue is full (backlog 0, one connection
 * queued and never accepted): the kernel drops further SYNs, so a connect
 * to it neither succeeds nor fails. Returns the listener; *client is the
 * queued connection, *port where it listens. */
static int full_listener(int *client, int *port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 0), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  *port = ntohs(a.sin_port);
  *client = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(*client, (struct sockaddr *)&a, sizeof a), 0);
  struct pollfd queued = {.fd = fd, .events = POLLIN}; /* the queue holds it */
  ck_assert_int_eq(poll(&queued, 1, 5000), 1);
  return fd;
}

/* fetch's report of curl's CURLE_OPERATION_TIMEDOUT, in whichever phase
 * the time ran out (a connect may run out of the whole transfer's time on
 * a loaded machine). */
static int says_timeout(const char *err)
{
  const char *prefix = "fetch: transfer failed: ", *at = strstr(err, prefix);
  return at && curl_says_timeout(at + strlen(prefix));
}

/* -m/--max-time and --connect-timeout: past them the transfer fails with
 * curl's timeout (exit status 1); a bad value is a usage error. How long
 * each took is not asserted: without its limit a transfer here ends with
 * its body (10 s) or is killed at RUN_LIMIT_S (the full accept queue), and
 * either fails its status and message. */
START_TEST(time_limits)
{
  /* 100 KiB in 1 KiB writes 0.1 s apart: 10 s without the limit. */
  const char *slow[] = {"-m", "0.3", "/bytes?n=100k&write=1k&delay_us=100000", NULL};
  struct out o = run(slow);
  ck_assert_int_eq(o.status, 1);
  ck_assert_msg(says_timeout(o.err), "%s", o.err); /* in whichever phase */
  ck_assert_uint_lt(o.out_len, 100 * 1024);
  ck_assert(is_pattern(o.out, o.out_len)); /* what arrived is written */
  drop(&o);

  const char *in_time[] = {"--max-time", "30", "--connect-timeout", "2.5", "/bytes?n=5000", NULL};
  o = run(in_time);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 5000);
  drop(&o);

  int client, port;
  int listener = full_listener(&client, &port);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
  const char *connect[] = {"--connect-timeout", "0.3", url, NULL};
  o = run(connect);
  ck_assert_int_eq(o.status, 1);
  ck_assert_msg(says_timeout(o.err), "%s", o.err);
  drop(&o);
  /* -m covers the connect too. */
  const char *whole[] = {"-m", "0.3", url, NULL};
  o = run(whole);
  ck_assert_int_eq(o.status, 1);
  ck_assert_msg(says_timeout(o.err), "%s", o.err);
  drop(&o);
  close(client);
  close(listener);

  static const char *const bad[][2] = {
      {"-m", "abc"},
      {"-m", "-1"},
      {"-m", "1s"},
      {"--max-time", "nan"},
      {"-m", "inf"},
      {"-m", "0x10"},
      {"--connect-timeout", ""},
      {"--connect-timeout", "-0.5"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *args[] = {bad[i][0], bad[i][1], "/bytes", NULL};
    o = run(args);
    ck_assert_msg(o.status == 2, "%s '%s': %d", bad[i][0], bad[i][1], o.status);
    char want[128];
    snprintf(want, sizeof want, "fetch: invalid time '%s'; try 'fetch --help'\n", bad[i][1]);
    ck_assert_str_eq(o.err, want);
    drop(&o);
  }
}
END_TEST

START_TEST(truncation_and_errors)
{
  const char *cap[] = {"--max-body", "1000", "/bytes?n=5000", NULL};
  struct out o = run(cap);
  ck_assert_int_eq(o.status, 3);
  ck_assert_uint_eq(o.out_len, 1000);
  ck_assert(is_pattern(o.out, 1000));
  ck_assert_ptr_nonnull(strstr(o.err, "body truncated at the body cap"));
  drop(&o);

  const char *gz[] = {"-v", "/gzip?n=20000&coding=gzip", NULL};
  o = run(gz);
  ck_assert_int_eq(o.status, 0);
  ck_assert(is_pattern(o.out, 20000));
  ck_assert_ptr_nonnull(strstr(o.err, "encoding: decoded"));
  drop(&o);

  const char *bad[] = {"/corrupt?kind=crc", NULL};
  o = run(bad);
  ck_assert_int_eq(o.status, 4);
  ck_assert_ptr_nonnull(strstr(o.err, "corrupt or truncated compressed body"));
  drop(&o);

  const char *refused[] = {"http://127.0.0.1:1/", NULL};
  o = run(refused);
  ck_assert_int_eq(o.status, 1);
  ck_assert_ptr_nonnull(strstr(o.err, "transfer failed"));
  drop(&o);

  const char *usage[] = {"-p", "sideways", "/bytes", NULL};
  o = run(usage);
  ck_assert_int_eq(o.status, 2);
  ck_assert_str_eq(o.err, "fetch: invalid policy 'sideways'; try 'fetch --help'\n");
  drop(&o);
}
END_TEST

/* What the server saw, from /echo's copy of the request head. */
START_TEST(request_options)
{
  const char *put[] = {"-X",    "PUT",   "-H", "X-Rc-Test: yes", "-H", "Accept: text/x-rc", "-d",
                       "hello", "/echo", NULL};
  struct out o = run(put);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strncmp(o.out, "PUT /echo HTTP/1.1\r\n", 20) == 0, "%s", o.out);
  ck_assert_ptr_nonnull(strstr(o.out, "\r\nX-Rc-Test: yes\r\n"));
  ck_assert_ptr_nonnull(strstr(o.out, "\r\nAccept: text/x-rc\r\n"));
  ck_assert_ptr_nonnull(strstr(o.out, "\r\nContent-Length: 5\r\n"));
  ck_assert_ptr_nonnull(strstr(o.out, "\r\nUser-Agent: respchain-fetch/"));
  drop(&o);

  const char *post[] = {"-d", "a=1&b=2", "/echo", NULL};
  o = run(post);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strncmp(o.out, "POST /echo HTTP/1.1\r\n", 21) == 0, "%s", o.out);
  ck_assert_ptr_nonnull(strstr(o.out, "\r\nContent-Length: 7\r\n"));
  drop(&o);

  const char *head[] = {"-X", "DELETE", "/echo", NULL};
  o = run(head);
  ck_assert_int_eq(o.status, 0);
  ck_assert(strncmp(o.out, "DELETE /echo HTTP/1.1\r\n", 23) == 0);
  ck_assert_ptr_null(strstr(o.out, "Content-Length"));
  drop(&o);
}
END_TEST

/* -o FILE: the body goes there, stdout stays empty; an unwritable file is
 * exit status 6. */
START_TEST(output_file)
{
  char path[] = "/tmp/rc-fetch-o-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  const char *args[] = {"-o", path, "/bytes?n=70000", NULL};
  struct out o = run(args);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 0);
  size_t len;
  char *got = slurp(path, &len);
  ck_assert_uint_eq(len, 70000);
  ck_assert(is_pattern(got, len));
  free(got);
  unlink(path);
  drop(&o);

  const char *bad[] = {"-o", "/nonexistent-dir/x", "/bytes?n=10", NULL};
  o = run(bad);
  ck_assert_int_eq(o.status, 6);
  ck_assert_ptr_nonnull(strstr(o.err, "/nonexistent-dir/x"));
  drop(&o);
}
END_TEST

/* --max-memory: a body past it goes to a spill file, and comes back whole. */
START_TEST(max_memory)
{
  const char *args[] = {"-v", "--max-memory", "16k", "/bytes?n=300k", NULL};
  struct out o = run(args);
  ck_assert_int_eq(o.status, 0);
  ck_assert_uint_eq(o.out_len, 300 * 1024);
  ck_assert(is_pattern(o.out, o.out_len));
  ck_assert_ptr_nonnull(strstr(o.err, "memory 16384 bytes"));
  ck_assert_ptr_nonnull(strstr(o.err, "spilled to a temporary file"));
  drop(&o);

  const char *small[] = {"-v", "--max-memory", "1m", "/gzip?n=100k&coding=gzip", NULL};
  o = run(small);
  ck_assert_int_eq(o.status, 0);
  ck_assert(is_pattern(o.out, 100 * 1024));
  ck_assert_ptr_null(strstr(o.err, "spilled"));
  drop(&o);

  const char *bad[] = {"--max-memory", "lots", "/bytes", NULL};
  o = run(bad);
  ck_assert_int_eq(o.status, 2);
  drop(&o);
}
END_TEST

/* A TLS server for -k and --cacert: openssl s_server -www (its status
 * page over HTTPS) with a self-signed certificate for 127.0.0.1, made in
 * dir. Returns its pid; *port is where it listens. */
static pid_t tls_server(const char *dir, int *port)
{
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem "
           "-out cert.pem -days 2 -subj /CN=127.0.0.1 "
           "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
           dir);
  ck_assert_msg(system(cmd) == 0, "openssl cannot make a certificate (sh .ci/deps)");
  char cert[512], key[512], log[512];
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  snprintf(log, sizeof log, "%s/server.log", dir);
  char *argv[] = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-cert",
                  cert,      "-key",     key,       "-www",        NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  ck_assert_int_eq(posix_spawnp(&pid, "openssl", &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  /* It says "ACCEPT 127.0.0.1:PORT" once it listens. */
  *port = 0;
  for (int i = 0; i < 1200 && !*port; i++) { /* 60 s, for a loaded machine */
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    char *text = slurp(log, NULL);
    const char *at = strstr(text, "ACCEPT 127.0.0.1:");
    if (at)
      *port = atoi(at + 17);
    free(text);
  }
  ck_assert_msg(*port > 0, "openssl s_server did not start");
  return pid;
}

/* -k and --cacert (and scan's -k) against a server whose certificate no
 * CA signed. */
START_TEST(tls_options)
{
  char dir[] = "/tmp/rc-fetch-tls-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  int port;
  pid_t pid = tls_server(dir, &port);
  char url[96], cert[512];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/", port);
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);

  /* curl 8.17.0 verifies an OpenSSL peer after the handshake and words the
   * failure as "SSL certificate OpenSSL verify result: <OpenSSL's reason>
   * (<its code>)"; before, the handshake failed with "SSL certificate
   * problem: <OpenSSL's reason>". */
  const char *problem = curl_at_least(0x081100)
                            ? "SSL certificate OpenSSL verify result: self-signed certificate (18)"
                            : "SSL certificate problem";
  char expect[160];
  snprintf(expect, sizeof expect, "fetch: transfer failed: %s", problem);

  const char *verify[] = {url, NULL}; /* not trusted: fails */
  struct out o = run(verify);
  ck_assert_int_eq(o.status, 1);
  ck_assert_msg(strstr(o.err, expect), "%s", o.err);
  drop(&o);

  const char *insecure[] = {"-k", "-v", url, NULL};
  o = run(insecure);
  ck_assert_msg(o.status == 0, "%s", o.err);
  ck_assert_ptr_nonnull(strstr(o.out, "<HTML>"));
  ck_assert_ptr_nonnull(strstr(o.err, "TLS peer not verified"));
  drop(&o);

  const char *cacert[] = {"--cacert", cert, url, NULL};
  o = run(cacert);
  ck_assert_msg(o.status == 0, "%s", o.err);
  ck_assert_ptr_nonnull(strstr(o.out, "<HTML>"));
  drop(&o);

  const char *missing[] = {"--cacert", "/nonexistent/ca.pem", url, NULL};
  o = run(missing);
  ck_assert_int_eq(o.status, 1);
  drop(&o);

  /* scan's -k too (scan lives beside fetch). */
  char scan_path[600];
  const char *scan = program("scan", scan_path, sizeof scan_path);
  const char *scan_verify[] = {"-s", "-u", url, NULL};
  o = run_bin(scan, scan_verify);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "\"status_code\":0,") && strstr(o.out, problem), "%s", o.out);
  drop(&o);
  const char *scan_insecure[] = {"-s", "-k", "-u", url, NULL};
  o = run_bin(scan, scan_insecure);
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strstr(o.out, "\"status_code\":200,") && strstr(o.out, "\"error\":null"), "%s",
                o.out);
  drop(&o);

  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  snprintf(cert, sizeof cert, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cert), 0);
}
END_TEST

/* Each program: --help on stdout (exit 0), --version naming rc_version(),
 * a bad option as one line on stderr (exit 2). */
static void check_conventions(const char *name)
{
  char path[600];
  const char *bin = program(name, path, sizeof path);
  const char *help[] = {"--help", NULL};
  struct out o = run_bin(bin, help);
  ck_assert_msg(o.status == 0, "%s --help: %d", name, o.status);
  ck_assert_msg(strstr(o.out, "usage: ") && strstr(o.out, "Exit status"), "%s --help: %s", name,
                o.out);
  ck_assert_str_eq(o.err, "");
  drop(&o);

  const char *version[] = {"--version", NULL};
  o = run_bin(bin, version);
  char want[128];
  snprintf(want, sizeof want, "%s (respchain) %s\n", name, rc_version());
  ck_assert_int_eq(o.status, 0);
  ck_assert_msg(strncmp(o.out, want, strlen(want)) == 0, "%s --version: %s", name, o.out);
  drop(&o);

  const char *bad[] = {"--no-such-option", NULL};
  o = run_bin(bin, bad);
  ck_assert_int_eq(o.status, 2);
  ck_assert_uint_eq(o.out_len, 0);
  char *nl = strchr(o.err, '\n');
  ck_assert_msg(nl && nl[1] == '\0', "%s: not one line: %s", name, o.err);
  ck_assert_ptr_nonnull(strstr(o.err, "--help"));
  drop(&o);
}

START_TEST(conventions)
{
  check_conventions("fetch");
  check_conventions("threads");
}
END_TEST

/* RC_VERSION, RC_VERSION_NUM and rc_version() tell the same version. */
START_TEST(version_macros)
{
  char text[32];
  snprintf(text, sizeof text, "%d.%d.%d", RC_VERSION_MAJOR, RC_VERSION_MINOR, RC_VERSION_PATCH);
  ck_assert_str_eq(text, RC_VERSION);
  ck_assert_str_eq(rc_version(), RC_VERSION);
  ck_assert_int_eq(RC_VERSION_NUM,
                   RC_VERSION_MAJOR << 16 | RC_VERSION_MINOR << 8 | RC_VERSION_PATCH);
#if RC_VERSION_NUM < 0x000200
  ck_abort_msg("RC_VERSION_NUM unusable in #if");
#endif
}
END_TEST

int main(void)
{
  Suite *s = suite_create("fetch");
  TCase *tc = tcase_create("fetch");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, body_to_stdout);
  tcase_add_test(tc, full_response_and_redirects);
  tcase_add_test(tc, head_requests);
  tcase_add_test(tc, time_limits);
  tcase_add_test(tc, truncation_and_errors);
  tcase_add_test(tc, request_options);
  tcase_add_test(tc, output_file);
  tcase_add_test(tc, max_memory);
  tcase_add_test(tc, tls_options);
  tcase_add_test(tc, conventions);
  tcase_add_test(tc, version_macros);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
