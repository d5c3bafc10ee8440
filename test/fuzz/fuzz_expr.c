/* Fuzz target: scan's expression engine (examples/scan/expr.h), compiling
 * arbitrary text and evaluating it over a fixed set of variables.
 *
 * Input:
 *   line 1   the expression (up to the first LF)
 *   rest     the value of the variable body
 *
 * The other variables: status_code 200, header (the first 64 bytes of the
 * body), content_type "text/html", nothing (nil), yes (true). Values are
 * capped at 256 KiB and an arena at 1 MiB so that hostile expressions hit
 * the caps soon. Checked:
 *  - compile gives EXPR_OK or a compile error with a message and a column
 *    within the text (one past its end for "unexpected end");
 *  - evaluation gives a known code; on EXPR_OK the value is well formed
 *    (strings within the cap), on an error nil with a message; the arena
 *    stays within its cap and frees to nothing;
 *  - the walker's atoms are literals of the expression over its variables;
 *  - answered by the caller (each word atom computed here from the body,
 *    regex atoms left to the engine), an expression that uses body only in
 *    atoms gives the same result without the body (or fails for want of it
 *    at a regex atom), unless it draws random values or reads the clock, or
 *    the whole evaluation ran out of room (the copies tolower(body) makes
 *    are not made then). */
#include <string.h>

#include "expr.h"
#include "fuzz.h"

#define MAX_LEN (256u * 1024u)
#define MAX_TOTAL (1024u * 1024u)

typedef struct vars {
  const uint8_t *body;
  size_t body_len;
  int with_body;
} vars;

static int lookup(void *ud, const char *name, size_t len, expr_value *out)
{
  const vars *v = ud;
  size_t hl = v->body_len < 64 ? v->body_len : 64;
#define IS(n) (len == sizeof n - 1 && memcmp(name, n, len) == 0)
  if (IS("body") && v->with_body)
    *out = expr_str((const char *)v->body, v->body_len);
  else if (IS("status_code"))
    *out = expr_num(200);
  else if (IS("header"))
    *out = expr_str((const char *)v->body, hl);
  else if (IS("content_type"))
    *out = expr_str("text/html", 9);
  else if (IS("nothing"))
    *out = expr_nil();
  else if (IS("yes"))
    *out = expr_bool(1);
  else
    return 0;
  return 1;
#undef IS
}

/* The expression being answered, for atom_answer. */
static const expr *cur;
static const vars *cur_vars;

static int contains_lower(const uint8_t *h, size_t hn, const char *n, size_t nn)
{
  if (nn == 0)
    return 1;
  for (size_t i = 0; i + nn <= hn; i++) {
    size_t k = 0;
    while (k < nn) {
      unsigned char c = h[i + k];
      if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)n[k])
        break;
      k++;
    }
    if (k == nn)
      return 1;
  }
  return 0;
}

static int atom_answer(void *ud, size_t i)
{
  (void)ud;
  const expr_atom *a = expr_atom_get(cur, i);
  FZ_CHECK(a != NULL);
  if (a->kind != EXPR_ATOM_WORD || a->var_len != 4 || memcmp(a->var, "body", 4) != 0)
    return -1;
  if (a->lower)
    return contains_lower(cur_vars->body, cur_vars->body_len, a->lit, a->lit_len);
  if (a->lit_len == 0)
    return 1;
  for (size_t k = 0; k + a->lit_len <= cur_vars->body_len; k++)
    if (memcmp(cur_vars->body + k, a->lit, a->lit_len) == 0)
      return 1;
  return 0;
}

static void check_value(const expr_value *v, int depth)
{
  switch (v->type) {
  case EXPR_NIL: break;
  case EXPR_BOOL: FZ_CHECK(v->u.b == 0 || v->u.b == 1); break;
  case EXPR_NUM: break;
  case EXPR_STR: FZ_CHECK(v->u.str.len <= MAX_LEN && (v->u.str.ptr || !v->u.str.len)); break;
  case EXPR_LIST:
    FZ_CHECK(depth < 3 && (v->u.list.items || !v->u.list.n));
    for (size_t i = 0; i < v->u.list.n; i++)
      check_value(&v->u.list.items[i], depth + 1);
    break;
  default: FZ_CHECK(0);
  }
}

