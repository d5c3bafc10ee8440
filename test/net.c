#include "net.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

ts_server *srv;

void server_up(void)
{
  srv = ts_start();
  ck_assert_ptr_nonnull(srv);
}

void server_base(char *out, size_t cap)
{
  ts_url(srv, "", out, cap);
  size_t n = strlen(out);
  if (n && out[n - 1] == '/')
    out[n - 1] = '\0';
}

void server_down(void)
{
  ts_stop(srv);
  srv = NULL;
}

void assert_pattern(rc_view v, size_t n)
{
  ck_assert_uint_eq(v.len, n);
  unsigned char *want = malloc(n ? n : 1);
  ts_pattern_fill(want, 0, n);
  ck_assert_msg(memcmp(v.ptr, want, n) == 0, "body differs from the pattern");
  free(want);
  ck_assert_int_eq(v.ptr[n], '\0');
}

int pattern_probes_ok(rc_view b, size_t n)
{
  if (b.len != n)
    return 0;
  size_t at[] = {0, n / 3, n / 2, n - 1};
  for (size_t i = 0; i < 4 && n; i++)
    if ((unsigned char)b.ptr[at[i]] != ts_pattern_byte(at[i]))
      return 0;
  return b.ptr[n] == '\0';
}

static void check_done(const burst *b, CURLMsg *m, int done)
{
  rc_response *r;
  curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
  CURLcode cc = m->data.result;
  ck_assert_msg(rc_result(r, cc) == RC_OK, "transfer %d: %s", done,
                rc_result_text(rc_result(r, cc), cc));
  if (b->exact)
    assert_pattern(rc_body(r), b->size);
  else
    ck_assert(pattern_probes_ok(rc_body(r), b->size));
}

size_t multi_run(const burst *b)
{
  CURLM *multi = curl_multi_init();
  int conc = b->conc;
  CURL **easy = calloc((size_t)conc, sizeof *easy);
  rc_response **resp = calloc((size_t)conc, sizeof *resp);
  int started = 0, done = 0, running = 0;
  size_t max_waiting = 0;
  ck_assert(!b->keep || b->conc == b->total);
  for (int i = 0; i < conc && started < b->total; i++, started++) {
    ck_assert_int_eq(rc_response_new(b->pool, NULL, &resp[i]), RC_OK);
    easy[i] = curl_easy_init();
    rc_attach(resp[i], easy[i]);
    curl_easy_setopt(easy[i], CURLOPT_URL, b->url);
    curl_easy_setopt(easy[i], CURLOPT_PRIVATE, resp[i]);
    if (b->setup)
      b->setup(easy[i], b->ud);
    ck_assert_int_eq(rc_multi_add(resp[i], multi), CURLM_OK);
  }
  rc_pool_stats st;
  do {
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while (!b->keep && (m = curl_multi_info_read(multi, &left))) {
      check_done(b, m, done++);
      CURL *e = m->easy_handle;
      rc_response *r;
      curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
      curl_multi_remove_handle(multi, e);
      rc_response_reset(r);
      if (started < b->total) {
        started++;
        ck_assert_int_eq(rc_multi_add(r, multi), CURLM_OK);
        running = 1;
      }
    }
    rc_pool_stats_get(b->pool, &st);
    if (st.waiting > max_waiting)
      max_waiting = st.waiting;
    /* Transfers that rc_multi_add keeps back are not in curl's count. */
    if (running || st.deferred)
      rc_multi_poll(b->pool, multi, NULL, 0, 1000, NULL);
  } while (running || st.deferred || (!b->keep && done < started));
  CURLMsg *m;
  int left;
  while (b->keep && (m = curl_multi_info_read(multi, &left)))
    check_done(b, m, done++); /* read after the loop, all still kept */
  ck_assert_int_eq(done, b->total);
  rc_pool_stats_get(b->pool, &st);
  ck_assert_uint_eq(st.deferred, 0);
  if (!b->shared)
    ck_assert_uint_eq(st.waiting, 0); /* every response still alive, none queued */
  for (int i = 0; i < conc; i++) {
    if (easy[i]) {
      curl_multi_remove_handle(multi, easy[i]);
      curl_easy_cleanup(easy[i]);
    }
    rc_response_free(resp[i]);
  }
  curl_multi_cleanup(multi);
  free(easy);
  free(resp);
  return max_waiting;
}

size_t multi_burst(rc_pool *pool, const char *path, int total, int conc, size_t size, int exact)
{
  char url[256];
  ts_url(srv, path, url, sizeof url);
  burst b = {pool, url, NULL, NULL, total, conc, size, exact, 0, 0};
  return multi_run(&b);
}

static char *slurp(int fd, size_t *len)
{
  off_t n = lseek(fd, 0, SEEK_END);
  ck_assert_int_ge(n, 0);
  char *buf = malloc((size_t)n + 1);
  ck_assert_int_eq(pread(fd, buf, (size_t)n, 0), n);
  buf[n] = '\0';
  if (len)
    *len = (size_t)n;
  return buf;
}

prog_out run_program(char *const argv[])
{
  char out_path[] = "/tmp/rc-prog-out-XXXXXX", err_path[] = "/tmp/rc-prog-err-XXXXXX";
  int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  ck_assert(out_fd >= 0 && err_fd >= 0);
  unlink(out_path);
  unlink(err_path);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  ck_assert_int_eq(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int ws;
  ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
  prog_out o;
  o.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  o.out = slurp(out_fd, &o.out_len);
  o.err = slurp(err_fd, NULL);
  close(out_fd);
  close(err_fd);
  return o;
}

void prog_out_free(prog_out *o)
{
  free(o->out);
  free(o->err);
}
