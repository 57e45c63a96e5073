/* Signals: the recorder's SIGSEGV handler (on_fault), which answers the
 * faults of the witness stores (a thread's first store, a full buffer) and
 * passes every other fault on to the program's disposition; and the
 * program's own handlers, which the recorder calls itself (deliver) to mark
 * in the stream where each ran.  The program sets them through its
 * sigaction, signal, sigprocmask and pthread_sigmask, whose GOT slots point
 * at the wrappers here (hook_signals). */
#include "recorder.h"

#include <string.h>

#include "stores.h"

/* The program's dispositions, as it set them through sigaction or signal
 * (the GOT hooks: hook_signals).  SIGSEGV's handler is always on_fault, which
 * passes the faults that are not the recorder's to programActs[SIGSEGV];
 * another signal with a handler of the program's gets on_signal, which
 * marks where the handler ran and calls it (`wrapped`). */
struct sigaction programActs[NSIG];
static volatile unsigned char wrapped[NSIG];
static int (*realSigaction)(int, const struct sigaction *, struct sigaction *); /* the program's libc's */

/* Calls the program's handler `act` for a signal that interrupted the
 * thread at `context`, as the kernel would have: with the program's mask
 * for it (without SIGSEGV), and marks in the stream where it ran and where
 * the thread goes on when it returns.  Entered with every signal blocked. */
static void deliver(int sig, siginfo_t *info, void *context, struct sigaction *slot) {
  ucontext_t *uc = context;
  const struct sigaction act = *slot;
  if (act.sa_flags & SA_RESETHAND) {
    slot->sa_handler = SIG_DFL;
    slot->sa_flags &= ~SA_SIGINFO;
    wrapped[sig] = 0;
  }
  const int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info && info->si_code > 0;
  const uint64_t pc = interrupted_at(uc);
  const greg_t rip = uc->uc_mcontext.gregs[REG_RIP];
  /* A loop that holds the cursor in a register: the mark and the handler's
   * records go where the loop is. */
  const int held = noCursorSync ? -1 : cursor_register_at((uint64_t)rip);
  sync_cursor(uc->uc_mcontext.gregs, 0);
  if (pc) add_mark(fault && pc != ATOMX_TRACE_MARK_UNKNOWN ? ATOMX_TRACE_MARK_FAULTED : ATOMX_TRACE_MARK_DELIVERED, sig, pc);
  /* The measured library call the thread is in (library.c): the handler's
   * own calls use the slot. */
  const uint64_t library = library_slot_take();
  /* The registers, by hardware number (ATOMX_TRACE_MARK_REGISTER), where
   * they are the program's at pc: not inside a measured library call's
   * code (its red-zone step, the recorder's routine), whose mark needs no
   * registers (the call's RETURN tells its visits apart). */
  if (pc && pc != ATOMX_TRACE_MARK_UNKNOWN && !library) {
    /* In a loop that holds the cursor in a register, the program's value of
     * that register is in the spill word (or it is dead there). */
    for (int r = 0; r < 16; r++)
      add_mark(ATOMX_TRACE_MARK_REGISTER, r, r == held ? spill_word() : (uint64_t)uc->uc_mcontext.gregs[kGreg[r]]);
  }
  sigset_t mask = uc->uc_sigmask;
  for (int s = 1; s < NSIG; s++)
    if (sigismember(&act.sa_mask, s)) sigaddset(&mask, s);
  if (!(act.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  sigdelset(&mask, SIGSEGV);
  pthread_sigmask(SIG_SETMASK, &mask, NULL);
  /* A loop of the handler may keep its register's value in the spill
   * word, which the interrupted loop's holds.  The handler sees the
   * program's registers: the loop's register holds the program's value
   * (the spill word's; a dead one's is any) while it runs. */
  const uint64_t spilled = spill_word();
  greg_t *g = uc->uc_mcontext.gregs;
  if (held >= 0) g[kGreg[held]] = (greg_t)spilled;
  if (act.sa_flags & SA_SIGINFO) act.sa_sigaction(sig, info, context);
  else act.sa_handler(sig);
  /* Back in that loop (the handler may have moved the thread, or changed
   * the register): its value is the spill word's again, and the register
   * the cursor (below). */
  set_spill_word(held >= 0 && cursor_register_at((uint64_t)g[REG_RIP]) == held ? (uint64_t)g[kGreg[held]] : spilled);
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  library_slot_put(library);
  sync_cursor(uc->uc_mcontext.gregs, 1); /* where the thread goes on, if a loop holds its cursor there */
  if (!pc) return;
  /* The handler returned (it did not longjmp or exit): where the thread
   * goes on, if the handler moved it. */
  uint64_t resumed = 0;
  if (uc->uc_mcontext.gregs[REG_RIP] != rip) {
    resumed = interrupted_at(uc);
    if (!resumed) resumed = ATOMX_TRACE_MARK_UNKNOWN;
  }
  add_mark(ATOMX_TRACE_MARK_RETURNED, sig, resumed);
}

static void on_signal(int sig, siginfo_t *info, void *context) {
  if (sig > 0 && sig < NSIG) deliver(sig, info, context, &programActs[sig]);
}

static void on_fault(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  greg_t *g = uc->uc_mcontext.gregs;
  int reg, disp, width, src;
  /* A witness store's fault is at an instruction of the moved code, which
   * can be read; the pc of another fault may not be (a call through a null
   * pointer faults at 0).  Its register holds the cursor: %fs's copy, or,
   * in a loop that keeps the cursor in that register, the register. */
  if (in_moved_code((uint64_t)g[REG_RIP]) && atomx_stores_decode_store((const uint8_t *)g[REG_RIP], &reg, &disp, &width, &src)) {
    uint8_t *slot = store_cursor(g, reg);
    if (swap_buffer(g, reg, slot, (uintptr_t)info->si_addr)) return;
  }
  if (library_store_fault(g, (uintptr_t)info->si_addr)) return; /* the measured length's (library.c) */
  /* Not ours: the program's own handler, if it set one ... */
  struct sigaction *program = &programActs[SIGSEGV];
  if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN) {
    deliver(sig, info, context, program);
    return;
  }
  /* ... else keep what the trace has, and let the fault take its course. */
  sync_cursor(g, 0);
  flush_all();
  event("killed", "%d", sig);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
}

/* on_fault, as SIGSEGV's handler; on the alternate stack when the
 * program's own SIGSEGV handler wants it (a stack overflow). */
int install_fault_handler(int onStack, struct sigaction *old) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = on_fault;
  act.sa_flags = SA_SIGINFO | SA_RESTART | (onStack ? SA_ONSTACK : 0);
  sigfillset(&act.sa_mask); /* no handler of the program runs while a buffer is swapped */
  return (realSigaction ? realSigaction : sigaction)(SIGSEGV, &act, old);
}

