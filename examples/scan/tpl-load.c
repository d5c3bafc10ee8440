/* scan's templates (-t): reads one template file of nuclei's format with
 * libyaml into the model of tpl.h, the subset scan runs (scan(1),
 * TEMPLATES). A template with anything else is skipped, with the reason. */
#include "tpl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define REASON_MAX 200

/* One template being read: its document, and why it is skipped. */
typedef struct reader {
  yaml_document_t doc;
  const templates *ts; /* where it goes: the -var names */
  const char *path;    /* the template's file */
  char reason[REASON_MAX]; /* "" while none */
  int nomem;
  int waits; /* loaded whole, skipped only as its payloads are not run yet */
  size_t payload_left; /* bytes its payloads' values may still take */
} reader;

/* Records why the template is skipped (the first reason found). */
static int skip(reader *r, const char *what, const char *arg)
{
  if (!r->reason[0])
    snprintf(r->reason, sizeof r->reason, "%s%s%s", what, arg ? ": " : "", arg ? arg : "");
  return -1;
}

/* The reason as one line of --validate's list: its control bytes (a key
 * or an expression of several lines) shown as spaces. */
static void one_line(char *reason)
{
  for (char *c = reason; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      *c = ' ';
}

static yaml_node_t *node(reader *r, int id) { return yaml_document_get_node(&r->doc, id); }

static const char *scalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static char *dup(reader *r, const char *s)
{
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    r->nomem = 1;
  return d;
}

static int truthy(const char *s)
{
  return s && (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "True"));
}

static void free_strings(char **s, size_t n);

/* A scalar, or a sequence of scalars, as an array of new strings; on
 * failure nothing (*out NULL, *count 0). */
static int strings(reader *r, yaml_node_t *n, char ***out, size_t *count)
{
  size_t cap = n && n->type == YAML_SEQUENCE_NODE
                   ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
                   : 1;
  *out = NULL;
  *count = 0;
  if (!n || (n->type != YAML_SCALAR_NODE && n->type != YAML_SEQUENCE_NODE))
    return skip(r, "not a list of strings", NULL);
  if (!(*out = calloc(cap + 1, sizeof **out)))
    return r->nomem = 1, -1;
  int failed = 0;
  if (n->type == YAML_SCALAR_NODE)
    failed = !((*out)[(*count)++] = dup(r, scalar(n)));
  else
    for (yaml_node_item_t *i = n->data.sequence.items.start;
         !failed && i < n->data.sequence.items.top; i++) {
      const char *s = scalar(node(r, *i));
      failed = s ? !((*out)[(*count)++] = dup(r, s)) : skip(r, "not a list of strings", NULL);
    }
  if (failed) {
    free_strings(*out, *count);
    *out = NULL;
    *count = 0;
    return -1;
  }
  return 0;
}

/* Numbers (status, size). */
static int numbers(reader *r, yaml_node_t *n, long **out, size_t *count)
{
  char **s;
  if (strings(r, n, &s, count) != 0)
    return -1;
  *out = calloc(*count + 1, sizeof **out);
  int bad = !*out;
  for (size_t i = 0; i < *count; i++) {
    char *end;
    if (*out)
      (*out)[i] = strtol(s[i], &end, 10);
    bad |= !*out || *end || end == s[i];
    free(s[i]);
  }
  free(s);
  return bad ? skip(r, "not a list of numbers", NULL) : 0;
}

/* A header's name as parts and kval name it: lower case, '_' as '-'. */
static void header_name(char *p)
{
  for (; *p; p++)
    *p = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
}

/* Whether part s is X_N, X a response variable or a header's name:
 * response N's (tpl_seq_check checks N). */
static int indexed_var(const char *s)
{
  size_t base;
  unsigned long n;
  return tpl_indexed(s, strlen(s), &base, &n) && strncmp(s, "interactsh", 10) &&
         !(base == 7 && !strncmp(s, "request", 7)) && !(base == 3 && !strncmp(s, "raw", 3));
}

/* A part: body, header, all, or a header name (lower case, '_' as '-'). */
static int take_part(reader *r, const char *s, tpl_part *where, char **header)
{
  if (!s || !strcmp(s, "body"))
    *where = TP_BODY;
  else if (!strcmp(s, "header") || !strcmp(s, "all_headers"))
    *where = TP_HEADER;
  else if (!strcmp(s, "all") || !strcmp(s, "response"))
    *where = TP_ALL; /* nuclei's response is the header block, then the body */
  else if (tpl_response_var(s, strlen(s)) || indexed_var(s)) {
    *where = TP_VAR;
    if (!(*header = dup(r, s)))
      return -1;
  } else if (!strcmp(s, "raw") || !strcmp(s, "request") ||
           !strcmp(s, "interactsh_protocol") || !strcmp(s, "interactsh_request") ||
           !strncmp(s, "body_", 5) || !strncmp(s, "header_", 7) || strchr(s, '.'))
    return skip(r, "part", s);
  else {
    *where = TP_NAMED;
    if (!(*header = dup(r, s)))
      return -1;
    header_name(*header);
  }
  return 0;
}

