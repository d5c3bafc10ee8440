/* The DSL's JSON functions, as Go's encoding/json makes them:
 * json_minify(text) reads a JSON object and writes it again as Go
 * marshals a map: keys sorted (the last of equal keys kept), no white
 * space, numbers as float64 print (1.0 is 1, 1e21 and above in e form),
 * strings escaped with <, >, & and U+2028/9 as \u, invalid UTF-8 as
 * \ufffd; json_prettify(text) indents any JSON value by four spaces per
 * level, keeping each literal as written (json.Indent). Text that is not
 * JSON is an error; nesting is capped at EXPR_MAX_DEPTH. */
#include "expr-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval jval;
struct jval {
  jtype type;
  const char *raw; /* the literal as written (scalars), or the key's (members) */
  size_t raw_len;
  double num;
  jval *kids; /* array items, or object members: key (J_STR) then value */
  size_t n;
};

typedef struct jparse {
  expr_ctx *c;
  const char *p, *end;
  unsigned depth;
} jparse;

static void ws(jparse *j)
{
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static int parse_value(jparse *j, jval *v);

static int parse_string(jparse *j, jval *v)
{
  const char *s = j->p++;
  while (j->p < j->end && *j->p != '"') {
    if ((unsigned char)*j->p < 0x20)
      return 0;
    if (*j->p == '\\') { /* (strchr finds a NUL too: the text may hold one) */
      if (++j->p == j->end || !*j->p || !strchr("\"\\/bfnrtu", *j->p))
        return 0;
      if (*j->p == 'u')
        for (int i = 0; i < 4; i++)
          if (++j->p == j->end || !*j->p || !strchr("0123456789abcdefABCDEF", *j->p))
            return 0;
    }
    j->p++;
  }
  if (j->p == j->end)
    return 0;
  j->p++;
  *v = (jval){.type = J_STR, .raw = s, .raw_len = (size_t)(j->p - s)};
  return 1;
}

static int parse_number(jparse *j, jval *v)
{
  const char *s = j->p;
  size_t k = 0, n = (size_t)(j->end - s);
  if (k < n && s[k] == '-')
    k++;
  if (k < n && s[k] == '0')
    k++;
  else if (k < n && s[k] >= '1' && s[k] <= '9')
    while (k < n && s[k] >= '0' && s[k] <= '9')
      k++;
  else
    return 0;
  if (k < n && s[k] == '.') {
    size_t d = ++k;
    while (k < n && s[k] >= '0' && s[k] <= '9')
      k++;
    if (k == d)
      return 0;
  }
  if (k < n && (s[k] == 'e' || s[k] == 'E')) {
    if (++k < n && (s[k] == '+' || s[k] == '-'))
      k++;
    size_t d = k;
    while (k < n && s[k] >= '0' && s[k] <= '9')
      k++;
    if (k == d)
      return 0;
  }
  *v = (jval){.type = J_NUM, .raw = s, .raw_len = k};
  if (!expr__parse_double(s, k, &v->num))
    return 0;
  j->p += k;
  return 1;
}

/* Items (or key and value pairs) up to close, into v->kids. */
static int parse_list(jparse *j, jval *v, char close, int members)
{
  size_t cap = 0;
  j->p++;
  ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    return 1;
  }
  for (;;) {
    if (v->n + 2 > cap) {
      jval *grown = (jval *)(void *)expr__alloc(j->c, (cap = cap ? cap * 2 : 8) * sizeof(jval));
      if (!grown)
        return -1;
      if (v->n)
        memcpy(grown, v->kids, v->n * sizeof(jval));
      v->kids = grown;
    }
    if (members) {
      ws(j);
      if (j->p == j->end || *j->p != '"' || !parse_string(j, &v->kids[v->n++]))
        return 0;
      ws(j);
      if (j->p == j->end || *j->p++ != ':')
        return 0;
    }
    int r = parse_value(j, &v->kids[v->n++]);
    if (r <= 0)
      return r;
    ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == close) {
      j->p++;
      return 1;
    }
    return 0;
  }
}

