/* scan's request planning: where targets come from (plan-targets.c), the
 * distinct requests of the loaded templates, clustered so that templates
 * asking for the same request share one (plan-cluster.c), the values of a
 * template's names for a target (plan-vars.c), and for each target and
 * cluster, the request with its {{...}} replaced: the jobs
 * (plan-request.c); the scan's values in the templates' matchers
 * (plan-words.c). Nothing here looks at a response. */
#ifndef SCAN_PLAN_H
#define SCAN_PLAN_H

#include "tpl.h"

#include <curl/curl.h>

/* ---- Targets (plan-targets.c) ------------------------------------------- */

/* Where targets come from: the -u URLs, then a stream read line by line. */
typedef struct targets {
  const char *const *urls; /* -u, not owned */
  size_t count, next;
  FILE *in;   /* NULL: none */
  char *line; /* getline's buffer */
  size_t cap;
  unsigned long shard, shards; /* --shard K/N */
  unsigned long seen;          /* targets read so far, kept or not */
} targets;

/* The next target of this shard as a new string (the caller frees it), or
 * NULL at the end (or when out of memory, which ends the list early). */
char *next_target(targets *t);

/* ---- Clusters (plan-cluster.c) ------------------------------------------ */

/* One member of a cluster: a path of a request of a template. */
typedef struct tpl_member {
  size_t tpl, req;
} tpl_member;

/* One distinct request: every template request that sends it. Its
 * strings are the templates' (valid while they are loaded). A request
 * whose texts use a template's constants or variables is the same as
 * another only in that template (owner): a variable's value is the
 * template's own, per target; one with an expression that gives another
 * value each time (rand_*) is the same as no other. */
typedef struct cluster {
  const char *method, *path, *body; /* path with its variables */
  char **headers;
  size_t nheaders;
  int redirects;
  long max_redirs;
  long max_size; /* max-size: its body's cap in bytes (0: the scan's) */
  /* How curl is told the method, decided once: HEAD is CURLOPT_NOBODY, a
   * method other than GET (POST with a body) CURLOPT_CUSTOMREQUEST. */
  int nobody, custom;
  const tpl_request *raw; /* a raw request's (its first member's): NULL: none */
  tpl_member *members;
  size_t nmembers;
  size_t owner; /* the template whose values it uses; NO_OWNER: none */
  int alone;    /* it joins no other request */
  /* A request of a sequence (plan-sequence.c): its number in its block,
   * from 1; 0: a request of templates run independently. */
  unsigned long step;
  int no_cookies; /* its block's disable-cookie */
  /* Its texts that read nothing but the target's values and -var (no
   * value of its template, payload, extracted value or function that
   * gives another value each time): they render the same for each of a
   * sequence's requests of a target, and are kept (plan_kept_texts). */
  unsigned kept;
  int unresolved; /* it reads a name nobody gives: never sent (plan_unresolved) */
} cluster;
#define NO_OWNER SIZE_MAX

/* A template run as a sequence: its requests one at a time, in nuclei's
 * order, on one easy handle, each a cluster of its own (p->c[first ..
 * first + n), in order) that joins no other (plan_sequences says which
 * templates). */
typedef struct plan_sequence {
  size_t tpl, first, n;
  int once; /* a self-contained template's: once in the scan, no target */
  /* Its payload combinations run on this many jobs at once, job k taking
   * combinations k, k + lanes, ...; 1: one after another (lanes_of in
   * plan-sequence.c says when). */
  size_t lanes;
} plan_sequence;
#define NO_OWNER SIZE_MAX

/* A value: bytes, terminated (len without the NUL), malloc'ed. */
typedef struct plan_value {
  char *p;
  size_t len;
} plan_value;

/* The scan's requests, and the job generator's place in them. */
typedef struct plan {
  const templates *ts; /* set by plan_build; its given (-var) too */
  plan_value **fixed;  /* per template, per variable: the value of one
                          evaluated once in the scan (p NULL: another) */
  cluster *c;
  size_t nclusters;
  size_t nindependent; /* c[0 .. nindependent): the clusters of
                        * independent requests; the rest, sequences' */
  plan_sequence *seqs;
  size_t nseqs;
  char randstr[TPL_RANDSTR_LEN + 1]; /* {{randstr}}: the same in the whole scan */
  /* The transfers' settings that a request of its own changes for its
   * transfer alone (plan-raw.c), as the loop sets them: --timeout, and
   * whether connections are kept after a transfer. */
  long timeout_ms;
  int forbid_reuse;
  /* A payload block's combinations at once, at most, where the template's
   * threads: says none (-pc, nuclei's payload concurrency; 1: one after
   * another). Set before plan_build. */
  long payload_concurrency;
  unsigned long unsent; /* requests not sent: an expression failed */
  char unsent_why[240]; /* the first: "template-id: what failed" */
  unsigned long cut;    /* sequences that reached PLAN_SEQ_REQUESTS for a target */
  char cut_why[120];    /* the first's template id */
  /* The job generator: the current target and its next cluster, then
   * its next sequence. */
  char *target;
  struct plan_here *here; /* its own values (plan_here_take) */
  size_t next_cluster, next_seq, next_lane;
  size_t next_once; /* the next sequence that runs once, before the targets */
  unsigned long seq; /* targets taken */
} plan;

