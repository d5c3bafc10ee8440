/* RC__ASSERT: invariants of the internals, checked in builds without
 * NDEBUG (meson's debug and debugoptimized types, the test suite's) and
 * compiled out of release builds. A failed check aborts with its place. */
#ifndef RC_DEBUG_H
#define RC_DEBUG_H

#ifndef NDEBUG
#include <stdio.h>
#include <stdlib.h>
#define RC__ASSERT(x)                                                                              \
  ((x) ? (void)0                                                                                   \
       : (fprintf(stderr, "respchain: %s:%d: invariant broken: %s\n", __FILE__, __LINE__, #x),     \
          abort()))
#else
#define RC__ASSERT(x) ((void)0)
#endif

#endif
