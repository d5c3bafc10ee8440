/* scan's json extractors: each jq program of the extractor run by libjq
 * over the text (the body, or its part) read as one JSON value, as
 * nuclei runs its gojq queries (pkg/operators/extractors): a text that is
 * not JSON (or holds a number past a double's range, which Go's reader
 * refuses) gives nothing; a program's results are its values until its
 * end or its first error; each result as nuclei prints it: a string as
 * it is, a number as Go's strconv 'f' (shortest digits, no exponent),
 * null as "", a bool as true or false, an array or an object as Go's
 * encoding/json writes it (keys sorted, no spaces, <, > and & escaped).
 *
 * The parse and the programs run in a child process (base-child.c), the
 * programs compiled once for the scan (tpl_json_compile), as one:
 * a program may loop (repeat, until, recursion) or grow without end, and
 * libjq has no bound of its own on either; the child's CPU time and
 * memory are bounded, and what it answered before it ended is the answer.
 * A text whose first byte cannot begin JSON costs no child. jq reads at
 * most 256 levels of nesting; deeper text is not JSON to it. */
#include "eval.h"

#include <jq.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JSON_RESULTS_MAX 100000 /* results of one extractor looked at, at most */

/* A value being written, cut at EXTRACT_VALUE bytes. */
typedef struct value {
  char p[EXTRACT_VALUE];
  size_t len;
} value;

static void add(value *t, const char *s, size_t n)
{
  if (n > EXTRACT_VALUE - t->len)
    n = EXTRACT_VALUE - t->len;
  memcpy(t->p + t->len, s, n);
  t->len += n;
}

static void add_str(value *t, const char *s) { add(t, s, strlen(s)); }

static int full(const value *t) { return t->len == EXTRACT_VALUE; }

/* A finite double as Go prints it with the fewest digits that read back:
 * 'f' (no exponent), or as encoding/json does (e) when asked and its
 * magnitude is below 1e-6 or from 1e21 on. */
static void add_number(value *t, double d, int json)
{
  char e[40], out[400];
  if (!isfinite(d)) {
    add_str(t, json ? "null" : isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, d);
    if (strtod(e, NULL) == d)
      break;
  }
  /* e: [-]D[.DDD]e(+|-)XX */
  char digits[20];
  size_t n = 0;
  const char *p = e + (e[0] == '-');
  for (; *p != 'e'; p++)
    if (*p != '.')
      digits[n++] = *p;
  int x = atoi(p + 1), neg = e[0] == '-';
  size_t o = 0;
  if (neg)
    out[o++] = '-';
  double mag = fabs(d);
  if (json && mag != 0 && (mag < 1e-6 || mag >= 1e21)) {
    snprintf(out + o, sizeof out - o, "%c%s%.*se%c%d", digits[0], n > 1 ? "." : "", (int)n - 1,
             digits + 1, x < 0 ? '-' : '+', x < 0 ? -x : x);
    add_str(t, out);
    return;
  }
  if (x < 0) { /* 0.000DDD */
    o += (size_t)snprintf(out + o, sizeof out - o, "0.");
    for (int z = 0; z < -x - 1; z++)
      out[o++] = '0';
    memcpy(out + o, digits, n);
    o += n;
  } else if ((size_t)x + 1 >= n) { /* DDD000 */
    memcpy(out + o, digits, n);
    o += n;
    for (size_t z = n; z < (size_t)x + 1; z++)
      out[o++] = '0';
  } else { /* DD.DD */
    memcpy(out + o, digits, (size_t)x + 1);
    o += (size_t)x + 1;
    out[o++] = '.';
    memcpy(out + o, digits + x + 1, n - (size_t)x - 1);
    o += n - (size_t)x - 1;
  }
  add(t, out, o);
}

/* The bytes encoding/json escapes as \n and the like, and those letters. */
static const char SHORT[] = "\n\r\t\b\f", SHORT_AS[] = "nrtbf";

/* A string as encoding/json quotes it (HTML-safe). */
static void add_quoted(value *t, const char *s, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  add(t, "\"", 1);
  for (size_t i = 0; i < n && !full(t); i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
    if (c == '"' || c == '\\')
      add(t, "\\", 1), add(t, s + i, 1);
    else if (c && strchr(SHORT, c))
      add(t, (char[]){'\\', SHORT_AS[strchr(SHORT, c) - SHORT]}, 2);
    else if (c < 0x20 || c == '<' || c == '>' || c == '&')
      add(t, esc, 6);
    else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
             ((unsigned char)s[i + 2] & 0xfe) == 0xa8)
      add_str(t, (unsigned char)s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029"), i += 2;
    else
      add(t, s + i, 1);
  }
  add(t, "\"", 1);
}

