/* scan's template verdicts: every matcher and extractor of every template
 * request of a cluster, over its one response, and the JSON lines that
 * nuclei writes for the templates that matched. */
#include "scan-tpl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VIEWS_MAX 8 /* values of one header looked at */

/* The texts of a part: the header block, the body, or a header's values. */
typedef struct texts {
  rc_view v[VIEWS_MAX];
  size_t n, len;
} texts;

static void part_texts(const rc_response *r, tpl_part where, const char *header, texts *t)
{
  rc_hop_info last;
  t->n = t->len = 0;
  if ((where == TP_HEADER || where == TP_ALL) && rc_hop(r, -1, &last) == RC_OK)
    t->v[t->n++] = last.raw;
  if (where == TP_BODY || where == TP_ALL)
    t->v[t->n++] = rc_body(r);
  for (size_t i = 0; where == TP_NAMED && t->n < VIEWS_MAX; i++)
    if (rc_header(r, -1, header, i, &t->v[t->n]) == RC_OK)
      t->n++;
    else
      break;
  for (size_t i = 0; i < t->n; i++)
    t->len += t->v[i].len;
}

/* Whether needle (lower case when nocase) occurs in hay. */
static int contains(rc_view hay, const char *needle, int nocase)
{
  size_t n = strlen(needle);
  if (!n)
    return 1;
  int first = (unsigned char)needle[0], upper = nocase ? toupper(first) : first;
  for (size_t i = 0; i + n <= hay.len; i++) {
    int c = (unsigned char)hay.ptr[i];
    if (c != first && c != upper)
      continue;
    if (!nocase && !memcmp(hay.ptr + i, needle, n))
      return 1;
    size_t k = 1;
    while (nocase && k < n && tolower((unsigned char)hay.ptr[i + k]) == (unsigned char)needle[k])
      k++;
    if (nocase && k == n)
      return 1;
  }
  return 0;
}

static int matcher_hits(const scan *s, const slot *sl, const tpl_matcher *m);

/* Value i of matcher m hits: over the header block or a header's values
 * here, in the body by the slot's verdict (the engine's, see
 * tpl_options). */
static int value_hits(const scan *s, const slot *sl, const tpl_matcher *m, size_t i)
{
  const rc_response *r = sl->resp;
  rc_hop_info last;
  size_t head = rc_hop(r, -1, &last) == RC_OK ? last.raw.len : 0;
  switch (m->type) {
  case TM_STATUS: return m->numbers[i] == rc_status(r);
  case TM_SIZE:
    if (m->part == TP_NAMED)
      break;
    return m->numbers[i] >= 0 &&
           (size_t)m->numbers[i] ==
               (m->part == TP_HEADER ? head : 0) + (m->part != TP_HEADER ? rc_body_length(r) : 0);
  case TM_DSL: return matcher_hits(s, sl, &m->subs[i]);
  default:
    if (m->ids && verdict_has(&sl->v, s->opt, m->ids[i]))
      return 1;
  }
  texts t;
  part_texts(r, m->part == TP_ALL ? TP_HEADER : m->part, m->header, &t);
  if (m->part == TP_BODY)
    return 0;
  if (m->type == TM_SIZE)
    return m->numbers[i] >= 0 && (size_t)m->numbers[i] == t.len;
  for (size_t k = 0; k < t.n; k++)
    if (m->type == TM_WORD ? contains(t.v[k], m->words[i], m->nocase)
                           : regex_hit(&m->regexes[i], t.v[k]))
      return 1;
  return 0;
}

/* Matcher m's verdict: its condition over its values, negative applied. */
static int matcher_hits(const scan *s, const slot *sl, const tpl_matcher *m)
{
  int hit = m->cond_and;
  for (size_t i = 0; i < m->n; i++) {
    int h = value_hits(s, sl, m, i);
    if (m->cond_and && !h) {
      hit = 0;
      break;
    }
    if (!m->cond_and && h) {
      hit = 1;
      break;
    }
  }
  return m->negative ? !hit : hit;
}

/* ---- Extractors --------------------------------------------------------- */

typedef struct values {
  char *v[EXTRACT_MAX];
  size_t n;
  int nomem;
} values;

static void add_value(values *x, const char *p, size_t len)
{
  if (len > EXTRACT_VALUE)
    len = EXTRACT_VALUE;
  for (size_t i = 0; i < x->n; i++)
    if (strlen(x->v[i]) == len && !memcmp(x->v[i], p, len))
      return;
  if (x->n < EXTRACT_MAX && !(x->v[x->n++] = strndup(p, len)))
    x->n--, x->nomem = 1;
}

