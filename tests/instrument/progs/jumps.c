/* longjmp over instrumented frames: deep(n) recurses n levels and jumps back
 * to run's setjmp from the bottom on every other call of run. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf back;
__attribute__((noipa)) int deep(int n, int jump);
static int (*volatile again)(int, int) = deep;  /* a direct call would become a loop */

__attribute__((noipa)) int deep(int n, int jump) {
  if (n == 0) {
    if (jump) longjmp(back, 1);
    return 1;
  }
  return again(n - 1, jump) + 1;
}

__attribute__((noipa)) int run(int i) {
  if (setjmp(back)) return -1;
  return deep(5, i % 2);
}

int main(void) {
  int sum = 0;
  for (int i = 0; i < 10; i++) sum += run(i);
  printf("sum %d\n", sum);
  return 0;
}
