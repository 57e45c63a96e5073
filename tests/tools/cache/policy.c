/* Test program for the cache tool's replacement and write policies
 * (policy.sh).  With a 2-line cache (--size 64 --line 32 --assoc 2) and
 * three fresh lines A, B, C, pattern() reads A B A C, N times:
 *   LRU:  C evicts B, B evicts C: 2 misses per round (3 in the first);
 *   FIFO: C evicts A, the oldest, though just used: 3 misses per round.
 * writes() writes then reads each of K fresh lines: with write-allocate the
 * read hits; without, the write miss installs nothing and the read misses.
 * Both are assembly, so that they make exactly these accesses (and a ret). */
#include <stdio.h>

static char area[64 * 1024] __attribute__((aligned(64)));

__attribute__((noinline)) void pattern(const char *a, const char *b, const char *c, long n) {
  __asm__ volatile(
      "1:\n\t"
      "movb (%0), %%al\n\tmovb (%1), %%al\n\tmovb (%0), %%al\n\tmovb (%2), %%al\n\t"
      "dec %3\n\tjnz 1b"
      : "+r"(a), "+r"(b), "+r"(c), "+r"(n) : : "rax", "memory", "cc");
}

__attribute__((noinline)) void writes(char *p, long k) {
  __asm__ volatile(
      "1:\n\t"
      "movb $1, (%0)\n\tmovb (%0), %%al\n\t"
      "add $32, %0\n\tdec %1\n\tjnz 1b"
      : "+r"(p), "+r"(k) : : "rax", "memory", "cc");
}

int main(void) {
  pattern(area, area + 1024, area + 2048, 1000);
  writes(area + 8192, 100);
  puts("done");
  return 0;
}
