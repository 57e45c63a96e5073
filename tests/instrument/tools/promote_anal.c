/* promote.out: "block N exact E each I" for every block that ran, and a
 * last line "differ D of B". */
#include <atomx/analysis.h>
#include <stdio.h>

void PromoteCheck(long *exact, long *each, long n) {
  FILE *f = fopen(AtomxOutputPath("promote.out"), "w");
  long differ = 0, blocks = 0;
  for (long b = 0; b < n; ++b) {
    ++blocks;
    if (exact[b] != each[b]) ++differ;
    if (exact[b] || each[b]) fprintf(f, "block %ld exact %ld each %ld\n", b, exact[b], each[b]);
  }
  fprintf(f, "differ %ld of %ld\n", differ, blocks);
  fclose(f);
}
