/* Shared by the fuzz targets: the libFuzzer entry point's prototype, a hard
 * invariant check, and a reader that takes parameters off the front of the
 * input (running dry yields zeros, so every input is a valid one). */
#ifndef RC_FUZZ_H
#define RC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; always returns 0. Every target defines it; libFuzzer or
 * replay.c calls it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant violation: say where, then abort so that libFuzzer (or the
 * replay test) reports the input. */
#define FZ_CHECK(cond)                                                                             \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fz_fail(__FILE__, __LINE__, #cond);                                                          \
  } while (0)

static inline _Noreturn void fz_fail(const char *file, int line, const char *what)
{
  fprintf(stderr, "%s:%d: invariant violated: %s\n", file, line, what);
  fflush(stderr);
  abort();
}

typedef struct fz_in {
  const uint8_t *p;
  size_t n;
} fz_in;

static inline unsigned fz_u8(fz_in *in)
{
  if (in->n == 0)
    return 0;
  in->n--;
  return *in->p++;
}

static inline unsigned fz_u16(fz_in *in)
{
  unsigned hi = fz_u8(in);
  return hi << 8 | fz_u8(in);
}

static inline unsigned long fz_u24(fz_in *in)
{
  unsigned long hi = fz_u8(in);
  return hi << 16 | fz_u16(in);
}

/* Up to n bytes off the front: *len receives how many there were. */
static inline const uint8_t *fz_take(fz_in *in, size_t n, size_t *len)
{
  const uint8_t *p = in->p;
  *len = n < in->n ? n : in->n;
  in->p += *len;
  in->n -= *len;
  return p;
}

/* The bytes up to the first LF (excluded) and the LF itself are taken;
 * *len receives the length of the line without it. */
static inline const uint8_t *fz_line(fz_in *in, size_t *len)
{
  size_t i = 0;
  while (i < in->n && in->p[i] != '\n')
    i++;
  const uint8_t *p = in->p;
  *len = i;
  if (i < in->n)
    i++;
  in->p += i;
  in->n -= i;
  return p;
}

/* A schedule of chunk sizes cycled through when feeding a body. */
typedef struct fz_chunks {
  size_t size[16];
  size_t n;    /* 0: the whole body in one piece */
  size_t next; /* index of the next size */
} fz_chunks;

/* Reads a schedule: a count byte, then one byte per size, each scaled by a
 * factor the count byte also picks (sizes 1..256 up to 64..16384). */
static inline void fz_chunks_read(fz_in *in, fz_chunks *c)
{
  static const size_t scale[4] = {1, 1, 7, 64};
  unsigned k = fz_u8(in);
  c->n = k % 17;
  c->next = 0;
  for (size_t i = 0; i < c->n; i++)
    c->size[i] = (fz_u8(in) + 1) * scale[(k >> 5) & 3];
}

/* The next piece size, at most left (and at least 1 when left > 0). */
static inline size_t fz_chunks_next(fz_chunks *c, size_t left)
{
  if (c->n == 0)
    return left;
  size_t s = c->size[c->next++ % c->n];
  return s < left ? s : left;
}

#endif
