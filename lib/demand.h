/* Demand for a reusable thing (large blocks, spill files): how many
 * responses held one lately. The pool keeps idle ones in step with it, so
 * that a burst reuses what is already resident, and lets the number decay
 * to a floor once the burst is over, so that the burst's memory returns.
 * Driven by the calls a program makes anyway (blocks taken and given back,
 * stats, rc_multi_poll); no thread of its own. Internal; the owner's lock
 * held. */
#ifndef RC_DEMAND_H
#define RC_DEMAND_H

#include <stddef.h>
#include <time.h>

#define RC__DEMAND_HALF_LIFE 250 /* ms in which the excess over the floor halves */

typedef struct rc__demand {
  size_t floor;         /* idle ones kept when all is quiet */
  size_t in_use;        /* held by responses now */
  size_t recent;        /* the recent peak of in_use, decaying */
  struct timespec step; /* when recent last rose or decayed */
} rc__demand;

void rc__demand_init(rc__demand *d, size_t floor);

/* A response took one, or gave one back. */
void rc__demand_take(rc__demand *d);
void rc__demand_give(rc__demand *d);

/* Lets recent decay for the time that passed. */
void rc__demand_tick(rc__demand *d);

/* Forgets the past at once (rc_pool_trim): recent becomes in_use. */
void rc__demand_forget(rc__demand *d);

/* How many idle ones to keep: as many as recent demand could take back
 * now, at least the floor, at most ceiling. */
size_t rc__demand_keep(const rc__demand *d, size_t ceiling);

#endif
