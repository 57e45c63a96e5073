/* Per-thread counters (abi.h, "Per-thread counters"): each thread's copy of
 * the counter arrays, which %gs points at, and the sums into the
 * .atomx.counters section.
 *
 * A copy is one anonymous mapping: a page with its header, then
 * countersSize bytes that mirror the section (%gs points there).  The
 * copies form a list that only grows (pushed with a compare-and-swap; the
 * head is the descriptor's threadCopies), so a thread never waits for
 * another and a forked child finds the list whole.  A copy belongs to the
 * thread whose id is its owner.  When a thread needs a copy, it takes the
 * first one whose owner has ended (the kernel knows no such thread in this
 * process: that also covers the threads of the parent of a forked child),
 * adds it to the section and zeroes it; only if there is none does it map a
 * new one.  So a program that starts a million short threads keeps as many
 * copies as it ever had threads running at once.
 *
 * Everything here runs with signals blocked (a handler in the program may
 * itself be an entry that registers) and uses raw system calls only: the
 * first registration may come from an IFUNC resolver, before libc is up. */
#include "stub.h"
#include "../sys.h"

_Static_assert(STUB_GLIBC_TID_OFFSET == ATOMX_GLIBC_TID_OFFSET, "slots.S");
_Static_assert(STUB_COUNTERS_OWNER_OFFSET == ATOMX_COUNTERS_OWNER_OFFSET, "slots.S");

#define COPY_HEADER_BYTES 4096u

struct copy {
  struct copy *next;
  uint32_t owner; /* thread id; 0: none */
  uint32_t pad;
};

static uint64_t *section(const AtomxDescriptor *d) {
  const uint64_t bias = (uint64_t)d - d->self; /* d->bias may not be written yet */
  return (uint64_t *)(d->counters + bias);
}

static uint64_t *counts_of(struct copy *c) { return (uint64_t *)((char *)c + COPY_HEADER_BYTES); }

/* Adds words [first, end) of a copy to the section and zeroes them.  The
 * copy's thread may still be running (ProgramAfter): each word is taken
 * with an exchange, so an increment is in the sum or left in the copy,
 * never lost twice or counted twice. */
static void add_words(uint64_t *to, uint64_t *from, uint64_t first, uint64_t end) {
  for (uint64_t i = first; i < end; i++) {
    if (__atomic_load_n(&from[i], __ATOMIC_RELAXED) == 0) continue;
    const uint64_t v = __atomic_exchange_n(&from[i], 0, __ATOMIC_ACQ_REL);
    if (v) __atomic_fetch_add(&to[i], v, __ATOMIC_RELAXED);
  }
}

/* Adds the copy to the section and zeroes it.  Most of a copy's pages are
 * never written (the counts of procedures the thread did not run, and the
 * derived counts, which only the end writes, in the section): a page that
 * the kernel says is neither in memory nor swapped out (/proc/self/pagemap)
 * holds zeros and is not read, which would fault it in.  Without pagemap,
 * or where it does not say that the copy's header (written when the copy
 * was made) is there, every page is read. */
static void add_copy(const AtomxDescriptor *d, struct copy *c) {
  uint64_t *to = section(d), *from = counts_of(c);
  const uint64_t n = d->countersSize / 8, pages = (d->countersSize + 4095) / 4096;
  long fd = sys_open_read("/proc/self/pagemap");
  uint64_t entries[512];
  if (fd >= 0 && (sys_pread((int)fd, entries, 8, (long)((uint64_t)c / 4096 * 8)) != 8 || (entries[0] >> 62) == 0)) {
    sys_close((int)fd);
    fd = -1;
  }
  for (uint64_t p = 0; p < pages; p += 512) {
    const uint64_t batch = pages - p < 512 ? pages - p : 512;
    const long offset = (long)(((uint64_t)from / 4096 + p) * 8);
    const int known = fd >= 0 && sys_pread((int)fd, entries, batch * 8, offset) == (long)(batch * 8);
    for (uint64_t k = 0; k < batch; k++) {
      if (known && (entries[k] >> 62) == 0) continue; /* neither present (bit 63) nor swapped (62) */
      const uint64_t first = (p + k) * 512, end = first + 512 < n ? first + 512 : n;
      add_words(to, from, first, end);
    }
  }
  if (fd >= 0) sys_close((int)fd);
}

static struct copy *claim_copy(AtomxDescriptor *d, uint32_t tid) {
  const long pid = sys_getpid();
  struct copy *head = (struct copy *)__atomic_load_n(&d->threadCopies, __ATOMIC_ACQUIRE);
  for (struct copy *c = head; c; c = c->next) {
    uint32_t owner = __atomic_load_n(&c->owner, __ATOMIC_ACQUIRE);
    if (owner == tid) return c; /* ours already: this id's earlier thread ended */
    if (owner != 0 && sys_tgkill(pid, owner, 0) != -STUB_ESRCH) continue;
    if (!__atomic_compare_exchange_n(&c->owner, &owner, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    add_copy(d, c);
    return c;
  }
  const uint64_t bytes = (COPY_HEADER_BYTES + d->countersSize + 4095) & ~(uint64_t)4095;
  const long m = sys_mmap_anonymous(bytes);
  if (m < 0 && m > -4096) stub_fail("cannot map a thread's counters", 0, 0);
  struct copy *c = (struct copy *)m;
  c->owner = tid;
  c->next = head;
  while (!__atomic_compare_exchange_n(&d->threadCopies, (uint64_t *)&c->next, (uint64_t)c, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
  }
  return c;
}

static uint32_t tcb_word(int offset) {
  uint32_t v;
  __asm__ volatile("movl %%fs:(%1), %0" : "=r"(v) : "r"((long)offset) : "memory");
  return v;
}

/* Slot 72's C half (the slot keeps every register and the flags). */
void atomx_thread_counters(void) {
  AtomxDescriptor *d = stub_descriptor();
  if (!d->perThreadCounters) return;
  const uint32_t tid = tcb_word(ATOMX_GLIBC_TID_OFFSET);
  if (tid == tcb_word(ATOMX_COUNTERS_OWNER_OFFSET)) return;
  if (tid != (uint32_t)sys_gettid())
    stub_fail("per-thread counters need glibc's thread control block (a thread's id at %fs:0x2d0);",
              " rewrite the program with --counters atomic", 0);
  const uint64_t all = ~(uint64_t)0;
  uint64_t old;
  sys_sigprocmask_set(&all, &old);
  unsigned long gs = 0;
  sys_arch_prctl(STUB_ARCH_GET_GS, (unsigned long)&gs);
  int known = gs == 0;
  for (struct copy *c = (struct copy *)d->threadCopies; c && !known; c = c->next) known = (unsigned long)counts_of(c) == gs;
  if (!known) stub_fail("the program has set %gs's base itself; rewrite it with --counters atomic", 0, 0);
  struct copy *c = claim_copy(d, tid);
  if (sys_arch_prctl(STUB_ARCH_SET_GS, (unsigned long)counts_of(c)) != 0) stub_fail("cannot set %gs's base", 0, 0);
  __asm__ volatile("movl %0, %%fs:(%1)" : : "r"(tid), "r"((long)ATOMX_COUNTERS_OWNER_OFFSET) : "memory");
  sys_sigprocmask_set(&old, 0);
}

/* ProgramAfter, before its calls: every copy into the section. */
void atomx_counters_total(AtomxDescriptor *d) {
  if (!d->perThreadCounters) return;
  for (struct copy *c = (struct copy *)d->threadCopies; c; c = c->next) add_copy(d, c);
}
