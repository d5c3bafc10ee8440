/* An engine for nuclei's expression language (the "DSL"): govaluate's
 * grammar with the function library of projectdiscovery/dsl, as nuclei's
 * dsl matchers, extractors, variables and {{...}} helpers use it. It knows
 * nothing of HTTP, curl or templates: the caller compiles a string, then
 * evaluates it with a callback that gives each variable's value.
 *
 *   expr *e;
 *   expr_error err;
 *   if (expr_compile(text, len, &e, &err) != EXPR_OK)
 *     printf("column %zu: %s\n", err.column, err.msg);
 *   expr_env env;
 *   expr_env_init(&env);
 *   env.lookup = my_lookup;
 *   expr_arena a;
 *   expr_arena_init(&a, 0);
 *   expr_value v;
 *   if (expr_eval(e, &env, &a, &v, &err) == EXPR_OK && expr_true(&v)) ...
 *   expr_arena_free(&a);
 *   expr_free(e);
 *
 * Values are nil, bool, number (a double, as govaluate's float64), string
 * (bytes with a length, NUL allowed, not terminated) and list (what split,
 * sort and uniq return, and (a, b) outside a call, for in). The rules are
 * govaluate's: + adds two numbers and joins as text when either side is a
 * string; < <= > >= take two numbers or two strings (bytes compared); == and
 * != are true only for the same type and value; && || ! take bools;
 * anything else is an evaluation error (EXPR_E_TYPE). A variable the
 * callback does not know is an evaluation error too (EXPR_E_VAR), as in
 * nuclei, where such a dsl expression does not match (its matcher fails
 * under the and condition; under or, that expression does not count).
 *
 * Hostile values (a repeat count, a length, a compressed bomb from a
 * response) never make it allocate without bound, loop for long, or read out
 * of bounds: every value it makes is at most env.max_len bytes, all values of
 * one arena at most its max_total, regexes run under PCRE2 match limits, and
 * wait_for sleeps at most env.max_wait_ms; past a cap, evaluation stops with
 * EXPR_E_LIMIT.
 *
 * The files: expr-lex.c (tokens), expr-parse.c (the tree), expr-walk.c
 * (variables, atoms, uses), expr-eval.c (operators, types), expr-value.c
 * (values, the arena, conversions), expr-func.c (the library by name) and
 * expr-func-*.c, one per family of functions; expr-func.c lists what the
 * library has and leaves out. Where it differs from nuclei on purpose or by
 * necessity: case mapping and trim sets are ASCII; regexes match bytes
 * (PCRE2, no UTF mode); gzip, zlib, deflate and zip make zlib's bytes,
 * which read back the same but differ from Go's; count returns a number
 * (Go's int, which govaluate would not compare with one); a wrong number of
 * arguments is a compile error (nuclei's is one at evaluation). */
#ifndef SCAN_EXPR_H
#define SCAN_EXPR_H

#include <stddef.h>
#include <stdint.h>

typedef enum expr_code {
  EXPR_OK = 0,
  EXPR_E_SYNTAX, /* compile: the text does not parse */
  EXPR_E_FUNC,   /* compile: no function of that name */
  EXPR_E_ARGS,   /* compile: wrong number of arguments */
  EXPR_E_NOMEM,  /* an allocation failed */
  EXPR_E_VAR,    /* eval: the lookup does not know the variable */
  EXPR_E_TYPE,   /* eval: an operator got values of the wrong types */
  EXPR_E_VALUE,  /* eval: a function refused its argument (bad base64, ...) */
  EXPR_E_REGEX,  /* compile or eval: PCRE2 refused a pattern, or hit its limits */
  EXPR_E_LIMIT   /* eval: a value or the arena would pass its cap */
} expr_code;

/* The caps' defaults (bytes, milliseconds). */
#define EXPR_MAX_LEN     (32u << 20)  /* one value */
#define EXPR_MAX_TOTAL   (128u << 20) /* all values of one arena */
#define EXPR_MAX_WAIT_MS 0u           /* wait_for does not sleep unless allowed */
#define EXPR_MAX_SOURCE  (64u << 10)  /* the text compile takes */
#define EXPR_MAX_DEPTH   200u         /* nesting of parentheses and calls */
#define EXPR_MAX_HEIGHT  1000u        /* of the tree (a chain a || b || ... too) */

typedef struct expr_error {
  expr_code code;
  size_t column; /* 1-based byte column in the source where it was found */
  char msg[200];
} expr_error;

typedef enum expr_type { EXPR_NIL, EXPR_BOOL, EXPR_NUM, EXPR_STR, EXPR_LIST } expr_type;

typedef struct expr_value expr_value;
struct expr_value {
  expr_type type;
  union {
    int b;
    double num;
    struct {
      const char *ptr;
      size_t len;
    } str;
    struct {
      const expr_value *items;
      size_t n;
    } list;
  } u;
};

expr_value expr_nil(void);
expr_value expr_bool(int b);
expr_value expr_num(double n);
expr_value expr_str(const char *ptr, size_t len); /* borrows ptr */

