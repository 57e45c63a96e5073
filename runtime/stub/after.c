/* Slots 8 (original_address) and 16 (program_after), and the two ways the
 * runtime itself reaches program_after: the exit handler and the handler for
 * fatal signals. */
#include "stub.h"
#include "../sys.h"
#include "../../include/atomx/trace_format.h"

/* Slot 8.  Inside the moved code: the greatest map entry whose new offset is
 * at or below the address, plus the distance from it (inserted code: the
 * instruction it stands before).  Elsewhere the code did not move, so only
 * the bias is removed. */
uint64_t atomx_original_address(uint64_t runTime) {
  const AtomxDescriptor *d = stub_descriptor();
  uint64_t a = runTime - d->bias;
  if (a < d->newCodeStart || a >= d->newCodeEnd) return a;
  const AtomxAddressPair *map = (const AtomxAddressPair *)(d->addressMap + d->bias);
  const int64_t o = atomx_map_original_offset(map, d->addressMapCount, a - d->mapBase);
  return o < 0 ? a : d->mapBase + (uint64_t)o;
}

/* programAfterDone: 0 = not started; kRunning | tid = running in thread tid;
 * kDone = finished.  (Thread ids are below 2^22, so they never reach the
 * kRunning bit.) */
enum { kDone = 1u, kRunning = 0x80000000u };

/* Another thread is running ProgramAfter: wait until it is done, so a thread
 * that goes on to end the process (a fatal signal, _exit) does not cut the
 * analysis output short.  Do not wait for ourselves (a signal arriving while
 * this thread runs ProgramAfter), nor for a thread that does not exist in
 * this process (a child forked while another thread was running it). */
static void wait_for_program_after(uint32_t *flag) {
  long pid = sys_getpid(), tid = sys_gettid();
  for (;;) {
    uint32_t v = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
    if (!(v & kRunning)) return;
    long runner = v & ~kRunning;
    if (runner == tid || sys_tgkill(pid, runner, 0) == -STUB_ESRCH) return;
    struct stub_timespec timeout = {0, 50 * 1000 * 1000};
    sys_futex_wait(flag, v, &timeout);
  }
}

/* A child of vfork (or clone with CLONE_VM) runs in its parent's memory:
 * ProgramAfter there would use up the parent's once-only flag and report the
 * parent's analysis state as the child's.  atomx calls program_after before
 * the program's own _exit, and `if (vfork() == 0) { execve(...); _exit(127); }`
 * is common.  (If kcmp is not available, e.g. blocked by seccomp, assume
 * an ordinary process.) */
static int shares_parent_memory(void) { return sys_kcmp_vm(sys_getpid(), sys_getppid()) == 0; }

/* Slot 16.  Once per process: every thread's counters added up (when they
 * are per thread), the ProgramAfter bodies in order, then the
 * analysis object's finish routine (its exit handlers and stdio flush) --
 * or, when the end is deferred, the counters' dump instead.  A forked child
 * inherits the flag as it is at fork time; a vfork child does nothing. */
/* The ProgramAfter bodies use the analysis libc, which must have been set
 * up in this thread: the thread that ends the process may never have made
 * an inserted call (a worker calling exit). */
static void start_analysis_thread(const AtomxDescriptor *d) {
  if (!d->threadStart) return;
  char ready;
  __asm__ volatile("movb %%fs:(%1), %0" : "=r"(ready) : "r"(d->threadFlag) : "memory");
  if (!ready) ((AtomxBody)d->threadStart)();
}

void atomx_program_after(void) {
  AtomxDescriptor *d = stub_descriptor();
  if (shares_parent_memory()) return;
  uint32_t expected = 0;
  uint32_t mine = kRunning | (uint32_t)sys_gettid();
  if (!__atomic_compare_exchange_n(&d->programAfterDone, &expected, mine, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    wait_for_program_after(&d->programAfterDone);
    return;
  }
  start_analysis_thread(d);
  atomx_counters_total(d); /* per-thread counters: the calls below see the totals */
  if (d->deferredEnd && !d->replaying) {
    atomx_end_write(d); /* the calls run later, in a replay (abi.h, "Deferred end") */
  } else {
    const uint64_t *after = (const uint64_t *)(d->afterBodies + d->bias);
    for (uint64_t i = 0; i < d->afterCount; i++) ((AtomxBody)(after[i] + d->bias))();
    if (d->finish) ((AtomxBody)d->finish)();
  }
  __atomic_store_n(&d->programAfterDone, kDone, __ATOMIC_RELEASE);
  sys_futex_wake_all(&d->programAfterDone);
}

/* Registered with the program's __cxa_atexit at start-up. */
void atomx_after_at_exit(void *unused) { atomx_program_after(); }

/* A fatal signal in a loop that keeps the trace's cursor in a register
 * (AtomxCursorRegion, include/atomx/address_map.h): the thread pointer's
 * copy is made current first, so that the trace recorder's last chunk,
 * which ProgramAfter writes, has the loop's records.  `context` is the
 * kernel's ucontext: its general registers from byte 40, in the kernel's
 * order (REG_R8 = 0 ... REG_RIP = 16). */
static void sync_trace_cursor(const void *context) {
  const AtomxDescriptor *d = stub_descriptor();
  if (!context || !d->cursorRegionCount) return;
  static const int kIndex[16] = {13, 14, 12, 11, 15, 10, 9, 8, 0, 1, 2, 3, 4, 5, 6, 7}; /* hardware number -> gregs */
  const uint64_t *gregs = (const uint64_t *)((const char *)context + 40);
  const uint64_t rip = gregs[16] - d->bias;
  if (rip < d->newCodeStart || rip >= d->newCodeEnd) return;
  const int r = atomx_cursor_register((const AtomxCursorRegion *)(d->cursorRegions + d->bias), d->cursorRegionCount,
                                      rip - d->mapBase);
  if (r >= 0) __asm__ volatile("mov %0, %%fs:%c1" : : "r"(gregs[kIndex[r]]), "i"(ATOMX_TRACE_CURSOR_OFFSET) : "memory");
}

/* Installed on fatal signals left at SIG_DFL.  Runs ProgramAfter, then puts
 * SIG_DFL back and sends the signal again to this thread: it is blocked until
 * this handler returns (the handler's mask blocks everything), then kills the
 * process exactly as the first one would have (status, core dump).  A
 * synchronous fault would also recur when the instruction is re-executed. */
void atomx_after_fatal_signal(int sig, void *info, void *context) {
  sync_trace_cursor(context);
  atomx_program_after();
  struct stub_kernel_sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  sys_rt_sigaction(sig, &dfl, 0);
  sys_tgkill(sys_getpid(), sys_gettid(), sig);
}
