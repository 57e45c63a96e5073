/* fork, vfork and exec, through the program's GOT slots (hook_process): a
 * forked child continues its parent's stream, a vfork child records apart
 * from its parent, in whose memory it runs, and exec writes every stream's
 * last chunk first. */
#include "recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>

/* fork: the parent's bytes so far go to its stream first (every chunk
 * queued, then the buffer), so that the child's own bytes start with a
 * chunk of their own (ATOMX_TRACE_CHUNK_CHILD). */
static pid_t (*realFork)(void);
static void fork_begins(void) {
  struct buffer *b = own_buffer();
  if (b) {
    lock_buffer(b);
    if (!b->closed) {
      drain(b); /* what the writer has queued: in the file before the child copies it */
      if (cursor() > b->base || b->markCount) {
        flush(b, cursor(), 0);
        set_cursor(b->base);
        publish(b);
      }
    }
    unlock_buffer(b);
  }
}
static pid_t wrap_fork(void) {
  sigset_t mask;
  block_signals(&mask);
  fork_begins();
  restore_signals(&mask);
  const pid_t child = realFork();
  if (child > 0) event("fork", "%ld", (long)child);
  return child;
}
/* fork() runs the program's pthread_atfork prepare handlers after the
 * wrapper's flush, in the parent, before the system call: their bytes would
 * be in the child's first chunk of its own, and regen would say the child
 * ran them (fork_exec's at_prepare).  So the recorder's own prepare handler,
 * registered in the program's libc before the program registers any (its
 * prepare handlers run in the reverse order), writes the parent's bytes
 * again just before the system call, and keeps signals blocked until the
 * fork is done (a handler's bytes there would be the child's too). */
static __thread sigset_t forkMask;
static void atfork_prepare(void) {
  block_signals(&forkMask);
  fork_begins();
}
static void atfork_done(void) { restore_signals(&forkMask); }
static void atfork_child(void) {
  publish_owner(); /* the parent's words, copied, are the child's (publish) */
  __atomic_add_fetch(&syncGeneration, 1, __ATOMIC_RELAXED);
  restore_signals(&forkMask);
}

/* vfork: the child runs in its parent's memory, on its stack and with its
 * thread pointer, so with the thread's cursor, until it execs or ends; the
 * parent waits meanwhile.  So the child must not record into the parent's
 * buffer (buffer.c: vfork_started), and the parent must find its cursor as
 * it left it.  As glibc's vfork, wrap_vfork (below, in assembly) makes the
 * system call itself, with its return address in a register (the child's
 * calls overwrite the stack below the caller's frame; the kernel gives the
 * parent its registers back), and the parent's cursor and signal mask in two
 * more:
 *   - vfork_begins, in the parent: the parent's bytes so far go to its
 *     stream, as before fork (so that a child's stream can start with them),
 *     with every signal blocked (a handler's records in the parent would
 *     then be lost when its cursor is put back);
 *   - vfork_child, in the child: its own buffer and stream (vforked), the
 *     cursor pointed at it, the mask back;
 *   - vfork_returned, in the parent: its cursor and mask back, the child's
 *     buffer free again, `vfork CHILD` (or errno set, as vfork does). */
struct vfork_saved {
  uint8_t *cursor;
  uint64_t mask; /* rax and rdx */
};
__attribute__((visibility("hidden"), used)) struct vfork_saved atomx_trace_vfork_begins(void);
__attribute__((visibility("hidden"), used)) void atomx_trace_vfork_child(uint64_t mask);
__attribute__((visibility("hidden"), used)) long atomx_trace_vfork_returned(long child, uint8_t *c, uint64_t mask);
__attribute__((visibility("hidden"))) pid_t atomx_trace_wrap_vfork(void);
static int *(*programErrno)(void); /* the program's libc's __errno_location */