/* Compiles texts into regexes. */
static int regexes(reader *r, yaml_node_t *n, regex **out, size_t *count)
{
  char **texts;
  if (strings(r, n, &texts, count) != 0)
    return -1;
  int failed = !(*out = calloc(*count + 1, sizeof **out));
  for (size_t i = 0; i < *count; i++) {
    char msg[160];
    if (!failed && regex_compile(&(*out)[i], texts[i], msg, sizeof msg) != 0) {
      skip(r, "regex", msg);
      failed = 1;
    }
    if (failed) { /* else the regex keeps its text (regex_compile) */
      (*out)[i].text = NULL;
      free(texts[i]);
    }
  }
  free(texts);
  return failed ? -1 : 0;
}

/* Checks texts as jq programs (xpath 0) or XPath expressions (1). */
static int queries(reader *r, yaml_node_t *n, int xpath, tpl_query **out, size_t *count)
{
  char **texts;
  if (strings(r, n, &texts, count) != 0)
    return -1;
  int failed = !(*out = calloc(*count + 1, sizeof **out));
  r->nomem |= failed;
  for (size_t i = 0; i < *count; i++) {
    char why[REASON_MAX];
    (*out)[i].text = texts[i];
    if (!failed && tpl_query_check(&(*out)[i], xpath, why, sizeof why) != 0) {
      r->nomem |= !why[0];
      skip(r, why, NULL);
      failed = 1;
    }
  }
  free(texts);
  return failed ? -1 : 0;
}

#define EACH_KEY(r, map, k, v)                                                                     \
  for (yaml_node_pair_t *p_ = (map)->data.mapping.pairs.start;                                     \
       p_ < (map)->data.mapping.pairs.top &&                                                       \
       ((k) = scalar(node(r, p_->key)), (v) = node(r, p_->value), 1);                              \
       p_++)

static int is_map(const yaml_node_t *n) { return n && n->type == YAML_MAPPING_NODE; }

static int matcher_type(reader *r, tpl_matcher *m, const char *s)
{
  if (!s)
    return skip(r, "matcher without a type", NULL);
  if (!strcmp(s, "word"))
    m->type = TM_WORD;
  else if (!strcmp(s, "regex"))
    m->type = TM_REGEX;
  else if (!strcmp(s, "status"))
    m->type = TM_STATUS;
  else if (!strcmp(s, "size"))
    m->type = TM_SIZE;
  else if (!strcmp(s, "dsl"))
    m->type = TM_DSL;
  else if (!strcmp(s, "xpath"))
    m->type = TM_XPATH;
  else
    return skip(r, "matcher type", s);
  return 0;
}

/* dsl: expressions, compiled (a matcher's or an extractor's). */
static int load_dsl(reader *r, yaml_node_t *v, tpl_dsl **out, size_t *count)
{
  char **exprs;
  size_t n;
  if (strings(r, v, &exprs, &n) != 0)
    return -1;
  int failed = !(*out = calloc(n + 1, sizeof **out));
  if (failed)
    r->nomem = 1;
  for (size_t i = 0; i < n; i++) {
    char why[REASON_MAX - 8];
    if (!failed && tpl_dsl_compile(&(*out)[(*count)++], exprs[i], why, sizeof why) != 0) {
      r->nomem |= !strcmp(why, "out of memory");
      skip(r, "dsl", why);
      failed = 1;
    }
    free(exprs[i]);
  }
  free(exprs);
  return failed ? -1 : 0;
}

