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
  /* How curl is told the method, decided once: HEAD is CURLOPT_NOBODY, a
   * method other than GET (POST with a body) CURLOPT_CUSTOMREQUEST. */
  int nobody, custom;
  const tpl_request *raw; /* a raw request's (its first member's): NULL: none */
  tpl_member *members;
  size_t nmembers;
  size_t owner; /* the template whose values it uses; NO_OWNER: none */
  int alone;    /* it joins no other request */
} cluster;
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
  char randstr[TPL_RANDSTR_LEN + 1]; /* {{randstr}}: the same in the whole scan */
  /* The transfers' settings that a request of its own changes for its
   * transfer alone (plan-raw.c), as the loop sets them: --timeout, and
   * whether connections are kept after a transfer. */
  long timeout_ms;
  int forbid_reuse;
  unsigned long unsent; /* requests not sent: an expression failed */
  char unsent_why[240]; /* the first: "template-id: what failed" */
  /* The job generator: the current target and its next cluster. */
  char *target;
  size_t next_cluster;
  unsigned long seq; /* targets taken */
} plan;

/* Clusters the requests of the loaded templates ts into p. 0, or -1 when
 * out of memory. */
int plan_build(plan *p, const templates *ts);
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
typedef struct plan_vals {
  const plan *p;
  size_t tpl;
  plan_value target[PLAN_TARGET_MAX]; /* per tpl_target_names */
  plan_value *vars;                   /* per variable (p NULL: p->fixed's) */
  size_t known;                       /* the variables lookup knows */
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

/* ---- Requests and jobs (plan-request.c) --------------------------------- */

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
} plan_job;
/* The values job's request was made with for template t, or NULL when
 * they are not there (another template, or not its variables). */
const plan_vals *plan_job_vals(const plan_job *job, size_t t);
/* Sets the easy handle's request to cluster c's as job holds it, after
 * the -H headers extra. 0 or -1. */
int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *extra,
                     plan_job *job);
void plan_job_free(plan_job *job);

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

#endif
