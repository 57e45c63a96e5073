/* vfork_exec: vfork, whose child shares its parent's memory (and its
 * thread's TLS, where the trace cursor is) until it execs or ends.  The
 * parent works in traced code, then
 *   - vforks a child that runs traced code and execs this program again
 *     (/proc/self/exe child), which works a little and exits with a status
 *     of its own;
 *   - vforks a child that runs traced code, writes a result into the
 *     parent's memory (as a vfork child may) and ends with _exit;
 * waits for each, and works on.  Output is written by the parent only
 * after each child has ended, so it is deterministic.  Usage: vfork_exec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_work.h"

static volatile unsigned shared; /* the _exit child's result, in its parent's memory */

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return (int)(work(5, 40) % 50);
  unsigned acc = work(1, 60);
  printf("before %u\n", acc);
  fflush(stdout);

  pid_t pid = vfork();
  if (pid < 0) {
    perror("vfork");
    return 2;
  }
  if (pid == 0) {
    char *args[] = {"vfork_exec", "child", NULL};
    if (work(2, 20) != 0) execv("/proc/self/exe", args);
    _exit(120);
  }
  printf("exec child exited %d\n", status_of(pid));
  acc += work(3, 40);

  pid = vfork();
  if (pid < 0) {
    perror("vfork");
    return 2;
  }
  if (pid == 0) {
    shared = work(4, 30);
    _exit((int)(shared % 60));
  }
  const int status = status_of(pid);
  printf("_exit child exited %d, wrote %u\n", status, shared);
  acc += work(6, 50);
  printf("after %u\n", acc);
  return 0;
}
