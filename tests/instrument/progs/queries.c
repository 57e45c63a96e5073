/* Instruction queries (calleeName, category, regsRead/Written, sourceLine):
 * calls to imported functions, to a local procedure, a tail call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long local_sum(const long* v, long n) {
  long s = 0;
  for (long i = 0; i < n; ++i) s += v[i];
  return s;
}

__attribute__((noinline)) void* tail_alloc(size_t n) { return malloc(n); }

int main(int argc, char** argv) {
  long* v = tail_alloc(16 * sizeof(long));
  for (long i = 0; i < 16; ++i) v[i] = i * argc;
  char* s = strdup(argv[0]);
  printf("%ld %zu\n", local_sum(v, 16), strlen(s) > 0 ? (size_t)1 : (size_t)0);
  free(s);
  free(v);
  return 0;
}