static int load_matcher(reader *r, yaml_node_t *n, tpl_matcher *m)
{
  const char *k;
  yaml_node_t *v;
  if (!is_map(n))
    return skip(r, "matcher not a mapping", NULL);
  EACH_KEY(r, n, k, v)
  if (k && !strcmp(k, "type") && matcher_type(r, m, scalar(v)) != 0)
    return -1;
  EACH_KEY(r, n, k, v)
  {
    const char *s = scalar(v);
    int ok = 0;
    if (!k || !strcmp(k, "type"))
      ok = 1;
    else if (!strcmp(k, "part"))
      ok = take_part(r, s, &m->part, &m->header) == 0;
    else if (!strcmp(k, "condition"))
      ok = s && (!strcmp(s, "or") || (m->cond_and = !strcmp(s, "and")));
    else if (!strcmp(k, "negative"))
      ok = (m->negative = truthy(s)) || s;
    else if (!strcmp(k, "case-insensitive"))
      ok = (m->nocase = truthy(s)) || s;
    else if (!strcmp(k, "internal"))
      ok = (m->internal = truthy(s)) || s;
    else if (!strcmp(k, "name"))
      ok = (m->name = dup(r, s)) != NULL;
    else if (!strcmp(k, "words") && m->type == TM_WORD)
      ok = strings(r, v, &m->words, &m->n) == 0;
    else if (!strcmp(k, "regex") && m->type == TM_REGEX)
      ok = regexes(r, v, &m->regexes, &m->n) == 0;
    else if (!strcmp(k, "dsl") && m->type == TM_DSL)
      ok = load_dsl(r, v, &m->dsl, &m->n) == 0;
    else if (!strcmp(k, "xpath") && m->type == TM_XPATH)
      ok = queries(r, v, 1, &m->xpath, &m->n) == 0;
    else if ((!strcmp(k, "status") && m->type == TM_STATUS) ||
             (!strcmp(k, "size") && m->type == TM_SIZE))
      ok = numbers(r, v, &m->numbers, &m->n) == 0;
    if (!ok)
      return skip(r, "matcher key", k);
  }
  for (size_t i = 0; m->type == TM_WORD && m->nocase && i < m->n; i++)
    for (char *p = m->words[i]; *p; p++)
      *p = (char)tolower((unsigned char)*p);
  return m->n ? 0 : skip(r, "matcher without values", NULL);
}

/* kval's names: in lower case, as nuclei's (the names of the response's
 * variables: a header's with '_' for '-', a cookie's as set). */
static int take_keys(reader *r, yaml_node_t *n, tpl_extractor *x)
{
  if (strings(r, n, &x->keys, &x->n) != 0)
    return -1;
  for (size_t i = 0; i < x->n; i++)
    for (char *p = x->keys[i]; *p; p++)
      *p = (char)tolower((unsigned char)*p);
  return 0;
}

/* An extractor's type. */
static int extractor_type(reader *r, tpl_extractor *x, const char *s)
{
  static const char *const names[] = {"regex", "kval", "dsl", "json", "xpath"};
  static const tpl_xtype types[] = {TX_REGEX, TX_KVAL, TX_DSL, TX_JSON, TX_XPATH};
  for (size_t i = 0; s && i < sizeof names / sizeof *names; i++)
    if (!strcmp(s, names[i]))
      return x->type = types[i], 0;
  return skip(r, "extractor type", s);
}

static int load_extractor(reader *r, yaml_node_t *n, tpl_extractor *x)
{
  const char *k;
  yaml_node_t *v;
  if (!is_map(n))
    return skip(r, "extractor not a mapping", NULL);
  EACH_KEY(r, n, k, v)
  if (k && !strcmp(k, "type") && extractor_type(r, x, scalar(v)) != 0)
    return -1;
  EACH_KEY(r, n, k, v)
  {
    const char *s = scalar(v);
    char *end = NULL;
    int ok = 0;
    if (!k || !strcmp(k, "type"))
      ok = 1;
    else if (!strcmp(k, "part") && x->type != TX_KVAL && x->type != TX_DSL)
      ok = take_part(r, s, &x->part, &x->header) == 0;
    else if (!strcmp(k, "part"))
      ok = 1; /* nuclei's kval and dsl extractors read the variables, not a part */
    else if (!strcmp(k, "internal"))
      ok = (x->internal = truthy(s)) || s;
    else if (!strcmp(k, "name"))
      ok = (x->name = dup(r, s)) != NULL;
    else if (!strcmp(k, "group") && s)
      ok = (x->group = strtol(s, &end, 10)) >= 0 && !*end && x->group < 100;
    else if (!strcmp(k, "regex") && x->type == TX_REGEX)
      ok = regexes(r, v, &x->regexes, &x->n) == 0;
    else if (!strcmp(k, "kval") && x->type == TX_KVAL)
      ok = take_keys(r, v, x) == 0;
    else if (!strcmp(k, "dsl") && x->type == TX_DSL)
      ok = load_dsl(r, v, &x->dsl, &x->n) == 0;
    else if ((!strcmp(k, "json") && x->type == TX_JSON) ||
             (!strcmp(k, "xpath") && x->type == TX_XPATH))
      ok = queries(r, v, x->type == TX_XPATH, &x->queries, &x->n) == 0;
    else if (!strcmp(k, "attribute") && x->type == TX_XPATH)
      ok = s && (x->attribute = dup(r, s)) != NULL;
    if (!ok)
      return skip(r, "extractor key", k);
  }
  for (size_t i = 0; x->type == TX_REGEX && i < x->n; i++)
    if ((uint32_t)x->group > x->regexes[i].groups)
      return skip(r, "extractor group", "past the regex's groups");
  return x->n ? 0 : skip(r, "extractor without values", NULL);
}