/* Whether v is the bool true: what a dsl matcher counts as a match. */
int expr_true(const expr_value *v);

/* The values made by one or more evaluations, freed together. */
typedef struct expr_arena {
  void *blocks;     /* internal */
  size_t used;      /* bytes handed out */
  size_t max_total; /* cap on used; 0 at init means EXPR_MAX_TOTAL */
} expr_arena;

void expr_arena_init(expr_arena *a, size_t max_total);
void expr_arena_free(expr_arena *a); /* then it may be used again */

/* Where evaluation gets variables and what it may do. lookup sets *out and
 * returns 1, or returns 0 for a variable it does not know; the value it
 * gives must stay valid during expr_eval (it is not copied). */
typedef struct expr_env {
  int (*lookup)(void *ud, const char *name, size_t len, expr_value *out);
  void *ud;
  /* Optional, for a caller that streams: the result of atom i (see
   * expr_atom_get), 1 = matched, 0 = not, -1 = not known (then the call is
   * evaluated). */
  int (*atom)(void *ud, size_t index);
  /* Optional: the length of a variable's value without the value (for
   * len(body) when the body was not kept); returns 1 and sets *len, or 0. */
  int (*length)(void *ud, const char *name, size_t len, size_t *out);
  /* Optional: random bits for rand_*; NULL uses the engine's own (getrandom). */
  uint64_t (*random)(void *ud);
  size_t max_len;       /* 0 at init means EXPR_MAX_LEN */
  unsigned max_wait_ms; /* what wait_for may sleep in all */
} expr_env;

void expr_env_init(expr_env *env);

typedef struct expr expr;

/* Compiles src[0..len) (at most EXPR_MAX_SOURCE bytes). On error, returns
 * it, *out is NULL and err (if not NULL) says what and where. Regex
 * literals (=~, regex's first argument) are compiled here. */
expr_code expr_compile(const char *src, size_t len, expr **out, expr_error *err);
void expr_free(expr *e);

/* Evaluates e; *out's strings live in a until expr_arena_free, or are
 * e's own literals (valid until expr_free), or the lookup's values. On
 * error, *out is nil and err says what and where. One compiled expression
 * may be evaluated by several threads at once, each with its own arena. */
expr_code expr_eval(const expr *e, const expr_env *env, expr_arena *a, expr_value *out,
                    expr_error *err);

/* v as text, as nuclei writes the result of {{...}} into a request (the
 * DSL's toString): numbers in full (1e6 is 1000000), nil as "", bools as
 * true/false, lists as [a b]. A string is itself; other text is made in a. */
expr_code expr_text(const expr_value *v, expr_arena *a, expr_value *out, expr_error *err);

/* The variables e reads, each once, in order of first appearance. */
size_t expr_var_count(const expr *e);
const char *expr_var_name(const expr *e, size_t i, size_t *len);

/* An atom: a test of one literal over one variable that a streaming matcher
 * can answer without keeping the value: contains(v, "lit"), each literal of
 * contains_all/contains_any(v, ...), regex("lit", v), and the same with v
 * written tolower(v) or to_lower(v) (lower = 1: the test is over the value
 * in ASCII lower case). A regex atom means what regex() does: PCRE2 over
 * bytes, $ at the very end only. Atoms are numbered in the order of the
 * text; the atoms of one call are consecutive. */
typedef enum expr_atom_kind { EXPR_ATOM_WORD, EXPR_ATOM_REGEX } expr_atom_kind;

typedef struct expr_atom {
  expr_atom_kind kind;
  int lower;
  const char *var; /* the variable's name */
  size_t var_len;
  const char *lit; /* the literal: the word, or the regex's text */
  size_t lit_len;
  size_t column; /* of the call */
} expr_atom;

size_t expr_atom_count(const expr *e);
const expr_atom *expr_atom_get(const expr *e, size_t i);

/* How e uses a variable's value. */
enum {
  EXPR_USE_ATOMS = 1, /* in atoms */
  EXPR_USE_LEN = 2,   /* as len(v) */
  EXPR_USE_WHOLE = 4  /* anywhere else: the whole value is needed */
};
unsigned expr_uses(const expr *e, const char *name, size_t len);

/* Whether e calls functions: EXPR_CALLS when it calls any, with
 * EXPR_CALLS_VOLATILE when one gives another value at each evaluation
 * (rand_*, unix_time, date_time without a time, wait_for). */
enum { EXPR_CALLS = 1, EXPR_CALLS_VOLATILE = 2 };
unsigned expr_calls(const expr *e);

const char *expr_strcode(expr_code c);

/* v as text the way Go's fmt.Sprint prints it (what a dsl extractor
 * reports): strings as they are, numbers as %v (200, 1.5, 1e+06), true,
 * false, <nil>, lists as [a b]; into *out, in a when made. */
expr_code expr_format(const expr_value *v, expr_arena *a, expr_value *out);

#endif
