/* The DSL's compare_versions(version, constraint...): whether the version
 * meets every constraint (each argument may hold several, split at
 * commas), with the rules of HashiCorp's go-version that the DSL uses:
 * versions are v?N(.N)* with an optional -pre-release (or one glued on,
 * 1.0rc1) and +metadata (ignored); missing segments count as zeros;
 * a pre-release is before its release; constraints are = != > < >= <= ~>
 * and a bare version (=); a version with a pre-release meets > < >= <=
 * only against a constraint with a pre-release on the same segments. */
#include "expr-int.h"

#include <string.h>

#define MAX_SEGMENTS 32

typedef struct version {
  long long seg[MAX_SEGMENTS];
  int nseg, given; /* nseg: at least 3, zero-padded; given: written */
  const char *pre;
  size_t pre_len;
} version;

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static int is_ident(char ch)
{
  return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '-' ||
         ch == '~';
}

/* Dot-separated identifiers at s[*i..n): their end. */
static size_t idents(const char *s, size_t n, size_t i)
{
  for (;;) {
    size_t start = i;
    while (i < n && is_ident(s[i]))
      i++;
    if (i == start)
      return start ? start - 1 : start; /* a trailing dot is not ours */
    if (i == n || s[i] != '.' || i + 1 == n || !is_ident(s[i + 1]))
      return i;
    i++;
  }
}

static int parse_version(const char *s, size_t n, version *v)
{
  size_t i = 0;
  memset(v, 0, sizeof *v);
  if (i < n && s[i] == 'v')
    i++;
  for (;;) {
    if (i == n || !is_digit(s[i]) || v->nseg == MAX_SEGMENTS)
      return 0;
    long long x = 0;
    for (; i < n && is_digit(s[i]); i++) {
      if (x > (INT64_MAX - 9) / 10)
        return 0;
      x = x * 10 + (s[i] - '0');
    }
    v->seg[v->nseg++] = x;
    if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1]))
      i++;
    else
      break;
  }
  v->given = v->nseg;
  while (v->nseg < 3)
    v->seg[v->nseg++] = 0;
  /* -pre (starting with a digit or not), or pre glued on (a letter first) */
  int dash = i < n && s[i] == '-';
  if (i + (size_t)dash < n && is_ident(s[i + (size_t)dash]) &&
      (dash || !is_digit(s[i]))) {
    size_t start = i + (size_t)dash, end = idents(s, n, start);
    if (end > start) {
      v->pre = s + start;
      v->pre_len = end - start;
      i = end;
    }
  }
  if (i < n && s[i] == '+') {
    size_t end = idents(s, n, i + 1);
    if (end == i + 1)
      return 0;
    i = end;
  }
  return i == n;
}

static int cmp_part(const char *a, size_t an, const char *b, size_t bn)
{
  if (an == bn && memcmp(a, b, an) == 0)
    return 0;
  int anum = an > 0, bnum = bn > 0;
  long long ai = 0, bi = 0;
  for (size_t i = 0; i < an; i++)
    anum = anum && is_digit(a[i]) && ((ai = ai * 10 + (a[i] - '0')), ai < 1000000000000000000LL);
  for (size_t i = 0; i < bn; i++)
    bnum = bnum && is_digit(b[i]) && ((bi = bi * 10 + (b[i] - '0')), bi < 1000000000000000000LL);
  if (an == 0)
    return bnum ? -1 : 1;
  if (bn == 0)
    return anum ? 1 : -1;
  if (anum != bnum)
    return anum ? -1 : 1;
  if (!anum) {
    size_t m = an < bn ? an : bn;
    int r = memcmp(a, b, m);
    return (r ? r : (an > bn) - (an < bn)) > 0 ? 1 : -1;
  }
  return ai > bi ? 1 : -1;
}

static int cmp_pre(const version *a, const version *b)
{
  const char *p = a->pre, *q = b->pre, *pe = p + a->pre_len, *qe = q + b->pre_len;
  if (a->pre_len == b->pre_len && memcmp(p, q, a->pre_len) == 0)
    return 0;
  while (p < pe || q < qe) {
    const char *pd = p < pe ? memchr(p, '.', (size_t)(pe - p)) : NULL,
               *qd = q < qe ? memchr(q, '.', (size_t)(qe - q)) : NULL;
    const char *pend = p < pe ? (pd ? pd : pe) : p, *qend = q < qe ? (qd ? qd : qe) : q;
    int r = cmp_part(p, (size_t)(pend - p), q, (size_t)(qend - q));
    if (r)
      return r;
    p = pd ? pd + 1 : pe;
    q = qd ? qd + 1 : qe;
  }
  return 0;
}

