/* The programs the documents show, built as printed (doc/example.py
 * extracts them; doc/meson.build builds them), run against the loopback
 * server: README's Usage, respchain(3), rc_attach(3), rc_multi_poll(3) and
 * respchain-multi(3). Each binary comes from an environment variable. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static const char *binary(const char *var)
{
  const char *path = getenv(var);
  ck_assert_msg(path != NULL, "%s is not set", var);
  return path;
}

static char *url(const char *path)
{
  char *u = malloc(256);
  return ts_url(srv, path, u, 256);
}

/* Runs bin with up to 15 URLs made from paths (NULL-terminated). */
static prog_out run_with(const char *bin, const char *const *paths)
{
  char *argv[17] = {(char *)bin};
  int n = 1;
  for (; paths[n - 1]; n++)
    argv[n] = url(paths[n - 1]);
  prog_out o = run_program(argv);
  for (int i = 1; i < n; i++)
    free(argv[i]);
  return o;
}

static rc_view as_view(const prog_out *o)
{
  rc_view v = {o->out, o->out_len};
  return v;
}

/* How many lines of text are exactly line. */
static int count_lines(const char *text, const char *line)
{
  int n = 0;
  size_t len = strlen(line);
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (l == len && memcmp(p, line, len) == 0)
      n++;
    p += l + (nl != NULL);
  }
  return n;
}

static int count_all_lines(const char *text)
{
  int n = 0;
  for (; *text; text++)
    n += *text == '\n';
  return n;
}

/* README's Usage: the content type and the body's length; a corrupt body
 * is reported with rc_result_text and exit status 1. */
START_TEST(readme_usage)
{
  const char *bin = binary("EXAMPLE_README");
  const char *ok[] = {"/bytes?n=1000", NULL};
  prog_out o = run_with(bin, ok);
  ck_assert_int_eq(o.status, 0);
  ck_assert_str_eq(o.out, "application/octet-stream, 1000 bytes\n");
  ck_assert_str_eq(o.err, "");
  prog_out_free(&o);

  const char *corrupt[] = {"/corrupt?kind=crc", NULL};
  o = run_with(bin, corrupt);
  ck_assert_int_eq(o.status, 1);
  char want[128];
  snprintf(want, sizeof want, "%s\n", rc_strerror(RC_E_DECODE));
  ck_assert_str_eq(o.err, want);
  prog_out_free(&o);
}
END_TEST

/* respchain(3) and rc_attach(3): the body on stdout, decoded. */
START_TEST(single_transfer_pages)
{
  const char *vars[] = {"EXAMPLE_RESPCHAIN", "EXAMPLE_ATTACH"};
  for (size_t i = 0; i < 2; i++) {
    const char *bin = binary(vars[i]);
    const char *plain[] = {"/bytes?n=70000", NULL};
    prog_out o = run_with(bin, plain);
    ck_assert_int_eq(o.status, 0);
    assert_pattern(as_view(&o), 70000);
    prog_out_free(&o);
    const char *gz[] = {"/gzip?n=300000", NULL};
    o = run_with(bin, gz);
    ck_assert_int_eq(o.status, 0);
    assert_pattern(as_view(&o), 300000);
    prog_out_free(&o);
  }
}
END_TEST

/* rc_multi_poll(3): every URL at once, a line each. */
START_TEST(multi_poll_page)
{
  const char *paths[] = {"/bytes?n=3M", "/bytes?n=3M", "/gzip?n=2M",        "/bytes?n=3M",
                         "/bytes?n=1",  "/bytes?n=3M", "/corrupt?kind=crc", NULL};
  prog_out o = run_with(binary("EXAMPLE_MULTI_POLL"), paths);
  ck_assert_int_eq(o.status, 1); /* the corrupt one */
  ck_assert_int_eq(count_lines(o.out, "200 3145728 complete"), 4);
  ck_assert_int_eq(count_lines(o.out, "200 2097152 complete"), 1);
  ck_assert_int_eq(count_lines(o.out, "200 1 complete"), 1);
  ck_assert_msg(strstr(o.out, rc_strerror(RC_E_DECODE)) != NULL, "%s", o.out);
  ck_assert_int_eq(count_all_lines(o.out), 7);
  prog_out_free(&o);
}
END_TEST

