/* scan's regex functions (examples/scan/base-re.c, linked in as it is)
 * over subjects that end exactly at a page followed by a PROT_NONE guard
 * page: any read past a subject's end faults, so a JIT (or interpreter)
 * over-read kills the test instead of going unseen. A regex's first match
 * JIT-compiles it, as in scan; each result is checked against PCRE2's
 * interpreter over the same bytes (pcre2_match with PCRE2_NO_JIT), with
 * the flags scan's callers pass: none (the matchers, over header lines and
 * kept bodies), PCRE2_PARTIAL_HARD and PCRE2_NOTBOL (the extractors'
 * window, eval-extract.c, which passes its window's exact length).
 *
 * Under valgrind, the JIT's aligned 16-byte loads that take bytes past the
 * end of a subject on the heap (scan's) are reported as conditional jumps
 * on uninitialised values; test/pcre2-jit.supp says why they are harmless.
 * Here the bytes past a subject's end are the rest of its 16-byte block in
 * its page, mapped and defined, so memcheck reports nothing. This test is
 * what shows that no load leaves the subject's last page: lengths 0 to 130 and within 16 of each power of two up to the
 * page, each ending at the guard. Such a bug is not hypothetical: PCRE2
 * issue 984 (fixed by pull request 985) was a JIT start-bits scan entered
 * at the subject's end, whose aligned load read the next page; its example
 * was a pattern like "[a-c](?=\d)" over "zzzzzzza". */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../examples/scan/base.h"
#include "util.h"

/* Patterns of every kind scan runs, with the start-of-match searches the
 * JIT vectorises (a first byte, a byte set, a literal pair) and what looks
 * at or past the end ($, \b, lookahead, partial matches). */
static const char *const PATTERNS[] = {
    "lorem",                 /* first byte */
    "^lorem",                /* anchored */
    "\\Ad",                  /* anchored at the subject */
    "ipsum$",                /* at the end */
    "(?m)^qui$",             /* multiline */
    "[a-c](?=\\d)",          /* byte set, lookahead past the end (PCRE2 issue 984) */
    "[xyz]q",                /* byte set, nothing to find */
    "\\bdol[a-z]*\\b",       /* word boundaries at the end */
    "(?i)DOLOR",             /* any case */
    "(?i)[ST]it\\b",         /* any case, a set */
    "(\\d{3})\\d{4}\\n",     /* a capture, as --extract reports group 1 */
    "(?s)(.{4})$",           /* the last bytes */
    "(?<=qui )culpa",        /* lookbehind */
    "(l)\\1",                /* backreference */
    "ea|ex",                 /* alternatives */
    "a+b|c",                 /* least end differs from leftmost (regex_first_end) */
    "zzzz+a",                /* runs up to the end */
    "\\x00\\x01",            /* binary bytes */
    "(?s)q.*?z",             /* lazy, to the end */
};
#define NPATTERNS (sizeof PATTERNS / sizeof PATTERNS[0])

/* What the patterns look for; a subject is this text repeated, ending at
 * some distance before its end (so that subjects end in every way). */
static const char TEXT[] = "lorem ipsum dolor sit amet, qui\nculpa qui culpa ll ea ex "
                           "aab c 0123456\n zzzzzzza b7 \x00\x01 DoLoR Sit q z dolor ipsum";

static unsigned char *guarded;  /* two pages: the subject's, then the guard */
static size_t page;

static void setup(void)
{
  page = (size_t)sysconf(_SC_PAGESIZE);
  guarded = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(guarded, MAP_FAILED);
  ck_assert_int_eq(mprotect(guarded + page, page, PROT_NONE), 0);
}

static void teardown(void)
{
  munmap(guarded, 2 * page);
  regex_done();
}

/* A subject of len bytes that ends where the guard page begins: the last
 * len bytes of TEXT repeated (tail: how far from TEXT's end it stops). */
static rc_view subject(size_t len, size_t tail)
{
  unsigned char *p = guarded + page - len;
  size_t n = sizeof TEXT - 1, first = (2 * n - tail % n - len % n) % n;
  for (size_t i = 0; i < len; i++)
    p[i] = (unsigned char)TEXT[(first + i) % n];
  return (rc_view){(const char *)p, len};
}

