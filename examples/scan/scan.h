/* scan: a concurrent HTTP scanner on one curl multi handle, in the manner of
 * template scanners such as nuclei and httpx: fetch many targets at once,
 * run simple matchers over each response, print one JSON line per target.
 *
 * The program's parts, one file each:
 *   scan-opts.c   the command line, and the targets it names
 *   scan-loop.c   main: the pool, the slots, the multi loop, signals
 *   scan-match.c  matchers, verdicts, and the body observer that feeds them
 *   scan-re.c     regexes: PCRE syntax, compiled and run by PCRE2
 *   scan-extract.c  extractors: what --extract regexes find in a body
 *   scan-vs.c     the streaming engine (Vectorscan), the only file that
 *                 knows whether this build has it
 *   scan-json.c   one JSON line per target, and the HTML title in it
 *   scan-tpl*.c, scan-cluster.c  templates (-t); see scan-tpl.h
 * This header holds what they share: the options, the verdict, the slot
 * (one unit of concurrency) and the scan.
 *
 * Builds alone, with or without Vectorscan:
 *   cd examples/scan && cc *.c $(pkg-config --cflags --libs respchain libcurl libpcre2-8 yaml-0.1)
 *   cd examples/scan && cc -DSCAN_HAVE_VECTORSCAN=1 *.c \
 *      $(pkg-config --cflags --libs respchain libcurl libpcre2-8 yaml-0.1 libhs) */
#ifndef SCAN_H
#define SCAN_H

/* POSIX.1-2008 (getline, strdup, clock_gettime), also under -std=c11. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <curl/curl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "respchain.h"

#define DEFAULT_CONCURRENCY        50
#define DEFAULT_MAX_REDIRS         10L
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS         30000L

enum { EXIT_RAN = 0, EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_BROKEN_PIPE = 128 + SIGPIPE };

/* ---- Options (scan-opts.c) ---------------------------------------------- */

/* What --word and --regex look at. */
typedef enum part {
  PART_BODY,   /* the final body, decoded */
  PART_HEADER, /* the final response's header lines, one by one */
  PART_ALL     /* those header lines, and the body */
} part;

#define STATUS_MAX 999 /* --status codes are 100 to STATUS_MAX */

/* A --regex: PCRE syntax, compiled by PCRE2 (scan-re.c). */
typedef struct regex {
  const char *text;    /* as given, for the output */
  pcre2_code *code;    /* the regex */
  pcre2_code *ends;    /* the regex, then a callout (see regex_first_end); may be NULL */
  uint32_t groups;     /* its capture groups */
  uint32_t lookbehind; /* the bytes it may look at before a match's start */
} regex;

/* The matchers have one id space: the words (0 .. nwords-1), then the
 * regexes (nwords ..). */
typedef struct options {
  const char **urls; /* -u, in order; room for argc */
  size_t nurls;
  const char *list;            /* -l FILE; "-" or NULL without -u: stdin */
  const char *output;          /* -o FILE; NULL: stdout */
  unsigned long shard, shards; /* --shard K/N: targets K-1, K-1+N, ...; 1/1: all */
  long concurrency;
  size_t max_body, max_memory; /* max_memory 0: no limit */
  long max_redirs;
  long connect_timeout_ms, timeout_ms; /* 0: none */
  size_t budget;                       /* 0: off */
  rc_overflow overflow;
  /* The request. */
  struct curl_slist *headers; /* -H, in order */
  const char *method;         /* the method sent (GET, POST with -d, or -X) */
  const char *data, *proxy, *user_agent;
  long http_version; /* CURL_HTTP_VERSION_*; NONE: curl's */
  int insecure;
  double rate; /* requests per second; 0: no limit */
  long retries;
  /* Output. */
  int matched_only, silent;
  /* Matchers. --word and --regex may repeat (the arrays have room for
   * argc); --status codes are a set. */
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
  /* Templates. */
  const char **templates; /* -t, in order; room for argc */
  size_t ntemplates;
  int validate; /* --validate: load them, report, exit */
} options;

/* Fills o from the command line. Returns -1 to go on, else the exit status
 * (after --help, --version or a usage error). */
int parse_options(int argc, char **argv, options *o);
void options_free(options *o);

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

/* ---- Matchers and verdicts (scan-match.c) ------------------------------- */

/* Where a matcher's first hit ends in the body: the count of body bytes
 * up to and including its last byte. NO_OFFSET: not in the body (a
 * header line, or no hit). */
#define NO_OFFSET SIZE_MAX

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

int verdict_init(verdict *v, const options *o);
void verdict_free(verdict *v);
/* Matcher id hit, its first match ending at offset; a matcher that hit
 * already keeps its first hit. Returns 1 when the hit is its first. */
int verdict_hit(verdict *v, const options *o, size_t id, size_t offset);
/* Whether matcher id has hit. */
int verdict_has(const verdict *v, const options *o, size_t id);

