/* What the process pitfall programs of tests/trace (vfork_exec.c,
 * exec_fails.c) share: work in traced code (branches, a loop and calls:
 * blocks for the trace to record) and a child's exit status. */
#ifndef ATOMX_TESTS_TRACE_CHILD_WORK_H
#define ATOMX_TESTS_TRACE_CHILD_WORK_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned __attribute__((noinline)) step(unsigned x) {
  if (x % 3 == 0) return x / 3 + 7;
  if (x % 5 == 1) return x * 2 + 1;
  return x + 11;
}
static unsigned __attribute__((noinline)) work(unsigned seed, int rounds) {
  unsigned acc = seed;
  for (int i = 0; i < rounds; i++) {
    acc = step(acc ^ (unsigned)i);
    if (acc > 100000) acc %= 977;
  }
  return acc;
}

/* The child's exit status, or 100 + the signal that ended it. */
static int status_of(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) {
    perror("waitpid");
    exit(3);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

#endif