/* The interpreter's answer, as regex_next gives it. */
static int reference(const regex *re, rc_view text, size_t start, uint32_t flags,
                     size_t bounds[4])
{
  pcre2_match_data *md = pcre2_match_data_create(16, NULL);
  ck_assert_ptr_nonnull(md);
  int rc = pcre2_match(re->code, (PCRE2_SPTR)text.ptr, text.len, start, flags | PCRE2_NO_JIT, md,
                       NULL);
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) {
    int group = rc != PCRE2_ERROR_PARTIAL && re->groups > 0;
    bounds[0] = ov[0];
    bounds[1] = ov[1];
    bounds[2] = group ? ov[2] : PCRE2_UNSET;
    bounds[3] = group ? ov[3] : PCRE2_UNSET;
  }
  pcre2_match_data_free(md);
  return rc;
}

/* The least end of any match, found the long way: the least e such that a
 * match of the whole regex ends at e, with the whole text in view. */
static size_t least_end(const regex *re, rc_view text)
{
  static int ws[4096];
  pcre2_match_data *md = pcre2_match_data_create(200, NULL);
  ck_assert_ptr_nonnull(md);
  size_t best = NO_OFFSET;
  for (size_t s = 0; s <= text.len; s++) {
    /* Every match from s: the DFA matcher gives each end, longest first. */
    int rc = pcre2_dfa_match(re->code, (PCRE2_SPTR)text.ptr, text.len, s, PCRE2_ANCHORED, md, NULL,
                             ws, sizeof ws / sizeof ws[0]);
    ck_assert_msg(rc > 0 || rc == PCRE2_ERROR_NOMATCH, "%s: DFA %d", re->text, rc);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    for (int k = 0; k < rc; k++)
      if (ov[2 * k + 1] < best)
        best = ov[2 * k + 1];
  }
  pcre2_match_data_free(md);
  return best;
}

static int uses_backref(const char *p) { return strstr(p, "\\1") != NULL; }

/* regex_next against the interpreter. With PCRE2_PARTIAL_HARD, the two
 * may differ on whether a subject that is empty, or shorter than what the
 * regex needs, is a partial match or none (PCRE2 10.42's JIT says partial
 * where its interpreter says none, and the reverse): scan takes either
 * as "not decided yet", which the body's end settles. */
static void check_one(const regex *re, rc_view text, size_t start, uint32_t flags)
{
  size_t got[4] = {0}, want[4] = {0};
  int rc = regex_next(re, text, start, flags, 1, got);
  int ref = reference(re, text, start, flags, want);
  int undecided = rc == PCRE2_ERROR_PARTIAL || rc == PCRE2_ERROR_NOMATCH;
  if ((flags & PCRE2_PARTIAL_HARD) && undecided && rc != ref &&
      (ref == PCRE2_ERROR_PARTIAL || ref == PCRE2_ERROR_NOMATCH) && text.len - start < 8)
    return;
  ck_assert_msg(rc == ref, "%s over %zu bytes from %zu, flags %x: %d, want %d", re->text, text.len,
                start, flags, rc, ref);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL)
    ck_assert_msg(!memcmp(got, want, sizeof got), "%s over %zu bytes from %zu, flags %x: bounds",
                  re->text, text.len, start, flags);
}

/* The subject lengths after len: 0 to 130, then those within 16 of each
 * power of two up to the page; SIZE_MAX after the last. */
static size_t next_length(size_t len)
{
  if (len < 130)
    return len + 1;
  for (size_t p2 = 256; p2 <= page; p2 *= 2) {
    if (len < p2 - 17)
      return p2 - 17;
    if (len < p2 + 16)
      return len + 1;
  }
  return SIZE_MAX;
}