/* headers: a mapping of names to values, as "Name: value". */
static int load_headers(reader *r, yaml_node_t *n, tpl_request *q)
{
  const char *k;
  yaml_node_t *v;
  if (!is_map(n))
    return skip(r, "headers not a mapping", NULL);
  size_t cap = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
  if (!(q->headers = calloc(cap + 1, sizeof *q->headers)))
    return r->nomem = 1, -1;
  EACH_KEY(r, n, k, v)
  {
    const char *s = scalar(v);
    char *h = k && s ? malloc(strlen(k) + strlen(s) + 3) : NULL;
    if (!k || !s)
      return skip(r, "header not a string", k);
    if (!h)
      return r->nomem = 1, -1;
    sprintf(h, "%s: %s", k, s);
    q->headers[q->nheaders++] = h;
  }
  return 0;
}

/* Matchers or extractors: a sequence of mappings. */
static int load_list(reader *r, yaml_node_t *n, int extractors, tpl_request *q)
{
  if (!n || n->type != YAML_SEQUENCE_NODE)
    return skip(r, extractors ? "extractors not a list" : "matchers not a list", NULL);
  size_t cap = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  if (extractors ? !(q->extractors = calloc(cap + 1, sizeof *q->extractors))
                 : !(q->matchers = calloc(cap + 1, sizeof *q->matchers)))
    return r->nomem = 1, -1;
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
    if (extractors ? load_extractor(r, node(r, *i), &q->extractors[q->nextractors++])
                   : load_matcher(r, node(r, *i), &q->matchers[q->nmatchers++]))
      return -1;
  return 0;
}

/* The keys of a request that make a template skipped, by their reason. */
static const char *request_skip(const char *k)
{
  static const char *const as_is[] = {"flow", "fuzzing", "race", "pipeline"};
  for (size_t i = 0; i < sizeof as_is / sizeof *as_is; i++)
    if (!strcmp(k, as_is[i]))
      return as_is[i];
  return NULL;
}

/* The number of raw:'s requests, or 0 (skipped): as it is met, before
 * the request's other keys. */
static size_t raw_count(reader *r, yaml_node_t *v)
{
  size_t n = v && v->type == YAML_SEQUENCE_NODE
                 ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start)
                 : 0;
  if (!n)
    skip(r, "raw", "not a list of requests");
  else if (n > TPL_RAWS_MAX)
    skip(r, "raw", "more than 64 requests in a block");
  return n > TPL_RAWS_MAX ? 0 : n;
}

/* raw: its requests (tpl_raw), one into q itself, several into q->raws,
 * read once the request's other keys are (unsafe: and redirects: change
 * how): each of several takes the block's unsafe: and redirects. */
static int load_raw(reader *r, yaml_node_t *v, tpl_request *q)
{
  size_t n = raw_count(r, v);
  if (!n)
    return -1;
  if (q->method || q->paths || q->headers || q->body)
    return skip(r, "raw", "beside method, path, headers or body");
  if (n > 1 && !(q->raws = calloc(n, sizeof *q->raws)))
    return r->nomem = 1, -1;
  for (size_t i = 0; i < n; i++) {
    const char *text = scalar(node(r, v->data.sequence.items.start[i]));
    tpl_request *one = n > 1 ? &q->raws[q->nraws++] : q;
    one->unsafe = q->unsafe;
    one->no_automerge = q->no_automerge;
    one->skip_vars_check = q->skip_vars_check;
    one->redirects = q->redirects;
    one->max_redirs = q->max_redirs;
    const char *why = text ? tpl_raw(text, one) : "raw: not a list of requests";
    if (why)
      return skip(r, why, NULL);
  }
  return 0;
}

/* payloads: (tpl-payloads.c), once q is read whole. */
static int payloads(reader *r, tpl_request *q, yaml_node_t *map, tpl_attack attack)
{
  int rc = tpl_payloads_load(r->ts, r->path, q, &r->doc, map, attack, &r->payload_left, r->reason,
                             sizeof r->reason);
  if (rc == -2)
    r->nomem = 1;
  return rc;
}

/* redirects: or host-redirects: (key) with value s: those true follows. */
static int take_redirects(tpl_request *q, const char *key, const char *s)
{
  if (truthy(s))
    q->redirects |= !strcmp(key, "host-redirects") ? TPL_REDIRECTS_HOST : TPL_REDIRECTS_ALL;
  return s != NULL;
}

