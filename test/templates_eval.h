/* test_templates' evaluation of each template of test/templates/run/,
 * written independently of scan: each template's request fetched with
 * libcurl, its matchers applied by hand (memmem, strcasestr, PCRE2). */
#ifndef TEMPLATES_EVAL_H
#define TEMPLATES_EVAL_H

#include <stddef.h>

#define EXPECT_MAX 2048

extern char base[128]; /* the target: http://127.0.0.1:PORT, set by the test */
/* scan's lines for the template being evaluated, in the form of its
 * evaluation's (set by the test): where a template sends a random value,
 * the evaluation reads the value scan sent from there, checks its shape,
 * and fetches and matches with it itself. */
extern const char *reported_lines;

/* A response as the test fetched it: the final header block and body. */
typedef struct got {
  long status;
  char head[8192], body[65536];
  size_t head_len, body_len;
} got;

/* Fetches path of the target with method (NULL: GET), one header (NULL:
 * none), a body (NULL: none), following redirects up to follow (0: none). */
void fetch_with(const char *path, const char *method, const char *header, const char *data,
                long follow, got *g);
void fetch(const char *path, const char *method, const char *header, long follow, got *g);
/* Whether word occurs in text; whether regex re matches in it. */
int has(const char *text, size_t len, const char *word);
int regex_in(const char *re, const char *text, size_t len);

/* A template of run/ and the lines scan should print for it: "URL
 * name=NAME extracts=A|B\n" each. */
/* An evaluation's lines: one, one of those expected (stop-at-first-match);
 * or all expected, in any order (payloads that run at once). */
#define ONE_OF    1
#define ANY_ORDER 2
typedef struct evaluation {
  const char *id;
  void (*expected)(char *out);
  int lines; /* 0: as expected; ONE_OF or ANY_ORDER */
} evaluation;
extern const evaluation RUN[];
extern const size_t NRUN;

#endif
