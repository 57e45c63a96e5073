/* spawn_other PROG ARGS...: runs another program three ways, one after the
 * other -- vfork + execv, posix_spawn, and system() (a /bin/sh that runs
 * it) -- and says how each ended.  Traced as a workload (`atomx trace --
 * spawn_other PROG ...`, workload.py), every process of PROG is traced
 * with PROG's own instrumented copy, and system()'s sh is untraced. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int status_of(pid_t pid) {
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: spawn_other PROG [ARGS...]\n");
    return 2;
  }
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  const int a = status_of(pid);
  fflush(stdout);
  if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0) pid = -1;
  const int b = status_of(pid);
  char command[4096] = "";
  for (int i = 1; i < argc; i++) {
    if (strlen(command) + strlen(argv[i]) + 2 >= sizeof command) return 2;
    strcat(command, i > 1 ? " " : "");
    strcat(command, argv[i]);
  }
  fflush(stdout);
  const int c = system(command);
  fprintf(stderr, "vfork+exec %d, posix_spawn %d, system %d\n", a, b, WIFEXITED(c) ? WEXITSTATUS(c) : -1);
  return a || b || c;
}
