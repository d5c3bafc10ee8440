/* scan's response evaluation: the matchers and extractors run over each
 * response, as its body arrives (a body observer, rc_response_observe) and
 * once its transfer is over, and the verdicts they give.
 *   eval-verdict.c  which matchers hit one response
 *   eval-match.c    the command line's matchers, the body observer that
 *                   runs them all, and where each one runs
 *   eval-vs.c       the streaming engine (Vectorscan), the only file that
 *                   knows whether this build has it
 *   eval-cache.c    the disk cache of its compiled databases
 *   eval-literal.c  -t: a cluster's few words, found by memmem instead
 *   eval-extract.c  extractors: what regexes find in a body, as it streams
 *   eval-set.c      -t: the templates' words and regexes of the body as
 *                   one set of matchers, and what each cluster needs
 *   eval-tpl.c      -t: the verdicts of a template's request
 *   eval-dsl.c      -t: nuclei's DSL over a response, its variables
 *   eval-json.c     -t: json extractors (jq's programs, libjq)
 *   eval-xpath.c    -t: xpath extractors and matchers (libxml2)
 * The words and regexes of the body of all templates become one set of
 * matchers (eval_matchers), so the engine runs them as each body streams,
 * each response by those of its cluster alone (eval_plan lists them once);
 * the rest (header parts, status, size, extractors) is looked at when the
 * transfer ends. This layer reads responses (respchain) and never drives
 * a transfer: it links without libcurl. */
#ifndef SCAN_EVAL_H
#define SCAN_EVAL_H

#include "plan.h"

/* What the command line's --word and --regex look at. */
typedef enum part {
  PART_BODY,   /* the final body, decoded */
  PART_HEADER, /* the final response's header lines, one by one */
  PART_ALL     /* those header lines, and the body */
} part;

/* The matchers and extractors of a scan: the command line's, or with -t
 * the templates' words and regexes of the body (eval_matchers). The
 * matchers have one id space: the words (0 .. nwords-1), then the
 * regexes (nwords ..). */
typedef struct matchers {
  /* --status codes are a set. */
  unsigned char status_set[STATUS_MAX + 1];
  size_t nstatuses;
  const char **words;
  unsigned char *word_nocase; /* per word: --iword, any ASCII case */
  size_t nwords;
  regex *regexes;
  size_t nregexes;
  regex *extracts; /* --extract, in order */
  size_t nextracts;
  part part;
  int stop_on_match; /* end a transfer once its verdict is known */
} matchers;

/* ---- Verdicts (eval-verdict.c) ------------------------------------------ */

/* Which matchers hit one response. */
typedef struct verdict {
  int status;              /* the final status is one of --status */
  int status_missed;       /* --status given and the final status is not in it */
  unsigned char *words;    /* per --word: it occurs */
  unsigned char *regexes;  /* per --regex: it matches */
  size_t *word_at;         /* per --word hit: NO_OFFSET or its body offset */
  size_t *regex_at;        /* per --regex hit: the same */
  size_t nwords, nregexes; /* hits */
} verdict;

int verdict_init(verdict *v, const matchers *m);
void verdict_free(verdict *v);
/* No hits of the matchers ids[0 .. n-1] (ids NULL: of all of them, n
 * being their count); the others keep what they had. */
void verdict_clear(verdict *v, const matchers *m, const size_t *ids, size_t n);
/* Matcher id hit, its first match ending at offset; a matcher that hit
 * already keeps its first hit. Returns 1 when the hit is its first. */
int verdict_hit(verdict *v, const matchers *m, size_t id, size_t offset);
/* Whether matcher id has hit. */
int verdict_has(const verdict *v, const matchers *m, size_t id);

/* ---- The engine and the body observer (eval-match.c) -------------------- */

#define TITLE_HEAD (16 * 1024) /* bytes of the body the title is looked for in */

/* -t: what the evaluation of one cluster's response needs (eval_plan). */
typedef struct eval_cluster {
  /* The ids of its members' body values, ascending: all that its
   * response is matched by (the engine streams them alone, on a database
   * narrowed to them, eval-vs.c), so that the work per response is sized
   * to the cluster, not to all the templates loaded. */
  size_t *ids;
  size_t nids;
  int keep_body; /* a member needs the body kept */
  /* Its verdicts are known once every body value has hit (no size of the
   * body, no extractor, nothing over the kept body): tpl_settled. */
  int can_stop;
  /* Its body values are a few words, found by memmem rather than on the
   * engine's stream (eval-literal.c). */
  int literal;
  /* Its responses come many times for a target: a sequence's request of
   * a block of at least EVAL_HOT_COMBOS payload combinations, and of the
   * EVAL_HOT_CLUSTERS such with the most (ties all in). The few narrowed
   * databases of the engine are theirs (eval-vs.c). */
  int hot;
} eval_cluster;
#define EVAL_HOT_COMBOS   32
#define EVAL_HOT_CLUSTERS 16 /* eval-vs.c's narrowed databases */

