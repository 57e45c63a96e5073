/* 4 threads call work() 1000 times each; each writes its kernel thread id to tids.txt. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *tids;
volatile long total;

__attribute__((noipa)) void work(long i) { __atomic_fetch_add(&total, i, __ATOMIC_RELAXED); }

static void *thread_main(void *arg) {
  pthread_mutex_lock(&lock);
  fprintf(tids, "%d\n", (int)gettid());
  pthread_mutex_unlock(&lock);
  for (long i = 0; i < 1000; ++i) work(i);
  return arg;
}

int main(void) {
  tids = fopen("tids.txt", "w");
  pthread_t t[4];
  for (int k = 0; k < 4; ++k) pthread_create(&t[k], 0, thread_main, 0);
  for (int k = 0; k < 4; ++k) pthread_join(t[k], 0);
  fclose(tids);
  printf("total %ld\n", total);
  return 0;
}
