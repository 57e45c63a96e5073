/* Test program for cachesim (tests/tools/cachesim): instruction- and
 * data-cache kernels whose code makes no library call, so that Valgrind
 * cachegrind's I1, D1 and LL see exactly the references cachesim sees.
 *
 * Before each kernel, flush() (tests/tools/cache/flush.h) reads a fresh
 * region of a static buffer larger than any LL the tests simulate, then runs
 * 16 KB of straight-line code, larger than any I1 they simulate: from there
 * on the kernel's own references decide every hit and miss in I1, D1 and LL.
 * Built without PIE, so that code and static data lie at the same addresses
 * natively and under Valgrind; main aligns the stack to the static data
 * modulo 64 KB (flush.h). */
#include <stdio.h>

#define FLUSH_BYTES (256 * 1024)
#define FLUSHES 8
#define FLUSH_CODE_NOPS "16384"
#include "../cache/flush.h"

/* A loop whose body (about 9 KB) is larger than a small I1: capacity misses. */
__attribute__((noinline)) int big_loop(int n) {
  int x = 0;
  for (int i = 0; i < n; ++i)
    __asm__ volatile(".rept 3000\n\tadd $1, %0\n\t.endr" : "+r"(x));
  return x;
}

/* Three functions 4 KB apart: they conflict in a direct-mapped 4 KB I1. */
__attribute__((noinline, aligned(4096))) int fa(int x) { return x * 3 + 1; }
__attribute__((noinline, aligned(4096))) int fb(int x) { return x ^ 0x55; }
__attribute__((noinline, aligned(4096))) int fc(int x) { return x + 7; }
__attribute__((noinline)) int conflict(int n) {
  int x = 0;
  for (int i = 0; i < n; ++i) x = fc(fb(fa(x)));
  return x;
}

/* Long instructions (10-byte movabs), so that some straddle two lines. */
__attribute__((noinline)) long straddle(int n) {
  long s = 0;
  for (int i = 0; i < n; ++i) {
    long v;
    __asm__ volatile(".rept 40\n\tmovabs $0x123456789abcdef, %0\n\tadd %0, %1\n\t.endr" : "=&r"(v), "+r"(s));
  }
  return s;
}

/* Code and data together: a table walk whose lines and the code's share LL. */
static long table[16384];
__attribute__((noinline)) long mixed(int n) {
  long s = 0;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 16384; i += 9) {
      s += table[i];
      table[(i * 5) & 16383] = s;
    }
  return s;
}

/* Strided reads and a read-modify-write sweep. */
static int a[65536];
__attribute__((noinline)) long strided(int stride, int reps) {
  long s = 0;
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < 65536; i += stride) s += a[i];
  return s;
}
__attribute__((noinline)) void bump(int n) {
  for (int i = 0; i < n; i += 3) a[i] += i;
}

__attribute__((noinline)) static void run(int scale) {
  long r[8];
  for (int i = 0; i < 65536; ++i) a[i] = i;
  flush(); r[0] = big_loop(20 * scale);
  flush(); r[1] = conflict(500 * scale);
  flush(); r[2] = straddle(200 * scale);
  flush(); r[3] = mixed(3 * scale);
  flush(); r[4] = strided(16, 4 * scale);
  flush(); r[5] = strided(1024, 16 * scale);
  flush(); bump(65536);
  flush(); r[6] = big_loop(scale) + conflict(scale);
  printf("%ld %ld %ld %ld %ld %ld %d %ld\n", r[0], r[1], r[2], r[3], r[4], r[5], a[99], r[6]);
}

int main(int argc, char **argv) {
  (void)argv;
  ALIGN_STACK();
  run(argc > 1 ? 2 : 1);
  return 0;
}
