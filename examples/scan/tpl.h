/* scan's templates (-t): the subset of nuclei's template format that scan
 * reads, as a model. tpl-load.c reads one file with libyaml, tpl-dir.c the
 * files and directories of the -t paths, tpl-raw.c raw requests, tpl-dsl.c
 * the DSL expressions of dsl matchers and extractors, tpl-vars.c a
 * template's variables and constants and the {{...}} of its texts, all
 * compiled by the expression engine (expr.h, a layer of its own below this
 * one), tpl-payloads.c a request's payloads: and their combinations,
 * tpl-query.c the jq programs and XPath expressions of json and xpath
 * extractors and matchers. A template with anything else is skipped,
 * with its reason. Nothing here makes a request or looks at a response:
 * this layer links with libyaml, PCRE2, the engine, libjq and libxml2
 * alone. */
#ifndef SCAN_TPL_H
#define SCAN_TPL_H

#include "base.h"
#include "expr.h"

/* A query of a json or xpath extractor, or an xpath matcher, checked as
 * the template loads (tpl-query.c). */
typedef struct tpl_query {
  char *text;     /* as written: jq's syntax, or XPath 1.0 */
  void *compiled; /* xpath: libxml2's compiled expression (xmlXPathCompExpr) */
  size_t index;   /* json: its number in the program of all (templates' jq) */
} tpl_query;

/* What a matcher or an extractor looks at. */
typedef enum tpl_part {
  TP_BODY,   /* the final body (the default) */
  TP_HEADER, /* the final response's header block, status line included */
  TP_ALL,    /* the header block, then the body */
  TP_NAMED,  /* one header's values (part: a header name, '_' as '-') */
  TP_VAR     /* a response variable that is no header (host, status_code,
              * content_length, duration), as the DSL sees it */
} tpl_part;

/* How the evaluation answers one atom of a DSL expression (expr_atom):
 * over the body, a word or a regex the streaming engine runs like a
 * matcher's; known without looking; or evaluated by the engine over the
 * variable's value (a header variable, or a body kept whole). */
typedef enum tpl_atom { TA_EVAL, TA_WORD, TA_REGEX, TA_FALSE, TA_TRUE } tpl_atom;

/* One DSL expression of a dsl matcher or extractor, compiled. */
typedef struct tpl_dsl {
  char *text;
  expr *e;
  tpl_atom *atoms; /* per atom of e */
  char **words;    /* TA_WORD: the word (lower case when the atom is) */
  regex *regexes;  /* TA_REGEX: the regex (caseless when the atom is) */
  int whole_body;  /* it needs the body kept whole */
  int body_len;    /* it reads len(body), a count the stream keeps */
  /* Per atom: its matcher id in the evaluation's set (eval_matchers
   * fills it; freed with the template). NULL: none. */
  size_t *ids;
} tpl_dsl;

typedef enum tpl_mtype { TM_WORD, TM_REGEX, TM_STATUS, TM_SIZE, TM_DSL, TM_XPATH } tpl_mtype;

typedef struct tpl_matcher {
  tpl_mtype type;
  tpl_part part;
  char *header;             /* TP_NAMED: the header's name; TP_VAR: the variable's */
  char *name;               /* NULL: unnamed */
  int cond_and;             /* condition: and (default or) */
  int negative;             /* the verdict inverted */
  int nocase;               /* case-insensitive (words) */
  int internal;             /* hidden: a request all of whose matchers are
                             * internal reports no line (nuclei's) */
  char **words;             /* TM_WORD; lower-cased when nocase */
  regex *regexes;           /* TM_REGEX */
  long *numbers;            /* TM_STATUS, TM_SIZE */
  tpl_query *xpath;         /* TM_XPATH */
  tpl_dsl *dsl;             /* TM_DSL: under the matcher's condition */
  size_t n;                 /* words, regexes, numbers or expressions */
  /* Words and regexes of the body (TP_BODY, TP_ALL): per value, its
   * matcher id in the evaluation's set (eval_matchers fills it; freed
   * with the template), whose verdict holds it. NULL: none. */
  size_t *ids;
  /* TM_WORD, TM_REGEX: per value, how the {{...}} it holds are replaced
   * (nuclei renders a word with the values its request was made with;
   * of a regex, only {{randstr}} and {{randstr_N}}): TPL_WORD_SCAN, once
   * in the scan, before the matchers are compiled (plan_words), a value
   * the same in every scan of the templates, which streams;
   * TPL_WORD_RESPONSE, one that is the target's or the response's, or
   * random (another in each scan: kept out of the compiled databases,
   * which are cached by what they hold), matched for each response over
   * its part. NULL: none. */
  unsigned char *renders;
} tpl_matcher;
enum { TPL_WORD_SCAN = 1, TPL_WORD_RESPONSE = 2 };

