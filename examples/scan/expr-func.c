/* The expression engine's function library, by name: one table per group
 * (expr-func-*.c). The DSL registers every function also under its name
 * without underscores (tolower for to_lower, base64decode), as nuclei's
 * older templates write them; expr__fn_find accepts both. */
#include "expr-int.h"

#include <string.h>

static const expr_fn *const tables[] = {
    expr__fn_strings, expr__fn_codings,  expr__fn_hashes, expr__fn_numbers, expr__fn_time,
    expr__fn_versions, expr__fn_regex, expr__fn_zlib,   expr__fn_random, expr__fn_json,
    expr__fn_jwt,
};

/* Whether name[0..len) is fn's name with its underscores left out. */
static int squeezed(const char *fn, const char *name, size_t len)
{
  size_t i = 0;
  for (; *fn; fn++) {
    if (*fn == '_')
      continue;
    if (i == len || name[i++] != *fn)
      return 0;
  }
  return i == len;
}

const expr_fn *expr__fn_find(const char *name, size_t len)
{
  for (int pass = 0; pass < 2; pass++)
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
      for (const expr_fn *f = tables[t]; f->name; f++)
        if (pass == 0 ? strlen(f->name) == len && memcmp(f->name, name, len) == 0
                      : squeezed(f->name, name, len))
          return f;
  return NULL;
}
