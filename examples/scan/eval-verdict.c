/* scan's verdicts: which matchers hit one response, and where in the
 * body each first match ends; and which matchers a response is matched
 * by. */
#include "eval.h"

#include <stdlib.h>
#include <string.h>

int verdict_init(verdict *v, const matchers *m)
{
  v->words = calloc(m->nwords + 1, 1);
  v->regexes = calloc(m->nregexes + 1, 1);
  v->word_at = calloc(m->nwords + 1, sizeof *v->word_at);
  v->regex_at = calloc(m->nregexes + 1, sizeof *v->regex_at);
  return v->words && v->regexes && v->word_at && v->regex_at ? 0 : -1;
}

void verdict_free(verdict *v)
{
  free(v->words);
  free(v->regexes);
  free(v->word_at);
  free(v->regex_at);
}

void verdict_clear(verdict *v, const matchers *m, const size_t *ids, size_t n)
{
  v->status = v->status_missed = 0;
  v->nwords = v->nregexes = 0;
  if (!ids) {
    memset(v->words, 0, m->nwords);
    memset(v->regexes, 0, m->nregexes);
  }
  for (size_t k = 0; ids && k < n; k++) {
    if (ids[k] < m->nwords)
      v->words[ids[k]] = 0;
    else
      v->regexes[ids[k] - m->nwords] = 0;
  }
}

int verdict_hit(verdict *v, const matchers *m, size_t id, size_t offset)
{
  if (id < m->nwords && !v->words[id]) {
    v->words[id] = 1;
    v->word_at[id] = offset;
    v->nwords++;
    return 1;
  }
  if (id >= m->nwords && !v->regexes[id - m->nwords]) {
    v->regexes[id - m->nwords] = 1;
    v->regex_at[id - m->nwords] = offset;
    v->nregexes++;
    return 1;
  }
  return 0;
}

int verdict_has(const verdict *v, const matchers *m, size_t id)
{
  return id < m->nwords ? v->words[id] : v->regexes[id - m->nwords];
}

int reading_takes(const reading *r, size_t id)
{
  size_t lo = 0, hi = r->nids;
  if (!r->ids)
    return id < r->nids;
  while (lo < hi) { /* ids ascend */
    size_t mid = lo + (hi - lo) / 2;
    if (r->ids[mid] == id)
      return 1;
    if (r->ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}
