/* Operands of many kinds for instrument.operands.* (Inst::operand,
 * memOperand, flagsMaybeWritten, condition, isScalarVector, isRepeated),
 * checked against objdump: scalar and packed SSE, x87 on floats and
 * integers, and in asm that never runs, string instructions, shifts by 1,
 * %cl and an immediate, fcmovcc, AVX and AVX-512 forms.  Instrumented only,
 * never run instrumented. */
#include <emmintrin.h>
#include <stdio.h>

__attribute__((noinline)) double scalar(double a, float b, int n, long m) {
  return a * b + (double)n / (double)m + (float)(a - b);  /* mulsd, cvtss2sd, cvtsi2sd, cvtsd2ss ... */
}

__attribute__((noinline)) long double extended(long double x, int n, long long m, float f, double d, short s) {
  return x * n + m + f + d - s;  /* fldt, fildl, fildll, flds, fldl, filds, fmulp ... */
}

__attribute__((noinline)) int packed(const short* p, double* out, int v, long w) {
  __m128i a = _mm_loadu_si128((const __m128i*)p);
  __m128i b = _mm_unpacklo_epi16(a, _mm_cvtsi32_si128(v)); /* punpcklwd, movd */
  b = _mm_add_epi64(b, _mm_cvtsi64_si128(w));               /* paddq, movq */
  __m128d d = _mm_mul_pd(_mm_loadu_pd(out), _mm_set1_pd(2.0));
  d = _mm_xor_pd(d, _mm_set1_pd(-0.0));
  _mm_storel_pd(out, d); /* movlpd */
  _mm_storeu_pd(out + 2, d);
  __m128 f = _mm_add_ps(_mm_cvtepi32_ps(b), _mm_set1_ps(1.5f));
  return _mm_movemask_epi8(_mm_srli_si128(b, 4)) + _mm_extract_epi16(b, 1) + _mm_cvtsi128_si32(b) +
         _mm_movemask_ps(f);
}

__attribute__((noinline, used)) void never_run(void) {
  __asm__ volatile(
      "rep stosb\n repe cmpsb\n repne scasb\n movsq\n"
      "shl %%eax\n shl %%cl, %%eax\n shl $3, %%eax\n shr $4, %%cl\n rcl %%cl, %%edx\n sar %%cl, %%rdx\n"
      "fcmovb %%st(1), %%st\n fcmove %%st(1), %%st\n fcmovbe %%st(1), %%st\n fcmovu %%st(1), %%st\n"
      "fcmovnb %%st(1), %%st\n fcmovne %%st(1), %%st\n fcmovnbe %%st(1), %%st\n fcmovnu %%st(1), %%st\n"
      "fistpll 8(%%rsp)\n fisttpl 8(%%rsp)\n fstps 8(%%rsp)\n fldt 8(%%rsp)\n fnstcw 8(%%rsp)\n"
      "maskmovdqu %%xmm1, %%xmm0\n vaddsd %%xmm2, %%xmm1, %%xmm0\n vaddpd %%ymm2, %%ymm1, %%ymm0\n"
      "vmovdqu8 %%zmm0, (%%rdi)%{%%k1%}\n vpaddd %%zmm1, %%zmm2, %%zmm3\n vpaddd 64(%%rax)%{1to16%}, %%zmm2, %%zmm3%{%%k2%}%{z%}\n"
      "movq %%xmm0, %%xmm1\n movq %%rax, %%xmm2\n movd %%xmm3, %%ecx\n vmovq %%xmm0, (%%rax)\n"
      "pushq 8(%%rsp)\n popq 8(%%rsp)\n mov %%fs:0x28, %%rax\n xchg %%eax, (%%rdi)\n lock xadd %%ecx, (%%rdi)\n"
      "lea 8(%%rax,%%rbx,4), %%rcx\n imul $3, %%rax, %%rbx\n mul %%rcx\n cqto\n movzbl (%%rsi), %%eax\n"
      "mov %%ah, %%bl\n mov %%r9w, %%r10w\n mov %%sil, (%%rdx,%%rcx,2)\n" ::
          : "memory");
}

int main(int argc, char** argv) {
  short s[8] = {1, 2, 3, 4, 5, 6, 7, (short)argc};
  double out[4] = {1, 2, 3, 4};
  printf("%g %Lg %d\n", scalar(1.5, 2.5f, argc, 3), extended(1.25L, argc, 7, 0.5f, 0.25, 2),
         packed(s, out, argc, argc + 1));
  return argv[0][0] == 0;
}
