/* Library calls whose length is in memory only (a data trace;
 * analysis/TracePlan.h, libraryLength: strcpy, strncpy, strcmp, strncmp,
 * memcmp, bcmp, __memcmpeq, and tail jumps to strlen, strnlen, stpcpy):
 * before each, after the site's stores (its arguments, then its site number
 * in the thread's library slot, stores.h: atomx_stores_library_site), the
 * program calls atomx_trace_library, which measures the length the call
 * will touch (<atomx/libc_length.h>, the model's one definition of it),
 * writes it, eight bytes, at the thread's cursor and clears the slot.
 * instrument/TraceRecorder hands the sites to atomx_trace_library_sites
 * when the program starts.
 *
 * The write is the inline stores' protocol in a routine:
 *   - a full buffer (or none yet): the store faults on the guard page (or
 *     at 0) before writing anything, and the fault handler gives the
 *     thread a fresh buffer and points %rdx at it, as it does for a
 *     witness store (library_store_fault);
 *   - a signal: while the slot is set, from the site's last store to the
 *     routine's end, the thread is before that library call wherever the
 *     signal finds it (the call code, the routine: library_interrupted),
 *     and the mark names the call's instruction, as it would for a signal
 *     in inserted code.  The handler's records go at the cursor; a signal
 *     between the routine's read of the cursor and its write of it moves
 *     the thread back to the read (the write is repeated whole after the
 *     handler), so the length is never inside the handler's records, only
 *     before or after them: the regenerator reads it either way.  Once the
 *     slot is cleared the length is written: a signal there (the routine's
 *     return, the call code's end) finds the thread outside the trace, in
 *     effect in the library call, and its handler's records come as a
 *     callback's.  The signal wrapper (signals.c, deliver) keeps the slot
 *     aside while the program's handler runs, whose own library calls use
 *     it. */
#include "recorder.h"

#include <atomx/libc_length.h>

#include <stdlib.h>

#include "stores.h"

/* The sites: pairs (original address of the call, how its length is
 * measured: ATOMX_LIBC_*), in address order; site k (from 1) is pair k-1. */
static long siteCount;
static const long *sites;
/* For the library oracle's self-test only (tests/trace/libc_oracle.py):
 * ATOMX_TEST_LIBRARY_SHORT=N measures the process's Nth measured call (from
 * 1) one byte short. */
static uint64_t shortened, measuredCalls;

void atomx_trace_library_sites(long n, const long *table) {
  siteCount = n;
  sites = table;
  const char *v = getenv("ATOMX_TEST_LIBRARY_SHORT");
  if (v) shortened = strtoull(v, NULL, 10);
}

__attribute__((visibility("hidden"), target("general-regs-only"), optimize("no-jump-tables"))) uint64_t atomx_trace_library_length(long site, uint64_t a0,
                                                                                                          uint64_t a1, uint64_t a2) {
  uint64_t n = atomx_libc_measure((unsigned)sites[2 * (site - 1) + 1], a0, a1, a2);
  if (shortened && __atomic_add_fetch(&measuredCalls, 1, __ATOMIC_RELAXED) == shortened && n) --n;
  return n;
}

/* atomx_trace_library(site, %rdi, %rsi, %rdx): the labels are what the
 * recorder's handlers look for. */
#define LIBRARY_STR2(x) #x
#define LIBRARY_STR(x) LIBRARY_STR2(x)
__asm__(".text\n"
        ".globl atomx_trace_library\n"
        ".type atomx_trace_library, @function\n"
        "atomx_trace_library:\n"
        "  sub $8, %rsp\n"
        "  call atomx_trace_library_length\n"
        "  add $8, %rsp\n"
        ".hidden atomx_trace_library_commit\n"
        "atomx_trace_library_commit:\n"
        "  mov %fs:" LIBRARY_STR(ATOMX_TRACE_CURSOR_OFFSET) ", %rdx\n"
        ".hidden atomx_trace_library_store\n"
        "atomx_trace_library_store:\n"
        "  mov %rax, (%rdx)\n"
        "  lea 8(%rdx), %rdx\n"
        "  mov %rdx, %fs:" LIBRARY_STR(ATOMX_TRACE_CURSOR_OFFSET) "\n"
        ".hidden atomx_trace_library_committed\n"
        "atomx_trace_library_committed:\n"
        "  movq $0, %fs:" LIBRARY_STR(ATOMX_STORES_LIBRARY_SLOT) "\n"
        "  ret\n"
        ".size atomx_trace_library, .-atomx_trace_library\n");
void atomx_trace_library(long site, long a0, long a1, long a2);
extern const char atomx_trace_library_commit[], atomx_trace_library_store[], atomx_trace_library_committed[];

uint64_t library_slot_take(void) {
  uint64_t v;
  __asm__ volatile("mov %%fs:%c1, %0" : "=r"(v) : "i"(ATOMX_STORES_LIBRARY_SLOT));
  __asm__ volatile("movq $0, %%fs:%c0" : : "i"(ATOMX_STORES_LIBRARY_SLOT) : "memory");
  return v;
}
void library_slot_put(uint64_t v) { __asm__ volatile("mov %0, %%fs:%c1" : : "r"(v), "i"(ATOMX_STORES_LIBRARY_SLOT) : "memory"); }

uint64_t library_interrupted(greg_t *g) {
  uint64_t slot;
  __asm__ volatile("mov %%fs:%c1, %0" : "=r"(slot) : "i"(ATOMX_STORES_LIBRARY_SLOT));
  if (slot == 0 || (long)slot > siteCount) return 0;
  const uint64_t rip = (uint64_t)g[REG_RIP];
  if (rip >= (uint64_t)(uintptr_t)atomx_trace_library_commit && rip < (uint64_t)(uintptr_t)atomx_trace_library_committed)
    g[REG_RIP] = (greg_t)(uintptr_t)atomx_trace_library_commit; /* the write again, whole, after the handler */
  return (uint64_t)sites[2 * (slot - 1)];
}

void step_set_library_slot(uint32_t site) { library_slot_put(site); }

int library_store_fault(greg_t *g, uintptr_t addr) {
  return (uint64_t)g[REG_RIP] == (uint64_t)(uintptr_t)atomx_trace_library_store && swap_buffer(g, 2 /* %rdx */, cursor(), addr);
}