typedef enum tpl_xtype { TX_REGEX, TX_KVAL, TX_DSL, TX_JSON, TX_XPATH } tpl_xtype;

typedef struct tpl_extractor {
  tpl_xtype type;
  tpl_part part;  /* regex: what it looks at */
  char *header;   /* TP_NAMED, TP_VAR */
  char *name;     /* NULL: unnamed; else its values are a variable of the
                   * DSL for the matchers and later extractors */
  long group;     /* regex: the group reported (0: the whole match) */
  regex *regexes; /* regex */
  char **keys;    /* kval: names of the response's variables, lower case */
  tpl_dsl *dsl;   /* dsl: each expression's value */
  tpl_query *queries; /* json (jq's syntax), xpath */
  char *attribute;    /* xpath: the attribute reported (NULL: the text) */
  int internal;   /* its values are a variable only, never reported */
  size_t n;
} tpl_extractor;

/* How a request's payloads combine (nuclei's attack:). */
typedef enum tpl_attack {
  TPL_ATTACK_NONE,  /* not given */
  TPL_BATTERINGRAM, /* one payload, each value in turn (nuclei's default) */
  TPL_PITCHFORK,    /* value k of every payload together, up to the shortest */
  TPL_CLUSTERBOMB   /* every combination (the product) */
} tpl_attack;

/* The combinations one request may make per target, at most: a request
 * whose payloads make more is skipped (nuclei has no bound). */
#define TPL_PAYLOAD_MAX 65536
/* A payload file: at most this many bytes, lines, and bytes in a line
 * (nuclei's reader refuses a line of 64 KiB or more). */
#define TPL_PAYLOAD_FILE_MAX  (4u << 20)
#define TPL_PAYLOAD_LINES_MAX 262144
#define TPL_PAYLOAD_LINE_MAX  65535
/* The bytes of all the values of one template's payloads, at most (files
 * and lists alike: a file named by several payloads, or a YAML alias
 * repeated in a list, counts each time it is read). */
#define TPL_PAYLOAD_TEMPLATE_MAX (8u << 20)

/* One payload: a name of the request's texts and its values, in order. */
typedef struct tpl_payload {
  char *name;
  char **values; /* into text */
  size_t n;      /* at least 1 */
  char *text;    /* the values, each ended by a NUL */
} tpl_payload;

/* A request's payloads: (n 0: none) and how they combine. */
typedef struct tpl_payloads {
  tpl_attack attack; /* --attack-type, else the request's attack:, else batteringram */
  tpl_payload *p;    /* in the template's order, those the request uses */
  size_t n;
  size_t combos; /* the combinations, 1 to TPL_PAYLOAD_MAX when n > 0 */
} tpl_payloads;

/* Redirects a request follows: redirects: true, every one; host-redirects:
 * true (which wins), those that stay on the request's host. */
#define TPL_REDIRECTS_ALL  1
#define TPL_REDIRECTS_HOST 2

