/* The expression engine's tokens, read as govaluate reads them: numbers
 * (digits and dots, or 0x and hex digits), strings in ' or " where a
 * backslash takes the next byte as it is ("\n" is n), names (a letter, then
 * letters, digits, _ and .), [any name] in brackets, parentheses, commas,
 * and operators written as one run of symbol bytes: "a>=-1" is an unknown
 * operator ">=-", as in govaluate. A '-', '!' or '~' where no value ends
 * before it is a prefix. A quoted string that reads as a date is a number,
 * its Unix time, as govaluate makes it. */
#define _DEFAULT_SOURCE /* timegm */
#include "expr-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_alpha(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
static int is_hex(unsigned char c)
{
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_name(unsigned char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '.'; }
static int is_symbol(unsigned char c)
{
  return !(is_alpha(c) || is_digit(c) || is_space(c) || c == '(' || c == ')' || c == '[' ||
           c == ']' || c == '\'' || c == '"');
}

#define lex_fail(err, col, ...) (expr__error(err, EXPR_E_SYNTAX, col, __VA_ARGS__), EXPR_E_SYNTAX)
#define lex_nomem(err, col) (expr__error(err, EXPR_E_NOMEM, col, "out of memory"), EXPR_E_NOMEM)

static const struct {
  const char *s;
  op binary, prefix;
} ops[] = {
    {"+", OP_ADD, OP_NONE},    {"-", OP_SUB, OP_NEG},        {"*", OP_MUL, OP_NONE},
    {"/", OP_DIV, OP_NONE},    {"%", OP_MOD, OP_NONE},       {"**", OP_POW, OP_NONE},
    {"==", OP_EQ, OP_NONE},    {"!=", OP_NE, OP_NONE},       {"<", OP_LT, OP_NONE},
    {"<=", OP_LE, OP_NONE},    {">", OP_GT, OP_NONE},        {">=", OP_GE, OP_NONE},
    {"=~", OP_REQ, OP_NONE},   {"!~", OP_NREQ, OP_NONE},     {"&&", OP_AND, OP_NONE},
    {"||", OP_OR, OP_NONE},    {"&", OP_BAND, OP_NONE},      {"|", OP_BOR, OP_NONE},
    {"^", OP_BXOR, OP_NONE},   {"<<", OP_SHL, OP_NONE},      {">>", OP_SHR, OP_NONE},
    {"!", OP_NONE, OP_NOT},    {"~", OP_NONE, OP_BNOT},      {"?", OP_TIF, OP_NONE},
    {":", OP_TELSE, OP_NONE},  {"??", OP_COALESCE, OP_NONE},
};

static expr_code lex_op(lexer *lx, tok *t, expr_error *err)
{
  size_t start = lx->pos;
  while (lx->pos < lx->len && is_symbol((unsigned char)lx->src[lx->pos]) &&
         lx->src[lx->pos] != ',')
    lx->pos++;
  size_t n = lx->pos - start;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    if (strlen(ops[i].s) != n || memcmp(ops[i].s, lx->src + start, n) != 0)
      continue;
    op o = !lx->after_value && ops[i].prefix ? ops[i].prefix : ops[i].binary;
    if (o == OP_NONE)
      break;
    t->kind = T_OP;
    t->op = o;
    return EXPR_OK;
  }
  return lex_fail(err, t->col, "unknown operator '%.*s'", (int)(n > 20 ? 20 : n), lx->src + start);
}

static expr_code lex_number(lexer *lx, tok *t, expr_error *err)
{
  const char *s = lx->src + lx->pos;
  size_t rest = lx->len - lx->pos, n = 0;
  char buf[80];
  if (rest >= 2 && s[0] == '0' && s[1] == 'x') {
    unsigned long long v = 0;
    for (n = 2; n < rest && is_hex((unsigned char)s[n]); n++) {
      if (v >> 60)
        return lex_fail(err, t->col, "hex number out of range");
      int d = s[n] <= '9' ? s[n] - '0' : (s[n] | 0x20) - 'a' + 10;
      v = v * 16 + (unsigned)d;
    }
    if (n == 2)
      return lex_fail(err, t->col, "hex number without digits");
    lx->pos += n;
    t->kind = T_NUM;
    t->num = (double)v;
    return EXPR_OK;
  }
  while (n < rest && (is_digit((unsigned char)s[n]) || s[n] == '.'))
    n++;
  lx->pos += n;
  if (n >= sizeof buf)
    return lex_fail(err, t->col, "number too long");
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  t->num = strtod(buf, &end);
  if (end != buf + n || (n == 1 && buf[0] == '.'))
    return lex_fail(err, t->col, "bad number '%s'", buf);
  t->kind = T_NUM;
  return EXPR_OK;
}

/* Bytes up to the closing byte, a backslash taking the next byte as it is. */
static expr_code lex_quoted(lexer *lx, tok *t, char close, expr_error *err)
{
  size_t start = ++lx->pos, n = 0;
  char *out = malloc(lx->len - start + 1);
  if (!out)
    return lex_nomem(err, t->col);
  while (lx->pos < lx->len && lx->src[lx->pos] != close) {
    if (lx->src[lx->pos] == '\\' && ++lx->pos == lx->len)
      break;
    out[n++] = lx->src[lx->pos++];
  }
  if (lx->pos == lx->len) {
    free(out);
    return lex_fail(err, t->col, close == ']' ? "unclosed [name]" : "unclosed string");
  }
  lx->pos++;
  out[n] = '\0';
  t->text = out;
  t->len = n;
  return EXPR_OK;
}

