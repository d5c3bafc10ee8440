/* scan's template payloads (examples/scan/tpl-payloads.c), through the
 * template loader: inline lists and texts, files beside the template and
 * under helpers/ above it, each attack and its combinations in order,
 * --attack-type, the bounds on combinations and on files, and the reasons
 * a template is skipped for. The files live in a directory made for the
 * run (removed at the end); no network. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpl.h"

/* The tree: ROOT/helpers/words.txt, ROOT/a/b/ (the templates), and what
 * each test writes. */
static char root[256];

static void path_of(char *out, size_t n, const char *rel) { snprintf(out, n, "%s/%s", root, rel); }

/* Writes n bytes of data to ROOT/rel. */
static void write_file(const char *rel, const char *data, size_t n)
{
  char p[512];
  path_of(p, sizeof p, rel);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

static void write_text(const char *rel, const char *text) { write_file(rel, text, strlen(text)); }

/* A template of one request at ROOT/a/b/t.yaml: path, then the rest of
 * the request's keys (indented by four), with a status matcher. */
static void write_template(const char *path, const char *keys)
{
  char text[8192];
  snprintf(text, sizeof text,
           "id: t\ninfo: {name: t, severity: info}\nhttp:\n  - path: [\"%s\"]\n%s"
           "    matchers:\n      - type: status\n        status: [200]\n",
           path, keys);
  write_text("a/b/t.yaml", text);
}

/* ts loaded from ROOT/a/b/t.yaml, payloads kept (run_payloads) or not. */
static void load(templates *ts, int run, tpl_attack attack)
{
  char p[512];
  memset(ts, 0, sizeof *ts);
  ts->files_root = root;
  ts->run_payloads = run;
  ts->attack = attack;
  path_of(p, sizeof p, "a/b/t.yaml");
  ck_assert_int_eq(tpl_load_file(ts, p), 0);
  ck_assert_uint_eq(ts->n + ts->nskips, 1);
}

/* The loaded template's first request's payloads. */
static const tpl_payloads *loaded(templates *ts)
{
  ck_assert_msg(ts->n == 1, "skipped: %s", ts->nskips ? ts->skips[0].reason : "");
  return &ts->t[0].reqs[0].payloads;
}

/* The template as written, with attack, is skipped for a reason that
 * holds want. */
static void expect_skip(tpl_attack attack, const char *want)
{
  templates ts;
  load(&ts, 1, attack);
  ck_assert_msg(ts.nskips == 1, "loaded; wanted: %s", want);
  ck_assert_msg(strstr(ts.skips[0].reason, want), "'%s' has no '%s'", ts.skips[0].reason, want);
  tpl_free(&ts);
}

/* A template of path and keys is skipped for want. */
static void skipped_for(const char *path, const char *keys, const char *want)
{
  write_template(path, keys);
  expect_skip(TPL_ATTACK_NONE, want);
}

/* Combination k of ps, its values joined by ",". */
static const char *combo(const tpl_payloads *ps, size_t k)
{
  static char out[256];
  out[0] = '\0';
  for (size_t i = 0; i < ps->n; i++) {
    strcat(out, i ? "," : "");
    strcat(out, tpl_payload_value(ps, i, k));
  }
  return out;
}

/* Every combination of ps, ";" between them. */
static const char *combos(const tpl_payloads *ps)
{
  static char out[1024];
  out[0] = '\0';
  for (size_t k = 0; k < ps->combos; k++) {
    strcat(out, k ? ";" : "");
    strcat(out, combo(ps, k));
  }
  return out;
}

static void setup(void)
{
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/test_payloads.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(root));
  char p[512];
  const char *dirs[] = {"helpers", "a", "a/b"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    path_of(p, sizeof p, dirs[i]);
    ck_assert_int_eq(mkdir(p, 0700), 0);
  }
  write_text("helpers/words.txt", "alpha\nbeta\n\ngamma\n");
}