/* Clusters the requests of the loaded templates ts into p. 0, or -1 when
 * out of memory. */
int plan_build(plan *p, const templates *ts);
/* Cluster c made for request step (its path) of block r, with no member. */
void plan_cluster_init(cluster *c, const tpl_request *r, const tpl_request *step,
                       const char *path);
/* What request step's texts use (tpl_text_uses) in template t. */
unsigned plan_uses(const templates *ts, size_t t, const tpl_request *step, const char *path);
/* Whether step k of request q of template t reads a name nobody gives
 * (TPL_USES_UNRESOLVED): it is not sent, and ends its block as nuclei's
 * refusal does. */
int plan_unresolved(const templates *ts, size_t t, size_t q, size_t k);
/* Whether template t sends a request: the first of one of its blocks is
 * not unresolved. One that sends none is not planned (it is loaded: -var
 * makes it send). */
int plan_sends(const templates *ts, size_t t);
/* Whether template t runs as a sequence (plan-sequence.c says when). */
int plan_needs_sequence(const plan *p, size_t t);
void plan_free(plan *p);

/* ---- A template's values for a target (plan-vars.c) --------------------- */

/* The values of the names template tpl gives a target's requests: its
 * constants, -var, the target variables, its variables:. The evaluation
 * side reads them with plan_vals_lookup, e.g. a dsl matcher that names a
 * template variable:
 *
 *   const plan_vals *v = plan_job_vals(job, t); // the values the request used
 *   plan_vals own;
 *   if (!v && plan_vals_eval(&own, p, t, target, 1) == 0) v = &own;
 *   env.lookup = plan_vals_lookup; env.ud = (void *)v;  // then expr_eval
 *   ...
 *   if (v == &own) plan_vals_free(&own);
 *
 * plan_job_vals gives the values a job's request was made with (the same
 * random values); for another template of the cluster, plan_vals_eval
 * evaluates its own (a variable that depends on the target and calls a
 * random function gets a new value then; one that does not was evaluated
 * once in the scan and is the same). */
#define PLAN_TARGET_MAX 16
typedef struct plan_here plan_here; /* a target's own values (plan-vars.c) */
typedef struct plan_vals {
  const plan *p;
  size_t tpl;
  plan_here *here;                    /* per tpl_target_names, shared */
  plan_value *vars;                   /* per variable (p NULL: p->fixed's) */
  size_t known;                       /* the variables lookup knows */
  struct plan_seq *seq; /* a sequence's: its values extracted (TS_DYNAMIC); NULL: none */
} plan_vals;

/* Evaluates template t's values for target (all: its variables too, else
 * the target variables and constants alone) into v. 0; -1 when out of
 * memory; -2 when target is not a URL curl can parse. plan_vals_free
 * frees v in each case. */
int plan_vals_eval(plan_vals *v, const plan *p, size_t t, const char *target, int all);
/* An expr_env lookup over a plan_vals (ud): 1 and *out, or 0 for a name
 * the template does not give. *out stays valid until plan_vals_free. */
int plan_vals_lookup(void *ud, const char *name, size_t len, expr_value *out);
void plan_vals_free(plan_vals *v);
/* text of v's template with its {{...}} replaced (tpl_render), onto out;
 * on an error, err (when not NULL) says what. */
expr_code plan_render(const plan_vals *v, const char *text, line *out, expr_error *err);
/* Makes target's own values (tpl_target_names', the same in every
 * template) p's current ones, which plan_vals_eval shares for that target
 * instead of making them again; those of the target before are dropped
 * (plan_free drops the last). 0, -1 when out of memory, -2 when target is
 * not a URL curl can parse. */
int plan_here_take(plan *p, const char *target);
void plan_here_free(plan *p);
/* Evaluates, once in the scan, the variables that do not depend on the
 * target (plan_build does it). 0, or -1 when out of memory. */
int plan_fix(plan *p);
void plan_unfix(plan *p);
/* ---- The scan's values in matchers (plan-words.c) ------------------------ */

/* Replaces the templates' words of TPL_WORD_SCAN with the scan's values,
 * before the matchers are compiled (eval_matchers), so that they stream,
 * and {{randstr}} in their regexes with the scan's letters. 0, or -1 when
 * out of memory. */
int plan_words(const plan *p, templates *ts);

/* ---- Template variables of a target -------------------------------------- */