/* Every match of re in text, group g of each. */
static void regex_values(const regex *re, long g, rc_view text, values *x)
{
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
  size_t at = 0;
  while (md && at <= text.len && x->n < EXTRACT_MAX) {
    int rc = pcre2_match(re->code, (PCRE2_SPTR)text.ptr, text.len, at, 0, md, NULL);
    if (rc < 0)
      break;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (rc > g && ov[2 * g] != PCRE2_UNSET)
      add_value(x, text.ptr + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
    at = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
  }
  if (!md)
    x->nomem = 1;
  pcre2_match_data_free(md);
}

static void extract(const tpl_extractor *e, const rc_response *r, values *x)
{
  texts t;
  for (size_t i = 0; i < e->n; i++) {
    part_texts(r, e->kval ? TP_NAMED : e->part, e->kval ? e->keys[i] : e->header, &t);
    for (size_t k = 0; k < t.n; k++) {
      if (e->kval)
        add_value(x, t.v[k].ptr, t.v[k].len);
      else
        regex_values(&e->regexes[i], e->group, t.v[k], x);
    }
  }
}

static void values_free(values *x)
{
  for (size_t i = 0; i < x->n; i++)
    free(x->v[i]);
  x->n = 0;
}

/* ---- Output ------------------------------------------------------------- */

/* One line: template t matched the slot's target, by matcher name (NULL:
 * none named), with the values x; stopped: its transfer ended early. */
static void json_match(scan *s, slot *sl, const tpl *t, const char *name, const values *x,
                       int stopped)
{
  line *l = &s->line;
  const cluster *c = &s->tpl->c[sl->cluster];
  l->len = 0;
  l->nomem = 0;
  puts_line(l, "{\"template-id\":");
  json_string(l, t->id);
  puts_line(l, ",\"info\":{\"name\":");
  json_string(l, t->name ? t->name : t->id);
  puts_line(l, ",\"severity\":");
  json_string(l, t->severity ? t->severity : "unknown");
  puts_line(l, ",\"tags\":[");
  for (size_t i = 0; i < t->ntags; i++) {
    if (i)
      puts_line(l, ",");
    json_string(l, t->tags[i]);
  }
  puts_line(l, "]},\"type\":\"http\",\"host\":");
  json_string(l, sl->target);
  puts_line(l, ",\"matched-at\":");
  json_string(l, sl->url);
  if (name) {
    puts_line(l, ",\"matcher-name\":");
    json_string(l, name);
  }
  if (x->n) {
    puts_line(l, ",\"extracted-results\":[");
    for (size_t i = 0; i < x->n; i++) {
      if (i)
        puts_line(l, ",");
      json_string(l, x->v[i]);
    }
    puts_line(l, "]");
  }
  puts_line(l, ",\"timestamp\":");
  json_timestamp(l);
  printf_line(l,
              ",\"status-code\":%d,\"cluster-requests\":%zu,\"body-bytes\":%llu,"
              "\"truncated\":%s,\"stopped\":%s}\n",
              rc_status(sl->resp), c->nmembers, (unsigned long long)rc_body_length(sl->resp),
              rc_truncated(sl->resp) ? "true" : "false", stopped ? "true" : "false");
  write_line(s);
}

/* Template request q over the slot's response (stopped: once its
 * verdicts were known): its lines. Returns how many were written. */
static size_t judge(scan *s, slot *sl, const tpl *t, const tpl_request *q, int stopped)
{
  values x = {{0}, 0, 0};
  for (size_t i = 0; i < q->nextractors; i++)
    extract(&q->extractors[i], sl->resp, &x);
  size_t hits = 0, named = 0, lines = 0;
  unsigned char *hit = calloc(q->nmatchers + 1, 1);
  if (!hit) {
    s->write_error = ENOMEM;
    values_free(&x);
    return 0;
  }
  for (size_t i = 0; i < q->nmatchers; i++) {
    hit[i] = (unsigned char)matcher_hits(s, sl, &q->matchers[i]);
    hits += hit[i];
    named += hit[i] && q->matchers[i].name;
  }
  int matched = !q->nmatchers ? x.n > 0 : q->cond_and ? hits == q->nmatchers : hits > 0;
  if (matched && !q->cond_and && named) { /* each named matcher that hit */
    for (size_t i = 0; i < q->nmatchers; i++)
      if (hit[i] && q->matchers[i].name && ++lines)
        json_match(s, sl, t, q->matchers[i].name, &x, stopped);
  } else if (matched) {
    json_match(s, sl, t, NULL, &x, stopped);
    lines = 1;
  }
  if (x.nomem)
    s->write_error = ENOMEM;
  values_free(&x);
  free(hit);
  return lines;
}

void tpl_premark(scan *s, slot *sl)
{
  const unsigned char *mine = s->tpl->c[sl->cluster].mine;
  for (size_t id = 0; mine && id < s->opt->nwords + s->opt->nregexes; id++)
    if (!mine[id])
      verdict_hit(&sl->v, s->opt, id, NO_OFFSET);
}

int tpl_settled(const scan *s, const slot *sl)
{
  const options *o = s->opt;
  return s->tpl->c[sl->cluster].can_stop && sl->v.nwords == o->nwords &&
         sl->v.nregexes == o->nregexes;
}

size_t tpl_report(scan *s, slot *sl, CURLcode cc, ending how)
{
  templates *ts = s->tpl;
  const cluster *c = &ts->c[sl->cluster];
  size_t lines = 0;
  rc_code rc = rc_result(sl->resp, cc);
  /* As nuclei: a request that failed has no verdicts (nor one
   * interrupted); a body cut at --max-body is matched as far as kept, one
   * stopped once its verdicts were known as far as it came. */
  if (how != ENDED || rc_hop_count(sl->resp) == 0 ||
      (rc != RC_OK && rc != RC_TRUNCATED && rc != RC_STOPPED))
    return 0;
  for (size_t i = 0; i < c->nmembers && !s->write_error; i++) {
    const tpl *t = &ts->t[c->members[i].tpl];
    const tpl_request *q = &t->reqs[c->members[i].req];
    unsigned long *last = &ts->last[c->members[i].tpl * ts->window + sl->seq % ts->window];
    if (q->stop_first && *last == sl->seq + 1)
      continue; /* this target matched it already */
    size_t n = judge(s, sl, t, q, rc == RC_STOPPED);
    if (n)
      *last = sl->seq + 1;
    lines += n;
  }
  ts->matches += lines;
  return lines;
}
