/* flush.h: what the cache simulators' test programs share (kernels.c here,
 * tests/tools/cachesim/hierarchy.c): a flush() that puts every simulated
 * cache into a known state, and the stack alignment that makes addresses
 * map to the same sets natively and under Valgrind.
 *
 * Define FLUSH_BYTES and FLUSHES before including it, and FLUSH_CODE_NOPS
 * ("16384") to flush instruction caches too.  flush() reads a fresh region
 * of a static buffer no other code touches (FLUSH_BYTES, larger than any
 * cache the tests simulate): every line of it misses under both simulators,
 * and afterwards every set of an LRU or FIFO cache holds only flush lines,
 * in the same order, whatever ld.so and libc left there (cachegrind shares
 * its caches with them); each flush uses a fresh region, so its misses never
 * depend on what libc did since the last one.  With FLUSH_CODE_NOPS it then
 * runs that many bytes of straight-line code, so an instruction cache of up
 * to that size holds only its lines.
 *
 * ALIGN_STACK(): the first statement of main.  Under Valgrind a PIE and the
 * stack are loaded elsewhere than natively, so lines of the stack and of
 * static data could fall into other sets relative to each other; this moves
 * the stack pointer (alloca) to the same place modulo 64 KB relative to the
 * static data: all addresses are then the same in both runs up to one shift
 * that is a multiple of 64 KB, which maps them to the same sets in every
 * cache the tests simulate (set index bits below bit 16). */
#include <alloca.h>
#include <stddef.h>
#include <stdint.h>

static char flush_area[FLUSHES][FLUSH_BYTES] __attribute__((aligned(64)));
static int flushes;
volatile long sink;

__attribute__((noinline)) void flush(void) {
  const char *p = flush_area[flushes++ % FLUSHES];
  long s = 0;
  for (long i = 0; i < FLUSH_BYTES; i += 16) s += p[i];
  sink = s;
#ifdef FLUSH_CODE_NOPS
  __asm__ volatile(".rept " FLUSH_CODE_NOPS "\n\tnop\n\t.endr");
#endif
}

#define ALIGN_STACK()                                                         \
  do {                                                                        \
    uintptr_t sp_ = (uintptr_t)__builtin_frame_address(0);                    \
    size_t pad_ = (sp_ - (uintptr_t)flush_area[0]) % 65536;                   \
    volatile char *gap_ = alloca(pad_ + 64);                                  \
    gap_[0] = 0;                                                              \
  } while (0)