static int same_value(const expr_value *a, const expr_value *b)
{
  if (a->type != b->type)
    return 0;
  switch (a->type) {
  case EXPR_BOOL: return a->u.b == b->u.b;
  case EXPR_NUM: return a->u.num == b->u.num || (a->u.num != a->u.num && b->u.num != b->u.num);
  case EXPR_STR:
    return a->u.str.len == b->u.str.len &&
           (!a->u.str.len || memcmp(a->u.str.ptr, b->u.str.ptr, a->u.str.len) == 0);
  case EXPR_LIST:
    if (a->u.list.n != b->u.list.n)
      return 0;
    for (size_t i = 0; i < a->u.list.n; i++)
      if (!same_value(&a->u.list.items[i], &b->u.list.items[i]))
        return 0;
    return 1;
  default: return 1;
  }
}

static expr_code eval(const expr *e, vars *v, int answer, expr_arena *a, expr_value *out)
{
  expr_env env;
  expr_env_init(&env);
  env.lookup = lookup;
  env.ud = v;
  env.max_len = MAX_LEN;
  if (answer) {
    cur = e;
    cur_vars = v;
    env.atom = atom_answer;
  }
  expr_error err;
  expr_arena_init(a, MAX_TOTAL);
  expr_code rc = expr_eval(e, &env, a, out, &err);
  FZ_CHECK(rc == err.code);
  FZ_CHECK(a->used <= MAX_TOTAL);
  if (rc == EXPR_OK)
    check_value(out, 0);
  else {
    FZ_CHECK(rc == EXPR_E_NOMEM || rc == EXPR_E_VAR || rc == EXPR_E_TYPE || rc == EXPR_E_VALUE ||
             rc == EXPR_E_REGEX || rc == EXPR_E_LIMIT);
    FZ_CHECK(out->type == EXPR_NIL && err.msg[0] != '\0');
  }
  return rc;
}

static int draws_or_reads_clock(const uint8_t *src, size_t n)
{
  static const char *const words[] = {"rand", "time", "wait"};
  for (size_t w = 0; w < 3; w++) {
    size_t l = strlen(words[w]);
    for (size_t i = 0; i + l <= n; i++)
      if (memcmp(src + i, words[w], l) == 0)
        return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nl = memchr(data, '\n', size);
  size_t src_len = nl ? (size_t)(nl - data) : size;
  vars v = {nl ? nl + 1 : data + size, nl ? size - src_len - 1 : 0, 1};

  expr *e = NULL;
  expr_error err;
  expr_code rc = expr_compile((const char *)data, src_len, &e, &err);
  FZ_CHECK(rc == err.code);
  if (rc != EXPR_OK) {
    FZ_CHECK(e == NULL);
    FZ_CHECK(rc == EXPR_E_SYNTAX || rc == EXPR_E_FUNC || rc == EXPR_E_ARGS ||
             rc == EXPR_E_REGEX || rc == EXPR_E_NOMEM);
    FZ_CHECK(err.msg[0] != '\0' && err.column >= 1 && err.column <= src_len + 1);
    return 0;
  }
  for (size_t i = 0; i < expr_atom_count(e); i++) {
    const expr_atom *a = expr_atom_get(e, i);
    FZ_CHECK(a->column >= 1 && a->column <= src_len && a->var_len > 0);
  }
  for (size_t i = 0; i < expr_var_count(e); i++) {
    size_t len;
    FZ_CHECK(expr_var_name(e, i, &len) != NULL);
  }

  expr_arena whole, streamed;
  expr_value full, part;
  expr_code frc = eval(e, &v, 0, &whole, &full);
  unsigned uses = expr_uses(e, "body", 4);
  if ((uses & ~(unsigned)EXPR_USE_ATOMS) == 0 && !draws_or_reads_clock(data, src_len)) {
    /* Answered without the body: the same outcome. The regex atoms are left
     * to the engine, which then needs the body: an error for the missing
     * variable is the one difference allowed. */
    v.with_body = 0;
    expr_code prc = eval(e, &v, 1, &streamed, &part);
    FZ_CHECK(prc == frc || prc == EXPR_E_VAR || frc == EXPR_E_LIMIT);
    if (prc == frc && frc == EXPR_OK)
      FZ_CHECK(same_value(&full, &part));
    expr_arena_free(&streamed);
    FZ_CHECK(streamed.used == 0);
  }
  expr_arena_free(&whole);
  FZ_CHECK(whole.used == 0);
  expr_free(e);
  return 0;
}
