/* The DSL's string functions. Arguments are taken as the DSL's toString
 * makes them (numbers without exponent, nil as ""). Where the DSL works on
 * runes (reverse, sort, uniq, split into chunks, replace with an empty old
 * string) these work on UTF-8 sequences, an invalid byte being one rune;
 * case (to_lower, to_upper, to_title) and trimming sets are ASCII. */
#include "expr-int.h"

#include <stdlib.h>
#include <string.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }

/* The bytes of the UTF-8 sequence at s (1 for a byte that starts none). */
static size_t rune_len(const char *p, size_t n)
{
  const unsigned char *s = (const unsigned char *)p;
  size_t want = s[0] < 0xC2 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : s[0] < 0xF5 ? 4 : 1;
  if (want > n)
    return 1;
  for (size_t i = 1; i < want; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 1;
  return want;
}

/* ---- Each argument as a string (most functions start so). */
static expr_code strs(expr_ctx *c, const expr_value *args, size_t n, expr_value *s)
{
  return expr__strs(c, args, n, s);
}

static expr_code fn_len(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  if (a[0].type == EXPR_LIST) {
    *out = expr_num((double)a[0].u.list.n);
    return EXPR_OK;
  }
  expr_code rc = expr__str(c, &a[0], &s);
  if (rc == EXPR_OK)
    *out = expr_num((double)s.u.str.len);
  return rc;
}

static expr_code map_case(expr_ctx *c, const expr_value *a, int up, expr_value *out)
{
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  char *p = expr__alloc(c, s.u.str.len);
  if (!p)
    return c->err->code;
  for (size_t i = 0; i < s.u.str.len; i++) {
    unsigned char ch = (unsigned char)s.u.str.ptr[i];
    p[i] = (char)(up && is_lower(ch) ? ch - 32 : !up && is_upper(ch) ? ch + 32 : ch);
  }
  *out = expr_str(p, s.u.str.len);
  return EXPR_OK;
}

/* to_lower (mode 0), to_upper (1). */
static expr_code fn_case(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return map_case(c, a, expr__mode(c), out);
}

/* Upper case at each word's start, lower case after (cases.Title). */
static expr_code fn_title(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_code rc = map_case(c, a, 0, out);
  if (rc != EXPR_OK)
    return rc;
  char *p = (char *)out->u.str.ptr;
  int in_word = 0;
  for (size_t i = 0; i < out->u.str.len; i++) {
    unsigned char ch = (unsigned char)p[i];
    int letter = is_lower(ch) || (ch >= '0' && ch <= '9') || ch == '\'' || ch >= 0x80;
    if (letter && !in_word && is_lower(ch))
      p[i] = (char)(ch - 32);
    in_word = letter;
  }
  return EXPR_OK;
}

/* The runes of s as (offset, length) pairs in the arena. */
typedef struct rune {
  const char *p;
  size_t n;
} rune;

static rune *runes(expr_ctx *c, const expr_value *s, size_t *count)
{
  size_t k = 0;
  for (size_t i = 0; i < s->u.str.len; i += rune_len(s->u.str.ptr + i, s->u.str.len - i))
    k++;
  rune *r = k ? (rune *)(void *)expr__alloc(c, k * sizeof *r) : NULL;
  if (k && !r)
    return NULL;
  k = 0;
  for (size_t i = 0, l; i < s->u.str.len; i += l) {
    l = rune_len(s->u.str.ptr + i, s->u.str.len - i);
    r[k++] = (rune){s->u.str.ptr + i, l};
  }
  *count = k;
  return r;
}

static int rune_cmp(const void *x, const void *y)
{
  const rune *a = x, *b = y;
  size_t n = a->n < b->n ? a->n : b->n;
  int r = memcmp(a->p, b->p, n);
  return r ? r : (a->n > b->n) - (a->n < b->n);
}

static int value_cmp(const void *x, const void *y)
{
  const expr_value *a = x, *b = y;
  rune ra = {S(*a)}, rb = {S(*b)};
  return rune_cmp(&ra, &rb);
}

/* The arguments as a list of strings. */
static expr_code as_list(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value *items = expr__alloc_list(c, n);
  if (!items)
    return c->err->code;
  expr_code rc = strs(c, a, n, items);
  out->type = EXPR_LIST;
  out->u.list.items = items;
  out->u.list.n = n;
  return rc;
}

/* The runes r[0 .. k-1] reordered or some left out in place: how many
 * remain. */
typedef size_t (*rune_edit)(rune *r, size_t k);

static size_t reversed(rune *r, size_t k)
{
  for (size_t i = 0; i < k / 2; i++) {
    rune t = r[i];
    r[i] = r[k - 1 - i];
    r[k - 1 - i] = t;
  }
  return k;
}

static size_t sorted(rune *r, size_t k)
{
  if (k)
    qsort(r, k, sizeof *r, rune_cmp);
  return k;
}

/* Each rune's first. Quadratic over the distinct ones, which are at most
 * 256 one-byte runes in practice. */
static size_t first_ones(rune *r, size_t k)
{
  size_t kept = 0;
  for (size_t i = 0; i < k; i++) {
    size_t j = 0;
    while (j < kept && rune_cmp(&r[j], &r[i]) != 0)
      j++;
    if (j == kept)
      r[kept++] = r[i];
  }
  return kept;
}

/* a as text, its runes edited, as a new string. */
static expr_code runes_edited(expr_ctx *c, const expr_value *a, rune_edit edit, expr_value *out)
{
  expr_value s;
  size_t k = 0;
  expr_code rc = expr__str(c, a, &s);
  rune *r = rc == EXPR_OK ? runes(c, &s, &k) : NULL;
  if (rc != EXPR_OK || (!r && s.u.str.len))
    return c->err->code;
  k = edit(r, k);
  sbuf b;
  expr__sb_init(&b, c);
  for (size_t i = 0; i < k; i++)
    expr__sb_add(&b, r[i].p, r[i].n);
  return expr__sb_done(&b, out);
}

static expr_code fn_reverse(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return runes_edited(c, a, reversed, out);
}

static expr_code fn_sort(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  if (n > 1) {
    expr_code rc = as_list(c, a, n, out);
    if (rc == EXPR_OK)
      qsort((void *)out->u.list.items, n, sizeof(expr_value), value_cmp);
    return rc;
  }
  return runes_edited(c, a, sorted, out);
}

/* Unique runes of one argument, or unique arguments (quadratic, as
 * first_ones). */
static expr_code fn_uniq(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  if (n > 1) {
    expr_code rc = as_list(c, a, n, out);
    expr_value *items = (expr_value *)out->u.list.items;
    size_t k = 0;
    for (size_t i = 0; rc == EXPR_OK && i < n; i++) {
      size_t j = 0;
      while (j < k && !expr__equal(&items[j], &items[i]))
        j++;
      if (j == k)
        items[k++] = items[i];
    }
    out->u.list.n = k;
    return rc;
  }
  return runes_edited(c, a, first_ones, out);
}

static expr_code fn_repeat(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  long long count;
  sbuf b;
  expr_code rc = expr__strs_sb(c, a, 1, &s, &b);
  if (rc != EXPR_OK)
    return rc;
  if (!expr__atoi(&a[1], &count) || count < 0)
    return expr__fail(c, EXPR_E_VALUE, "repeat: bad count");
  if (s.u.str.len && (unsigned long long)count > c->max_len / s.u.str.len)
    return expr__fail(c, EXPR_E_LIMIT, "repeat: the value would pass %zu bytes", c->max_len);
  for (long long i = 0; i < count && s.u.str.len && b.rc == EXPR_OK; i++)
    expr__sb_add(&b, S(s));
  return expr__sb_done(&b, out);
}

static expr_code fn_replace(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[3];
  sbuf b;
  expr_code rc = expr__strs_sb(c, a, n, s, &b);
  if (rc != EXPR_OK)
    return rc;
  const char *p = s[0].u.str.ptr, *end = p + s[0].u.str.len;
  if (s[1].u.str.len == 0) { /* Go: the new string before each rune and at the end */
    for (size_t l; p < end && b.rc == EXPR_OK; p += l) {
      l = rune_len(p, (size_t)(end - p));
      expr__sb_add(&b, S(s[2]));
      expr__sb_add(&b, p, l);
    }
    expr__sb_add(&b, S(s[2]));
    return expr__sb_done(&b, out);
  }
  for (const char *q; (q = expr__memmem(p, (size_t)(end - p), S(s[1]))) && b.rc == EXPR_OK;
       p = q + s[1].u.str.len) {
    expr__sb_add(&b, p, (size_t)(q - p));
    expr__sb_add(&b, S(s[2]));
  }
  expr__sb_add(&b, p, (size_t)(end - p));
  return expr__sb_done(&b, out);
}

static int in_set(const expr_value *set, char ch)
{
  return set->u.str.len && memchr(set->u.str.ptr, ch, set->u.str.len) != NULL;
}

enum { LEFT = 1, RIGHT = 2 };

/* trim, trim_left, trim_right (cutset), trim_space: the mode says which
 * ends. */
static expr_code fn_trim(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  int left = expr__mode(c) & LEFT, right = expr__mode(c) & RIGHT;
  expr_value s[2];
  expr_code rc = strs(c, a, n, s);
  if (rc != EXPR_OK)
    return rc;
  const char *p = s[0].u.str.ptr;
  size_t len = s[0].u.str.len;
  while (left && len && (n == 1 ? is_space((unsigned char)*p) : in_set(&s[1], *p)))
    p++, len--;
  while (right && len && (n == 1 ? is_space((unsigned char)p[len - 1]) : in_set(&s[1], p[len - 1])))
    len--;
  *out = expr_str(p, len);
  return EXPR_OK;
}

static int has_prefix(const expr_value *s, const expr_value *p)
{
  return p->u.str.len <= s->u.str.len &&
         (p->u.str.len == 0 || memcmp(s->u.str.ptr, p->u.str.ptr, p->u.str.len) == 0);
}

static int has_suffix(const expr_value *s, const expr_value *p)
{
  return p->u.str.len <= s->u.str.len &&
         (p->u.str.len == 0 ||
          memcmp(s->u.str.ptr + s->u.str.len - p->u.str.len, p->u.str.ptr, p->u.str.len) == 0);
}

static expr_code fn_trim_prefix(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[2];
  expr_code rc = strs(c, a, n, s);
  if (rc == EXPR_OK)
    *out = has_prefix(&s[0], &s[1])
               ? expr_str(s[0].u.str.ptr + s[1].u.str.len, s[0].u.str.len - s[1].u.str.len)
               : s[0];
  return rc;
}

static expr_code fn_trim_suffix(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[2];
  expr_code rc = strs(c, a, n, s);
  if (rc == EXPR_OK)
    *out =
        has_suffix(&s[0], &s[1]) ? expr_str(s[0].u.str.ptr, s[0].u.str.len - s[1].u.str.len) : s[0];
  return rc;
}

/* ---- Tests of the first argument against each of the others. The mode
 * of the functions that are such tests: the test, then ANY (true when one
 * passes, else when all do) and LINES (each line of the first argument,
 * split at \n, is tested). */
enum test { T_CONTAINS, T_PREFIX, T_SUFFIX, T_EQUALS };
enum { ANY = 4, LINES = 8 };

static int test_one(enum test t, const expr_value *s, const expr_value *x)
{
  switch (t) {
  case T_CONTAINS: return expr__memmem(S(*s), S(*x)) != NULL;
  case T_PREFIX: return has_prefix(s, x);
  case T_SUFFIX: return has_suffix(s, x);
  case T_EQUALS: return expr__equal(s, x);
  }
  return 0;
}

/* any: whether one of args[1..n) passes, else whether all do; lines: each
 * line of args[0] (split at \n) is tested. */
static expr_code test_args(expr_ctx *c, const expr_value *a, size_t n, enum test t, int any,
                           int lines, expr_value *out)
{
  expr_value s, x;
  expr_code rc = expr__str(c, &a[0], &s);
  if (rc != EXPR_OK)
    return rc;
  const char *p = s.u.str.ptr, *end = p + s.u.str.len;
  int result = !any;
  for (;;) {
    const char *nl = lines ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    expr_value line = lines ? expr_str(p, (size_t)((nl ? nl : end) - p)) : s;
    for (size_t i = 1; i < n; i++) {
      if ((rc = expr__str(c, &a[i], &x)) != EXPR_OK)
        return rc;
      if (test_one(t, &line, &x) == any) {
        result = any;
        break;
      }
    }
    if (result == any || !nl)
      break;
    p = nl + 1;
  }
  *out = expr_bool(result);
  return EXPR_OK;
}

static expr_code fn_test(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  int m = expr__mode(c);
  return test_args(c, a, n, (enum test)(m & 3), !!(m & ANY), !!(m & LINES), out);
}

static expr_code fn_equals_any(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value *s = expr__alloc_list(c, n);
  if (!s)
    return c->err->code;
  expr_code rc = strs(c, a, n, s);
  return rc == EXPR_OK ? test_args(c, s, n, T_EQUALS, 1, 0, out) : rc;
}

static expr_code fn_concat(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  sbuf b;
  expr__sb_init(&b, c);
  for (size_t i = 0; i < n; i++) {
    expr_value s;
    if ((b.rc = b.rc ? b.rc : expr__str(c, &a[i], &s)) == EXPR_OK)
      expr__sb_add(&b, S(s));
  }
  return expr__sb_done(&b, out);
}

static expr_code fn_join(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value sep;
  expr_code rc = expr__str(c, &a[0], &sep);
  if (rc != EXPR_OK)
    return rc;
  const expr_value *items = a + 1;
  size_t k = n - 1;
  if (n == 2) {
    if (a[1].type != EXPR_LIST)
      return expr__fail(c, EXPR_E_VALUE, "join: with two arguments, the second is a list");
    items = a[1].u.list.items;
    k = a[1].u.list.n;
  } else
    for (size_t i = 1; i < n; i++)
      if (a[i].type == EXPR_LIST)
        return expr__fail(c, EXPR_E_VALUE, "join: a list among several elements");
  sbuf b;
  expr__sb_init(&b, c);
  for (size_t i = 0; i < k && b.rc == EXPR_OK; i++) {
    expr_value s;
    if ((b.rc = expr__str(c, &items[i], &s)) != EXPR_OK)
      break;
    if (i)
      expr__sb_add(&b, S(sep));
    expr__sb_add(&b, S(s));
  }
  return expr__sb_done(&b, out);
}

/* s cut at sep, at most max pieces (max < 0: all). An empty sep cuts
 * between runes. */
static expr_code split_sep(expr_ctx *c, const expr_value *s, const expr_value *sep, long long max,
                           expr_value *out)
{
  size_t k = 0, cap = 0;
  expr_value *items = NULL;
  const char *p = s->u.str.ptr, *end = p + s->u.str.len;
  if (!sep->u.str.len && p == end)
    max = 0; /* Go: no pieces of an empty string */
  for (int last = 0; !last && max != 0;) {
    const char *q;
    size_t skip = sep->u.str.len;
    if ((long long)k + 1 == max || p == end)
      q = NULL;
    else if (skip)
      q = expr__memmem(p, (size_t)(end - p), S(*sep));
    else
      q = p + rune_len(p, (size_t)(end - p));
    if (!skip && q == end)
      q = NULL;
    last = !q;
    if (!q)
      q = end;
    if (k == cap) {
      expr_value *grown = expr__alloc_list(c, cap = cap ? cap * 2 : 8);
      if (!grown)
        return c->err->code;
      if (k)
        memcpy(grown, items, k * sizeof *items);
      items = grown;
    }
    items[k++] = expr_str(p, (size_t)(q - p));
    p = q + skip;
  }
  out->type = EXPR_LIST;
  out->u.list.items = items;
  out->u.list.n = k;
  return EXPR_OK;
}

/* s in pieces of size runes (size <= 0 or past the end: s whole). */
static expr_code split_chunks(expr_ctx *c, const expr_value *s, long long size, expr_value *out)
{
  size_t k = 0, nr = 0;
  rune *r = runes(c, s, &nr);
  if (!r && s->u.str.len)
    return c->err->code;
  if (size <= 0 || (unsigned long long)size >= s->u.str.len)
    size = nr ? (long long)nr : 1;
  size_t pieces = nr ? (nr + (size_t)size - 1) / (size_t)size : 1;
  expr_value *items = expr__alloc_list(c, pieces);
  if (!items)
    return c->err->code;
  if (!nr)
    items[k++] = *s;
  for (size_t i = 0; i < nr; i += (size_t)size) {
    size_t last = i + (size_t)size < nr ? i + (size_t)size : nr;
    items[k++] = expr_str(r[i].p, (size_t)(r[last - 1].p + r[last - 1].n - r[i].p));
  }
  out->type = EXPR_LIST;
  out->u.list.items = items;
  out->u.list.n = k;
  return EXPR_OK;
}

static expr_code fn_split(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[3];
  long long count;
  expr_code rc = strs(c, a, n, s);
  if (rc != EXPR_OK)
    return rc;
  if (n == 2)
    return expr__atoi(&s[1], &count) ? split_chunks(c, &s[0], count, out)
                                     : split_sep(c, &s[0], &s[1], -1, out);
  if (!expr__atoi(&s[2], &count))
    return expr__fail(c, EXPR_E_VALUE, "split: bad count");
  return split_sep(c, &s[0], &s[1], count, out);
}

static expr_code fn_index(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  long long i;
  expr_value s, is;
  expr_code rc = expr__str(c, &a[1], &is);
  if (rc != EXPR_OK)
    return rc;
  if (!expr__atoi(&is, &i))
    return expr__fail(c, EXPR_E_VALUE, "index: bad index");
  if (a[0].type == EXPR_LIST) {
    if (i < 0 || (unsigned long long)i >= a[0].u.list.n)
      return expr__fail(c, EXPR_E_VALUE, "index out of range");
    return expr__str(c, &a[0].u.list.items[i], out);
  }
  if ((rc = expr__str(c, &a[0], &s)) != EXPR_OK)
    return rc;
  if (i < 0 || (unsigned long long)i >= s.u.str.len)
    return expr__fail(c, EXPR_E_VALUE, "index out of range");
  *out = expr_str(s.u.str.ptr + i, 1);
  return EXPR_OK;
}

static expr_code fn_substr(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[3];
  long long start, end;
  expr_code rc = strs(c, a, n, s);
  if (rc != EXPR_OK)
    return rc;
  size_t len = s[0].u.str.len;
  if (len == 0)
    return expr__fail(c, EXPR_E_VALUE, "substr: empty string");
  if (!expr__atoi(&s[1], &start) || start < 0 || (unsigned long long)start > len)
    return expr__fail(c, EXPR_E_VALUE, "substr: bad start position");
  end = (long long)len;
  if (n == 3 && (!expr__atoi(&s[2], &end) || end < start || (unsigned long long)end > len))
    return expr__fail(c, EXPR_E_VALUE, "substr: bad end position");
  *out = expr_str(s[0].u.str.ptr + start, (size_t)(end - start));
  return EXPR_OK;
}

/* Every byte of the second argument taken out of the first. */
static expr_code fn_remove_bad(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[2];
  sbuf b;
  expr_code rc = expr__strs_sb(c, a, n, s, &b);
  if (rc != EXPR_OK)
    return rc;
  for (size_t i = 0; i < s[0].u.str.len; i++)
    if (!in_set(&s[1], s[0].u.str.ptr[i]))
      expr__sb_addc(&b, s[0].u.str.ptr[i]);
  return expr__sb_done(&b, out);
}

static expr_code fn_count(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[2];
  size_t k = 0, nr = 0;
  expr_code rc = strs(c, a, n, s);
  if (rc != EXPR_OK)
    return rc;
  if (s[1].u.str.len == 0) { /* Go: the runes, plus one */
    for (size_t i = 0; i < s[0].u.str.len; i += rune_len(s[0].u.str.ptr + i, s[0].u.str.len - i))
      nr++;
    *out = expr_num((double)nr + 1);
    return EXPR_OK;
  }
  const char *p = s[0].u.str.ptr, *end = p + s[0].u.str.len, *q;
  for (; (q = expr__memmem(p, (size_t)(end - p), S(s[1]))) != NULL; p = q + s[1].u.str.len)
    k++;
  *out = expr_num((double)k);
  return EXPR_OK;
}

/* padding(s, pad, length, "prefix"|"suffix"). */
static expr_code fn_padding(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s[3];
  long long want;
  expr_code rc = strs(c, a, 2, s);
  if (rc != EXPR_OK)
    return rc;
  if (!expr__to_int(&a[2], &want) || want == 0)
    return expr__fail(c, EXPR_E_VALUE, "padding: bad length");
  if (s[1].u.str.len == 0)
    return expr__fail(c, EXPR_E_VALUE, "padding: empty padding");
  if (want < 0 || (unsigned long long)want <= s[0].u.str.len) {
    *out = s[0];
    return EXPR_OK;
  }
  int prefix = expr__is(&a[3], "prefix");
  if (!prefix && !expr__is(&a[3], "suffix"))
    return expr__fail(c, EXPR_E_VALUE, "padding: the mode is 'prefix' or 'suffix'");
  if ((unsigned long long)want > c->max_len)
    return expr__fail(c, EXPR_E_LIMIT, "padding: the value would pass %zu bytes", c->max_len);
  (void)n;
  size_t pad = (size_t)want - s[0].u.str.len;
  char *p = expr__alloc(c, (size_t)want);
  if (!p)
    return c->err->code;
  char *fill = prefix ? p : p + s[0].u.str.len;
  memcpy(prefix ? p + pad : p, S(s[0]));
  for (size_t i = 0; i < pad; i++)
    fill[i] = s[1].u.str.ptr[i % s[1].u.str.len];
  *out = expr_str(p, (size_t)want);
  return EXPR_OK;
}

/* print_debug(values...): true. The DSL logs its arguments; the engine
 * writes nothing. */
static expr_code fn_print_debug(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)c, (void)a, (void)n;
  *out = expr_bool(1);
  return EXPR_OK;
}