static int literal(jparse *j, const char *word, jtype type, jval *v)
{
  size_t n = strlen(word);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
    return 0;
  *v = (jval){.type = type, .raw = j->p, .raw_len = n};
  j->p += n;
  return 1;
}

/* 1 parsed, 0 not JSON, -1 the error set (allocation, depth). */
static int parse_value(jparse *j, jval *v)
{
  ws(j);
  if (j->p == j->end)
    return 0;
  if (++j->depth > EXPR_MAX_DEPTH)
    return expr__fail(j->c, EXPR_E_LIMIT, "JSON nested too deep"), -1;
  int r;
  switch (*j->p) {
  case '{':
    *v = (jval){.type = J_OBJ};
    r = parse_list(j, v, '}', 1);
    break;
  case '[':
    *v = (jval){.type = J_ARR};
    r = parse_list(j, v, ']', 0);
    break;
  case '"': r = parse_string(j, v); break;
  case 't': r = literal(j, "true", J_BOOL, v); break;
  case 'f': r = literal(j, "false", J_BOOL, v); break;
  case 'n': r = literal(j, "null", J_NULL, v); break;
  default: r = parse_number(j, v);
  }
  j->depth--;
  return r;
}

/* The whole argument as one JSON value; *rest is where trailing white
 * space starts. */
static expr_code parse_doc(expr_ctx *c, const expr_value *a, jval *v, const char **rest)
{
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  jparse j = {c, s.u.str.ptr, s.u.str.ptr + s.u.str.len, 0};
  int r = parse_value(&j, v);
  if (r < 0)
    return c->err->code;
  *rest = j.p;
  ws(&j);
  if (r == 0 || j.p != j.end)
    return expr__fail(c, EXPR_E_VALUE, "not JSON");
  return EXPR_OK;
}

/* ---- json_prettify */
static void indent(sbuf *b, unsigned level)
{
  expr__sb_addc(b, '\n');
  for (unsigned i = 0; i < level && b->rc == EXPR_OK; i++)
    expr__sb_add(b, "    ", 4);
}

static void pretty(sbuf *b, const jval *v, unsigned level)
{
  if (v->type != J_ARR && v->type != J_OBJ) {
    expr__sb_add(b, v->raw, v->raw_len);
    return;
  }
  int obj = v->type == J_OBJ;
  expr__sb_addc(b, obj ? '{' : '[');
  for (size_t i = 0; i < v->n && b->rc == EXPR_OK; i += obj ? 2 : 1) {
    if (i)
      expr__sb_addc(b, ',');
    indent(b, level + 1);
    if (obj) {
      expr__sb_add(b, v->kids[i].raw, v->kids[i].raw_len);
      expr__sb_add(b, ": ", 2);
    }
    pretty(b, &v->kids[i + (size_t)obj], level + 1);
  }
  if (v->n)
    indent(b, level);
  expr__sb_addc(b, obj ? '}' : ']');
}

static expr_code fn_json_prettify(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  jval v;
  const char *rest;
  expr_value s;
  expr_code rc = parse_doc(c, a, &v, &rest);
  if (rc != EXPR_OK || (rc = expr__str(c, a, &s)) != EXPR_OK)
    return rc;
  sbuf b;
  expr__sb_init(&b, c);
  pretty(&b, &v, 0);
  expr__sb_add(&b, rest, (size_t)(s.u.str.ptr + s.u.str.len - rest)); /* trailing space kept */
  return expr__sb_done(&b, out);
}

/* ---- json_minify */
static int hexval(char ch) { return ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10; }

