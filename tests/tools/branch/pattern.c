/* The branch tool's predictor test program: step() holds exactly one
 * conditional branch (inline assembly, so the compiler cannot turn it into
 * a cmov), taken when its argument is not 'T'.  main calls step() for each
 * character of argv[1], argv[2] times over, so the branch's outcome
 * sequence is known exactly: check_predictor.py simulates the 2-bit
 * counter on it.  Prints how many 'T's it saw.
 *   pattern PATTERN REPS */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int step(int c) {
  int r = 0;
  __asm__ volatile("cmp $84, %1\n\t" /* 'T' */
                   "jne 1f\n\t"
                   "mov $1, %0\n"
                   "1:"
                   : "+r"(r)
                   : "r"(c)
                   : "cc");
  return r;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pattern PATTERN REPS\n");
    return 2;
  }
  long reps = atol(argv[2]), n = 0;
  for (long k = 0; k < reps; k++)
    for (const char *p = argv[1]; *p; p++) n += step(*p);
  printf("%ld\n", n);
  return 0;
}