/* One entry of http: (or requests:). */
typedef struct tpl_request {
  char *id; /* id: (NULL: none), the name a flow's http("id") calls it by */
  char *method;
  char **paths; /* with their {{variables}} */
  size_t npaths;
  char **headers; /* "Name: value" */
  size_t nheaders;
  char *body;      /* NULL: none */
  /* A raw request (tpl-raw.c): paths[0] is its request target as written,
   * which the plan merges with the target's URL as nuclei does. Unsafe:
   * unsafe: true (read before tpl_raw), the request sent as written: its
   * header lines as they are, its body with its final line break. */
  int raw, unsafe;
  /* disable-path-automerge: true (its raws' too): a raw request's target
   * is not merged with the target's path (its query still is). */
  int no_automerge;
  char *annotations; /* its @Host, @tls-sni and @timeout lines (NULL: none) */
  int once;          /* @once: sent once whatever the payloads */
  int redirects;   /* which are followed: TPL_REDIRECTS_*, 0: none */
  long max_redirs; /* when followed (default 10, also for 0, as nuclei) */
  int cond_and;    /* matchers-condition: and */
  int stop_first;  /* stop-at-first-match */
  long threads;    /* threads: its payload combinations at once (0: scan's -pc) */
  long max_size;   /* max-size: the body bytes read (0: no cap of its own) */
  /* raw: of several requests: each one a request of one path (tpl_raw),
   * in order; the fields above then hold none (npaths 0). */
  struct tpl_request *raws;
  size_t nraws;
  int req_condition; /* req-condition: true, or implied as nuclei does (a
                      * matcher or extractor naming X_N): its matchers see
                      * the block's earlier responses by number */
  int no_cookies;    /* disable-cookie: true */
  int cookie_reuse;  /* cookie-reuse: true (nuclei's default since) */
  int iterate_all;   /* iterate-all: a later request once per value extracted */
  /* skip-variables-check: true (its raws' too): a {{name}} nobody gives
   * is sent as written, as nuclei then sends it, not unresolved. */
  int skip_vars_check;
  tpl_matcher *matchers;
  size_t nmatchers;
  tpl_extractor *extractors;
  size_t nextractors;
  tpl_payloads payloads;
} tpl_request;

/* A name of a template (variables:, constants:) and its value as written. */
typedef struct tpl_var {
  char *name, *value;
  /* variables: whether its value depends on the target (it names a
   * target variable, or a variable that does): else it is evaluated once
   * in a scan, as nuclei does when it reads the template. */
  int per_target;
  /* variables: whether its value is drawn at random (it calls rand_*,
   * reads {{randstr}}, {{randstr_N}} or a variable that is random):
   * another in each scan. */
  int random;
  /* variables: the name nobody gives that its value reads (itself, or
   * through a variable before it), NULL: none. nuclei keeps its text as
   * written, and a request that reads it is not sent
   * (TPL_USES_UNRESOLVED). */
  char *unresolved;
} tpl_var;

/* An expression of a template's texts: what {{ and }} enclose, and it
 * compiled (a {{name}} inside one of its quoted strings read as name). */
typedef struct tpl_expr {
  char *src;
  expr *e;
  unsigned calls; /* expr_calls */
} tpl_expr;

/* A template's flow: compiled (tpl-flow.c): its http(N) calls as steps,
 * in the text's order, each running block `block` (TPL_FLOW_NONE: the
 * template has no such block, and the call is false), then step yes when
 * the block was true (nuclei's: a response matched its matchers, or an
 * extractor of a block without matchers found a value, or a block without
 * either got a response), else step no; n: the flow is over. Steps only go
 * forward. */
#define TPL_FLOW_NONE SIZE_MAX
typedef struct tpl_flow_step {
  size_t block, yes, no;
} tpl_flow_step;
typedef struct tpl_flow {
  tpl_flow_step *steps; /* the first runs first */
  size_t n;
} tpl_flow;

typedef struct tpl {
  char *file, *id, *name, *severity;
  char **tags;
  size_t ntags;
  char **authors; /* info.author: a comma list, or a list */
  size_t nauthors;
  const char *type; /* nuclei's protocol type (http, dns, ...); NULL: none */
  tpl_request *reqs;
  size_t nreqs;
  tpl_var *vars; /* variables:, in order */
  size_t nvars;
  tpl_var *consts; /* constants: */
  size_t nconsts;
  tpl_expr *exprs; /* every expression of its texts, each once */
  size_t nexprs;
  tpl_flow *flow; /* flow: (NULL: none): which blocks run, in its order */
  int self_contained; /* self-contained: true: its requests' URLs are its
                       * own (absolute), made once in a scan */
  /* The first name nobody gives (no -var, variable, constant, payload or
   * extractor) that a request of it reads, directly or through a
   * variable: such requests are not sent, as nuclei refuses them
   * ("unresolved variables"), until -var gives the name. NULL: none. */
  char *unresolved;
} tpl;

/* A template that was not loaded, and why. */
typedef struct tpl_skip {
  char *file;
  char *reason;
  char *payloads; /* what tpl_payloads_note says of it, for --validate -v; NULL: none */
} tpl_skip;

