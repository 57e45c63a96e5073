/* An analysis routine that calls libm, as a C program may: the analysis
 * object is linked as cc links a program. */
#include <math.h>
#include <stdio.h>

static double total;
void Probe(long a) { total += log((double)a); }
void Report(void) { fprintf(stderr, "log sum %.6f\n", total); }