/* How the matchers of the body run: on the stream (the engine of
 * eval-vs.c, when this build has one), or over the body kept whole once
 * the transfer ends. */
typedef struct engine {
  const matchers *m;        /* the matchers, not owned */
  unsigned char *streamed;  /* per matcher id: on the stream */
  size_t nstreamed, nwhole; /* body matchers on the stream, and over the body kept */
  int keep_body;            /* some matcher, or none's output, needs the body kept */
  struct vs_engine *vs;     /* the streaming engine's own; NULL: none */
  /* The extractors that the engine prefilters (per extractor; NULL: none),
   * and their widest matches (UINT_MAX: unbounded). */
  unsigned char *ex_filtered;
  unsigned *ex_width;
  /* -t: the templates, their plan and what each cluster needs; NULL: the
   * matchers of the command line. */
  const templates *tpl;
  const plan *plan;
  eval_cluster *clusters;
  /* Per matcher id: a word that only clusters of a few words have, which
   * eval-literal.c finds and the database leaves out; NULL: none. */
  unsigned char *few_only;
} engine;

/* Decides where each matcher of m runs, and whether bodies are kept.
 * Returns 0, or -1 when out of memory. */
int engine_build(engine *g, const matchers *m);
void engine_free(engine *g);

/* One response as the evaluation reads it: what the body observer found
 * in the body of hop number hop (a count: 0 before any body), the final
 * one unless a later hop came. */
typedef struct reading {
  const engine *g;
  rc_response *resp; /* not owned */
  size_t hop;
  verdict v;                /* the hits so far, head and streamed body */
  char *head;               /* the body's first TITLE_HEAD bytes, for the title */
  size_t head_len;          /* bytes in head */
  struct vs_stream *vs;     /* the streaming engine's state; NULL: none yet */
  struct literal_state *lit; /* eval-literal.c's state; NULL: none yet */
  struct extract_state *ex; /* the extractors' state; NULL: none yet */
  size_t cluster;           /* -t: the cluster whose request this is */
  /* The matcher ids it is matched by: its cluster's (ids), or all of
   * them (ids NULL, nids their count); set by observed_reset. A verdict
   * entry of any other id is stale, never read. */
  const size_t *ids;
  size_t nids;
} reading;

/* The k-th of the ids a reading is matched by. */
static inline size_t reading_id(const reading *r, size_t k) { return r->ids ? r->ids[k] : k; }
/* Whether the reading is matched by id. */
int reading_takes(const reading *r, size_t id);

/* A reading of resp's responses by g. 0, or -1 when out of memory. */
int reading_init(reading *r, const engine *g, rc_response *resp);
void reading_free(reading *r);
/* The body observer (rc_response_observe) of a reading's response. */
rc_code observe(void *ud, const char *data, size_t len);
/* Before a transfer: nothing observed yet. */
void observed_reset(reading *r);
/* The response's verdict, once its transfer is over; returns whether it
 * matched. */
int matches(reading *r);
/* Whether the final response says its body is HTML. */
int is_html(rc_response *r);

/* ---- Extractors (eval-extract.c) ---------------------------------------- */

#define EXTRACT_MAX    100   /* values kept per extractor and target */
#define EXTRACT_VALUE  1024  /* bytes of a value kept, at most */
#define EXTRACT_WINDOW 65536 /* bytes of the body kept for a match in progress */

/* A hop's body begins: no values, nothing seen. Returns 0, or -1 when out
 * of memory. */
int extract_begin(reading *r);
/* A slice of the body. Returns 0, or -1 when out of memory. */
int extract_feed(reading *r, const char *data, size_t len);
/* The body's end: the matches that were waiting for more bytes end. */
void extract_end(reading *r);
/* The values of extractor i found in the final body: *n of them, each
 * value[k] of len[k] bytes, in order of first appearance. */
void extract_values(const reading *r, size_t i, size_t *n, const char *const **value,
                    const size_t **len);
/* Whether extractor i may have missed a value in the final body: a match
 * in progress outgrew EXTRACT_WINDOW and was dropped. */
int extract_incomplete(const reading *r, size_t i);
void extract_free(reading *r);

/* ---- The streaming engine (eval-vs.c) ----------------------------------- */

/* The engine this build has, as --help, --version and the summary name it. */
const char *engine_name(void);
/* Whether this build has one (else every body matcher runs over the kept body). */
int engine_streams(void);
/* The paragraph of --help about it. */
void engine_usage(FILE *out);
/* Compiles the body matchers the engine takes, marking them in
 * g->streamed. Returns 0 (also when there is no engine), or -1 when out
 * of memory. */
