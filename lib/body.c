/* The body: memory first, then the spill file; admission of body memory
 * by the budget. */
#include "body.h"
#include "budget.h"

#include <stdint.h>
#include <string.h>

/* Decoded bytes per observer call of a body not kept. */
#define SCRATCH (16u * 1024u)

static int spilled(const rc_response *r) { return r->spill.fd >= 0; }

/* Under RC_KEEP_NONE the body is counted and observed, never stored. */
static int kept(const rc_response *r) { return r->keep == RC_KEEP_BODY; }

size_t rc__body_len(const rc_response *r)
{
  if (!kept(r))
    return r->seen;
  if (!spilled(r))
    return r->body.len;
  /* The first read writes the last batch out, which may fail and leave the
   * body shorter: the length is read under the mapping's lock. */
  rc_response *w = (rc_response *)r;
  pthread_mutex_lock(&w->map_lock);
  size_t len = w->spill.len;
  pthread_mutex_unlock(&w->map_lock);
  return len;
}

/* Shows n new body bytes at p to the observer, until it has said anything
 * but RC_OK; that verdict sticks for the transfer. */
static rc_code observe(rc_response *r, const void *p, size_t n)
{
  if (r->observer && r->observed == RC_OK && n > 0) {
    rc_code rc = r->observer(r->observer_ud, p, n);
    if (rc != RC_OK)
      r->observed = rc == RC_STOPPED ? RC_STOPPED : RC_E_OBSERVER;
  }
  return r->observed;
}

/* The most the body may hold in memory. */
static size_t memory_limit(const rc_response *r)
{
  size_t m = r->lim.max_memory;
  return m && m < r->lim.max_body ? m : r->lim.max_body;
}

void rc__body_begin(rc_response *r)
{
  if (!kept(r))
    return;
  rc__buf_set_limit(&r->body, memory_limit(r));
  rc__buf_declare(&r->body, r->declared);
}

/* Moves the body to the spill file and gives its memory back. RC_OK, or
 * RC_E_SPILL or RC_E_NOMEM (the body stays in memory). */
static rc_code move_to_file(rc_response *r)
{
  if (spilled(r))
    return RC_OK;
  rc_code rc = rc__spill_open(&r->spill, rc__pool_shelf(r->pool), rc__pool_spill_dir(r->pool));
  if (rc == RC_OK &&
      (rc = rc__spill_write(&r->spill, rc__buf_data(&r->body), r->body.len)) != RC_OK)
    rc__spill_close(&r->spill);
  if (rc != RC_OK)
    return rc;
  rc__buf_free(&r->body);
  rc__budget_spilled(rc__pool_budget(r->pool));
  return RC_OK;
}

/* Does the body belong in the file before n more bytes? */
static int past_memory(const rc_response *r, size_t n)
{
  size_t m = r->lim.max_memory;
  if (!m)
    return 0;
  int declared_over =
      r->declared != RC__UNKNOWN && r->declared <= r->lim.max_body && r->declared > m;
  return declared_over || r->body.len + n > m;
}

/* Where the budget lets the body's next bytes go. */
enum room {
  IN_MEMORY, /* admitted: the bytes asked for are reserved until settled */
  IN_FILE,   /* the body moved to its spill file */
  LATER      /* pause, then ask again */
};

/* The one place body memory is asked for: bytes more for r's body. RC_OK
 * and where the bytes go; RC_E_SPILL (a spill failed) or RC_E_TIMEOUT. */
static rc_code ask_room(rc_response *r, size_t bytes, enum room *where)
{
  *where = LATER;
  switch (rc__budget_admit(rc__pool_budget(r->pool), &r->waiter, bytes)) {
  case RC__ADMITTED: *where = IN_MEMORY; return RC_OK;
  case RC__WAIT: return RC_OK;
  case RC__SPILL: *where = IN_FILE; return move_to_file(r);
  case RC__TIMED_OUT: break;
  }
  return RC_E_TIMEOUT;
}

/* Appends n bytes in memory, if the budget admits the growth they need.
 * RC_OK and where they went (IN_FILE: nowhere yet), or an error. */
static rc_code store_in_memory(rc_response *r, const char *p, size_t n, enum room *where)
{
  rc__plan plan;
  size_t more = rc__buf_plan(&r->body, n, &plan);
  rc_code rc = RC_OK;
  *where = IN_MEMORY;
  if (more)
    rc = ask_room(r, more, where);
  if (rc != RC_OK || *where != IN_MEMORY) {
    rc__buf_abandon(&r->body, &plan);
    return rc;
  }
  rc = rc__buf_carry_out(&r->body, &plan);
  if (more)
    rc__budget_settle(rc__pool_budget(r->pool), more); /* charged by now, or failed */
  if (rc != RC_OK)
    return rc;
  size_t avail;
  memcpy(rc__buf_tail(&r->body, &avail), p, n);
  rc__buf_commit(&r->body, n);
  return RC_OK;
}

