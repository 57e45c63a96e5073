/* exec_l: a process chain through execl, execle and execlp, each running
 * this program again (/proc/self/exe)
 * until the last level exits.  libc's execl* reach execve inside libc, so
 * the trace recorder hooks them in the GOT themselves: without that, each
 * process's stream would end without its final chunk.  Usage: exec_l. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
  const int level = argc > 1 ? atoi(argv[1]) : 0;
  printf("level %d\n", level);
  fflush(stdout);
  switch (level) {
    case 0: execl("/proc/self/exe", "exec_l", "1", (char *)NULL); break;
    case 1: execle("/proc/self/exe", "exec_l", "2", (char *)NULL, environ); break;
    case 2: execlp("/proc/self/exe", "exec_l", "3", (char *)NULL); break;
    default: return 0;
  }
  perror("exec");
  return 1;
}
