/* Built with --cflags "-DMULT=7" and linked with helper.o (or -lhelp):
 * Probe adds Helper(a) * MULT, Report prints the sum (itest.py build_flags). */
#include <stdio.h>

#ifndef MULT
#error "MULT comes from --cflags"
#endif

long Helper(long a);
static long total;
void Probe(long a) { total += Helper(a) * MULT; }
void Report(void) { fprintf(stderr, "flags total %ld\n", total); }
