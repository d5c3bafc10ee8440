/* scan's matchers: --status, --word and --regex over one response, and
 * the body observer that runs them as the body arrives (on the stream of
 * eval-vs.c where this build has one), then over the body kept whole for
 * what the stream does not take. */
#include "eval.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Matching ----------------------------------------------------------- */

/* Whether n bytes at a and b are equal in ASCII case. */
static int same_nocase(const char *a, const char *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
      return 0;
  return 1;
}

/* As find_word, in any ASCII case. */
static size_t find_word_nocase(rc_view hay, const char *needle, size_t nlen)
{
  for (size_t i = 0; i + nlen <= hay.len; i++)
    if (same_nocase(hay.ptr + i, needle, nlen))
      return i + nlen;
  return NO_OFFSET;
}

/* Where needle (nlen > 0 bytes) first occurs in hay, as the offset of its
 * end; NO_OFFSET when it does not. */
static size_t find_word(rc_view hay, const char *needle, size_t nlen)
{
  const char *p = hay.ptr, *end = hay.ptr + hay.len;
  while ((size_t)(end - p) >= nlen) {
    p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);
    if (!p)
      return NO_OFFSET;
    if (memcmp(p, needle, nlen) == 0)
      return (size_t)(p - hay.ptr) + nlen;
    p++;
  }
  return NO_OFFSET;
}

/* Runs the reading's --word and --regex matchers that have no hit yet,
 * and that skip is not set for (skip NULL: none is), over text: a header
 * line, or the body kept whole. */
static void match_text(reading *r, rc_view text, int body, const unsigned char *skip)
{
  const matchers *m = r->g->m;
  verdict *v = &r->v;
  for (size_t k = 0; k < r->nids; k++) {
    size_t id = reading_id(r, k);
    if (verdict_has(v, m, id) || (skip && skip[id]))
      continue;
    size_t at = NO_OFFSET;
    int hit;
    if (id < m->nwords) {
      const char *w = m->words[id];
      at = (m->word_nocase[id] ? find_word_nocase : find_word)(text, w, strlen(w));
      hit = at != NO_OFFSET;
    } else {
      const regex *re = &m->regexes[id - m->nwords];
      hit = regex_hit(re, text);
      at = hit && body ? regex_first_end(re, text) : NO_OFFSET;
    }
    if (hit)
      verdict_hit(v, m, id, body ? at : NO_OFFSET);
  }
}

/* Runs them over each line of a header block, without its line break (CR
 * LF or LF); the blank line that ends the block is not a line. */
static void match_lines(reading *r, rc_view block)
{
  const char *p = block.ptr, *end = block.ptr + block.len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    rc_view one = {p, (size_t)((nl ? nl : end) - p)};
    if (one.len && one.ptr[one.len - 1] == '\r')
      one.len--;
    if (one.len)
      match_text(r, one, 0, NULL);
    p = nl ? nl + 1 : end;
  }
}

/* What the final response's head decides, once it is complete: the status
 * matcher, then (when the status does not rule the target out, which
 * makes the text not looked at) the header lines under --part header and
 * all. Clears the verdict first. */
static void match_head(reading *r)
{
  const matchers *m = r->g->m;
  verdict *v = &r->v;
  verdict_clear(v, m, r->ids, r->nids);
  int status = rc_status(r->resp);
  v->status = m->nstatuses && status >= 0 && status <= STATUS_MAX && m->status_set[status];
  v->status_missed = m->nstatuses && !v->status;
  rc_hop_info last;
  if (!v->status_missed && (m->nwords || m->nregexes) && m->part != PART_BODY &&
      rc_hop(r->resp, -1, &last) == RC_OK)
    match_lines(r, last.raw);
}

/* The matching rule (see usage): every kind of matcher given needs a hit,
 * and the status check comes first. */
static int verdict_matched(const matchers *m, const verdict *v)
{
  return !v->status_missed && (!m->nwords || v->nwords) && (!m->nregexes || v->nregexes);
}

/* ---- Where matchers run ------------------------------------------------- */

/* Decides where each matcher runs, and whether bodies are kept: only when
 * a body matcher runs over the kept body (every output field but those is
 * taken from the stream: the body's length is counted, the title read from
 * its first bytes). Returns 0, or -1 when out of memory. */
int engine_build(engine *g, const matchers *m)
{
  size_t n = m->nwords + m->nregexes;
  g->m = m;
  if (!(g->streamed = calloc(n + 1, 1)))
    return -1;
  if (m->nextracts && vs_extract_build(g) != 0)
    return -1;
  if (!n || m->part == PART_HEADER)
    return 0;
  if (vs_build(g) != 0)
    return -1;
  for (size_t id = 0; id < n; id++) {
    if (g->few_only && g->few_only[id])
      g->streamed[id] = 1; /* on the stream, by eval-literal.c */
    if (g->streamed[id])
      g->nstreamed++;
    else
      g->nwhole++;
  }
  g->keep_body = g->nwhole > 0;
  return 0;
}

