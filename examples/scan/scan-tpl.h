/* scan's templates (-t): the subset of nuclei's template format that scan
 * reads (scan-tpl.c, from the files and directories of scan-tpl-dir.c;
 * raw requests and DSL in scan-tpl-raw.c), the requests they make, clustered so that templates
 * asking for the same request share one (scan-cluster.c), and the
 * verdicts and JSON lines of their matchers (scan-tpl-match.c).
 * The words and regexes of the body of all templates become the scan's
 * --word and --regex matchers (tpl_options), so the engine of scan-match.c
 * and scan-vs.c runs them as each body streams; the rest (header parts,
 * status, size, extractors) is looked at when the transfer ends. */
#ifndef SCAN_TPL_H
#define SCAN_TPL_H

#include "scan.h"

/* What a matcher or an extractor looks at. */
typedef enum tpl_part {
  TP_BODY,   /* the final body (the default) */
  TP_HEADER, /* the final response's header block, status line included */
  TP_ALL,    /* the header block, then the body */
  TP_NAMED   /* one header's values (part: a header name, '_' as '-') */
} tpl_part;

/* TM_DSL: DSL expressions, each contains(...) or status_code == N, as
 * matchers of one value each (subs), under the matcher's condition. */
typedef enum tpl_mtype { TM_WORD, TM_REGEX, TM_STATUS, TM_SIZE, TM_DSL } tpl_mtype;

typedef struct tpl_matcher {
  tpl_mtype type;
  tpl_part part;
  char *header;             /* TP_NAMED: the header's name */
  char *name;               /* NULL: unnamed */
  int cond_and;             /* condition: and (default or) */
  int negative;             /* the verdict inverted */
  int nocase;               /* case-insensitive (words) */
  char **words;             /* TM_WORD; lower-cased when nocase */
  regex *regexes;           /* TM_REGEX */
  long *numbers;            /* TM_STATUS, TM_SIZE */
  struct tpl_matcher *subs; /* TM_DSL */
  size_t n;                 /* words, regexes, numbers or subs */
  /* Words and regexes of the body (TP_BODY, TP_ALL): per value, its
   * matcher id among the scan's (tpl_options), whose verdict holds it. */
  size_t *ids;
} tpl_matcher;

typedef struct tpl_extractor {
  int kval;       /* kval (header values by name), else regex */
  tpl_part part;  /* regex: what it looks at */
  char *header;   /* TP_NAMED */
  char *name;     /* NULL: unnamed */
  long group;     /* regex: the group reported (0: the whole match) */
  regex *regexes; /* regex */
  char **keys;    /* kval: header names, '_' as '-' */
  size_t n;
} tpl_extractor;

/* One entry of http: (or requests:). */
typedef struct tpl_request {
  char *method;
  char **paths; /* with their {{variables}} */
  size_t npaths;
  char **headers; /* "Name: value" */
  size_t nheaders;
  char *body;      /* NULL: none */
  int redirects;   /* follow them */
  long max_redirs; /* when followed (default 10) */
  int cond_and;    /* matchers-condition: and */
  int stop_first;  /* stop-at-first-match */
  tpl_matcher *matchers;
  size_t nmatchers;
  tpl_extractor *extractors;
  size_t nextractors;
} tpl_request;

typedef struct tpl {
  char *file, *id, *name, *severity;
  char **tags;
  size_t ntags;
  tpl_request *reqs;
  size_t nreqs;
} tpl;

/* A template that was not loaded, and why. */
typedef struct tpl_skip {
  char *file;
  char *reason;
} tpl_skip;

/* One member of a cluster: a path of a request of a template. */
typedef struct tpl_member {
  size_t tpl, req;
} tpl_member;

/* One distinct request: every template request that sends it. */
typedef struct cluster {
  const char *method, *path, *body; /* path with its variables */
  char **headers;
  size_t nheaders;
  int redirects;
  long max_redirs;
  tpl_member *members;
  size_t nmembers;
  int keep_body; /* a member needs the body */
  /* Per matcher id of the scan (tpl_options): a member's body value. The
   * others are marked as hit before each body (tpl_premark), so that the
   * engine streams the cluster's own (its narrowed databases, scan-vs.c). */
  unsigned char *mine;
  /* Its verdicts are known once every body value has hit (no size of the
   * body, no extractor, nothing over the kept body): tpl_settled. */
  int can_stop;
} cluster;