struct vfork_saved atomx_trace_vfork_begins(void) {
  struct vfork_saved s;
  /* All but glibc's own two (SIGCANCEL, SIGSETXID), which pthread_sigmask
   * would not block either. */
  const uint64_t all = ~((uint64_t)3 << 31);
  sys_sigprocmask_set(&all, &s.mask);
  fork_begins();
  s.cursor = cursor();
  return s;
}
void atomx_trace_vfork_child(uint64_t mask) {
  __atomic_add_fetch(&syncGeneration, 1, __ATOMIC_RELAXED);
  vfork_started();
  struct buffer *b = vfork_buffer();
  /* Its stream holds its parent's chunks up to here, or else begins anew. */
  if (b) set_cursor(b->sequence ? b->base : stream_begin(b));
  publish(b);
  sys_sigprocmask_set(&mask, NULL);
}
long atomx_trace_vfork_returned(long child, uint8_t *c, uint64_t mask) {
  set_cursor(c);
  __atomic_add_fetch(&syncGeneration, 1, __ATOMIC_RELAXED);
  if (child > 0) vfork_ended((pid_t)child);
  publish(own_buffer()); /* the child's were in the same words */
  sys_sigprocmask_set(&mask, NULL);
  if (child < 0) {
    if (programErrno) *programErrno() = (int)-child;
    errno = (int)-child;
    return -1;
  }
  event("vfork", "%ld", child);
  return child;
}
__asm__(".text\n"
        ".p2align 4\n"
        ".type atomx_trace_wrap_vfork, @function\n"
        "atomx_trace_wrap_vfork:\n"
        "  endbr64\n"
        "  sub $8, %rsp\n"
        "  call atomx_trace_vfork_begins\n"
        "  add $8, %rsp\n"
        "  mov %rax, %rsi\n" /* the parent's cursor */
        "  pop %rdi\n"       /* the return address */
        "  mov $58, %eax\n"  /* SYS_vfork */
        "  syscall\n"
        "  push %rdi\n"
        "  sub $8, %rsp\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  mov %rdx, %rdi\n" /* the child: the signal mask */
        "  call atomx_trace_vfork_child\n"
        "  add $8, %rsp\n"
        "  xor %eax, %eax\n"
        "  ret\n"
        "1:\n"
        "  mov %rax, %rdi\n" /* the parent: the child, or -errno; the cursor; the mask */
        "  call atomx_trace_vfork_returned\n"
        "  add $8, %rsp\n"
        "  ret\n"
        ".size atomx_trace_wrap_vfork, .-atomx_trace_wrap_vfork\n");

/* _exit, _Exit: in a vfork child, its stream's last chunk first (atomx's
 * ProgramAfter, which writes it in any other process, does nothing in a
 * process sharing its parent's memory). */
static void (*realExit)(int);
static void wrap_exit(int status) {
  const struct buffer *v = vfork_buffer();
  if (v && !v->closed) {
    flush_all();
    event("exit", NULL);
  }
  realExit(status);
  __builtin_unreachable();
}

/* exec replaces the image: the streams' last chunks first. */
static int (*realExecve)(const char *, char *const[], char *const[]);
static int (*realExecv)(const char *, char *const[]);
static int (*realExecvp)(const char *, char *const[]);
static int (*realExecvpe)(const char *, char *const[], char *const[]);
static void exec_begins(const char *file) {
  flush_all();
  event("exec", "%s", file);
}
static int exec_failed(int status) {
  /* The program's libc's errno: the exec functions are its. */
  const int e = programErrno ? *programErrno() : errno;
  /* The process goes on: so do its streams, whose final chunks written
   * before exec are taken out again (else regen would find "bytes after
   * the final chunk").  (closedPid is a vfork child's parent's.) */
  const pid_t pid = getpid();
  if (!vfork_buffer()) __atomic_store_n(&closedPid, 0, __ATOMIC_RELEASE);
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->pid != pid) continue;
    lock_buffer(b);
    if (!b->ended && b->closed) {
      reopen_stream(b);
      b->closed = 0;
    }
    unlock_buffer(b);
  }
  event("exec-failed", "%d", e);
  errno = e;
  return status;
}
static int wrap_execve(const char *f, char *const a[], char *const e[]) {
  exec_begins(f);
  return exec_failed(realExecve(f, a, e));
}
static int wrap_execv(const char *f, char *const a[]) {
  exec_begins(f);
  return exec_failed(realExecv(f, a));
}
static int wrap_execvp(const char *f, char *const a[]) {
  exec_begins(f);
  return exec_failed(realExecvp(f, a));
}
static int wrap_execvpe(const char *f, char *const a[], char *const e[]) {
  exec_begins(f);
  return exec_failed(realExecvpe(f, a, e));
}

