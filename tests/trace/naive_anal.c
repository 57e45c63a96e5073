/* The naive tracer's analysis: every block address, in order, per thread,
 * as text lines in $ATOMX_NAIVE_DIR/naive.TID (default: the program's
 * working directory). */
#define _GNU_SOURCE
#include <atomx/analysis.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static __thread FILE *out;

void NaiveBlock(long pc) {
  if (!out) {
    char name[4200];
    const char *dir = getenv("ATOMX_NAIVE_DIR");
    snprintf(name, sizeof name, "%s/naive.%d", dir && *dir ? dir : ".", (int)gettid());
    out = fopen(name, "w");
    if (!out) abort();
    setvbuf(out, NULL, _IOFBF, 1 << 16);
  }
  fprintf(out, "%lx\n", pc);
}

/* Thread streams are flushed at exit; a thread that ends earlier has its
 * FILE left open, and exit flushes every FILE of this namespace's libc. */