START_TEST(guard_page)
{
  uint32_t jit = 0;
  pcre2_config(PCRE2_CONFIG_JIT, &jit);
  /* Under valgrind (TS_QUICK), two endings of the text of eight. */
  size_t tails = getenv("TS_QUICK") ? 2 : 8;
  char msg[256];
  for (size_t i = 0; i < NPATTERNS; i++) {
    regex re;
    ck_assert_msg(regex_compile(&re, PATTERNS[i], msg, sizeof msg) == 0, "%s: %s", PATTERNS[i], msg);
    size_t jit_size = 0;
    regex_hit(&re, subject(page, 0)); /* its first match (one that fits): the JIT */
    pcre2_pattern_info(re.code, PCRE2_INFO_JITSIZE, &jit_size);
    ck_assert_msg(!jit || jit_size > 0, "%s: not JIT-compiled", PATTERNS[i]);
    for (size_t len = 0; len <= page; len = next_length(len))
      for (size_t tail = 0; tail < tails; tail++) {
        rc_view text = subject(len, tail * 5);
        for (size_t s = 0; s < 3; s++) {
          size_t start = s == 0 ? 0 : s == 1 ? len / 2 : len;
          check_one(&re, text, start, 0);
          check_one(&re, text, start, PCRE2_PARTIAL_HARD);
          check_one(&re, text, start, PCRE2_PARTIAL_HARD | PCRE2_NOTBOL);
        }
        size_t want[4];
        int hit = reference(&re, text, 0, 0, want) >= 0;
        ck_assert_int_eq(regex_hit(&re, text), hit);
        /* The matchers' offsets: the least end (the DFA cannot run a
         * backreference; the leftmost match's end bounds it then). */
        size_t end = regex_first_end(&re, text);
        if (!hit)
          ck_assert_msg(end == NO_OFFSET, "%s: an end without a match", re.text);
        else if (uses_backref(re.text))
          ck_assert_msg(end <= want[1], "%s over %zu bytes: end %zu", re.text, len, end);
        else if (len <= 130 && tail == 0)
          ck_assert_msg(end == least_end(&re, text), "%s over %zu bytes: end %zu, want %zu",
                        re.text, len, end, least_end(&re, text));
      }
    regex_free(&re);
  }
}
END_TEST

/* regex_re2's text: what RE2 and PCRE read differently, written as
 * RE2 means it; the rest as written, however it is nested or quoted. */