/* The code point of \uXXXX at s (after the u). */
static unsigned u4(const char *s)
{
  return (unsigned)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

static void put_utf8(sbuf *b, unsigned cp)
{
  char u[4];
  size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const unsigned char lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (size_t i = n - 1; i > 0; i--, cp >>= 6)
    u[i] = (char)(0x80 | (cp & 63));
  u[0] = (char)(lead[n] | cp);
  expr__sb_add(b, u, n);
}

/* A JSON string literal's bytes, decoded (lone surrogates as U+FFFD). */
static expr_code decode_str(expr_ctx *c, const jval *v, expr_value *out)
{
  sbuf b;
  expr__sb_init(&b, c);
  const char *p = v->raw + 1, *end = v->raw + v->raw_len - 1;
  while (p < end && b.rc == EXPR_OK) {
    if (*p != '\\') {
      expr__sb_addc(&b, *p++);
      continue;
    }
    char e = p[1];
    p += 2;
    if (e != 'u') {
      const char *from = "bfnrt", *to = "\b\f\n\r\t", *k = strchr(from, e);
      expr__sb_addc(&b, k ? to[k - from] : e);
      continue;
    }
    unsigned cp = u4(p);
    p += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
        u4(p + 2) >= 0xDC00 && u4(p + 2) < 0xE000) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (u4(p + 2) - 0xDC00);
      p += 6;
    } else if (cp >= 0xD800 && cp < 0xE000)
      cp = 0xFFFD;
    put_utf8(&b, cp);
  }
  return expr__sb_done(&b, out);
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
  size_t want = s[0] < 0x80   ? 1
                : s[0] < 0xC2 ? 0
                : s[0] < 0xE0 ? 2
                : s[0] < 0xF0 ? 3
                : s[0] < 0xF5 ? 4
                              : 0;
  if (!want || want > n)
    return 0;
  for (size_t i = 1; i < want; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  if ((want == 3 && s[0] == 0xE0 && s[1] < 0xA0) || (want == 3 && s[0] == 0xED && s[1] >= 0xA0) ||
      (want == 4 && s[0] == 0xF0 && s[1] < 0x90) || (want == 4 && s[0] == 0xF4 && s[1] >= 0x90))
    return 0;
  return want;
}

/* Go's encoding of a string, HTML-safe. */
static void put_str(sbuf *b, const char *p, size_t n)
{
  expr__sb_addc(b, '"');
  for (size_t i = 0, l; i < n && b->rc == EXPR_OK; i += l) {
    unsigned char ch = (unsigned char)p[i];
    l = utf8_len((const unsigned char *)p + i, n - i);
    const char *esc = ch == '"'    ? "\\\""
                      : ch == '\\' ? "\\\\"
                      : ch == '\n' ? "\\n"
                      : ch == '\r' ? "\\r"
                      : ch == '\t' ? "\\t"
                      : ch == '\b' ? "\\b"
                      : ch == '\f' ? "\\f"
                                   : NULL;
    if (esc)
      expr__sb_add(b, esc, 2);
    else if (!l) {
      expr__sb_add(b, "\\ufffd", 6);
      l = 1;
    } else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&')
      expr__sb_addf(b, "\\u%04x", ch);
    else if (l == 3 && ch == 0xE2 && (unsigned char)p[i + 1] == 0x80 &&
             ((unsigned char)p[i + 2] == 0xA8 || (unsigned char)p[i + 2] == 0xA9))
      expr__sb_addf(b, "\\u%04x", 0x2000 + ((unsigned char)p[i + 2] - 0x80));
    else
      expr__sb_add(b, p + i, l);
  }
  expr__sb_addc(b, '"');
}

/* Go's encoding of a float64: shortest, e form below 1e-6 and from 1e21,
 * its exponent without a leading zero. */
static void put_num(sbuf *b, double d)
{
  char buf[64];
  double a = fabs(d);
  if (a != 0 && (a < 1e-6 || a >= 1e21)) {
    size_t n = expr__fmt_num(d, 1, buf); /* d.ddde+XX */
    char *e = strchr(buf, 'e');
    if (e && e[2] == '0' && e[3]) {
      memmove(e + 2, e + 3, (size_t)(buf + n - (e + 3)) + 1);
      n--;
    }
    expr__sb_add(b, buf, n);
    return;
  }
  expr__sb_add(b, buf, expr__fmt_num(d, 0, buf));
}

