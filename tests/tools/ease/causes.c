/* A program whose memory references' causes are known (tools/ease/README.md,
 * "Memory references by cause"; the oracle: causes_check.py): a global
 * table and counter, a thread-local, stack variables and an array in
 * memory (volatile, so -O2 keeps them there), pointers to the heap, and a
 * procedure that keeps values live across calls in callee-saved registers
 * (saves and restores), and recursion (call linkage). */
#include <stdio.h>
#include <stdlib.h>

long table[64];
long counter;
__thread long tls_hits;

__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }

/* Values live across calls: %rbx, %rbp, %r12... saved at entry, restored at exit. */
__attribute__((noinline)) long keep(long a, long b, long c) {
  long s = leaf(a);
  s += leaf(b) * a;
  s += leaf(c) * b;
  s += leaf(s) * c;
  return s + a + b + c;
}

/* Stack variables the code must keep in memory. */
__attribute__((noinline)) long locals(int n) {
  volatile long v[8];
  volatile long sum = 0;
  for (int i = 0; i < 8; ++i) v[i] = i * n;
  for (int i = 0; i < 8; ++i) sum += v[i];
  return sum;
}

__attribute__((noinline)) long heap(long n) {
  long *p = malloc(sizeof(long) * (size_t)n);
  for (long i = 0; i < n; ++i) p[i] = i;
  long s = 0;
  for (long i = 0; i < n; ++i) s += p[i];
  free(p);
  return s;
}

__attribute__((noinline)) long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char **argv) {
  long total = 0;
  for (int i = 0; i < 64; ++i) table[i] = i + argc;
  for (int i = 0; i < 100; ++i) {
    total += keep(i, i + 1, i + 2);
    total += locals(i);
    counter += table[i & 63];
    tls_hits++;
  }
  total += heap(100) + fib(15);
  printf("%ld %ld %ld\n", total, counter, tls_hits);
  (void)argv;
  return 0;
}
