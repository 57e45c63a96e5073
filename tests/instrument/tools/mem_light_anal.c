/* mem_anal.c's routines made light: they only store into a static table
 * (general registers, no calls: atomx calls them through direct bodies,
 * which find the program's registers in their own save area rather than in
 * the dispatcher's frame), and MemDone, at program end, writes the same
 * mem.out.  So itest.py's mem checks hold for both kinds of body. */
#include <stdio.h>

enum { kMaxEvents = 1 << 16 };
static struct {
  char kind;  /* 'M', '2' (M2), 'R', 'S' (SP) */
  long v[5];
} events[kMaxEvents];
static long count;

#define LIGHT __attribute__((target("general-regs-only")))

LIGHT static void add(char kind, long a, long b, long c, long d, long e) {
  if (count >= kMaxEvents) return;
  events[count].kind = kind;
  events[count].v[0] = a, events[count].v[1] = b, events[count].v[2] = c;
  events[count].v[3] = d, events[count].v[4] = e;
  ++count;
}

LIGHT void Mem1(long pc, long ea, long size) { add('M', pc, ea, size, 0, 0); }
LIGHT void Mem2(long pc, long ea, long size, long ea2, long size2) { add('2', pc, ea, size, ea2, size2); }
LIGHT void Regs(long pc, long rdi, long rsi, long rdx) { add('R', pc, rdi, rsi, rdx, 0); }
LIGHT void Rsp(long pc, long rsp) { add('S', pc, rsp, 0, 0, 0); }

void MemDone(void) {
  FILE *f = fopen("mem.out", "w");
  if (!f) return;
  for (long k = 0; k < count; ++k) {
    const long *v = events[k].v;
    switch (events[k].kind) {
      case 'M': fprintf(f, "M %#lx %#lx %ld\n", v[0], v[1], v[2]); break;
      case '2': fprintf(f, "M2 %#lx %#lx %ld %#lx %ld\n", v[0], v[1], v[2], v[3], v[4]); break;
      case 'R': fprintf(f, "R %#lx %#lx %#lx %#lx\n", v[0], v[1], v[2], v[3]); break;
      case 'S': fprintf(f, "SP %#lx %#lx\n", v[0], v[1]); break;
    }
  }
  if (count >= kMaxEvents) fprintf(f, "overflow\n");
  fclose(f);
}
