/* Bit tests with a register bit offset into memory (bt, bts, btr, btc;
 * 64-, 32- and 16-bit; through a base register and %rip-relative), with
 * offsets beyond the operand's first word, negative ones too: the CPU
 * accesses the word that holds the bit, address + size * floor(offset /
 * (8 * size)).  With `print`, the program prints, for each bit test it
 * runs, in order, that address and size, computed here in C
 * (bit_offsets.py compares them with the data trace's references of those
 * instructions); without, only a checksum (data_oracle.py compares the
 * trace with the naive tracer, and the output with the native run's).
 *     bit_offsets [print] */
#include <stdio.h>
#include <string.h>

static unsigned long words[256];

static int printing;

static void expect(const void *base, long off, int size) {
  if (!printing) return;
  /* floor(off / (8 * size)) with C's truncating division made a floor */
  long q = off / (8 * size);
  if (off % (8 * size) != 0 && off < 0) --q;
  printf("%lx %d\n", (unsigned long)((const char *)base + q * size), size);
}

__attribute__((noinline)) int probe(unsigned long *base, long off) {
  unsigned char c, d, e;
  __asm__ volatile("btq %2, %1\n\tsetc %0" : "=q"(c) : "m"(*base), "r"(off) : "cc");
  expect(base, off, 8);
  __asm__ volatile("btsl %1, %0" : "+m"(*(unsigned *)base) : "r"((int)off) : "cc");
  expect(base, (int)off, 4);
  __asm__ volatile("btrw %1, %0" : "+m"(*(unsigned short *)base) : "r"((short)off) : "cc");
  expect(base, (short)off, 2);
  __asm__ volatile("lock btcq %1, %0" : "+m"(*base) : "r"(off) : "cc");
  expect(base, off, 8);
  __asm__ volatile("btq %2, %1\n\tsetc %0" : "=q"(d) : "m"(words[128]), "r"(off) : "cc");
  expect(&words[128], off, 8);
  __asm__ volatile("btl %2, %1\n\tsetc %0" : "=q"(e) : "m"(*(unsigned *)&words[128]), "r"((int)off) : "cc");
  expect(&words[128], (int)off, 4);
  return c + d + e;
}

int main(int argc, char **argv) {
  static const long offsets[] = {0, 5, 63, 64, 65, 130, 1000, 4095, -1, -8, -63, -64, -65, -1000, -4096};
  printing = argc > 1 && strcmp(argv[1], "print") == 0;
  int r = 0;
  for (unsigned i = 0; i < sizeof offsets / sizeof offsets[0]; ++i) r += probe(&words[128], offsets[i]);
  fprintf(printing ? stderr : stdout, "%d\n", r);
  return 0;
}
