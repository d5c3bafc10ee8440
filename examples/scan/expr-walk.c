/* What the scanner learns of an expression without evaluating it, found
 * once after parsing: the variables it reads; its atoms, the tests of one
 * literal over one variable (or over tolower/to_lower of one) that a
 * streaming matcher can answer (contains, contains_all, contains_any,
 * regex); how each variable's value is used (in atoms, as len(v), whole).
 * Literal patterns are compiled here too, so that a bad one is a compile
 * error with its column. */
#include "expr-int.h"

#include <stdlib.h>
#include <string.h>

static int is_fn(const node *n, const char *name)
{
  return n->kind == N_CALL && strcmp(n->fn->name, name) == 0;
}

static int is_lit_str(const node *n) { return n->kind == N_LIT && n->lit.type == EXPR_STR; }

/* The variable an atom tests: v, or tolower(v); NULL if n is neither. */
static node *subject(node *n, int *lower)
{
  *lower = 0;
  if (n->kind == N_VAR)
    return n;
  if (is_fn(n, "to_lower") && n->nkids == 1 && n->kids[0]->kind == N_VAR) {
    *lower = 1;
    return n->kids[0];
  }
  return NULL;
}

static expr_code add_atom(expr *e, expr_atom_kind kind, int lower, const node *var,
                          const node *lit, size_t col, expr_error *err)
{
  expr_atom *a = realloc(e->atoms, (e->natoms + 1) * sizeof *a);
  if (!a) {
    expr__error(err, EXPR_E_NOMEM, col, "out of memory");
    return EXPR_E_NOMEM;
  }
  e->atoms = a;
  a[e->natoms++] = (expr_atom){kind, lower, var->text, var->text_len, lit->lit.u.str.ptr,
                               lit->lit.u.str.len, col};
  return EXPR_OK;
}

/* The atoms of call n, when it is made of them. */
static expr_code find_atoms(expr *e, node *n, expr_error *err)
{
  int lower, word = is_fn(n, "contains") || is_fn(n, "contains_all") || is_fn(n, "contains_any");
  node *var;
  if (word && n->nkids >= 2 && (var = subject(n->kids[0], &lower)) != NULL) {
    for (size_t i = 1; i < n->nkids; i++)
      if (!is_lit_str(n->kids[i]))
        return EXPR_OK;
    n->atom = e->natoms;
    for (size_t i = 1; i < n->nkids; i++)
      if (add_atom(e, EXPR_ATOM_WORD, lower, var, n->kids[i], n->col, err) != EXPR_OK)
        return EXPR_E_NOMEM;
    var->use = EXPR_USE_ATOMS;
    n->natoms = n->nkids - 1;
  } else if (is_fn(n, "regex") && is_lit_str(n->kids[0]) &&
             (var = subject(n->kids[1], &lower)) != NULL) {
    n->atom = e->natoms;
    if (add_atom(e, EXPR_ATOM_REGEX, lower, var, n->kids[0], n->col, err) != EXPR_OK)
      return EXPR_E_NOMEM;
    var->use = EXPR_USE_ATOMS;
    n->natoms = 1;
  }
  return EXPR_OK;
}

static expr_code compile_re(node *lit, expr_error *err)
{
  if (!is_lit_str(lit) || lit->re)
    return EXPR_OK;
  char msg[120];
  size_t at;
  lit->re = expr__re_compile(lit->lit.u.str.ptr, lit->lit.u.str.len, msg, sizeof msg, &at);
  if (!lit->re) {
    expr__error(err, EXPR_E_REGEX, lit->col, "bad regex: %s at offset %zu", msg, at);
    return EXPR_E_REGEX;
  }
  return EXPR_OK;
}

static expr_code patterns(node *n, expr_error *err)
{
  if (n->kind == N_BINARY && (n->op == OP_REQ || n->op == OP_NREQ))
    return compile_re(n->kids[1], err);
  if (is_fn(n, "regex") || is_fn(n, "regex_all") || is_fn(n, "regex_any"))
    return compile_re(n->kids[0], err);
  if (is_fn(n, "replace_regex"))
    return compile_re(n->kids[1], err);
  return EXPR_OK;
}

static expr_code add_var(expr *e, node *n, expr_error *err)
{
  for (size_t i = 0; i < e->nvars; i++)
    if (e->var_lens[i] == n->text_len && memcmp(e->vars[i], n->text, n->text_len) == 0)
      return EXPR_OK;
  char **v = realloc(e->vars, (e->nvars + 1) * sizeof *v);
  if (v)
    e->vars = v;
  size_t *l = v ? realloc(e->var_lens, (e->nvars + 1) * sizeof *l) : NULL;
  if (!l) {
    expr__error(err, EXPR_E_NOMEM, n->col, "out of memory");
    return EXPR_E_NOMEM;
  }
  e->var_lens = l;
  e->vars[e->nvars] = n->text;
  e->var_lens[e->nvars++] = n->text_len;
  return EXPR_OK;
}

static expr_code walk(expr *e, node *n, expr_error *err)
{
  expr_code rc = EXPR_OK;
  if (n->kind == N_VAR) {
    if (!n->use)
      n->use = EXPR_USE_WHOLE;
    return add_var(e, n, err);
  }
  if (n->kind == N_CALL) {
    if ((rc = find_atoms(e, n, err)) != EXPR_OK)
      return rc;
    if (is_fn(n, "len") && n->nkids == 1 && n->kids[0]->kind == N_VAR)
      n->kids[0]->use = EXPR_USE_LEN;
  }
  if ((rc = patterns(n, err)) != EXPR_OK)
    return rc;
  for (size_t i = 0; i < n->nkids && rc == EXPR_OK; i++)
    rc = walk(e, n->kids[i], err);
  return rc;
}

expr_code expr__walk(expr *e, expr_error *err) { return walk(e, e->root, err); }

size_t expr_var_count(const expr *e) { return e->nvars; }

const char *expr_var_name(const expr *e, size_t i, size_t *len)
{
  if (i >= e->nvars)
    return NULL;
  *len = e->var_lens[i];
  return e->vars[i];
}

size_t expr_atom_count(const expr *e) { return e->natoms; }

const expr_atom *expr_atom_get(const expr *e, size_t i)
{
  return i < e->natoms ? &e->atoms[i] : NULL;
}

static unsigned uses(const node *n, const char *name, size_t len)
{
  unsigned u = 0;
  if (n->kind == N_VAR && n->text_len == len && memcmp(n->text, name, len) == 0)
    u |= n->use;
  for (size_t i = 0; i < n->nkids; i++)
    u |= uses(n->kids[i], name, len);
  return u;
}

unsigned expr_uses(const expr *e, const char *name, size_t len)
{
  return uses(e->root, name, len);
}

/* Whether call n gives another value each time: the random functions, the
 * clock's (unix_time, date_time without a time), wait_for. */
static int is_volatile(const node *n)
{
  const char *f = n->fn->name;
  return !strncmp(f, "rand_", 5) || !strcmp(f, "unix_time") || !strcmp(f, "wait_for") ||
         (!strcmp(f, "date_time") && n->nkids < 2);
}

static unsigned calls(const node *n)
{
  unsigned c = 0;
  if (n->kind == N_CALL)
    c |= EXPR_CALLS | (is_volatile(n) ? EXPR_CALLS_VOLATILE : 0);
  for (size_t i = 0; i < n->nkids; i++)
    c |= calls(n->kids[i]);
  return c;
}

unsigned expr_calls(const expr *e) { return calls(e->root); }
