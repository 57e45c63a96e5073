/* avx.c -- pitfall 11: VEX (AVX2) and EVEX (AVX-512) encoded instructions.
 *
 * A rewriter has to decode every instruction of a procedure to find its
 * length and its rip-relative operands.  EVEX (4-byte 0x62 prefix, opmask
 * registers, {z}, embedded broadcast, disp8*N compressed displacements) and
 * VEX instructions that address memory rip-relatively must be copied and
 * their displacement adjusted like any other.  The AVX-512 code is only
 * executed when the CPU has avx512f (it exists in the binary either way, so
 * it must still be decoded and moved correctly); the AVX2 code runs on any
 * x86-64-v3 machine; both have scalar fallbacks producing the same output.
 * target_clones() additionally makes gcc emit an IFUNC: a resolver in the
 * executable that the dynamic linker calls at start-up through an
 * R_X86_64_IRELATIVE relocation, and that returns the address of a clone.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <immintrin.h>

#define NOINLINE __attribute__((noinline))
#define N 64

static int32_t a[N], b[N], out_ref[N], out_vec[N];
/* constants referenced rip-relatively from VEX/EVEX instructions */
static const int32_t bias16[16] __asm__("avx_bias16") __attribute__((aligned(64), used)) = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const int32_t scale1 __asm__("avx_scale1") __attribute__((used)) = 3;

/* reference: out = (a + b + bias) * 3 for even lanes, unchanged a for odd */
static NOINLINE void kernel_scalar(int32_t *out)
{
    for (int i = 0; i < N; i++)
        out[i] = (i % 2 == 0) ? (a[i] + b[i] + bias16[i % 16]) * scale1 : a[i];
}

__attribute__((target("avx512f"))) static NOINLINE void kernel_avx512(int32_t *out)
{
    for (int i = 0; i < N; i += 16) {
        __m512i va = _mm512_loadu_si512(a + i);
        __m512i vb = _mm512_loadu_si512(b + i);
        __m512i sum;
        /* EVEX add with a rip-relative memory operand */
        __asm__("vpaddd avx_bias16(%%rip), %[x], %[r]"
                : [r] "=v"(sum)
                : [x] "v"(va), [bias] "m"(bias16));
        sum = _mm512_add_epi32(sum, vb);
        __m512i prod;
        /* embedded broadcast {1to16} of a rip-relative scalar */
        __asm__("vpmulld avx_scale1(%%rip)%{1to16%}, %[x], %[r]"
                : [r] "=v"(prod)
                : [x] "v"(sum), [s] "m"(scale1));
        /* opmask: even lanes take prod, odd lanes keep a */
        __mmask16 even = 0x5555;
        __m512i res = _mm512_mask_mov_epi32(va, even, prod);
        _mm512_storeu_si512(out + i, res);
    }
    /* a few more EVEX forms: {z}, disp8*N displacement, k-register logic */
    __asm__ volatile("kxnorw %%k0, %%k0, %%k1\n\t"
                     "vmovdqu32 64(%0), %%zmm2%{%%k1%}%{z%}\n\t"
                     "vmovdqu32 %%zmm2, 64(%0)\n\t" ::"r"(out)
                     : "k1", "xmm2", "memory");
}

__attribute__((target("avx2"))) static NOINLINE void kernel_avx2(int32_t *out)
{
    const __m256i evenmask = _mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0);
    for (int i = 0; i < N; i += 8) {
        __m256i va = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i vb = _mm256_loadu_si256((const __m256i *)(b + i));
        __m256i sum;
        /* VEX add with a rip-relative memory operand (disp points into bias16) */
        if ((i / 8) % 2 == 0)
            __asm__("vpaddd avx_bias16(%%rip), %[x], %[r]"
                    : [r] "=x"(sum)
                    : [x] "x"(va), [bias] "m"(*(const int32_t(*)[8])bias16));
        else
            __asm__("vpaddd avx_bias16+32(%%rip), %[x], %[r]"
                    : [r] "=x"(sum)
                    : [x] "x"(va), [bias] "m"(*(const int32_t(*)[16])bias16));
        sum = _mm256_add_epi32(sum, vb);
        __m256i prod = _mm256_mullo_epi32(sum, _mm256_set1_epi32(scale1));
        __m256i res = _mm256_blendv_epi8(va, prod, evenmask);
        _mm256_storeu_si256((__m256i *)(out + i), res);
    }
}

/* function multiversioning: IFUNC resolver + clones */
__attribute__((target_clones("avx2", "default"))) long dot(const int32_t *x, const int32_t *y,
                                                            int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += (long)x[i] * y[i];
    return s;
}

static uint32_t checksum(const int32_t *v)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < N; i++)
        h = (h ^ (uint32_t)v[i]) * 16777619u;
    return h;
}

int main(void)
{
    for (int i = 0; i < N; i++) {
        a[i] = i * 37 - 500;
        b[i] = (i * i) % 101 - 50;
    }
    kernel_scalar(out_ref);
    printf("scalar checksum %08x\n", checksum(out_ref));

    __builtin_cpu_init();
    memset(out_vec, 0, sizeof out_vec);
    if (__builtin_cpu_supports("avx512f"))
        kernel_avx512(out_vec);
    else
        kernel_scalar(out_vec);
    printf("avx512 path: %s\n", memcmp(out_ref, out_vec, sizeof out_vec) == 0 ? "match" : "MISMATCH");

    memset(out_vec, 0, sizeof out_vec);
    if (__builtin_cpu_supports("avx2"))
        kernel_avx2(out_vec);
    else
        kernel_scalar(out_vec);
    printf("avx2 path: %s\n", memcmp(out_ref, out_vec, sizeof out_vec) == 0 ? "match" : "MISMATCH");

    long (*volatile dp)(const int32_t *, const int32_t *, int) = dot;
    printf("dot = %ld, via pointer = %ld\n", dot(a, b, N), dp(a, out_ref, N));
    printf("sample: %d %d %d %d\n", out_ref[0], out_ref[1], out_ref[62], out_ref[63]);
    return 0;
}
