/* The shelf: a pool's idle spill files. A spilled body's file is kept when
 * the body is done with it, as large blocks are (as many as recent demand
 * calls for, decaying to none; at most max_large, none bigger than
 * max_buffer), and the next spill writes over it: its pages are already in
 * the page cache, where a new file allocates each one and closing it frees
 * them again. Thread-safe; internal. */
#ifndef RC_SHELF_H
#define RC_SHELF_H

#include <pthread.h>
#include <stddef.h>
#include "demand.h"
#include "respchain.h"

struct rc__shelved;

typedef struct rc__shelf {
  pthread_mutex_t lock;
  struct rc__shelved *idle; /* most recently given back first */
  size_t count;             /* idle files */
  size_t max_files;         /* max_large */
  size_t max_size;          /* max_buffer */
  rc__demand demand;        /* spill files in use lately */
  const rc_allocator *alloc;
} rc__shelf;

/* alloc must outlive the shelf. RC_OK or RC_E_NOMEM (the lock). */
rc_code rc__shelf_init(rc__shelf *sh, const rc_allocator *alloc, size_t max_files, size_t max_size);

/* Closes every idle file and ends the shelf. */
void rc__shelf_destroy(rc__shelf *sh);

/* A spill file begins: an idle file's descriptor and its size in *size, or
 * -1 when none is kept (the caller opens a new one). Either way the file
 * counts as in use until rc__shelf_give. */
int rc__shelf_take(rc__shelf *sh, size_t *size);

/* A spill file ends: fd (-1 for a file that was never opened) of size
 * bytes is kept idle or closed, by the shelf's bounds. */
void rc__shelf_give(rc__shelf *sh, int fd, size_t size);

/* New bounds (rc_pool_set_max_large, rc_pool_set_max_buffer); files they
 * no longer allow are closed. */
void rc__shelf_bounds(rc__shelf *sh, size_t max_files, size_t max_size);

/* Lets demand decay for the time that passed, closing the files it no
 * longer keeps. */
void rc__shelf_tick(rc__shelf *sh);

/* Closes every idle file now (rc_pool_trim). */
void rc__shelf_clear(rc__shelf *sh);

#endif
