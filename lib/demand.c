/* Demand: a recent peak that halves its excess over the
 * floor every half-life once demand has fallen below it. */
#include "demand.h"
#include "clock.h"

void rc__demand_init(rc__demand *d, size_t floor)
{
  d->floor = floor;
  d->in_use = 0;
  d->recent = 0;
  d->step = rc__now();
}

void rc__demand_take(rc__demand *d)
{
  d->in_use++;
  if (d->in_use > d->recent) {
    d->recent = d->in_use;
    d->step = rc__now();
  }
}

void rc__demand_give(rc__demand *d)
{
  if (!d->in_use)
    return;
  if (d->in_use == d->recent)
    d->step = rc__now(); /* demand falls below its peak from now on */
  d->in_use--;
}

void rc__demand_tick(rc__demand *d)
{
  size_t low = d->in_use > d->floor ? d->in_use : d->floor;
  struct timespec t = rc__now();
  if (d->recent <= low) {
    d->step = t; /* nothing to decay: a later fall is timed from here */
    return;
  }
  long long steps = rc__ms_between(d->step, t) / RC__DEMAND_HALF_LIFE;
  if (steps <= 0)
    return;
  while (steps-- > 0 && d->recent > low)
    d->recent -= (d->recent - low + 1) / 2;
  d->step = t;
}

void rc__demand_forget(rc__demand *d)
{
  d->recent = d->in_use;
  d->step = rc__now();
}

size_t rc__demand_keep(const rc__demand *d, size_t ceiling)
{
  size_t target = d->recent > d->floor ? d->recent : d->floor;
  size_t keep = target > d->in_use ? target - d->in_use : 0;
  return keep < ceiling ? keep : ceiling;
}
