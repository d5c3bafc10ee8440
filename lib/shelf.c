/* The shelf: idle spill files, kept in step with demand, and the batches
 * lent to the files in use. */
#include "shelf.h"

#include <unistd.h>

/* Spill files kept idle when all is quiet: none, so that a quiet pool holds
 * neither page cache nor disk space for bodies that are gone. */
#define FILE_FLOOR 0

rc_code rc__shelf_init(rc__shelf *sh, const rc_allocator *alloc, size_t max_files, size_t max_size)
{
  if (pthread_mutex_init(&sh->lock, NULL) != 0)
    return RC_E_NOMEM;
  sh->idle = NULL;
  sh->max_files = max_files;
  sh->max_size = max_size;
  sh->alloc = alloc;
  sh->batches_lent = 0;
  rc__demand_init(&sh->demand, FILE_FLOOR);
  return RC_OK;
}

/* Closes the files linked from f and frees their entries, outside the
 * lock: closing a file frees its pages, which takes time. */
static void close_chain(rc__shelf *sh, rc__shelved *f)
{
  while (f) {
    rc__shelved *next = f->next;
    close(f->fd);
    sh->alloc->free(f, sh->alloc->ud);
    f = next;
  }
}

/* Unlinks the idle files past what demand and the bounds keep, oldest
 * first, and returns them for closing. Lock held. */
static rc__shelved *shed(rc__shelf *sh)
{
  size_t keep = rc__demand_keep(&sh->demand, sh->max_files);
  rc__shelved *gone = NULL, **pp = &sh->idle;
  size_t kept = 0;
  while (*pp) {
    rc__shelved *f = *pp;
    if (kept < keep && f->size <= sh->max_size) {
      kept++;
      pp = &f->next;
      continue;
    }
    *pp = f->next;
    f->next = gone;
    gone = f;
  }
  return gone;
}

/* Sheds what demand and the bounds no longer keep, releases the lock
 * (held by the caller), then closes those files. */
static void unlock_shedding(rc__shelf *sh)
{
  rc__shelved *gone = shed(sh);
  pthread_mutex_unlock(&sh->lock);
  close_chain(sh, gone);
}

void rc__shelf_destroy(rc__shelf *sh)
{
  close_chain(sh, sh->idle);
  sh->idle = NULL;
  pthread_mutex_destroy(&sh->lock);
}

rc__shelved *rc__shelf_take(rc__shelf *sh)
{
  pthread_mutex_lock(&sh->lock);
  rc__shelved *f = sh->idle;
  if (f)
    sh->idle = f->next;
  pthread_mutex_unlock(&sh->lock);
  if (!f) {
    /* A new file's entry, made now: giving it back then needs nothing. */
    if (!(f = sh->alloc->malloc(sizeof *f, sh->alloc->ud)))
      return NULL;
    f->fd = -1;
    f->size = 0;
  }
  pthread_mutex_lock(&sh->lock);
  rc__demand_take(&sh->demand);
  pthread_mutex_unlock(&sh->lock);
  return f;
}

void rc__shelf_give(rc__shelf *sh, rc__shelved *f)
{
  pthread_mutex_lock(&sh->lock);
  rc__demand_give(&sh->demand);
  if (f->fd >= 0) {
    f->next = sh->idle;
    sh->idle = f;
    f = NULL;
  }
  unlock_shedding(sh);
  if (f)
    sh->alloc->free(f, sh->alloc->ud); /* no file: only the entry */
}

/* One big batch fewer lent. */
static void big_back(rc__shelf *sh)
{
  pthread_mutex_lock(&sh->lock);
  sh->batches_lent--;
  pthread_mutex_unlock(&sh->lock);
}

unsigned char *rc__shelf_batch(rc__shelf *sh, size_t *size)
{
  pthread_mutex_lock(&sh->lock);
  int big = sh->batches_lent < RC__BATCHES_BIG;
  sh->batches_lent += big;
  pthread_mutex_unlock(&sh->lock);
  *size = big ? RC__BATCH_BIG : RC__BATCH_SMALL;
  unsigned char *b = sh->alloc->malloc(*size, sh->alloc->ud);
  if (!b && big)
    big_back(sh);
  return b;
}

void rc__shelf_batch_back(rc__shelf *sh, unsigned char *batch, size_t size)
{
  sh->alloc->free(batch, sh->alloc->ud);
  if (size == RC__BATCH_BIG)
    big_back(sh);
}

void rc__shelf_bounds(rc__shelf *sh, size_t max_files, size_t max_size)
{
  pthread_mutex_lock(&sh->lock);
  sh->max_files = max_files;
  sh->max_size = max_size;
  unlock_shedding(sh);
}

void rc__shelf_tick(rc__shelf *sh)
{
  pthread_mutex_lock(&sh->lock);
  rc__demand_tick(&sh->demand);
  unlock_shedding(sh);
}

void rc__shelf_clear(rc__shelf *sh)
{
  pthread_mutex_lock(&sh->lock);
  rc__shelved *gone = sh->idle;
  sh->idle = NULL;
  rc__demand_forget(&sh->demand);
  pthread_mutex_unlock(&sh->lock);
  close_chain(sh, gone);
}
