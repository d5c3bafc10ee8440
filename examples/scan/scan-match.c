/* scan's matchers: --status, --word and --regex, their verdict for one
 * response, and the body observer that runs them as the body arrives (on
 * the stream of scan-vs.c where this build has one), then over the body
 * kept whole for what the stream does not take. */
#include "scan.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- POSIX EREs ---------------------------------------------------------- */

/* A bracket expression, whose '[' is just before *pp, as the set of bytes
 * it matches in the C locale (set: 256 bits), as regcomp reads it: a ']'
 * first is a member, '\' is an ordinary byte, ranges go by byte value,
 * [:class:] by <ctype.h>, [=c=] and [.c.] of one byte are that byte. *pp
 * moves past the closing ']'. Returns 0, or -1 for what is not read here
 * (a collating element of a name, an unknown class). */
int ere_bracket(const char **pp, unsigned char set[32])
{
  static const struct {
    const char *name;
    int (*is)(int);
  } classes[] = {{"alpha", isalpha}, {"digit", isdigit}, {"alnum", isalnum}, {"upper", isupper},
                 {"lower", islower}, {"space", isspace}, {"blank", isblank}, {"punct", ispunct},
                 {"print", isprint}, {"graph", isgraph}, {"cntrl", iscntrl}, {"xdigit", isxdigit}};
  const char *p = *pp;
  int negate = *p == '^';
  p += negate;
  memset(set, 0, 32);
  for (int first = 1; first || *p != ']'; first = 0) {
    if (!*p)
      return -1;
    if (p[0] == '[' && p[1] == ':') {
      const char *end = strstr(p + 2, ":]");
      size_t i = 0, n = end ? (size_t)(end - p - 2) : 0;
      while (i < sizeof classes / sizeof classes[0] &&
             (strlen(classes[i].name) != n || strncmp(classes[i].name, p + 2, n) != 0))
        i++;
      if (i == sizeof classes / sizeof classes[0])
        return -1;
      for (int c = 0; c < 256; c++)
        if (classes[i].is(c))
          set[c >> 3] |= (unsigned char)(1u << (c & 7));
      p = end + 2;
      continue;
    }
    int lo, hi;
    for (int end = 0; end < 2; end++) {
      int c;
      if (p[0] == '[' && (p[1] == '=' || p[1] == '.')) {
        if (!p[2] || p[3] != p[1] || p[4] != ']')
          return -1;
        c = (unsigned char)p[2];
        p += 5;
      } else if (p[0] == '[' && p[1] == ':') {
        return -1; /* a class as a range's end */
      } else {
        c = (unsigned char)*p++;
      }
      if (end == 0)
        lo = hi = c;
      else
        hi = c;
      /* A '-' makes a range unless it is last ("[a-]"). */
      if (end == 1 || p[0] != '-' || !p[1] || p[1] == ']')
        break;
      p++;
    }
    if (hi < lo)
      return -1;
    for (int c = lo; c <= hi; c++)
      set[c >> 3] |= (unsigned char)(1u << (c & 7));
  }
  if (negate)
    for (int i = 0; i < 32; i++)
      set[i] = (unsigned char)~set[i];
  *pp = p + 1;
  return 0;
}

/* Whether ere uses a GNU escape of glibc's regcomp that looks at the byte
 * after a position: \b, \B, \<, \> or \' (the end of the text). Those
 * match at the end of a prefix where they would not in the whole text. */
int ere_looks_past_end(const char *ere)
{
  unsigned char set[32];
  for (const char *p = ere; *p;) {
    if (*p == '[') {
      p++;
      if (ere_bracket(&p, set) != 0)
        return 1; /* not read: to be safe */
    } else if (*p == '\\' && p[1]) {
      if (strchr("bB<>'", p[1]))
        return 1;
      p += 2;
    } else {
      p++;
    }
  }
  return 0;
}

/* ---- Matching ----------------------------------------------------------- */

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

/* Whether re matches in the first len bytes of text, which is longer
 * than len when a prefix is tried (eflags REG_NOTEOL: $ does not match at
 * a prefix's end). Views are not NUL-terminated in general (a hop's header
 * block is not) and bodies may hold NUL bytes, so the text is delimited
 * with REG_STARTEND (glibc, the BSDs, macOS) rather than by a terminating
 * NUL. glibc's offsets are int: past 2 GiB only the start is searched. If
 * pm is not NULL it receives the match (re compiled without REG_NOSUB). */
static int regex_in(const regex_t *re, const char *text, size_t len, int eflags, regmatch_t *pm)
{
#ifdef REG_STARTEND
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = (regoff_t)(len < INT_MAX ? len : INT_MAX);
  int hit = regexec(re, text, 1, range, REG_STARTEND | eflags) == 0;
  if (hit && pm)
    *pm = range[0];
  return hit;
#else
  /* Without REG_STARTEND: a NUL-terminated copy, in which matching stops at
   * the first NUL byte of the text. */
  char *copy = strndup(text, len);
  int hit = copy && regexec(re, copy, pm ? 1 : 0, pm, eflags) == 0;
  free(copy);
  return hit;
#endif
}

static int regex_hit(const regex_t *re, rc_view text)
{
  return regex_in(re, text.ptr, text.len, 0, NULL);
}

/* Where the first match of re in text to end, ends (re matches text).
 * That is where a stream matcher reports it: the shortest prefix of text
 * in which re matches, found by halving. ERE has no look-ahead, so a match
 * in a prefix is one in the text and the prefixes that match are those
 * from some length on; only $ looks past a position, and REG_NOTEOL keeps
 * it from matching at a prefix's end. glibc's \b \B \< \> \' look past it
 * too: for a regex with those (past_end) the end of its leftmost-longest
 * match is taken instead. */
static size_t regex_first_end(const regex_t *re, rc_view text, int past_end)
{
  if (past_end) {
    regmatch_t pm;
    return regex_in(re, text.ptr, text.len, 0, &pm) ? (size_t)pm.rm_eo : NO_OFFSET;
  }
  size_t lo = 0, hi = text.len < INT_MAX ? text.len : INT_MAX;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (regex_in(re, text.ptr, mid, REG_NOTEOL, NULL))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
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
    size_t at = find_word(text, o->words[i], strlen(o->words[i]));
    if (at != NO_OFFSET)
      verdict_hit(v, o, i, body ? at : NO_OFFSET);
  }
  for (size_t i = 0; i < o->nregexes; i++) {
    if (v->regexes[i] || (skip && skip[o->nwords + i]) || !regex_hit(&o->regexes[i], text))
      continue;
    verdict_hit(v, o, o->nwords + i,
                body ? regex_first_end(&o->regexes[i], text, o->regex_ends[i]) : NO_OFFSET);
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
  if (vs_begin(s, sl) != 0) {
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
  if (vs_feed(s, sl, data, len) != 0)
    return RC_E_NOMEM; /* fails the transfer: RC_E_OBSERVER */
  if (s->opt->stop_on_match && settled(s, sl))
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
