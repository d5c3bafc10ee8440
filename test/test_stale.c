/* Death tests, built under AddressSanitizer only: a view read after its
 * response was reset is reported, whether its block is idle in the pool or
 * would already have been handed to another response (the pool poisons
 * idle blocks and quarantines released ones). These are the ancestor's
 * use-after-release bugs, made test failures. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

typedef void (*stale_read)(void);

static volatile char sink;

static const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "X-A: 1\r\n", "\r\n", NULL};

static rc_response *filled(rc_pool *p, size_t n)
{
  char *body = malloc(n);
  fill_pattern(body, n, 1);
  rc_response *r = new_response(p, 0, RC_CAP_STOP);
  ck_assert_uint_eq(feed(r, lines, body, n, 0), 0);
  free(body);
  return r;
}

/* The body's block is idle in the pool. */
static void body_after_reset(void)
{
  rc_pool *p;
  rc_pool_new(NULL, &p);
  rc_response *r = filled(p, 100000);
  rc_view v = rc_body(r);
  rc_response_reset(r);
  sink = v.ptr[10];
}

/* Another response has taken memory since: without the quarantine it
 * would have been handed the very block the view points into. */
static void body_after_reuse(void)
{
  rc_pool *p;
  rc_pool_new(NULL, &p);
  rc_response *r = filled(p, 100000);
  rc_view v = rc_body(r);
  rc_response_reset(r);
  rc_response *other = filled(p, 100000);
  sink = v.ptr[10];
  rc_response_free(other);
}

/* A header value and the full response go the same way. */
static void header_after_reset(void)
{
  rc_response *r = filled(NULL, 10);
  rc_view v;
  rc_header(r, -1, "X-A", 0, &v);
  rc_response_reset(r);
  sink = v.ptr[0];
}

static void full_after_reset(void)
{
  rc_response *r = filled(NULL, 5000);
  rc_view v;
  rc_full_response(r, &v);
  rc_response_reset(r);
  sink = v.ptr[v.len / 2];
}

/* Runs fn in a child and returns what it wrote on stderr; the child must
 * not exit normally with status 0. */
static char *dies_with(stale_read fn)
{
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    fn();
    _exit(0); /* no report: the test fails below */
  }
  close(fds[1]);
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  ssize_t got;
  while ((got = read(fds[0], out + len, cap - 1 - len)) > 0)
    len += (size_t)got;
  out[len] = '\0';
  close(fds[0]);
  int ws;
  waitpid(pid, &ws, 0);
  ck_assert_msg(!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0), "the stale read went unreported");
  return out;
}

static void expect_report(stale_read fn)
{
  char *err = dies_with(fn);
  ck_assert_msg(strstr(err, "AddressSanitizer: use-after-poison") != NULL,
                "no use-after-poison report:\n%s", err);
  free(err);
}

START_TEST(stale_body_idle) { expect_report(body_after_reset); }
END_TEST

START_TEST(stale_body_reused) { expect_report(body_after_reuse); }
END_TEST

START_TEST(stale_header) { expect_report(header_after_reset); }
END_TEST

START_TEST(stale_full_response) { expect_report(full_after_reset); }
END_TEST

static Suite *stale_suite(void)
{
  Suite *s = suite_create("stale");
  TCase *tc = tcase_create("stale");
  tcase_add_test(tc, stale_body_idle);
  tcase_add_test(tc, stale_body_reused);
  tcase_add_test(tc, stale_header);
  tcase_add_test(tc, stale_full_response);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite(stale_suite()); }
