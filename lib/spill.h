/* A spill file: body bytes kept on disk in an unlinked temporary file,
 * appended to while the transfer runs and mapped read-only, NUL-terminated,
 * for reading. The file has no name from the start, so it never outlives
 * its descriptor. Internal. */
#ifndef RC_SPILL_H
#define RC_SPILL_H

#include <stddef.h>
#include "respchain.h"

typedef struct rc__spill {
  int fd;         /* -1: no file */
  size_t len;     /* bytes written */
  char *map;      /* read-only mapping of len + 1 bytes, or NULL */
  size_t map_len; /* the len it was made for */
  int ended;      /* the file is len + 1 bytes, the last a NUL */
} rc__spill;

/* Creates the file in dir (O_TMPFILE; else mkstemp, then unlink), holding
 * the NUL of an empty body. RC_OK or RC_E_SPILL. */
rc_code rc__spill_open(rc__spill *s, const char *dir);

/* Appends n bytes, and the NUL past them: the file always has room for the
 * byte that terminates a view, so whatever it took can be mapped. All or
 * RC_E_SPILL (no space, file size limit, I/O error: the bytes before stay,
 * len is unchanged). */
rc_code rc__spill_write(rc__spill *s, const void *data, size_t n);

/* The bytes, NUL-terminated; mapped again if written since the last call.
 * NULL when mapping fails: mmap (address space exhausted), or an I/O error
 * putting back the NUL that a failed write overwrote. Not thread-safe: the
 * caller serialises. */
const char *rc__spill_map(rc__spill *s);

/* Unmaps and closes; s is empty again. */
void rc__spill_close(rc__spill *s);

#endif
