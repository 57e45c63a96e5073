/* The loader's private heap: nothing the runtime does before main allocates
 * on the program's heap (ATOM's "second heap method", docs/rewriting.md
 * "Heap and stack addresses").
 *
 * The analysis object lives in its own link-map namespace with its own libc,
 * whose malloc never uses brk (glibc's malloc in a namespace other than the
 * first falls back to mmap).  But ld.so's own bookkeeping while dlmopen
 * loads it (link maps, names, scopes, search lists) goes through four
 * pointers in ld.so's RELRO data, __rtld_malloc, __rtld_calloc,
 * __rtld_realloc and __rtld_free, which ld.so set to the program's malloc
 * family once it had relocated the program: so dlmopen allocated on the
 * program's heap, initialised its tcache and moved every later malloc.
 *
 * ld.so exports none of the four (and Debian strips its symbol table), so
 * they are found by value: the words of ld.so's PT_GNU_RELRO that hold libc's
 * malloc, calloc, realloc and free, each exactly once and all four within 64
 * bytes.  While the runtime loads the analysis object and runs ProgramBefore
 * (one thread: the program has not started), they point here instead, and
 * back afterwards.  When they cannot be found (another C library, a malloc
 * that the program or a preloaded library interposes), nothing changes and
 * the loader allocates on the program's heap as before.
 *
 * Each block is its own anonymous mapping laid out as glibc lays out a chunk
 * it mmaps (prev_size 0, size = mapping | IS_MMAPPED), because ld.so may
 * later free or realloc one with the program's libc (a thread's DTV that grew
 * while loading, say): glibc then munmaps or mremaps it as one of its own.
 * A block of the program's heap that ld.so frees or reallocs meanwhile is
 * left alone (its memory is not ours to reuse).
 *
 * Under Valgrind nothing changes: its tools call libc's __libc_freeres at
 * exit, which frees some of ld.so's blocks, and memcheck (whose malloc puts
 * the heap elsewhere anyway) would report the frees of blocks it never
 * allocated. */
#include "heap.h"

#include <elf.h>

#include "stub.h"
#include "../sys.h"

#define HEAP_PAGE 4096ul
#define HEAP_HEADER 16ul     /* prev_size, size: where glibc's chunk header is */
#define HEAP_IS_MMAPPED 2ul  /* glibc's IS_MMAPPED bit of the size word */
#define HEAP_FLAGS 7ul
#define HEAP_PROT_READ 1
#define HEAP_PROT_WRITE 2

static void *heap_malloc(unsigned long n) {
  if (n > (1ul << 46)) return 0;
  unsigned long total = (n + HEAP_HEADER + HEAP_PAGE - 1) & ~(HEAP_PAGE - 1);
  long b = sys_mmap_anonymous(total);
  if (b < 0 && b > -4096) return 0;
  uint64_t *h = (uint64_t *)b;
  h[0] = 0;
  h[1] = total | HEAP_IS_MMAPPED;
  return h + 2;
}

static void *heap_calloc(unsigned long n, unsigned long size) {
  unsigned long bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) return 0;
  return heap_malloc(bytes); /* fresh mappings are zero */
}

static void heap_free(void *p) {
  if (!p) return;
  const uint64_t *h = (const uint64_t *)p - 2;
  if (!(h[1] & HEAP_IS_MMAPPED)) return; /* the program's heap: leave it */
  sys_munmap((char *)h - h[0], h[0] + (h[1] & ~HEAP_FLAGS));
}

static void *heap_realloc(void *p, unsigned long n) {
  if (!p) return heap_malloc(n);
  if (n == 0) {
    heap_free(p);
    return 0;
  }
  const uint64_t *h = (const uint64_t *)p - 2;
  /* What the block can hold: a mapped chunk all but its header, an in-use
   * chunk of a heap all but its size word (glibc's chunksize - SIZE_SZ). */
  unsigned long usable = (h[1] & ~HEAP_FLAGS) - ((h[1] & HEAP_IS_MMAPPED) ? HEAP_HEADER : 8);
  if (n <= usable && (h[1] & HEAP_IS_MMAPPED)) return p;
  void *q = heap_malloc(n);
  if (!q) return 0;
  memcpy(q, p, n < usable ? n : usable);
  heap_free(p);
  return q;
}