/* execl, execle, execlp: their arguments as an argv (and execle's envp),
 * then the same way as execv, execve, execvp.  libc's execl* call execve
 * inside libc, which the GOT hooks do not see. */
#define EXECL_MAX_ARGS 4096
static int execl_common(const char *file, const char *arg, va_list ap, int withEnv, int search) {
  char *argv[EXECL_MAX_ARGS + 1];
  int n = 0;
  for (const char *a = arg; a; a = va_arg(ap, const char *)) {
    if (n == EXECL_MAX_ARGS) {
      errno = E2BIG;
      return -1;
    }
    argv[n++] = (char *)a;
  }
  argv[n] = NULL;
  char *const *envp = withEnv ? va_arg(ap, char *const *) : NULL;
  int (*v)(const char *, char *const[]) = (int (*)(const char *, char *const[]))dlsym(programLibc, search ? "execvp" : "execv");
  int (*ve)(const char *, char *const[], char *const[]) =
      (int (*)(const char *, char *const[], char *const[]))dlsym(programLibc, "execve");
  exec_begins(file);
  return exec_failed(withEnv ? ve(file, argv, envp) : v(file, argv));
}
static int wrap_execl(const char *file, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = execl_common(file, arg, ap, 0, 0);
  va_end(ap);
  return r;
}
static int wrap_execle(const char *file, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = execl_common(file, arg, ap, 1, 0);
  va_end(ap);
  return r;
}
static int wrap_execlp(const char *file, const char *arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = execl_common(file, arg, ap, 0, 1);
  va_end(ap);
  return r;
}

/* The program's GOT slots of the functions above. */
void hook_process(void) {
  atomx_hook_import("fork", (void *)wrap_fork, (void **)&realFork);
  int (*registerAtfork)(void (*)(void), void (*)(void), void (*)(void), void *) =
      (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))dlsym(programLibc, "__register_atfork");
  if (registerAtfork) registerAtfork(atfork_prepare, atfork_done, atfork_child, NULL);
  void *vfork = NULL; /* unused: wrap_vfork makes the system call */
  atomx_hook_import("vfork", (void *)atomx_trace_wrap_vfork, &vfork);
  programErrno = (int *(*)(void))dlsym(programLibc, "__errno_location");
  realExit = (void (*)(int))dlsym(programLibc, "_exit");
  atomx_hook_import("_exit", (void *)wrap_exit, (void **)&realExit);
  void *exitAlias = NULL; /* the same function as _exit */
  atomx_hook_import("_Exit", (void *)wrap_exit, &exitAlias);
  atomx_hook_import("execve", (void *)wrap_execve, (void **)&realExecve);
  atomx_hook_import("execv", (void *)wrap_execv, (void **)&realExecv);
  atomx_hook_import("execvp", (void *)wrap_execvp, (void **)&realExecvp);
  atomx_hook_import("execvpe", (void *)wrap_execvpe, (void **)&realExecvpe);
  void *execl[3] = {NULL, NULL, NULL}; /* unused: execl_common calls execv* */
  atomx_hook_import("execl", (void *)wrap_execl, &execl[0]);
  atomx_hook_import("execle", (void *)wrap_execle, &execl[1]);
  atomx_hook_import("execlp", (void *)wrap_execlp, &execl[2]);
}
