/* atomx: seeing every system call of the program (analysis side, C and C++).
 *
 * atomx rewrites the program file only; libc and the other shared libraries
 * are not rewritten, and nearly every system call is made inside them.  So
 * system calls are intercepted at run time with Linux Syscall User Dispatch
 * (prctl PR_SET_SYSCALL_USER_DISPATCH, Linux >= 5.11): while interception is
 * on, every `syscall` (or `int $0x80`) instruction of an intercepted thread
 * raises SIGSYS instead of entering the kernel; the library's handler makes
 * the call on the program's behalf, puts the result in the program's %rax,
 * and calls the hook with the call, its result and its duration.
 *
 *     static void hook(const struct AtomxSyscall *c) { counts[c->nr]++; }
 *     void Start(void) { AtomxSyscallsStart(hook); }        // ProgramBefore
 *     void End(void)   { AtomxSyscallsStop(); print(); }    // ProgramAfter
 *
 * THE HOOK RUNS INSIDE A SIGNAL HANDLER, in the thread that made the call,
 * possibly in several threads at once, with all signals blocked.  It must be
 * async-signal-safe: no malloc, no stdio, no locks the program could hold;
 * use atomics on fixed tables.  System calls it makes itself (e.g. readlink)
 * are not intercepted.
 *
 * What is seen, between AtomxSyscallsStart and AtomxSyscallsStop:
 *  - every system call made by the program, its libraries and ld.so, in the
 *    thread that called Start and in every thread and process created after
 *    it by clone, clone3, fork or vfork (interception is set up in each
 *    child before it runs a single instruction of the program);
 *  - rt_sigreturn when the program's signal handlers return;
 *  - exit and exit_group are reported before they are made (flags
 *    ATOMX_SYSCALL_NO_RETURN, result 0); a successful execve is never
 *    reported (the process image, hook included, is gone), a failed one is;
 *  - clone, clone3, fork and vfork are reported once, in the parent, with
 *    the child's id (or the error), as strace -c counts them.  The report
 *    may come a little later than the call (at the thread's next system
 *    call, or at Stop).
 * What is not seen:
 *  - threads that already existed when Start was called;
 *  - calls that never enter the kernel: the vDSO's clock_gettime,
 *    gettimeofday, time and getcpu (strace does not see them either);
 *  - system calls made by the analysis object and its libraries (its own
 *    namespace: the caller's address is checked), including the hook's;
 *  - after an execve, the new program (unless it is instrumented itself).
 * Changes the program can notice (all documented limits):
 *  - SIGSYS can never be blocked (the kernel would kill the process at the
 *    next call): rt_sigprocmask and rt_sigaction masks have SIGSYS removed,
 *    and masks read back lack it (so posix_spawn's child, which resets the
 *    handlers of the signals it finds blocked, skips SIGSYS: two
 *    rt_sigaction calls fewer); a handler the program installs for SIGSYS is
 *    recorded and reported back by rt_sigaction, and called for a SIGSYS
 *    that is not Syscall User Dispatch's (seccomp, kill), but not installed;
 *  - a program's own prctl(PR_SET_SYSCALL_USER_DISPATCH) fails with EBUSY;
 *  - after clone/fork/vfork, %r11 holds the return address instead of the
 *    flags (the kernel's ABI leaves %rcx and %r11 undefined after syscall);
 *  - a child of clone(CLONE_VM) without CLONE_SETTLS (vfork, posix_spawn)
 *    shares its parent's memory and thread-local data: its calls (up to
 *    execve or _exit) are reported with its parent's thread id, into the
 *    parent's tables, as strace -f counts them;
 *  - the rt_sigreturn that ends a program's signal handler is made by
 *    returning from the SIGSYS handler with the program's frame (reported
 *    with the restored %rax as its result, as strace shows it); this is not
 *    compatible with user-space shadow stacks (CET shstk), not enabled by
 *    default;
 *  - a call that a signal interrupts and the kernel restarts (SA_RESTART)
 *    is restarted inside the handler and counted once (strace shows the
 *    interrupted attempt and the restart);
 *  - each intercepted call costs a signal delivery and return (a few
 *    microseconds: system-call-heavy programs run several times slower).
 * Durations are wall-clock (CLOCK_MONOTONIC) around the call made on the
 * program's behalf, including a little of the interception's own cost. */
#ifndef ATOMX_SYSCALLS_H
#define ATOMX_SYSCALLS_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  /* exit, exit_group: reported before the call, which does not return. */
  ATOMX_SYSCALL_NO_RETURN = 1,
  /* The call was `int $0x80` (i386 numbering, i386 argument registers). */
  ATOMX_SYSCALL_I386 = 2,
};

struct AtomxSyscall {
  long nr;                      /* the system call number (x86-64 unless ATOMX_SYSCALL_I386) */
  long args[6];                 /* the arguments, as the program passed them */
  long result;                  /* the kernel's result: -4095..-1 is -errno */
  unsigned long long startNs;   /* CLOCK_MONOTONIC when the call was made */
  unsigned long long durationNs;
  int tid;                      /* the calling thread (gettid) */
  int pid;                      /* the calling process (getpid) */
  int flags;                    /* ATOMX_SYSCALL_* */
};

typedef void (*AtomxSyscallHook)(const struct AtomxSyscall *call);

/* Starts intercepting system calls in the calling thread and every thread
 * or process it creates from now on; `hook` is called once per call.
 * Returns 0, or -errno: -ENOSYS / -EINVAL when the kernel has no Syscall
 * User Dispatch (before 5.11, or built without it), -EBUSY when already
 * started.  Call it from a ProgramBefore routine. */
int AtomxSyscallsStart(AtomxSyscallHook hook);

/* Stops interception: no hook call starts after it returns (calls already
 * in progress in other threads may still finish theirs).  Each other thread
 * switches interception off at its next system call.  Call it first in a
 * ProgramAfter routine, before writing output.  A forked child inherits the
 * interception, and stops it in its own ProgramAfter.  It also sets up the
 * analysis libc in the calling thread if no inserted call has run in it yet
 * (ProgramAfter runs in whichever thread ends the process). */
void AtomxSyscallsStop(void);

/* The name of x86-64 system call `nr` ("read", "openat", ...), or null when
 * it has none. */
const char *AtomxSyscallName(long nr);

/* -errno's symbolic name ("ENOENT"), or null. */
const char *AtomxErrnoName(long err);

#ifdef __cplusplus
}
#endif

#endif