/* ---- Regexes (scan-re.c) ------------------------------------------------ */

/* Compiles text into re. Returns 0, or -1 with PCRE2's message and the
 * offset where it stopped in msg. */
int regex_compile(regex *re, const char *text, char *msg, size_t cap);
void regex_free(regex *re);
/* Frees what all regexes share, after the last regex_free. */
void regex_done(void);
/* Whether re matches somewhere in text. */
int regex_hit(const regex *re, rc_view text);
/* Where the first match of re to end, ends, as the count of bytes of text
 * up to it; NO_OFFSET when re does not match. */
size_t regex_first_end(const regex *re, rc_view text);
/* The first match of re in text from byte start on, with pcre2_match's
 * flags (PCRE2_PARTIAL_HARD, PCRE2_NOTBOL): returns what pcre2_match does
 * (PCRE2_ERROR_PARTIAL too); on a match, bounds holds its start and end,
 * then those of group 1 (PCRE2_UNSET when it has none, or it is unset);
 * on a partial match, its start and the text's end. */
int regex_next(const regex *re, rc_view text, size_t start, uint32_t flags, size_t bounds[4]);

/* How the --word and --regex matchers of the body run: on the stream (the
 * engine of scan-vs.c, when this build has one), or over the body kept
 * whole once the transfer ends. */
typedef struct engine {
  unsigned char *streamed;  /* per matcher id: on the stream */
  size_t nstreamed, nwhole; /* body matchers on the stream, and over the body kept */
  int keep_body;            /* some matcher, or none's output, needs the body kept */
  struct vs_engine *vs;     /* the streaming engine's own; NULL: none */
  /* The extractors that the engine prefilters (per extractor; NULL: none),
   * and their widest matches (UINT_MAX: unbounded). */
  unsigned char *ex_filtered;
  unsigned *ex_width;
} engine;

/* Decides where each matcher runs, and whether bodies are kept. Returns
 * 0, or -1 when out of memory. */
int engine_build(engine *g, const options *o);
void engine_free(engine *g, const options *o);

struct scan;
struct slot;

/* The body observer (rc_response_observe) of a slot's response. */
rc_code observe(void *ud, const char *data, size_t len);
/* Before a transfer: nothing observed yet. */
void observed_reset(struct scan *s, struct slot *sl);
/* The target's verdict, once its transfer is over; returns whether it
 * matched. */
int matches(struct scan *s, struct slot *sl);
/* -t: before a body, the matchers of other clusters than the slot's
 * count as hit, so that only its own run (scan-tpl-match.c). */
void tpl_premark(struct scan *s, struct slot *sl);
/* -t: whether the slot's verdicts are all known before its body ends, so
 * that its transfer stops ("stopped": true). */
int tpl_settled(const struct scan *s, const struct slot *sl);

/* ---- Extractors (scan-extract.c) --------------------------------------- */

#define EXTRACT_MAX    100   /* values kept per extractor and target */
#define EXTRACT_VALUE  1024  /* bytes of a value kept, at most */
#define EXTRACT_WINDOW 65536 /* bytes of the body kept for a match in progress */

/* A hop's body begins: no values, nothing seen. Returns 0, or -1 when out
 * of memory. */
int extract_begin(struct scan *s, struct slot *sl);
/* A slice of the body. Returns 0, or -1 when out of memory. */
int extract_feed(struct scan *s, struct slot *sl, const char *data, size_t len);
/* The body's end: the matches that were waiting for more bytes end. */
void extract_end(struct scan *s, struct slot *sl);
/* The values of extractor i found in the final body: *n of them, each
 * value[k] of len[k] bytes, in order of first appearance. */
void extract_values(const struct slot *sl, size_t i, size_t *n, const char *const **value,
                    const size_t **len);
/* Whether extractor i may have missed a value in the final body: a match
 * in progress outgrew EXTRACT_WINDOW and was dropped. */
int extract_incomplete(const struct slot *sl, size_t i);
void extract_slot_free(struct slot *sl);

/* ---- The streaming engine (scan-vs.c) ----------------------------------- */

/* The engine this build has, as --help, --version and the summary name it. */
const char *engine_name(void);
/* The paragraph of --help about it. */
void engine_usage(FILE *out);
/* Compiles the body matchers the engine takes, marking them in
 * g->streamed. Returns 0 (also when there is no engine), or -1 when out
 * of memory. */
int vs_build(engine *g, const options *o);
void vs_free(engine *g, const options *o);
/* A hop's body begins (its head matched into the slot's verdict): opens
 * the slot's stream for the streamed matchers without a hit. Returns 0,
 * or -1 when out of memory. */
