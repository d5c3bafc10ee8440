/* The DSL's regexes: regex(pattern, s), regex_all and regex_any over
 * several inputs, replace_regex(s, pattern, replacement), and the =~ and !~
 * operators. Go's RE2 syntax is, for what templates write, a subset of
 * PCRE's; PCRE2 compiles it over bytes (no UTF mode) with $ at the very end
 * only, as in Go. Matching runs under PCRE2's match, depth and heap limits,
 * so that a pattern that backtracks without end over a hostile body stops
 * with EXPR_E_REGEX instead of running on. Literal patterns are compiled
 * once, with the expression (and JIT-compiled on their first match). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "expr-int.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

/* Valgrind cannot follow the code PCRE2's JIT writes (it takes the JIT's
 * reads for reads of uninitialised memory): under it, patterns are
 * interpreted. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define MATCH_LIMIT 10000000u /* PCRE2's units of backtracking work */
#define DEPTH_LIMIT 100000u
#define HEAP_LIMIT  16384u /* KiB */

void *expr__re_compile(const char *p, size_t n, char *msg, size_t cap, size_t *at)
{
  int err;
  PCRE2_SIZE off = 0;
  pcre2_code *re =
      pcre2_compile((PCRE2_SPTR)(n ? p : ""), n, PCRE2_DOLLAR_ENDONLY, &err, &off, NULL);
  if (!re) {
    PCRE2_UCHAR what[120];
    pcre2_get_error_message(err, what, sizeof what);
    snprintf(msg, cap, "%s", (const char *)what);
    *at = off;
    return NULL;
  }
  return re; /* JIT-compiled on its first match (jit_once) */
}

void expr__re_free(void *re) { pcre2_code_free(re); }

expr_code expr__re_get(expr_ctx *c, const expr_value *v, void *pre, void **re, int *owned)
{
  *owned = 0;
  if (pre) {
    *re = pre;
    return EXPR_OK;
  }
  expr_value s;
  expr_code rc = expr__str(c, v, &s);
  if (rc != EXPR_OK)
    return rc;
  char msg[120];
  size_t at;
  if (!(*re = expr__re_compile(S(s), msg, sizeof msg, &at)))
    return expr__fail(c, EXPR_E_REGEX, "bad regex: %s at offset %zu", msg, at);
  *owned = 1;
  return EXPR_OK;
}

/* JIT-compiles re before its first match, not with its expression: of
 * the thousands a template set has, those that never run cost loading
 * nothing more than their compile (under Valgrind: interpreted). */
static void jit_once(pcre2_code *re)
{
  size_t size = 0;
  if (!RUNNING_ON_VALGRIND && pcre2_pattern_info(re, PCRE2_INFO_JITSIZE, &size) == 0 && !size)
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
}

/* One match of re in s from start: 1 with ov[0..1] set, 0 none, -1 error. */
static int match_at(expr_ctx *c, pcre2_code *re, const char *s, size_t n, size_t start,
                    pcre2_match_data *md)
{
  pcre2_match_context *mc = pcre2_match_context_create(NULL);
  if (!mc)
    return expr__fail(c, EXPR_E_NOMEM, "out of memory"), -1;
  pcre2_set_match_limit(mc, MATCH_LIMIT);
  pcre2_set_depth_limit(mc, DEPTH_LIMIT);
  pcre2_set_heap_limit(mc, HEAP_LIMIT);
  jit_once(re);
  int r = pcre2_match(re, (PCRE2_SPTR)(n ? s : ""), n, start, 0, md, mc);
  pcre2_match_context_free(mc);
  if (r >= 0)
    return 1;
  if (r == PCRE2_ERROR_NOMATCH)
    return 0;
  PCRE2_UCHAR what[120];
  pcre2_get_error_message(r, what, sizeof what);
  expr__fail(c, EXPR_E_REGEX, "regex: %s", (const char *)what);
  return -1;
}

int expr__re_match(expr_ctx *c, void *re, const char *s, size_t n)
{
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  if (!md)
    return expr__fail(c, EXPR_E_NOMEM, "out of memory"), -1;
  int r = match_at(c, re, s, n, 0, md);
  pcre2_match_data_free(md);
  return r;
}

