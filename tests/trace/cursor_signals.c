/* cursor_signals: signals landing in loops that keep the trace's cursor in
 * a register (docs/trace.md, "What the program writes").  spin() is a
 * call-free loop with two data-dependent branches per iteration (a witness
 * or two each time round), run by the main thread and a second thread long
 * enough to fill several 1 MiB trace buffers each (the recorder's fault
 * handler takes the cursor from the loop's register).  A 50-microsecond
 * interval timer sends SIGALRM to the process; its handler runs traced code
 * with a call-free loop of its own (handler_work, whose cursor register is
 * loaded from the interrupted loop's) and counts its calls.  A signal may
 * interrupt any instruction of the loops, the inserted stores included,
 * and the handler itself (SA_NODEFER).  stdout holds the loops' results,
 * the same in every run; stderr says how many times the handler ran
 * ("ticks N"), which varies.  Usage: cursor_signals [ITERATIONS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alarm_timer.h"

#define NOINLINE __attribute__((noinline))

static volatile long ticks;
static volatile unsigned long sink;

static NOINLINE unsigned long handler_work(unsigned long n) {
  unsigned long h = n | 1;
  for (int i = 0; i < 24; i++) h = (h & 1) ? h * 3 + 1 : h / 2;
  return h;
}

static void on_alarm(int sig) {
  (void)sig;
  __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
  sink += handler_work((unsigned long)ticks);
}

/* No call, two branches the data decides. */
static NOINLINE unsigned long spin(uint64_t x, long n) {
  unsigned long a = 0, b = 0, c = 0;
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (x >> 63) a += x >> 40;
    else b ^= x;
    if ((x >> 37) & 1) c++;
  }
  return a ^ b ^ c;
}

struct job {
  uint64_t seed;
  long n;
  unsigned long result;
};

static void *worker(void *arg) {
  struct job *j = arg;
  j->result = spin(j->seed, j->n);
  return NULL;
}

int main(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 3000000;
  start_alarm_timer(on_alarm);
  struct job job = {23, n, 0};
  pthread_t t;
  pthread_create(&t, NULL, worker, &job);
  const unsigned long mine = spin(5, n);
  pthread_join(t, NULL);
  stop_alarm_timer();
  printf("main %lu\nworker %lu\n", mine, job.result);
  fprintf(stderr, "ticks %ld\n", ticks);
  return 0;
}
