/* A counter kept in a register through a loop (analysis/CounterPromotion.h)
 * beside other inserted code that wants a dead register in the same loop.
 * spin()'s loop, written in assembly so that its registers are known,
 * keeps every caller-saved register but %r11 live from one iteration to the
 * next and after the loop; %r11 it writes once before the loop and never
 * again: %r11 is the one register a promoted counter can take there, and
 * the only dead one a prediction (Counters::predict) could take for its
 * state; the callee-saved ones stay live (spin saves none).
 * walk() is an ordinary loop over memory with two exits.
 * nest(), in assembly again, is a loop in a loop, each with a branch of its
 * own that needs a counter: the inner loop's and the outer loop's go in
 * registers at once, and every register either could take (%r11 first) is
 * free in both (nest writes %r11 before the loops, so it is dead at the
 * return and taken without a save: a saved one would survive the inner loop
 * by its restore), so only keeping the inner loop's from the outer's keeps
 * them apart. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long spin(long n) {
  long acc = 0, c = 1, d = 2, si = 3;
  register long r8 __asm__("r8") = 4;
  register long r9 __asm__("r9") = 5;
  register long r10 __asm__("r10") = 6;
  __asm__ volatile(
      "xor %%r11d, %%r11d\n"
      "1:\n"
      "  add $1, %%rcx\n"
      "  add %%rcx, %%rdx\n"
      "  add %%rdx, %%rsi\n"
      "  add %%rsi, %%r8\n"
      "  add %%r8, %%r9\n"
      "  test $3, %%cl\n"
      "  jz 2f\n"
      "  add %%r9, %%r10\n"
      "2:\n"
      "  add $1, %%rax\n"
      "  cmp %%rdi, %%rax\n"
      "  jne 1b\n"
      : "+a"(acc), "+c"(c), "+d"(d), "+S"(si), "+r"(r8), "+r"(r9), "+r"(r10)
      : "D"(n)
      : "r11", "cc");
  return acc + c + d + si + r8 + r9 + r10;
}

__attribute__((noinline)) long walk(const unsigned char *p, long n, unsigned char stop) {
  long i = 0, sum = 0;
  for (; i < n; ++i) {
    if (p[i] == stop) break;
    sum += p[i] & 1 ? p[i] : -1;
  }
  return sum + i;
}

__attribute__((noinline)) long nest(long n) {
  long acc, i, j;
  __asm__ volatile(
      "xor %%eax, %%eax\n"
      "xor %%r11d, %%r11d\n"
      "mov %%rdi, %%rsi\n"
      "1:\n"
      "  test $1, %%sil\n"
      "  jz 2f\n"
      "  add $3, %%rax\n"
      "  jmp 3f\n"
      "2:\n"
      "  add $5, %%rax\n"
      "3:\n"
      "  mov %%rsi, %%rcx\n"
      "  and $7, %%rcx\n"
      "  add $1, %%rcx\n"
      "4:\n"
      "  test $2, %%cl\n"
      "  jz 5f\n"
      "  add %%rcx, %%rax\n"
      "5:\n"
      "  sub $1, %%rcx\n"
      "  jnz 4b\n"
      "  sub $1, %%rsi\n"
      "  jnz 1b\n"
      : "=&a"(acc), "=&S"(i), "=&c"(j)
      : "D"(n)
      : "r11", "cc");
  return acc;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100003;
  unsigned char buf[4096];
  for (int k = 0; k < 4096; ++k) buf[k] = (unsigned char)(k * 37 + 11);
  long total = 0;
  for (int r = 0; r < 7; ++r) total += spin(n + r) + walk(buf, 4096, (unsigned char)(r * 50)) + nest(n / 7 + r + 1);
  printf("%ld\n", total);
  return 0;
}