/* The program's sigaction: SIGSEGV's disposition is kept aside, and a
 * handler for another signal is installed as on_signal. */
static int wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig <= 0 || sig >= NSIG) return realSigaction(sig, act, old);
  if (sig == SIGSEGV) {
    if (old) *old = programActs[SIGSEGV];
    if (act) {
      programActs[SIGSEGV] = *act;
      install_fault_handler(act->sa_flags & SA_ONSTACK, NULL);
    }
    return 0;
  }
  struct sigaction prev, mine;
  const struct sigaction *give = act;
  const int handler = act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
  if (handler) {
    programActs[sig] = *act;
    mine = *act;
    mine.sa_sigaction = on_signal;
    mine.sa_flags |= SA_SIGINFO;
    sigfillset(&mine.sa_mask); /* deliver() sets the program's mask */
    give = &mine;
  } else if (act && sigismember(&act->sa_mask, SIGSEGV)) {
    mine = *act; /* a disposition blocking SIGSEGV: see without_segv */
    sigdelset(&mine.sa_mask, SIGSEGV);
    give = &mine;
  }
  const unsigned char was = wrapped[sig];
  const int r = realSigaction(sig, give, &prev);
  if (r != 0) return r;
  if (old) *old = was && prev.sa_sigaction == on_signal ? programActs[sig] : prev;
  if (act) wrapped[sig] = (unsigned char)handler;
  return 0;
}

/* signal, bsd_signal (BSD semantics: SA_RESTART, the signal blocked in its
 * handler) and __sysv_signal (SA_RESETHAND | SA_NODEFER), as glibc makes
 * them, through wrap_sigaction. */
static sighandler_t signal_as(int sig, sighandler_t handler, int flags) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = flags;
  sigemptyset(&act.sa_mask);
  if (!(flags & SA_NODEFER) && sig > 0 && sig < NSIG) sigaddset(&act.sa_mask, sig);
  if (wrap_sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
static sighandler_t wrap_signal(int sig, sighandler_t handler) { return signal_as(sig, handler, SA_RESTART); }
static sighandler_t wrap_sysv_signal(int sig, sighandler_t handler) { return signal_as(sig, handler, SA_RESETHAND | SA_NODEFER); }

/* A thread must not block SIGSEGV: the kernel kills a process whose
 * blocked SIGSEGV is raised by a fault, and every full buffer faults.  xz
 * blocks every signal around pthread_create (its threads inherit the mask),
 * and handlers often block every signal while they run.  The program's
 * masks are passed on without SIGSEGV: a fault that is not the recorder's
 * still ends the process (the program's SIGSEGV handler aside), as it would
 * have. */
static const sigset_t *without_segv(const sigset_t *set, sigset_t *copy) {
  if (!set || !sigismember(set, SIGSEGV)) return set;
  *copy = *set;
  sigdelset(copy, SIGSEGV);
  return copy;
}
static int (*realSigprocmask)(int, const sigset_t *, sigset_t *);
static int (*realPthreadSigmask)(int, const sigset_t *, sigset_t *);
static int wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  sigset_t copy;
  return realSigprocmask(how, how == SIG_UNBLOCK ? set : without_segv(set, &copy), old);
}
static int wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  sigset_t copy;
  return realPthreadSigmask(how, how == SIG_UNBLOCK ? set : without_segv(set, &copy), old);
}


/* The program's GOT slots of the functions above. */
void hook_signals(void) {
  atomx_hook_import("sigaction", (void *)wrap_sigaction, (void **)&realSigaction);
  /* signal() goes through wrap_sigaction in a program that calls no sigaction */
  if (!realSigaction)
    realSigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(programLibc, "sigaction");
  void *signals[3] = {NULL, NULL, NULL}; /* unused: signal_as calls wrap_sigaction */
  atomx_hook_import("signal", (void *)wrap_signal, &signals[0]);
  atomx_hook_import("bsd_signal", (void *)wrap_signal, &signals[1]);
  atomx_hook_import("__sysv_signal", (void *)wrap_sysv_signal, &signals[2]);
  atomx_hook_import("sigprocmask", (void *)wrap_sigprocmask, (void **)&realSigprocmask);
  atomx_hook_import("pthread_sigmask", (void *)wrap_pthread_sigmask, (void **)&realPthreadSigmask);
}