/* regex_all (mode 0) and regex_any (mode 1): pattern first, then inputs;
 * regex is regex_any with one input. */
static expr_code fn_regex(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  void *re;
  int owned, any = expr__mode(c), result = !any;
  expr_code rc = expr__re_get(c, &a[0], c->call->kids[0]->re, &re, &owned);
  for (size_t i = 1; rc == EXPR_OK && i < n && result != any; i++) {
    expr_value s;
    if ((rc = expr__str(c, &a[i], &s)) != EXPR_OK)
      break;
    int m = expr__re_match(c, re, S(s));
    if (m < 0)
      rc = c->err->code;
    else if (m == any)
      result = any;
  }
  if (owned)
    expr__re_free(re);
  if (rc == EXPR_OK)
    *out = expr_bool(result);
  return rc;
}

static int name_byte(char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_';
}

/* Go's Expand: $name or ${name} (a number or a group's name), $$ for $. */
static void expand(sbuf *b, pcre2_code *re, const char *s, const PCRE2_SIZE *ov, int groups,
                   const expr_value *t)
{
  const char *p = t->u.str.ptr, *end = p + t->u.str.len;
  while (p < end && b->rc == EXPR_OK) {
    const char *d = memchr(p, '$', (size_t)(end - p));
    expr__sb_add(b, p, (size_t)((d ? d : end) - p));
    if (!d)
      return;
    p = d + 1;
    if (p < end && *p == '$') {
      expr__sb_addc(b, '$');
      p++;
      continue;
    }
    int brace = p < end && *p == '{';
    const char *name = p + brace, *q = name;
    while (q < end && name_byte(*q))
      q++;
    if (q == name || (brace && (q == end || *q != '}'))) {
      expr__sb_addc(b, '$'); /* not a reference: the $ as it is */
      continue;
    }
    p = q + brace;
    char nm[64];
    size_t nl = (size_t)(q - name) < sizeof nm - 1 ? (size_t)(q - name) : sizeof nm - 1;
    memcpy(nm, name, nl);
    nm[nl] = '\0';
    int g = -1;
    if (strspn(nm, "0123456789") == nl)
      g = nl < 6 ? atoi(nm) : -1;
    else
      g = pcre2_substring_number_from_name(re, (PCRE2_SPTR)nm);
    if (g >= 0 && g < groups && ov[2 * g] != PCRE2_UNSET)
      expr__sb_add(b, s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
  }
}

static expr_code fn_replace_regex(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[3];
  void *re;
  int owned;
  expr_code rc = expr__strs(c, a, n, s);
  if (rc == EXPR_OK)
    rc = expr__re_get(c, &a[1], c->call->kids[1]->re, &re, &owned);
  if (rc != EXPR_OK)
    return rc;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  sbuf b;
  expr__sb_init(&b, c);
  if (!md)
    b.rc = expr__fail(c, EXPR_E_NOMEM, "out of memory");
  const char *src = s[0].u.str.ptr;
  size_t len = s[0].u.str.len, pos = 0, last = 0;
  while (b.rc == EXPR_OK && pos <= len) {
    int m = match_at(c, re, src, len, pos, md);
    if (m <= 0) {
      b.rc = m < 0 ? c->err->code : EXPR_OK;
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    expr__sb_add(&b, src + last, ov[0] - last);
    if (ov[1] > last || ov[0] == 0) /* not an empty match right after one */
      expand(&b, re, src, ov, (int)pcre2_get_ovector_count(md), &s[2]);
    last = ov[1];
    pos = pos + 1 > ov[1] ? pos + 1 : ov[1];
  }
  expr__sb_add(&b, src + last, len - last);
  pcre2_match_data_free(md);
  if (owned)
    expr__re_free(re);
  return expr__sb_done(&b, out);
}

const expr_fn expr__fn_regex[] = {
    {"regex", 2, 2, fn_regex, 1},
    {"regex_all", 2, -1, fn_regex, 0},
    {"regex_any", 2, -1, fn_regex, 1},
    {"replace_regex", 3, 3, fn_replace_regex, 0},
    {NULL, 0, 0, NULL, 0},
};
