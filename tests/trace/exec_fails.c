/* exec_fails: children whose exec fails, and which then end with _exit: a
 * fork child and a vfork child, each running traced code before and after
 * its failed execv of a path that does not exist.  Before the fix, the
 * recorder wrote each stream's final chunk before exec and went on after
 * it when exec returned, so `atomx regen` refused the stream ("bytes after
 * the final chunk").  Last, the parent's own execv fails while a second
 * thread, which has recorded, waits; both go on (the second thread's bytes
 * up to the exec must not be written twice) and the parent joins it.  The
 * parent waits for each child before it prints: the output is
 * deterministic.  Usage: exec_fails. */
#include <pthread.h>
#include <semaphore.h>

#include "child_work.h"

static sem_t ready, go;
static unsigned helped;
static void *helper(void *arg) {
  (void)arg;
  helped = work(7, 35);
  sem_post(&ready);
  sem_wait(&go);
  helped += work(8, 25);
  return NULL;
}

static char *args[] = {"no-such-program", NULL};

int main(void) {
  unsigned acc = work(1, 50);
  printf("before %u\n", acc);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    work(2, 30);
    execv("/nonexistent/atomx-exec-fails", args);
    _exit((int)(work(3, 20) % 50));
  }
  printf("fork child exited %d\n", status_of(pid));
  pid = vfork();
  if (pid < 0) return 2;
  if (pid == 0) {
    if (work(4, 25) != 0) execv("/nonexistent/atomx-exec-fails", args);
    _exit((int)(work(5, 15) % 50) + 50);
  }
  printf("vfork child exited %d\n", status_of(pid));
  /* The parent's own exec fails too, with a second thread waiting; both
   * go on, and main returns. */
  pthread_t t;
  sem_init(&ready, 0, 0);
  sem_init(&go, 0, 0);
  if (pthread_create(&t, NULL, helper, NULL) != 0) return 2;
  sem_wait(&ready);
  execv("/nonexistent/atomx-exec-fails", args);
  sem_post(&go);
  pthread_join(t, NULL);
  printf("helper %u\n", helped);
  printf("after %u\n", acc + work(6, 40));
  return 0;
}
