/* det_threads: four threads, each with work of its own, fixed and
 * different (its own procedure, seed and length), made and joined in
 * order; no thread's path depends on another's or on the schedule.  Each
 * waits at a barrier with main when its work is done, so all four are
 * alive at once: Valgrind, which numbers threads by slot and reuses a
 * joined thread's, then numbers them 2 to 5 in the order they were made
 * (callgrind --separate-threads=yes).  So
 * each thread's block sequence is the same in every run, and the trace's
 * streams can be compared thread by thread (regen_oracle.py matches them
 * by the order the threads were made).  The main thread works too, before
 * and after.  Output only from the main thread, after the joins.
 * Usage: det_threads. */
#include <pthread.h>
#include <stdio.h>

static unsigned __attribute__((noinline)) collatz(unsigned x, int rounds) {
  unsigned acc = 0;
  for (int i = 0; i < rounds; i++) {
    x = x & 1 ? 3 * x + 1 : x / 2;
    if (x == 1) x = 27 + (unsigned)i;
    acc += x;
  }
  return acc;
}
static unsigned __attribute__((noinline)) sieve(int n) {
  static __thread unsigned char composite[4096];
  unsigned primes = 0;
  for (int i = 2; i < n; i++) {
    if (composite[i]) continue;
    primes++;
    for (int j = 2 * i; j < n; j += i) composite[j] = 1;
  }
  return primes;
}
static unsigned __attribute__((noinline)) digits(unsigned x, int rounds) {
  unsigned sum = 0;
  for (int i = 0; i < rounds; i++)
    for (unsigned y = x + (unsigned)i; y; y /= 10) sum += y % 10 == 7 ? 3 : y % 10;
  return sum;
}

struct job {
  int kind;
  unsigned arg;
  int rounds;
  unsigned result;
};
static pthread_barrier_t done;
static void *run(void *p) {
  struct job *j = p;
  switch (j->kind) {
    case 0: j->result = collatz(j->arg, j->rounds); break;
    case 1: j->result = sieve(j->rounds); break;
    case 2: j->result = digits(j->arg, j->rounds); break;
    default: j->result = collatz(j->arg, j->rounds) ^ digits(j->arg, j->rounds / 4); break;
  }
  pthread_barrier_wait(&done);
  return NULL;
}

int main(void) {
  struct job jobs[4] = {{0, 97, 30000, 0}, {1, 0, 4000, 0}, {2, 1234, 9000, 0}, {3, 871, 12000, 0}};
  pthread_t t[4];
  const unsigned before = collatz(7, 500);
  pthread_barrier_init(&done, NULL, 5);
  for (int i = 0; i < 4; i++)
    if (pthread_create(&t[i], NULL, run, &jobs[i]) != 0) return 1;
  pthread_barrier_wait(&done);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  printf("main %u", before + digits(5, 300));
  for (int i = 0; i < 4; i++) printf(" thread%d %u", i + 1, jobs[i].result);
  printf("\n");
  return 0;
}
