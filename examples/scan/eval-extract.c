/* scan's extractors: --extract REGEX reports what a regex finds in the
 * body (as httpx -er and nuclei's regex extractors do): group 1 of each
 * match when the regex has groups, else the whole match; distinct values
 * in order of first appearance, at most EXTRACT_MAX per extractor, each
 * cut at EXTRACT_VALUE bytes; empty ones are left out. Matches are found
 * as a loop over the whole body would find them, one after another
 * without overlap, each search starting where the last match ended.
 *
 * The body is not kept for them: each slice goes through every extractor
 * as it arrives, with PCRE2's partial matching (PCRE2_PARTIAL_HARD), over
 * a window of the body that holds what a match in progress needs, its
 * start on, and the bytes before it a lookbehind or \b may look at. A
 * partial match waits for the next slice; the body's end settles it. A
 * match longer than EXTRACT_WINDOW may not be found: its start leaves the
 * window, and the search goes on after it. The extractor then says that
 * a value may be missing (extract_incomplete): a match in progress lost
 * its start (it might still have failed), or, for one that PCRE2 skips
 * (below), the prefilter saw a match end that PCRE2 cannot find in the
 * window, its start having left unsearched. The prefilter does not say
 * where a match starts: a long match that ends in a slice where PCRE2
 * finds another is not told apart, and the end of a match that overlaps
 * one found (as in "^(.*?)X" with X seen again) is taken for a miss.
 *
 * Where the build has Vectorscan, a stream of the extractors it takes
 * (eval-vs.c) says in which slices a match of each ends; PCRE2 runs over
 * the others only while a partial match waits, so a sparse extractor
 * costs about what a streamed matcher does. */
#include "eval.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* What one extractor found in this body. */
typedef struct found {
  char *value[EXTRACT_MAX];
  size_t len[EXTRACT_MAX];
  size_t n;
  size_t next; /* the body offset where its next search starts */
  int pending; /* a partial match waits for more bytes */
  int outgrew; /* a match in progress outgrew the window: a value may be missing */
  int skipped; /* bytes before next left the window unsearched (prefiltered) */
} found;

struct extract_state {
  char *win;        /* the window: body bytes from base on */
  size_t base, len; /* its first byte's body offset, and its bytes */
  size_t cap;
  found *found;       /* per extractor */
  unsigned char *due; /* per extractor: the prefilter saw a match end in this slice */
};

static void values_clear(found *f)
{
  for (size_t k = 0; k < f->n; k++)
    free(f->value[k]);
  f->n = 0;
}

int extract_begin(reading *r)
{
  const matchers *o = r->g->m;
  if (!o->nextracts)
    return 0;
  struct extract_state *st = r->ex;
  if (!st) {
    if (!(st = r->ex = calloc(1, sizeof *st)) ||
        !(st->found = calloc(o->nextracts, sizeof *st->found)) ||
        !(st->due = calloc(o->nextracts, 1)))
      return -1;
  }
  st->base = st->len = 0;
  for (size_t i = 0; i < o->nextracts; i++) {
    values_clear(&st->found[i]);
    st->found[i].next = 0;
    st->found[i].pending = st->found[i].outgrew = st->found[i].skipped = 0;
  }
  return vs_extract_begin(r);
}

/* Adds a value (cut at EXTRACT_VALUE) unless it is empty or known. */
static int add_value(found *f, const char *p, size_t len)
{
  if (len > EXTRACT_VALUE)
    len = EXTRACT_VALUE;
  if (len == 0)
    return 0;
  for (size_t k = 0; k < f->n; k++)
    if (f->len[k] == len && memcmp(f->value[k], p, len) == 0)
      return 0;
  if (!(f->value[f->n] = malloc(len)))
    return -1;
  memcpy(f->value[f->n], p, len);
  f->len[f->n++] = len;
  return 0;
}

/* Runs extractor re over the window from f->next on, as far as the
 * window decides (final: the body ends with it). Returns the matches
 * found (new values or not), or -1 when out of memory. */
static int run_one(struct extract_state *st, const regex *re, found *f, int final)
{
  int hits = 0;
  rc_view text = {st->win ? st->win : "", st->len};
  uint32_t flags = (final ? 0 : PCRE2_PARTIAL_HARD) | (st->base > 0 ? PCRE2_NOTBOL : 0);
  f->pending = 0;
  while (f->n < EXTRACT_MAX && f->next - st->base <= st->len) {
    size_t b[4];
    int rc = regex_next(re, text, f->next - st->base, flags, 1, b);
    if (rc == PCRE2_ERROR_PARTIAL) {
      if (st->base + b[0] > f->next)
        f->next = st->base + b[0]; /* again from there, with more bytes */
      f->pending = 1;
      return hits;
    }
    if (rc < 0) {
      f->next = st->base + st->len + (final ? 1 : 0); /* none starts before the end */
      return hits;
    }
    hits += hits < INT_MAX;
    int group = b[2] != PCRE2_UNSET;
    if ((group || re->groups == 0) &&
        add_value(f, text.ptr + (group ? b[2] : b[0]), group ? b[3] - b[2] : b[1] - b[0]) != 0)
      return -1;
    f->next = st->base + (b[1] > b[0] ? b[1] : b[0] + 1);
  }
  return hits;
}