/* v (not consumed) as encoding/json writes it, until t is full. */
static void add_json(value *t, jv v)
{
  switch (jv_get_kind(v)) {
  case JV_KIND_NULL: add_str(t, "null"); break;
  case JV_KIND_TRUE: add_str(t, "true"); break;
  case JV_KIND_FALSE: add_str(t, "false"); break;
  case JV_KIND_NUMBER: add_number(t, jv_number_value(v), 1); break;
  case JV_KIND_STRING:
    add_quoted(t, jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
    break;
  case JV_KIND_ARRAY:
    add(t, "[", 1);
    for (int i = 0; i < jv_array_length(jv_copy(v)) && !full(t); i++) {
      jv item = jv_array_get(jv_copy(v), i);
      if (i)
        add(t, ",", 1);
      add_json(t, item);
      jv_free(item);
    }
    add(t, "]", 1);
    break;
  case JV_KIND_OBJECT: {
    jv keys = jv_keys(jv_copy(v)); /* sorted, as Go sorts a map's keys */
    add(t, "{", 1);
    for (int i = 0; i < jv_array_length(jv_copy(keys)) && !full(t); i++) {
      jv k = jv_array_get(jv_copy(keys), i);
      jv item = jv_object_get(jv_copy(v), jv_copy(k));
      if (i)
        add(t, ",", 1);
      add_quoted(t, jv_string_value(k), (size_t)jv_string_length_bytes(jv_copy(k)));
      add(t, ":", 1);
      add_json(t, item);
      jv_free(item);
      jv_free(k);
    }
    jv_free(keys);
    add(t, "}", 1);
    break;
  }
  default: break;
  }
}

/* A result as nuclei prints it (types.JSONScalarToString, else JSON). */
static void result_text(value *t, jv v)
{
  t->len = 0;
  switch (jv_get_kind(v)) {
  case JV_KIND_NULL: break;
  case JV_KIND_STRING:
    add(t, jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
    break;
  case JV_KIND_NUMBER: add_number(t, jv_number_value(v), 0); break;
  default: add_json(t, v);
  }
}

/* Whether every number of v is finite (as Go's reader needs). */
static int finite(jv v)
{
  int ok = 1;
  switch (jv_get_kind(v)) {
  case JV_KIND_NUMBER: return isfinite(jv_number_value(v));
  case JV_KIND_ARRAY:
    for (int i = 0; ok && i < jv_array_length(jv_copy(v)); i++) {
      jv item = jv_array_get(jv_copy(v), i);
      ok = finite(item);
      jv_free(item);
    }
    return ok;
  case JV_KIND_OBJECT: {
    int it = jv_object_iter(v);
    while (ok && jv_object_iter_valid(v, it)) {
      jv item = jv_object_iter_value(v, it);
      ok = finite(item);
      jv_free(item);
      it = jv_object_iter_next(v, it);
    }
    return ok;
  }
  default: return 1;
  }
}

/* What the child is given. */
typedef struct job {
  jq_state *jq; /* the program of all queries (tpl_json_compile) */
  const tpl_extractor *e;
  rc_view text;
} job;

/* The child's results so far, each distinct one once. */
typedef struct seen {
  value v[EXTRACT_MAX];
  size_t n;
} seen;

/* Writes t to fd as its length (4 bytes) and its bytes, unless it is in
 * s: 0, or -1 when fd takes no more. */
static int answer(seen *s, const value *t, int fd)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].len == t->len && !memcmp(s->v[i].p, t->p, t->len))
      return 0;
  uint32_t len = (uint32_t)t->len;
  s->v[s->n++] = *t;
  return write_all(fd, &len, sizeof len) == 0 && write_all(fd, t->p, t->len) == 0 ? 0 : -1;
}

/* In the child: each program over the parsed text, each distinct result
 * written to fd (answer), EXTRACT_MAX of them at most. */
static int run(void *ud, int fd)
{
  const job *j = ud;
  jv in = jv_parse_sized(j->text.ptr, (int)j->text.len);
  seen *s = calloc(1, sizeof *s);
  if (!s || !jv_is_valid(in) || !finite(in))
    return 0;
  value t;
  size_t results = 0;
  for (size_t i = 0; i < j->e->n && results < JSON_RESULTS_MAX && s->n < EXTRACT_MAX; i++) {
    jq_start(j->jq, JV_ARRAY(jv_number((double)j->e->queries[i].index), jv_copy(in)), 0);
    jv v;
    while (results < JSON_RESULTS_MAX && s->n < EXTRACT_MAX && jv_is_valid(v = jq_next(j->jq))) {
      results++;
      result_text(&t, v);
      jv_free(v);
      if (answer(s, &t, fd) != 0)
        return 1;
    }
  }
  return 0; /* the child exits: what it holds goes with it */
}

/* Whether text may be one JSON value, as jq's parser reads it: a
 * document or string, or a lone scalar (a number or literal: a run of
 * bytes up to white space or a delimiter) with only white space after
 * it. What it refuses, jq would too, without the child: text such as
 * "not found" or "404 page not found" is a first token and then more,
 * which jq reads as an error or as a second value, and refuses. Bytes
 * up to the space count as white space here, so that nothing jq might
 * skip is taken for more. */
static int may_be_json(rc_view text)
{
  const unsigned char *p = (const unsigned char *)text.ptr, *end = p + text.len;
  while (p < end && *p <= ' ')
    p++;
  if (p == end || !strchr("{[\"-0123456789tfn", *p))
    return 0;
  if (*p == '{' || *p == '[' || *p == '"')
    return 1;
  while (p < end && *p > ' ' && !strchr("[]{}:,\"", *p))
    p++;
  while (p < end && *p <= ' ')
    p++;
  return p == end;
}

void json_extract(void *jq, const tpl_extractor *e, rc_view text, tpl_values *x)
{
  if (!jq || !text.ptr || !may_be_json(text) || text.len > INT32_MAX)
    return;
  size_t cap = (size_t)EXTRACT_MAX * (EXTRACT_VALUE + 4) + 1; /* room for all it answers */
  char *out = malloc(cap);
  if (!out) {
    x->nomem = 1;
    return;
  }
  int ok;
  job j = {jq, e, text};
  ssize_t n = child_run(run, &j, out, cap, &ok);
  for (size_t at = 0; n > 0 && at + 4 <= (size_t)n && x->n < EXTRACT_MAX;) {
    uint32_t len;
    memcpy(&len, out + at, sizeof len);
    if (len > EXTRACT_VALUE || at + 4 + len > (size_t)n)
      break; /* cut short: the child ended there */
    tpl_values_add(x, out + at + 4, len);
    at += 4 + len;
  }
  free(out);
}
