/* The DSL's number functions: to_number (an integer or a decimal, as the
 * DSL's validator reads them), to_bool, dec_to_hex, and hex_to_dec,
 * oct_to_dec, bin_to_dec (digits of that base, or with the 0x, 0o, 0b
 * prefix: then any base Go reads with such a prefix, _ separators too). */
#include "expr-int.h"

#include <stdlib.h>
#include <string.h>

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* govalidator's IsFloat (which its IsInt strings also pass): digits, then
 * optionally a point and digits, then optionally an exponent. */
static int is_float(const char *s, size_t n)
{
  size_t i = 0, d = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    i++;
  for (; i < n && is_digit(s[i]); i++)
    d++;
  if (i < n && s[i] == '.')
    for (i++; i < n && is_digit(s[i]); i++)
      d++;
  if (d && i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t e = 0;
    if (++i < n && (s[i] == '+' || s[i] == '-'))
      i++;
    for (; i < n && is_digit(s[i]); i++)
      e++;
    if (!e)
      return 0;
  }
  return d && i == n;
}

static expr_code fn_to_number(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  double d;
  if (!is_float(s.u.str.ptr, s.u.str.len) || !expr__parse_double(s.u.str.ptr, s.u.str.len, &d))
    return expr__fail(c, EXPR_E_VALUE, "to_number: not a number");
  *out = expr_num(d);
  return EXPR_OK;
}

static expr_code fn_to_bool(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)c, (void)n;
  *out = expr_bool(expr__to_bool(a));
  return EXPR_OK;
}

static expr_code fn_dec_to_hex(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  long long v;
  if (expr__int(c, a, &v, "dec_to_hex: not a number") != EXPR_OK)
    return c->err->code;
  char buf[24];
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  size_t k = sizeof buf;
  do
    buf[--k] = "0123456789abcdef"[u & 15];
  while (u >>= 4);
  if (v < 0)
    buf[--k] = '-';
  return expr__copy(c, buf + k, sizeof buf - k, out);
}

static int digit_of(char ch)
{
  return is_digit(ch)                               ? ch - '0'
         : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z' ? (ch | 0x20) - 'a' + 10
                                                    : 99;
}

/* Go's strconv.ParseInt(s, base, 64); base 0 reads a 0x, 0o, 0b or 0
 * prefix and allows _ between digits. */
static int parse_base(const char *s, size_t n, int base, long long *out)
{
  size_t i = 0;
  int neg = 0, under = base == 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (base == 0) {
    base = 10;
    if (n - i > 1 && s[i] == '0') {
      char p = (char)(s[i + 1] | 0x20);
      base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 8;
      i += p == 'x' || p == 'o' || p == 'b' ? 2 : 1;
    }
  }
  unsigned long long v = 0;
  size_t digits = 0;
  for (; i < n; i++) {
    if (under && s[i] == '_')
      continue;
    int d = digit_of(s[i]);
    if (d >= base || v > (unsigned long long)INT64_MAX / (unsigned)base)
      return 0;
    v = v * (unsigned)base + (unsigned)d;
    digits++;
  }
  if (!digits || v > (unsigned long long)INT64_MAX + (unsigned)neg)
    return 0;
  *out = neg ? (long long)(0ull - v) : (long long)v;
  return 1;
}

/* hex_to_dec, oct_to_dec, bin_to_dec: the mode is the base. */
static expr_code fn_to_dec(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  int base = expr__mode(c);
  const char *prefix = base == 16 ? "0x" : base == 8 ? "0o" : "0b";
  expr_value s;
  long long v;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  if (s.u.str.len >= 2 && memcmp(s.u.str.ptr, prefix, 2) == 0)
    base = 0;
  if (!parse_base(s.u.str.ptr, s.u.str.len, base, &v))
    return expr__fail(c, EXPR_E_VALUE, "not a number of base %d", base ? base : 10);
  *out = expr_num((double)v);
  return EXPR_OK;
}

const expr_fn expr__fn_numbers[] = {
    {"to_number", 1, 1, fn_to_number, 0},
    {"to_bool", 1, 1, fn_to_bool, 0},
    {"dec_to_hex", 1, 1, fn_dec_to_hex, 0},
    {"hex_to_dec", 1, 1, fn_to_dec, 16},
    {"oct_to_dec", 1, 1, fn_to_dec, 8},
    {"bin_to_dec", 1, 1, fn_to_dec, 2},
    {NULL, 0, 0, NULL, 0},
};
