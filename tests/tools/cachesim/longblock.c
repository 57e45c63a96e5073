/* A block longer than a line whose middle line alone keeps missing: for
 * the fetch test of blocks up to 128 bytes (cachesim_inst.cpp), which
 * must test a byte in every line such a block touches.  longblock is one
 * basic block of 111 bytes 512 bytes past a 1 KB boundary (sets 16-19 of
 * a 1 KB direct-mapped cache with 32-byte lines; main's loop is in sets
 * 0-1); conflict sits 544 bytes past another 1 KB boundary, in the set of
 * longblock's second line.  Calling
 * them in turn, longblock's first, third and fourth lines hit and its
 * second misses every time: a test that skipped that line would call the
 * simulator too rarely and count hits for misses. */
#include <stdio.h>

__asm__(".text\n"
        ".p2align 10\n"
        "  .fill 512, 1, 0xcc\n"
        ".globl longblock\n.type longblock, @function\n"
        "longblock:\n"
        "  .fill 110, 1, 0x90\n"
        "  ret\n"
        ".size longblock, .-longblock\n"
        ".p2align 10\n"
        "  .fill 544, 1, 0xcc\n"
        ".globl conflict\n.type conflict, @function\n"
        "conflict:\n"
        "  ret\n"
        ".size conflict, .-conflict\n");

void longblock(void);
void conflict(void);

int main(void) {
  for (int k = 0; k < 100000; ++k) {
    longblock();
    conflict();
  }
  puts("done");
  return 0;
}
