/* The expression engine's parser: tokens to a tree by precedence climbing,
 * with govaluate's levels, loosest first:
 *
 *   ? : ??            (govaluate's ternary: a ? b gives b or nil, x : y
 *                      and x ?? y give x unless it is nil)
 *   ||
 *   &&
 *   == != < <= > >= =~ !~ in
 *   & | ^
 *   << >>
 *   + -
 *   * / %
 *   **
 *   prefix - ! ~, then values: literals, variables, calls, ( )
 *
 * every binary level left-associative. Parentheses and calls hold comma
 * lists; a list of two or more outside a call is a list value (for in).
 * Calls name a function of the library (expr__fn_find) with a number of
 * arguments it takes: else the error says so, at the name's column. */
#include "expr-int.h"

#include <stdlib.h>
#include <string.h>

typedef struct parser {
  lexer lx;
  tok cur;
  expr_error *err;
  unsigned depth;
} parser;

static expr_code advance(parser *p)
{
  expr__tok_free(&p->cur);
  return expr__lex(&p->lx, &p->cur, p->err);
}

static expr_code fail(parser *p, expr_code code, size_t col, const char *what)
{
  expr__error(p->err, code, col, "%s", what);
  return code;
}

static node *node_new(parser *p, node_kind kind, size_t col)
{
  node *n = calloc(1, sizeof *n);
  if (!n)
    fail(p, EXPR_E_NOMEM, col, "out of memory");
  else {
    n->kind = kind;
    n->col = col;
  }
  return n;
}

void expr__node_free(node *n)
{
  if (!n)
    return;
  for (size_t i = 0; i < n->nkids; i++)
    expr__node_free(n->kids[i]);
  free(n->kids);
  free(n->text);
  expr__re_free(n->re);
  free(n);
}

static int add_kid(parser *p, node *n, node *kid)
{
  node **k = realloc(n->kids, (n->nkids + 1) * sizeof *k);
  if (!k) {
    expr__node_free(kid);
    fail(p, EXPR_E_NOMEM, n->col, "out of memory");
    return -1;
  }
  n->kids = k;
  k[n->nkids++] = kid;
  return 0;
}

static int level(const tok *t)
{
  if (t->kind != T_OP)
    return -1;
  switch (t->op) {
  case OP_TIF: case OP_TELSE: case OP_COALESCE: return 0;
  case OP_OR: return 1;
  case OP_AND: return 2;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
  case OP_REQ: case OP_NREQ: case OP_IN: return 3;
  case OP_BAND: case OP_BOR: case OP_BXOR: return 4;
  case OP_SHL: case OP_SHR: return 5;
  case OP_ADD: case OP_SUB: return 6;
  case OP_MUL: case OP_DIV: case OP_MOD: return 7;
  case OP_POW: return 8;
  default: return -1;
  }
}

static node *parse_binary(parser *p, int min);

/* Comma-separated expressions into n's kids, up to the closing ')',
 * which is consumed. */
static int parse_args(parser *p, node *n)
{
  if (p->cur.kind == T_RPAREN)
    return advance(p) == EXPR_OK ? 0 : -1;
  for (;;) {
    node *kid = parse_binary(p, 0);
    if (!kid || add_kid(p, n, kid) != 0)
      return -1;
    if (p->cur.kind == T_RPAREN)
      return advance(p) == EXPR_OK ? 0 : -1;
    if (p->cur.kind != T_COMMA) {
      fail(p, EXPR_E_SYNTAX, p->cur.col, "expected ',' or ')'");
      return -1;
    }
    if (advance(p) != EXPR_OK)
      return -1;
  }
}

static node *parse_call(parser *p, tok *name)
{
  const expr_fn *fn = expr__fn_find(name->text, name->len);
  if (!fn) {
    expr__error(p->err, EXPR_E_FUNC, name->col, "unknown function '%.60s'", name->text);
    return NULL;
  }
  node *n = node_new(p, N_CALL, name->col);
  if (!n || advance(p) != EXPR_OK || parse_args(p, n) != 0) {
    expr__node_free(n);
    return NULL;
  }
  n->fn = fn;
  if ((int)n->nkids < fn->min || (fn->max >= 0 && (int)n->nkids > fn->max)) {
    if (fn->max == fn->min)
      expr__error(p->err, EXPR_E_ARGS, name->col, "%s takes %d argument%s, not %zu", fn->name,
                  fn->min, fn->min == 1 ? "" : "s", n->nkids);
    else if (fn->max < 0)
      expr__error(p->err, EXPR_E_ARGS, name->col, "%s takes at least %d arguments, not %zu",
                  fn->name, fn->min, n->nkids);
    else
      expr__error(p->err, EXPR_E_ARGS, name->col, "%s takes %d to %d arguments, not %zu",
                  fn->name, fn->min, fn->max, n->nkids);
    expr__node_free(n);
    return NULL;
  }
  return n;
}

/* A name: a call when '(' follows, true, false, or a variable ([name] is
 * always a variable). */
static node *parse_name(parser *p)
{
  tok name = p->cur;
  p->cur.text = NULL;
  node *n = NULL;
  int plain = !name.is_time;
  if (advance(p) == EXPR_OK) {
    if (plain && p->cur.kind == T_LPAREN)
      n = parse_call(p, &name);
    else if (plain && (strcmp(name.text, "true") == 0 || strcmp(name.text, "false") == 0)) {
      if ((n = node_new(p, N_LIT, name.col)) != NULL)
        n->lit = expr_bool(name.text[0] == 't');
    } else if ((n = node_new(p, N_VAR, name.col)) != NULL) {
      n->text = name.text;
      n->text_len = name.len;
      name.text = NULL;
    }
  }
  expr__tok_free(&name);
  return n;
}

