/* scan's templates: the queries of json extractors (jq's syntax, libjq)
 * and of xpath extractors and matchers (XPath 1.0, libxml2), checked as
 * the template loads, so that one that cannot run skips the template with
 * its reason. A jq program that names what reads the environment, files
 * or an input stream (env, $ENV, input, include, ...) is refused, as its
 * values could go out in later requests. Once all templates are read,
 * every json query is compiled as one program (libjq 1.6 takes some 50 ms
 * per program, its builtins mostly, so one per query would cost seconds):
 * first in a child process (base-child.c), so that what the compiler does
 * with a stranger's text stays out of the scan, a failure found by halves
 * and its template skipped; then here, for the evaluation to run (each in
 * a child of its own, eval-json.c). An XPath expression is compiled here, and
 * run once over a small document so that a function libxml2 does not
 * have (XPath 2.0's) is found now rather than on every response. */
#include "tpl.h"

#include <ctype.h>
#include <jq.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NESTS_MAX 64             /* string interpolations one inside another */
#define JQ_QUERY  "__scan_query" /* the variable of the program of all queries */

/* The names of jq that reach outside the program and its input: calls,
 * and variables ($ENV), each between spaces. */
static const char CALLS[] = " env input inputs input_filename input_line_number debug stderr "
                            "halt halt_error import include modulemeta get_search_list "
                            "get_prog_origin get_jq_origin ";
static const char VARS[] = " ENV __loc__ __prog_args " JQ_QUERY " ";

static int outside(const char *name, size_t len, int variable)
{
  const char *names = variable ? VARS : CALLS;
  for (const char *p = strstr(names, " "); p && p[1]; p = strchr(p + 1, ' '))
    if (!strncmp(p + 1, name, len) && p[1 + len] == ' ')
      return 1;
  return 0;
}

/* Whether jq program text names what reaches outside (outside), or a
 * module (::): the name into why. Strings are skipped, not the code of
 * their interpolations \(...); a field (.env) is no call. *balanced:
 * whether its strings end and its brackets close in order of kind (a
 * program whose do not is no program). A dot between a term and a
 * bracket (.a.[0], jq 1.7's and gojq's) becomes a space, as jq 1.6 reads
 * .a[0]. */
static int refused(char *text, char *why, size_t cap, int *balanced)
{
  size_t opens[NESTS_MAX], nests = 0, depth = 0, square = 0, curly = 0;
  int in_string = 0, under = 0;
  for (char *p = text; *p; p++) {
    if (in_string) {
      if (p[0] == '\\' && p[1] == '(') {
        if (nests == NESTS_MAX)
          return snprintf(why, cap, "json: strings nested too deep"), 1;
        opens[nests++] = depth++;
        in_string = 0;
        p++;
      } else if (p[0] == '\\' && p[1]) {
        p++;
      } else if (*p == '"') {
        in_string = 0;
      }
      continue;
    }
    if (*p == '#') { /* a comment, to the line's end */
      p += strcspn(p, "\n");
      if (!*p)
        break;
      continue;
    }
    if (p[0] == '.' && p[1] == '[' && p > text &&
        (isalnum((unsigned char)p[-1]) || strchr("_])\"?", p[-1])))
      *p = ' '; /* jq 1.7's and gojq's .a.[0] is .a[0] to jq 1.6 */
    if (*p == '"')
      in_string = 1;
    else if (*p == '(')
      depth++;
    else if (*p == ')' && !depth)
      under = 1;
    else if (*p == ')' && --depth == (nests ? opens[nests - 1] : SIZE_MAX))
      nests--, in_string = 1;
    else if (*p == '[' || *p == '{')
      *(*p == '[' ? &square : &curly) += 1;
    else if (*p == ']' || *p == '}')
      under |= !(*p == ']' ? square-- : curly--);
    else if (p[0] == ':' && p[1] == ':')
      return snprintf(why, cap, "json: modules (::)"), 1;
    if (!isalpha((unsigned char)*p) && *p != '_')
      continue;
    const char *start = p, *before = p;
    while (isalnum((unsigned char)p[1]) || p[1] == '_')
      p++;
    while (before > text && (before[-1] == ' ' || before[-1] == '\t' || before[-1] == '\n'))
      before--;
    int field = start > text && start[-1] == '.', variable = before > text && before[-1] == '$';
    size_t len = (size_t)(p - start) + 1;
    if (!field && outside(start, len, variable))
      return snprintf(why, cap, "json: %s%.*s (reads outside the response)", variable ? "$" : "",
                      (int)len, start),
             1;
  }
  *balanced = !in_string && !under && !depth && !square && !curly && !nests;
  return 0;
}

