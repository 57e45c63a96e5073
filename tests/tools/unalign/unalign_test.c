/* The unalign tool's test program: memory accesses whose addresses, sizes
 * and alignment are known exactly (check_unalign.py computes the expected
 * counts from the layout below; keep the two in step).  Every access the
 * functions make is a volatile access or inline assembly, so the compiler
 * emits exactly one instruction of the stated size per access.  All data
 * lives in `buf`, aligned to 64 bytes.
 *   sweep32(buf, 128)        4-byte loads at buf+0 .. buf+127
 *   store64(buf+512, 32)     8-byte stores at buf+512+3+8k
 *   packed_fill/packed_sum   15-byte packed records at buf+1024: 1, 2, 4
 *                            and 8-byte fields at offsets 0, 1, 3, 7
 *   sse_loads(buf+2048, 16)  16-byte movdqu at buf+2048+4j
 *   rep_copy                 rep movsl to buf+3072+1 from buf+3200, %rcx = 10,
 *                            then %rcx = 0 (no access)
 *   aligned_work             naturally aligned accesses only
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char buf[4096] __attribute__((aligned(64)));

struct __attribute__((packed)) rec {
  uint8_t tag;
  uint16_t s;
  uint32_t i;
  uint64_t l;
};

__attribute__((noinline)) uint32_t sweep32(const unsigned char *p, int n) {
  uint32_t sum = 0;
  for (int i = 0; i < n; i++) sum += *(const volatile uint32_t *)(p + i);
  return sum;
}

__attribute__((noinline)) void store64(unsigned char *p, int n) {
  for (int k = 0; k < n; k++) *(volatile uint64_t *)(p + 3 + 8 * k) = (uint64_t)k * 0x0101010101010101u;
}

__attribute__((noinline)) void packed_fill(volatile struct rec *r, int n) {
  for (int k = 0; k < n; k++) {
    r[k].tag = (uint8_t)k;
    r[k].s = (uint16_t)(k * 3);
    r[k].i = (uint32_t)k * 1000u;
    r[k].l = (uint64_t)k << 33;
  }
}

__attribute__((noinline)) uint64_t packed_sum(const volatile struct rec *r, int n) {
  uint64_t sum = 0;
  for (int k = 0; k < n; k++) sum += r[k].s + r[k].i + r[k].l;
  return sum;
}

__attribute__((noinline)) void sse_loads(const unsigned char *p, int n) {
  for (int j = 0; j < n; j++) __asm__ volatile("movdqu (%0), %%xmm0" : : "r"(p + 4 * j) : "xmm0", "memory");
}

__attribute__((noinline)) void rep_copy(unsigned char *dst, const unsigned char *src, long n) {
  __asm__ volatile("rep movsl" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

__attribute__((noinline)) uint64_t aligned_work(int n) {
  volatile uint64_t *q = (volatile uint64_t *)(buf + 3584);
  volatile uint32_t *w = (volatile uint32_t *)(buf + 3840);
  uint64_t sum = 0;
  for (int k = 0; k < n; k++) {
    q[k] = (uint64_t)k;
    w[k] = (uint32_t)k;
    sum += q[k] + w[k];
  }
  return sum;
}

int main(void) {
  for (int i = 0; i < 512; i++) buf[i] = (unsigned char)(i * 7);
  uint32_t a = sweep32(buf, 128);
  store64(buf + 512, 32);
  packed_fill((volatile struct rec *)(buf + 1024), 40);
  uint64_t b = packed_sum((const volatile struct rec *)(buf + 1024), 40);
  sse_loads(buf + 2048, 16);
  rep_copy(buf + 3072 + 1, buf + 3200, 10);
  rep_copy(buf + 3072 + 1, buf + 3200, 0);
  uint64_t c = aligned_work(16);
  printf("%u %llu %llu %u\n", a, (unsigned long long)b, (unsigned long long)c, buf[3073]);
  return 0;
}
