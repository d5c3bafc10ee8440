/* scan's choice of templates (-tags, -etags, -severity, -es, -id, -eid,
 * -author, -type, -ept), with nuclei's meaning: its options take comma
 * lists, repeatable, in any case; a template is left out when it has an
 * excluded tag, id, severity or type, else chosen when each kind of
 * value given has one of it (any of -tags AND any of -severity AND ...).
 * Tags and authors are compared trimmed and in lower case, as nuclei
 * reads them; ids too, and an id given with * ? or [ is a glob pattern.
 * A template without a severity (or type) matches no -severity (-type).
 * Nothing here reads a file: the loader (tpl-load.c) asks once it has a
 * template's id, info and protocol. */
#define _GNU_SOURCE /* FNM_CASEFOLD */
#include "tpl.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* nuclei's severities and protocol types, the values -severity and -type
 * take. */
static const char *const SEVERITIES[] = {"info",     "low",     "medium", "high",
                                         "critical", "unknown", NULL};
static const char *const TYPES[] = {"dns",     "file",      "http",  "headless",
                                    "tcp",     "workflow",  "ssl",   "websocket",
                                    "whois",   "code",      "javascript", NULL};

static int listed(const char *const *names, const char *s)
{
  for (; *names; names++)
    if (!strcmp(*names, s))
      return 1;
  return 0;
}

/* Whether s is a value field takes. */
static int valid(tpl_field field, const char *s)
{
  if (field == TF_SEVERITY || field == TF_ESEVERITY)
    return listed(SEVERITIES, s);
  if (field == TF_TYPE || field == TF_ETYPE)
    return listed(TYPES, s);
  return 1;
}

/* s[0..len) trimmed of white space, in lower case, as a new string. */
static char *normal(const char *s, size_t len)
{
  while (len && isspace((unsigned char)*s))
    s++, len--;
  while (len && isspace((unsigned char)s[len - 1]))
    len--;
  char *d = malloc(len + 1);
  for (size_t i = 0; d && i < len; i++)
    d[i] = (char)tolower((unsigned char)s[i]);
  if (d)
    d[len] = '\0';
  return d;
}

int tpl_filter_add(tpl_filter *f, tpl_field field, const char *text)
{
  size_t added = 0;
  for (const char *p = text;; p++) {
    size_t len = strcspn(p, ",");
    char *v = normal(p, len);
    if (!v)
      return -2;
    if (!*v || !valid(field, v)) {
      int bad = *v != '\0';
      free(v);
      if (bad)
        return -1;
    } else {
      char **grown = realloc(f->v[field], (f->n[field] + 1) * sizeof *grown);
      if (!grown) {
        free(v);
        return -2;
      }
      f->v[field] = grown;
      grown[f->n[field]++] = v;
      added++;
    }
    p += len;
    if (!*p)
      break;
  }
  return added ? 0 : -1;
}

int tpl_filter_any(const tpl_filter *f)
{
  for (int i = 0; i < TF_FIELDS; i++)
    if (f->n[i])
      return 1;
  return 0;
}

/* Whether value s of a template, trimmed and in lower case, is one of
 * field's. */
static int one_of(const tpl_filter *f, tpl_field field, const char *s)
{
  if (!s)
    return 0;
  size_t len = strlen(s);
  while (len && isspace((unsigned char)*s))
    s++, len--;
  while (len && isspace((unsigned char)s[len - 1]))
    len--;
  for (size_t i = 0; i < f->n[field]; i++)
    if (strlen(f->v[field][i]) == len && !strncasecmp(f->v[field][i], s, len))
      return 1;
  return 0;
}

/* Whether any of the n values of a template is one of field's. */
static int any_of(const tpl_filter *f, tpl_field field, char *const *vals, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (one_of(f, field, vals[i]))
      return 1;
  return 0;
}

/* Whether id, in any case, is one of field's ids or matches one of its
 * patterns. */
static int id_of(const tpl_filter *f, tpl_field field, const char *id)
{
  for (size_t i = 0; id && i < f->n[field]; i++) {
    const char *want = f->v[field][i];
    if (strpbrk(want, "*?[") ? fnmatch(want, id, FNM_PATHNAME | FNM_CASEFOLD) == 0
                             : !strcasecmp(want, id))
      return 1;
  }
  return 0;
}

int tpl_filter_match(const tpl_filter *f, const tpl *t)
{
  if (any_of(f, TF_ETAGS, t->tags, t->ntags) || id_of(f, TF_EID, t->id) ||
      one_of(f, TF_ESEVERITY, t->severity) || one_of(f, TF_ETYPE, t->type))
    return 0;
  return (!f->n[TF_AUTHOR] || any_of(f, TF_AUTHOR, t->authors, t->nauthors)) &&
         (!f->n[TF_TAGS] || any_of(f, TF_TAGS, t->tags, t->ntags)) &&
         (!f->n[TF_ID] || id_of(f, TF_ID, t->id)) &&
         (!f->n[TF_SEVERITY] || one_of(f, TF_SEVERITY, t->severity)) &&
         (!f->n[TF_TYPE] || one_of(f, TF_TYPE, t->type));
}

void tpl_filter_free(tpl_filter *f)
{
  for (int i = 0; i < TF_FIELDS; i++) {
    for (size_t k = 0; k < f->n[i]; k++)
      free(f->v[i][k]);
    free(f->v[i]);
    f->v[i] = NULL;
    f->n[i] = 0;
  }
}
