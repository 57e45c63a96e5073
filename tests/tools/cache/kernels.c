/* Test program for the cache tool (tests/tools/cache): memory kernels whose
 * hot loops make no library call, so that Valgrind cachegrind's D1 cache
 * sees exactly the accesses the cache tool sees.
 *
 * Before each kernel, main calls flush() (flush.h), which puts the cache
 * into the same state under both simulators, whatever ld.so and libc left
 * there; from there on the kernel's own accesses decide every hit and miss.
 * Results go to volatile sinks and are printed at the end.  main aligns the
 * stack relative to the static data first (flush.h). */
#include <stdio.h>
#include <string.h>

#define FLUSH_BYTES (128 * 1024)
#define FLUSHES 16
#include "flush.h"

#define N 4096
static int a[N * 4], b[N * 4];
static double m1[48][48], m2[48][48], m3[48][48];
struct node { struct node *next; long pad[3]; };
static struct node nodes[2048];
static unsigned char bytes[8192];

/* Strided reads: conflicts in a direct-mapped cache when the stride is a
 * multiple of the cache size. */
__attribute__((noinline)) long strided(int stride, int reps) {
  long s = 0;
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < N * 4; i += stride) s += a[i];
  return s;
}

/* Writes then read-modify-writes (one read each to cachegrind). */
__attribute__((noinline)) void fill_and_bump(int n) {
  for (int i = 0; i < n; ++i) b[i] = i * 3;
  for (int i = 0; i < n; i += 3) b[i] += a[(i * 7) % (N * 4)];
}

/* Naive matrix multiply: column walks of m2. */
__attribute__((noinline)) void matmul(int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += m1[i][k] * m2[k][j];
      m3[i][j] = s;
    }
}

/* Pointer chasing over a permutation made with our own LCG. */
__attribute__((noinline)) long chase(int steps) {
  unsigned x = 12345;
  for (int i = 0; i < 2048; ++i) nodes[i].next = &nodes[i];
  for (int i = 2047; i > 0; --i) {
    x = x * 1103515245u + 12345u;
    int j = (int)((x >> 8) % (unsigned)(i + 1));
    struct node *t = nodes[i].next; nodes[i].next = nodes[j].next; nodes[j].next = t;
  }
  struct node *p = &nodes[0];
  long s = 0;
  for (int i = 0; i < steps; ++i) { p = p->next; s += (long)(p - nodes); }
  return s;
}

/* Unaligned 8-byte reads that straddle lines now and then. */
__attribute__((noinline)) uint64_t unaligned(int reps) {
  uint64_t s = 0;
  for (int r = 0; r < reps; ++r)
    for (int i = 1; i + 8 < (int)sizeof bytes; i += 13) {
      uint64_t v;
      memcpy(&v, bytes + i, 8); /* a plain mov at -O2 */
      s += v;
    }
  return s;
}

/* Instructions with special access patterns, in inline assembly so that
 * they are there whatever the compiler does: rep movsb/stosq, repz cmpsb,
 * movs, push/pop of memory, a locked add, xchg with memory, cmpxchg,
 * a recursive call (call/ret/push/pop on the stack). */
static long shared_word;
__attribute__((noinline)) long special(int reps) {
  long acc = 0;
  for (int r = 0; r < reps; ++r) {
    void *d = bytes + 4096, *s = bytes + 17;
    long n = 700 + r;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
    d = bytes + 6000; n = 64;
    __asm__ volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(0x0101010101010101L) : "memory");
    d = bytes + 4096; s = bytes + 17; n = 300 + r;
    __asm__ volatile("repz cmpsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory", "cc");
    acc += n;
    d = bytes + 100; s = bytes + 2000;
    __asm__ volatile("movsq" : "+D"(d), "+S"(s) : : "memory");
    long v;
    __asm__ volatile("push (%1)\n\tpop %0" : "=r"(v) : "r"(bytes + 24 + 8 * (r % 64)) : "memory");
    acc += v;
    __asm__ volatile("push %1\n\tpop (%2)" : : "i"(0), "r"(0L), "r"(bytes + 3000 + 8 * (r % 16)) : "memory");
    __asm__ volatile("lock addq %1, %0" : "+m"(shared_word) : "r"(v) : "cc");
    long x = r;
    __asm__ volatile("xchg %0, %1" : "+r"(x), "+m"(bytes[256 + (r % 32) * 8]) : : "memory");
    long expected = shared_word;
    __asm__ volatile("lock cmpxchg %2, %1" : "+a"(expected), "+m"(shared_word) : "r"(expected + 1) : "cc");
    __asm__ volatile("addl $1, %0" : "+m"(a[(r * 17) % (N * 4)]) : : "cc");
  }
  return acc + shared_word;
}

__attribute__((noinline)) long recurse(int n, long *p) {
  long local[4] = {n, n + 1, n + 2, p ? p[0] : 0};
  if (n == 0) return local[3];
  return recurse(n - 1, local) + local[1];
}

__attribute__((noinline)) static void run(int scale) {
  long r[8];
  for (int i = 0; i < N * 4; ++i) a[i] = i;
  for (int i = 0; i < 48; ++i)
    for (int j = 0; j < 48; ++j) m1[i][j] = i + j, m2[i][j] = i - j;
  for (int i = 0; i < (int)sizeof bytes; ++i) bytes[i] = (unsigned char)(i * 7);
  flush(); r[0] = strided(16, 4 * scale);
  flush(); r[1] = strided(2048, 8 * scale);
  flush(); fill_and_bump(N * 2 * scale);
  flush(); matmul(48);
  flush(); r[2] = chase(20000 * scale);
  flush(); r[3] = (long)unaligned(20 * scale);
  flush(); r[4] = special(200 * scale);
  flush(); r[5] = recurse(300, 0);
  printf("%ld %ld %d %g %ld %ld %ld %ld\n", r[0], r[1], b[77], m3[5][7], r[2], r[3], r[4], r[5]);
}

int main(int argc, char **argv) {
  (void)argv;
  ALIGN_STACK();
  run(argc > 1 ? 2 : 1);
  return 0;
}