static node *parse_literal(parser *p)
{
  node *n = node_new(p, N_LIT, p->cur.col);
  if (!n)
    return NULL;
  if (p->cur.kind == T_NUM || p->cur.is_time)
    n->lit = expr_num(p->cur.num);
  else {
    n->text = p->cur.text;
    n->text_len = p->cur.len;
    p->cur.text = NULL;
    n->lit = expr_str(n->text, n->text_len);
  }
  if (advance(p) != EXPR_OK) {
    expr__node_free(n);
    return NULL;
  }
  return n;
}

/* ( list ): one item is itself, more a list value. */
static node *parse_group(parser *p)
{
  node *list = node_new(p, N_LIST, p->cur.col);
  if (!list || advance(p) != EXPR_OK || parse_args(p, list) != 0) {
    expr__node_free(list);
    return NULL;
  }
  if (list->nkids == 0) {
    fail(p, EXPR_E_SYNTAX, list->col, "empty parentheses");
    expr__node_free(list);
    return NULL;
  }
  if (list->nkids > 1)
    return list;
  node *only = list->kids[0];
  list->nkids = 0;
  expr__node_free(list);
  return only;
}

static node *parse_unary(parser *p)
{
  if (++p->depth > EXPR_MAX_DEPTH) {
    fail(p, EXPR_E_SYNTAX, p->cur.col, "nested too deep");
    return NULL;
  }
  node *n = NULL;
  switch (p->cur.kind) {
  case T_NUM:
  case T_STR: n = parse_literal(p); break;
  case T_IDENT: n = parse_name(p); break;
  case T_LPAREN: n = parse_group(p); break;
  case T_OP:
    if (p->cur.op == OP_NEG || p->cur.op == OP_NOT || p->cur.op == OP_BNOT) {
      n = node_new(p, N_UNARY, p->cur.col);
      if (n)
        n->op = p->cur.op;
      node *kid = n && advance(p) == EXPR_OK ? parse_unary(p) : NULL;
      if (!kid || add_kid(p, n, kid) != 0) {
        expr__node_free(n);
        n = NULL;
      }
      break;
    }
    /* fall through */
  default:
    fail(p, EXPR_E_SYNTAX, p->cur.col,
         p->cur.kind == T_END ? "unexpected end of expression" : "expected a value");
  }
  p->depth--;
  return n;
}

static node *parse_binary(parser *p, int min)
{
  node *lhs = parse_unary(p);
  int lv;
  while (lhs && (lv = level(&p->cur)) >= min) {
    node *n = node_new(p, N_BINARY, p->cur.col);
    if (!n) {
      expr__node_free(lhs);
      return NULL;
    }
    n->op = p->cur.op;
    if (add_kid(p, n, lhs) != 0) { /* it freed lhs */
      expr__node_free(n);
      return NULL;
    }
    node *rhs = advance(p) == EXPR_OK ? parse_binary(p, lv + 1) : NULL;
    if (!rhs || add_kid(p, n, rhs) != 0) {
      expr__node_free(n);
      return NULL;
    }
    lhs = n;
  }
  return lhs;
}

expr_code expr_compile(const char *src, size_t len, expr **out, expr_error *err)
{
  expr_error local;
  if (!err)
    err = &local;
  memset(err, 0, sizeof *err);
  *out = NULL;
  if (len > EXPR_MAX_SOURCE)
    return fail(&(parser){.err = err}, EXPR_E_SYNTAX, 1, "expression too long");
  parser p = {.lx = {src, len, 0, 0}, .err = err};
  node *root = NULL;
  if (advance(&p) == EXPR_OK) {
    node *list = node_new(&p, N_LIST, 1);
    /* The top level is a list as in parentheses, without them. */
    while (list) {
      node *kid = parse_binary(&p, 0);
      if (!kid || add_kid(&p, list, kid) != 0 || p.cur.kind != T_COMMA || advance(&p) != EXPR_OK)
        break;
    }
    if (list && err->code == EXPR_OK && p.cur.kind != T_END)
      fail(&p, EXPR_E_SYNTAX, p.cur.col, "unexpected token after the expression");
    if (list && err->code == EXPR_OK && list->nkids == 1) {
      root = list->kids[0];
      list->nkids = 0;
      expr__node_free(list);
    } else if (err->code == EXPR_OK)
      root = list;
    else
      expr__node_free(list);
  }
  expr__tok_free(&p.cur);
  if (err->code != EXPR_OK) {
    expr__node_free(root);
    return err->code;
  }
  expr *e = calloc(1, sizeof *e);
  if (!e) {
    expr__node_free(root);
    return fail(&p, EXPR_E_NOMEM, 1, "out of memory");
  }
  e->root = root;
  if (expr__walk(e, err) != EXPR_OK) {
    expr_free(e);
    return err->code;
  }
  *out = e;
  return EXPR_OK;
}

void expr_free(expr *e)
{
  if (!e)
    return;
  expr__node_free(e->root);
  free(e->vars);
  free(e->var_lens);
  free(e->atoms);
  free(e);
}
