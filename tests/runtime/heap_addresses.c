/* pristine_heap.py's program: prints the start of its heap, the addresses of
 * 20 blocks of mixed sizes (with frees between them, so that later blocks
 * reuse earlier ones; block 10 is large enough for glibc to mmap it), a
 * stack address and a data address, then the heap's end.  Run natively and
 * instrumented with address-space randomisation off, both must print the
 * same (docs/rewriting.md, "Heap and stack addresses"). */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int data;

int main(void) {
  int local = 0;
  void *start = sbrk(0); /* before anything of the program allocates */
  static const unsigned sizes[20] = {1, 24, 100, 1000, 5000, 17, 64, 300, 70000, 8,
                                     200000, 40, 128, 2048, 33, 512, 96, 4000, 16, 250};
  void *p[20];
  for (int i = 0; i < 20; i++) {
    p[i] = malloc(sizes[i]);
    if (i % 3 == 2) free(p[i - 1]);
  }
  printf("sbrk0 %p\n", start);
  for (int i = 0; i < 20; i++) printf("malloc%d %p\n", i, p[i]);
  printf("stack %p\n", (void *)&local);
  printf("data %p\n", (void *)&data);
  printf("sbrk1 %p\n", sbrk(0));
  return 0;
}
