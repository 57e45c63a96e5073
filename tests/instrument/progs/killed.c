/* work() 7 times, then the process dies as argv[1] says:
 * segv (raise), fault (a real null write), abort, term (kill itself), _exit. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile long sum;
__attribute__((noipa)) void work(long i) { sum += i; }

int main(int argc, char **argv) {
  for (int i = 0; i < 7; ++i) work(i);
  printf("about to %s\n", argc > 1 ? argv[1] : "return");
  fflush(stdout);
  if (argc < 2) return 0;
  if (!strcmp(argv[1], "segv")) raise(SIGSEGV);
  if (!strcmp(argv[1], "fault")) *(volatile int *)(long)argc = 1;
  if (!strcmp(argv[1], "abort")) abort();
  if (!strcmp(argv[1], "term")) kill(getpid(), SIGTERM);
  if (!strcmp(argv[1], "_exit")) _exit(3);
  return 1;
}
