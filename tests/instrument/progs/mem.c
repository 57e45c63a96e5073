/* Memory accesses whose addresses the program knows itself; it writes them to
 * addrs.txt (not stdout: they change from run to run).
 *   touch_globals: RIP-relative loads/stores of garr[3], garr[7], garr[11]
 *   touch_local:   a store to a local whose address it prints
 *   touch_tls:     %fs-relative accesses to a __thread variable
 *   stack_ops:     (assembly) mov %rsp,(%rdi); push/pop; call; rep movsb; ret */
#include <stdio.h>
#include <string.h>

long garr[16];
__thread long tls_var = 3;
FILE *addrs;

__attribute__((noipa)) long touch_globals(void) {
  garr[3] = 11;
  garr[7] += 5;
  return garr[11];
}
__attribute__((noipa)) void touch_local(void) {
  volatile long loc;
  loc = 17;
  fprintf(addrs, "local %p\n", (void *)&loc);
}
__attribute__((noipa)) void touch_tls(void) { tls_var += 2; }

void stack_ops(long *out, char *dst, const char *src);
__asm__(".text\n.globl leaf_ret\n.type leaf_ret,@function\nleaf_ret:\n  ret\n.size leaf_ret, .-leaf_ret\n"
        ".globl stack_ops\n.type stack_ops,@function\nstack_ops:\n"
        "  mov %rsp, (%rdi)\n  push %rbx\n  pop %rbx\n  call leaf_ret\n"
        "  mov %rdx, %rax\n  mov %rsi, %rdi\n  mov %rax, %rsi\n  mov $16, %ecx\n  rep movsb\n  ret\n"
        ".size stack_ops, .-stack_ops\n");

int main(void) {
  addrs = fopen("addrs.txt", "w");
  fprintf(addrs, "garr %p\n", (void *)garr);
  fprintf(addrs, "tls %p\n", (void *)&tls_var);
  long r = touch_globals();
  touch_local();
  touch_tls();
  long out[1];
  static char src[32] = "0123456789abcdefghij", dst[32];
  stack_ops(out, dst, src);
  fprintf(addrs, "out %p\nsp %#lx\ndst %p\nsrc %p\n", (void *)out, out[0], (void *)dst, (void *)src);
  fclose(addrs);
  printf("%ld %ld %ld %s\n", r, garr[3], tls_var, dst);
  return 0;
}
