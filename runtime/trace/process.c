/* fork and exec, through the program's GOT slots (hook_process): a forked
 * child continues its parent's stream, and exec writes every stream's
 * last chunk first. */
#include "recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>

/* fork: the parent's bytes so far go to its stream first (every chunk
 * queued, then the buffer), so that the child's own bytes start with a
 * chunk of their own (ATOMX_TRACE_CHUNK_CHILD). */
static pid_t (*realFork)(void);
static pid_t wrap_fork(void) {
  sigset_t mask;
  block_signals(&mask);
  struct buffer *b = own_buffer();
  if (b) {
    lock_buffer(b);
    if (!b->closed) {
      drain(b); /* what the writer has queued: in the file before the child copies it */
      if (cursor() > b->base || b->markCount) {
        flush(b, cursor(), 0);
        set_cursor(b->base);
      }
    }
    unlock_buffer(b);
  }
  restore_signals(&mask);
  const pid_t child = realFork();
  if (child > 0) event("fork", "%ld", (long)child);
  return child;
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
  const int e = errno;
  /* The process goes on: so do its streams (after the chunks written as
   * their last). */
  const pid_t pid = getpid();
  __atomic_store_n(&closedPid, 0, __ATOMIC_RELEASE);
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->pid != pid) continue;
    lock_buffer(b);
    if (!b->ended) b->closed = 0;
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
void hook_process(const struct link_map *program) {
  hook_slots(program, "fork", (void *)wrap_fork, (void **)&realFork);
  hook_slots(program, "execve", (void *)wrap_execve, (void **)&realExecve);
  hook_slots(program, "execv", (void *)wrap_execv, (void **)&realExecv);
  hook_slots(program, "execvp", (void *)wrap_execvp, (void **)&realExecvp);
  hook_slots(program, "execvpe", (void *)wrap_execvpe, (void **)&realExecvpe);
  void *execl[3] = {NULL, NULL, NULL}; /* unused: execl_common calls execv* */
  hook_slots(program, "execl", (void *)wrap_execl, &execl[0]);
  hook_slots(program, "execle", (void *)wrap_execle, &execl[1]);
  hook_slots(program, "execlp", (void *)wrap_execlp, &execl[2]);
}
