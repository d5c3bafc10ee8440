/* Links: tokens that name an object until the link is dropped, and name
 * nothing after, so that a holder that outlives the object finds it gone,
 * never freed memory. rc_attach gives an easy handle a link to its
 * response as WRITEDATA, HEADERDATA and PREREQDATA instead of the response
 * itself (transfer.c): a handle that outlives its response (freed first,
 * curl_easy_cleanup after or never, the handle used again) or that the
 * response left (attached to another handle, detached) finds it gone.
 * This table knows nothing of what it names.
 *
 * A link is a token: a slot of a process-wide table and a generation. The
 * slot names the object while the link lives; dropping the link (the
 * response freed, detached or attached again) empties the slot, and a
 * slot taken again gets a new generation, so no token handed out before
 * ever resolves again. The table is never freed (a handle may hold a token
 * until exit): its size is the most links alive at once, 32 bytes each on
 * 64-bit systems, from malloc, reachable until exit (not a leak), and its
 * slots are reused. Resolving takes no lock: the slot's generation is
 * read atomically. Internal. */
#ifndef RC_LINK_H
#define RC_LINK_H

#include <stddef.h>
#include "respchain.h"

/* A link to obj (not NULL): *token is what the holder carries. RC_OK, or
 * RC_E_NOMEM (the table cannot grow). */
rc_code rc__link_new(void *obj, void **token);

/* The object token names; NULL once its link was dropped (or for NULL). */
void *rc__link_resolve(void *token);

/* Drops the link of token (NULL: a no-op): it resolves no more. */
void rc__link_drop(void *token);

/* For tests: links alive now, and the most that may be (beyond it
 * rc__link_new says RC_E_NOMEM, as when malloc fails). */
size_t rc__links_alive(void);
void rc__links_set_max(size_t max);

#endif
