/* The fetch example against the loopback server: output, exit statuses,
 * and what it reports on stderr. The binary comes from FETCH_BIN. */
#include <check.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"

extern char **environ;


struct out { int status; char *out; size_t out_len; char *err; };

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

/* Runs fetch with args (NULL-terminated, URL paths turned into URLs). */
static struct out run(const char *const *args)
{
  const char *bin = getenv("FETCH_BIN");
  ck_assert_ptr_nonnull(bin);
  char *argv[16];
  char urls[8][256];
  int argc = 0, nurl = 0;
  argv[argc++] = (char *)bin;
  for (; *args; args++)
    argv[argc++] = (*args)[0] == '/' ? ts_url(srv, *args, urls[nurl++], 256) : (char *)*args;
  argv[argc] = NULL;
  char out_path[] = "/tmp/rc-fetch-out-XXXXXX", err_path[] = "/tmp/rc-fetch-err-XXXXXX";
  int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  pid_t pid;
  ck_assert_int_eq(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
  int ws;
  waitpid(pid, &ws, 0);
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
  ck_assert_ptr_nonnull(strstr(o.err, "hop 0: HTTP/1.1 200 OK"));
  ck_assert_ptr_nonnull(strstr(o.err, "body: 5000 bytes, encoding: identity"));
  drop(&o);
}
END_TEST

START_TEST(full_response_and_redirects)
{
  const char *args[] = {"-i", "-L", "/redirect?n=1", NULL};
  struct out o = run(args);
  ck_assert_int_eq(o.status, 0);
  ck_assert(strncmp(o.out, "HTTP/1.1 200 OK\r\n", 17) == 0);
  char *blank = strstr(o.out, "\r\n\r\n");
  ck_assert_ptr_nonnull(blank);
  ck_assert(is_pattern(blank + 4, 10));
  ck_assert_ptr_nonnull(strstr(o.err, "hop 0: HTTP/1.1 302"));
  ck_assert_ptr_nonnull(strstr(o.err, "hop 2: HTTP/1.1 200"));
  drop(&o);
}
END_TEST

START_TEST(truncation_and_errors)
{
  const char *cap[] = {"-m", "1000", "/bytes?n=5000", NULL};
  struct out o = run(cap);
  ck_assert_int_eq(o.status, 2);
  ck_assert_uint_eq(o.out_len, 1000);
  ck_assert(is_pattern(o.out, 1000));
  ck_assert_ptr_nonnull(strstr(o.err, "body truncated at the body cap"));
  drop(&o);

  const char *gz[] = {"/gzip?n=20000&coding=gzip", NULL};
  o = run(gz);
  ck_assert_int_eq(o.status, 0);
  ck_assert(is_pattern(o.out, 20000));
  ck_assert_ptr_nonnull(strstr(o.err, "encoding: decoded"));
  drop(&o);

  const char *bad[] = {"/corrupt?kind=crc", NULL};
  o = run(bad);
  ck_assert_int_eq(o.status, 3);
  ck_assert_ptr_nonnull(strstr(o.err, "corrupt or truncated compressed body"));
  drop(&o);

  const char *refused[] = {"http://127.0.0.1:1/", NULL};
  o = run(refused);
  ck_assert_int_eq(o.status, 4);
  ck_assert_ptr_nonnull(strstr(o.err, "transfer failed"));
  drop(&o);

  const char *usage[] = {"-p", "sideways", "/bytes", NULL};
  o = run(usage);
  ck_assert_int_eq(o.status, 1);
  ck_assert_ptr_nonnull(strstr(o.err, "usage:"));
  drop(&o);
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
  tcase_add_test(tc, truncation_and_errors);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