static int load_request(reader *r, yaml_node_t *n, tpl_request *q)
{
  const char *k;
  yaml_node_t *v, *values = NULL; /* payloads: */
  tpl_attack attack = TPL_ATTACK_NONE;
  if (!is_map(n))
    return skip(r, "request not a mapping", NULL);
  q->max_redirs = DEFAULT_MAX_REDIRS;
  yaml_node_t *raw = NULL; /* raw:, which makes the method, path, headers and body */
  EACH_KEY(r, n, k, v)
  {
    const char *s = scalar(v), *why = k ? request_skip(k) : NULL;
    char *end = NULL;
    int ok = 0;
    if (why)
      return skip(r, why, NULL);
    if (k && raw &&
        (!strcmp(k, "method") || !strcmp(k, "path") || !strcmp(k, "headers") || !strcmp(k, "body")))
      return skip(r, "raw", "beside method, path, headers or body");
    if (!k)
      ok = 0;
    else if (!strcmp(k, "id"))
      ok = s && (q->id = dup(r, s));
    else if (!strcmp(k, "method"))
      ok = s && (q->method = dup(r, s)) && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(s);
    else if (!strcmp(k, "path"))
      ok = strings(r, v, &q->paths, &q->npaths) == 0;
    else if (!strcmp(k, "raw") && !raw_count(r, v))
      return -1;
    else if (!strcmp(k, "raw"))
      ok = (raw = v) != NULL;
    else if (!strcmp(k, "unsafe"))
      ok = (q->unsafe = truthy(s)) || s;
    else if (!strcmp(k, "disable-path-automerge"))
      ok = (q->no_automerge = truthy(s)) || s;
    else if (!strcmp(k, "headers"))
      ok = load_headers(r, v, q) == 0;
    else if (!strcmp(k, "body"))
      ok = s && (q->body = dup(r, s));
    else if (!strcmp(k, "redirects") || !strcmp(k, "host-redirects"))
      ok = take_redirects(q, k, s);
    else if (!strcmp(k, "max-redirects"))
      ok = s && (q->max_redirs = strtol(s, &end, 10)) >= 0 && !*end && q->max_redirs <= 1000;
    else if (!strcmp(k, "matchers-condition"))
      ok = s && (!strcmp(s, "or") || (q->cond_and = !strcmp(s, "and")));
    else if (!strcmp(k, "stop-at-first-match"))
      ok = (q->stop_first = truthy(s)) || s;
    else if (!strcmp(k, "max-size")) /* bytes; 0 or less: none of its own, as nuclei's */
      ok = s && ((q->max_size = strtol(s, &end, 10)) || 1) && !*end && end != s;
    else if (!strcmp(k, "req-condition"))
      ok = (q->req_condition = truthy(s)) || s;
    else if (!strcmp(k, "disable-cookie"))
      ok = (q->no_cookies = truthy(s)) || s;
    else if (!strcmp(k, "cookie-reuse"))
      ok = (q->cookie_reuse = truthy(s)) || s;
    else if (!strcmp(k, "iterate-all"))
      ok = (q->iterate_all = truthy(s)) || s;
    else if (!strcmp(k, "skip-variables-check"))
      ok = (q->skip_vars_check = truthy(s)) || s;
    else if (!strcmp(k, "matchers") || !strcmp(k, "extractors"))
      ok = load_list(r, v, !strcmp(k, "extractors"), q) == 0;
    else if (!strcmp(k, "payloads"))
      ok = (values = v) != NULL;
    else if (!strcmp(k, "attack") && (!s || tpl_attack_parse(s, &attack) != 0))
      return skip(r, "attack", s ? s : "not a string");
    else if (!strcmp(k, "attack"))
      ok = 1;
    else if (!strcmp(k, "threads")) /* its payload combinations at once */
      ok = s && (q->threads = strtol(s, &end, 10)) >= 0 && !*end && end != s;
    if (!ok)
      return skip(r, "request key", k);
  }
  if (q->redirects & TPL_REDIRECTS_HOST) /* nuclei: host-redirects wins */
    q->redirects = TPL_REDIRECTS_HOST;
  if (!q->max_redirs) /* nuclei: 0 is its default */
    q->max_redirs = DEFAULT_MAX_REDIRS;
  if (raw && load_raw(r, raw, q) != 0)
    return -1;
  if (!q->npaths && !q->nraws)
    return skip(r, "request without a path", NULL);
  if (q->max_size < 0)
    q->max_size = 0;
  if (!q->nraws && !q->method && !(q->method = dup(r, "GET")))
    return -1;
  char why[200];
  if (tpl_seq_check(q, why, sizeof why))
    return skip(r, why, NULL);
  return values ? payloads(r, q, values, attack) : 0;
}

/* A comma list ("a, b,c") as an array of new strings, each trimmed of
 * spaces: info's tags and author. */
