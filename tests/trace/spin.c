/* Runs until it is killed (trace.killed): a loop with a data-dependent
 * branch and a call, so that every iteration writes witnesses. */
#include <stdio.h>

static unsigned step(unsigned x) { return x & 1 ? 3 * x + 1 : x / 2; }

int main(void) {
  unsigned long n = 0;
  for (unsigned x = 27;; x = x == 1 ? (unsigned)(n % 1000) + 2 : step(x))
    if (++n % 100000000 == 0) printf("%lu\n", n);
}
