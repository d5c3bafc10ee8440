/* scan's matchers: --status, --word and --regex, their verdict for one
 * response, and the body observer that runs them as the body arrives (on
 * the stream of scan-vs.c where this build has one), then over the body
 * kept whole for what the stream does not take. */
#include "scan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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

int verdict_init(verdict *v, const options *o)
{
  v->words = calloc(o->nwords + 1, 1);
  v->regexes = calloc(o->nregexes + 1, 1);
  v->word_at = calloc(o->nwords + 1, sizeof *v->word_at);
  v->regex_at = calloc(o->nregexes + 1, sizeof *v->regex_at);
  return v->words && v->regexes && v->word_at && v->regex_at ? 0 : -1;
}

void verdict_free(verdict *v)
{
  free(v->words);
  free(v->regexes);
  free(v->word_at);
  free(v->regex_at);
}

/* No hits. */
static void verdict_clear(verdict *v, const options *o)
{
  v->status = v->status_missed = 0;
  v->nwords = v->nregexes = 0;
  memset(v->words, 0, o->nwords);
  memset(v->regexes, 0, o->nregexes);
}

/* Matcher id (the words, then the regexes) hit, its first match ending at
 * offset; a matcher that hit already keeps its first hit. Returns 1 when
 * the hit is its first. */
int verdict_hit(verdict *v, const options *o, size_t id, size_t offset)
{
  if (id < o->nwords && !v->words[id]) {
    v->words[id] = 1;
    v->word_at[id] = offset;
    v->nwords++;
    return 1;
  }
  if (id >= o->nwords && !v->regexes[id - o->nwords]) {
    v->regexes[id - o->nwords] = 1;
    v->regex_at[id - o->nwords] = offset;
    v->nregexes++;
    return 1;
  }
  return 0;
}

/* Whether matcher id has hit. */
int verdict_has(const verdict *v, const options *o, size_t id)
{
  return id < o->nwords ? v->words[id] : v->regexes[id - o->nwords];
}

/* Runs the --word and --regex matchers that have no hit yet, and that
 * run is not NULL for (run[id]: id is matched here), over text: a header
 * line, or the body kept whole. */
static void match_text(const options *o, rc_view text, int body, const unsigned char *skip,
                       verdict *v)
{
  for (size_t i = 0; i < o->nwords; i++) {
    if (v->words[i] || (skip && skip[i]))
      continue;
    size_t at =
        (o->word_nocase[i] ? find_word_nocase : find_word)(text, o->words[i], strlen(o->words[i]));
    if (at != NO_OFFSET)
      verdict_hit(v, o, i, body ? at : NO_OFFSET);
  }
  for (size_t i = 0; i < o->nregexes; i++) {
    if (v->regexes[i] || (skip && skip[o->nwords + i]) || !regex_hit(&o->regexes[i], text))
      continue;
    verdict_hit(v, o, o->nwords + i, body ? regex_first_end(&o->regexes[i], text) : NO_OFFSET);
  }
}

/* Runs them over each line of a header block, without its line break (CR
 * LF or LF); the blank line that ends the block is not a line. */
static void match_lines(const options *o, rc_view block, verdict *v)
{
  const char *p = block.ptr, *end = block.ptr + block.len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    rc_view one = {p, (size_t)((nl ? nl : end) - p)};
    if (one.len && one.ptr[one.len - 1] == '\r')
      one.len--;
    if (one.len)
      match_text(o, one, 0, NULL, v);
    p = nl ? nl + 1 : end;
  }
}

/* What the final response's head decides, once it is complete: the status
 * matcher, then (when the status does not rule the target out, which
 * makes the text not looked at) the header lines under --part header and
 * all. Clears v first. */
static void match_head(const options *o, rc_response *resp, verdict *v)
{
  verdict_clear(v, o);
  int status = rc_status(resp);
  v->status = o->nstatuses && status >= 0 && status <= STATUS_MAX && o->status_set[status];
  v->status_missed = o->nstatuses && !v->status;
  rc_hop_info last;
  if (!v->status_missed && (o->nwords || o->nregexes) && o->part != PART_BODY &&
      rc_hop(resp, -1, &last) == RC_OK)
    match_lines(o, last.raw, v);
}

/* The matching rule (see usage): every kind of matcher given needs a hit,
 * and the status check comes first. */
static int verdict_matched(const options *o, const verdict *v)
{
  return !v->status_missed && (!o->nwords || v->nwords) && (!o->nregexes || v->nregexes);
}

/* ---- Where matchers run ------------------------------------------------- */

/* Decides where each matcher runs, and whether bodies are kept: only when
 * a body matcher runs over the kept body (every output field but those is
 * taken from the stream: the body's length is counted, the title read from
 * its first bytes). Returns 0, or -1 when out of memory. */
