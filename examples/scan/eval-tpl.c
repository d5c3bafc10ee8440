/* scan's template verdicts: the matchers and extractors of a template
 * request, over the one response of its cluster; as nuclei, the
 * extractors first, so that the named ones' values are variables of the
 * DSL for the later extractors and the matchers (eval-dsl.c). */
#include "eval.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define VIEWS_MAX 8 /* values of one header looked at */

/* The texts of a part: the header block, the body, or a header's values. */
typedef struct texts {
  rc_view v[VIEWS_MAX];
  size_t n, len;
  int made; /* matcher_texts: made for its matcher */
} texts;

static void part_texts(dsl_view *dv, tpl_part where, const char *header, texts *t)
{
  const rc_response *r = dv->r->resp;
  int hop = eval_hop(dv->t);
  rc_hop_info h;
  t->n = t->len = 0;
  if (where == TP_VAR && dsl_var_text(dv, header, &t->v[0]))
    t->n = 1;
  if ((where == TP_HEADER || where == TP_ALL) && rc_hop(r, hop, &h) == RC_OK)
    t->v[t->n++] = h.raw;
  if (where == TP_BODY || where == TP_ALL)
    t->v[t->n++] = dv->t->back ? (rc_view){"", 0} : rc_body(r);
  for (size_t i = 0; where == TP_NAMED && t->n < VIEWS_MAX; i++)
    if (rc_header(r, hop, header, i, &t->v[t->n]) == RC_OK)
      t->n++;
    else
      break;
  for (size_t i = 0; i < t->n; i++)
    t->len += t->v[i].len;
}