/* The templates loaded, and those skipped. */
typedef struct templates {
  tpl *t;
  size_t n;
  tpl_skip *skips;
  size_t nskips;
  /* -var NAME=VALUE, set before tpl_load: names a template may use. */
  const char *const *given;
  size_t ngiven;
  /* --attack-type, set before tpl_load: every request's (0: their own). */
  tpl_attack attack;
  /* Where payload files are looked for, no higher up (tpl-payloads.c);
   * NULL: up to the file system's root. */
  const char *files_root;
  /* Load templates with payloads, for a caller that sends each
   * combination; 0: they are skipped, "payloads: not run yet". */
  int run_payloads;
  /* -tags, -severity, ... set before tpl_load (NULL: none): a template it
   * leaves out is neither loaded nor skipped, only counted. */
  const struct tpl_filter *filter;
  size_t nfiltered;
  /* The json queries of all the templates as one jq program, compiled
   * (tpl_json_compile; a jq_state): given [index, value], the results of
   * the query of that index over value. NULL: none. */
  void *jq;
} templates;

/* A raw request (one, of text) into q's method, path, headers, body and
 * annotations, as nuclei reads it (unsafe: as q->unsafe says): NULL, or
 * why scan cannot run it (tpl-raw.c). */
const char *tpl_raw(const char *text, tpl_request *q);
/* The @ lines of a raw request nuclei acts on (tpl-raw.c, for the plan):
 * the value of the first "@name:" line of annotations, trimmed, into
 * [*v, *v + *len); 0 when there is none. */
int tpl_annotation(const char *annotations, const char *name, const char **v, size_t *len);

/* ---- Several requests (tpl-seq.c) ---------------------------------------- */

#define TPL_RAWS_MAX 64 /* raw requests of one block, at most */

/* The requests of block q in nuclei's order: its paths, or its raw
 * requests. */
size_t tpl_steps(const tpl_request *q);
/* Request k of block q as a request of one path: its method, headers and
 * body, and in *path its path. */
const tpl_request *tpl_step(const tpl_request *q, size_t k, const char **path);
/* Whether name[0..len) is the name of an internal extractor of t: a value
 * the later requests of a sequence may use ({{name}}). */
int tpl_extracted(const tpl *t, const char *name, size_t len);
/* Whether name[0..len) is nuclei's X_N, a variable of the response of
 * request N of the block: *base the length of X, *n N. */
int tpl_indexed(const char *name, size_t len, size_t *base, unsigned long *n);
/* Calls fn with each name X_N that q's matchers and extractors read (a DSL
 * variable, a part), until it returns nonzero; returns that. */
int tpl_each_indexed(const tpl_request *q, int (*fn)(void *ud, const char *name, size_t len),
                     void *ud);
/* Whether q's matchers or extractors read the body of its request number
 * n (body_N, response_N): that request keeps it for them. */
int tpl_reads_body(const tpl_request *q, unsigned long n);
/* Once block q is read: req-condition as nuclei implies it, and the names
 * X_N checked against its requests. NULL, or why the template is skipped
 * (into why, cap bytes). */
const char *tpl_seq_check(tpl_request *q, char *why, size_t cap);

/* ---- flow: (tpl-flow.c) ------------------------------------------------- */

/* Compiles text, t's flow: (once its blocks are read), into t->flow. 0,
 * or -1 with why (cap bytes) when scan cannot run it, or -2 when out of
 * memory. */
int tpl_flow_compile(tpl *t, const char *text, char *why, size_t cap);
void tpl_flow_free(tpl *t);

/* A self-contained template: whether each of its requests has a URL of
 * its own (absolute http or https, or from a {{name}} that is no target
 * variable). 0, or -1 with why. */
int tpl_self_check(const tpl *t, char *why, size_t cap);

/* ---- json and xpath queries (tpl-query.c) -------------------------------- */

/* Checks q->text as a jq program (xpath 0) or an XPath expression (1),
 * compiling the XPath one into q->compiled. 0, or -1 with why: a skip's
 * reason ("" when out of memory). */
int tpl_query_check(tpl_query *q, int xpath, char *why, size_t cap);
void tpl_query_free(tpl_query *q);
/* Once every template is read (tpl_load does it): compiles the json
 * queries of ts into ts->jq, numbering them; the templates of those that
 * do not compile are skipped with jq's message. 0, or -1 (out of memory,
 * or with a message). */