int engine_build(engine *g, const options *o)
{
  size_t n = o->nwords + o->nregexes;
  if (!(g->streamed = calloc(n + 1, 1)))
    return -1;
  if (o->nextracts && vs_extract_build(g, o) != 0)
    return -1;
  if (!n || o->part == PART_HEADER)
    return 0;
  if (vs_build(g, o) != 0)
    return -1;
  for (size_t id = 0; id < n; id++) {
    if (g->streamed[id])
      g->nstreamed++;
    else
      g->nwhole++;
  }
  g->keep_body = g->nwhole > 0;
  return 0;
}

void engine_free(engine *g, const options *o)
{
  vs_free(g, o);
  free(g->streamed);
}

/* ---- The body observer -------------------------------------------------- */

/* Before a transfer: nothing observed yet. */
void observed_reset(scan *s, slot *sl)
{
  vs_close(s, sl, 0);
  (void)extract_begin(s, sl); /* no values; body_begin tells a failure */
  sl->hop = 0;
  sl->head_len = 0;
}

/* The first slice of a hop's body: its head is complete, so the status
 * and the header lines are matched now; the body's matchers start afresh
 * (a hop's body that a later hop follows, a redirect's, is not the final
 * body), on a stream of those that the header lines have not decided
 * (--part all). Returns 0, or -1 when a stream cannot be opened. */
static int body_begin(scan *s, slot *sl, size_t hops)
{
  observed_reset(s, sl);
  sl->hop = hops;
  match_head(s->opt, sl->resp, &sl->v);
  if (s->tpl)
    tpl_premark(s, sl);
  if (extract_begin(s, sl) != 0 || vs_begin(s, sl) != 0) {
    vs_close(s, sl, 0);
    return -1;
  }
  return 0;
}

/* Whether the target's verdict is known before its body ends (for
 * --stop-on-match): its status rules it out, or every --word and --regex
 * has hit or looks only at header lines, which are all in. An HTML body's
 * first TITLE_HEAD bytes are read first, for its title. */
static int settled(const scan *s, const slot *sl)
{
  const options *o = s->opt;
  if (o->nextracts) /* they look at the whole body */
    return 0;
  if (!sl->v.status_missed && o->part != PART_HEADER &&
      (s->engine.nwhole || sl->v.nwords < o->nwords || sl->v.nregexes < o->nregexes))
    return 0;
  return sl->head_len >= TITLE_HEAD || !is_html(sl->resp);
}

/* The body observer: sees each slice of the decoded body as it arrives
 * (within --max-body), kept or not. It keeps the first TITLE_HEAD bytes
 * for the title and runs the streamed matchers over the slice; a match
 * that straddles slices is found, as the stream carries what it needs
 * from one to the next. */
rc_code observe(void *ud, const char *data, size_t len)
{
  slot *sl = ud;
  scan *s = sl->scan;
  size_t hops = rc_hop_count(sl->resp);
  if (hops != sl->hop && body_begin(s, sl, hops) != 0)
    return RC_E_NOMEM;
  if (sl->head_len < TITLE_HEAD) {
    size_t n = len < TITLE_HEAD - sl->head_len ? len : TITLE_HEAD - sl->head_len;
    memcpy(sl->head + sl->head_len, data, n);
    sl->head_len += n;
  }
  if (vs_feed(s, sl, data, len) != 0 || extract_feed(s, sl, data, len) != 0)
    return RC_E_NOMEM; /* fails the transfer: RC_E_OBSERVER */
  if (s->tpl ? tpl_settled(s, sl) : s->opt->stop_on_match && settled(s, sl))
    return RC_STOPPED;
  return RC_OK;
}

/* The target's verdict, once its transfer is over: the stream's matches
 * at the body's end, then the matchers that run over the body kept. */
int matches(scan *s, slot *sl)
{
  const options *o = s->opt;
  verdict *v = &sl->v;
  size_t hops = rc_hop_count(sl->resp);
  if (hops != sl->hop) {
    /* No body of the final response was observed (none came, or it was
     * empty): an empty stream, for what matches an empty body ("^$"). */
    observed_reset(s, sl);
    if (hops > 0 && body_begin(s, sl, hops) != 0)
      match_head(o, sl->resp, v); /* no stream: the head alone */
  }
  vs_close(s, sl, 1);
  extract_end(s, sl);
  if (hops == 0) {
    verdict_clear(v, o); /* no response arrived */
    return 0;
  }
  if (v->status_missed) {
    verdict_clear(v, o);
    v->status_missed = 1;
    return 0;
  }
  if (o->part != PART_HEADER && s->engine.nwhole)
    match_text(o, rc_body(sl->resp), 1, s->engine.streamed, v);
  return verdict_matched(o, v);
}
