/* The schedule log's interleaving oracles (docs/trace.md, "The privileged
 * schedule log"): THREADS threads each take TICKETS tickets from one shared
 * counter (lock xadd), doing WORK iterations of a busy loop between two,
 * and keep the tickets they took in their own array: the program's own
 * record of the order, written at the end to FILE as one line per thread,
 * `TID T0 T1 ...`.  Run on one CPU (taskset -c 0), the threads preempt one
 * another, and the tickets each took between two of its switches must be
 * the next ones of the whole sequence.
 *
 * The busy loop is arithmetic, or with `steps` it steps the same counter
 * (lock add): a loop of evaluated predicates that records nothing per
 * iteration in a trace with data, whose iterations the record then sees --
 * each ticket is the count of every step and ticket of every thread before
 * it, so in the merged trace a switch placed at another iteration of its
 * loop moves steps across another thread's tickets.  `indirect`: the same,
 * the loop reaching the counter through a pointer it loads at each
 * iteration, a value the trace records among the block's instructions.
 *   tickets FILE [THREADS [TICKETS [WORK [steps|indirect]]]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long counter;
static long *volatile counterAt = &counter;
static long tickets = 4000, work = 400;
static enum { Arithmetic, Steps, Indirect } loop = Arithmetic;
struct taker {
  pthread_t thread;
  pid_t tid;
  long *taken;
  unsigned long sink;
};

__attribute__((noinline)) static unsigned long busy(unsigned long x, long n) {
  for (long i = 0; i < n; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}

__attribute__((noinline)) static void step(long n) {
  for (long i = 0; i < n; i++) __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void stepIndirect(long n) {
  for (long i = 0; i < n; i++) __atomic_fetch_add(counterAt, 1, __ATOMIC_RELAXED);
}

static void *take(void *arg) {
  struct taker *t = arg;
  t->tid = gettid();
  unsigned long x = (unsigned long)t->tid;
  for (long i = 0; i < tickets; i++) {
    t->taken[i] = __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    if (loop == Steps) step(work);
    else if (loop == Indirect) stepIndirect(work);
    else x = busy(x, work);
  }
  t->sink = x;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tickets FILE [THREADS [TICKETS [WORK [steps|indirect]]]]\n");
    return 2;
  }
  const int threads = argc > 2 ? atoi(argv[2]) : 3;
  if (argc > 3) tickets = atol(argv[3]);
  if (argc > 4) work = atol(argv[4]);
  if (argc > 5) loop = strcmp(argv[5], "indirect") == 0 ? Indirect : strcmp(argv[5], "steps") == 0 ? Steps : Arithmetic;
  struct taker *t = calloc((size_t)threads, sizeof *t);
  for (int k = 0; k < threads; k++) {
    t[k].taken = malloc((size_t)tickets * sizeof(long));
    if (pthread_create(&t[k].thread, NULL, take, &t[k]) != 0) return 1;
  }
  for (int k = 0; k < threads; k++) pthread_join(t[k].thread, NULL);
  FILE *out = fopen(argv[1], "w");
  if (!out) return 1;
  for (int k = 0; k < threads; k++) {
    fprintf(out, "%d", (int)t[k].tid);
    for (long i = 0; i < tickets; i++) fprintf(out, " %ld", t[k].taken[i]);
    fprintf(out, "\n");
  }
  return fclose(out) != 0;
}
