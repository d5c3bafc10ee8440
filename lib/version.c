/* The library's version at run time. */
#include "respchain.h"

/* RC_VERSION as this library was built: may differ from the header a
 * program was compiled with, when a newer shared library is installed. */
const char *rc_version(void) { return RC_VERSION; }
