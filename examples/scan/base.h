/* scan's base: what the layers above share and nothing of any of them,
 * text built in memory, the clock, and regexes (PCRE2).
 *
 * The layers of scan, each a header that includes only those below it,
 * each file named by its layer (one file, one idea):
 *   base.h   base-text.c    text built in memory, the clock
 *            base-re.c      regexes: PCRE syntax, compiled and run by PCRE2
 *            base-child.c   work bounded in a child process
 *   tpl.h    tpl-*.c        templates: nuclei's YAML to a model (libyaml)
 *            (expr.h        expressions, a layer of their own below tpl.h)
 *   plan.h   plan-*.c       request planning: the targets, the clusters of
 *                           requests, their variables, the jobs
 *   eval.h   eval-*.c       response evaluation: matchers, the streaming
 *                           engine, extractors, verdicts (no curl)
 *   out.h    out-*.c        output: the JSON lines, the reports
 *   loop.h   loop-*.c       the transfer loop: respchain and curl
 *   main.h   main*.c        the command line and main
 * Neither the templates (libyaml, PCRE2, libjq, libxml2) nor the
 * evaluation (respchain, PCRE2, Vectorscan, libjq, libxml2) links with
 * libcurl (examples/meson.build checks it).
 *
 * Builds alone, with or without Vectorscan:
 *   cd examples/scan && cc *.c $(pkg-config --cflags --libs respchain libcurl \
 *      libpcre2-8 yaml-0.1 libcrypto zlib libxml-2.0) -ljq -lm
 *   cd examples/scan && cc -DSCAN_HAVE_VECTORSCAN=1 *.c $(pkg-config --cflags --libs \
 *      respchain libcurl libpcre2-8 yaml-0.1 libcrypto zlib libxml-2.0 libhs) -ljq -lm */
#ifndef SCAN_BASE_H
#define SCAN_BASE_H

/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "respchain.h" /* rc_view */

#define DEFAULT_MAX_REDIRS 10L /* redirects followed: -L's default, a template's */
#define STATUS_MAX         999 /* status codes a matcher names are 100 to STATUS_MAX */

/* Where a match ends in a body: the count of body bytes up to and
 * including its last byte. NO_OFFSET: not in the body, or no match. */
#define NO_OFFSET SIZE_MAX

/* ---- Text built in memory (base-text.c) --------------------------------- */

/* An output line, a URL, a request header: built whole, then used. */
typedef struct line {
  char *p;
  size_t len, cap;
  int nomem; /* an append failed: the line is incomplete */
} line;

void put(line *l, const char *s, size_t n);
void puts_line(line *l, const char *s);
void printf_line(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes n bytes of p to fd, as many write(2) calls as it takes: 0, or
 * the errno of the one that failed. */
int write_all(int fd, const void *p, size_t n);

/* Seconds since t0, on CLOCK_MONOTONIC. */
double seconds_since(const struct timespec *t0);

/* ---- Regexes (base-re.c) ------------------------------------------------ */

/* A regex: PCRE syntax, compiled by PCRE2. */
typedef struct regex {
  const char *text;          /* as given, for the output */
  pcre2_code *code;          /* the regex (JIT-compiled on its first match) */
  struct regex_later *later; /* what its first use makes (base-re.c) */
  uint32_t groups;           /* its capture groups */
  uint32_t lookbehind;       /* the bytes it may look at before a match's start */
} regex;

/* Compiles text into re, as regex_re2 writes it. Returns 0, or -1 with
 * PCRE2's message and the offset where it stopped in msg. */
int regex_compile(regex *re, const char *text, char *msg, size_t cap);
void regex_free(regex *re);
/* Text as PCRE2 and Vectorscan are to read it, so that what RE2 (nuclei's,
 * httpx's Go regexp) also takes means what it means there: a $ outside
 * (?m) at the text's end only (\z; PCRE's also before a final newline),
 * \s without the vertical tab, \v the vertical tab alone. RE2's ^ under
 * (?m) also matches after a newline that ends the text: regex_compile
 * tells PCRE2 so by an option; *line_start (NULL: not wanted) says whether
 * text has such a ^, which Vectorscan reads as PCRE does. malloc'ed (the
 * caller frees it); NULL when out of memory. */
char *regex_re2(const char *text, int *line_start);
/* Frees what all regexes share, after the last regex_free. */
void regex_done(void);
/* Whether re matches somewhere in text. */
int regex_hit(const regex *re, rc_view text);
/* Where the first match of re to end, ends, as the count of bytes of text
 * up to it; NO_OFFSET when re does not match. */
size_t regex_first_end(const regex *re, rc_view text);
/* The first match of re in text from byte start on, with pcre2_match's
 * flags (PCRE2_PARTIAL_HARD, PCRE2_NOTBOL), for an extractor of group g:
 * returns what pcre2_match does (PCRE2_ERROR_PARTIAL too;
 * PCRE2_ERROR_NOMEMORY also when no match data could be made); on a
 * match, bounds holds its start and end, then those of group g
 * (PCRE2_UNSET when re has no such group, or it took no part); on a
 * partial match, its start and the text's end. */
int regex_next(const regex *re, rc_view text, size_t start, uint32_t flags, long g,
               size_t bounds[4]);

/* ---- Work in a child process (base-child.c) ----------------------------- */

#define CHILD_CPU_SECONDS 1                  /* CPU seconds a child may use */
#define CHILD_MEMORY      ((size_t)256 << 20) /* address space it may add */

/* Runs fn(ud, fd) in a forked child, bounded by CHILD_CPU_SECONDS and
 * CHILD_MEMORY, fn writing its answer to fd; reads what it wrote, up to
 * cap bytes (a child that writes more is ended there), into out. Returns
 * the bytes read, or -1 when no child could be made; *ok says whether the
 * child ended by itself with fn's 0. */
ssize_t child_run(int (*fn)(void *ud, int fd), void *ud, char *out, size_t cap, int *ok);

#endif