static expr_code fn_to_string(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return expr__str(c, a, out);
}

const expr_fn expr__fn_strings[] = {
    {"len", 1, 1, fn_len, 0},
    {"to_lower", 1, 1, fn_case, 0},
    {"to_upper", 1, 1, fn_case, 1},
    {"to_title", 1, 2, fn_title, 0},
    {"to_string", 1, 1, fn_to_string, 0},
    {"reverse", 1, 1, fn_reverse, 0},
    {"sort", 1, -1, fn_sort, 0},
    {"uniq", 1, -1, fn_uniq, 0},
    {"repeat", 2, 2, fn_repeat, 0},
    {"replace", 3, 3, fn_replace, 0},
    {"trim", 2, 2, fn_trim, LEFT | RIGHT},
    {"trim_left", 2, 2, fn_trim, LEFT},
    {"trim_right", 2, 2, fn_trim, RIGHT},
    {"trim_space", 1, 1, fn_trim, LEFT | RIGHT},
    {"trim_prefix", 2, 2, fn_trim_prefix, 0},
    {"trim_suffix", 2, 2, fn_trim_suffix, 0},
    {"contains", 2, 2, fn_test, T_CONTAINS | ANY},
    {"contains_all", 1, -1, fn_test, T_CONTAINS},
    {"contains_any", 1, -1, fn_test, T_CONTAINS | ANY},
    {"starts_with", 2, -1, fn_test, T_PREFIX | ANY},
    {"ends_with", 2, -1, fn_test, T_SUFFIX | ANY},
    {"line_starts_with", 2, -1, fn_test, T_PREFIX | ANY | LINES},
    {"line_ends_with", 2, -1, fn_test, T_SUFFIX | ANY | LINES},
    {"equals_any", 2, -1, fn_equals_any, 0},
    {"concat", 0, -1, fn_concat, 0},
    {"join", 2, -1, fn_join, 0},
    {"split", 2, 3, fn_split, 0},
    {"index", 2, 2, fn_index, 0},
    {"substr", 2, 3, fn_substr, 0},
    {"remove_bad_chars", 2, 2, fn_remove_bad, 0},
    {"count", 2, 2, fn_count, 0},
    {"padding", 4, 4, fn_padding, 0},
    {"print_debug", 1, -1, fn_print_debug, 0},
    {NULL, 0, 0, NULL, 0},
};
