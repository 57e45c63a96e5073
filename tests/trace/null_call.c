/* A call through a null function pointer in a program with a SIGSEGV
 * handler of its own: the fault is at pc 0, which the recorder's fault
 * handler must not read as a witness store (it did, and faulted again with
 * every signal blocked: the kernel killed the process, and the program's
 * handler never ran).  Prints "caught SIGSEGV" and exits 3, traced or not
 * (null_call.sh). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig) {
  static const char msg[] = "caught SIGSEGV\n";
  (void)sig;
  write(1, msg, sizeof msg - 1);
  _exit(3);
}

int (*volatile fp)(int);

int main(int argc, char **argv) {
  (void)argv;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigaction(SIGSEGV, &sa, NULL);
  printf("calling %d\n", argc);
  fflush(stdout);
  return fp(argc);
}
