/* scan's templates: a template's flow: (nuclei's JavaScript that decides
 * which of its blocks run, and in what order), the part of the language
 * such flows are written in: http(N) (block N of http:, from 1) or
 * http("id") (the block of that id:, else of that number), &&, ||,
 * !, parentheses, statements one after another (a ';' or a line break
 * between) and if (...) ... else .... Compiled into steps, one per
 * http(N) in the text, each saying which step comes next when its block
 * was true and when it was false, as JavaScript's short-circuit does: in
 * http(1) && http(2), block 2 runs only when block 1 was true. A
 * statement's value decides nothing: the next statement runs whatever it
 * was. Anything else of JavaScript (set(), template.x, loops, functions)
 * makes the template skipped, with its line and column. */
#include "tpl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_STEPS_MAX 64 /* http(N) calls of one flow, at most */
#define FLOW_NODES_MAX (4 * FLOW_STEPS_MAX)
#define FLOW_DEPTH_MAX 32 /* parentheses and bodies within each other */
#define NONE           SIZE_MAX
#define NOT_RUN        "scan runs only http(...), &&, ||, !, if and else"

typedef enum kind { CALL, AND, OR, NOT, IF } kind;

/* A node of the program: a call (step: its step), an operator over a and
 * b, or if (a) b else c (b, c: lists of statements, NONE: empty). next:
 * the statement after it in its list. */
typedef struct node {
  kind k;
  size_t a, b, c, next, step;
} node;

typedef struct parser {
  const char *text, *at;
  int newline; /* a line break before the token at */
  const tpl *t;
  node nodes[FLOW_NODES_MAX];
  size_t nnodes;
  tpl_flow_step *steps;
  size_t nsteps;
  unsigned depth;
  char *why;
  size_t cap;
} parser;

/* ---- Tokens ------------------------------------------------------------- */

/* Past blanks, line breaks and comments to the next token. */
static void blanks(parser *p)
{
  p->newline = 0;
  for (;;) {
    if (*p->at == '\n')
      p->newline = 1;
    if (isspace((unsigned char)*p->at))
      p->at++;
    else if (p->at[0] == '/' && p->at[1] == '/')
      p->at += strcspn(p->at, "\n");
    else if (p->at[0] == '/' && p->at[1] == '*' && strstr(p->at + 2, "*/")) {
      const char *end = strstr(p->at + 2, "*/");
      p->newline |= memchr(p->at, '\n', (size_t)(end - p->at)) != NULL;
      p->at = end + 2;
    } else
      return;
  }
}

/* Whether the token at is s (an operator, or a whole word): past it. */
static int take(parser *p, const char *s)
{
  size_t n = strlen(s);
  if (strncmp(p->at, s, n) ||
      (isalpha((unsigned char)*s) && (isalnum((unsigned char)p->at[n]) || p->at[n] == '_')))
    return 0;
  p->at += n;
  blanks(p);
  return 1;
}

/* The template is skipped: why, at the token at. */
static int refuse(parser *p, const char *what)
{
  size_t len = strcspn(p->at, " \t\r\n(){};");
  if (!len && *p->at)
    len = 1;
  if (!*p->at)
    snprintf(p->why, p->cap, "flow: %s at its end", what);
  else if (strchr(p->text, '\n') && strchr(p->text, '\n')[1]) { /* lines */
    size_t row = 1;
    const char *start = p->text;
    for (const char *c = p->text; c < p->at; c++)
      if (*c == '\n')
        row++, start = c + 1;
    snprintf(p->why, p->cap, "flow: line %zu, column %zu: %.*s: %s", row,
             (size_t)(p->at - start) + 1, (int)(len < 24 ? len : 24), p->at, what);
  } else
    snprintf(p->why, p->cap, "flow: column %zu: %.*s: %s", (size_t)(p->at - p->text) + 1,
             (int)(len < 24 ? len : 24), p->at, what);
  return -1;
}

/* A new node (NONE, refused, when there are too many). */
static size_t new_node(parser *p, kind k, size_t a, size_t b)
{
  if (p->nnodes == FLOW_NODES_MAX)
    return refuse(p, "too long"), NONE;
  p->nodes[p->nnodes] = (node){k, a, b, NONE, NONE, NONE};
  return p->nnodes++;
}

