/* libc's memory traffic and a shared last level (tests/tools/cachesim/libc_threads.py).
 * main zeroes, copies, measures and compares megabytes through libc's
 * functions (built -fno-builtin, so each is a call), whose references
 * cachesim models from the arguments; then two threads each read the
 * copy, which memcpy left in the last level: shared, it holds it for
 * both; private to each thread, each misses all of it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 20)
static char *a, *b;
static char str[100000];

static void *work(void *arg) {
  long sum = (long)arg;
  for (int r = 0; r < 4; ++r)
    for (long i = 0; i < N; i += 64) sum += b[i];
  return (void *)sum;
}

int main(void) {
  a = malloc(N), b = malloc(N);
  memset(a, 1, N);
  a[N - 1] = 0;
  for (int r = 0; r < 3; ++r) memcpy(b, a, N);
  memset(str, 'x', sizeof str - 1);
  size_t n = strlen(str);
  char *c = calloc(1000, 100);
  long s = 0;
  for (int i = 0; i < 100000; i += 64) s += c[i];
  pthread_t t[2];
  for (long k = 0; k < 2; ++k) pthread_create(&t[k], 0, work, (void *)k);
  for (int k = 0; k < 2; ++k) pthread_join(t[k], 0);
  printf("%zu %ld %d\n", n, s, strcmp(a, b));
  return 0;
}
