/* scan's choice of templates (examples/scan/tpl-filter.c), through the
 * template layer alone, without curl: test/templates/filter loaded under
 * nuclei's filters, and exactly which templates load, which are skipped
 * and how many the filters left out. The expected sets are written from
 * nuclei's rules (its index filter: an excluded tag, id, severity or type
 * leaves a template out; then each kind of value given must have one of
 * the template's, tags and authors in lower case, ids in any case, glob
 * patterns as Go's filepath.Match); each template's first line says what
 * it is there for.
 *
 * TEMPLATES is the directory test/templates. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/scan/tpl.h"

/* A filter's value: a field and a comma list. */
typedef struct given {
  tpl_field field;
  const char *list;
} given;
#define END {TF_FIELDS, NULL}

/* Loads filter/ under the filters args (up to END) and checks the ids
 * loaded (in file name order, space-separated), the skips and the
 * templates left out. */
static void expect(const given *args, const char *ids, size_t skipped, size_t left_out)
{
  const char *dir = getenv("TEMPLATES");
  ck_assert_msg(dir && *dir, "TEMPLATES is not set");
  char path[512];
  snprintf(path, sizeof path, "%s/filter", dir);
  tpl_filter f;
  memset(&f, 0, sizeof f);
  for (size_t i = 0; args[i].list; i++)
    ck_assert_int_eq(tpl_filter_add(&f, args[i].field, args[i].list), 0);
  templates ts;
  memset(&ts, 0, sizeof ts);
  ts.filter = tpl_filter_any(&f) ? &f : NULL;
  const char *paths[] = {path};
  ck_assert_int_eq(tpl_load(&ts, paths, 1), 0);
  char got[512] = "";
  for (size_t i = 0; i < ts.n; i++) /* in file name order */
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", ts.t[i].id);
  ck_assert_str_eq(got, ids);
  ck_assert_uint_eq(ts.nskips, skipped);
  ck_assert_uint_eq(ts.nfiltered, left_out);
  tpl_free(&ts);
  tpl_filter_free(&f);
}

/* File name order: cve-critical, cve-dos, cve-high, cve-medium,
 * cve-no-severity, dns-cve (skipped: dns), exposure, panel. */
#define ALL "CVE-2099-0001 cve-2099-0005 cve-2099-0002 cve-2099-0003 cve-2099-0004 " \
            "exposed-config admin-panel"

START_TEST(no_filter)
{
  const given none[] = {END};
  expect(none, ALL, 1, 0);
}
END_TEST

/* -tags cve -severity critical,high: tagged cve AND critical or high. The
 * dns template is chosen, then skipped; one without a severity is not
 * chosen; the dos-tagged one is (scan leaves no tag out by default). */
START_TEST(tags_and_severity)
{
  const given a[] = {{TF_TAGS, "cve"}, {TF_SEVERITY, "critical,high"}, END};
  expect(a, "CVE-2099-0001 cve-2099-0005 cve-2099-0002", 1, 4);
  const given upper[] = {{TF_TAGS, " CVE "}, {TF_SEVERITY, "Critical"}, {TF_SEVERITY, "HIGH"}, END};
  expect(upper, "CVE-2099-0001 cve-2099-0005 cve-2099-0002", 1, 4);
  const given etags[] = {{TF_TAGS, "cve"}, {TF_SEVERITY, "critical,high"}, {TF_ETAGS, "dos"}, END};
  expect(etags, "CVE-2099-0001 cve-2099-0002", 1, 5);
  const given http[] = {{TF_TAGS, "cve"}, {TF_SEVERITY, "critical,high"}, {TF_TYPE, "http"}, END};
  expect(http, "CVE-2099-0001 cve-2099-0005 cve-2099-0002", 0, 5);
  const given any[] = {{TF_TAGS, "panel"}, {TF_TAGS, "exposure,nothing"}, END};
  expect(any, "exposed-config admin-panel", 0, 6);
}
END_TEST

/* -es leaves out those severities; a template without one stays. */
START_TEST(exclude_severity)
{
  const given a[] = {{TF_ESEVERITY, "info,medium"}, END};
  expect(a, "CVE-2099-0001 cve-2099-0005 cve-2099-0002 cve-2099-0004 exposed-config", 1, 2);
  const given b[] = {{TF_SEVERITY, "critical"}, {TF_ESEVERITY, "critical"}, END};
  expect(b, "", 0, 8);
}
END_TEST

/* -id: ids in any case, and glob patterns; -eid likewise. */
START_TEST(ids)
{
  const given a[] = {{TF_ID, "cve-2099-000[12]"}, END};
  expect(a, "CVE-2099-0001 cve-2099-0002", 0, 6);
  const given b[] = {{TF_ID, "CVE-2099-0003,admin-panel"}, END};
  expect(b, "cve-2099-0003 admin-panel", 0, 6);
  const given c[] = {{TF_EID, "cve-*"}, END};
  expect(c, "exposed-config admin-panel", 1, 5);
  const given d[] = {{TF_ID, "*"}, {TF_EID, "*-0001,exposed-config"}, END};
  expect(d, "cve-2099-0005 cve-2099-0002 cve-2099-0003 cve-2099-0004 admin-panel", 1, 2);
}
END_TEST

/* -author: any of them, in lower case; a comma list or a list. */
START_TEST(authors)
{
  const given a[] = {{TF_AUTHOR, "ALICE"}, END};
  expect(a, "CVE-2099-0001 cve-2099-0003", 1, 5);
  const given b[] = {{TF_AUTHOR, "bob,dave"}, END};
  expect(b, "CVE-2099-0001 exposed-config admin-panel", 0, 5);
  const given c[] = {{TF_AUTHOR, "carol"}, {TF_TAGS, "sqli"}, END};
  expect(c, "cve-2099-0002", 0, 7);
}
END_TEST

/* -type and -ept: the protocol type, nuclei's first kind of request. */
START_TEST(types)
{
  const given a[] = {{TF_TYPE, "dns"}, END};
  expect(a, "", 1, 7);
  const given b[] = {{TF_ETYPE, "dns"}, END};
  expect(b, ALL, 0, 1);
}
END_TEST

/* Values the fields refuse: not a severity, not a type, nothing. */
START_TEST(refused)
{
  tpl_filter f;
  memset(&f, 0, sizeof f);
  ck_assert_int_eq(tpl_filter_add(&f, TF_SEVERITY, "high,severe"), -1);
  ck_assert_int_eq(tpl_filter_add(&f, TF_ESEVERITY, "urgent"), -1);
  ck_assert_int_eq(tpl_filter_add(&f, TF_TYPE, "network"), -1); /* nuclei's is tcp */
  ck_assert_int_eq(tpl_filter_add(&f, TF_TAGS, ""), -1);
  ck_assert_int_eq(tpl_filter_add(&f, TF_TAGS, " , "), -1);
  ck_assert_int_eq(tpl_filter_add(&f, TF_TAGS, "a,,b,"), 0);
  ck_assert_uint_eq(f.n[TF_TAGS], 2);
  ck_assert_int_eq(tpl_filter_add(&f, TF_TYPE, "TCP, http"), 0);
  ck_assert_str_eq(f.v[TF_TYPE][0], "tcp");
  tpl_filter_free(&f);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("tpl_filter");
  TCase *tc = tcase_create("filters");
  tcase_add_test(tc, no_filter);
  tcase_add_test(tc, tags_and_severity);
  tcase_add_test(tc, exclude_severity);
  tcase_add_test(tc, ids);
  tcase_add_test(tc, authors);
  tcase_add_test(tc, types);
  tcase_add_test(tc, refused);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
