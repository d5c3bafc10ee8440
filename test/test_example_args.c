/* examples/args.h, the one reading of command-line values that fetch,
 * threads, uvscan, scan and the benchmark share: what each function takes
 * and what it refuses (white space, signs, hex, exponents, overflow), and
 * that a time that is not 0 never becomes 0 (which means no limit). */
#include <check.h>
#include <stdint.h>

#include "../examples/args.h"
#include "util.h"

START_TEST(sizes)
{
  static const struct {
    const char *text;
    size_t want;
  } good[] = {{"0", 0},         {"5", 5},           {"1k", 1024},
              {"8m", 8u << 20}, {"2G", 2ull << 30}, {"0012K", 12 * 1024}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    size_t v = 7;
    ck_assert_msg(args_size(good[i].text, &v) == 0, "%s refused", good[i].text);
    ck_assert_uint_eq(v, good[i].want);
  }
  static const char *const bad[] = {"",
                                    " -5",
                                    "-5",
                                    "+5",
                                    " 5",
                                    "5 ",
                                    "5kk",
                                    "5x",
                                    "k",
                                    "0x10",
                                    "1.5m",
                                    "1e3",
                                    "18446744073709551616",
                                    "17179869184g",
                                    "inf"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t v = 7;
    ck_assert_msg(args_size(bad[i], &v) == -1, "%s taken", bad[i]);
    ck_assert_uint_eq(v, 7);
  }
}
END_TEST

START_TEST(numbers)
{
  long v = 0;
  ck_assert_int_eq(args_long("42", 0, 100, &v), 0);
  ck_assert_int_eq(v, 42);
  ck_assert_int_eq(args_long("-3", -5, 5, &v), 0);
  ck_assert_int_eq(v, -3);
  static const char *const bad[] = {"",    " 1",  "+1", "1 ",  "0x1",
                                    "1.0", "101", "-6", "--1", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(args_long(bad[i], -5, 100, &v) == -1, "%s taken", bad[i]);
  double d = 0;
  ck_assert_int_eq(args_positive("0.5", 10, &d), 0);
  ck_assert(d == 0.5);
  ck_assert_int_eq(args_positive("3", 10, &d), 0);
  static const char *const bad_d[] = {"0",   "0.0", "-1",  "11", "0x1p3",
                                      "1e1", "inf", "nan", " 1", ".5"};
  for (size_t i = 0; i < sizeof bad_d / sizeof bad_d[0]; i++)
    ck_assert_msg(args_positive(bad_d[i], 10, &d) == -1, "%s taken", bad_d[i]);
}
END_TEST

START_TEST(seconds)
{
  static const struct {
    const char *text;
    long ms;
  } good[] = {{"0", 0},      {"0.0", 0},    {"0.0004", 1}, {"0.001", 1},
              {"0.0011", 2}, {"1.5", 1500}, {"30", 30000}, {"2.", 2000}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    long ms = -1;
    ck_assert_msg(args_seconds(good[i].text, &ms) == 0, "%s refused", good[i].text);
    ck_assert_msg(ms == good[i].ms, "%s: %ld ms, want %ld", good[i].text, ms, good[i].ms);
  }
  static const char *const bad[] = {"",    "-1",  " 1",  "0x10", "0x1p-3",
                                    "1e3", "inf", "nan", "1s",   "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    long ms = -1;
    ck_assert_msg(args_seconds(bad[i], &ms) == -1, "%s taken", bad[i]);
  }
}
END_TEST

START_TEST(encoding_names)
{
  ck_assert_str_eq(example_encoding_name(RC_ENC_IDENTITY), "identity");
  ck_assert_str_eq(example_encoding_name(RC_ENC_DECODED), "decoded");
  ck_assert_str_eq(example_encoding_name(RC_ENC_UNSUPPORTED), "unsupported");
  ck_assert_str_eq(example_encoding_name(RC_ENC_NOT_DECODED), "not-decoded");
}
END_TEST

static Suite *example_args_suite(void)
{
  Suite *s = suite_create("example_args");
  TCase *tc = tcase_create("args");
  tcase_add_test(tc, sizes);
  tcase_add_test(tc, numbers);
  tcase_add_test(tc, seconds);
  tcase_add_test(tc, encoding_names);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite(example_args_suite()); }
