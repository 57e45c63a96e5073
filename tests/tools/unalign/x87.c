/* Long double arithmetic, as sqlite3MemCompare does it: x87 instructions
   whose operands are registers only (fcomi %st(1),%st; fxch %st(1);
   fstp %st(0)) beside x87 loads and stores from memory (fldt, fstpt). */
#include <stdio.h>
#include <stdlib.h>

static long double table[64];

__attribute__((noinline)) int compare(long double a, long double b) {
  if (a < b) return -1;
  return a > b;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000, order = 0;
  long double sum = 0;
  for (int i = 0; i < 64; i++) table[i] = (long double)((i * 37) % 64) / 3;
  for (int i = 0; i < n; i++) {
    order += compare(table[i & 63], table[(i * 7) & 63]);
    sum += table[i & 63];
  }
  printf("%d %.3Lf\n", order, sum);
  return 0;
}
