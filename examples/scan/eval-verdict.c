/* scan's verdicts: which matchers hit one response, and where in the
 * body each first match ends. */
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

void verdict_clear(verdict *v, const matchers *m)
{
  v->status = v->status_missed = 0;
  v->nwords = v->nregexes = 0;
  memset(v->words, 0, m->nwords);
  memset(v->regexes, 0, m->nregexes);
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
