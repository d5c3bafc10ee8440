/* scan's templates: the queries of json extractors (jq's syntax, libjq)
 * and of xpath extractors and matchers (XPath 1.0, libxml2), checked as
 * the template loads, so that one that cannot run skips the template with
 * its reason. A jq program is compiled in a child process (base-child.c):
 * what the compiler does with a stranger's text stays out of the scan; a
 * program that names what reads the environment, files or an input
 * stream (env, $ENV, input, include, ...) is refused, as its values could
 * go out in later requests. An XPath expression is compiled here, and
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

#define NESTS_MAX 64 /* string interpolations one inside another */

/* The names of jq that reach outside the program and its input: calls,
 * and variables ($ENV), each between spaces. */
static const char CALLS[] = " env input inputs input_filename input_line_number debug stderr "
                            "halt halt_error import include modulemeta get_search_list "
                            "get_prog_origin get_jq_origin ";
static const char VARS[] = " ENV __loc__ __prog_args ";

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
 * their interpolations \(...); a field (.env) is no call. */
static int refused(const char *text, char *why, size_t cap)
{
  size_t opens[NESTS_MAX], nests = 0, depth = 0;
  int in_string = 0;
  for (const char *p = text; *p; p++) {
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
    if (*p == '"')
      in_string = 1;
    else if (*p == '(')
      depth++;
    else if (*p == ')' && depth && --depth == (nests ? opens[nests - 1] : SIZE_MAX))
      nests--, in_string = 1;
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

static int check_jq(tpl_query *q, char *why, size_t cap)
{
  char msg[160];
  int ok;
  if (refused(q->text, why, cap))
    return -1;
  ssize_t n = child_run(jq_compiles, q->text, msg, sizeof msg - 1, &ok);
  if (n < 0)
    return snprintf(why, cap, "json: no process to compile it"), -1;
  if (ok && n == 0)
    return 0;
  msg[n] = '\0';
  snprintf(why, cap, "json: %s", n ? msg : "not compiled within bounds");
  return -1;
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
