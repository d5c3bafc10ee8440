/* scan's targets: the -u URLs, then a list read one line at a time, as
 * far as this shard's share of them goes. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* The next target of the whole list, pointing into t (valid until the
 * next call), or NULL at the end. In a stream, surrounding white space is
 * dropped; blank lines and # comments are skipped. */
static const char *next_in_list(targets *t)
{
  if (t->next < t->count)
    return t->urls[t->next++];
  if (!t->in)
    return NULL;
  ssize_t n;
  while ((n = getline(&t->line, &t->cap, t->in)) >= 0) {
    char *s = t->line, *end = t->line + n;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
      s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
      end--;
    if (s == end || *s == '#')
      continue;
    *end = '\0';
    return s;
  }
  return NULL;
}

/* The next target of this shard as a new string (the caller frees it), or
 * NULL at the end (or when out of memory, which ends the list early). The
 * i-th target of the list (from 0) belongs to shard i mod N + 1: a rule of
 * the list alone, so N runs split it with no coordination. */
char *next_target(targets *t)
{
  const char *url;
  while ((url = next_in_list(t)) != NULL)
    if (t->seen++ % t->shards == t->shard - 1)
      return strdup(url);
  return NULL;
}
