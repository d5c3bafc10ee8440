/* scan -t: a cluster's few words, found by memmem as its body streams,
 * instead of by the streaming engine. The engine's database holds the
 * patterns of every template loaded, and a stream over it costs the same
 * for a 50-byte 404 page whatever the cluster (every other template's
 * patterns are looked for, and their matches thrown away); most clusters
 * of a large set have one or two words. A cluster of at most
 * LITERAL_WORDS words, none longer than LITERAL_LONGEST (eval_clusters
 * decides, literal_cluster), is matched here, and a word no other cluster
 * has is left out of the engine's database (smaller, and faster to
 * compile and to stream for the clusters it serves); in a build without
 * the engine, such a cluster keeps no body. Here, each word is looked for in each slice, and across two slices in
 * the last bytes of one and the first of the next, so that a word split
 * by the network is found. Words of --iword / case-insensitive matchers
 * are looked for in a lower-case copy. */
#define _GNU_SOURCE /* memmem */
#include "eval.h"

#include <stdlib.h>
#include <string.h>

/* The state of a reading whose cluster is matched here. */
struct literal_state {
  int on;           /* a hop's body is being looked at */
  size_t undecided; /* words without a hit */
  size_t seen;      /* bytes of the body seen */
  size_t longest;   /* the cluster's longest word */
  char tail[LITERAL_LONGEST];
  size_t tail_len; /* the last bytes seen, fewer than longest */
  char *lower;     /* a slice in lower case (room for cap bytes) */
  size_t cap;
};

int literal_cluster(const engine *g, const size_t *ids, size_t n)
{
  if (n == 0 || n > LITERAL_WORDS)
    return 0;
  for (size_t k = 0; k < n; k++) {
    const char *w = ids[k] < g->m->nwords ? g->m->words[ids[k]] : NULL;
    if (!w || !w[0] || strlen(w) > LITERAL_LONGEST)
      return 0;
    for (const char *p = w; g->m->word_nocase[ids[k]] && *p; p++)
      if (*p >= 'A' && *p <= 'Z') /* caseless words are kept in lower case */
        return 0;
  }
  return 1;
}

static int literal(const reading *r)
{
  return r->g->clusters && r->g->clusters[r->cluster].literal;
}

int literal_begin(reading *r)
{
  if (r->lit)
    r->lit->on = 0;
  if (!literal(r))
    return 0;
  if (!r->lit && !(r->lit = calloc(1, sizeof *r->lit)))
    return -1;
  struct literal_state *s = r->lit;
  s->undecided = s->seen = s->tail_len = s->longest = 0;
  for (size_t k = 0; k < r->nids; k++) {
    size_t id = reading_id(r, k), len = strlen(r->g->m->words[id]);
    s->undecided += !verdict_has(&r->v, r->g->m, id);
    s->longest = len > s->longest ? len : s->longest;
  }
  /* A target that its status rules out is not looked at. */
  s->on = !r->v.status_missed && s->undecided > 0;
  return 0;
}

static void lower(char *dst, const char *src, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i] >= 'A' && src[i] <= 'Z' ? (char)(src[i] - 'A' + 'a') : src[i];
}

/* Where word w (len bytes) first ends in the tail then text[0..n), as a
 * body offset (the tail's first byte is at body offset at); NO_OFFSET
 * when it is not there. A match within the tail alone was looked for
 * before. */
static size_t find(const char *tail, size_t tail_len, const char *text, size_t n, const char *w,
                   size_t len, size_t at)
{
  if (tail_len) { /* across: the tail, then the first len - 1 bytes */
    char across[2 * LITERAL_LONGEST];
    size_t more = n < len - 1 ? n : len - 1;
    memcpy(across, tail, tail_len);
    memcpy(across + tail_len, text, more);
    const char *p = memmem(across, tail_len + more, w, len);
    if (p)
      return at + (size_t)(p - across) + len;
  }
  const char *p = memmem(text, n, w, len);
  return p ? at + tail_len + (size_t)(p - text) + len : NO_OFFSET;
}

int literal_feed(reading *r, const char *data, size_t len)
{
  struct literal_state *s = r->lit;
  if (!s || !s->on || !len)
    return 0;
  const matchers *m = r->g->m;
  const char *folded = NULL;  /* data in lower case, made when a caseless word wants it */
  char tail[LITERAL_LONGEST]; /* the tail in lower case, likewise */
  for (size_t k = 0; k < r->nids && s->undecided; k++) {
    size_t id = reading_id(r, k);
    if (verdict_has(&r->v, m, id))
      continue;
    const char *text = data, *t = s->tail;
    if (m->word_nocase[id]) {
      if (!folded) {
        if (s->cap < len) {
          char *p = realloc(s->lower, len);
          if (!p)
            return -1;
          s->lower = p;
          s->cap = len;
        }
        lower(s->lower, data, len);
        lower(tail, s->tail, s->tail_len);
        folded = s->lower;
      }
      text = folded;
      t = tail;
    }
    size_t end =
        find(t, s->tail_len, text, len, m->words[id], strlen(m->words[id]), s->seen - s->tail_len);
    if (end != NO_OFFSET && verdict_hit(&r->v, m, id, end))
      s->undecided--;
  }
  /* The new tail: the last longest - 1 bytes of the old tail and data. */
  size_t keep = s->longest - 1, from_data = len < keep ? len : keep;
  size_t from_tail = keep - from_data < s->tail_len ? keep - from_data : s->tail_len;
  memmove(s->tail, s->tail + s->tail_len - from_tail, from_tail);
  memcpy(s->tail + from_tail, data + len - from_data, from_data);
  s->tail_len = from_tail + from_data;
  s->seen += len;
  s->on = s->undecided > 0;
  return 0;
}

void literal_free(reading *r)
{
  if (r->lit)
    free(r->lit->lower);
  free(r->lit);
  r->lit = NULL;
}