/* Removes ROOT and everything under it (the test's own files). */
static void teardown(void)
{
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  ck_assert_int_eq(system(cmd), 0);
}

START_TEST(inline_values)
{
  templates ts;
  /* A list, items as written. */
  write_template("{{BaseURL}}/{{w}}", "    payloads:\n      w: [a, 'b c', 7]\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  const tpl_payloads *ps = loaded(&ts);
  ck_assert_uint_eq(ps->n, 1);
  ck_assert_str_eq(ps->p[0].name, "w");
  ck_assert_int_eq(ps->attack, TPL_BATTERINGRAM); /* nuclei's default */
  ck_assert_uint_eq(ps->combos, 3);
  ck_assert_str_eq(combos(ps), "a;b c;7");
  tpl_free(&ts);
  /* A text of several lines: one value each, the empty last one too. */
  write_template("{{BaseURL}}/{{w}}", "    payloads:\n      w: |\n        x\n        y\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  ps = loaded(&ts);
  ck_assert_uint_eq(ps->combos, 3);
  ck_assert_str_eq(combos(ps), "x;y;");
  tpl_free(&ts);
}
END_TEST

START_TEST(files)
{
  templates ts;
  /* Beside the template: CR LF and LF, empty lines left out, spaces kept. */
  write_text("a/b/local.txt", "one\r\n\r\n two \n\nthree");
  write_template("{{BaseURL}}/{{w}}", "    payloads:\n      w: local.txt\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  const tpl_payloads *ps = loaded(&ts);
  ck_assert_str_eq(combos(ps), "one; two ;three");
  tpl_free(&ts);
  /* helpers/ of a directory above it. */
  write_template("{{BaseURL}}/{{w}}", "    payloads:\n      w: helpers/words.txt\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  ps = loaded(&ts);
  ck_assert_str_eq(combos(ps), "alpha;beta;gamma");
  tpl_free(&ts);
  /* The nearest helpers/ first. */
  char p[512];
  path_of(p, sizeof p, "a/helpers");
  ck_assert_int_eq(mkdir(p, 0700), 0);
  write_text("a/helpers/words.txt", "near\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  ck_assert_str_eq(combos(loaded(&ts)), "near");
  tpl_free(&ts);
  /* Not above the root given: the template's own directory is the root. */
  write_text("a/b/x.txt", "x\n");
  write_template("{{BaseURL}}/{{w}}", "    payloads:\n      w: helpers/words.txt\n");
  memset(&ts, 0, sizeof ts);
  char dir[512];
  path_of(dir, sizeof dir, "a/b");
  ts.files_root = dir;
  ts.run_payloads = 1;
  path_of(p, sizeof p, "a/b/t.yaml");
  ck_assert_int_eq(tpl_load_file(&ts, p), 0);
  ck_assert_uint_eq(ts.nskips, 1);
  ck_assert_str_eq(ts.skips[0].reason,
                   "payloads: w: helpers/words.txt: no such file beside the template nor above it");
  tpl_free(&ts);
}
END_TEST

START_TEST(attacks)
{
  templates ts;
#define TWO "    attack: %s\n    payloads:\n      a: [1, 2]\n      b: [x, y, z]\n"
  char keys[256];
  /* clusterbomb: the product, the first payload changing fastest. */
  snprintf(keys, sizeof keys, TWO, "clusterbomb");
  write_template("{{BaseURL}}/{{a}}/{{b}}", keys);
  load(&ts, 1, TPL_ATTACK_NONE);
  const tpl_payloads *ps = loaded(&ts);
  ck_assert_int_eq(ps->attack, TPL_CLUSTERBOMB);
  ck_assert_uint_eq(ps->combos, 6);
  ck_assert_str_eq(combos(ps), "1,x;2,x;1,y;2,y;1,z;2,z");
  ck_assert_uint_eq(tpl_payload_find(ps, "b", 1), 1);
  ck_assert_uint_eq(tpl_payload_find(ps, "c", 1), 2);
  tpl_free(&ts);
  /* pitchfork: together, as far as the shortest. */
  snprintf(keys, sizeof keys, TWO, "PitchFork ");
  write_template("{{BaseURL}}/{{a}}/{{b}}", keys);
  load(&ts, 1, TPL_ATTACK_NONE);
  ps = loaded(&ts);
  ck_assert_int_eq(ps->attack, TPL_PITCHFORK);
  ck_assert_str_eq(combos(ps), "1,x;2,y");
  tpl_free(&ts);
  /* --attack-type over the request's own. */
  load(&ts, 1, TPL_CLUSTERBOMB);
  ck_assert_str_eq(combos(loaded(&ts)), "1,x;2,x;1,y;2,y;1,z;2,z");
  tpl_free(&ts);
  /* batteringram: one payload, each value. */
  write_template("{{BaseURL}}/{{a}}", "    attack: batteringram\n    payloads:\n      a: [p, q]\n");
  load(&ts, 1, TPL_PITCHFORK);
  ps = loaded(&ts);
  ck_assert_int_eq(ps->attack, TPL_PITCHFORK);
  ck_assert_str_eq(combos(ps), "p;q");
  tpl_free(&ts);
  /* Of several payloads, as nuclei refuses it; also by --attack-type. */
  skipped_for("{{BaseURL}}/{{a}}/{{b}}", "    payloads:\n      a: [1]\n      b: [2]\n",
              "payloads: batteringram of 2 payloads (it takes one)");
  snprintf(keys, sizeof keys, TWO, "pitchfork");
  write_template("{{BaseURL}}/{{a}}/{{b}}", keys);
  expect_skip(TPL_BATTERINGRAM, "payloads: batteringram of 2 payloads (it takes one)");
  skipped_for("{{BaseURL}}/{{a}}", "    attack: sniper\n    payloads:\n      a: [1]\n",
              "attack: sniper");
  ck_assert_int_eq(tpl_attack_parse("sniper", &(tpl_attack){0}), -1);
  ck_assert_str_eq(tpl_attack_name(TPL_CLUSTERBOMB), "clusterbomb");
#undef TWO
}
END_TEST

/* A file of n lines "LINE<i>" at ROOT/rel. */
static void numbered(const char *rel, size_t n)
{
  char *text = malloc(n * 12 + 1);
  size_t len = 0;
  ck_assert_ptr_nonnull(text);
  for (size_t i = 0; i < n; i++)
    len += (size_t)sprintf(text + len, "%zu\n", i);
  write_file(rel, text, len);
  free(text);
}

START_TEST(bound)
{
  templates ts;
  numbered("a/b/256.txt", 256);
  numbered("a/b/1000.txt", 1000);
  /* 256 x 256: the bound itself. */
  write_template("{{BaseURL}}/{{a}}/{{b}}",
                 "    attack: clusterbomb\n    payloads:\n      a: 256.txt\n      b: 256.txt\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  const tpl_payloads *ps = loaded(&ts);
  ck_assert_uint_eq(ps->combos, TPL_PAYLOAD_MAX);
  ck_assert_str_eq(combo(ps, 0), "0,0");
  ck_assert_str_eq(combo(ps, 257), "1,1");
  ck_assert_str_eq(combo(ps, TPL_PAYLOAD_MAX - 1), "255,255");
  tpl_free(&ts);
  /* 10^6 combinations: counted, never made. */
  skipped_for("{{BaseURL}}/{{a}}/{{b}}/{{c}}",
              "    attack: clusterbomb\n    payloads:\n      a: 1000.txt\n      b: 1000.txt\n"
              "      c: [x]\n",
              "payloads: clusterbomb of 1000000 combinations, over 65536");
  /* pitchfork of the same: as many as the shortest. */
  write_template("{{BaseURL}}/{{a}}/{{b}}",
                 "    attack: pitchfork\n    payloads:\n      a: 1000.txt\n      b: [x, y]\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  ck_assert_str_eq(combos(loaded(&ts)), "0,x;1,y");
  tpl_free(&ts);
}
END_TEST

START_TEST(bad_files)
{
#define KEYS "    payloads:\n      w: %s\n"
  char k[256];
#define SKIPPED(file, want)                                                                        \
  do {                                                                                             \
    snprintf(k, sizeof k, KEYS, file);                                                             \
    skipped_for("{{BaseURL}}/{{w}}", k, want);                                                     \
  } while (0)
  SKIPPED("missing.txt", "payloads: w: missing.txt: no such file beside the template");
  SKIPPED("helpers/missing.txt", "no such file beside the template nor above it");
  SKIPPED("../b/x.txt", "payloads: w: ../b/x.txt: an absolute path or one with .. (refused)");
  SKIPPED("/etc/hostname", "an absolute path or one with .. (refused)");
  /* Over the bounds. */
  char *big = malloc(TPL_PAYLOAD_FILE_MAX + 1);
  ck_assert_ptr_nonnull(big);
  memset(big, 'a', TPL_PAYLOAD_FILE_MAX + 1);
  for (size_t i = 99; i < TPL_PAYLOAD_FILE_MAX; i += 100)
    big[i] = '\n';
  write_file("a/b/big.txt", big, TPL_PAYLOAD_FILE_MAX + 1);
  SKIPPED("big.txt", "payloads: w: big.txt: larger than 4194304 bytes");
  write_file("a/b/fits.txt", big, TPL_PAYLOAD_FILE_MAX); /* 41943 lines: loads */
  snprintf(k, sizeof k, KEYS, "fits.txt");
  write_template("{{BaseURL}}/{{w}}", k);
  templates ts;
  load(&ts, 1, TPL_ATTACK_NONE);
  ck_assert_uint_eq(loaded(&ts)->combos, TPL_PAYLOAD_FILE_MAX / 100 + 1);
  tpl_free(&ts);
  memset(big, 'a', TPL_PAYLOAD_LINE_MAX + 1);
  write_file("a/b/long.txt", big, TPL_PAYLOAD_LINE_MAX + 1);
  SKIPPED("long.txt", "payloads: w: long.txt: a line longer than 65535 bytes");
  for (size_t i = 1; i < 2 * (TPL_PAYLOAD_LINES_MAX + 1); i += 2)
    big[i] = '\n';
  write_file("a/b/lines.txt", big, 2 * (TPL_PAYLOAD_LINES_MAX + 1));
  SKIPPED("lines.txt", "payloads: w: lines.txt: more than 262144 lines");
  free(big);
  write_file("a/b/nul.txt", "a\nb\0c\n", 6);
  SKIPPED("nul.txt", "payloads: w: nul.txt: not text (a NUL byte)");
  write_text("a/b/empty.txt", "\n\r\n\n");
  SKIPPED("empty.txt", "payloads: w: empty.txt: no values");
  /* Not regular files: a directory, and a FIFO (no writer: never read). */
  char p[512];
  path_of(p, sizeof p, "a/b/dir.txt");
  ck_assert_int_eq(mkdir(p, 0700), 0);
  SKIPPED("dir.txt", "payloads: w: dir.txt: not a regular file");
  path_of(p, sizeof p, "a/b/fifo.txt");
  ck_assert_int_eq(mkfifo(p, 0600), 0);
  SKIPPED("fifo.txt", "payloads: w: fifo.txt: not a regular file");
  /* A link out of the template's directory. */
  char target[512];
  path_of(target, sizeof target, "helpers/words.txt");
  path_of(p, sizeof p, "a/b/link.txt");
  ck_assert_int_eq(symlink(target, p), 0);
  SKIPPED("link.txt", "payloads: w: link.txt: a link out of its directory");
  SKIPPED("[]", "payloads: w: an empty list");
  SKIPPED("{low: [a]}", "payloads: w: levels of aggression (fuzzing)");
  SKIPPED("[[a]]", "payloads: w: not a list of strings");
  SKIPPED("[\"a\\0b\"]", "payloads: w: not a list of strings");
  SKIPPED("\"a\\nb\\0\"", "payloads: w: not text (a NUL byte)");
#undef SKIPPED
#undef KEYS
}
END_TEST

/* The bytes of all of a template's values are bounded, however they are
 * named: one file of 3 MiB for three payloads (it counts three times),
 * and a list that repeats a YAML alias of a 60 KiB text. */
START_TEST(template_total)
{
  size_t n = 3u << 20;
  char *big = malloc(n);
  ck_assert_ptr_nonnull(big);
  memset(big, 'a', n);
  for (size_t i = 99; i < n; i += 100)
    big[i] = '\n';
  write_file("a/b/w.txt", big, n);
  free(big);
  write_template("{{BaseURL}}/{{a}}/{{b}}",
                 "    attack: pitchfork\n    payloads:\n      a: w.txt\n      b: w.txt\n");
  templates ts; /* two of them fit in TPL_PAYLOAD_TEMPLATE_MAX */
  load(&ts, 1, TPL_ATTACK_NONE);
  ck_assert_uint_eq(loaded(&ts)->n, 2);
  tpl_free(&ts);
  skipped_for("{{BaseURL}}/{{a}}/{{b}}/{{c}}",
              "    attack: pitchfork\n    payloads:\n      a: w.txt\n      b: w.txt\n"
              "      c: w.txt\n",
              "payloads: c: more than 8388608 bytes of values in the template");
  /* 60 KiB, anchored, then 200 aliases of it: 12 MiB of values. */
  size_t len = 60 * 1024, at = 0;
  char *text = malloc(len + 4096);
  ck_assert_ptr_nonnull(text);
  at += (size_t)sprintf(text, "id: t\ninfo: {name: t, severity: info}\nhttp:\n"
                              "  - path: [\"{{BaseURL}}/{{w}}\"]\n    payloads:\n      w:\n"
                              "        - &x ");
  memset(text + at, 'v', len);
  at += len;
  text[at++] = '\n';
  for (int i = 0; i < 200; i++)
    at += (size_t)sprintf(text + at, "        - *x\n");
  at += (size_t)sprintf(text + at, "    matchers:\n      - type: status\n        status: [200]\n");
  write_file("a/b/t.yaml", text, at);
  free(text);
  expect_skip(TPL_ATTACK_NONE, "payloads: w: more than 8388608 bytes of values in the template");
}
END_TEST

START_TEST(names)
{
  templates ts;
  /* A payload is a name of the request's texts and of its DSL; one that
   * none names is dropped (nuclei's). */
  write_text("a/b/t.yaml", "id: t\ninfo: {name: t, severity: info}\nhttp:\n"
                           "  - path: ['{{BaseURL}}/{{to_upper(word)}}?q={{word}}']\n"
                           "    payloads:\n      word: [a, b]\n      unused: [c]\n"
                           "    matchers:\n      - type: dsl\n"
                           "        dsl: ['contains(body, word)']\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  const tpl_payloads *ps = loaded(&ts);
  ck_assert_uint_eq(ps->n, 1);
  ck_assert_str_eq(ps->p[0].name, "word");
  size_t i;
  ck_assert_int_eq(tpl_name(&ts.t[0], NULL, 0, "word", 4, &i), TS_PAYLOAD);
  ck_assert_uint_eq(i, 0);
  ck_assert_int_eq(tpl_name(&ts.t[0], NULL, 0, "unused", 6, &i), TS_NONE);
  /* Its values are the template's own: no other template's request is
   * the same. */
  ck_assert_uint_eq(tpl_text_uses(&ts.t[0], NULL, 0, "/{{word}}"), TPL_USES_TEMPLATE);
  ck_assert_uint_eq(tpl_text_uses(&ts.t[0], NULL, 0, "/{{Host}}"), 0);
  tpl_free(&ts);
  /* Another request's payload is not one. */
  write_text("a/b/t.yaml", "id: t\ninfo: {name: t, severity: info}\nhttp:\n"
                           "  - path: ['{{BaseURL}}/{{word}}']\n"
                           "    payloads:\n      word: [a]\n"
                           "    matchers:\n      - type: status\n        status: [200]\n"
                           "  - path: ['{{BaseURL}}/x/{{word}}']\n"
                           "    matchers:\n      - type: status\n        status: [200]\n");
  expect_skip(TPL_ATTACK_NONE, "variable: word (a payload of another request)");
  /* A variable does not see payloads (nuclei's). */
  write_text("a/b/t.yaml", "id: t\ninfo: {name: t, severity: info}\n"
                           "variables:\n  v: '{{word}}'\nhttp:\n"
                           "  - path: ['{{BaseURL}}/{{v}}/{{word}}']\n"
                           "    payloads:\n      word: [a]\n"
                           "    matchers:\n      - type: status\n        status: [200]\n");
  expect_skip(TPL_ATTACK_NONE, "variables: v uses the payload word");
  /* A value's {{...}} expressions are compiled; a payload's name in a
   * value is none, and a name nobody gives no reason to skip (nuclei
   * leaves them unresolved and does not send those combinations). */
  write_template("{{BaseURL}}/{{w}}",
                 "    payloads:\n      w: ['{{md5(Host)}}', '{{w}}', '{{nobody}}']\n");
  load(&ts, 1, TPL_ATTACK_NONE);
  ck_assert_uint_eq(loaded(&ts)->combos, 3);
  ck_assert_uint_eq(ts.t[0].nexprs, 2);
  ck_assert_str_eq(ts.t[0].exprs[0].src, "md5(Host)");
  ck_assert_str_eq(ts.t[0].exprs[1].src, "nobody");
  tpl_free(&ts);
  /* Distinct expressions: a bound, whatever the values. */
  char *many = malloc(1100 * 16);
  size_t len = 0;
  ck_assert_ptr_nonnull(many);
  for (int n = 0; n < 1100; n++)
    len += (size_t)sprintf(many + len, "{{md5(%d)}}\n", n);
  write_file("a/b/many.txt", many, len);
  free(many);
  skipped_for("{{BaseURL}}/{{w}}", "    payloads:\n      w: many.txt\n",
              "expression: more than 1024 in the template");
}
END_TEST

START_TEST(waits)
{
  /* Until the combinations are sent: skipped, with what it would make. */
  templates ts;
  write_template(
      "{{BaseURL}}/{{a}}/{{b}}",
      "    attack: clusterbomb\n    payloads:\n      a: [1, 2]\n      b: helpers/words.txt\n");
  load(&ts, 0, TPL_ATTACK_NONE);
  ck_assert_uint_eq(ts.nskips, 1);
  ck_assert_str_eq(ts.skips[0].reason, "payloads: not run yet");
  ck_assert_str_eq(ts.skips[0].payloads, "request 1: clusterbomb of a, b: 6 combinations");
  tpl_free(&ts);
  /* A template without payloads has no note. */
  write_template("{{BaseURL}}/x", "");
  load(&ts, 0, TPL_ATTACK_NONE);
  ck_assert_uint_eq(ts.n, 1);
  line l = {0};
  tpl_payloads_note(&ts.t[0], &l);
  ck_assert_uint_eq(l.len, 0);
  free(l.p);
  tpl_free(&ts);
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("payloads");
  TCase *t = tcase_create("payloads");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, inline_values);
  tcase_add_test(t, files);
  tcase_add_test(t, attacks);
  tcase_add_test(t, bound);
  tcase_add_test(t, bad_files);
  tcase_add_test(t, template_total);
  tcase_add_test(t, names);
  tcase_add_test(t, waits);
  suite_add_tcase(s, t);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