typedef struct templates {
  tpl *t;
  size_t n;
  tpl_skip *skips;
  size_t nskips;
  cluster *c;
  size_t nclusters;
  char randstr[16];
  /* The job generator: the current target and its next cluster. */
  char *target;
  size_t next_cluster;
  unsigned long seq; /* targets taken */
  /* stop-at-first-match: per template, window entries: entry seq % window
   * is seq + 1 once target seq reported it. A target's jobs are
   * consecutive and at most nslots run at once, so the targets in flight
   * fit the window; where they do not (targets that are no URLs take
   * numbers too), an entry overwritten lets a line through twice, never
   * drops one. */
  unsigned long *last;
  size_t window;
  unsigned long matches;
} templates;

/* A raw request (one, of text) into q's method, path, headers and body:
 * NULL, or why scan cannot run it (scan-tpl-raw.c). */
const char *tpl_raw(const char *text, tpl_request *q);
/* A DSL expression as a matcher of one value: 0, or -1 when it is not
 * of the subset (scan-tpl-raw.c). */
int tpl_dsl(const char *expr, tpl_matcher *m);

/* Reads one template file into ts: loaded, or skipped with its reason.
 * Returns 0, or -1 when it cannot be read or out of memory. */
int tpl_load_file(templates *ts, const char *path);
/* Loads every -t path (files, or directories of *.yaml / *.yml, in name
 * order) into ts. Returns 0, or -1 on a failure to read or out of memory
 * (with a message). A template scan cannot run is a skip, not a failure. */
int tpl_load(templates *ts, const char *const *paths, size_t npaths);
/* Clusters the loaded templates' requests, adding the -H headers. 0 or -1. */
int tpl_cluster(templates *ts, const options *o);
/* The scan's options for the templates: o's, with the body words and
 * regexes of every template as its --word and --regex matchers (each
 * distinct one once; their ids in the matchers' ids), so that the
 * engine of scan-match.c runs them all over each body as it streams,
 * and PCRE2 over the kept body for those it cannot. 0 or -1. */
int tpl_options(templates *ts, const options *o, options *out);
/* Once the engine has decided which of those run on the stream
 * (streamed, per matcher id): marks the clusters that keep bodies (a
 * regex extractor of the body, or a matcher that runs over the kept body),
 * and makes room for stop-at-first-match over nslots jobs in flight.
 * Returns whether any cluster keeps bodies, or -1 when out of memory. */
int tpl_keep(templates *ts, const unsigned char *streamed, size_t nids, size_t nslots);
/* Frees what tpl_options made (not what it shares with o). */
void tpl_options_free(options *out);
void tpl_free(templates *ts);
/* --validate: each skip and its reason, then the counts, on stdout. */
void tpl_print_validation(const templates *ts);
/* The summary's lines for templates, on stderr. */
void tpl_summary(const templates *ts, unsigned long requests);

/* The URL of cluster c for target, its variables replaced (new string),
 * or NULL when target is not a URL curl can parse. */
char *tpl_url(const templates *ts, const cluster *c, const char *target);
/* What a job's request holds, for as long as its transfer runs: the
 * headers (-H, then the template's) and the body, variables replaced. */
typedef struct tpl_job {
  struct curl_slist *headers;
  char *body;
} tpl_job;
/* Sets the easy handle's request to cluster c's for target, made in job
 * (what it held before is freed). 0 or -1. */
int tpl_set_request(CURL *e, const templates *ts, const cluster *c, const options *o,
                    const char *target, tpl_job *job);
void tpl_job_free(tpl_job *job);
/* The next job for a slot: its URL (new string), and in *cl, *seq and
 * *target (new string) its cluster, target number and target; NULL at
 * the end. */
char *tpl_next_job(templates *ts, targets *src, size_t *cl, unsigned long *seq, char **target);

/* The verdicts of every member of the slot's cluster over its response,
 * written as nuclei's JSON lines (scan-tpl-match.c); returns how many.
 * None for a transfer that failed or was interrupted. */
size_t tpl_report(struct scan *s, struct slot *sl, CURLcode cc, ending how);

#endif