/* jq's error message: its first line, without "jq: error: ". */
static void on_jq_error(void *ud, jv msg)
{
  int fd = *(int *)ud;
  if (fd < 0) {
    jv_free(msg);
    return;
  }
  jv text = jq_format_error(msg);
  if (jv_get_kind(text) == JV_KIND_STRING) {
    const char *s = jv_string_value(text);
    if (!strncmp(s, "jq: error: ", 11))
      s += 11;
    if (write(fd, s, strcspn(s, "\n")) < 0)
      s = NULL; /* the child's answer is then no message */
  }
  jv_free(text);
  *(int *)ud = -1; /* the first message only */
}

/* In the child: compiles the program; its first error to fd. */
static int jq_compiles(void *ud, int fd)
{
  jq_state *jq = jq_init();
  if (!jq)
    return 1;
  int err = fd;
  jq_set_error_cb(jq, on_jq_error, &err);
  int ok = jq_compile(jq, (const char *)ud);
  jq_teardown(&jq);
  return ok ? 0 : 1;
}

/* jq's message for program text, compiled alone in a child, into why;
 * "" when it compiles. */
static void jq_message(const char *text, char *why, size_t cap)
{
  char msg[160];
  int ok;
  ssize_t n = child_run(jq_compiles, (void *)text, msg, sizeof msg - 1, &ok);
  why[0] = '\0';
  if (n < 0)
    snprintf(why, cap, "json: no process to compile it");
  else if (!ok || n > 0)
    msg[n] = '\0', snprintf(why, cap, "json: %s", n ? msg : "not compiled within bounds");
}

/* As the template loads: what can be told of a jq program without
 * compiling it (tpl_json_compile compiles them all at once). */
static int check_jq(tpl_query *q, char *why, size_t cap)
{
  int balanced = 0;
  if (refused(q->text, why, cap, &balanced))
    return -1;
  if (!balanced) { /* jq says what is wrong */
    jq_message(q->text, why, cap);
    if (!why[0])
      snprintf(why, cap, "json: brackets or strings not closed");
    return -1;
  }
  return 0;
}

/* ---- All json queries as one program ------------------------------------- */

/* A json query of the templates: where it is. */
typedef struct json_ref {
  size_t tpl;
  tpl_query *q;
} json_ref;

/* Queries r[lo..hi) as one program: the query numbered $JQ_QUERY (its
 * index) over .[1], through a tree of comparisons; each query in its own
 * parentheses, on its own lines (a comment ends there). */
