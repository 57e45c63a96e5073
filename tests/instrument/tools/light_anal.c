/* General registers only: atomx calls Touch without saving the vector state,
 * through a direct body that saves only the registers Touch writes
 * (src/instrument/RoutineFootprint).  It dirties every register a C function
 * may (the caller-saved ones and the flags), rcx, r11 and rdx implicitly
 * (syscall, cqo), so a missed save, or a write the footprint misses, shows
 * in the program's output. */
#include <atomx/analysis.h>
#include <stdio.h>

static long touches, checksum;

void Touch(long pc) {
  ++touches;
  checksum ^= pc * 0x9e3779b97f4a7c15L;
  __asm__ volatile("mov $39, %%eax; syscall;" /* getpid: rax, rcx, r11 */
                   "mov $-1, %%rax; cqo;"      /* rdx */
                   "mov $-1, %%rsi; mov $-1, %%rdi;"
                   "mov $-1, %%r8; mov $-1, %%r9; mov $-1, %%r10; xor %%eax, %%eax; std; cld"
                   ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc", "memory");
}

void Done(void) {
  FILE *f = fopen(AtomxOutputPath("light.out"), "w");
  if (f) fprintf(f, "%ld %lx\n", touches, (unsigned long)checksum);
  if (f) fclose(f);
}
