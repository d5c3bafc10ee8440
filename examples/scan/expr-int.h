/* The expression engine's insides, shared by its files (expr-*.c): the
 * tree the parser builds, the function tables, the evaluation context with
 * its capped allocations, and the conversions every function uses. Nothing
 * outside the engine includes it. */
#ifndef SCAN_EXPR_INT_H
#define SCAN_EXPR_INT_H

#include "expr.h"

#include <stdarg.h>

/* ---- Tokens (expr-lex.c). */
typedef enum tok_kind {
  T_END,
  T_NUM,
  T_STR,
  T_IDENT, /* a name: variable, function, true/false, in */
  T_OP,    /* an operator symbol, in tok.op */
  T_LPAREN,
  T_RPAREN,
  T_COMMA
} tok_kind;

typedef enum op {
  OP_NONE,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_MOD,
  OP_POW,
  OP_EQ,
  OP_NE,
  OP_LT,
  OP_LE,
  OP_GT,
  OP_GE,
  OP_REQ,
  OP_NREQ,
  OP_IN,
  OP_AND,
  OP_OR,
  OP_BAND,
  OP_BOR,
  OP_BXOR,
  OP_SHL,
  OP_SHR,
  OP_NEG,
  OP_NOT,
  OP_BNOT,
  OP_TIF,
  OP_TELSE,
  OP_COALESCE
} op;

typedef struct tok {
  tok_kind kind;
  op op;
  size_t col; /* 1-based */
  char *text; /* T_STR (unescaped), T_IDENT: malloc'd, owned by the token */
  size_t len;
  double num; /* T_NUM, or T_STR that reads as a time (is_time) */
  int is_time;
} tok;

typedef struct lexer {
  const char *src;
  size_t len, pos;
  int after_value; /* the last token ends a value: '-' is then binary */
} lexer;

/* The next token; on error returns it with err set. */
expr_code expr__lex(lexer *lx, tok *t, expr_error *err);
void expr__tok_free(tok *t);
/* A quoted string that govaluate reads as a date: its Unix time (local). */
int expr__lex_time(const char *s, size_t len, double *out);

/* ---- The tree (expr-parse.c). */
typedef enum node_kind { N_LIT, N_VAR, N_CALL, N_UNARY, N_BINARY, N_LIST } node_kind;

struct expr_ctx;
typedef expr_code (*expr_fnimpl)(struct expr_ctx *c, const expr_value *args, size_t n,
                                 expr_value *out);

typedef struct expr_fn {
  const char *name;
  int min, max; /* argument counts; max -1: any */
  expr_fnimpl fn;
  int mode; /* what fn does, for one fn serving several names */
} expr_fn;

typedef struct node node;
struct node {
  node_kind kind;
  op op;
  size_t col;
  expr_value lit; /* N_LIT */
  char *text;     /* N_LIT string bytes, N_VAR name: owned */
  size_t text_len;
  const expr_fn *fn; /* N_CALL */
  node **kids;       /* arguments, operands, list items */
  size_t nkids;
  void *re;            /* a literal pattern, compiled (pcre2_code) */
  size_t atom, natoms; /* the atoms this call is made of */
  unsigned use;        /* N_VAR: EXPR_USE_* of this occurrence */
  unsigned height;     /* 1 for a leaf, else 1 + its highest kid's */
};

struct expr {
  node *root;
  char **vars; /* borrowed from N_VAR nodes */
  size_t *var_lens, nvars;
  expr_atom *atoms;
  size_t natoms;
};

/* The function of that name (or of that name without its underscores, as
 * the DSL also accepts: tolower, base64decode), or NULL. */
const expr_fn *expr__fn_find(const char *name, size_t len);
extern const expr_fn expr__fn_strings[], expr__fn_codings[], expr__fn_hashes[], expr__fn_numbers[],
    expr__fn_time[], expr__fn_versions[], expr__fn_regex[], expr__fn_zlib[], expr__fn_random[],
    expr__fn_json[], expr__fn_jwt[];

/* Atoms and variables, found once the tree is built (expr-walk.c). */
expr_code expr__walk(expr *e, expr_error *err);
void expr__node_free(node *n);

/* ---- Evaluation (expr-eval.c) and its context. */
typedef struct expr_ctx {
  const expr_env *env;
  expr_arena *a;
  expr_error *err;
  size_t col; /* of the node being evaluated, for errors */
  size_t max_len;
  unsigned waited_ms; /* what wait_for slept so far */
  const node *call;   /* the call being made */
} expr_ctx;

