/* Procedures with known call counts, arguments and return values. */
#include <stdio.h>

__attribute__((noipa)) long leaf(long x) { return x * 2 + 1; }
/* A tail call at -O2: jmp leaf. */
__attribute__((noipa)) long tail_caller(long x) { return leaf(x + 100); }
/* Non-tail recursion (xor is not an accumulator gcc can turn into a loop). */
__attribute__((noipa)) long rec(long n) { return n <= 0 ? 5 : rec(n - 1) ^ (n * 7); }
/* Eight arguments: two on the stack. */
__attribute__((noipa)) long many(long a, long b, long c, long d, long e, long f, long g, long h) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

int main(void) {
  long s = 0;
  for (long i = 0; i < 37; ++i) s += leaf(i);                     /* leaf: 37 direct calls */
  for (long i = 0; i < 5; ++i) s += tail_caller(-i);              /* + 5 through the tail call */
  s += rec(10);                                                   /* rec: 11 calls, nested */
  s += many(1, -2, 3, -4, 5, -6, 7, -8);
  s += many(-100000000000L, 200, -300, 400, -500, 600, -700, 0x7fffffffffffffffL / 1000);
  printf("%ld\n", s);
  return 0;
}
