/* The schedule log's iteration oracle (docs/trace.md, "The privileged
 * schedule log"): THREADS threads each take TICKETS tickets from one shared
 * count of steps (lock xadd) and, between two, step it WORK times in a busy
 * loop (lock add), a loop of evaluated predicates that records nothing per
 * iteration in a trace with data.  Each thread keeps the count it read at
 * each ticket -- every step and ticket of every thread before it: the
 * program's own record -- and writes it at the end to FILE as one line per
 * thread, `TID S0 S1 ...`.  Run on one CPU (taskset -c 0), the threads are
 * preempted inside their busy loops; in the merged trace the steps and
 * tickets before each ticket must number what it read, which holds only
 * if every switch stands at its own iteration.  `indirect`: the busy loop
 * reaches the count through a pointer it loads at each iteration, a value
 * the trace records among the block's instructions (a switch after it does
 * not stand at the block's first position).
 *   steps FILE [THREADS [TICKETS [WORK [indirect]]]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long steps;
static long *volatile stepsAt = &steps;
static long tickets = 1000, work = 3000;
static int indirect;
struct taker {
  pthread_t thread;
  pid_t tid;
  long *read;
};

__attribute__((noinline)) static void busy(long n) {
  for (long i = 0; i < n; i++) __atomic_fetch_add(&steps, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void busyIndirect(long n) {
  for (long i = 0; i < n; i++) __atomic_fetch_add(stepsAt, 1, __ATOMIC_RELAXED);
}

static void *take(void *arg) {
  struct taker *t = arg;
  t->tid = gettid();
  for (long i = 0; i < tickets; i++) {
    t->read[i] = __atomic_fetch_add(&steps, 1, __ATOMIC_SEQ_CST);
    if (indirect) busyIndirect(work);
    else busy(work);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: steps FILE [THREADS [TICKETS [WORK [indirect]]]]\n");
    return 2;
  }
  const int threads = argc > 2 ? atoi(argv[2]) : 3;
  if (argc > 3) tickets = atol(argv[3]);
  if (argc > 4) work = atol(argv[4]);
  indirect = argc > 5 && strcmp(argv[5], "indirect") == 0;
  struct taker *t = calloc((size_t)threads, sizeof *t);
  for (int k = 0; k < threads; k++) {
    t[k].read = malloc((size_t)tickets * sizeof(long));
    if (pthread_create(&t[k].thread, NULL, take, &t[k]) != 0) return 1;
  }
  for (int k = 0; k < threads; k++) pthread_join(t[k].thread, NULL);
  FILE *out = fopen(argv[1], "w");
  if (!out) return 1;
  for (int k = 0; k < threads; k++) {
    fprintf(out, "%d", (int)t[k].tid);
    for (long i = 0; i < tickets; i++) fprintf(out, " %ld", t[k].read[i]);
    fprintf(out, "\n");
  }
  return fclose(out) != 0;
}
