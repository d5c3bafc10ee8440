/* The DSL's encodings: base64 (standard alphabet, padded; base64_py in
 * Python's lines of 76 with a final newline, as favicon hashes want),
 * URL (url_encode keeps letters, digits and -_.!~*'(), or only letters and
 * digits when its second argument is true), hex (hex_encode's "x" format
 * writes \x61), HTML (the ASCII characters that have HTML5 entity names,
 * which html_escape writes by name: &lt; &sol; &colon;, and with true every
 * other byte as &#N;; html_unescape reads names of that set, a few common
 * others, and &#N; &#xH;) and xor. Non-ASCII characters are left as they
 * are by html_escape, where nuclei names those with names too. */
#include "expr-int.h"

#include <string.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(sbuf *b, const unsigned char *p, size_t n, size_t line)
{
  size_t col = 0;
  for (size_t i = 0; i < n && b->rc == EXPR_OK; i += 3) {
    unsigned v =
        (unsigned)p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], i + 1 < n ? b64[(v >> 6) & 63] : '=',
                 i + 2 < n ? b64[v & 63] : '='};
    for (int k = 0; k < 4; k++) {
      if (line && col == line) {
        expr__sb_addc(b, '\n');
        col = 0;
      }
      expr__sb_addc(b, q[k]);
      col++;
    }
  }
  if (line)
    expr__sb_addc(b, '\n');
}

static expr_code encode64(expr_ctx *c, const expr_value *a, size_t line, expr_value *out)
{
  expr_value s;
  sbuf b;
  expr_code rc = expr__strs_sb(c, a, 1, &s, &b);
  if (rc != EXPR_OK)
    return rc;
  b64_encode(&b, (const unsigned char *)s.u.str.ptr, s.u.str.len, line);
  return expr__sb_done(&b, out);
}

expr_code expr__base64(expr_ctx *c, const expr_value *a, expr_value *out)
{
  return encode64(c, a, 0, out);
}

/* base64 (mode 0) and base64_py (mode 76: lines of that many). */
static expr_code fn_base64(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return encode64(c, a, (size_t)expr__mode(c), out);
}

static int b64_value(unsigned char ch)
{
  const char *p = ch ? strchr(b64, ch) : NULL;
  return p ? (int)(p - b64) : -1;
}

/* Go's StdEncoding: padded quanta of four, CR and LF ignored. */
static expr_code fn_base64_decode(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  char *p = expr__alloc(c, s.u.str.len / 4 * 3 + 3);
  if (!p)
    return c->err->code;
  size_t k = 0;
  unsigned acc = 0;
  int have = 0, pad = 0, done = 0, v;
  for (size_t i = 0; i < s.u.str.len; i++) {
    unsigned char ch = (unsigned char)s.u.str.ptr[i];
    if (ch == '\r' || ch == '\n')
      continue;
    if (done || (ch == '=' ? have < 2 : pad || (v = b64_value(ch)) < 0))
      return expr__fail(c, EXPR_E_VALUE, "base64_decode: not base64 at byte %zu", i);
    if (ch == '=')
      pad++;
    else
      acc = acc << 6 | (unsigned)v;
    if (++have == 4) {
      acc <<= 6 * pad;
      char three[3] = {(char)(acc >> 16), (char)(acc >> 8), (char)acc};
      memcpy(p + k, three, 3);
      k += 3u - (unsigned)pad;
      done = pad > 0;
      acc = 0;
      have = pad = 0;
    }
  }
  if (have)
    return expr__fail(c, EXPR_E_VALUE, "base64_decode: not base64 (length)");
  *out = expr_str(p, k);
  return EXPR_OK;
}

/* What a coding writes to b for the text at p (n > 0 bytes), flag being
 * what its second argument says: the bytes it read, at least one. */
typedef size_t (*coding_step)(sbuf *b, const char *p, size_t n, int flag);

/* a as text, coded step by step, as a new string: the encoders and
 * decoders of texts. */
static expr_code recode(expr_ctx *c, const expr_value *a, int flag, coding_step step,
                        expr_value *out)
{
  expr_value s;
  sbuf b;
  expr_code rc = expr__strs_sb(c, a, 1, &s, &b);
  if (rc != EXPR_OK)
    return rc;
  for (size_t i = 0; i < s.u.str.len && b.rc == EXPR_OK;)
    i += step(&b, s.u.str.ptr + i, s.u.str.len - i, flag);
  return expr__sb_done(&b, out);
}

static int unreserved(unsigned char ch, int all)
{
  int alnum = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
  return alnum || (!all && ch && strchr("-_.!~*'()", ch));
}