static void program_tree(line *out, const json_ref *r, size_t lo, size_t hi)
{
  if (hi - lo == 1) {
    puts_line(out, "(\n");
    puts_line(out, r[lo].q->text);
    puts_line(out, "\n)");
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  printf_line(out, "if $" JQ_QUERY " < %zu then ", r[mid].q->index);
  program_tree(out, r, lo, mid);
  puts_line(out, " else ");
  program_tree(out, r, mid, hi);
  puts_line(out, " end");
}

static char *program(const json_ref *r, size_t n)
{
  line out = {0};
  puts_line(&out, ".[0] as $" JQ_QUERY " | .[1] | ");
  program_tree(&out, r, 0, n);
  if (out.nomem) {
    free(out.p);
    return NULL;
  }
  return out.p;
}

/* Finds the queries of r[lo..hi) that do not compile, bisecting (each
 * query's brackets close, so the program compiles only when each does):
 * their reasons into why[] (NULL: compiles). 0, or -1 out of memory. */
static int failing(const json_ref *r, size_t lo, size_t hi, char **why)
{
  char *text = program(r + lo, hi - lo), reason[200];
  if (!text)
    return -1;
  jq_message(text, reason, sizeof reason);
  free(text);
  if (!reason[0])
    return 0;
  if (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    return failing(r, lo, mid, why) == 0 && failing(r, mid, hi, why) == 0 ? 0 : -1;
  }
  char alone[200];
  jq_message(r[lo].q->text, alone, sizeof alone); /* its own words, its own columns */
  return (why[lo] = strdup(alone[0] ? alone : reason)) ? 0 : -1;
}

/* The json queries of ts, numbered in order, into *out (NULL: none). */
static size_t json_refs(templates *ts, json_ref **out)
{
  size_t n = 0, k = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass && !(*out = calloc(n + 1, sizeof **out)))
      return SIZE_MAX;
    for (size_t t = 0; t < ts->n; t++)
      for (size_t r = 0; r < ts->t[t].nreqs; r++)
        for (size_t x = 0; x < ts->t[t].reqs[r].nextractors; x++) {
          tpl_extractor *e = &ts->t[t].reqs[r].extractors[x];
          for (size_t i = 0; e->type == TX_JSON && i < e->n; i++, n += !pass)
            if (pass)
              (*out)[k] = (json_ref){t, &e->queries[i]}, e->queries[i].index = k++;
        }
  }
  return n;
}

int tpl_json_compile(templates *ts)
{
  json_ref *r = NULL;
  size_t n = json_refs(ts, &r);
  char **why = n != SIZE_MAX ? calloc(n + 1, sizeof *why) : NULL;
  int rc = why && (!n || failing(r, 0, n, why) == 0) ? 0 : -1;
  /* The templates of the queries that fail are skipped, the last first
   * (the others keep their place). */
  for (size_t i = n, gone = SIZE_MAX; rc == 0 && i-- > 0;) {
    if (!why[i] || r[i].tpl == gone)
      continue;
    size_t first = i; /* once per template, with its first query's reason */
    for (size_t j = i; j-- > 0 && r[j].tpl == r[i].tpl;)
      first = why[j] ? j : first;
    rc = tpl_unload(ts, gone = r[i].tpl, why[first]);
  }
  for (size_t i = 0; why && i < n; i++)
    free(why[i]);
  free(why);
  free(r);
  if (rc != 0 || (n = json_refs(ts, &r)) == SIZE_MAX)
    return -1;
  char *text = n ? program(r, n) : NULL;
  jq_state *jq = text ? jq_init() : NULL;
  free(r);
  if (n && !jq) {
    free(text);
    return -1;
  }
  int err = -1; /* compiled in a child first: its errors are no output */
  if (jq)
    jq_set_error_cb(jq, on_jq_error, &err);
  if (jq && !jq_compile(jq, text)) {
    fputs("scan: the json queries, each of which compiles, do not compile together\n", stderr);
    jq_teardown(&jq);
    free(text);
    return -1;
  }
  free(text);
  ts->jq = jq;
  return 0;
}

void tpl_json_free(templates *ts)
{
  jq_state *jq = ts->jq;
  if (jq)
    jq_teardown(&jq);
  ts->jq = NULL;
}

/* What an XPath error says (libxml2's xmlXPathError, in its order; its
 * own texts are not exported). */
static const char *xpath_error(int code)
{
  static const char *const what[] = {"ok",
                                     "number",
                                     "unfinished literal",
                                     "literal",
                                     "variable reference",
                                     "undefined variable",
                                     "invalid predicate",
                                     "invalid expression",
                                     "missing closing",
                                     "unknown function",
                                     "invalid operand",
                                     "invalid type",
                                     "invalid number of arguments",
                                     "context size",
                                     "context position",
                                     "memory",
                                     "syntax",
                                     "resource",
                                     "sub resource",
                                     "undefined namespace prefix",
                                     "encoding",
                                     "invalid character",
                                     "invalid context",
                                     "stack",
                                     "forbidden variable",
                                     "too many operations",
                                     "too deeply nested"};
  code -= XML_XPATH_EXPRESSION_OK;
  return code > 0 && (size_t)code < sizeof what / sizeof *what ? what[code] : "not an expression";
}

