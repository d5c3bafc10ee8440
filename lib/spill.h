/* A spill file: body bytes kept on disk in an unlinked temporary file,
 * written in batches while the transfer runs and mapped read-only,
 * NUL-terminated, for reading. The file has no name from the start, so it
 * never outlives its descriptor; the pool's shelf keeps it for the next
 * spill when the body is done with it. Internal. */
#ifndef RC_SPILL_H
#define RC_SPILL_H

#include <stddef.h>
#include "respchain.h"
#include "shelf.h"

typedef struct rc__spill {
  int fd;               /* -1: no file */
  size_t len;           /* bytes taken: the file's, then the batch's */
  size_t filed;         /* of them, bytes in the file */
  size_t size;          /* the file's size (a kept file can be larger) */
  unsigned char *batch; /* the len - filed bytes not written yet, or NULL */
  size_t batch_cap;     /* its size, lent by the shelf */
  rc__shelf *shelf;     /* where the file and its batch come from */
  rc__shelved *entry;   /* the file's entry on the shelf, given back with it */
  char *map;            /* read-only mapping of filed + 1 bytes, or NULL */
  size_t map_len;       /* the filed it was made for */
  int ended;            /* the byte at filed in the file is a NUL */
  int failed;           /* a write failed: bytes past filed are lost */
} rc__spill;

/* Begins a spill file: one the shelf keeps, else a new one in dir
 * (O_TMPFILE; else mkstemp, then unlink), holding the NUL of an empty body.
 * Bytes are gathered in a batch lent by the shelf before they are
 * written: a write per curl chunk costs the file system more than copying
 * the chunk once. RC_OK, RC_E_SPILL, or RC_E_NOMEM (no entry for the
 * file on the shelf). */
rc_code rc__spill_open(rc__spill *s, rc__shelf *shelf, const char *dir);

/* Takes n bytes. RC_OK, or RC_E_SPILL: a write failed (no space, file size
 * limit, I/O error), now or before; len drops to the bytes the file took,
 * but for the last one (the NUL's place), and the file takes no more.
 * RC_E_NOMEM: no batch buffer. */
rc_code rc__spill_write(rc__spill *s, const void *data, size_t n);

/* The batch's free room, for a decoder to write into (*avail > 0), then
 * rc__spill_commit of what it wrote. Errors as rc__spill_write. */
rc_code rc__spill_tail(rc__spill *s, unsigned char **out, size_t *avail);
void rc__spill_commit(rc__spill *s, size_t n);

/* Writes the batch out and frees it. RC_OK, or RC_E_SPILL as
 * rc__spill_write. */
rc_code rc__spill_flush(rc__spill *s);

/* rc__spill_flush (failed and len tell how that went), then maps the
 * file's bytes, NUL-terminated, again if they changed since the last call.
 * NULL when mapping fails: mmap (address space exhausted), or an I/O error
 * putting back the NUL that a failed write overwrote. Not thread-safe: the
 * caller serialises. */
const char *rc__spill_map(rc__spill *s);

/* Unmaps, and gives the batch and the file back to the shelf; s is empty
 * again. */
void rc__spill_close(rc__spill *s);

#endif