static size_t url_byte(sbuf *b, const char *p, size_t n, int all)
{
  unsigned char ch = (unsigned char)p[0];
  (void)n;
  if (unreserved(ch, all))
    expr__sb_addc(b, (char)ch);
  else
    expr__sb_addf(b, "%%%02X", ch);
  return 1;
}

static expr_code fn_url_encode(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  return recode(c, a, n > 1 && expr_true(&a[1]), url_byte, out);
}

static int hex_digit(unsigned char ch)
{
  return ch >= '0' && ch <= '9'   ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                  : -1;
}

/* %XX as its byte; any other byte as it is. */
static size_t url_step(sbuf *b, const char *p, size_t n, int flag)
{
  int hi, lo;
  (void)flag;
  if (p[0] == '%' && n > 2 && (hi = hex_digit((unsigned char)p[1])) >= 0 &&
      (lo = hex_digit((unsigned char)p[2])) >= 0) {
    expr__sb_addc(b, (char)(hi << 4 | lo));
    return 3;
  }
  expr__sb_addc(b, p[0]);
  return 1;
}

static expr_code fn_url_decode(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return recode(c, a, 0, url_step, out);
}

static size_t hex_byte(sbuf *b, const char *p, size_t n, int esc)
{
  (void)n;
  expr__sb_addf(b, esc ? "\\x%02x" : "%02x", (unsigned char)p[0]);
  return 1;
}

static expr_code fn_hex_encode(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value f;
  expr_code rc = n > 1 ? expr__str(c, &a[1], &f) : EXPR_OK;
  if (rc != EXPR_OK)
    return rc;
  return recode(c, a, n > 1 && (expr__is(&f, "x") || expr__is(&f, "X")), hex_byte, out);
}

static expr_code fn_hex_decode(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  if (s.u.str.len % 2)
    return expr__fail(c, EXPR_E_VALUE, "hex_decode: odd length");
  char *p = expr__alloc(c, s.u.str.len / 2);
  if (!p)
    return c->err->code;
  const unsigned char *h = (const unsigned char *)s.u.str.ptr;
  for (size_t i = 0; i < s.u.str.len; i += 2) {
    int hi = hex_digit(h[i]), lo = hex_digit(h[i + 1]);
    if (hi < 0 || lo < 0)
      return expr__fail(c, EXPR_E_VALUE, "hex_decode: not hex at byte %zu", hi < 0 ? i : i + 1);
    p[i / 2] = (char)(hi << 4 | lo);
  }
  *out = expr_str(p, s.u.str.len / 2);
  return EXPR_OK;
}

/* ---- HTML entities. */
static const struct {
  const char *name;
  unsigned cp;
} entities[] = {
    /* the ASCII characters with names, the name html_escape writes first */
    {"excl", '!'},
    {"quot", '"'},
    {"num", '#'},
    {"dollar", '$'},
    {"percnt", '%'},
    {"amp", '&'},
    {"apos", '\''},
    {"lpar", '('},
    {"rpar", ')'},
    {"ast", '*'},
    {"plus", '+'},
    {"comma", ','},
    {"period", '.'},
    {"sol", '/'},
    {"colon", ':'},
    {"semi", ';'},
    {"lt", '<'},
    {"equals", '='},
    {"gt", '>'},
    {"quest", '?'},
    {"commat", '@'},
    {"lsqb", '['},
    {"bsol", '\\'},
    {"rsqb", ']'},
    {"Hat", '^'},
    {"lowbar", '_'},
    {"grave", '`'},
    {"lcub", '{'},
    {"verbar", '|'},
    {"rcub", '}'},
    /* other names html_unescape reads */
    {"LT", '<'},
    {"GT", '>'},
    {"AMP", '&'},
    {"QUOT", '"'},
    {"lbrack", '['},
    {"rbrack", ']'},
    {"lbrace", '{'},
    {"rbrace", '}'},
    {"vert", '|'},
    {"nbsp", 0xA0},
    {"copy", 0xA9},
    {"reg", 0xAE},
    {"trade", 0x2122},
    {"euro", 0x20AC},
    {"pound", 0xA3},
    {"yen", 0xA5},
    {"cent", 0xA2},
    {"sect", 0xA7},
    {"deg", 0xB0},
    {"laquo", 0xAB},
    {"raquo", 0xBB},
    {"middot", 0xB7},
    {"hellip", 0x2026},
    {"ndash", 0x2013},
    {"mdash", 0x2014},
    {"Tab", '\t'},
    {"NewLine", '\n'},
};
#define ESCAPED 30 /* the first ESCAPED entries are those html_escape writes */

