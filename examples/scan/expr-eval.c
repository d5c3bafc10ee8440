/* The expression engine's evaluation: the tree walked with govaluate's
 * rules. && and || take bools and skip their right side once the left
 * decides; a ? b is b when a is true, else nil; x : y and x ?? y are x
 * unless it is nil (so a ? b : c is govaluate's ternary). Arithmetic takes
 * numbers; + also joins when either side is a string (each side as %v);
 * comparisons take two numbers or two strings; == and != any two values;
 * =~ and !~ a string and a pattern; in a value and a list; bitwise
 * operators numbers, through 64-bit integers as Go converts them. */
#include "expr-int.h"

#include <math.h>
#include <string.h>

static expr_code eval(expr_ctx *c, const node *n, expr_value *out);

static const char *op_name(op o)
{
  static const char *const names[] = {
      [OP_ADD] = "+",   [OP_SUB] = "-",   [OP_MUL] = "*",   [OP_DIV] = "/",   [OP_MOD] = "%",
      [OP_POW] = "**",  [OP_EQ] = "==",   [OP_NE] = "!=",   [OP_LT] = "<",    [OP_LE] = "<=",
      [OP_GT] = ">",    [OP_GE] = ">=",   [OP_REQ] = "=~",  [OP_NREQ] = "!~", [OP_IN] = "in",
      [OP_AND] = "&&",  [OP_OR] = "||",   [OP_BAND] = "&",  [OP_BOR] = "|",   [OP_BXOR] = "^",
      [OP_SHL] = "<<",  [OP_SHR] = ">>",  [OP_NEG] = "-",   [OP_NOT] = "!",   [OP_BNOT] = "~",
      [OP_TIF] = "?",   [OP_TELSE] = ":", [OP_COALESCE] = "??"};
  return names[o] ? names[o] : "?";
}

static const char *type_name(expr_type t)
{
  static const char *const names[] = {"nil", "bool", "number", "string", "list"};
  return names[t];
}

static expr_code type_error(expr_ctx *c, op o, const expr_value *a, const expr_value *b)
{
  if (!b)
    return expr__fail(c, EXPR_E_TYPE, "'%s' cannot take a %s", op_name(o), type_name(a->type));
  return expr__fail(c, EXPR_E_TYPE, "'%s' cannot take a %s and a %s", op_name(o),
                    type_name(a->type), type_name(b->type));
}

/* Go's int64(f) on amd64: out of range and NaN give the smallest int64. */
static int64_t go_i64(double d)
{
  return d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? (int64_t)d : INT64_MIN;
}

static uint64_t go_u64(double d)
{
  if (d >= 0 && d < 18446744073709551616.0)
    return (uint64_t)d;
  return (uint64_t)go_i64(d);
}

static int str_cmp(const expr_value *a, const expr_value *b)
{
  size_t n = a->u.str.len < b->u.str.len ? a->u.str.len : b->u.str.len;
  int r = n ? memcmp(a->u.str.ptr, b->u.str.ptr, n) : 0;
  if (r)
    return r;
  return a->u.str.len < b->u.str.len ? -1 : a->u.str.len > b->u.str.len;
}

static expr_code concat_v(expr_ctx *c, const expr_value *a, const expr_value *b, expr_value *out)
{
  expr_value sa, sb2;
  expr_code rc = expr__str_v(c, a, &sa);
  if (rc == EXPR_OK)
    rc = expr__str_v(c, b, &sb2);
  if (rc != EXPR_OK)
    return rc;
  sbuf s;
  sb_init(&s, c);
  sb_add(&s, sa.u.str.ptr, sa.u.str.len);
  sb_add(&s, sb2.u.str.ptr, sb2.u.str.len);
  return sb_done(&s, out);
}

static expr_code compare(expr_ctx *c, op o, const expr_value *a, const expr_value *b,
                         expr_value *out)
{
  int r;
  if (a->type == EXPR_NUM && b->type == EXPR_NUM)
    r = a->u.num < b->u.num ? -1 : a->u.num > b->u.num ? 1 : a->u.num == b->u.num ? 0 : 2;
  else if (a->type == EXPR_STR && b->type == EXPR_STR)
    r = (str_cmp(a, b) > 0) - (str_cmp(a, b) < 0);
  else
    return type_error(c, o, a, b);
  /* r == 2: NaN, every comparison false */
  int t = o == OP_LT ? r == -1 : o == OP_LE ? (r == -1 || r == 0) : o == OP_GT ? r == 1 : (r == 1 || r == 0);
  *out = expr_bool(t);
  return EXPR_OK;
}