int tpl_json_compile(templates *ts);
void tpl_json_free(templates *ts);
/* Skips loaded template i of ts after all, with reason (the others keep
 * their order). 0, or -1 when out of memory. */
int tpl_unload(templates *ts, size_t i, const char *reason);

/* ---- Variables, constants, {{...}} (tpl-vars.c) ------------------------ */

/* {{randstr}} and {{randstr_N}}: nuclei's are KSUIDs, 27 letters and digits
 * (base62 of a time and random bytes), new ones from *seed into out. */
#define TPL_RANDSTR_LEN 27
void tpl_randstr(char out[TPL_RANDSTR_LEN + 1], uint64_t *seed);

/* The target variables of a request (nuclei's): {{BaseURL}} and the rest. */
extern const char *const tpl_target_names[];
extern const size_t tpl_ntarget_names;

/* Where a name's value comes from, for template t: in nuclei's order of
 * precedence, its constants, then -var, then the target's variables, then
 * its own variables:. */
typedef enum tpl_source {
  TS_NONE,   /* unknown */
  TS_CONST,  /* constants: */
  TS_GIVEN,  /* -var */
  TS_TARGET, /* tpl_target_names, randstr */
  TS_VAR,    /* variables: */
  TS_PAYLOAD, /* payloads: of a request, over all the others (nuclei's) */
  TS_DYNAMIC  /* an internal extractor's: a value of a sequence (tpl-seq.c) */
} tpl_source;
/* The source of name[0..len) in t (index: which constant, -var, variable,
 * or for a payload which request of t has it). */
tpl_source tpl_name(const tpl *t, const char *const *given, size_t ngiven, const char *name,
                    size_t len, size_t *index);

/* variables: (constants 0) or constants: (1), a mapping of names to
 * scalars, into t. NULL, or why not ("" when out of memory). */
struct yaml_document_s;
struct yaml_node_s;
const char *tpl_vars_load(tpl *t, struct yaml_document_s *doc, struct yaml_node_s *map,
                          int constants);
/* After the whole template is read: checks its variables (order, cycles)
 * and every {{...}} of its requests' texts and its variables' values,
 * compiling the expressions into t->exprs. 0, or -1 with the reason in
 * why (cap bytes), or -2 when out of memory. */
int tpl_vars_check(tpl *t, const char *const *given, size_t ngiven, char *why, size_t cap);
void tpl_vars_free(tpl *t);

/* What the {{...}} of a text hold, as tpl_vars_check found them in t: */
enum {
  TPL_USES_TEMPLATE = 1, /* a constant, a variable or a payload of t */
  TPL_USES_VOLATILE = 2, /* an expression that gives another value each time */
  TPL_USES_DYNAMIC = 4,  /* a value an extractor of t gives (TS_DYNAMIC) */
  TPL_USES_UNRESOLVED = 8 /* a name nobody gives, or a variable that reads
                           * one (t->unresolved): not sent */
};
unsigned tpl_text_uses(const tpl *t, const char *const *given, size_t ngiven, const char *text);

/* text with its {{name}}s and {{expressions}} replaced as nuclei does,
 * appended to out: a name, as env's lookup gives it; an expression of t,
 * evaluated with env in a; anything else as written. 0, or the error of
 * an evaluation (err says which). */
expr_code tpl_render(const tpl *t, const char *text, const expr_env *env, expr_arena *a,
                     line *out, expr_error *err);

/* ---- DSL expressions (tpl-dsl.c) ----------------------------------------- */

/* The response variables of nuclei's DSL that are no header, as
 * TP_VAR names them; whether name[0..len) is one. */
int tpl_response_var(const char *name, size_t len);
/* Whether name[0..len) is a variable of the target's URL that nuclei
 * gives requests and expressions alike (BaseURL, RootURL, Hostname, Host,
 * Port, Path, Scheme): its number from 1, or 0. */
#define TPL_URL_VARS 7
int tpl_url_var(const char *name, size_t len);
/* Compiles text into d, its atoms decided. 0, or -1 with why (a skip's
 * reason: "column N: what"). */
int tpl_dsl_compile(tpl_dsl *d, const char *text, char *why, size_t cap);
/* Whether every variable of the expressions of t's request q can have a
 * value (a response's, t's variables and constants, a -var of given): 0,
 * or -1 with why ("several requests: body_2", ...). Once t is read whole. */