static size_t html_byte(sbuf *b, const char *p, size_t n, int all)
{
  unsigned char ch = (unsigned char)p[0];
  size_t e = 0;
  (void)n;
  while (e < ESCAPED && entities[e].cp != ch)
    e++;
  if (e < ESCAPED)
    expr__sb_addf(b, "&%s;", entities[e].name);
  else if (all)
    expr__sb_addf(b, "&#%u;", ch);
  else
    expr__sb_addc(b, (char)ch);
  return 1;
}

static expr_code fn_html_escape(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  return recode(c, a, n > 1 && expr__to_bool(&a[1]), html_byte, out);
}

static void utf8(sbuf *b, unsigned cp)
{
  char u[4];
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0)
    cp = 0xFFFD;
  if (cp < 0x80)
    expr__sb_addc(b, (char)cp);
  else if (cp < 0x800) {
    u[0] = (char)(0xC0 | cp >> 6);
    u[1] = (char)(0x80 | (cp & 63));
    expr__sb_add(b, u, 2);
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | cp >> 12);
    u[1] = (char)(0x80 | ((cp >> 6) & 63));
    u[2] = (char)(0x80 | (cp & 63));
    expr__sb_add(b, u, 3);
  } else {
    u[0] = (char)(0xF0 | cp >> 18);
    u[1] = (char)(0x80 | ((cp >> 12) & 63));
    u[2] = (char)(0x80 | ((cp >> 6) & 63));
    u[3] = (char)(0x80 | (cp & 63));
    expr__sb_add(b, u, 4);
  }
}

/* The entity at p (after its '&'): bytes used (0: none) and its code point. */
static size_t entity(const char *p, size_t n, unsigned *cp)
{
  size_t i = 0;
  if (n && p[0] == '#') {
    int hex = n > 1 && (p[1] == 'x' || p[1] == 'X');
    unsigned long v = 0;
    size_t start = i = 1 + (size_t)hex;
    for (int d; i < n && (d = hex ? hex_digit((unsigned char)p[i])
                                  : (p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : -1)) >= 0;
         i++)
      v = v > 0x10FFFF ? v : v * (hex ? 16 : 10) + (unsigned)d;
    if (i == start)
      return 0;
    *cp = (unsigned)(v > 0x10FFFF ? 0xFFFD : v);
    return i < n && p[i] == ';' ? i + 1 : i;
  }
  for (size_t e = 0; e < sizeof entities / sizeof entities[0]; e++) {
    size_t l = strlen(entities[e].name);
    if (l < n && memcmp(p, entities[e].name, l) == 0 && p[l] == ';') {
      *cp = entities[e].cp;
      return l + 1;
    }
  }
  return 0;
}

/* An entity as UTF-8; any other byte as it is. */
static size_t html_step(sbuf *b, const char *p, size_t n, int flag)
{
  unsigned cp;
  size_t used = p[0] == '&' ? entity(p + 1, n - 1, &cp) : 0;
  (void)flag;
  if (!used) {
    expr__sb_addc(b, p[0]);
    return 1;
  }
  utf8(b, cp);
  return used + 1;
}

static expr_code fn_html_unescape(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return recode(c, a, 0, html_step, out);
}

/* Every argument (strings, none empty) xor'ed, the shorter ones repeated. */
static expr_code fn_xor(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  size_t max = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i].type != EXPR_STR || a[i].u.str.len == 0)
      return expr__fail(c, EXPR_E_VALUE, "xor: argument %zu is not a string or is empty", i + 1);
    if (a[i].u.str.len > max)
      max = a[i].u.str.len;
  }
  char *p = expr__alloc(c, max);
  if (!p)
    return c->err->code;
  memset(p, 0, max);
  for (size_t k = 0; k < max; k++)
    for (size_t i = 0; i < n; i++)
      p[k] ^= a[i].u.str.ptr[k % a[i].u.str.len];
  *out = expr_str(p, max);
  return EXPR_OK;
}

const expr_fn expr__fn_codings[] = {
    {"base64", 1, 1, fn_base64, 0},
    {"base64_py", 1, 1, fn_base64, 76},
    {"base64_decode", 1, 1, fn_base64_decode, 0},
    {"url_encode", 1, 2, fn_url_encode, 0},
    {"url_decode", 1, 1, fn_url_decode, 0},
    {"hex_encode", 1, 2, fn_hex_encode, 0},
    {"hex_decode", 1, 1, fn_hex_decode, 0},
    {"html_escape", 1, 2, fn_html_escape, 0},
    {"html_unescape", 1, 1, fn_html_unescape, 0},
    {"xor", 2, -1, fn_xor, 0},
    {NULL, 0, 0, NULL, 0},
};
