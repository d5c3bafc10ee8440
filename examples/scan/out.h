/* scan's output: one JSON line per target (out-json.c) or, with -t, per
 * template, target and match, as nuclei writes them (out-tpl.c), each
 * built whole in memory and written with one write(2) as soon as its
 * target ends; and the reports on the templates (--validate, the
 * summary). */
#ifndef SCAN_OUT_H
#define SCAN_OUT_H

#include "eval.h"

/* Where the lines go. */
typedef struct output {
  int fd;                /* the JSON lines' file descriptor */
  line line;             /* the line being built; its memory is reused */
  int write_error;       /* errno of a failed write of a result; 0: none */
  unsigned long matches; /* -t: the lines written */
  /* --json-export: the array's file (0: none), its elements so far. */
  int export_fd;
  unsigned long exported;
} output;

/* How a target's last transfer ended, for its report. */
typedef enum ending {
  ENDED,       /* curl finished it */
  NOT_STARTED, /* curl refused to start it */
  INTERRUPTED  /* the scan stopped while it ran or waited for a retry */
} ending;

/* What the loop knows of a target's last transfer, for its line. */
typedef struct attempt {
  const char *url;    /* the request's URL */
  const char *method; /* the method sent */
  CURL *easy;         /* its handle: the final URL, a proxy's CONNECT status */
  const char *errbuf; /* curl's detailed message for a failure; "": none */
  long attempts;      /* transfers made for the target */
  double took;        /* seconds since its transfer was handed to curl */
  CURLcode cc;
  ending how;
  const plan_job *job; /* -t: the values its request was made with; NULL: none */
} attempt;

/* ---- JSON (out-json.c) -------------------------------------------------- */

/* n bytes at s as a JSON string, always valid UTF-8. */
void json_bytes(line *l, const char *s, size_t n);
/* s as a JSON string; null for NULL. */
void json_string(line *l, const char *s);
/* The wall-clock time as RFC 3339, UTC. */
void json_timestamp(line *l);
/* Writes the line built in o->line, whole; a failure sets write_error. */
void write_line(output *o);
/* The error field of the target's line: NULL, or what went wrong (in
 * buf, or static). */
const char *out_error(const reading *r, const attempt *a, char *buf, size_t cap);
/* The target's line, from its reading and its last attempt. */
void out_target(output *o, const reading *r, const attempt *a, int matched);

/* ---- URLs (out-url.c) --------------------------------------------------- */

/* The fields nuclei writes of a target URL: host (its name), port,
 * scheme, url (the target as given), and ip when the host is an address. */
void json_target_fields(line *l, const char *target);
/* The URL of the request that hop (as rc_hop counts, from 0) of r
 * answered, after the redirects before it; NULL when out of memory. */
char *out_hop_url(const rc_response *r, const attempt *a, int hop);

/* ---- --json-export (out-export.c) --------------------------------------- */

/* Opens path for the array. 0, or -1 with errno. */
int out_export_open(output *o, const char *path);
/* The line just written (o->line), as the array's next element. */
void out_export(output *o);
/* Ends the array and closes its file. 0, or -1 with write_error set. */
int out_export_close(output *o);

/* ---- Templates (out-tpl.c) ---------------------------------------------- */

void out_free(output *o);
/* The verdicts of every member of the reading's cluster over its
 * response, written as nuclei's JSON lines; returns
 * how many. None for a transfer that failed or was interrupted. A
 * sequence's request (in: its state; NULL for independent templates):
 * what its block's later requests need is kept there, and whether it
 * matched. */
size_t out_templates(output *o, const reading *r, const attempt *a, const char *target,
                     plan_seq *in);
/* --validate: each skip and its reason, then the counts, on stdout;
 * verbose (-v): first, for each template loaded, what it keeps of the
 * body (eval_keeps). */
void out_validation(const templates *ts, const plan *p, int verbose);
/* The summary's lines for templates, on stderr. */
void out_summary(const templates *ts, const plan *p, unsigned long requests, unsigned long matches);

#endif
