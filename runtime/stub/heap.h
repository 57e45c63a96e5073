/* heap.c: ld.so's allocations go to private mappings while the runtime
 * loads the analysis object, so the program's heap stays as the original's. */
#ifndef ATOMX_STUB_HEAP_H
#define ATOMX_STUB_HEAP_H

#include <stdint.h>

#include "link.h"

struct stub_private_heap {
  uint64_t *slots[4]; /* ld.so's malloc, calloc, realloc, free pointers */
  uint64_t saved[4];
  int active;
};

/* Points ld.so's malloc family at the private heap, if it can find it and
 * the process does not run under Valgrind (unless `evenUnderValgrind`: a
 * test's must-fail twin). */
void stub_private_heap_begin(struct stub_private_heap *h, const struct stub_libc *libc, int evenUnderValgrind);
/* Points it back. */
void stub_private_heap_end(struct stub_private_heap *h);

#endif
