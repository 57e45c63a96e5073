// Planted hot loops for the melt tests (tests/melt/CMakeLists.txt): their
// iteration counts are known, and no call leaves the trace inside them.
//   walk:      a linked-list walk, LIST nodes, called WALKS times: its loop
//              body repeats LIST * WALKS times;
//   walk_again: the same code as walk (by text, one sequence with it), called
//              once on the same list after the walks;
//   alternate: a counted loop whose body takes one branch on even and the
//              other on odd i, N iterations (even), called ALTS times: at
//              -O0 its cycle is two iterations long and repeats N/2 * ALTS
//              times.
// Usage: planted LIST WALKS N ALTS
#include <stdio.h>
#include <stdlib.h>

struct node {
  long value;
  struct node* next;
};

__attribute__((noipa)) long walk(const struct node* p) {
  long s = 0;
  while (p) {
    s += p->value;
    p = p->next;
  }
  return s;
}

__attribute__((noipa)) long walk_again(const struct node* p) {
  long s = 0;
  while (p) {
    s += p->value;
    p = p->next;
  }
  return s;
}

__attribute__((noipa)) long alternate(const long* a, long n) {
  long s = 0;
  for (long i = 0; i < n; i++) {
    if (i & 1) s += a[i];
    else s ^= a[i] << 1;
  }
  return s;
}

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  const long list = atol(argv[1]), walks = atol(argv[2]), n = atol(argv[3]), alts = atol(argv[4]);
  struct node* nodes = calloc((size_t)list, sizeof *nodes);
  long* a = calloc((size_t)n, sizeof *a);
  if (!nodes || !a) return 1;
  for (long i = 0; i < list; i++) {
    nodes[i].value = i * 7 % 13;
    nodes[i].next = i + 1 < list ? &nodes[i + 1] : NULL;
  }
  for (long i = 0; i < n; i++) a[i] = i % 5;
  long t = 0;
  for (long k = 0; k < walks; k++) t += walk(nodes);
  t += walk_again(nodes);
  for (long k = 0; k < alts; k++) t += alternate(a, n);
  printf("%ld\n", t);
  return 0;
}
