/* scan's values in the templates' matchers: nuclei renders each matcher
 * word with the values its request was made with (and the response's),
 * just before it looks for it; tpl-vars.c decided which values each word
 * reads (m->renders). A word whose values are the same in every scan
 * (constants, -var, a variable evaluated once in the scan that is not
 * random) is replaced here, once, before the matchers are compiled, so
 * that it streams as any word does; the others (the target's, the
 * response's, random ones) are replaced for each response by the
 * evaluation (eval-tpl.c). A regex is compiled as written, as nuclei
 * compiles it, but for {{randstr}}, which nuclei replaces in the whole
 * template when it reads it: replaced here, and matched for each
 * response. */
#include "plan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define RANDSTR "{{randstr}}"

/* re with each {{randstr}} as the scan's letters, compiled again (as
 * written where PCRE2 refuses the result). 0, or -1 when out of memory. */
static int fix_regex(regex *re, const char *letters)
{
  if (!re->text || !strstr(re->text, RANDSTR))
    return 0;
  line l = {0};
  const char *p = re->text;
  for (const char *o; (o = strstr(p, RANDSTR)) != NULL; p = o + strlen(RANDSTR)) {
    put(&l, p, (size_t)(o - p));
    puts_line(&l, letters);
  }
  puts_line(&l, p);
  put(&l, "", 1);
  regex fresh;
  char msg[160];
  if (l.nomem) {
    free(l.p);
    return -1;
  }
  if (regex_compile(&fresh, l.p, msg, sizeof msg) != 0) {
    regex_free(&fresh);
    free(l.p);
    return 0;
  }
  free((char *)re->text);
  regex_free(re);
  *re = fresh;
  return 0;
}

static void lower(char *s)
{
  for (; *s; s++)
    *s = (char)tolower((unsigned char)*s);
}

/* Word w of m replaced with the scan's values v. One whose expression
 * fails is left to each response, where it fails the same way and the
 * matcher goes as nuclei's does. 0, or -1 when out of memory. */
static int fix_word(tpl_matcher *m, size_t w, const plan_vals *v)
{
  line l = {0};
  expr_code rc = plan_render(v, m->words[w], &l, NULL);
  put(&l, "", 1);
  if (rc == EXPR_E_NOMEM || l.nomem) {
    free(l.p);
    return -1;
  }
  if (rc != EXPR_OK) {
    free(l.p);
    m->renders[w] = TPL_WORD_RESPONSE;
    return 0;
  }
  if (m->nocase)
    lower(l.p);
  free(m->words[w]);
  m->words[w] = l.p;
  return 0;
}

/* Whether a word of t is replaced once in the scan. */
static int has_scan_words(const tpl *t)
{
  for (size_t i = 0; i < t->nreqs; i++)
    for (size_t j = 0; j < t->reqs[i].nmatchers; j++)
      for (size_t w = 0; t->reqs[i].matchers[j].renders && w < t->reqs[i].matchers[j].n; w++)
        if (t->reqs[i].matchers[j].renders[w] == TPL_WORD_SCAN)
          return 1;
  return 0;
}

/* Template t's words of the scan replaced, with its values that are the
 * scan's: no target's, and of its variables those evaluated once in the
 * scan (plan_fix; the others are not evaluated here, and not known). 0 or
 * -1. */
static int fix_words(tpl *t, const plan *p, size_t index)
{
  plan_vals v;
  int rc = plan_vals_eval(&v, p, index, NULL, 0);
  if (!rc && t->nvars && !(v.vars = calloc(t->nvars, sizeof *v.vars)))
    rc = -1;
  v.known = t->nvars;
  for (size_t i = 0; !rc && i < t->nreqs; i++)
    for (size_t j = 0; !rc && j < t->reqs[i].nmatchers; j++) {
      tpl_matcher *m = &t->reqs[i].matchers[j];
      for (size_t w = 0; !rc && m->renders && w < m->n; w++)
        if (m->renders[w] == TPL_WORD_SCAN)
          rc = fix_word(m, w, &v);
    }
  plan_vals_free(&v);
  return rc ? -1 : 0;
}

int plan_words(const plan *p, templates *ts)
{
  for (size_t t = 0; t < ts->n; t++) {
    tpl *tp = &ts->t[t];
    if (has_scan_words(tp) && fix_words(tp, p, t) != 0)
      return -1;
    for (size_t i = 0; i < tp->nreqs; i++) {
      tpl_request *q = &tp->reqs[i];
      for (size_t j = 0; j < q->nmatchers; j++)
        for (size_t k = 0; q->matchers[j].type == TM_REGEX && k < q->matchers[j].n; k++)
          if (fix_regex(&q->matchers[j].regexes[k], p->randstr) != 0)
            return -1;
      for (size_t j = 0; j < q->nextractors; j++)
        for (size_t k = 0; q->extractors[j].regexes && k < q->extractors[j].n; k++)
          if (fix_regex(&q->extractors[j].regexes[k], p->randstr) != 0)
            return -1;
    }
  }
  return 0;
}
