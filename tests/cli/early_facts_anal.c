/* The facts asked for in a constructor (EARLY set) and at program start (early_facts.sh). */
#include <atomx/facts.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void init(void) {
  if (getenv("EARLY")) fprintf(stderr, "procs in a constructor: %ld\n", AtomxProcCount());
}
void Start(void) { fprintf(stderr, "procs at start: %ld\n", AtomxProcCount()); }