int vs_build(engine *g);
void vs_free(engine *g);
/* The databases the engine has had so far: read from the disk cache
 * (eval-cache.c), and compiled. */
void vs_compiles(const engine *g, size_t *cached, size_t *compiled);
/* A hop's body begins (its head matched into the reading's verdict):
 * opens the reading's stream for the streamed matchers without a hit.
 * Returns 0, or -1 when out of memory. */
int vs_begin(reading *r);
/* A slice of the body, through the stream; 0, or -1 on failure. */
int vs_feed(reading *r, const char *data, size_t len);
/* Closes the reading's stream, if open; eod: first reporting the matches
 * the body's end decides ($), the body being whole. */
void vs_close(reading *r, int eod);
/* Frees what the reading's stream kept (after vs_close). */
void vs_stream_free(reading *r);
/* The extractors' prefilter: a stream of the extractors Vectorscan takes,
 * which tells in which slices a match of each ends, so that PCRE2 runs
 * there only (eval-extract.c). vs_extract_build marks them in
 * g->ex_filtered; 0, or -1 when out of memory. */
int vs_extract_build(engine *g);
/* Opens the reading's extractor stream for a hop's body; 0, or -1. */
int vs_extract_begin(reading *r);
/* A slice through it: due[i] set for each extractor a match of which ends
 * in it. Returns 0, or -1 on failure. */
int vs_extract_feed(reading *r, const char *data, size_t len, unsigned char *due);

/* ---- A cluster's few words (eval-literal.c) ------------------------------ */

#define LITERAL_WORDS   8   /* a cluster of at most this many body values, */
#define LITERAL_LONGEST 256 /* all words no longer than this, is matched there */

/* Whether the body values ids[0 .. n-1] of a cluster are such words
 * (whatever the engine, or none). */
int literal_cluster(const engine *g, const size_t *ids, size_t n);
/* A hop's body begins (its head matched): for a reading of such a
 * cluster, its words without a hit are looked for from now on. 0, or -1
 * when out of memory. */
int literal_begin(reading *r);
/* A slice of the body. 0, or -1 when out of memory. */
int literal_feed(reading *r, const char *data, size_t len);
void literal_free(reading *r);

/* ---- The disk cache of compiled databases (eval-cache.c) --------------- */

/* A key: the SHA-256 of everything a database is made of, added piece by
 * piece (each piece's length counts, so no two lists of pieces give the
 * same key by running into each other). */
#define CACHE_KEY 32
typedef struct cache_key {
  struct evp_md_ctx_st *ctx; /* NULL: failed (the key cannot be used) */
} cache_key;
int cache_key_init(cache_key *k);
void cache_key_add(cache_key *k, const void *p, size_t len);
/* The key into out; 0, or -1 when a step failed. */
int cache_key_end(cache_key *k, unsigned char out[CACHE_KEY]);
/* The bytes kept under key (malloc'ed; the caller frees them), their
 * kind and length, or NULL: none, or none to trust. */
void *cache_get(const unsigned char key[CACHE_KEY], int *kind, size_t *len);
/* Keeps p[0..len) of a kind (the caller's number) under key, if the cache
 * can take it. */
void cache_put(const unsigned char key[CACHE_KEY], int kind, const void *p, size_t len);

/* ---- Templates: the set of matchers (eval-set.c) ------------------------ */

/* The matchers of the templates ts: base's settings, with the body words
 * and regexes of every template as the words and regexes (each distinct
 * one once; their ids in the templates' matchers' ids), so that the
 * engine runs them all over each body as it streams, and PCRE2 over the
 * kept body for those it cannot. 0 or -1. */
int eval_matchers(templates *ts, const matchers *base, matchers *out);
/* Frees what eval_matchers made (not what it shares with the templates). */
void eval_matchers_free(matchers *out);
/* What a template needs of its responses' bodies (--validate -v): its
 * body words and regexes, and atoms of expressions, that run on the
 * stream (where this build has a streaming engine); whether it keeps the
 * body whole (md5(body), a regex extractor of the body, a word replaced
 * for each response, ...); whether it reads the body's length (len(body),
 * a size matcher); its words with a {{...}} replaced once in the scan,
 * and for each response (eval_words). */
typedef struct tpl_keeps {
  size_t streamed;
  int whole, count;
  size_t scan_words, response_words;
} tpl_keeps;
void eval_keeps(const tpl *t, tpl_keeps *k);
/* Before engine_build: the body values of m each cluster of p is matched by,
 * into g->clusters, and which clusters are a few words (eval-literal.c);
 * the words that only those have are left out of the engine's database
 * (g->few_only). 0, or -1 when out of memory. */
int eval_clusters(engine *g, const matchers *m, const templates *ts, const plan *p);
/* Once engine_build has decided which of those run on the stream: what
 * else each cluster needs (a regex extractor of the body, or a matcher
 * that runs over the kept body, keeps its bodies). Returns whether any
 * cluster keeps bodies. */
