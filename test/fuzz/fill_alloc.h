/* An allocator for the fuzz targets that sits on top of another one: every
 * byte it hands out that the caller has not written yet holds a junk
 * pattern (in blocks up to fill_max), and realloc always moves the block.
 * Bugs that read memory never written (a missing NUL terminator, say) or
 * that keep a pointer across a reallocation then show up with any
 * compiler, not only under a sanitizer that happens to fill or poison
 * memory. */
#ifndef RC_FUZZ_FILL_ALLOC_H
#define RC_FUZZ_FILL_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "respchain.h"

#define FZ_JUNK 0xA5

typedef struct fz_fill_alloc {
  rc_allocator a; /* pass &f.a as rc_pool_config.allocator */
  const rc_allocator *under;
  size_t fill_max; /* blocks larger than this are handed out as under
                      gives them: SIZE_MAX (the default) fills all */
} fz_fill_alloc;

/* Each block carries its size in front, so that realloc knows how much to
 * copy and how much to fill. */
typedef union fz_fill_head {
  size_t size;
  max_align_t align;
} fz_fill_head;

static inline void *fz_fill_realloc(void *p, size_t n, void *ud)
{
  fz_fill_alloc *f = ud;
  if (n > SIZE_MAX - sizeof(fz_fill_head))
    return NULL;
  fz_fill_head *h = f->under->malloc(sizeof *h + n, f->under->ud);
  if (!h)
    return NULL; /* the old block stays as it was */
  h->size = n;
  size_t kept = 0;
  if (p) {
    fz_fill_head *old = (fz_fill_head *)p - 1;
    kept = old->size < n ? old->size : n;
    memcpy(h + 1, p, kept);
    if (old->size <= f->fill_max)
      memset(p, FZ_JUNK, old->size);
    f->under->free(old, f->under->ud);
  }
  if (n <= f->fill_max)
    memset((unsigned char *)(h + 1) + kept, FZ_JUNK, n - kept);
  return h + 1;
}

static inline void *fz_fill_malloc(size_t n, void *ud) { return fz_fill_realloc(NULL, n, ud); }

static inline void fz_fill_free(void *p, void *ud)
{
  fz_fill_alloc *f = ud;
  if (p)
    f->under->free((fz_fill_head *)p - 1, f->under->ud);
}

static inline void *fz_std_malloc(size_t n, void *ud)
{
  (void)ud;
  return malloc(n);
}

static inline void *fz_std_realloc(void *p, size_t n, void *ud)
{
  (void)ud;
  return realloc(p, n);
}

static inline void fz_std_free(void *p, void *ud)
{
  (void)ud;
  free(p);
}

/* The malloc family as an rc_allocator. */
static const rc_allocator fz_std_allocator = {fz_std_malloc, fz_std_realloc, fz_std_free, NULL};

/* f on top of under (NULL: the malloc family). */
static inline void fz_fill_init(fz_fill_alloc *f, const rc_allocator *under)
{
  f->a.malloc = fz_fill_malloc;
  f->a.realloc = fz_fill_realloc;
  f->a.free = fz_fill_free;
  f->a.ud = f;
  f->under = under ? under : &fz_std_allocator;
  f->fill_max = SIZE_MAX;
}

#endif