/* ---- Expressions -------------------------------------------------------- */

static size_t expression(parser *p);

/* The block of http("name") (in quotes q) into *block: the block whose
 * id: it is, else the block of that number, else TPL_FLOW_NONE (nuclei's
 * call then is false); past the quotes. 0, or -1 without a closing
 * quote. */
static int named_block(parser *p, char q, size_t *block)
{
  const char *name = p->at + 1;
  size_t len = strcspn(name, q == '"' ? "\"\n" : "'\n");
  if (name[len] != q)
    return -1;
  p->at = name + len + 1;
  blanks(p);
  const tpl *t = p->t;
  for (size_t i = 0; i < t->nreqs; i++)
    if (t->reqs[i].id && strlen(t->reqs[i].id) == len && !memcmp(t->reqs[i].id, name, len)) {
      *block = i;
      return 0;
    }
  unsigned long n = 0;
  for (size_t i = 0; i < len && n < 100000; i++)
    n = isdigit((unsigned char)name[i]) ? n * 10 + (unsigned long)(name[i] - '0') : 100000;
  *block = len && n >= 1 && n <= t->nreqs ? n - 1 : TPL_FLOW_NONE;
  return 0;
}

/* http(N) or http("id"): a step of block N - 1, or of the block of that
 * id (TPL_FLOW_NONE when the template has no such block: nuclei's call
 * then is false). */
static size_t call(parser *p)
{
  if (!take(p, "http") || !take(p, "("))
    return refuse(p, NOT_RUN), NONE;
  size_t block = TPL_FLOW_NONE;
  if (*p->at == '"' || *p->at == '\'') {
    if (named_block(p, *p->at, &block) != 0)
      return refuse(p, "no closing quote"), NONE;
  } else if (isdigit((unsigned char)*p->at)) {
    unsigned long n = 0;
    while (isdigit((unsigned char)*p->at) && n < 100000)
      n = n * 10 + (unsigned long)(*p->at++ - '0');
    blanks(p);
    block = n >= 1 && n <= p->t->nreqs ? n - 1 : TPL_FLOW_NONE;
  } else
    return refuse(p, "not a block's number or id"), NONE;
  if (!take(p, ")"))
    return refuse(p, "not a block's number or id"), NONE;
  if (p->nsteps == FLOW_STEPS_MAX)
    return refuse(p, "more than 64 blocks run"), NONE;
  size_t i = new_node(p, CALL, NONE, NONE);
  if (i == NONE)
    return NONE;
  p->nodes[i].step = p->nsteps;
  p->steps[p->nsteps++].block = block;
  return i;
}

static size_t unary(parser *p)
{
  if (p->depth >= FLOW_DEPTH_MAX)
    return refuse(p, "nested too deep"), NONE;
  p->depth++;
  size_t i;
  if (take(p, "!")) {
    i = unary(p);
    i = i == NONE ? NONE : new_node(p, NOT, i, NONE);
  } else if (take(p, "(")) {
    i = expression(p);
    if (i != NONE && !take(p, ")")) {
      refuse(p, "no ')'");
      i = NONE;
    }
  } else
    i = call(p);
  p->depth--;
  return i;
}

/* a op b op ...: op's operands are what next reads. */
static size_t chain(parser *p, const char *op, kind k, size_t (*next)(parser *))
{
  size_t i = next(p);
  while (i != NONE && take(p, op)) {
    size_t b = next(p);
    i = b == NONE ? NONE : new_node(p, k, i, b);
  }
  return i;
}

static size_t conjunction(parser *p) { return chain(p, "&&", AND, unary); }

static size_t expression(parser *p) { return chain(p, "||", OR, conjunction); }

/* ---- Statements --------------------------------------------------------- */

static int statement(parser *p, size_t *i);
static int statements(parser *p, char end, size_t *head);

/* The body of an if or an else: { statements } or one statement. */
static int body(parser *p, size_t *head)
{
  if (p->depth >= FLOW_DEPTH_MAX)
    return refuse(p, "nested too deep");
  p->depth++;
  int rc;
  if (take(p, "{")) {
    rc = statements(p, '}', head);
    if (rc == 0 && !take(p, "}"))
      rc = refuse(p, "no '}'");
  } else
    rc = *p->at && *p->at != '}' ? statement(p, head) : refuse(p, "no statement");
  p->depth--;
  return rc;
}