int eval_plan(engine *g, const templates *ts, const plan *p);

/* ---- Templates: verdicts (eval-tpl.c) ----------------------------------- */

/* Whether the reading's verdicts are all known before its body ends, so
 * that its transfer stops ("stopped": true). */
int tpl_settled(const reading *r);

/* The values a template request's extractors found. */
typedef struct tpl_values {
  char *v[EXTRACT_MAX];
  size_t n;
  int nomem; /* one was not kept: out of memory */
} tpl_values;
void tpl_values_free(tpl_values *x);

/* What the DSL sees of a target besides its response. */
typedef struct eval_target {
  const char *host;    /* the target as given (host) */
  const char *matched; /* the URL of the response's request (matched) */
  double duration;     /* seconds its transfer took (duration) */
  size_t tpl;          /* the template, for vars */
  plan_vars vars;      /* its template variables */
  /* A sequence's request: the sequence's state (its values extracted,
   * its block's earlier responses), and the request's number in its
   * block; seq NULL: a request of independent templates. */
  plan_seq *seq;
  unsigned long step;
  /* The response evaluated, as nuclei evaluates each response of a chain
   * of redirects: 0, the final one; else the one that many hops before
   * it, whose body is empty (curl reads none of a redirect it follows,
   * and nuclei reads none of those it followed). */
  int back;
} eval_target;

/* The hop of t's response, as rc_hop counts (-1: the last). */
static inline int eval_hop(const eval_target *t) { return -1 - t->back; }

/* Template request q over the reading's response of target t: hit[i] per
 * matcher of q, its extractors' values added to x. Returns whether q
 * matched. In a sequence, the variables X_N of this response that q's
 * matchers read are kept first, its internal extractors' values go to
 * the later requests, and the sequence's block is true (seq->ok, for a
 * flow) when this response makes it so. */
int eval_request(const reading *r, const tpl_request *q, const eval_target *t,
                 unsigned char *hit, tpl_values *x);

/* ---- Templates: the DSL over a response (eval-dsl.c) -------------------- */

/* One response as nuclei's DSL sees it, for one template request: the
 * response's variables (body, all_headers and header, response, host,
 * status_code, content_length, duration, matched, type; each header by its
 * name in lower case, '-' as '_', its values joined by a space; each
 * cookie's value by its name), nuclei's X_1 for X in a request of one
 * path, the values of the request's named extractors so far, then the
 * target's template variables. */
typedef struct dsl_view {
  const reading *r;
  const tpl_request *q;
  const eval_target *t;
  const tpl_dsl *d;         /* the expression being evaluated: its atoms */
  const tpl_values *values; /* per extractor of q, those run so far */
  size_t nvalues;
  expr_arena arena; /* the evaluations' values */
  void **own;       /* what lookups made, freed with the view */
  size_t nown;
  int nomem;
} dsl_view;

void dsl_view_init(dsl_view *v, const reading *r, const tpl_request *q, const eval_target *t);
void dsl_view_free(dsl_view *v);
/* Variable name[0..len) of the view (expr_env's lookup). */
int dsl_lookup(void *ud, const char *name, size_t len, expr_value *out);
/* In a sequence with req-condition: keeps the variables X_N of this
 * response (N its number) that the block's matchers read. */
void dsl_remember(dsl_view *v);
/* Response variable name (TP_VAR) as text; 0 when it has no value. */
int dsl_var_text(dsl_view *v, const char *name, rc_view *out);
/* dsl matcher m's condition over its expressions (negative not applied). */
int dsl_match(dsl_view *v, const tpl_matcher *m);
/* dsl extractor e's values: each expression's, as fmt.Sprint prints it. */
void dsl_extract(dsl_view *v, const tpl_extractor *e, tpl_values *x);
/* Adds a value to x unless known (cut at EXTRACT_VALUE). */
void tpl_values_add(tpl_values *x, const char *p, size_t len);
/* Whether DSL expression d needs the body kept whole (eval-set.c); an
 * extractor's atoms, of no matcher id, are the engine's over the body. */
int eval_dsl_whole_body(const tpl_dsl *d, int extractor);

/* ---- Templates: json and xpath (eval-json.c, eval-xpath.c) ------------- */

/* json extractor e's values over text, added to x, by jq, the templates'
 * program of all json queries (templates' jq) (eval-json.c). */
void json_extract(void *jq, const tpl_extractor *e, rc_view text, tpl_values *x);
/* xpath extractor e's values over text, added to x (eval-xpath.c). */
void xpath_extract(const tpl_extractor *e, rc_view text, tpl_values *x);
/* xpath matcher m's condition over text (negative not applied). */
int xpath_match(const tpl_matcher *m, rc_view text);

#endif