/* Where the evaluation finds the values of a template's variables for the
 * target a response is of (its URL's, tpl_url_var; nuclei's variables:,
 * constants, -var), as the plan makes them: lookup sets *out (valid until
 * ud is done with) and returns 1, or returns 0 for a name it does not
 * know. lookup NULL: none. */
typedef struct plan_vars {
  int (*lookup)(void *ud, size_t tpl, const char *name, size_t len, expr_value *out);
  void *ud;
} plan_vars;

/* ---- Sequences (plan-sequence.c) ---------------------------------------- */

#define PLAN_SEQ_VALUES 100   /* values kept per name extracted */
#define PLAN_SEQ_VALUE  1024  /* bytes of one, at most */
#define PLAN_SEQ_REQUESTS TPL_PAYLOAD_MAX /* requests of one sequence for a target, at most */

/* What a sequence keeps while it runs for one target: the values its
 * internal extractors found (for {{name}} and the DSL), and with
 * req-condition the variables X_N of the block's earlier responses that
 * its matchers read (nothing else: a body only when one reads it, as
 * --max-body kept it). */
typedef struct plan_seq_values {
  const char *name; /* the extractor's */
  char **v;
  size_t *len, n;
  size_t block; /* the block that found them (iterate-all) */
  /* A flow's, of several values: "[v1 v2 ...]", what a later block reads
   * (nuclei's flow keeps them as a list, which its templates print so);
   * NULL: none. */
  char *list;
  size_t list_len;
} plan_seq_values;
typedef struct plan_seq_var {
  char *name; /* X_N */
  int number; /* a number (num), else text */
  double num;
  char *p;
  size_t len;
} plan_seq_var;
typedef struct plan_seq {
  size_t index;     /* the sequence: p->seqs[index] */
  size_t at;        /* its request running: p->c[at] */
  size_t combo;     /* payloads: the block's combination running */
  size_t lane, lanes; /* payloads: the job runs combinations lane,
                       * lane + lanes, ... (plan_sequence's lanes) */
  size_t iter;      /* iterate-all: the value of the request's run */
  size_t iter_n;    /* iterate-all: the runs of the request (the most
                     * values of one name the block had extracted) */
  unsigned long requests; /* made so far */
  int matched;      /* a request of the block matched (stop-at-first-match) */
  /* A template with a flow: its step running (tpl_flow), and whether its
   * block was true so far (as tpl_flow says; the evaluation sets it). */
  size_t step;
  int ok;
  int missing;      /* a value named was not extracted: the block ends */
  int jar;          /* the cookie jar holds the sequence's cookies */
  plan_seq_values *values;
  size_t nvalues;
  plan_seq_var *vars;
  size_t nvars;
} plan_seq;

/* The block (its number in the template) of the request running. */
size_t plan_seq_block(const plan_seq *seq, const plan *p);
/* Decides which templates of p run as sequences and makes their clusters
 * (plan_build calls it once the independent ones are made). 0 or -1. */
int plan_sequences(plan *p);
/* The values extracted for name[0..len): the one of the request's run
 * (iterate-all), else the first; in a flow, a later block reads several
 * as their list. 1 and *out (valid until the next change), or 0 when none
 * was (seq->missing set). */
int plan_seq_value(plan_seq *seq, const plan *p, const char *name, size_t len, expr_value *out);
/* Sets the values of name extracted by the request running (n of them,
 * of len[k] bytes, len NULL: strings; replacing earlier ones). 0 or -1. */
int plan_seq_extracted(plan_seq *seq, const plan *p, const char *name, char *const *v,
                       const size_t *len, size_t n);
/* Keeps variable name[0..len) (X_N) of the block's response N. 0 or -1. */
int plan_seq_remember(plan_seq *seq, const char *name, size_t len, const expr_value *v);
/* Payload name[0..len) of the running block, its value in the block's
 * combination: 1 and *out, or 0 when the block has none of that name. */
int plan_seq_payload(const plan_seq *seq, const plan *p, const char *name, size_t len,
                     expr_value *out);
/* Variable name[0..len) of an earlier response of the block: 1 and *out,
 * or 0. */
int plan_seq_recall(const plan_seq *seq, const char *name, size_t len, expr_value *out);
/* Forgets the block's responses (a new block), or everything (clear). */
void plan_seq_forget(plan_seq *seq, int clear);
void plan_seq_free(plan_seq *seq);

/* ---- Requests and jobs (plan-request.c) --------------------------------- */

#define PLAN_JOB_KEPT 8 /* texts a job keeps rendered, at most */
/* What a job's request holds, for as long as its transfer and evaluation
 * run: the values of the template its request was made with, and the
 * request made of them (plan_next_job makes it). */