/* Drops the window's bytes that no extractor needs any more; past
 * EXTRACT_WINDOW, the oldest, and the matches in progress that started
 * there (they outgrew it), or the bytes a skipped extractor has not
 * searched. */
static void window_trim(struct extract_state *st, const matchers *o)
{
  size_t seen = st->base + st->len, keep = seen;
  for (size_t i = 0; i < o->nextracts; i++) {
    size_t back = o->extracts[i].lookbehind + 1;
    size_t from = st->found[i].next < seen ? st->found[i].next : seen;
    from = from > back ? from - back : 0;
    if (st->found[i].n < EXTRACT_MAX && from < keep)
      keep = from;
  }
  if (seen - keep > EXTRACT_WINDOW) {
    keep = seen - EXTRACT_WINDOW;
    for (size_t i = 0; i < o->nextracts; i++) {
      found *f = &st->found[i];
      size_t back = o->extracts[i].lookbehind + 1;
      if (f->next < keep + back) {
        f->next = keep + back;
        if (f->n < EXTRACT_MAX) {
          f->outgrew |= f->pending;
          f->skipped |= !f->pending;
        }
      }
    }
  }
  if (keep > st->base) {
    memmove(st->win, st->win + (keep - st->base), seen - keep);
    st->len = seen - keep;
    st->base = keep;
  }
}

int extract_feed(reading *r, const char *data, size_t len)
{
  const matchers *o = r->g->m;
  struct extract_state *st = r->ex;
  if (!o->nextracts || !st || !len)
    return 0;
  if (st->len + len > st->cap) {
    size_t cap = st->len + len;
    char *win = realloc(st->win, cap);
    if (!win)
      return -1;
    st->win = win;
    st->cap = cap;
  }
  memcpy(st->win + st->len, data, len);
  st->len += len;
  memset(st->due, 0, o->nextracts);
  if (vs_extract_feed(r, data, len, st->due) != 0)
    return -1;
  const engine *g = r->g;
  for (size_t i = 0; i < o->nextracts; i++) {
    found *f = &st->found[i];
    if (g->ex_filtered && g->ex_filtered[i] && !st->due[i] && !f->pending) {
      /* No match of it ends in the slice: none that starts before the
       * widest match back from its end can end later either. */
      size_t seen = st->base + st->len;
      if (g->ex_width[i] != UINT_MAX && seen + 1 >= g->ex_width[i] &&
          seen + 1 - g->ex_width[i] > f->next)
        f->next = seen + 1 - g->ex_width[i];
      continue;
    }
    int hits = run_one(st, &o->extracts[i], f, 0);
    if (hits < 0)
      return -1;
    /* A match the prefilter saw end here, that PCRE2 finds neither whole
     * nor in progress, started in bytes that left unsearched. */
    if (f->skipped && st->due[i] && !hits && !f->pending && f->n < EXTRACT_MAX)
      f->outgrew = 1;
  }
  window_trim(st, o);
  return 0;
}

void extract_end(reading *r)
{
  const matchers *o = r->g->m;
  struct extract_state *st = r->ex;
  for (size_t i = 0; st && i < o->nextracts; i++)
    if (run_one(st, &o->extracts[i], &st->found[i], 1) < 0)
      break; /* out of memory: the values so far */
}

void extract_values(const reading *r, size_t i, size_t *n, const char *const **value,
                    const size_t **len)
{
  static const size_t none;
  const found *f = r->ex ? &r->ex->found[i] : NULL;
  *n = f ? f->n : 0;
  *value = f ? (const char *const *)f->value : NULL;
  *len = f ? f->len : &none;
}

int extract_incomplete(const reading *r, size_t i) { return r->ex && r->ex->found[i].outgrew; }

void extract_free(reading *r)
{
  struct extract_state *st = r->ex;
  if (!st)
    return;
  size_t n = r->g->m->nextracts;
  for (size_t i = 0; st->found && i < n; i++)
    values_clear(&st->found[i]);
  free(st->found);
  free(st->due);
  free(st->win);
  free(st);
  r->ex = NULL;
}
