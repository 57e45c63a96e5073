/* Bit tests with a register bit offset into a memory operand (bt, bts, and
 * a locked btr), the offset past the operand's first word: the data trace's
 * Dr and Dw per function against cachegrind's (trace.cgdata.bit_tests,
 * regen_oracle.py --data).  Valgrind accesses the byte that holds the bit
 * (address + offset / 8, one byte); the CPU the operand-sized word that
 * holds it; both count bt as a read, bts as a read-modify-write (one read),
 * lock btr as two reads.  A register-by-register bit test, which Valgrind
 * runs through a stack slot, is here too (bt %reg,%reg). */
#include <stdio.h>

static unsigned long words[64];

__attribute__((noinline)) int bits(long k) {
  int r = 0;
  unsigned char c;
  for (int i = 0; i < 10; i++) {
    long off = k + i * 67;
    __asm__ volatile("btq %2, %1\n\tsetc %0" : "=q"(c), "+m"(words) : "r"(off) : "cc");
    r += c;
    __asm__ volatile("btsq %1, %0" : "+m"(words) : "r"(off) : "cc");
    __asm__ volatile("lock btrq %1, %0" : "+m"(words) : "r"(off + 1) : "cc");
    unsigned long v = (unsigned long)off * 0x9e3779b97f4a7c15ul;
    __asm__ volatile("btq %2, %1\n\tsetc %0" : "=q"(c) : "r"(v), "r"(off) : "cc");
    r += c;
  }
  return r;
}

int main(int argc, char** argv) {
  (void)argv;
  printf("%d\n", bits(argc * 100));
  return 0;
}