static expr_code regex_op(expr_ctx *c, const node *n, const expr_value *a, const expr_value *b,
                          expr_value *out)
{
  if (a->type != EXPR_STR || b->type != EXPR_STR)
    return type_error(c, n->op, a, b);
  void *re;
  int owned;
  expr_code rc = expr__re_get(c, b, n->kids[1]->re, &re, &owned);
  if (rc != EXPR_OK)
    return rc;
  int m = expr__re_match(c, re, a->u.str.ptr, a->u.str.len);
  if (owned)
    expr__re_free(re);
  if (m < 0)
    return c->err->code;
  *out = expr_bool(n->op == OP_REQ ? m : !m);
  return EXPR_OK;
}

static expr_code arith(expr_ctx *c, op o, const expr_value *a, const expr_value *b,
                       expr_value *out)
{
  if (o == OP_ADD && (a->type == EXPR_STR || b->type == EXPR_STR))
    return concat_v(c, a, b, out);
  if (a->type != EXPR_NUM || b->type != EXPR_NUM)
    return type_error(c, o, a, b);
  double x = a->u.num, y = b->u.num, r = 0;
  switch (o) {
  case OP_ADD: r = x + y; break;
  case OP_SUB: r = x - y; break;
  case OP_MUL: r = x * y; break;
  case OP_DIV: r = x / y; break;
  case OP_MOD: r = fmod(x, y); break;
  case OP_POW: r = pow(x, y); break;
  case OP_BAND: r = (double)(go_i64(x) & go_i64(y)); break;
  case OP_BOR: r = (double)(go_i64(x) | go_i64(y)); break;
  case OP_BXOR: r = (double)(go_i64(x) ^ go_i64(y)); break;
  case OP_SHL: r = go_u64(y) >= 64 ? 0 : (double)(go_u64(x) << go_u64(y)); break;
  case OP_SHR: r = go_u64(y) >= 64 ? 0 : (double)(go_u64(x) >> go_u64(y)); break;
  default: break;
  }
  *out = expr_num(r);
  return EXPR_OK;
}

static expr_code in_list(expr_ctx *c, const expr_value *a, const expr_value *b, expr_value *out)
{
  if (b->type != EXPR_LIST)
    return type_error(c, OP_IN, a, b);
  int found = 0;
  for (size_t i = 0; i < b->u.list.n && !found; i++)
    found = expr__equal(a, &b->u.list.items[i]);
  *out = expr_bool(found);
  return EXPR_OK;
}

/* &&, ||, ?, :, ??: the right side only when the left does not decide. */
static expr_code short_circuit(expr_ctx *c, const node *n, expr_value *out)
{
  expr_value a, b;
  expr_code rc = eval(c, n->kids[0], &a);
  if (rc != EXPR_OK)
    return rc;
  c->col = n->col;
  switch (n->op) {
  case OP_AND:
  case OP_OR:
    if (a.type == EXPR_BOOL && a.u.b == (n->op == OP_OR)) {
      *out = a;
      return EXPR_OK;
    }
    break;
  case OP_TIF:
    if (a.type != EXPR_BOOL)
      return type_error(c, n->op, &a, NULL);
    if (!a.u.b) {
      *out = expr_nil();
      return EXPR_OK;
    }
    return eval(c, n->kids[1], out);
  default: /* : and ?? */
    if (a.type != EXPR_NIL) {
      *out = a;
      return EXPR_OK;
    }
    return eval(c, n->kids[1], out);
  }
  if ((rc = eval(c, n->kids[1], &b)) != EXPR_OK)
    return rc;
  c->col = n->col;
  if (a.type != EXPR_BOOL || b.type != EXPR_BOOL)
    return type_error(c, n->op, &a, &b);
  *out = b;
  return EXPR_OK;
}

static expr_code binary(expr_ctx *c, const node *n, expr_value *out)
{
  if (n->op == OP_AND || n->op == OP_OR || n->op == OP_TIF || n->op == OP_TELSE ||
      n->op == OP_COALESCE)
    return short_circuit(c, n, out);
  expr_value a, b;
  expr_code rc = eval(c, n->kids[0], &a);
  if (rc == EXPR_OK)
    rc = eval(c, n->kids[1], &b);
  if (rc != EXPR_OK)
    return rc;
  c->col = n->col;
  switch (n->op) {
  case OP_EQ:
  case OP_NE: *out = expr_bool(expr__equal(&a, &b) == (n->op == OP_EQ)); return EXPR_OK;
  case OP_LT:
  case OP_LE:
  case OP_GT:
  case OP_GE: return compare(c, n->op, &a, &b, out);
  case OP_REQ:
  case OP_NREQ: return regex_op(c, n, &a, &b, out);
  case OP_IN: return in_list(c, &a, &b, out);
  default: return arith(c, n->op, &a, &b, out);
  }
}

