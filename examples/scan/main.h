/* scan's command line (main-opts.c) and main (main.c), on top of the
 * loop and all below it. */
#ifndef SCAN_MAIN_H
#define SCAN_MAIN_H

#include "loop.h"

/* Fills o from the command line. Returns -1 to go on, else the exit status
 * (after --help, --version or a usage error). */
int parse_options(int argc, char **argv, options *o);
void options_free(options *o);

#endif