/* One statement into *i (NONE: an empty one). */
static int statement(parser *p, size_t *i)
{
  *i = NONE;
  if (take(p, ";"))
    return 0;
  if (take(p, "if")) {
    size_t cond = NONE, yes = NONE, no = NONE;
    if (!take(p, "("))
      return refuse(p, "no '(' after if");
    if ((cond = expression(p)) == NONE)
      return -1;
    if (!take(p, ")"))
      return refuse(p, "no ')'");
    if (body(p, &yes) || (take(p, "else") && body(p, &no)))
      return -1;
    if ((*i = new_node(p, IF, cond, yes)) == NONE)
      return -1;
    p->nodes[*i].c = no;
    return 0;
  }
  if ((*i = expression(p)) == NONE)
    return -1;
  /* JavaScript ends a statement at a ';', a line break, '}' or the end. */
  if (take(p, ";") || p->newline || !*p->at || *p->at == '}')
    return 0;
  return refuse(p, NOT_RUN);
}

/* Statements up to the character end (0: the text's end), linked from
 * *head. */
static int statements(parser *p, char end, size_t *head)
{
  size_t *link = head;
  *head = NONE;
  while (*p->at && *p->at != end) {
    size_t i;
    if (statement(p, &i) != 0)
      return -1;
    if (i != NONE) {
      *link = i;
      link = &p->nodes[i].next;
    }
  }
  return *p->at == end ? 0 : refuse(p, NOT_RUN);
}

/* ---- Steps -------------------------------------------------------------- */

/* The first step node i runs; list: of the statements from i, the end
 * (after) when there are none. */
static size_t first(const parser *p, size_t i)
{
  while (p->nodes[i].k != CALL)
    i = p->nodes[i].a;
  return p->nodes[i].step;
}

static size_t first_of(const parser *p, size_t list, size_t after)
{
  return list == NONE ? after : first(p, list);
}

/* Node i's steps: after it, yes when it was true, no when false. */
static void steps_of(parser *p, size_t i, size_t yes, size_t no)
{
  const node *n = &p->nodes[i];
  switch (n->k) {
  case CALL: p->steps[n->step].yes = yes, p->steps[n->step].no = no; break;
  case AND: steps_of(p, n->a, first(p, n->b), no), steps_of(p, n->b, yes, no); break;
  case OR: steps_of(p, n->a, yes, first(p, n->b)), steps_of(p, n->b, yes, no); break;
  case NOT: steps_of(p, n->a, no, yes); break;
  case IF: break; /* a statement: list_steps */
  }
}

/* The statements from list, followed by step after. */
static void list_steps(parser *p, size_t list, size_t after)
{
  for (size_t i = list; i != NONE; i = p->nodes[i].next) {
    size_t then = first_of(p, p->nodes[i].next, after);
    const node *n = &p->nodes[i];
    if (n->k == IF) {
      steps_of(p, n->a, first_of(p, n->b, then), first_of(p, n->c, then));
      list_steps(p, n->b, then);
      list_steps(p, n->c, then);
    } else
      steps_of(p, i, then, then);
  }
}

int tpl_flow_compile(tpl *t, const char *text, char *why, size_t cap)
{
  parser *p = calloc(1, sizeof *p);
  tpl_flow *f = calloc(1, sizeof *f);
  tpl_flow_step *steps = calloc(FLOW_STEPS_MAX, sizeof *steps);
  if (!p || !f || !steps) {
    free(p), free(f), free(steps);
    return -2;
  }
  *p = (parser){.text = text, .at = text, .t = t, .steps = steps, .why = why, .cap = cap};
  blanks(p);
  size_t list;
  int rc = statements(p, 0, &list);
  if (rc == 0 && !p->nsteps)
    rc = -1, snprintf(why, cap, "flow: runs no http(N)");
  if (rc == 0) {
    list_steps(p, list, p->nsteps);
    f->steps = steps;
    f->n = p->nsteps;
    t->flow = f;
  } else
    free(f), free(steps);
  free(p);
  return rc;
}

void tpl_flow_free(tpl *t)
{
  if (t->flow)
    free(t->flow->steps);
  free(t->flow);
  t->flow = NULL;
}