static expr_code unary(expr_ctx *c, const node *n, expr_value *out)
{
  expr_value a;
  expr_code rc = eval(c, n->kids[0], &a);
  if (rc != EXPR_OK)
    return rc;
  c->col = n->col;
  if (n->op == OP_NOT) {
    if (a.type != EXPR_BOOL)
      return type_error(c, n->op, &a, NULL);
    *out = expr_bool(!a.u.b);
    return EXPR_OK;
  }
  if (a.type != EXPR_NUM)
    return type_error(c, n->op, &a, NULL);
  *out = expr_num(n->op == OP_NEG ? -a.u.num : (double)~go_i64(a.u.num));
  return EXPR_OK;
}

/* A call made of atoms, answered by the caller's streaming matcher when it
 * knows every one: 1 with *out set, else 0. */
static int from_atoms(expr_ctx *c, const node *n, expr_value *out)
{
  if (!n->natoms || !c->env->atom)
    return 0;
  int any = 0, all = 1;
  for (size_t i = 0; i < n->natoms; i++) {
    int r = c->env->atom(c->env->ud, n->atom + i);
    if (r < 0)
      return 0;
    any |= r;
    all &= r;
  }
  *out = expr_bool(strcmp(n->fn->name, "contains_any") == 0 ? any : all);
  return 1;
}

static expr_code call(expr_ctx *c, const node *n, expr_value *out)
{
  if (from_atoms(c, n, out))
    return EXPR_OK;
  if (c->env->length && n->nkids == 1 && n->kids[0]->kind == N_VAR &&
      strcmp(n->fn->name, "len") == 0) {
    size_t len;
    const node *v = n->kids[0];
    if (c->env->length(c->env->ud, v->text, v->text_len, &len)) {
      *out = expr_num((double)len);
      return EXPR_OK;
    }
  }
  expr_value *args = NULL;
  if (n->nkids && !(args = expr__alloc_list(c, n->nkids)))
    return c->err->code;
  for (size_t i = 0; i < n->nkids; i++) {
    expr_code rc = eval(c, n->kids[i], &args[i]);
    if (rc != EXPR_OK)
      return rc;
  }
  c->col = n->col;
  c->call = n; /* where the regex functions find their literal patterns */
  return n->fn->fn(c, args, n->nkids, out);
}

static expr_code eval(expr_ctx *c, const node *n, expr_value *out)
{
  c->col = n->col;
  switch (n->kind) {
  case N_LIT: *out = n->lit; return EXPR_OK;
  case N_VAR:
    if (c->env->lookup && c->env->lookup(c->env->ud, n->text, n->text_len, out))
      return EXPR_OK;
    return expr__fail(c, EXPR_E_VAR, "no variable '%.60s'", n->text);
  case N_UNARY: return unary(c, n, out);
  case N_BINARY: return binary(c, n, out);
  case N_CALL: return call(c, n, out);
  case N_LIST: break;
  }
  expr_value *items = expr__alloc_list(c, n->nkids);
  if (!items)
    return c->err->code;
  for (size_t i = 0; i < n->nkids; i++) {
    expr_code rc = eval(c, n->kids[i], &items[i]);
    if (rc != EXPR_OK)
      return rc;
  }
  out->type = EXPR_LIST;
  out->u.list.items = items;
  out->u.list.n = n->nkids;
  return EXPR_OK;
}

void expr_env_init(expr_env *env)
{
  memset(env, 0, sizeof *env);
  env->max_len = EXPR_MAX_LEN;
  env->max_wait_ms = EXPR_MAX_WAIT_MS;
}

expr_code expr_eval(const expr *e, const expr_env *env, expr_arena *a, expr_value *out,
                    expr_error *err)
{
  expr_error local;
  expr_ctx c = {.env = env, .a = a, .err = err ? err : &local};
  memset(c.err, 0, sizeof *c.err);
  c.max_len = env->max_len ? env->max_len : EXPR_MAX_LEN;
  expr_code rc = eval(&c, e->root, out);
  if (rc != EXPR_OK)
    *out = expr_nil();
  return rc;
}
