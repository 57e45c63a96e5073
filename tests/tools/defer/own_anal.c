/* own_inst.cpp's end: the blocks executed, in own.out (AtomxOutputPath). */
#include <atomx/analysis.h>
#include <stdio.h>

void OwnFini(long n, long *counts) {
  long total = 0, ran = 0;
  for (long k = 0; k < n; ++k) total += counts[k], ran += counts[k] != 0;
  FILE *f = AtomxOpenOutput("own.out");
  if (f) fprintf(f, "blocks executed %ld, distinct %ld of %ld\n", total, ran, n), fclose(f);
}
