/* Runs until it is killed (trace.killed): a loop with a data-dependent
 * branch and a call, so that every iteration writes witnesses.  With an
 * argument N (trace.killed.threads), N threads first run a little traced
 * code each, print `thread TID` on stderr and wait for ever: they fill no
 * buffer, so a SIGKILL leaves them no stream. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned step(unsigned x) { return x & 1 ? 3 * x + 1 : x / 2; }

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void *waiter(void *arg) {
  unsigned x = (unsigned)(unsigned long)arg + 27;
  for (int i = 0; i < 1000; i++) x = x == 1 ? 27 : step(x);
  fprintf(stderr, "thread %d %u\n", (int)gettid(), x);
  pthread_mutex_lock(&lock);
  for (;;) pthread_cond_wait(&never, &lock);
}

int main(int argc, char **argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 0;
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, waiter, (void *)(unsigned long)i) != 0) return 1;
  }
  unsigned long n = 0;
  for (unsigned x = 27;; x = x == 1 ? (unsigned)(n % 1000) + 2 : step(x))
    if (++n % 100000000 == 0) printf("%lu\n", n);
}
