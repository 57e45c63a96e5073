/* A traced program whose witnesses fill buffers while SIGSEGV is blocked,
 * which the recorder must not let happen (the kernel kills a process whose
 * blocked SIGSEGV a fault raises): threads created with every signal
 * blocked, as xz creates its workers (twice: the second pthread_sigmask call
 * goes through a GOT slot a lazily bound program has resolved by then), a
 * handler that runs with every signal blocked, and the main thread with
 * every signal blocked.  Built with -z lazy. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile unsigned long sink;

static unsigned long work(unsigned long n) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < n; i++) {
    if (i % 3 == 0) s += i;
    else if (i % 5 == 0) s ^= i;
    else s += 1;
  }
  return s;
}

static void *thread_main(void *arg) {
  sink += work((unsigned long)arg);
  return NULL;
}

static void on_usr1(int sig) { sink += work(1500000 + (unsigned long)sig); }

int main(void) {
  sigset_t all, old;
  sigfillset(&all);
  for (int round = 0; round < 2; round++) {
    pthread_t t[2];
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned long i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_main, (void *)(1000000UL * (i + 1)));
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigfillset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  raise(SIGUSR1);
  sigprocmask(SIG_BLOCK, &all, NULL);
  sink += work(1500000);
  printf("%lu\n", sink);
  return 0;
}