/* The first XPath error, into the error its ud points to. */
static void on_xpath_error(void *ud, xmlErrorPtr e)
{
  xmlError *first = ud;
  if (!first->code && e)
    *first = (xmlError){.code = e->code, .int1 = e->int1};
}

/* libxml2's own messages (an unknown function's) go nowhere. */
static void silent(void *ud, const char *msg, ...)
{
  (void)ud;
  (void)msg;
}

/* Whether every function an XPath expression calls is one of libxml2's:
 * else the first other name into why. Literals are skipped; node tests
 * (text(), node(), ...) are no calls. */
static int functions_known(xmlXPathContextPtr ctx, const char *text, char *why, size_t cap)
{
  static const char *const tests[] = {"text", "node", "comment", "processing-instruction"};
  for (const char *p = text; *p; p++) {
    if (*p == '\'' || *p == '"') {
      const char *end = strchr(p + 1, *p);
      if (!end)
        return 1; /* the compiler says what is wrong */
      p = end;
      continue;
    }
    if (!isalpha((unsigned char)*p) && *p != '_')
      continue;
    const char *start = p;
    while (isalnum((unsigned char)p[1]) || (p[1] && strchr("_-.", p[1])) ||
           (p[1] == ':' && p[2] != ':' && p[0] != ':'))
      p++;
    const char *after = p + 1;
    while (*after == ' ' || *after == '\t' || *after == '\n')
      after++;
    size_t len = (size_t)(p - start) + 1;
    int test = 0;
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++)
      test |= strlen(tests[i]) == len && !memcmp(tests[i], start, len);
    if (*after != '(' || test || (start > text && (start[-1] == '@' || start[-1] == '$')))
      continue;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, start);
    if (len >= sizeof name || !xmlXPathFunctionLookup(ctx, (const xmlChar *)name))
      return snprintf(why, cap, "xpath: unknown function %s", name), 0;
  }
  return 1;
}

static int check_xpath(tpl_query *q, char *why, size_t cap)
{
  xmlError first = {0};
  xmlInitParser();
  xmlSetGenericErrorFunc(NULL, silent);
  xmlDocPtr doc = xmlNewDoc((const xmlChar *)"1.0");
  xmlNodePtr root = doc ? xmlNewNode(NULL, (const xmlChar *)"html") : NULL;
  xmlXPathContextPtr ctx = root ? xmlXPathNewContext(doc) : NULL;
  if (!ctx) {
    xmlFreeNode(root);
    xmlFreeDoc(doc);
    return why[0] = '\0', -1;
  }
  xmlDocSetRootElement(doc, root);
  ctx->error = on_xpath_error;
  ctx->userData = &first;
  ctx->opLimit = 1000;
  xmlXPathCompExprPtr e = xmlXPathCtxtCompile(ctx, (const xmlChar *)q->text);
  if (e && !functions_known(ctx, q->text, why, cap)) {
    xmlXPathFreeCompExpr(e);
    xmlXPathFreeContext(ctx);
    xmlFreeDoc(doc);
    return -1;
  }
  xmlXPathObjectPtr r = e ? xmlXPathCompiledEval(e, ctx) : NULL;
  int ok = r || (e && ctx->lastError.code == XML_XPATH_EXPRESSION_OK + XPATH_OP_LIMIT_EXCEEDED);
  xmlXPathFreeObject(r);
  xmlXPathFreeContext(ctx);
  xmlFreeDoc(doc);
  if (!ok) {
    xmlXPathFreeCompExpr(e);
    snprintf(why, cap, "xpath: %s at column %d", xpath_error(first.code), first.int1 + 1);
    return -1;
  }
  q->compiled = e;
  return 0;
}

int tpl_query_check(tpl_query *q, int xpath, char *why, size_t cap)
{
  return xpath ? check_xpath(q, why, cap) : check_jq(q, why, cap);
}

void tpl_query_free(tpl_query *q)
{
  free(q->text);
  xmlXPathFreeCompExpr(q->compiled);
  q->text = NULL;
  q->compiled = NULL;
}
