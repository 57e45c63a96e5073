// Eight threads run the same blocks at the same time, so every counter the
// tools keep for them is incremented concurrently: exact totals need
// increments that no other thread can lose (tests/oracles/CMakeLists.txt,
// oracle.stress.*).  What runs does not depend on the schedule: each thread
// does the same ITERS iterations of work(), whose branches and accesses
// depend only on the iteration and the thread number.
#include <pthread.h>
#include <stdio.h>

#define THREADS 8
#define ITERS 100000

static long table[64];
static long results[THREADS * 8];  // one cache line per thread

__attribute__((noinline)) static long work(long i, long t) {
  long x = i * 2654435761L + t;
  if (x & 1)
    x = x * 3 + 1;
  else
    x >>= 1;
  switch (i & 3) {
    case 0: x += table[i & 63]; break;
    case 1: x ^= table[(i >> 3) & 63]; break;
    case 2: x -= 3; break;
    default: x *= 2; break;
  }
  return x;
}

static void* run(void* arg) {
  const long t = (long)arg;
  long acc = 0;
  for (long i = 0; i < ITERS; i++) acc += work(i, t);
  results[t * 8] = acc;
  return NULL;
}

int main(void) {
  for (int k = 0; k < 64; k++) table[k] = k * 7919;
  pthread_t threads[THREADS];
  for (long t = 0; t < THREADS; t++)
    if (pthread_create(&threads[t], NULL, run, (void*)t) != 0) return 1;
  for (long t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  long total = 0;
  for (int t = 0; t < THREADS; t++) total += results[t * 8];
  printf("%ld\n", total);
  return 0;
}