typedef struct plan_job {
  plan_vals vals; /* the cluster's owner, or its first member (then
                     without its variables: vals_all 0) */
  int vals_all;
  struct curl_slist *own;     /* the template's headers */
  struct curl_slist *headers; /* -H, then own: what curl sends */
  char *body;
  /* A raw request's (plan-raw.c): its request target when curl is to send
   * it as written, the URL curl is given when not the job's (@tls-sni), a
   * CURLOPT_CONNECT_TO, its @timeout (0: none). */
  char *request_target, *curl_url;
  struct curl_slist *connect_to;
  long timeout_ms;
  char *target; /* the target the job's values are for (NULL: none, a
                 * sequence run once), which a raw request merges with */
  /* A sequence's request: the sequence's state (seq.index), in use while
   * in_seq. */
  plan_seq seq;
  int in_seq;
  /* Texts of its clusters' kept (cluster.kept), rendered once with its
   * values (text, then value, each PLAN_JOB_KEPT at most), and dropped with
   * its values. */
  const char *kept_text[PLAN_JOB_KEPT];
  char *kept_value[PLAN_JOB_KEPT];
  size_t nkept;
} plan_job;
/* The values job's request was made with for template t, or NULL when
 * they are not there (another template, or not its variables). */
const plan_vals *plan_job_vals(const plan_job *job, size_t t);
/* Sets the easy handle's request to cluster c's as job holds it, after
 * the header lines of defaults that the request's own do not name, and
 * the -H headers extra. 0 or -1. */
int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *defaults,
                     const struct curl_slist *extra, plan_job *job);
void plan_job_free(plan_job *job);
/* Which texts of cluster c, of template t, are kept (cluster.kept): bit
 * 1 its path, 2 its body, 4 its annotations, 8 << k its header k (none
 * past the 29th). */
unsigned plan_kept_texts(const templates *ts, size_t t, const cluster *c);

/* ---- Raw requests (plan-raw.c) ------------------------------------------ */

/* The URL of raw request c for target, its request target (rendered, in
 * path) merged with the target's as nuclei does, into *url (new); what its
 * annotations (rendered, in notes; NULL: none) and unsafe: true ask of
 * curl, into job (its headers already in job->own). EXPR_OK, or why it
 * cannot be sent (err says how), or EXPR_E_NOMEM. */
expr_code plan_raw_request(const cluster *c, const char *target, const char *path,
                           const char *notes, plan_job *job, char **url, expr_error *err);
/* What plan_raw_request put in job, onto the easy handle (and undone for
 * a job without). 0 or -1. */
int plan_raw_set(CURL *e, const plan *p, const cluster *c, const plan_job *job);
/* Whether header h (of a template, "Name: value") is name, case aside. */
int plan_header_is(const char *h, const char *name);
/* Whether list has a header of h's name (h: "Name", "Name: value" or
 * "Name;"), case aside. */
int plan_headers_name(const struct curl_slist *list, const char *h);
/* Adds header h to job's own (after the template's). EXPR_OK or
 * EXPR_E_NOMEM. */
expr_code plan_job_header(plan_job *job, const char *h);
/* The next job for a slot: its URL (new string), and in *cl, *seq and
 * *target (new string) its cluster, target number and target, in job its
 * values, headers and body (what it held before is freed); NULL at the
 * end. A request one of whose expressions fails for a target (e.g.
 * base64_decode of what is not base64) is not sent: counted in unsent. */
char *plan_next_job(plan *p, targets *src, size_t *cl, unsigned long *seq, char **target,
                    plan_job *job);
/* Starts lane (from 0) of sequence i for job's target (job's values made
 * for it): the URL of its first request that can be made, its cluster in
 * *cl; NULL when none can. */
char *plan_seq_start(plan *p, size_t i, size_t lane, plan_job *job, size_t *cl);
/* Cluster c's URL (new string) with job's values, its headers and body
 * into job; NULL when an expression fails (counted in unsent, unless it
 * names a value a sequence has not extracted: nuclei's quiet end of the
 * block) or out of memory. */
char *plan_job_request(plan *p, size_t c, plan_job *job);
/* Frees the request job holds (headers, body), not its values. */
void plan_job_step_free(plan_job *job);
/* A sequence's request is over (its response evaluated): the URL of its
 * next request (new string) and in *cl its cluster, in nuclei's order
 * (stop-at-first-match, a missing value and iterate-all as nuclei); NULL
 * when the sequence is over (job->in_seq 0 then). */
char *plan_next_step(plan *p, size_t *cl, plan_job *job);
/* Whether the request of cluster c, of job, is sent with the cookies the
 * sequence's earlier requests got: the jar is kept; else it is emptied
 * first (and a request of independent templates never sees cookies of
 * another's). */
int plan_keeps_cookies(const plan_job *job, const cluster *c);
/* Whether the request of cluster c records and sends cookies at all. */
int plan_uses_cookies(const plan_job *job, const cluster *c);

#endif
