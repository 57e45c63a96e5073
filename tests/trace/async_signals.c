/* async_signals: asynchronous signals landing anywhere in traced code.
 * A 50-microsecond interval timer sends SIGALRM to the process while two
 * worker threads and the main thread run branchy work: loops with
 * data-dependent branches (witnesses), a switch (a jump table), recursion,
 * calls through pointers, qsort with a comparator (a callback from libc)
 * and rep-prefixed string instructions.  The handler runs traced code of
 * its own (branches and a call) and counts its calls.  A signal can
 * interrupt any instruction, including the witness stores atomx inserted
 * and a rep instruction half done, and interrupts the handler itself
 * (SA_NODEFER).  stdout holds the work's results, the same in every run;
 * stderr says how many times the handler ran ("ticks N"), which varies.
 * Usage: async_signals [ROUNDS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "alarm_timer.h"

#define NOINLINE __attribute__((noinline))

static volatile long ticks;
static volatile unsigned long sink;

static NOINLINE unsigned long handler_work(unsigned long n) {
  unsigned long h = n;
  for (int i = 0; i < 8; i++) h = (h & 1) ? h * 3 + 1 : h / 2;
  return h;
}

static void on_alarm(int sig) {
  (void)sig;
  __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
  sink += handler_work((unsigned long)ticks);
}

static NOINLINE unsigned long collatz(unsigned long x) {
  unsigned long steps = 0;
  while (x != 1) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    steps++;
  }
  return steps;
}

static NOINLINE int classify(unsigned v) {
  switch (v % 7) {
    case 0: return 3;
    case 1: return (int)(v >> 3);
    case 2: return 11;
    case 3: return (int)(v * 5);
    case 4: return 7;
    case 5: return (int)(v ^ 0x55);
    default: return 1;
  }
}

static NOINLINE unsigned long fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int compare(const void *a, const void *b) {
  const unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return x < y ? -1 : x > y;
}

typedef unsigned long (*step_fn)(unsigned long);
static unsigned long step_a(unsigned long v) { return v * 2654435761u + 1; }
static unsigned long step_b(unsigned long v) { return (v >> 3) ^ (v << 5); }
static step_fn steps[2] = {step_a, step_b};

static NOINLINE unsigned long work(unsigned seed, int rounds) {
  unsigned long sum = 0;
  static __thread unsigned data[4096];
  static __thread char from[8192], to[8192];
  for (int r = 0; r < rounds; r++) {
    for (unsigned i = 1; i < 300; i++) sum += collatz(i + seed + (unsigned)r);
    for (unsigned i = 0; i < 2000; i++) sum += (unsigned long)classify(i * 2654435761u + seed);
    sum += fib(16);
    unsigned long v = seed;
    for (int i = 0; i < 1000; i++) v = steps[v & 1](v);
    sum += v;
    for (unsigned i = 0; i < 4096; i++) data[i] = (i * 2654435761u) ^ (seed + (unsigned)r);
    qsort(data, 4096, sizeof data[0], compare);
    sum += data[100] + data[4000];
    for (int i = 0; i < 8; i++) {
      memset(from, 'a' + (r + i) % 26, sizeof from);
      char *d = to;
      const char *f = from;
      unsigned long n = sizeof to;
      __asm__ volatile("rep movsb" : "+D"(d), "+S"(f), "+c"(n) : : "memory");
      sum += (unsigned char)to[i * 100];
    }
  }
  return sum;
}

struct job {
  unsigned seed;
  int rounds;
  unsigned long result;
};

static void *worker(void *arg) {
  struct job *j = arg;
  j->result = work(j->seed, j->rounds);
  return NULL;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 20;
  start_alarm_timer(on_alarm);
  struct job jobs[2] = {{17, rounds, 0}, {23, rounds, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, &jobs[i]);
  const unsigned long mine = work(5, rounds);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  stop_alarm_timer();
  printf("main %lu\nworker 1 %lu\nworker 2 %lu\n", mine, jobs[0].result, jobs[1].result);
  fprintf(stderr, "ticks %ld\n", ticks);
  return 0;
}
