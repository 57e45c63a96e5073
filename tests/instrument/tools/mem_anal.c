#include <stdio.h>

static FILE *out(void) {
  static FILE *f;
  if (!f) f = fopen("mem.out", "w");
  return f;
}
void Mem1(long pc, long ea, long size) { fprintf(out(), "M %#lx %#lx %ld\n", pc, ea, size); fflush(out()); }
void Mem2(long pc, long ea, long size, long ea2, long size2) {
  fprintf(out(), "M2 %#lx %#lx %ld %#lx %ld\n", pc, ea, size, ea2, size2);
  fflush(out());
}
void Regs(long pc, long rdi, long rsi, long rdx) { fprintf(out(), "R %#lx %#lx %#lx %#lx\n", pc, rdi, rsi, rdx); fflush(out()); }
void Rsp(long pc, long rsp) { fprintf(out(), "SP %#lx %#lx\n", pc, rsp); fflush(out()); }
void MemDone(void) {}  /* each line is flushed as it is written */
