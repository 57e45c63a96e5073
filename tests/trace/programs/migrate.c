/* Threads that run on two CPUs and change CPU on purpose, for the per-CPU
 * cache simulation of a merged trace (tests/trace/merged_cachesim.py
 * --per-cpu; docs/trace.md, "Ordering threads and processes"): THREADS
 * threads, each PHASES phases; in phase p thread k binds itself to CPU
 * (k + p) % 2 (sched_setaffinity on itself: the kernel moves it at once),
 * then runs its own code (worker k's functions) over its own array, with
 * a short sleep now and then so that the threads sharing a CPU take turns.
 * So both CPUs run code, each thread's path is on both, and the schedule
 * log has switch-ins on each.  Exits 3 if a CPU cannot be bound (a machine
 * or a container with fewer than two). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define THREADS 3
#define PHASES 4
#define ROUNDS 16
#define WORDS 256

static uint64_t data[THREADS][WORDS];
static volatile uint64_t sink;
static volatile int failed;

/* Different code per worker: four small loops each, so that an I1 of 1-2K
 * holds some of it and not all. */
#define WORK(name, mul, add)                                    \
  __attribute__((noinline)) static uint64_t name(uint64_t* d) { \
    uint64_t s = 0;                                             \
    for (int i = 0; i < WORDS; i += 4) {                        \
      d[i] = d[i] * mul + add + (uint64_t)i;                    \
      s += d[i] ^ (s >> 3);                                     \
    }                                                           \
    return s;                                                   \
  }
WORK(a0, 3, 1) WORK(a1, 5, 2) WORK(a2, 7, 3) WORK(a3, 9, 4)
WORK(b0, 11, 5) WORK(b1, 13, 6) WORK(b2, 15, 7) WORK(b3, 17, 8)
WORK(c0, 19, 9) WORK(c1, 21, 10) WORK(c2, 23, 11) WORK(c3, 25, 12)

typedef uint64_t (*work_fn)(uint64_t*);
static work_fn const works[THREADS][4] = {{a0, a1, a2, a3}, {b0, b1, b2, b3}, {c0, c1, c2, c3}};

static void* worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  for (int p = 0; p < PHASES; p++) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((k + p) % 2, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) failed = 1;
    for (int r = 0; r < ROUNDS; r++) {
      sink += works[k][r % 4](data[k]);
      if (r % 4 == 3) nanosleep(&(struct timespec){0, 20000}, NULL);
    }
  }
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (int k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, worker, (void*)(intptr_t)k);
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  if (failed) {
    fprintf(stderr, "migrate: cannot bind a thread to CPU 0 or 1\n");
    return 3;
  }
  printf("migrate: %d threads, %d phases\n", THREADS, PHASES);
  return 0;
}
