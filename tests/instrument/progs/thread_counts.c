/* Per-thread counters under stress (atomx --counters per-thread): every
 * way a thread's counts could be lost or counted twice.
 *   - 8 threads run the same blocks at once, many times (plain increments
 *     lose counts here);
 *   - threads that end early: pthread_exit from a nested call, and a return
 *     before the others have started;
 *   - 200 short threads one after the other: glibc gives each the stack and
 *     thread control block of the one before (its cache), so a stale owner
 *     there must not make a thread count into another's copy;
 *   - a thread that forks: the child counts on from its parent's counts
 *     before the fork, and starts threads of its own;
 *   - a signal handler run first in a new thread (its first moved code);
 *   - a thread started by a thread, started by a thread.
 * The output does not depend on scheduling. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { THREADS = 8, ROUNDS = 20000, SHORT = 200 };

static volatile long sink;

__attribute__((noipa)) long step(long i) {
  if (i % 3 == 0) return i / 3;
  if (i & 1) return 3 * i + 1;
  return i / 2;
}

__attribute__((noipa)) long hot(long seed) {
  long s = 0;
  for (long r = 0; r < ROUNDS; ++r) s += step(seed + r);
  return s;
}

static void *racer(void *arg) { return (void *)hot((long)arg); }

__attribute__((noipa)) void leave_early(long v) {
  if (v >= 0) pthread_exit((void *)(v + 1));
}

static void *early_exit(void *arg) {
  leave_early((long)arg);
  sink = 1; /* never */
  return 0;
}

static void *brief(void *arg) { return (void *)step((long)arg); }

static volatile sig_atomic_t handled;
static void on_usr1(int sig) { handled += sig; }


static void *grandchild(void *arg) { return (void *)(hot((long)arg) & 0xff); }
static void *child(void *arg) {
  pthread_t t;
  void *r;
  pthread_create(&t, 0, grandchild, arg);
  pthread_join(t, &r);
  return r;
}

static long run_racers(long seed) {
  pthread_t t[THREADS];
  long total = 0;
  for (long k = 0; k < THREADS; ++k) pthread_create(&t[k], 0, racer, (void *)(seed + k));
  for (long k = 0; k < THREADS; ++k) {
    void *r;
    pthread_join(t[k], &r);
    total += (long)r;
  }
  return total;
}

static void *forker(void *arg) {
  (void)arg;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    printf("child racers %ld\n", run_racers(100));
    fflush(stdout);
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return (void *)(long)WEXITSTATUS(status);
}

int main(void) {
  printf("racers %ld\n", run_racers(0));

  pthread_t t[4];
  for (long k = 0; k < 4; ++k) pthread_create(&t[k], 0, early_exit, (void *)k);
  long early = 0;
  for (int k = 0; k < 4; ++k) {
    void *r;
    pthread_join(t[k], &r);
    early += (long)r;
  }
  printf("early exits %ld\n", early);

  long brief_sum = 0;
  for (long k = 0; k < SHORT; ++k) {
    pthread_t b;
    void *r;
    pthread_create(&b, 0, brief, (void *)k);
    pthread_join(b, &r);
    brief_sum += (long)r;
  }
  printf("short threads %ld\n", brief_sum);

  pthread_t f;
  void *fr;
  pthread_create(&f, 0, forker, 0);
  pthread_join(f, &fr);
  printf("fork status %ld\n", (long)fr);

  signal(SIGUSR1, on_usr1);
  pthread_t s;
  /* The thread starts in libc's raise: the handler is its first code of ours. */
  pthread_create(&s, 0, (void *(*)(void *))(void (*)(void))raise, (void *)(long)SIGUSR1);
  pthread_join(s, 0);
  printf("handled %d\n", (int)handled);

  pthread_t c;
  void *cr;
  pthread_create(&c, 0, child, (void *)7);
  pthread_join(c, &cr);
  printf("nested %ld\n", (long)cr);
  return 0;
}