static int comma_list(reader *r, const char *s, char ***out, size_t *count)
{
  if (!(*out = calloc(strlen(s) / 2 + 2, sizeof **out)))
    return r->nomem = 1, -1;
  for (const char *p = s + strspn(s, ", "); *p;) {
    size_t len = strcspn(p, ",");
    while (len && p[len - 1] == ' ')
      len--;
    if (len && !((*out)[(*count)++] = strndup(p, len)))
      return r->nomem = 1, -1;
    p += strcspn(p, ",");
    p += strspn(p, ", ");
  }
  return 0;
}

static int load_info(reader *r, yaml_node_t *n, tpl *t)
{
  const char *k;
  yaml_node_t *v;
  if (!is_map(n))
    return skip(r, "info not a mapping", NULL);
  EACH_KEY(r, n, k, v)
  {
    const char *s = scalar(v);
    if (k && !strcmp(k, "name") && s && !(t->name = dup(r, s)))
      return -1;
    if (k && !strcmp(k, "severity") && s && !(t->severity = dup(r, s)))
      return -1;
    if (k && (!strcmp(k, "tags") || !strcmp(k, "author"))) {
      char ***list = !strcmp(k, "tags") ? &t->tags : &t->authors;
      size_t *count = !strcmp(k, "tags") ? &t->ntags : &t->nauthors;
      if (s ? comma_list(r, s, list, count) != 0 : strings(r, v, list, count) != 0)
        return -1;
    }
  }
  return 0;
}

/* The protocols of nuclei that scan does not speak. */
static int other_protocol(const char *k)
{
  static const char *const names[] = {"dns",       "file",      "network", "tcp",  "headless",
                                      "ssl",       "websocket", "whois",   "code", "javascript",
                                      "workflows", "workflow",  "udp"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(k, names[i]))
      return 1;
  return 0;
}

static int load_requests(reader *r, yaml_node_t *v, tpl *t)
{
  if (!v || v->type != YAML_SEQUENCE_NODE || t->reqs)
    return skip(r, "http not a list", NULL);
  size_t cap = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  if (!(t->reqs = calloc(cap + 1, sizeof *t->reqs)))
    return r->nomem = 1, -1;
  for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
    if (load_request(r, node(r, *i), &t->reqs[t->nreqs++]) != 0)
      return -1;
  return 0;
}

/* variables: or constants: (tpl-vars.c). */
static int vars(reader *r, yaml_node_t *v, tpl *t, int constants)
{
  const char *why = tpl_vars_load(t, &r->doc, v, constants);
  if (why && !why[0])
    r->nomem = 1;
  return why ? skip(r, why, NULL) : 0;
}

/* nuclei's protocol type of a template: its first kind of request in
 * nuclei's order (Template.Type), as -type names it; NULL: none. */
static const char *protocol_type(reader *r, yaml_node_t *root)
{
  static const char *const kinds[][2] = {
      {"dns", "dns"},         {"file", "file"},   {"http", "http"},     {"requests", "http"},
      {"headless", "headless"}, {"network", "tcp"}, {"tcp", "tcp"},       {"ssl", "ssl"},
      {"websocket", "websocket"}, {"whois", "whois"}, {"code", "code"},
      {"javascript", "javascript"}, {"workflows", "workflow"}};
  const char *k;
  yaml_node_t *v;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    EACH_KEY(r, root, k, v)
    {
      if (k && !strcmp(k, kinds[i][0]))
        return kinds[i][1];
      (void)v;
    }
  return NULL;
}

/* What the filter looks at (tpl-filter.c), read first: the id, the info
 * and the protocol type. */
static int load_head(reader *r, tpl *t)
{
  yaml_node_t *root = yaml_document_get_root_node(&r->doc), *v;
  const char *k;
  if (!is_map(root))
    return skip(r, "not a template (no mapping)", NULL);
  EACH_KEY(r, root, k, v)
  {
    if (k && !strcmp(k, "id") && !(scalar(v) && (t->id = dup(r, scalar(v)))))
      return skip(r, "template key", k);
    if (k && !strcmp(k, "info") && load_info(r, v, t) != 0)
      return skip(r, "template key", k);
  }
  t->type = protocol_type(r, root);
  return 0;
}

