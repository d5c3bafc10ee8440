/* The shelf: what a pool lends its spill files. Idle files: a spilled
 * body's file is kept when the body is done with it, as large blocks are
 * (as many as recent demand calls for, decaying to none; at most
 * max_large, none bigger than max_buffer), and the next spill writes over
 * it: its pages are already in the page cache, where a new file allocates
 * each one and closing it frees them again. And write batches: a file
 * gathers bytes before it writes them, in a big batch while few are lent,
 * so that the memory of batches stays bounded however many bodies spill at
 * once. Thread-safe; internal. */
#ifndef RC_SHELF_H
#define RC_SHELF_H

#include <pthread.h>
#include <stddef.h>
#include "demand.h"
#include "respchain.h"

/* A spill file's entry: made with the file, kept with it while idle. */
typedef struct rc__shelved {
  struct rc__shelved *next;
  int fd;      /* -1: no file yet */
  size_t size; /* the file's size */
} rc__shelved;

#define RC__BATCH_BIG   (256u * 1024u) /* a write batch, while few are lent */
#define RC__BATCH_SMALL (16u * 1024u)  /* one past those: as curl's chunks */
#define RC__BATCHES_BIG 64u            /* big batches lent at once: 16 MiB */

typedef struct rc__shelf {
  pthread_mutex_t lock;
  struct rc__shelved *idle; /* most recently given back first */
  size_t max_files;         /* max_large */
  size_t max_size;          /* max_buffer */
  rc__demand demand;        /* spill files in use lately */
  size_t batches_lent;      /* big batches lent now */
  const rc_allocator *alloc;
} rc__shelf;

/* alloc must outlive the shelf. RC_OK or RC_E_NOMEM (the lock). */
rc_code rc__shelf_init(rc__shelf *sh, const rc_allocator *alloc, size_t max_files, size_t max_size);

/* Closes every idle file and ends the shelf. */
void rc__shelf_destroy(rc__shelf *sh);

/* A spill file begins: an idle file's entry, else a new entry with fd -1
 * (the caller opens the file and sets fd and size); NULL when out of
 * memory. Either way the file counts as in use until rc__shelf_give. */
rc__shelved *rc__shelf_take(rc__shelf *sh);

/* A spill file ends: its entry (fd and size up to date; fd -1 for a file
 * that was never opened, or that the caller closed) is kept idle, or its
 * file closed, by the shelf's bounds. Allocates nothing. */
void rc__shelf_give(rc__shelf *sh, rc__shelved *f);

/* A write batch for a spill file, from the shelf's allocator, of *size
 * bytes: RC__BATCH_BIG while fewer than RC__BATCHES_BIG are lent, else
 * RC__BATCH_SMALL. NULL when out of memory. rc__shelf_batch_back frees it. */
unsigned char *rc__shelf_batch(rc__shelf *sh, size_t *size);
void rc__shelf_batch_back(rc__shelf *sh, unsigned char *batch, size_t size);

/* New bounds (rc_pool_set_max_large, rc_pool_set_max_buffer); files they
 * no longer allow are closed. */
void rc__shelf_bounds(rc__shelf *sh, size_t max_files, size_t max_size);

/* Lets demand decay for the time that passed, closing the files it no
 * longer keeps. */
void rc__shelf_tick(rc__shelf *sh);

/* Closes every idle file now (rc_pool_trim). */
void rc__shelf_clear(rc__shelf *sh);

#endif