int vs_begin(struct scan *s, struct slot *sl);
/* A slice of the body, through the stream; 0, or -1 on failure. */
int vs_feed(struct scan *s, struct slot *sl, const char *data, size_t len);
/* Closes the slot's stream, if open; eod: first reporting the matches the
 * body's end decides ($), the body being whole. */
void vs_close(struct scan *s, struct slot *sl, int eod);
/* Frees what the slot's stream kept (after vs_close). */
void vs_slot_free(struct slot *sl);
/* The extractors' prefilter: a stream of the extractors Vectorscan takes,
 * which tells in which slices a match of each ends, so that PCRE2 runs
 * there only (scan-extract.c). vs_extract_build marks them in
 * g->ex_filtered; 0, or -1 when out of memory. */
int vs_extract_build(engine *g, const options *o);
/* Opens the slot's extractor stream for a hop's body; 0, or -1. */
int vs_extract_begin(struct scan *s, struct slot *sl);
/* A slice through it: due[i] set for each extractor a match of which ends
 * in it. Returns 0, or -1 on failure. */
int vs_extract_feed(struct scan *s, struct slot *sl, const char *data, size_t len,
                    unsigned char *due);

/* ---- The scan (scan-loop.c) --------------------------------------------- */

#define TITLE_HEAD (16 * 1024) /* bytes of the body the title is looked for in */

typedef enum slot_state {
  SLOT_IDLE,   /* no target */
  SLOT_READY,  /* a target, waiting for its time (rate, retry backoff) */
  SLOT_RUNNING /* its transfer is in the multi handle */
} slot_state;

/* One unit of concurrency: a transfer at a time. */
typedef struct slot {
  struct scan *scan; /* for the body observer */
  CURL *easy;
  rc_response *resp;
  slot_state state;
  char *url;                    /* the target as given; NULL when idle */
  long attempts;                /* transfers made for this target */
  double due;                   /* READY: seconds since the scan's start */
  struct timespec started;      /* when the transfer was handed to curl */
  char errbuf[CURL_ERROR_SIZE]; /* curl's detailed message for a failure */
  /* What the body observer found in the body of hop number hop (a count:
   * 0 before any body), the final one unless a later hop came: */
  size_t hop;
  verdict v;                /* the hits so far, head and streamed body */
  char *head;               /* the body's first TITLE_HEAD bytes, for the title */
  size_t head_len;          /* bytes in head */
  struct vs_stream *vs;     /* the streaming engine's state; NULL: none yet */
  struct extract_state *ex; /* the extractors' state; NULL: none yet */
  /* -t: the target (url is the request's URL for it), its number, and
   * the cluster of templates whose request this is. */
  char *target;
  unsigned long seq;
  size_t cluster;
  struct tpl_job *job; /* the request's headers and body; NULL: none */
} slot;

/* How a target's last transfer ended, for its report. */
typedef enum ending {
  ENDED,       /* curl finished it */
  NOT_STARTED, /* curl refused to start it */
  INTERRUPTED  /* the scan stopped while it ran or waited for a retry */
} ending;

/* Text built in memory: an output line, built whole before it is written. */
typedef struct line {
  char *p;
  size_t len, cap;
  int nomem; /* an append failed: the line is incomplete */
} line;

typedef struct scan {
  const options *opt;
  struct templates *tpl; /* -t; NULL: the matchers of the command line */
  int out;   /* the JSON lines' file descriptor */
  line line; /* the line being built; its memory is reused */
  engine engine;
  rc_pool *pool;
  CURLM *multi;
  slot *slots;
  size_t nslots;
  targets src;
  int src_done;      /* next_target returned NULL */
  size_t active;     /* slots RUNNING: transfers in the multi handle */
  size_t ready;      /* slots READY */
  double next_start; /* --rate: earliest next request */
  int write_error;   /* errno of a failed write of a result; 0: none */
  unsigned long done, matched, errors, retried, interrupted;
  unsigned long incomplete; /* targets with an extractor that may have missed a value */
  uint64_t body_bytes, wire_bytes;
  struct timespec start;
  double last_progress;
  int progress; /* stderr is a terminal, not --silent */
} scan;

double seconds_since(const struct timespec *t0);

/* ---- Output (scan-json.c) ----------------------------------------------- */

void put(line *l, const char *s, size_t n);
void puts_line(line *l, const char *s);
void printf_line(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether the final response says its body is HTML. */
int is_html(rc_response *r);
/* Reports the slot's target as one JSON line (unless --matched-only
 * leaves it out) and counts it. */
void report(scan *s, slot *sl, CURLcode cc, ending how);
/* n bytes at s as a JSON string, always valid UTF-8. */
void json_bytes(line *l, const char *s, size_t n);
/* s as a JSON string; null for NULL. */
void json_string(line *l, const char *s);
/* The wall-clock time as RFC 3339, UTC. */
void json_timestamp(line *l);
/* Writes the line built in s->line, whole; a failure sets write_error. */
void write_line(scan *s);

#endif