/* The four slots in ld.so's RELRO: malloc, calloc, realloc, free. */
static int find_slots(const struct stub_libc *libc, uint64_t *slots[4]) {
  const uint64_t values[4] = {libc->malloc, libc->calloc, libc->realloc, libc->free};
  if (!libc->ldsoBase) return 0;
  for (int k = 0; k < 4; k++) {
    if (!values[k]) return 0;
    slots[k] = 0;
  }
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)libc->ldsoBase;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(libc->ldsoBase + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_GNU_RELRO) continue;
    uint64_t *w = (uint64_t *)((libc->ldsoBase + ph[i].p_vaddr + 7) & ~7ul);
    uint64_t *end = (uint64_t *)(libc->ldsoBase + ph[i].p_vaddr + ph[i].p_memsz);
    for (; w + 1 <= end; w++)
      for (int k = 0; k < 4; k++)
        if (*w == values[k]) {
          if (slots[k]) return 0; /* twice: not sure which ld.so calls */
          slots[k] = w;
        }
  }
  uint64_t lo = ~0ul, hi = 0;
  for (int k = 0; k < 4; k++) {
    if (!slots[k]) return 0;
    if ((uint64_t)slots[k] < lo) lo = (uint64_t)slots[k];
    if ((uint64_t)slots[k] > hi) hi = (uint64_t)slots[k];
  }
  return hi - lo < 64;
}

/* mprotect of the pages that hold the four slots; 0 on success. */
static long protect_slots(struct stub_private_heap *h, int prot) {
  uint64_t lo = ~0ul, hi = 0;
  for (int k = 0; k < 4; k++) {
    if ((uint64_t)h->slots[k] < lo) lo = (uint64_t)h->slots[k];
    if ((uint64_t)h->slots[k] + 8 > hi) hi = (uint64_t)h->slots[k] + 8;
  }
  lo &= ~(HEAP_PAGE - 1);
  hi = (hi + HEAP_PAGE - 1) & ~(HEAP_PAGE - 1);
  return sys_mprotect(lo, hi - lo, prot);
}

/* Valgrind's RUNNING_ON_VALGRIND client request (valgrind.h, amd64): 0 on
 * the real processor, where the sequence rotates %rdi by 128 bits. */
static int running_on_valgrind(void) {
  volatile unsigned long args[6] = {0x1001 /* VG_USERREQ__RUNNING_ON_VALGRIND */, 0, 0, 0, 0, 0};
  unsigned long result = 0;
  __asm__ volatile("rolq $3, %%rdi; rolq $13, %%rdi; rolq $61, %%rdi; rolq $51, %%rdi; xchgq %%rbx, %%rbx"
                   : "=d"(result)
                   : "a"(&args[0]), "0"(result)
                   : "cc", "memory");
  return result != 0;
}

void stub_private_heap_begin(struct stub_private_heap *h, const struct stub_libc *libc, int evenUnderValgrind) {
  h->active = 0;
  if ((running_on_valgrind() && !evenUnderValgrind) || !find_slots(libc, h->slots)) return;
  const uint64_t ours[4] = {(uint64_t)heap_malloc, (uint64_t)heap_calloc, (uint64_t)heap_realloc,
                            (uint64_t)heap_free};
  /* A system that refuses to make them writable keeps the old way. */
  if (protect_slots(h, HEAP_PROT_READ | HEAP_PROT_WRITE) != 0) return;
  for (int k = 0; k < 4; k++) h->saved[k] = *h->slots[k], *h->slots[k] = ours[k];
  protect_slots(h, HEAP_PROT_READ); /* left writable if refused: harmless */
  h->active = 1;
}

void stub_private_heap_end(struct stub_private_heap *h) {
  if (!h->active) return;
  if (protect_slots(h, HEAP_PROT_READ | HEAP_PROT_WRITE) != 0)
    stub_fail("cannot give the dynamic linker its malloc back", 0, 0); /* it was writable a moment ago */
  for (int k = 0; k < 4; k++) *h->slots[k] = h->saved[k];
  protect_slots(h, HEAP_PROT_READ);
  h->active = 0;
}