/* Stores n bytes: in memory, or in the spill file. */
static rc_code store(rc_response *r, const char *p, size_t n, int *paused)
{
  if (!kept(r)) {
    r->seen += n;
    return RC_OK;
  }
  if (!spilled(r)) {
    enum room where = IN_FILE;
    rc_code rc = RC_OK;
    if (!past_memory(r, n))
      rc = store_in_memory(r, p, n, &where);
    if (rc != RC_OK || where == IN_MEMORY)
      return rc;
    if (where == LATER) {
      *paused = 1;
      return RC_OK;
    }
    if ((rc = move_to_file(r)) != RC_OK)
      return rc;
  }
  return rc__spill_write(&r->spill, p, n);
}

rc_code rc__body_append(rc_response *r, const char *p, size_t n, int *paused)
{
  *paused = 0;
  if (n == 0)
    return RC_OK;
  rc_code rc = store(r, p, n, paused);
  return rc == RC_OK && !*paused ? observe(r, p, n) : rc;
}

/* Input bytes per decoder step under a budget: a step's decoded output is
 * all that can pass the budget unasked (a few KiB for ordinary content). */
#define SLICE 1024

size_t rc__body_input_slice(rc_response *r)
{
  if (!kept(r) || rc__budget_limit(rc__pool_budget(r->pool)) == 0)
    return SIZE_MAX;
  return SLICE;
}

rc_code rc__body_admit_input(rc_response *r, size_t bytes, int *paused)
{
  *paused = 0;
  if (!kept(r) || spilled(r))
    return RC_OK;
  enum room where;
  rc_code rc = ask_room(r, bytes, &where);
  if (rc == RC_OK && where == IN_MEMORY)
    rc__budget_settle(rc__pool_budget(r->pool), bytes); /* a gate: the step charges its own */
  *paused = rc == RC_OK && where == LATER;
  return rc;
}

void rc__body_step_end(rc_response *r)
{
  /* A decoder may write into the region it was offered and then fail
   * without counting those bytes (zstd checks a checksum after writing the
   * last block): the byte at len, the NUL's place, is written again. */
  if (kept(r) && !spilled(r) && r->body.blk)
    rc__buf_commit(&r->body, 0);
}

/* The scratch region a decoder writes into when the body is not kept: its
 * bytes are only shown to the observer. */
static rc_code scratch_tail(rc_response *r, unsigned char **out, size_t *avail)
{
  if (!r->scratch) {
    const rc_allocator *a = rc__pool_allocator(r->pool);
    if (!(r->scratch = a->malloc(SCRATCH, a->ud)))
      return RC_E_NOMEM;
  }
  *out = (unsigned char *)r->scratch;
  *avail = SCRATCH;
  return RC_OK;
}

rc_code rc__body_tail(rc_response *r, unsigned char **out, size_t *avail)
{
  size_t room = r->lim.max_body - rc__body_len(r);
  *avail = 0;
  if (r->observed != RC_OK)
    return r->observed; /* the observer has its answer: decode no more */
  if (room == 0)
    return RC_OK;
  rc_code rc;
  if (kept(r) && !spilled(r) && r->lim.max_memory && r->body.len >= memory_limit(r) &&
      (rc = move_to_file(r)) != RC_OK)
    return rc;
  if (!kept(r)) {
    rc = scratch_tail(r, out, avail);
  } else if (spilled(r)) {
    rc = rc__spill_tail(&r->spill, out, avail);
  } else {
    rc = rc__buf_make_room(&r->body, 1);
    if (rc == RC_OK)
      *out = rc__buf_tail(&r->body, avail);
  }
  if (*avail > room)
    *avail = room;
  r->tail = *avail ? *out : NULL;
  return rc;
}

void rc__body_commit(rc_response *r, size_t n)
{
  if (n == 0)
    return;
  const unsigned char *p = r->tail;
  RC__ASSERT(p);
  r->tail += n;
  if (!kept(r)) {
    r->seen += n;
  } else if (spilled(r)) {
    rc__spill_commit(&r->spill, n);
  } else {
    rc__buf_commit(&r->body, n);
  }
  observe(r, p, n); /* its verdict stops the decoder at the next tail */
}

rc_code rc__body_end(rc_response *r)
{
  return kept(r) && spilled(r) ? rc__spill_flush(&r->spill) : RC_OK;
}

rc_view rc__body_view(const rc_response *r)
{
  if (!kept(r)) {
    rc_view none = {"", 0};
    return none;
  }
  if (!spilled(r)) {
    rc_view v = {rc__buf_data(&r->body), r->body.len};
    return v;
  }
  /* Mapping is a cache of what the file holds, and the first one writes
   * the last batch: the response is not const to begin with (it was made
   * by rc_response_new). */
  rc_response *w = (rc_response *)r;
  rc_view v = {"", 0};
  pthread_mutex_lock(&w->map_lock);
  const char *p = rc__spill_map(&w->spill);
  if (p) {
    v.ptr = p;
    v.len = w->spill.len;
  }
  pthread_mutex_unlock(&w->map_lock);
  return v;
}

void rc__body_drop(rc_response *r)
{
  rc__buf_clear(&r->body);
  rc__spill_close(&r->spill);
}

void rc__body_free(rc_response *r)
{
  rc__body_drop(r);
  rc__buf_free(&r->body);
  if (r->scratch) {
    const rc_allocator *a = rc__pool_allocator(r->pool);
    a->free(r->scratch, a->ud);
    r->scratch = NULL;
  }
}