static expr_code lex_string(lexer *lx, tok *t, expr_error *err)
{
  expr_code rc = lex_quoted(lx, t, lx->src[lx->pos], err);
  if (rc != EXPR_OK)
    return rc;
  t->kind = T_STR;
  t->is_time = expr__lex_time(t->text, t->len, &t->num);
  return EXPR_OK;
}

static expr_code lex_name(lexer *lx, tok *t, expr_error *err)
{
  size_t start = lx->pos;
  while (lx->pos < lx->len && is_name((unsigned char)lx->src[lx->pos]))
    lx->pos++;
  t->len = lx->pos - start;
  t->text = malloc(t->len + 1);
  if (!t->text)
    return lex_nomem(err, t->col);
  memcpy(t->text, lx->src + start, t->len);
  t->text[t->len] = '\0';
  t->kind = T_IDENT;
  if (strcmp(t->text, "IN") == 0 || strcmp(t->text, "in") == 0) {
    t->kind = T_OP;
    t->op = OP_IN;
  }
  return EXPR_OK;
}

expr_code expr__lex(lexer *lx, tok *t, expr_error *err)
{
  memset(t, 0, sizeof *t);
  while (lx->pos < lx->len && is_space((unsigned char)lx->src[lx->pos]))
    lx->pos++;
  t->col = lx->pos + 1;
  if (lx->pos == lx->len) {
    t->kind = T_END;
    return EXPR_OK;
  }
  unsigned char ch = (unsigned char)lx->src[lx->pos];
  expr_code rc = EXPR_OK;
  if (is_digit(ch) || ch == '.')
    rc = lex_number(lx, t, err);
  else if (ch == ',' || ch == '(' || ch == ')') {
    t->kind = ch == ',' ? T_COMMA : ch == '(' ? T_LPAREN : T_RPAREN;
    lx->pos++;
  } else if (ch == '[') {
    rc = lex_quoted(lx, t, ']', err);
    t->kind = T_IDENT;
    t->is_time = 1; /* bracketed: a variable, whatever its name */
  } else if (is_alpha(ch))
    rc = lex_name(lx, t, err);
  else if (ch == '\'' || ch == '"')
    rc = lex_string(lx, t, err);
  else
    rc = lex_op(lx, t, err);
  if (rc == EXPR_OK)
    lx->after_value = t->kind == T_NUM || t->kind == T_STR || t->kind == T_IDENT ||
                      t->kind == T_RPAREN;
  return rc;
}

void expr__tok_free(tok *t)
{
  free(t->text);
  t->text = NULL;
}

/* ---- Dates in strings, as govaluate's lexer tries them: 2006-01-02,
 * with " 15:04" or " 15:04:05", optionally "-07:00" after the seconds, and
 * RFC 3339 (2006-01-02T15:04:05Z or with an offset). Local time unless an
 * offset is given. */

static int digits(const char *s, int n, int *out)
{
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!is_digit((unsigned char)s[i]))
      return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

static int days_in(int year, int mon)
{
  static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return mon == 2 && leap ? 29 : d[mon - 1];
}

/* "+07:00" or "-07:00" (or "Z" when z) into seconds east of UTC. */
static int zone(const char *s, size_t n, int z, long *off)
{
  int h, m;
  if (z && n == 1 && s[0] == 'Z') {
    *off = 0;
    return 1;
  }
  if (n != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' || !digits(s + 1, 2, &h) ||
      !digits(s + 4, 2, &m) || h > 23 || m > 59)
    return 0;
  *off = (s[0] == '-' ? -1 : 1) * (h * 3600L + m * 60L);
  return 1;
}

int expr__lex_time(const char *s, size_t len, double *out)
{
  struct tm tm = {0};
  int y, mo, d, h = 0, mi = 0, se = 0;
  long off = 0;
  int has_off = 0;
  if (len < 10 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
      !digits(s + 8, 2, &d))
    return 0;
  if (len > 10) {
    char sep = s[10];
    if ((sep != ' ' && sep != 'T') || len < 16 || !digits(s + 11, 2, &h) || s[13] != ':' ||
        !digits(s + 14, 2, &mi))
      return 0;
    size_t at = 16;
    if (len >= 19 && s[16] == ':') {
      if (!digits(s + 17, 2, &se))
        return 0;
      at = 19;
    }
    if (sep == 'T' && at != 19)
      return 0;
    if (at < len) {
      if (at != 19 || !zone(s + at, len - at, sep == 'T', &off))
        return 0;
      has_off = 1;
    } else if (sep == 'T')
      return 0;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || h > 23 || mi > 59 || se > 59)
    return 0;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  tm.tm_isdst = -1;
  time_t t = has_off ? timegm(&tm) - off : mktime(&tm);
  *out = (double)t;
  return 1;
}