void engine_free(engine *g)
{
  vs_free(g);
  free(g->streamed);
  for (size_t i = 0; g->clusters && i < g->plan->nclusters; i++)
    free(g->clusters[i].ids);
  free(g->clusters);
  free(g->few_only);
}

/* ---- The body observer -------------------------------------------------- */

int reading_init(reading *r, const engine *g, rc_response *resp)
{
  r->g = g;
  r->resp = resp;
  return verdict_init(&r->v, g->m) == 0 && (r->head = malloc(TITLE_HEAD)) ? 0 : -1;
}

void reading_free(reading *r)
{
  vs_close(r, 0);
  vs_stream_free(r);
  literal_free(r);
  extract_free(r);
  verdict_free(&r->v);
  free(r->head);
}

/* Before a transfer: nothing observed yet; the matchers its response is
 * matched by are its cluster's, or all. */
void observed_reset(reading *r)
{
  const engine *g = r->g;
  r->ids = g->clusters ? g->clusters[r->cluster].ids : NULL;
  r->nids = g->clusters ? g->clusters[r->cluster].nids : g->m->nwords + g->m->nregexes;
  vs_close(r, 0);
  (void)extract_begin(r); /* no values; body_begin tells a failure */
  r->hop = 0;
  r->head_len = 0;
}

/* The first slice of a hop's body: its head is complete, so the status
 * and the header lines are matched now; the body's matchers start afresh
 * (a hop's body that a later hop follows, a redirect's, is not the final
 * body), on a stream of those that the header lines have not decided
 * (--part all). Returns 0, or -1 when a stream cannot be opened. */
static int body_begin(reading *r, size_t hops)
{
  observed_reset(r);
  r->hop = hops;
  match_head(r);
  /* A cluster of a few words is matched by eval-literal.c alone. */
  int few = r->g->clusters && r->g->clusters[r->cluster].literal;
  if (extract_begin(r) != 0 || literal_begin(r) != 0 || (!few && vs_begin(r) != 0)) {
    vs_close(r, 0);
    return -1;
  }
  return 0;
}

/* Whether the target's verdict is known before its body ends (for
 * --stop-on-match): its status rules it out, or every --word and --regex
 * has hit or looks only at header lines, which are all in. An HTML body's
 * first TITLE_HEAD bytes are read first, for its title. */
static int settled(const reading *r)
{
  const matchers *m = r->g->m;
  if (m->nextracts) /* they look at the whole body */
    return 0;
  if (!r->v.status_missed && m->part != PART_HEADER &&
      (r->g->nwhole || r->v.nwords < m->nwords || r->v.nregexes < m->nregexes))
    return 0;
  return r->head_len >= TITLE_HEAD || !is_html(r->resp);
}

/* The body observer: sees each slice of the decoded body as it arrives
 * (within --max-body), kept or not. It keeps the first TITLE_HEAD bytes
 * for the title and runs the streamed matchers over the slice; a match
 * that straddles slices is found, as the stream carries what it needs
 * from one to the next. */
rc_code observe(void *ud, const char *data, size_t len)
{
  reading *r = ud;
  size_t hops = rc_hop_count(r->resp);
  if (hops != r->hop && body_begin(r, hops) != 0)
    return RC_E_NOMEM;
  if (r->head_len < TITLE_HEAD) {
    size_t n = len < TITLE_HEAD - r->head_len ? len : TITLE_HEAD - r->head_len;
    memcpy(r->head + r->head_len, data, n);
    r->head_len += n;
  }
  if (vs_feed(r, data, len) != 0 || literal_feed(r, data, len) != 0 ||
      extract_feed(r, data, len) != 0)
    return RC_E_NOMEM; /* fails the transfer: RC_E_OBSERVER */
  if (r->g->tpl ? tpl_settled(r) : r->g->m->stop_on_match && settled(r))
    return RC_STOPPED;
  return RC_OK;
}

/* The target's verdict, once its transfer is over: the stream's matches
 * at the body's end, then the matchers that run over the body kept. */
int matches(reading *r)
{
  const matchers *m = r->g->m;
  verdict *v = &r->v;
  size_t hops = rc_hop_count(r->resp);
  if (hops != r->hop) {
    /* No body of the final response was observed (none came, or it was
     * empty): an empty stream, for what matches an empty body ("^$"). */
    observed_reset(r);
    if (hops > 0 && body_begin(r, hops) != 0)
      match_head(r); /* no stream: the head alone */
  }
  vs_close(r, 1);
  extract_end(r);
  if (hops == 0) {
    verdict_clear(v, m, r->ids, r->nids); /* no response arrived */
    return 0;
  }
  if (v->status_missed) {
    verdict_clear(v, m, r->ids, r->nids);
    v->status_missed = 1;
    return 0;
  }
  if (m->part != PART_HEADER && r->g->nwhole)
    match_text(r, rc_body(r->resp), 1, r->g->streamed);
  return verdict_matched(m, v);
}

/* Whether the final response says its body is HTML. */
int is_html(rc_response *r)
{
  rc_view type;
  return rc_header(r, -1, "content-type", 0, &type) == RC_OK && type.len >= 9 &&
         strncasecmp(type.ptr, "text/html", 9) == 0;
}