/* Whether needle's n bytes (lower case when nocase) occur in hay. */
static int contains(rc_view hay, const char *needle, size_t n, int nocase)
{
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

/* Word w of m with the view's values (dsl_lookup: the response's, its
 * extractors', the job's), onto out as a string (out->len without its
 * NUL, in lower case when m is case-insensitive); EXPR_OK, or the
 * evaluation's error. */
static expr_code word_value(dsl_view *dv, const tpl_matcher *m, size_t w, line *out)
{
  const tpl *t = &dv->r->g->tpl->t[dv->t->tpl];
  expr_env env;
  expr_env_init(&env);
  env.lookup = dsl_lookup;
  env.ud = dv;
  expr_error err;
  expr_code rc = tpl_render(t, m->words[w], &env, &dv->arena, out, &err);
  put(out, "", 1);
  if (rc == EXPR_OK && out->nomem)
    rc = EXPR_E_NOMEM;
  dv->nomem |= rc == EXPR_E_NOMEM;
  if (rc != EXPR_OK)
    return rc;
  out->len--;
  for (size_t i = 0; m->nocase && i < out->len; i++)
    out->p[i] = (char)tolower((unsigned char)out->p[i]);
  return EXPR_OK;
}

/* Word i of m, replaced for this response (word_value), in its part: the
 * header block, a header's values, or the kept body. As nuclei's: under
 * and, a word whose expression fails fails the matcher; under or, it is
 * looked for as written. */
static int word_hits(dsl_view *dv, const tpl_matcher *m, size_t i)
{
  line w = {0};
  expr_code rc = word_value(dv, m, i, &w);
  int hit = 0;
  texts t;
  if (rc == EXPR_OK || (rc != EXPR_E_NOMEM && !m->cond_and)) {
    part_texts(dv, m->part, m->header, &t);
    for (size_t k = 0; !hit && k < t.n; k++)
      hit = rc == EXPR_OK ? contains(t.v[k], w.p, w.len, m->nocase)
                          : contains(t.v[k], m->words[i], strlen(m->words[i]), m->nocase);
  }
  free(w.p);
  return hit;
}

/* Regex i of m, random (it held a {{randstr}}), over its part. */
static int regex_hits(dsl_view *dv, const tpl_matcher *m, size_t i)
{
  texts t;
  part_texts(dv, m->part, m->header, &t);
  for (size_t k = 0; k < t.n; k++)
    if (regex_hit(&m->regexes[i], t.v[k]))
      return 1;
  return 0;
}

/* The texts value_hits looks at for matcher m (the header block alone of
 * a final response's TP_ALL: its body is the reading's verdict), made on
 * first use: once per matcher, not per value. */
static const texts *matcher_texts(dsl_view *dv, const tpl_matcher *m, texts *t)
{
  if (!t->made) {
    part_texts(dv, !dv->t->back && m->part == TP_ALL ? TP_HEADER : m->part, m->header, t);
    t->made = 1;
  }
  return t;
}

/* Whether m's number i is the size of its part (not TP_NAMED nor TP_VAR):
 * the header block, the body, or both. */
static int size_hits(dsl_view *dv, const tpl_matcher *m, size_t i)
{
  rc_hop_info h;
  size_t n = 0;
  if (m->part != TP_BODY && rc_hop(dv->r->resp, eval_hop(dv->t), &h) == RC_OK)
    n += h.raw.len;
  if (m->part != TP_HEADER && !dv->t->back)
    n += (size_t)rc_body_length(dv->r->resp);
  return m->numbers[i] >= 0 && (size_t)m->numbers[i] == n;
}

/* Value i of matcher m hits: over the header block or a header's values
 * here, in the final body by the reading's verdict (the engine's, see
 * eval_matchers), in an earlier hop's (empty) body here; a word replaced
 * for each response, here. t: m's texts, made on first use. */
static int value_hits(dsl_view *dv, const tpl_matcher *m, size_t i, texts *t)
{
  if (m->type == TM_WORD && m->renders && m->renders[i] == TPL_WORD_RESPONSE)
    return word_hits(dv, m, i);
  if (m->type == TM_REGEX && m->renders && m->renders[i] == TPL_WORD_RESPONSE)
    return regex_hits(dv, m, i);
  const reading *rd = dv->r;
  int back = dv->t->back;
  rc_hop_info h;
  switch (m->type) {
  case TM_STATUS:
    return rc_hop(rd->resp, eval_hop(dv->t), &h) == RC_OK && m->numbers[i] == h.status;
  case TM_SIZE:
    if (m->part == TP_NAMED || m->part == TP_VAR)
      return m->numbers[i] >= 0 && (size_t)m->numbers[i] == matcher_texts(dv, m, t)->len;
    return size_hits(dv, m, i);
  case TM_DSL: return 0; /* matcher_hits evaluates them */
  default:
    if (!back && m->ids && verdict_has(&rd->v, rd->g->m, m->ids[i]))
      return 1;
  }
  if (!back && m->part == TP_BODY)
    return 0;
  matcher_texts(dv, m, t);
  for (size_t k = 0; k < t->n; k++)
    if (m->type == TM_WORD ? contains(t->v[k], m->words[i], strlen(m->words[i]), m->nocase)
                           : regex_hit(&m->regexes[i], t->v[k]))
      return 1;
  return 0;
}

/* The one text of a part, as nuclei's getMatchPart gives it to a json or
 * xpath extractor and an xpath matcher: the body, the header block, the
 * response (header block and body), or a variable's value; the
 * response's being the one of the chain t names. */
static int one_text(dsl_view *dv, tpl_part where, const char *name, rc_view *out)
{
  rc_hop_info h;
  switch (where) {
  case TP_BODY: /* an earlier response of a chain has none (part_texts) */
    *out = dv->t->back ? (rc_view){"", 0} : rc_body(dv->r->resp);
    break;
  case TP_HEADER:
    *out = rc_hop(dv->r->resp, eval_hop(dv->t), &h) == RC_OK ? h.raw : (rc_view){"", 0};
    break;
  case TP_ALL: return dsl_var_text(dv, "response", out);
  default: return dsl_var_text(dv, name, out);
  }
  if (!out->ptr)
    *out = (rc_view){"", 0};
  return 1;
}

/* Matcher m's verdict: its condition over its values, negative applied. */
static int matcher_hits(dsl_view *dv, const tpl_matcher *m)
{
  int hit = m->cond_and;
  rc_view text;
  texts t;
  t.made = 0;
  if (m->type == TM_DSL)
    hit = dsl_match(dv, m);
  if (m->type == TM_XPATH)
    hit = one_text(dv, m->part, m->header, &text) && xpath_match(m, text);
  for (size_t i = 0; m->type != TM_DSL && m->type != TM_XPATH && i < m->n; i++) {
    int h = value_hits(dv, m, i, &t);
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

void tpl_values_add(tpl_values *x, const char *p, size_t len)
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
static void regex_values(const regex *re, long g, rc_view text, tpl_values *x)
{
  size_t at = 0, b[4];
  int rc = 0;
  while (at <= text.len && x->n < EXTRACT_MAX && (rc = regex_next(re, text, at, 0, g, b)) >= 0) {
    if (b[2] != PCRE2_UNSET)
      tpl_values_add(x, text.ptr + b[2], b[3] - b[2]);
    at = b[1] > b[0] ? b[1] : b[1] + 1;
  }
  if (rc == PCRE2_ERROR_NOMEMORY)
    x->nomem = 1;
}

static void extract(dsl_view *dv, const tpl_extractor *e, tpl_values *x)
{
  texts t;
  rc_view text;
  switch (e->type) {
  case TX_DSL: dsl_extract(dv, e, x); return;
  case TX_JSON:
    if (one_text(dv, e->part, e->header, &text))
      json_extract(dv->r->g->tpl->jq, e, text, x);
    return;
  case TX_XPATH:
    if (one_text(dv, e->part, e->header, &text))
      xpath_extract(e, text, x);
    return;
  case TX_KVAL: /* nuclei's: the response's variables by name */
    for (size_t i = 0; i < e->n; i++)
      if (dsl_var_text(dv, e->keys[i], &text))
        tpl_values_add(x, text.ptr, text.len);
    return;
  default: break;
  }
  for (size_t i = 0; i < e->n; i++) {
    part_texts(dv, e->part, e->header, &t);
    for (size_t k = 0; k < t.n; k++)
      regex_values(&e->regexes[i], e->group, t.v[k], x);
  }
}

void tpl_values_free(tpl_values *x)
{
  for (size_t i = 0; i < x->n; i++)
    free(x->v[i]);
  x->n = 0;
}

/* The values of the internal extractors (each, per extractor) go to the
 * sequence's later requests. As nuclei (eventcreator): not when the
 * other extractors found values too (x), which then take their place. */
static void pass_values(dsl_view *dv, const tpl_values *each, const tpl_values *x)
{
  const tpl_request *q = dv->q;
  for (size_t i = 0; !x->n && i < q->nextractors; i++)
    if (q->extractors[i].internal && q->extractors[i].name && each[i].n &&
        plan_seq_extracted(dv->t->seq, dv->r->g->plan, q->extractors[i].name, each[i].v, NULL,
                           each[i].n) != 0)
      dv->nomem = 1;
}

/* ---- Verdicts ----------------------------------------------------------- */

/* Whether matcher m reads the response alone: no variable of the DSL,
 * which may be a value of the request's extractors. */
static int reads_response(const tpl_matcher *m)
{
  if (m->type == TM_DSL || m->type == TM_XPATH || m->part == TP_VAR)
    return 0;
  for (size_t i = 0; m->renders && i < m->n; i++)
    if (m->renders[i] == TPL_WORD_RESPONSE)
      return 0;
  return 1;
}

/* Whether q has a named extractor: its values are variables of the DSL. */
static int has_named(const tpl_request *q)
{
  for (size_t i = 0; i < q->nextractors; i++)
    if (q->extractors[i].name)
      return 1;
  return 0;
}

/* Whether template t gives a sequence values: an internal extractor with a
 * name (tpl_extracted), which q may pass on and any lookup may miss. */
static int gives_values(const tpl *t)
{
  for (size_t r = 0; r < t->nreqs; r++)
    for (size_t i = 0; i < t->reqs[r].nextractors; i++)
      if (t->reqs[r].extractors[i].internal && t->reqs[r].extractors[i].name)
        return 1;
  return 0;
}

#define PENDING 2 /* hit[i]: matcher i not evaluated yet */

/* Where q's values matter only if q matches, and no evaluation changes the
 * sequence's state (a request with matchers, outside a sequence of a
 * template that gives values): the matchers that read no value of its
 * extractors, first, the status ones (the cheapest) before the others.
 * Returns whether they decide that q does not match (one fails under and,
 * or all are among them and none hits), its extractors then left unrun;
 * the others are PENDING in hit. */
static int decided_early(dsl_view *dv, const tpl_request *q, const eval_target *t,
                         unsigned char *hit)
{
  memset(hit, PENDING, q->nmatchers);
  if (!q->nmatchers || (t->seq && gives_values(&dv->r->g->tpl->t[t->tpl])))
    return 0;
  int values = has_named(q);
  size_t done = 0, hits = 0;
  for (int status = 1; status >= 0; status--)
    for (size_t i = 0; i < q->nmatchers; i++) {
      const tpl_matcher *m = &q->matchers[i];
      if ((m->type == TM_STATUS) != status || (values && !reads_response(m)))
        continue;
      hit[i] = (unsigned char)matcher_hits(dv, m);
      hits += hit[i];
      done++;
      if (q->cond_and && !hit[i])
        return 1;
    }
  return !q->cond_and && done == q->nmatchers && !hits;
}

int eval_request(const reading *r, const tpl_request *q, const eval_target *t,
                 unsigned char *hit, tpl_values *x)
{
  size_t hits = 0;
  dsl_view dv;
  dsl_view_init(&dv, r, q, t);
  dsl_remember(&dv);
  if (decided_early(&dv, q, t, hit)) {
    for (size_t i = 0; i < q->nmatchers; i++)
      hit[i] = hit[i] == 1;
    x->nomem |= dv.nomem;
    dsl_view_free(&dv);
    return 0;
  }
  /* Only a request with extractors needs their values (most have none:
   * no allocation per response for them). */
  tpl_values *each = q->nextractors ? calloc(q->nextractors, sizeof *each) : NULL;
  if (!each && q->nextractors)
    x->nomem = 1;
  for (size_t i = 0; each && i < q->nextractors; i++) {
    extract(&dv, &q->extractors[i], &each[i]);
    dv.values = each;
    dv.nvalues = i + 1;
    x->nomem |= each[i].nomem;
    for (size_t k = 0; !q->extractors[i].internal && k < each[i].n; k++)
      tpl_values_add(x, each[i].v[k], strlen(each[i].v[k]));
  }
  if (each && t->seq)
    pass_values(&dv, each, x);
  for (size_t i = 0; i < q->nmatchers; i++) {
    if (hit[i] == PENDING)
      hit[i] = (unsigned char)matcher_hits(&dv, &q->matchers[i]);
    hits += hit[i];
  }
  x->nomem |= dv.nomem;
  dsl_view_free(&dv);
  size_t found = 0; /* values, internal ones too */
  for (size_t i = 0; each && i < q->nextractors; i++) {
    found += each[i].n;
    tpl_values_free(&each[i]);
  }
  free(each);
  int matched = q->cond_and ? hits == q->nmatchers : hits > 0;
  /* A flow's verdict of the block (nuclei's): a response matched, or one of
   * a block without matchers gave a value, or came to one without either. */
  if (t->seq)
    t->seq->ok |= q->nmatchers ? matched : q->nextractors ? found > 0 : 1;
  return !q->nmatchers ? x->n > 0 : matched;
}

int tpl_settled(const reading *r)
{
  return r->g->clusters[r->cluster].can_stop && r->v.nwords + r->v.nregexes == r->nids;
}