/* The mode of the function being called (expr_fn.mode). */
static inline int expr__mode(const expr_ctx *c) { return c->call->fn->mode; }

expr_code expr__fail(expr_ctx *c, expr_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fills err (when not NULL). */
void expr__error(expr_error *err, expr_code code, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* n bytes from the arena (n <= max_len), or NULL with the error set. */
char *expr__alloc(expr_ctx *c, size_t n);
expr_value *expr__alloc_list(expr_ctx *c, size_t n);
/* A copy of p[0..n) in the arena, as *out. */
expr_code expr__copy(expr_ctx *c, const char *p, size_t n, expr_value *out);

/* A growing string that becomes an arena value (capped at max_len). */
typedef struct sbuf {
  expr_ctx *c;
  char *block; /* header + bytes */
  size_t len, cap;
  expr_code rc;
} sbuf;

void expr__sb_init(sbuf *b, expr_ctx *c);
void expr__sb_add(sbuf *b, const void *p, size_t n);
void expr__sb_addc(sbuf *b, char ch);
void expr__sb_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The bytes so far (not terminated), NULL when empty. */
char *expr__sb_ptr(sbuf *b);
/* The string made, or the error that stopped it; b is spent. */
expr_code expr__sb_done(sbuf *b, expr_value *out);

/* ---- Conversions (expr-value.c). */
/* The DSL's toString: nil "", true/false, numbers as Go's 'f' shortest
 * (1e+06 prints 1000000), strings as they are, lists as [a b]. */
expr_code expr__str(expr_ctx *c, const expr_value *v, expr_value *out);
/* govaluate's %v, for string +: nil is <nil>, numbers as Go's %v (1e+06). */
expr_code expr__str_v(expr_ctx *c, const expr_value *v, expr_value *out);
/* Formats a number: gstyle 0 as Go's 'f' with the shortest digits, 1 as %v. */
size_t expr__fmt_num(double d, int gstyle, char buf[64]);
/* The DSL's toInt: a number (truncated) or a string that parses as one
 * (integral); 0 when it is neither or out of range. */
int expr__to_int(const expr_value *v, long long *out);
/* Go's strconv.Atoi of the DSL's toString of v. */
int expr__atoi(const expr_value *v, long long *out);
/* Whether s[0..n) is a number as strtod reads it, whole; into *out. */
int expr__parse_double(const char *s, size_t n, double *out);
/* The DSL's toBool. */
int expr__to_bool(const expr_value *v);
/* govaluate's == (same type and value). */
int expr__equal(const expr_value *a, const expr_value *b);
/* Whether [p, p+n) is the bytes of s (a C string). */
int expr__is(const expr_value *v, const char *s);
/* Args 0..n as strings, into out[] (each converted with expr__str). */
expr_code expr__strs(expr_ctx *c, const expr_value *args, size_t n, expr_value *out);
/* The same, with b started for the string a function builds of them. */
expr_code expr__strs_sb(expr_ctx *c, const expr_value *args, size_t n, expr_value *out, sbuf *b);
/* v as an integer (expr__to_int) into *out; else EXPR_E_VALUE, what
 * saying which argument of which function ("wait_for: bad seconds"). */
expr_code expr__int(expr_ctx *c, const expr_value *v, long long *out, const char *what);

/* a in standard base64 (expr-func-codings.c). */
expr_code expr__base64(expr_ctx *c, const expr_value *a, expr_value *out);
/* A JSON object's text as Go marshals it again (expr-func-json.c). */
expr_code expr__json_minify(expr_ctx *c, const expr_value *a, expr_value *out);

/* ---- Regexes (expr-func-regex.c): PCRE2, bytes, no UTF. */
void *expr__re_compile(const char *p, size_t n, char *msg, size_t cap, size_t *at);
void expr__re_free(void *re);
/* 1 match, 0 none, or -1 with the error set (match limits). */
int expr__re_match(expr_ctx *c, void *re, const char *s, size_t n);
/* The pattern of v compiled, using pre when the pattern was a literal. */
expr_code expr__re_get(expr_ctx *c, const expr_value *v, void *pre, void **re, int *owned);

/* Byte-string helpers. */
const char *expr__memmem(const char *h, size_t hn, const char *n, size_t nn);

#endif
