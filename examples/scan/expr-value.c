/* The expression engine's values: constructors, the arena that holds what
 * evaluation makes (every block counted against its cap), the growing
 * string functions build into, errors, and the conversions of the DSL
 * (toString, toInt, toBool) and of govaluate (%v, ==). Numbers print as Go
 * prints a float64 with the fewest digits that read back the same. */
#include "expr-int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

expr_value expr_nil(void) { return (expr_value){.type = EXPR_NIL}; }
expr_value expr_bool(int b) { return (expr_value){.type = EXPR_BOOL, .u.b = !!b}; }
expr_value expr_num(double n) { return (expr_value){.type = EXPR_NUM, .u.num = n}; }
expr_value expr_str(const char *ptr, size_t len)
{
  return (expr_value){.type = EXPR_STR, .u.str = {len ? ptr : "", len}};
}
int expr_true(const expr_value *v) { return v->type == EXPR_BOOL && v->u.b; }

const char *expr_strcode(expr_code c)
{
  static const char *const names[] = {"ok",
                                      "syntax error",
                                      "unknown function",
                                      "wrong number of arguments",
                                      "out of memory",
                                      "unknown variable",
                                      "type error",
                                      "bad value",
                                      "regex error",
                                      "over a limit"};
  return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "unknown error";
}