/* respchain-multi(3): 14 URLs through 4 slots under an 8 MiB budget, so
 * that transfers wait; a failure in the middle does not stop the slot it
 * ran on. Every URL has its line, and the program ends. */
START_TEST(multi_lifecycle_page)
{
  const char *paths[] = {"/bytes?n=4M", "/bytes?n=4M",       "/bytes?n=4M", "/bytes?n=4M",
                         "/bytes?n=4M", "/corrupt?kind=crc", "/bytes?n=4M", "/gzip?n=3M",
                         "/bytes?n=4M", "/bytes?n=4M",       "/bytes?n=4M", "/redirect?n=2",
                         "/bytes?n=4M", "/bytes?n=4M",       NULL};
  prog_out o = run_with(binary("EXAMPLE_MULTI"), paths);
  ck_assert_int_eq(o.status, 1);
  ck_assert_int_eq(count_all_lines(o.out), 14);
  char line[512], u[256];
  snprintf(line, sizeof line, "%s 200 %zu complete", ts_url(srv, "/bytes?n=4M", u, sizeof u),
           4 * MiB);
  ck_assert_int_eq(count_lines(o.out, line), 11);
  snprintf(line, sizeof line, "%s 200 %zu complete", ts_url(srv, "/gzip?n=3M", u, sizeof u),
           3 * MiB);
  ck_assert_int_eq(count_lines(o.out, line), 1);
  snprintf(line, sizeof line, "%s 200 10 complete", ts_url(srv, "/redirect?n=2", u, sizeof u));
  ck_assert_int_eq(count_lines(o.out, line), 1);
  ck_assert_msg(strstr(o.out, rc_strerror(RC_E_DECODE)) != NULL, "%s", o.out);
  prog_out_free(&o);

  /* No URL: usage, exit status 2. */
  const char *none[] = {NULL};
  o = run_with(binary("EXAMPLE_MULTI"), none);
  ck_assert_int_eq(o.status, 2);
  ck_assert_ptr_nonnull(strstr(o.err, "usage:"));
  prog_out_free(&o);
}
END_TEST

/* The text of doc/NAME, from the source tree (DOC_DIR). */
static char *page(const char *name)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", binary("DOC_DIR"), name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  char *text = calloc(1, 256 * 1024);
  ck_assert_ptr_nonnull(text);
  size_t n = fread(text, 1, 256 * 1024 - 1, f);
  ck_assert_uint_gt(n, 0);
  fclose(f);
  return text;
}

/* Whether text names the code: the name, not as the start of a longer one
 * (RC_E_NO... is not RC_E_NOMEM). */
static int names(const char *text, const char *code)
{
  size_t len = strlen(code);
  for (const char *p = strstr(text, code); p; p = strstr(p + 1, code)) {
    char next = p[len];
    if (!(next == '_' || (next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9')))
      return 1;
  }
  return 0;
}

/* Every code of RC_CODES is listed by rc_strerror(3), with its message, and
 * named by rc_result(3). */
START_TEST(pages_name_every_code)
{
  char *strerror_page = page("rc_strerror.3"), *result_page = page("rc_result.3");
#define RC__CHECK(name, value, msg)                                                                \
  ck_assert_msg(names(strerror_page, #name), "rc_strerror(3) lacks " #name);                       \
  ck_assert_msg(strstr(strerror_page, msg) != NULL, "rc_strerror(3) lacks: " msg);                 \
  ck_assert_msg(names(result_page, #name), "rc_result(3) lacks " #name);
  RC_CODES(RC__CHECK)
#undef RC__CHECK
  ck_assert(!names("RC_E_NOMEM", "RC_E_NO")); /* the check itself */
  free(strerror_page);
  free(result_page);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("docs");
  TCase *tc = tcase_create("examples");
  tcase_add_checked_fixture(tc, server_up, server_down);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, readme_usage);
  tcase_add_test(tc, single_transfer_pages);
  tcase_add_test(tc, multi_poll_page);
  tcase_add_test(tc, multi_lifecycle_page);
  suite_add_tcase(s, tc);
  TCase *pages = tcase_create("pages");
  tcase_add_test(pages, pages_name_every_code);
  suite_add_tcase(s, pages);
  return run_suite(s);
}
