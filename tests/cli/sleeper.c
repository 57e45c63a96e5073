/* A program that runs for 30 s doing little (tests/cli/term.sh). */
#include <stdio.h>
#include <time.h>
int main(void) {
  struct timespec t = {0, 10000000};
  long n = 0;
  for (int k = 0; k < 3000; ++k) nanosleep(&t, 0), ++n;  /* 30 s */
  printf("%ld\n", n);
  return 0;
}
