/* The program's own non-default rounding mode must survive instrumentation
 * whose analysis routines change (and restore) MXCSR and the x87 control word. */
#include <fenv.h>
#include <stdio.h>

__attribute__((noipa)) double divide(double a, double b) { return a / b; }
__attribute__((noipa)) float fdivide(float a, float b) { return a / b; }
__attribute__((noipa)) long double ldivide(long double a, long double b) { return a / b; }

int main(void) {
  static const int modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  static const char *names[] = {"nearest", "upward", "downward", "towardzero"};
  for (int m = 0; m < 4; ++m) {
    fesetround(modes[m]);
    double s = 0;
    for (int i = 1; i < 2000; ++i) s += divide(1.0, i) - divide(-2.0, 3 * i);
    float f = fdivide(1.0f, 3.0f);
    long double l = ldivide(1.0L, 3.0L);
    int still = fegetround() == modes[m];
    fesetround(FE_TONEAREST);
    printf("%s: %a %a %La same_mode=%d\n", names[m], s, (double)f, l, still);
  }
  return 0;
}
