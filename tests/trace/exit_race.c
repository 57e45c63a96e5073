/* exit() while other threads still record: the main thread's exit writes
 * every stream's last chunk, and threads of the process keep running (and
 * ending) until the kernel stops them.  Two threads start short-lived
 * threads one after another, each filling part of a buffer and ending,
 * while main exits after a few milliseconds.  Every stream must end with
 * one last chunk and regenerate (trace.exit_race runs it 12 times). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long work(unsigned long n) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < n; i++) {
    if (i % 3 == 0) s += i;
    else if (i % 7 == 0) s ^= i;
    else s += 1;
  }
  return s;
}

static void *short_lived(void *arg) {
  sink += work((unsigned long)arg);
  return NULL;
}

static void *spawner(void *arg) {
  for (unsigned long k = 0;; k++) {
    pthread_t t;
    if (pthread_create(&t, NULL, short_lived, (void *)(20000 + (k % 7) * 5000 + (unsigned long)arg))) break;
    pthread_join(t, NULL);
  }
  return NULL;
}

int main(void) {
  pthread_t t[2];
  for (unsigned long i = 0; i < 2; i++) pthread_create(&t[i], NULL, spawner, (void *)i);
  sink += work(3000000);
  exit(0);
}
