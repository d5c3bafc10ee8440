#include "net.h"

#include <stdlib.h>
#include <string.h>

ts_server *srv;

void server_up(void)
{
  srv = ts_start();
  ck_assert_ptr_nonnull(srv);
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

size_t multi_burst(rc_pool *pool, const char *path, int total, int conc, size_t size,
                   int exact)
{
  char url[256];
  ts_url(srv, path, url, sizeof url);
  CURLM *multi = curl_multi_init();
  CURL **easy = calloc((size_t)conc, sizeof *easy);
  rc_response **resp = calloc((size_t)conc, sizeof *resp);
  int started = 0, done = 0, running = 0;
  size_t max_waiting = 0;
  for (int i = 0; i < conc && started < total; i++, started++) {
    ck_assert_int_eq(rc_response_new(pool, NULL, &resp[i]), RC_OK);
    easy[i] = curl_easy_init();
    rc_attach(resp[i], easy[i]);
    curl_easy_setopt(easy[i], CURLOPT_URL, url);
    curl_easy_setopt(easy[i], CURLOPT_PRIVATE, resp[i]);
    curl_multi_add_handle(multi, easy[i]);
  }
  do {
    curl_multi_perform(multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left))) {
      CURL *e = m->easy_handle;
      CURLcode cc = m->data.result;
      rc_response *r;
      curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
      ck_assert_msg(rc_result(r, cc) == RC_OK, "transfer %d: %s", done,
                    rc_result_text(rc_result(r, cc), cc));
      if (exact)
        assert_pattern(rc_body(r), size);
      else
        ck_assert(pattern_probes_ok(rc_body(r), size));
      done++;
      curl_multi_remove_handle(multi, e);
      rc_response_reset(r);
      if (started < total) {
        started++;
        curl_multi_add_handle(multi, e);
        running = 1;
      }
    }
    rc_pool_stats st;
    rc_pool_stats_get(pool, &st);
    if (st.waiting > max_waiting)
      max_waiting = st.waiting;
    if (running)
      rc_multi_poll(pool, multi, NULL, 0, 1000, NULL);
  } while (running || done < started);
  ck_assert_int_eq(done, total);
  for (int i = 0; i < conc; i++) {
    if (easy[i])
      curl_easy_cleanup(easy[i]);
    rc_response_free(resp[i]);
  }
  curl_multi_cleanup(multi);
  free(easy);
  free(resp);
  return max_waiting;
}
