/* Blocks and edges with hand-computed counts: loop_sum is written in
 * assembly so its blocks are known exactly:
 *   A: xor; test; jle C     (once per call; taken iff n <= 0)
 *   B: add; dec; jnz B      (n times per call with n > 0; taken n-1 times)
 *   C: ret                  (once per call)
 * classify() is a switch the compiler turns into a jump table; each case
 * calls its own procedure, with known counts. */
#include <stdio.h>

long loop_sum(long n);
__asm__(".text\n.globl loop_sum\n.type loop_sum,@function\nloop_sum:\n"
        "  xor %eax, %eax\n  test %rdi, %rdi\n  jle 2f\n"
        "1:\n  add %rdi, %rax\n  dec %rdi\n  jnz 1b\n"
        "2:\n  ret\n.size loop_sum, .-loop_sum\n");

__attribute__((noipa)) int case0(int v) { return v + 1; }
__attribute__((noipa)) int case1(int v) { return v * 3; }
__attribute__((noipa)) int case2(int v) { return v - 7; }
__attribute__((noipa)) int case3(int v) { return v ^ 5; }
__attribute__((noipa)) int case4(int v) { return v << 2; }
__attribute__((noipa)) int case5(int v) { return v >> 1; }
__attribute__((noipa)) int casedefault(int v) { return -v; }
__attribute__((noipa)) int classify(int v) {
  switch (v) {
    case 0: return case0(v);
    case 1: return case1(v);
    case 2: return case2(v);
    case 3: return case3(v);
    case 4: return case4(v);
    case 5: return case5(v);
    default: return casedefault(v);
  }
}

int main(void) {
  long s = loop_sum(10) + loop_sum(0) + loop_sum(5) + loop_sum(-3) + loop_sum(1);
  /* case counts: 0:5 1:3 2:7 3:1 4:2 5:4 default:6 */
  static const int seq[] = {0, 2, 2, 1, 5, 9, 0, 2, 4, 2, -1, 0, 3, 5, 2, 7, 1, 0, 5, 2, 100, 4, 0, 1, 5, 2, 8, 6};
  for (unsigned i = 0; i < sizeof seq / sizeof seq[0]; ++i) s += classify(seq[i]);
  printf("%ld\n", s);
  return 0;
}