/* The rest of the document's template into t, after load_head. */
static int load_template(reader *r, tpl *t)
{
  yaml_node_t *root = yaml_document_get_root_node(&r->doc), *v;
  const char *k, *flow = NULL;
  EACH_KEY(r, root, k, v)
  {
    int ok = 0;
    if (!k)
      ok = 0;
    else if (!strcmp(k, "id") || !strcmp(k, "info"))
      ok = 1; /* load_head's */
    else if (!strcmp(k, "http") || !strcmp(k, "requests"))
      ok = load_requests(r, v, t) == 0;
    else if (!strcmp(k, "variables") || !strcmp(k, "constants"))
      ok = vars(r, v, t, !strcmp(k, "constants")) == 0;
    else if (!strcmp(k, "self-contained"))
      ok = (t->self_contained = truthy(scalar(v))) || scalar(v);
    else if (other_protocol(k))
      return skip(r, "protocol", k);
    else if (!strcmp(k, "flow"))
      ok = (flow = scalar(v)) != NULL;
    if (!ok)
      return skip(r, "template key", k);
  }
  if (!t->id || !t->id[0])
    return skip(r, "template without an id", NULL);
  if (!t->nreqs)
    return skip(r, "template without http requests", NULL);
  /* A request without either runs for what it does (a login, an upload)
   * and reports nothing; a template of such requests alone, nothing. */
  size_t operators = 0;
  for (size_t i = 0; i < t->nreqs; i++)
    operators += t->reqs[i].nmatchers + t->reqs[i].nextractors;
  if (!operators)
    return skip(r, "template without matchers or extractors", NULL);
  char why[120];
  if (t->self_contained && tpl_self_check(t, why, sizeof why) != 0)
    return skip(r, why, NULL);
  int made = flow ? tpl_flow_compile(t, flow, why, sizeof why) : 0;
  if (made == -2)
    return r->nomem = 1, -1;
  if (made != 0)
    return skip(r, why, NULL);
  int rc = tpl_vars_check(t, r->ts->given, r->ts->ngiven, r->reason, sizeof r->reason);
  if (rc == -2)
    r->nomem = 1;
  /* Its expressions may name its variables, constants and -var's. */
  for (size_t i = 0; rc == 0 && i < t->nreqs; i++)
    rc = tpl_dsl_check(t, r->ts->given, r->ts->ngiven, &t->reqs[i], r->reason, sizeof r->reason);
  /* Until each combination is sent, a template with payloads waits. */
  for (size_t i = 0; rc == 0 && !r->ts->run_payloads && i < t->nreqs; i++)
    if (t->reqs[i].payloads.n)
      return r->waits = 1, skip(r, "payloads", "not run yet");
  return rc;
}

static void free_strings(char **s, size_t n)
{
  for (size_t i = 0; s && i < n; i++)
    free(s[i]);
  free(s);
}

static void free_regexes(regex *re, size_t n)
{
  for (size_t i = 0; re && i < n; i++) {
    free((char *)re[i].text);
    regex_free(&re[i]);
  }
  free(re);
}

static void free_queries(tpl_query *q, size_t n)
{
  for (size_t i = 0; q && i < n; i++)
    tpl_query_free(&q[i]);
  free(q);
}

static void free_matcher(tpl_matcher *m)
{
  free(m->header);
  free(m->name);
  free(m->numbers);
  free(m->ids);
  free(m->renders);
  if (m->type == TM_WORD)
    free_strings(m->words, m->n);
  if (m->type == TM_REGEX)
    free_regexes(m->regexes, m->n);
  for (size_t i = 0; m->type == TM_DSL && m->dsl && i < m->n; i++)
    tpl_dsl_free(&m->dsl[i]);
  free(m->dsl);
  free_queries(m->xpath, m->n);
}

static void free_request(tpl_request *q)
{
  for (size_t i = 0; i < q->nraws; i++)
    free_request(&q->raws[i]);
  free(q->raws);
  free(q->id);
  free(q->method);
  free(q->body);
  free(q->annotations);
  free_strings(q->paths, q->npaths);
  free_strings(q->headers, q->nheaders);
  for (size_t i = 0; q->matchers && i < q->nmatchers; i++)
    free_matcher(&q->matchers[i]);
  for (size_t i = 0; q->extractors && i < q->nextractors; i++) {
    tpl_extractor *x = &q->extractors[i];
    free(x->header);
    free(x->name);
    if (x->type == TX_KVAL)
      free_strings(x->keys, x->n);
    else if (x->type == TX_REGEX)
      free_regexes(x->regexes, x->n);
    for (size_t k = 0; x->type == TX_DSL && x->dsl && k < x->n; k++)
      tpl_dsl_free(&x->dsl[k]);
    free(x->dsl);
    free_queries(x->queries, x->n);
    free(x->attribute);
  }
  free(q->matchers);
  free(q->extractors);
  tpl_payloads_free(&q->payloads);
}

static void free_template(tpl *t)
{
  for (size_t i = 0; t->reqs && i < t->nreqs; i++)
    free_request(&t->reqs[i]);
  free(t->reqs);
  free_strings(t->tags, t->ntags);
  free_strings(t->authors, t->nauthors);
  free(t->file);
  free(t->id);
  free(t->name);
  free(t->severity);
  tpl_flow_free(t);
  tpl_vars_free(t);
}

