/* scan's request planning: where targets come from (plan-targets.c), the
 * distinct requests of the loaded templates, clustered so that templates
 * asking for the same request share one (plan-cluster.c), and for each
 * target and cluster, the request with its variables replaced: the jobs
 * (plan-request.c). Nothing here looks at a response. */
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
 * strings are the templates' (valid while they are loaded). */
typedef struct cluster {
  const char *method, *path, *body; /* path with its variables */
  char **headers;
  size_t nheaders;
  int redirects;
  long max_redirs;
  /* How curl is told the method, decided once: HEAD is CURLOPT_NOBODY, a
   * method other than GET (POST with a body) CURLOPT_CUSTOMREQUEST. */
  int nobody, custom;
  tpl_member *members;
  size_t nmembers;
} cluster;

/* The scan's requests, and the job generator's place in them. */
typedef struct plan {
  cluster *c;
  size_t nclusters;
  char randstr[16]; /* {{randstr}}: the same letters in the whole scan */
  /* The job generator: the current target and its next cluster. */
  char *target;
  size_t next_cluster;
  unsigned long seq; /* targets taken */
} plan;

/* Clusters the requests of the loaded templates ts into p. 0, or -1 when
 * out of memory. */
int plan_build(plan *p, const templates *ts);
void plan_free(plan *p);

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

/* The URL of cluster c for target, its variables replaced (new string),
 * or NULL when target is not a URL curl can parse. */
char *plan_url(const plan *p, const cluster *c, const char *target);
/* What a job's request holds, for as long as its transfer runs: the
 * headers (-H, then the template's) and the body, variables replaced. */
typedef struct plan_job {
  struct curl_slist *headers;
  char *body;
} plan_job;
/* Sets the easy handle's request to cluster c's for target, after the -H
 * headers extra, made in job (what it held before is freed). 0 or -1. */
int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *extra,
                     const char *target, plan_job *job);
void plan_job_free(plan_job *job);
/* The value of the URL variable name[0..n) (tpl_url_var: BaseURL,
 * RootURL, Hostname, Host, Port, Path, Scheme) for target, appended to
 * out: 1, or 0 when it is none or target is no URL. */
int plan_target_var(const plan *p, const char *target, const char *name, size_t n, line *out);
/* The next job for a slot: its URL (new string), and in *cl, *seq and
 * *target (new string) its cluster, target number and target; NULL at
 * the end. */
char *plan_next_job(plan *p, targets *src, size_t *cl, unsigned long *seq, char **target);

#endif
