/* recursive: self-recursion (mul, which calls add) and mutual recursion
 * (even and odd) under one procedure, run, that main calls once; nothing
 * under run calls a library.  So the instructions under each call of run,
 * mul and even, as callgrind counts them, are exactly the inclusive costs
 * a gprof-style estimate must give them when it treats each cycle as one
 * node (tests/tools/gprof/inclusive_vs_callgrind.py).
 * Usage: recursive [N] */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE unsigned long add(unsigned long a, unsigned long b) {
  for (unsigned long i = 0; i < (b & 7); i++) a = a * 3 + i;
  return a + b;
}

static NOINLINE unsigned long mul(int n) {
  if (n < 2) return add((unsigned long)n, 1);
  return mul(n - 1) + mul(n - 2) + add((unsigned long)n, (unsigned long)n);
}

static NOINLINE int odd(int n);
static NOINLINE int even(int n) { return n == 0 ? 1 : odd(n - 1); }
static NOINLINE int odd(int n) { return n == 0 ? 0 : even(n - 1); }

static NOINLINE unsigned long run(int n) {
  unsigned long sum = mul(n);
  for (int k = 0; k < 50; k++) sum += (unsigned long)even(n * 10 + k);
  return sum;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 18;
  printf("%lu\n", run(n));
  return 0;
}