void expr__error(expr_error *err, expr_code code, size_t col, const char *fmt, ...)
{
  if (!err)
    return;
  err->code = code;
  err->column = col;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

expr_code expr__fail(expr_ctx *c, expr_code code, const char *fmt, ...)
{
  if (c->err) {
    c->err->code = code;
    c->err->column = c->col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* ---- The arena: a list of malloc'd blocks, each after its header. */
typedef struct block {
  struct block *next;
  size_t size;
  max_align_t align[];
} block;

void expr_arena_init(expr_arena *a, size_t max_total)
{
  a->blocks = NULL;
  a->used = 0;
  a->max_total = max_total ? max_total : EXPR_MAX_TOTAL;
}

void expr_arena_free(expr_arena *a)
{
  for (block *b = a->blocks, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  a->blocks = NULL;
  a->used = 0;
}

/* Whether n more bytes fit under both caps; else the error. */
static expr_code room(expr_ctx *c, size_t have, size_t n)
{
  if (n > c->max_len - have)
    return expr__fail(c, EXPR_E_LIMIT, "a value would pass %zu bytes", c->max_len);
  if (n > c->a->max_total - c->a->used)
    return expr__fail(c, EXPR_E_LIMIT, "the values would pass %zu bytes", c->a->max_total);
  return EXPR_OK;
}

static void adopt(expr_ctx *c, block *b, size_t size)
{
  b->next = c->a->blocks;
  b->size = size;
  c->a->blocks = b;
  c->a->used += size;
}

char *expr__alloc(expr_ctx *c, size_t n)
{
  if (room(c, 0, n) != EXPR_OK)
    return NULL;
  block *b = malloc(sizeof *b + n + 1);
  if (!b) {
    expr__fail(c, EXPR_E_NOMEM, "out of memory");
    return NULL;
  }
  adopt(c, b, n);
  char *p = (char *)b->align;
  p[n] = '\0';
  return p;
}

expr_code expr__copy(expr_ctx *c, const char *p, size_t n, expr_value *out)
{
  char *q = expr__alloc(c, n);
  if (!q)
    return c->err->code;
  if (n)
    memcpy(q, p, n);
  *out = expr_str(q, n);
  return EXPR_OK;
}

expr_value *expr__alloc_list(expr_ctx *c, size_t n)
{
  if (n > c->max_len / sizeof(expr_value))
    return expr__fail(c, EXPR_E_LIMIT, "a list would pass %zu bytes", c->max_len), NULL;
  return (expr_value *)(void *)expr__alloc(c, n * sizeof(expr_value));
}

void expr__sb_init(sbuf *b, expr_ctx *c) { *b = (sbuf){.c = c}; }

void expr__sb_add(sbuf *b, const void *p, size_t n)
{
  if (b->rc != EXPR_OK || n == 0)
    return;
  if (n > b->cap - b->len) {
    if ((b->rc = room(b->c, b->len, n)) != EXPR_OK)
      return;
    size_t want = b->cap ? b->cap : 64;
    while (want - b->len < n)
      want = want > SIZE_MAX / 2 ? b->len + n : want * 2;
    if (want > b->c->max_len)
      want = b->c->max_len;
    block *nb = realloc(b->block, sizeof(block) + want + 1);
    if (!nb) {
      b->rc = expr__fail(b->c, EXPR_E_NOMEM, "out of memory");
      return;
    }
    b->block = (char *)nb;
    b->cap = want;
  }
  memcpy((char *)((block *)(void *)b->block)->align + b->len, p, n);
  b->len += n;
}

void expr__sb_addc(sbuf *b, char ch) { expr__sb_add(b, &ch, 1); }

void expr__sb_addf(sbuf *b, const char *fmt, ...)
{
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    expr__sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

char *expr__sb_ptr(sbuf *b) { return b->block ? (char *)((block *)(void *)b->block)->align : NULL; }

expr_code expr__sb_done(sbuf *b, expr_value *out)
{
  block *bl = (block *)(void *)b->block;
  if (b->rc != EXPR_OK) {
    free(bl);
    return b->rc;
  }
  if (!bl) {
    *out = expr_str("", 0);
    return EXPR_OK;
  }
  if ((b->rc = room(b->c, 0, b->len)) != EXPR_OK) {
    free(bl);
    return b->rc;
  }
  adopt(b->c, bl, b->len);
  char *p = (char *)bl->align;
  p[b->len] = '\0';
  *out = expr_str(p, b->len);
  return EXPR_OK;
}

/* ---- Numbers as Go prints them. */

/* The shortest decimal digits of |d| that read back as d, and the decimal
 * exponent of the first one. */
static int shortest(double d, char dig[20], int *exp10)
{
  char tmp[40];
  for (int prec = 0; prec < 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec, d);
    if (strtod(tmp, NULL) == d)
      break;
  }
  const char *s = tmp + (tmp[0] == '-');
  int n = 0;
  for (; *s && *s != 'e'; s++)
    if (*s != '.')
      dig[n++] = *s;
  *exp10 = atoi(s + 1);
  while (n > 1 && dig[n - 1] == '0')
    n--;
  dig[n] = '\0';
  return n;
}

static size_t fmt_fixed(char *out, const char *dig, int nd, int e)
{
  size_t k = 0;
  if (e < 0) {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = -1; i > e; i--)
      out[k++] = '0';
    memcpy(out + k, dig, (size_t)nd);
    return k + (size_t)nd;
  }
  for (int i = 0; i <= e || i < nd; i++) {
    if (i == e + 1)
      out[k++] = '.';
    out[k++] = i < nd ? dig[i] : '0';
  }
  return k;
}

size_t expr__fmt_num(double d, int gstyle, char buf[64])
{
  if (isnan(d))
    return (size_t)snprintf(buf, 64, "NaN");
  if (isinf(d))
    return (size_t)snprintf(buf, 64, d > 0 ? "+Inf" : "-Inf");
  char dig[20];
  int e, nd = shortest(d, dig, &e);
  size_t k = 0;
  if (signbit(d))
    buf[k++] = '-';
  if (d == 0)
    return k + (size_t)snprintf(buf + k, 64 - k, "0");
  if (!gstyle || (e >= -4 && e < 6))
    return k + fmt_fixed(buf + k, dig, nd, e);
  /* Go's %v ('g', shortest): the %e form past those exponents. */
  buf[k++] = dig[0];
  if (nd > 1) {
    buf[k++] = '.';
    memcpy(buf + k, dig + 1, (size_t)nd - 1);
    k += (size_t)nd - 1;
  }
  return k + (size_t)snprintf(buf + k, 64 - k, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

static expr_code list_str(expr_ctx *c, const expr_value *v, int gstyle, expr_value *out)
{
  sbuf b;
  expr__sb_init(&b, c);
  expr__sb_addc(&b, '[');
  for (size_t i = 0; i < v->u.list.n; i++) {
    expr_value s;
    expr_code rc =
        gstyle ? expr__str_v(c, &v->u.list.items[i], &s) : expr__str(c, &v->u.list.items[i], &s);
    if (rc != EXPR_OK) {
      b.rc = rc;
      break;
    }
    if (i)
      expr__sb_addc(&b, ' ');
    expr__sb_add(&b, s.u.str.ptr, s.u.str.len);
  }
  expr__sb_addc(&b, ']');
  return expr__sb_done(&b, out);
}

static expr_code scalar_str(expr_ctx *c, const expr_value *v, int gstyle, expr_value *out)
{
  char buf[64];
  size_t n;
  switch (v->type) {
  case EXPR_STR: *out = *v; return EXPR_OK;
  case EXPR_LIST: return list_str(c, v, gstyle, out);
  case EXPR_NIL: *out = gstyle ? expr_str("<nil>", 5) : expr_str("", 0); return EXPR_OK;
  case EXPR_BOOL: *out = v->u.b ? expr_str("true", 4) : expr_str("false", 5); return EXPR_OK;
  case EXPR_NUM: break;
  }
  n = expr__fmt_num(v->u.num, gstyle, buf);
  return expr__copy(c, buf, n, out);
}

expr_code expr__str(expr_ctx *c, const expr_value *v, expr_value *out)
{
  return scalar_str(c, v, 0, out);
}

expr_code expr__str_v(expr_ctx *c, const expr_value *v, expr_value *out)
{
  return scalar_str(c, v, 1, out);
}

expr_code expr__strs(expr_ctx *c, const expr_value *args, size_t n, expr_value *out)
{
  for (size_t i = 0; i < n; i++) {
    expr_code rc = expr__str(c, &args[i], &out[i]);
    if (rc != EXPR_OK)
      return rc;
  }
  return EXPR_OK;
}

expr_code expr__strs_sb(expr_ctx *c, const expr_value *args, size_t n, expr_value *out, sbuf *b)
{
  expr__sb_init(b, c);
  return expr__strs(c, args, n, out);
}

expr_code expr__int(expr_ctx *c, const expr_value *v, long long *out, const char *what)
{
  return expr__to_int(v, out) ? EXPR_OK : expr__fail(c, EXPR_E_VALUE, "%s", what);
}

static int is_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }

/* s[0..n) without ASCII white space at either end. */
static void trim_space(const char **s, size_t *n)
{
  while (*n && is_space(**s))
    (*s)++, (*n)--;
  while (*n && is_space((*s)[*n - 1]))
    (*n)--;
}

int expr__parse_double(const char *s, size_t n, double *out)
{
  char buf[400];
  if (n == 0 || n >= sizeof buf || is_space(s[0]))
    return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  *out = strtod(buf, &end);
  return end == buf + n;
}

/* An optionally signed decimal integer in s[0..n), then optionally a
 * point and zeros when frac. */
static int parse_int(const char *s, size_t n, int frac, long long *out)
{
  size_t i = 0;
  int neg = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (i == n)
    return 0;
  unsigned long long v = 0;
  size_t start = i;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (unsigned long long)INT64_MAX / 10)
      return 0;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (i == start || v > (unsigned long long)INT64_MAX)
    return 0;
  if (frac && i < n && s[i] == '.')
    for (i++; i < n && s[i] == '0'; i++)
      ;
  if (i != n)
    return 0;
  *out = neg ? -(long long)v : (long long)v;
  return 1;
}

int expr__to_int(const expr_value *v, long long *out)
{
  if (v->type == EXPR_NUM) {
    double d = trunc(v->u.num);
    if (!(d >= -9.2e18 && d <= 9.2e18))
      return 0;
    *out = (long long)d;
    return 1;
  }
  if (v->type != EXPR_STR)
    return 0;
  const char *s = v->u.str.ptr;
  size_t n = v->u.str.len;
  trim_space(&s, &n);
  return parse_int(s, n, 1, out);
}

int expr__atoi(const expr_value *v, long long *out)
{
  if (v->type == EXPR_NUM) {
    char buf[64];
    size_t n = expr__fmt_num(v->u.num, 0, buf);
    return parse_int(buf, n, 0, out);
  }
  if (v->type != EXPR_STR)
    return 0;
  return parse_int(v->u.str.ptr, v->u.str.len, 0, out);
}

int expr__is(const expr_value *v, const char *s)
{
  size_t n = strlen(s);
  return v->type == EXPR_STR && v->u.str.len == n && memcmp(v->u.str.ptr, s, n) == 0;
}

int expr__to_bool(const expr_value *v)
{
  switch (v->type) {
  case EXPR_BOOL: return v->u.b;
  case EXPR_NUM: return v->u.num == 1;
  case EXPR_STR: break;
  default: return 0;
  }
  const char *s = v->u.str.ptr;
  size_t n = v->u.str.len;
  trim_space(&s, &n);
  static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
  static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
  for (size_t i = 0; i < 6; i++) {
    if (strlen(yes[i]) == n && memcmp(yes[i], s, n) == 0)
      return 1;
    if (strlen(no[i]) == n && memcmp(no[i], s, n) == 0)
      return 0;
  }
  double d;
  return expr__parse_double(s, n, &d) && d == 1;
}

int expr__equal(const expr_value *a, const expr_value *b)
{
  if (a->type != b->type)
    return 0;
  switch (a->type) {
  case EXPR_NIL: return 1;
  case EXPR_BOOL: return a->u.b == b->u.b;
  case EXPR_NUM: return a->u.num == b->u.num;
  case EXPR_STR:
    return a->u.str.len == b->u.str.len &&
           (a->u.str.len == 0 || memcmp(a->u.str.ptr, b->u.str.ptr, a->u.str.len) == 0);
  case EXPR_LIST:
    if (a->u.list.n != b->u.list.n)
      return 0;
    for (size_t i = 0; i < a->u.list.n; i++)
      if (!expr__equal(&a->u.list.items[i], &b->u.list.items[i]))
        return 0;
    return 1;
  }
  return 0;
}

const char *expr__memmem(const char *h, size_t hn, const char *n, size_t nn)
{
  if (nn == 0)
    return h;
  if (nn > hn)
    return NULL;
  for (const char *p = h, *end = h + hn - nn + 1; p < end;) {
    const char *q = memchr(p, n[0], (size_t)(end - p));
    if (!q)
      return NULL;
    if (memcmp(q, n, nn) == 0)
      return q;
    p = q + 1;
  }
  return NULL;
}

expr_code expr_format(const expr_value *v, expr_arena *a, expr_value *out)
{
  expr_env env;
  expr_error err;
  expr_env_init(&env);
  expr_ctx c = {.env = &env, .a = a, .err = &err, .max_len = EXPR_MAX_LEN};
  return expr__str_v(&c, v, out);
}