typedef struct member {
  expr_value key;
  const jval *val;
  size_t at; /* its place in the text */
} member;

static int key_cmp(const member *a, const member *b)
{
  size_t n = a->key.u.str.len < b->key.u.str.len ? a->key.u.str.len : b->key.u.str.len;
  int r = n ? memcmp(a->key.u.str.ptr, b->key.u.str.ptr, n) : 0;
  return r ? r : (a->key.u.str.len > b->key.u.str.len) - (a->key.u.str.len < b->key.u.str.len);
}

/* By key, then by place: equal keys stay in their order. */
static int member_cmp(const void *x, const void *y)
{
  const member *a = x, *b = y;
  int r = key_cmp(a, b);
  return r ? r : (a->at > b->at) - (a->at < b->at);
}

static void minify(sbuf *b, expr_ctx *c, const jval *v);

static void minify_obj(sbuf *b, expr_ctx *c, const jval *v)
{
  size_t k = v->n / 2;
  member *m = k ? (member *)(void *)expr__alloc(c, k * sizeof *m) : NULL;
  if (k && !m) {
    b->rc = c->err->code;
    return;
  }
  for (size_t i = 0; i < k; i++) {
    m[i].val = &v->kids[2 * i + 1];
    m[i].at = i;
    if ((b->rc = decode_str(c, &v->kids[2 * i], &m[i].key)) != EXPR_OK)
      return;
  }
  if (k)
    qsort(m, k, sizeof *m, member_cmp);
  expr__sb_addc(b, '{');
  for (size_t i = 0, first = 1; i < k; i++) {
    if (i + 1 < k && key_cmp(&m[i], &m[i + 1]) == 0)
      continue; /* the last of equal keys wins */
    if (!first)
      expr__sb_addc(b, ',');
    first = 0;
    put_str(b, m[i].key.u.str.ptr, m[i].key.u.str.len);
    expr__sb_addc(b, ':');
    minify(b, c, m[i].val);
  }
  expr__sb_addc(b, '}');
}

static void minify(sbuf *b, expr_ctx *c, const jval *v)
{
  expr_value s;
  switch (v->type) {
  case J_NULL:
  case J_BOOL: expr__sb_add(b, v->raw, v->raw_len); break;
  case J_NUM: put_num(b, v->num); break;
  case J_STR:
    if ((b->rc = b->rc ? b->rc : decode_str(c, v, &s)) == EXPR_OK)
      put_str(b, s.u.str.ptr, s.u.str.len);
    break;
  case J_ARR:
    expr__sb_addc(b, '[');
    for (size_t i = 0; i < v->n && b->rc == EXPR_OK; i++) {
      if (i)
        expr__sb_addc(b, ',');
      minify(b, c, &v->kids[i]);
    }
    expr__sb_addc(b, ']');
    break;
  case J_OBJ: minify_obj(b, c, v); break;
  }
}

expr_code expr__json_minify(expr_ctx *c, const expr_value *a, expr_value *out)
{
  jval v;
  const char *rest;
  expr_code rc = parse_doc(c, a, &v, &rest);
  if (rc != EXPR_OK)
    return rc;
  if (v.type != J_OBJ)
    return expr__fail(c, EXPR_E_VALUE, "json_minify: not a JSON object");
  sbuf b;
  expr__sb_init(&b, c);
  minify(&b, c, &v);
  return expr__sb_done(&b, out);
}

static expr_code fn_json_minify(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return expr__json_minify(c, a, out);
}

const expr_fn expr__fn_json[] = {
    {"json_minify", 1, 1, fn_json_minify, 0},
    {"json_prettify", 1, 1, fn_json_prettify, 0},
    {NULL, 0, 0, NULL, 0},
};