START_TEST(re2_text)
{
  static const char *const cases[][2] = {
      {"version 1\\.2$", "version 1\\.2\\z"},
      {"(?m)a$", "(?m)a$"},
      {"(?im)a$", "(?im)a$"},
      {"(?i)a$", "(?i)a\\z"},
      {"(?m:a$)b$", "(?m:a$)b\\z"},
      {"(?m)a$(?-m)b$", "(?m)a$(?-m)b\\z"},
      {"(a(?m)b$)c$", "(a(?m)b$)c\\z"},
      {"(?<n>a$)|(?:b$)", "(?<n>a\\z)|(?:b\\z)"},
      {"\\$[$]", "\\$[$]"},
      {"[]$]$", "[]$]\\z"},
      {"[^]$]$", "[^]$]\\z"},
      {"[[:alpha:]$]$", "[[:alpha:]$]\\z"},
      {"\\Qa$\\E$", "\\Qa$\\E\\z"},
      {"\\Qa$", "\\Qa$"},
      {"(?#x$)$", "(?#x$)\\z"},
      {"\\c[$", "\\c[\\z"},
      {"a\\sb\\Sc", "a[\\t\\n\\f\\r ]b[^\\t\\n\\f\\r ]c"},
      {"[\\s,]", "[\\t\\n\\f\\r ,]"},
      {"\\v[\\v]", "\\x0b[\\x0b]"},
      {"\\\\s", "\\\\s"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = regex_re2(cases[i][0], NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(!strcmp(got, cases[i][1]), "%s: %s, want %s", cases[i][0], got, cases[i][1]);
    free(got);
  }
  int line_start;
  free(regex_re2("(?m)^a", &line_start));
  ck_assert_int_eq(line_start, 1);
  free(regex_re2("^a(?m:b)[^c]", &line_start));
  ck_assert_int_eq(line_start, 0);
}
END_TEST

/* What the regexes match, as RE2 (Go's regexp) documents them. */
START_TEST(re2_match)
{
  static const struct {
    const char *re, *text;
    int hit;
  } cases[] = {
      {"version 1\\.2$", "hello\nversion 1.2", 1},
      {"version 1\\.2$", "hello\nversion 1.2\n", 0}, /* PCRE: before a final newline */
      {"(?m)version 1\\.2$", "hello\nversion 1.2\n", 1},
      {"\\n$", "a\n", 1},
      {"^b", "a\nb", 0},
      {"(?m)^b", "a\nb", 1},
      {"(?m)^$", "a\n", 1}, /* after the newline that ends the text */
      {"(?m)^$", "a", 0},
      {"^$", "\n", 0},
      {"^$", "", 1},
      {"a\\sb", "a\vb", 0},
      {"a\\sb", "a\tb", 1},
      {"a\\Sb", "a\vb", 1},
      {"a\\vb", "a\vb", 1},
      {"a\\vb", "a\nb", 0},
  };
  char msg[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    regex re;
    ck_assert_msg(regex_compile(&re, cases[i].re, msg, sizeof msg) == 0, "%s: %s", cases[i].re, msg);
    rc_view text = {cases[i].text, strlen(cases[i].text)};
    ck_assert_msg(regex_hit(&re, text) == cases[i].hit, "%s over case %zu: %d", cases[i].re, i,
                  !cases[i].hit);
    size_t end = regex_first_end(&re, text);
    ck_assert_msg(cases[i].hit ? end <= text.len : end == NO_OFFSET, "%s: end %zu", cases[i].re, end);
    regex_free(&re);
  }
  /* An error's offset is in the text as written. */
  regex re;
  ck_assert_int_eq(regex_compile(&re, "\\s\\s(", msg, sizeof msg), -1);
  ck_assert_msg(strstr(msg, "at offset 5"), "%s", msg);
}
END_TEST

/* An extractor's group of each match (regex_next's group g): a group
 * that took no part is unset; a group past the 16 that the scan's match data keeps is found
 * all the same; the next match from a given byte on. */
START_TEST(groups)
{
  char msg[256], pattern[256] = "";
  regex re;
  ck_assert(regex_compile(&re, "v=(\\d+)(x)?", msg, sizeof msg) == 0);
  rc_view text = {"a v=12 v=3x", 11};
  size_t b[4];
  ck_assert_int_ge(regex_next(&re, text, 0, 0, 1, b), 0);
  ck_assert_uint_eq(b[0], 2);
  ck_assert_uint_eq(b[1], 6);
  ck_assert_uint_eq(b[2], 4);
  ck_assert_uint_eq(b[3], 6);
  ck_assert_int_ge(regex_next(&re, text, 0, 0, 2, b), 0);
  ck_assert(b[2] == PCRE2_UNSET && b[3] == PCRE2_UNSET);
  ck_assert_int_ge(regex_next(&re, text, 6, 0, 2, b), 0); /* v=3x */
  ck_assert_uint_eq(b[2], 10);
  ck_assert_int_eq(regex_next(&re, text, 11, 0, 1, b), PCRE2_ERROR_NOMATCH);
  regex_free(&re);
  for (int i = 0; i < 20; i++) /* (a)(b)...(t) */
    snprintf(pattern + strlen(pattern), sizeof pattern - strlen(pattern), "(%c)", 'a' + i);
  ck_assert(regex_compile(&re, pattern, msg, sizeof msg) == 0);
  rc_view letters = {"--abcdefghijklmnopqrst", 22};
  ck_assert_int_ge(regex_next(&re, letters, 0, 0, 20, b), 0);
  ck_assert_uint_eq(b[2], 21);
  ck_assert_uint_eq(b[3], 22);
  ck_assert_int_ge(regex_next(&re, letters, 0, 0, 3, b), 0);
  ck_assert_uint_eq(b[2], 4);
  regex_free(&re);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("scan_re");
  TCase *tc = tcase_create("scan_re");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, guard_page);
  tcase_add_test(tc, re2_text);
  tcase_add_test(tc, re2_match);
  tcase_add_test(tc, groups);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
