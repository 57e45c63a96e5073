#include <stdio.h>

static FILE *out(void) {
  static FILE *f;
  if (!f) f = fopen("trace.out", "w");
  return f;
}
void Enter(char *name, long a0, long a1, long a2, long a3, long a4, long a5, long a6, long a7) {
  fprintf(out(), "E %s %ld %ld %ld %ld %ld %ld %ld %ld\n", name, a0, a1, a2, a3, a4, a5, a6, a7);
}
void Leave(char *name, long ret) { fprintf(out(), "L %s %ld\n", name, ret); }
void Ev(char *what, long pc) { fprintf(out(), "%s %#lx\n", what, pc); }
void Ev2(char *what, long pc, long v) { fprintf(out(), "%s %#lx %#lx\n", what, pc, v); }
void Edge(long from, long to) { fprintf(out(), "G %#lx %#lx\n", from, to); }
void Consts(int i, long l, long big, char *s, long *arr, int last) {
  fprintf(out(), "K %d %ld %ld [%s] %ld %ld %ld %d\n", i, l, big, s, arr[0], arr[1], arr[2], last);
  fclose(out());
}
