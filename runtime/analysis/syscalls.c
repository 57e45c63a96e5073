/* <atomx/syscalls.h>: every system call of the program, with Linux Syscall
 * User Dispatch (SUD).  See the header for what is and is not seen.
 *
 * SUD (kernel/entry/syscall_user_dispatch.c), as measured on this kernel:
 *  - per thread, and NOT inherited by clone (threads) nor fork, cleared by
 *    execve: so every child is armed by the stub (syscalls_entry.S) before
 *    it runs program code;
 *  - a `syscall` outside [atomx_sud_begin, atomx_sud_end) while the
 *    thread's selector byte is BLOCK is rolled back (%rax = number, %rip
 *    after the instruction) and SIGSYS is forced: if SIGSYS is blocked or
 *    ignored the kernel resets it to SIG_DFL and the process dies.  Hence
 *    SIGSYS is never left blocked in the program;
 *  - si_call_addr is the address after the instruction, si_syscall the
 *    number, si_arch tells `int $0x80` (i386) from `syscall`.
 *
 * The handler runs with every signal blocked and the selector at ALLOW
 * while its own code (and the hook) runs.  It makes the call with the
 * program's signal mask and the selector at BLOCK (unless the call cannot
 * block), so a signal that interrupts a blocking call runs the program's
 * handler as it would have, intercepted too; then it returns through a
 * restorer inside the allowed range.  Calls that cannot be re-issued from a
 * signal handler: clone/clone3/fork/vfork go through the stub in the
 * program's context; rt_sigreturn is emulated by returning with the
 * program's own signal frame; signal masks and actions are filtered. */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <linux/sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "atomx/syscalls.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#define SUD_ON 1
#define SUD_OFF 0
#define SEL_ALLOW 0
#define SEL_BLOCK 1
#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH 2
#endif
#define ARCH_I386 0x40000003u
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

