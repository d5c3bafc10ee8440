/* Handle links: what rc_attach gives an easy handle as WRITEDATA,
 * HEADERDATA and PREREQDATA instead of the response itself, so that a
 * handle that outlives its response (freed first, curl_easy_cleanup after
 * or never, the handle used again) or that the response left (attached to
 * another handle, detached) finds it gone, never freed memory.
 *
 * A link is a token: a slot of a process-wide table and a generation. The
 * slot names the response while the link lives; dropping the link (the
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

/* A link of resp's: *token is what the handle carries. RC_OK, or
 * RC_E_NOMEM (the table cannot grow). */
rc_code rc__link_new(rc_response *resp, void **token);

/* The response token names; NULL once its link was dropped (or for NULL). */
rc_response *rc__link_resolve(void *token);

/* Drops the link of token (NULL: a no-op): it resolves no more. */
void rc__link_drop(void *token);

/* For tests: links alive now, and the most that may be (beyond it
 * rc__link_new says RC_E_NOMEM, as when malloc fails). */
size_t rc__links_alive(void);
void rc__links_set_max(size_t max);

/* The callbacks rc_attach sets: rc_write_cb and rc_header_cb on the
 * response a token names, failing the transfer (CURL_WRITEFUNC_ERROR) when
 * it is gone. The header callback also begins a new transfer's hops in a
 * response that still holds the previous transfer's: at the transfer's
 * first header line it resets the response. */
size_t rc__link_write_cb(char *ptr, size_t size, size_t nmemb, void *token);
size_t rc__link_header_cb(char *ptr, size_t size, size_t nitems, void *token);

#endif
