/* work(): 10 calls before fork; the child makes 5 more and exits, the parent 3 more. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sum;
__attribute__((noipa)) void work(long i) { sum += i; }

int main(void) {
  for (int i = 0; i < 10; ++i) work(i);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 5; ++i) work(i);
    printf("child done\n");
    exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  FILE *f = fopen("child.pid", "w");
  fprintf(f, "%d\n", (int)pid);
  fclose(f);
  for (int i = 0; i < 3; ++i) work(i);
  printf("parent done, child status %d\n", WEXITSTATUS(status));
  return 0;
}