static int same_segments(const version *a, const version *b)
{
  if (a->nseg != b->nseg)
    return 0;
  for (int i = 0; i < a->nseg; i++)
    if (a->seg[i] != b->seg[i])
      return 0;
  return 1;
}

static int cmp_version(const version *a, const version *b)
{
  if (same_segments(a, b)) {
    if (!a->pre_len && !b->pre_len)
      return 0;
    if (!a->pre_len)
      return 1;
    if (!b->pre_len)
      return -1;
    return cmp_pre(a, b);
  }
  int n = a->nseg > b->nseg ? a->nseg : b->nseg;
  for (int i = 0; i < n; i++) {
    long long x = i < a->nseg ? a->seg[i] : 0, y = i < b->nseg ? b->seg[i] : 0;
    if (x != y)
      return x < y ? -1 : 1;
  }
  return 0;
}

static int pre_check(const version *v, const version *c)
{
  if (c->pre_len && v->pre_len)
    return same_segments(c, v);
  return !(v->pre_len && !c->pre_len);
}

static int pessimistic(const version *v, const version *c)
{
  if (!pre_check(v, c) || (c->pre_len && !v->pre_len) || cmp_version(v, c) < 0)
    return 0;
  if (c->nseg > v->nseg)
    return 0;
  for (int i = 0; i < c->given - 1; i++)
    if (v->seg[i] != c->seg[i])
      return 0;
  return c->seg[c->nseg - 1] <= v->seg[c->nseg - 1];
}

/* One constraint, s[0..n) trimmed: 1 met, 0 not, -1 malformed. */
static int check(const version *v, const char *s, size_t n)
{
  static const char *const ops[] = {"~>", ">=", "<=", "!=", "=", ">", "<"};
  while (n && (*s == ' ' || *s == '\t'))
    s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  size_t o = 0;
  while (o < 7 && !(n >= strlen(ops[o]) && memcmp(s, ops[o], strlen(ops[o])) == 0))
    o++;
  size_t skip = o < 7 ? strlen(ops[o]) : 0;
  s += skip, n -= skip;
  while (n && (*s == ' ' || *s == '\t'))
    s++, n--;
  version c;
  if (!parse_version(s, n, &c))
    return -1;
  int r = cmp_version(v, &c);
  switch (o) {
  case 0: return pessimistic(v, &c);
  case 1: return pre_check(v, &c) && r >= 0;
  case 2: return pre_check(v, &c) && r <= 0;
  case 3: return r != 0;
  case 5: return pre_check(v, &c) && r > 0;
  case 6: return pre_check(v, &c) && r < 0;
  default: return r == 0;
  }
}

static expr_code fn_compare_versions(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value s;
  version v;
  expr_code rc = expr__str(c, &a[0], &s);
  if (rc != EXPR_OK)
    return rc;
  if (!parse_version(s.u.str.ptr, s.u.str.len, &v))
    return expr__fail(c, EXPR_E_VALUE, "compare_versions: '%.*s' is not a version",
                      (int)(s.u.str.len < 40 ? s.u.str.len : 40), s.u.str.ptr);
  int met = 1;
  for (size_t i = 1; i < n; i++) {
    if ((rc = expr__str(c, &a[i], &s)) != EXPR_OK)
      return rc;
    const char *p = s.u.str.ptr, *end = p + s.u.str.len;
    for (;;) {
      const char *comma = memchr(p, ',', (size_t)(end - p));
      int r = check(&v, p, (size_t)((comma ? comma : end) - p));
      if (r < 0)
        return expr__fail(c, EXPR_E_VALUE, "compare_versions: malformed constraint");
      met &= r;
      if (!comma)
        break;
      p = comma + 1;
    }
  }
  *out = expr_bool(met);
  return EXPR_OK;
}

const expr_fn expr__fn_versions[] = {
    {"compare_versions", 2, -1, fn_compare_versions, 0},
    {NULL, 0, 0, NULL, 0},
};