/* The most keys one mapping may have: far more than any template has, few
 * enough that looking for a repeated one stays cheap. */
#define MAX_KEYS 4096

/* A key given twice in one mapping of the document, which nuclei's YAML
 * reader refuses (and which would leave one of the two unread here): the
 * skip, or 0 when there is none. */
static int repeated_key(reader *r)
{
  for (yaml_node_t *n = r->doc.nodes.start; n < r->doc.nodes.top; n++) {
    if (n->type != YAML_MAPPING_NODE)
      continue;
    yaml_node_pair_t *first = n->data.mapping.pairs.start, *top = n->data.mapping.pairs.top;
    if (top - first > MAX_KEYS)
      return skip(r, "a mapping of more than 4096 keys", NULL);
    for (yaml_node_pair_t *p = first; p < top; p++)
      for (yaml_node_pair_t *q = first; q < p; q++) {
        const char *a = scalar(node(r, p->key)), *b = scalar(node(r, q->key));
        if (a && b && !strcmp(a, b))
          return skip(r, "key given twice", a);
      }
  }
  return 0;
}

int tpl_load_file(templates *ts, const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "scan: %s: %s\n", path, strerror(errno));
    return -1;
  }
  reader r;
  memset(&r, 0, sizeof r);
  r.ts = ts;
  r.payload_left = TPL_PAYLOAD_TEMPLATE_MAX;
  r.path = path;
  yaml_parser_t parser;
  tpl t;
  memset(&t, 0, sizeof t);
  int parsed = yaml_parser_initialize(&parser);
  if (parsed) {
    yaml_parser_set_input_file(&parser, f);
    parsed = yaml_parser_load(&parser, &r.doc);
    if (!parsed)
      snprintf(r.reason, sizeof r.reason, "YAML: %s at line %lu",
               parser.problem ? parser.problem : "error",
               (unsigned long)parser.problem_mark.line + 1);
    yaml_parser_delete(&parser);
  }
  fclose(f);
  int chosen = 1;
  if (parsed) {
    if (repeated_key(&r) == 0 && load_head(&r, &t) == 0 &&
        (chosen = !ts->filter || tpl_filter_match(ts->filter, &t)))
      (void)load_template(&r, &t);
    yaml_document_delete(&r.doc);
  }
  if (!chosen && !r.nomem) { /* left out by the filter: not a skip */
    free_template(&t);
    ts->nfiltered++;
    return 0;
  }
  one_line(r.reason);
  int skipped = r.reason[0] != 0;
  void *grown = skipped ? realloc(ts->skips, (ts->nskips + 1) * sizeof *ts->skips)
                        : realloc(ts->t, (ts->n + 1) * sizeof *ts->t);
  if (grown && skipped)
    ts->skips = grown;
  else if (grown)
    ts->t = grown;
  char *reason = skipped ? strdup(r.reason) : NULL;
  line note = {0}; /* what its payloads are, for --validate -v */
  if (r.waits)
    tpl_payloads_note(&t, &note), put(&note, "", 1);
  if (!(t.file = strdup(path)) || !grown || r.nomem || (skipped && !reason) || note.nomem) {
    free(reason);
    free(note.p);
    free_template(&t);
    fputs("scan: out of memory\n", stderr);
    return -1;
  }
  if (skipped) {
    ts->skips[ts->nskips].file = t.file;
    ts->skips[ts->nskips].payloads = note.p;
    ts->skips[ts->nskips++].reason = reason;
    t.file = NULL;
    free_template(&t);
  } else {
    ts->t[ts->n++] = t;
  }
  return 0;
}

int tpl_unload(templates *ts, size_t i, const char *reason)
{
  tpl_skip *g = realloc(ts->skips, (ts->nskips + 1) * sizeof *g);
  char *why = strdup(reason), *file = ts->t[i].file;
  if (g)
    ts->skips = g;
  if (!g || !why) {
    free(why);
    return -1;
  }
  one_line(why);
  ts->skips[ts->nskips++] = (tpl_skip){file, why, NULL};
  ts->t[i].file = NULL;
  free_template(&ts->t[i]);
  memmove(&ts->t[i], &ts->t[i + 1], (ts->n - i - 1) * sizeof *ts->t);
  ts->n--;
  return 0;
}

void tpl_free(templates *ts)
{
  tpl_json_free(ts);
  for (size_t i = 0; i < ts->n; i++)
    free_template(&ts->t[i]);
  free(ts->t);
  for (size_t i = 0; i < ts->nskips; i++) {
    free(ts->skips[i].file);
    free(ts->skips[i].reason);
    free(ts->skips[i].payloads);
  }
  free(ts->skips);
}