#pragma GCC visibility push(hidden)
extern char atomx_sud_begin[], atomx_sud_end[];
long atomx_sud_raw(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
long atomx_sud_raw32(long nr, const long args[6]);
void atomx_sud_restorer(void);
void atomx_sud_spawn_stub(void);
#pragma GCC visibility pop

#define RAW0(n) atomx_sud_raw(n, 0, 0, 0, 0, 0, 0)
#define RAW3(n, a, b, c) atomx_sud_raw(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RAW4(n, a, b, c, d) atomx_sud_raw(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* Initial-exec: at a fixed offset from %fs in every thread, allocated and
 * zeroed by ld.so in each new thread; no lazy allocation in a handler. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS char tlsSelector;
static TLS int tlsTid;

static AtomxSyscallHook gHook;
static int gActive;   /* read in handlers: atomics */
static int gStarted;
static int gPid;
static struct kernel_sigaction_ {
  void *handler;
  unsigned long flags;
  void *restorer;
  uint64_t mask;
} gProgramSigsys; /* the program's own SIGSYS action, recorded, not installed */

#define SIGBIT(s) (1ull << ((s)-1))

/* --- the analysis namespace's code: its calls are made, not reported -------- */
struct range { uintptr_t lo, hi; };
static struct range gOwn[32];
static int gOwnCount;

static int collect_own(struct dl_phdr_info *info, size_t size, void *unused) {
  (void)size, (void)unused;
  /* ld.so is shared by every namespace, and the vDSO is the program's:
   * calls from either are the program's. */
  if (info->dlpi_addr == getauxval(AT_BASE) || info->dlpi_addr == getauxval(AT_SYSINFO_EHDR)) return 0;
  if (info->dlpi_name && (strstr(info->dlpi_name, "/ld-linux") || strstr(info->dlpi_name, "linux-vdso"))) return 0;
  for (int k = 0; k < info->dlpi_phnum && gOwnCount < 32; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
      gOwn[gOwnCount++] = (struct range){info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
  }
  return 0;
}

static int is_own(uintptr_t pc) {
  for (int k = 0; k < gOwnCount; k++)
    if (pc - gOwn[k].lo < gOwn[k].hi - gOwn[k].lo) return 1;
  return 0;
}

/* --- time, reports ------------------------------------------------------------------ */
static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t); /* the vDSO: no system call */
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* Results of clone/fork in the parent, written by the stub's C half (no
 * vector registers there: it runs in the program's context) and reported
 * at the next handler entry in any thread, or at Stop. */
enum { kFree, kWriting, kFull, kReading };
struct pending {
  int state;
  struct AtomxSyscall call;
};
static struct pending gPending[64];
static int gPendingCount;

/* analysis.c: the analysis libc's per-thread set-up.  The runtime runs it
 * at a thread's first heavy inserted call; a thread may make system calls
 * (and end the process, running ProgramAfter) without ever running one.
 * Not yet run means this thread has never been inside analysis code that
 * can reach libc (light code calls nothing), so it holds none of the
 * analysis libc's locks: safe to run from the handler. */
extern __thread char atomx_analysis_thread_ready __attribute__((tls_model("initial-exec")));
void atomx_analysis_thread_start(void);

static void report(const struct AtomxSyscall *c) {
  AtomxSyscallHook hook = __atomic_load_n(&gHook, __ATOMIC_ACQUIRE);
  if (!hook || !__atomic_load_n(&gActive, __ATOMIC_ACQUIRE)) return;
  if (!atomx_analysis_thread_ready) atomx_analysis_thread_start();
  hook(c);
}

static void flush_pending(void) {
  if (__atomic_load_n(&gPendingCount, __ATOMIC_ACQUIRE) == 0) return;
  for (int k = 0; k < 64; k++) {
    int expected = kFull;
    if (!__atomic_compare_exchange_n(&gPending[k].state, &expected, kReading, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      continue;
    struct AtomxSyscall c = gPending[k].call;
    __atomic_store_n(&gPending[k].state, kFree, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&gPendingCount, 1, __ATOMIC_ACQ_REL);
    report(&c);
  }
}

/* --- clone, clone3, fork, vfork ------------------------------------------------------ */
struct spawn {
  int state; /* kFree or in use */
  int refs;  /* parent and child, when they share memory */
  unsigned long cloneFlags;
  uint64_t rip, rbx, mask;
  int report; /* 0 for calls from the analysis namespace */
  struct AtomxSyscall call;
};
static struct spawn gSpawn[64];

#define GENERAL_REGS __attribute__((target("general-regs-only")))

/* Runs in the stub, in the program's context, in parent and child: only
 * general registers (the program's vector registers are live), only raw
 * system calls, and every signal still blocked. */
GENERAL_REGS __attribute__((visibility("hidden"))) void atomx_sud_spawn_after(struct spawn *s, long result, uint64_t out[2]) {
  out[0] = s->rip;
  out[1] = s->rbx;
  uint64_t mask = s->mask;
  int sharesMemory = (s->cloneFlags & CLONE_VM) != 0;
  if (result == 0) {
    /* The child.  A child with its own thread pointer (a thread, a fork
     * child) gets its own selector and id; a CLONE_VM child without one
     * (vfork) shares its parent's. */
    if (!sharesMemory || (s->cloneFlags & CLONE_SETTLS)) tlsTid = (int)RAW0(SYS_gettid);
    if (!sharesMemory) {
      gPid = (int)RAW0(SYS_getpid);
      for (int k = 0; k < 64; k++) gPending[k].state = kFree;  /* the parent's, not ours */
      gPendingCount = 0;
    }
    tlsSelector = SEL_BLOCK;
    atomx_sud_raw(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_ON, (long)atomx_sud_begin,
                  atomx_sud_end - atomx_sud_begin, (long)&tlsSelector, 0);
  } else if (s->report) {
    struct timespec t;
    RAW3(SYS_clock_gettime, CLOCK_MONOTONIC, &t, 0);
    unsigned long long end = (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
    for (int k = 0;; k = (k + 1) % 64) {
      int expected = kFree;
      if (__atomic_compare_exchange_n(&gPending[k].state, &expected, kWriting, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED)) {
        struct AtomxSyscall *c = &gPending[k].call;
        /* Field by field: a struct copy could become a memcpy call. */
        c->nr = s->call.nr;
        c->args[0] = s->call.args[0], c->args[1] = s->call.args[1], c->args[2] = s->call.args[2];
        c->args[3] = s->call.args[3], c->args[4] = s->call.args[4], c->args[5] = s->call.args[5];
        c->result = result;
        c->startNs = s->call.startNs;
        c->durationNs = end - s->call.startNs;
        c->tid = s->call.tid;
        c->pid = s->call.pid;
        c->flags = s->call.flags;
        __atomic_store_n(&gPending[k].state, kFull, __ATOMIC_RELEASE);
        __atomic_fetch_add(&gPendingCount, 1, __ATOMIC_ACQ_REL);
        break;
      }
      if (k == 63) RAW0(SYS_sched_yield);
    }
  }
  /* The record: freed by the last of parent and child that uses it. */
  if (sharesMemory && result > 0) {
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) __atomic_store_n(&s->state, kFree, __ATOMIC_RELEASE);
  } else if (!sharesMemory || result < 0) {
    __atomic_store_n(&s->state, kFree, __ATOMIC_RELEASE);
  } else if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    __atomic_store_n(&s->state, kFree, __ATOMIC_RELEASE);
  }
  RAW4(SYS_rt_sigprocmask, SIG_SETMASK, &mask, 0, 8);
}

static struct spawn *claim_spawn(void) {
  for (int k = 0;; k = (k + 1) % 64) {
    int expected = kFree;
    if (__atomic_compare_exchange_n(&gSpawn[k].state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return &gSpawn[k];
    if (k == 63) RAW0(SYS_sched_yield);
  }
}

/* Reads or writes program memory that may be unmapped, without faulting
 * (the kernel would have returned EFAULT).  A vfork child's cached pid is
 * its parent's: then ask for its own. */
static int safe_copy(long nr, void *local_, const void *remote_, size_t n) {
  struct iovec local = {local_, n}, remote = {(void *)remote_, n};
  long r = atomx_sud_raw(nr, gPid, (long)&local, 1, (long)&remote, 1, 0);
  if (r < 0 && r != -EFAULT) r = atomx_sud_raw(nr, RAW0(SYS_getpid), (long)&local, 1, (long)&remote, 1, 0);
  return r == (long)n;
}
static int safe_read(void *dst, const void *src, size_t n) { return safe_copy(SYS_process_vm_readv, dst, src, n); }
static int safe_write(void *dst, const void *src, size_t n) { return safe_copy(SYS_process_vm_writev, (void *)src, dst, n); }

/* --- the handler ---------------------------------------------------------------------- */
static uint64_t *uc_mask(ucontext_t *uc) { return (uint64_t *)&uc->uc_sigmask; }

/* Calls during which no signal can usefully arrive: made with every signal
 * blocked, which saves two rt_sigprocmask calls.  Anything that may sleep
 * is made with the program's mask. */
static int cannot_block(long nr) {
  switch (nr) {
    case SYS_brk: case SYS_mmap: case SYS_munmap: case SYS_mprotect: case SYS_mremap:
    case SYS_madvise: case SYS_lseek: case SYS_fstat: case SYS_newfstatat: case SYS_statx:
    case SYS_stat: case SYS_lstat: case SYS_getpid: case SYS_gettid: case SYS_getppid:
    case SYS_getuid: case SYS_geteuid: case SYS_getgid: case SYS_getegid: case SYS_uname:
    case SYS_clock_gettime: case SYS_clock_getres: case SYS_gettimeofday: case SYS_time:
    case SYS_sched_getaffinity: case SYS_set_robust_list: case SYS_rseq: case SYS_set_tid_address:
    case SYS_prlimit64: case SYS_getrlimit: case SYS_access: case SYS_faccessat: case SYS_faccessat2:
    case SYS_readlink: case SYS_readlinkat: case SYS_getcwd: case SYS_dup: case SYS_dup2: case SYS_dup3:
    case SYS_pipe: case SYS_pipe2: case SYS_getdents64: case SYS_umask: case SYS_sched_yield:
    case SYS_getrandom: case SYS_sysinfo: case SYS_getrusage: case SYS_times: case SYS_arch_prctl:
    case SYS_sigaltstack: case SYS_rt_sigaction: case SYS_unlink: case SYS_unlinkat:
    case SYS_chmod: case SYS_fchmod: case SYS_fchmodat: case SYS_utimensat: case SYS_fchown:
    case SYS_chown: case SYS_fchownat: case SYS_mkdir: case SYS_mkdirat: case SYS_rename:
    case SYS_renameat: case SYS_renameat2: case SYS_getxattr: case SYS_lgetxattr: case SYS_fgetxattr:
      return 1;
    default:
      return 0;
  }
}

static void handler(int sig, siginfo_t *si, void *context) {
  ucontext_t *uc = context;
  greg_t *g = uc->uc_mcontext.gregs;
  /* The selector armed for this thread, by address: the call may change
   * %fs (arch_prctl). */
  volatile char *sel = &tlsSelector;
  *sel = SEL_ALLOW;
  if (si->si_code != SYS_USER_DISPATCH) {
    /* Someone else's SIGSYS (seccomp, kill): the program's recorded action. */
    if (gProgramSigsys.handler == SIG_IGN) { *sel = SEL_BLOCK; return; }
    if (gProgramSigsys.handler != SIG_DFL) {
      ((void (*)(int, siginfo_t *, void *))gProgramSigsys.handler)(sig, si, context);
      *sel = SEL_BLOCK;
      return;
    }
    struct kernel_sigaction_ dfl = {SIG_DFL, 0, 0, 0};
    RAW4(SYS_rt_sigaction, SIGSYS, &dfl, 0, 8);
    RAW3(SYS_tgkill, RAW0(SYS_getpid), RAW0(SYS_gettid), SIGSYS);
    return;
  }
  long nr = si->si_syscall;
  if (!__atomic_load_n(&gActive, __ATOMIC_ACQUIRE)) {
    /* Stopped: disarm this thread and let the program make the call
     * itself, the instruction before (syscall and int $0x80: 2 bytes). */
    RAW3(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_OFF, 0);
    g[REG_RIP] -= 2;
    g[REG_RAX] = nr;
    return;
  }
  flush_pending();
  const int reportIt = !is_own((uintptr_t)si->si_call_addr);
  struct AtomxSyscall c;
  memset(&c, 0, sizeof c);
  c.nr = nr;
  c.tid = tlsTid;
  c.pid = gPid;
  long *a = c.args;
  if (si->si_arch == ARCH_I386) {
    c.flags = ATOMX_SYSCALL_I386;
    a[0] = (uint32_t)g[REG_RBX], a[1] = (uint32_t)g[REG_RCX], a[2] = (uint32_t)g[REG_RDX];
    a[3] = (uint32_t)g[REG_RSI], a[4] = (uint32_t)g[REG_RDI], a[5] = (uint32_t)g[REG_RBP];
  } else {
    a[0] = g[REG_RDI], a[1] = g[REG_RSI], a[2] = g[REG_RDX];
    a[3] = g[REG_R10], a[4] = g[REG_R8], a[5] = g[REG_R9];
  }
  const int native = !(c.flags & ATOMX_SYSCALL_I386);

  if (native && (nr == SYS_clone || nr == SYS_clone3 || nr == SYS_fork || nr == SYS_vfork)) {
    struct spawn *s = claim_spawn();
    unsigned long flags = nr == SYS_fork ? SIGCHLD : nr == SYS_vfork ? CLONE_VM | CLONE_VFORK | SIGCHLD : (unsigned long)a[0];
    if (nr == SYS_clone3 && !safe_read(&flags, (void *)a[0], sizeof flags)) flags = 0;
    s->cloneFlags = flags;
    s->refs = 2;
    s->rip = g[REG_RIP];
    s->rbx = g[REG_RBX];
    s->mask = *uc_mask(uc) & ~SIGBIT(SIGSYS);
    s->report = reportIt;
    c.startNs = now_ns();
    s->call = c;
    g[REG_RBX] = (greg_t)s;
    g[REG_RIP] = (greg_t)atomx_sud_spawn_stub;
    g[REG_RAX] = nr;
    *uc_mask(uc) = ~0ull; /* nothing may run between here and the stub's call */
    *sel = SEL_BLOCK;
    return;
  }
  if (native && nr == SYS_rt_sigreturn) {
    /* The program's restorer: %rsp points at its frame's ucontext.  Return
     * with that context instead of ours (the kernel takes the registers,
     * the extended state through its pointer, the mask and the alternate
     * stack from the frame it returns through). */
    const ucontext_t *theirs = (const ucontext_t *)g[REG_RSP];
    memcpy(uc, theirs, offsetof(ucontext_t, uc_sigmask) + 8);
    *uc_mask(uc) &= ~SIGBIT(SIGSYS);
    if (reportIt) {
      c.result = uc->uc_mcontext.gregs[REG_RAX];
      c.startNs = now_ns();
      report(&c);
    }
    *sel = SEL_BLOCK;
    return;
  }
  if (native && (nr == SYS_exit || nr == SYS_exit_group) && reportIt) {
    c.flags |= ATOMX_SYSCALL_NO_RETURN;
    c.startNs = now_ns();
    report(&c);
  }

  /* Calls that would take interception away from the program's threads. */
  struct kernel_sigaction_ act;
  uint64_t set;
  long result = 0;
  int emulated = 0;
  if (native && nr == SYS_rt_sigaction && a[3] == 8) {
    if (a[0] == SIGSYS) {
      if (a[1] && !safe_read(&act, (void *)a[1], sizeof act)) result = -EFAULT;
      else if (a[2] && !safe_write((void *)a[2], &gProgramSigsys, sizeof act)) result = -EFAULT;
      else if (a[1]) gProgramSigsys = act;
      emulated = 1;
    } else if (a[1] && safe_read(&act, (void *)a[1], sizeof act)) {
      act.mask &= ~SIGBIT(SIGSYS);
      a[1] = (long)&act;
    }
  } else if (native && nr == SYS_rt_sigprocmask && a[1] && safe_read(&set, (void *)a[1], 8)) {
    set &= ~SIGBIT(SIGSYS);
    a[1] = (long)&set;
  } else if (native && nr == SYS_prctl && a[0] == PR_SET_SYSCALL_USER_DISPATCH) {
    result = -EBUSY;
    emulated = 1;
  }

  c.startNs = now_ns();
  if (!emulated) {
    const int withMask = !native || !cannot_block(nr) || nr == SYS_rt_sigprocmask;
    uint64_t programMask = *uc_mask(uc) & ~SIGBIT(SIGSYS), all = ~0ull, current;
    if (withMask) RAW4(SYS_rt_sigprocmask, SIG_SETMASK, &programMask, 0, 8);
    *sel = SEL_BLOCK;
    result = native ? atomx_sud_raw(nr, a[0], a[1], a[2], a[3], a[4], a[5]) : atomx_sud_raw32(nr, a);
    *sel = SEL_ALLOW;
    if (withMask) {
      RAW4(SYS_rt_sigprocmask, SIG_SETMASK, &all, &current, 8);
      /* The program's mask after the call (rt_sigprocmask changes it). */
      *uc_mask(uc) = current & ~SIGBIT(SIGSYS);
    }
  }
  c.durationNs = now_ns() - c.startNs;
  c.result = result;
  /* Report the program's own arguments, not the filtered copies. */
  c.args[1] = native ? g[REG_RSI] : c.args[1];
  g[REG_RAX] = result;
  if (reportIt) report(&c);
  *sel = SEL_BLOCK;
}

/* --- start, stop ---------------------------------------------------------------------- */
int AtomxSyscallsStart(AtomxSyscallHook hook) {
  if (__atomic_exchange_n(&gStarted, 1, __ATOMIC_ACQ_REL)) return -EBUSY;
  gOwnCount = 0;
#ifndef ATOMX_SYSCALLS_SELFTEST /* linked into a test program: nothing is "own" */
  dl_iterate_phdr(collect_own, 0);
#endif
  gPid = (int)RAW0(SYS_getpid);
  tlsTid = (int)RAW0(SYS_gettid);
  struct kernel_sigaction_ act = {(void *)handler, SA_SIGINFO | SA_RESTORER, (void *)atomx_sud_restorer, ~0ull};
  long r = RAW4(SYS_rt_sigaction, SIGSYS, &act, &gProgramSigsys, 8);
  if (r < 0) goto fail;
  gHook = hook;
  __atomic_store_n(&gActive, 1, __ATOMIC_RELEASE);
  tlsSelector = SEL_BLOCK;
  r = atomx_sud_raw(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_ON, (long)atomx_sud_begin,
                    atomx_sud_end - atomx_sud_begin, (long)&tlsSelector, 0);
  if (r < 0) {
    __atomic_store_n(&gActive, 0, __ATOMIC_RELEASE);
    RAW4(SYS_rt_sigaction, SIGSYS, &gProgramSigsys, 0, 8);
    goto fail;
  }
  uint64_t sys = SIGBIT(SIGSYS);
  RAW4(SYS_rt_sigprocmask, SIG_UNBLOCK, &sys, 0, 8);
  return 0;
fail:
  __atomic_store_n(&gStarted, 0, __ATOMIC_RELEASE);
  return (int)r;
}

void AtomxSyscallsStop(void) {
  /* ProgramAfter may run in a thread that never ran an inserted call (one
   * that calls exit): make the analysis libc usable in it for the output
   * the caller writes next. */
  atomx_analysis_thread_start();
  if (!__atomic_load_n(&gActive, __ATOMIC_ACQUIRE)) return;
  tlsSelector = SEL_ALLOW;
  flush_pending();
  __atomic_store_n(&gActive, 0, __ATOMIC_RELEASE);
  RAW3(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_OFF, 0);
  /* The handler stays: other threads disarm at their next call.  A new
   * Start in this process (a forked child's tool) is not supported. */
}

static const char *const kNames[] = {
#include "syscall_names.inc"
};

const char *AtomxSyscallName(long nr) {
  if (nr < 0 || nr >= (long)(sizeof kNames / sizeof kNames[0])) return 0;
  return kNames[nr];
}

const char *AtomxErrnoName(long err) {
  if (err < 0) err = -err;
  return err > 0 && err < 4096 ? strerrorname_np((int)err) : 0;
}