int tpl_dsl_check(const tpl *t, const char *const *given, size_t ngiven, const tpl_request *q,
                  char *why, size_t cap);
/* Whether name (a variable of an expression of a request of one path) is
 * nuclei's alias of the first request's, X_1 for X: its length without
 * the suffix, else len. */
size_t tpl_dsl_unalias(const char *name, size_t len);
/* d of a block of several requests: body_1 is the first response's body,
 * not this one's (its atoms the engine's, evaluated over the value). */
void tpl_dsl_several(tpl_dsl *d);
void tpl_dsl_free(tpl_dsl *d);

/* ---- Payloads (tpl-payloads.c) ------------------------------------------ */

/* The attack's name, as templates write it. */
const char *tpl_attack_name(tpl_attack a);
/* s (any case, spaces around) as an attack into *a: 0, or -1. */
int tpl_attack_parse(const char *s, tpl_attack *a);
/* Request q's payloads: (a mapping, as map of doc) into q->payloads, with
 * attack (its attack:, TPL_ATTACK_NONE when not given), for the template
 * file path of ts: the values, the combinations counted. Once q is read
 * whole (a payload none of its texts names is dropped, as nuclei does).
 * *left: the bytes the template's payloads may still hold (start at
 * TPL_PAYLOAD_TEMPLATE_MAX), less those read. 0, or -1 with the reason in
 * why (cap bytes), or -2 when out of memory. */
int tpl_payloads_load(const templates *ts, const char *path, tpl_request *q,
                      struct yaml_document_s *doc, struct yaml_node_s *map, tpl_attack attack,
                      size_t *left, char *why, size_t cap);
/* Which payload of ps is named name[0..len): its index, or ps->n. */
size_t tpl_payload_find(const tpl_payloads *ps, const char *name, size_t len);
/* The value of payload i of ps in combination k (k < ps->combos):
 * clusterbomb's first payload changes fastest. */
const char *tpl_payload_value(const tpl_payloads *ps, size_t i, size_t k);
/* What t's payloads are, appended to out: per request with payloads,
 * "request N: ATTACK of NAME, ...: C combinations", "; " between. */
void tpl_payloads_note(const tpl *t, line *out);
void tpl_payloads_free(tpl_payloads *ps);

/* ---- Choosing templates: -tags, -severity, ... (tpl-filter.c) ----------- */

/* What a filter looks at, as nuclei's options name it. */
typedef enum tpl_field {
  TF_TAGS,     /* -tags: any of them */
  TF_ETAGS,    /* -etags: none of them */
  TF_SEVERITY, /* -severity */
  TF_ESEVERITY,
  TF_ID, /* -id: ids or glob patterns */
  TF_EID,
  TF_AUTHOR,
  TF_TYPE, /* -type: protocol types */
  TF_ETYPE,
  TF_FIELDS
} tpl_field;

/* nuclei's filter of templates: a template is chosen when it has none of
 * the excluded tags, ids, severities and types, and, for each field of
 * the others given, one of its values (any tag of -tags AND any severity
 * of -severity ...). Values in lower case; a template's compared so. */
typedef struct tpl_filter {
  char **v[TF_FIELDS];
  size_t n[TF_FIELDS];
} tpl_filter;

/* Adds the comma list text to field f. 0; -1 when a value is not one the
 * field takes (a severity, a protocol type), or empty; -2 when out of
 * memory. */
int tpl_filter_add(tpl_filter *f, tpl_field field, const char *text);
/* Whether any value was given. */
int tpl_filter_any(const tpl_filter *f);
/* Whether template t (its id, info and type) is chosen. */
int tpl_filter_match(const tpl_filter *f, const tpl *t);
void tpl_filter_free(tpl_filter *f);

/* Reads one template file into ts: loaded, or skipped with its reason.
 * Returns 0, or -1 when it cannot be read or out of memory. */
int tpl_load_file(templates *ts, const char *path);
/* Loads every -t path (files, or directories of *.yaml / *.yml, in name
 * order) into ts. Returns 0, or -1 on a failure to read or out of memory
 * (with a message). A template scan cannot run is a skip, not a failure. */
int tpl_load(templates *ts, const char *const *paths, size_t npaths);
void tpl_free(templates *ts);

#endif
