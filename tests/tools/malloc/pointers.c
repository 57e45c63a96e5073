/* The malloc tool's test of calls through function pointers, the way real
 * allocator-agnostic code makes them (cmark's `cmark_mem`, zlib's
 * zalloc/zfree, SQLite's sqlite3_mem_methods):
 *   - a table initialised with the library's functions (a PIE holds their
 *     addresses in data the loader fills in; a non-PIE program, the PLT
 *     entries' addresses);
 *   - a table of the program's own wrappers, which call the library
 *     directly (seen at instrumented sites);
 *   - a pointer taken in code at run time (through the GOT);
 *   - free handed to libc, which calls it (tdestroy): libc's calls, not the
 *     program's, so neither the tool nor the oracle counts them, and the
 *     nodes' keys stay live for both;
 *   - blocks left allocated on purpose.
 * Single-threaded and deterministic: the oracle's live bytes at exit must
 * equal the tool's. */
#define _GNU_SOURCE
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mem {
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
};
struct mem libraryMem = {calloc, realloc, free};

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) abort();
  return p;
}
static void *xrealloc(void *p, size_t size) {
  void *q = realloc(p, size);
  if (!q) abort();
  return q;
}
struct mem ownMem = {xcalloc, xrealloc, free};

void *volatile sink[8];

/* A buffer grown and shrunk through a table, as a parser's would be. */
__attribute__((noinline)) static void buffers(struct mem *m, int rounds) {
  for (int r = 0; r < rounds; r++) {
    char *b = m->calloc(16 + r, 4);
    for (size_t n = 64; n <= 8192; n *= 2) b = m->realloc(b, n);
    sink[0] = b;
    m->free(b);
  }
}

static int compare(const void *a, const void *b) { return strcmp(a, b); }

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  struct mem *volatile table = &libraryMem;
  buffers(table, rounds);
  table = &ownMem;
  buffers(table, rounds);
  /* A pointer taken at run time. */
  void *(*volatile alloc)(size_t) = malloc;
  void (*volatile release)(void *) = free;
  for (int k = 0; k < 3 * rounds; k++) release(alloc(100 + k));
  /* Left allocated: 3 blocks of 1000, 2000 and 3000 bytes, one through a pointer. */
  sink[1] = malloc(1000);
  sink[2] = alloc(2000);
  sink[3] = libraryMem.calloc(3, 1000);
  /* libc frees the keys through the pointer: not the program's calls. */
  void *root = NULL;
  for (int k = 0; k < 4; k++) {
    char *key = malloc(8);
    snprintf(key, 8, "k%d", k);
    tsearch(key, &root, compare);
  }
  tdestroy(root, free);
  printf("done %d rounds\n", rounds);
  return 0;
}
