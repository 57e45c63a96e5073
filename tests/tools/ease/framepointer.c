/* ease-report --diff on two builds whose difference is known
 * (diff_check.py): built with -fomit-frame-pointer (A) and with
 * -fno-omit-frame-pointer (B), the same workload: B's f sets up and tears
 * down a frame on each of its 1000 calls (push %rbp, mov %rsp,%rbp ...
 * pop %rbp), A's does not. */
#include <stdio.h>

__attribute__((noinline)) long f(long x) {
  volatile long a[4];
  for (int k = 0; k < 4; ++k) a[k] = x * k;
  return a[0] + a[1] + a[2] + a[3];
}

int main(void) {
  long s = 0;
  for (long i = 0; i < 1000; ++i) s += f(i);
  printf("%ld\n", s);
  return 0;
}
