/* The clobber tool's analysis routine: uses (and leaves dirty) everything a
 * C function may use: caller-saved general registers, flags, x87, SSE and
 * AVX registers (upper halves too), MXCSR (restored on the way out, as the
 * ABI requires), errno, stdio, malloc, a 64 KiB memcpy and a system call.
 * The program it runs in must behave exactly as without it.
 * (No libm: atomx links the analysis object without -lm, so the rounding
 * mode is switched with ldmxcsr/fldcw directly.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG 65536
static char src[BIG], dst[BIG];
static float fa[1024], fb[1024];
static unsigned long calls;
static FILE *devnull;
volatile double dsink;
volatile unsigned long usink;

/* A loop gcc vectorises (SSE at -O2/-O3; AVX2 in the avx2 clone). */
__attribute__((optimize("O3"))) static void vec_loop(float k) {
  for (int i = 0; i < 1024; ++i) fa[i] = fa[i] * k + fb[i];
}
__attribute__((target("avx2"), optimize("O3"))) static void vec_loop_avx2(float k) {
  for (int i = 0; i < 1024; ++i) fb[i] = fb[i] * k - fa[i];
  /* Leave every ymm register dirty, upper halves included. */
  __asm__ volatile("vpcmpeqb %%ymm0, %%ymm0, %%ymm0\n\t"
                   "vmovdqa %%ymm0, %%ymm1\n\tvmovdqa %%ymm0, %%ymm2\n\tvmovdqa %%ymm0, %%ymm3\n\t"
                   "vmovdqa %%ymm0, %%ymm4\n\tvmovdqa %%ymm0, %%ymm5\n\tvmovdqa %%ymm0, %%ymm6\n\t"
                   "vmovdqa %%ymm0, %%ymm7\n\tvmovdqa %%ymm0, %%ymm8\n\tvmovdqa %%ymm0, %%ymm9\n\t"
                   "vmovdqa %%ymm0, %%ymm10\n\tvmovdqa %%ymm0, %%ymm11\n\tvmovdqa %%ymm0, %%ymm12\n\t"
                   "vmovdqa %%ymm0, %%ymm13\n\tvmovdqa %%ymm0, %%ymm14\n\tvmovdqa %%ymm0, %%ymm15"
                   ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

void Clobber(long period, long pc, long rbp) {
  unsigned saved_mxcsr;
  unsigned short saved_fcw, fcw;
  __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(saved_mxcsr), "=m"(saved_fcw));
  ++calls;
  /* Caller-saved general registers and the flags. */
  __asm__ volatile("mov $-1, %%rax\n\tmov %%rax, %%rcx\n\tmov %%rax, %%rdx\n\tmov %%rax, %%rsi\n\t"
                   "mov %%rax, %%rdi\n\tmov %%rax, %%r8\n\tmov %%rax, %%r9\n\tmov %%rax, %%r10\n\t"
                   "mov %%rax, %%r11\n\tadd $1, %%rax\n\tstc"
                   ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc");
  /* MXCSR: another rounding mode, flush-to-zero, exceptions flagged. */
  fcw = (unsigned short)((saved_fcw & ~0x0c00) | 0x0800); /* x87: round up */
  __asm__ volatile("fldcw %0" :: "m"(fcw));
  unsigned mxcsr = 0x7f80 | (1u << 15) | 0x3f;  /* all masked, FTZ, round toward zero, all flags */
  __asm__ volatile("ldmxcsr %0" :: "m"(mxcsr));
  double x = (double)pc + 0.5, y = (double)rbp;
  __asm__ volatile("sqrtsd %1, %0" : "=x"(x) : "x"(x));
  dsink = x / 3.0 + y * y * 1e-30 - y / 7.0;
  /* x87 */
  long double ld = (long double)pc / 7.0L;
  dsink += (double)(ld * ld);
  vec_loop(1.0001f);
  if (__builtin_cpu_supports("avx2")) vec_loop_avx2(0.999f);
  errno = 4242;
  if (period <= 1 || calls % (unsigned long)period == 0) {
    char buf[256];
    memset(src, (int)calls, BIG);
    memcpy(dst, src, BIG);
    memmove(dst + 1, dst, BIG - 1);
    snprintf(buf, sizeof buf, "pc=%#lx rbp=%#lx %g %Lg", pc, rbp, dsink, ld);
    if (!devnull) devnull = fopen("/dev/null", "w");
    if (devnull) fprintf(devnull, "%s %.17g\n", buf, dsink);
    char *p = malloc(1000 + calls % 5000);
    if (p) {
      memset(p, 1, 1000);
      usink += (unsigned long)p[999];
    }
    free(p);
    usink += (unsigned long)getppid();
  }
  /* Control bits of MXCSR and the x87 control word are callee-saved. */
  __asm__ volatile("ldmxcsr %0\n\tfldcw %1" :: "m"(saved_mxcsr), "m"(saved_fcw));
}

void ClobberDone(long period) {
  if (devnull) fclose(devnull);
}
