/* Sync points: the program's calls that may synchronise it with another
 * thread or process (<atomx/sync_calls.h> lists them, and says why), each
 * taken over through its GOT slots; the wrapper puts a mark with the time
 * (CLOCK_MONOTONIC, the event log's clock: the vDSO's, no system call) in
 * the thread's stream before the call and another after it
 * (ATOMX_TRACE_MARK_SYNC_ENTERED, _RETURNED: trace_format.h).  The reader
 * pairs them with the calls of the regenerated path and cuts the path
 * there (src/trace/SyncPoints.cpp): the fallback schedule of docs/trace.md,
 * "Ordering threads and processes". */
#include "recorder.h"

#include <atomx/sync_calls.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#undef getc
#undef putc
#undef getchar
#undef putchar

/* The thread's buffer, as own_buffer found it, while the process is the
 * one it was found in: a forked child (atfork) and a vfork child (which
 * shares its parent's memory, so this thread-local word too) raise
 * syncGeneration, and the next mark asks own_buffer again (which a forked
 * child's first must: it makes the parent's buffer its own). */
unsigned syncGeneration = 1;
static __thread __attribute__((tls_model("initial-exec"))) struct {
  struct buffer *b;
  unsigned generation;
} cached;

/* The program's libc's __libc_single_threaded (0 once it made a second
 * thread), and which calls are marked only then (sync_calls.h: THREADS). */
static const char *programSingleThreaded;
static const unsigned char threadsOnly[ATOMX_SYNC_COUNT] = {
#define THREADS_(name, way, when) [ATOMX_SYNC_ID_##name] = ATOMX_SYNC_##when,
    ATOMX_SYNC_CALLS(THREADS_)
#undef THREADS_
};

static void slow_mark(uint16_t kind, int call, uint64_t ns) {
  sigset_t mask;
  block_signals(&mask);
  add_mark(kind, call, ns);
  cached.b = own_buffer();
  cached.generation = __atomic_load_n(&syncGeneration, __ATOMIC_RELAXED);
  restore_signals(&mask);
}

/* A mark at the thread's cursor.  Without blocking signals (two system
 * calls per mark): the mark is written into the next free slot, which is
 * then taken with a compare-and-swap; a signal handler that added marks
 * meanwhile (its own calls', a delivery's) took the slot first, and the
 * mark is written again into the next. */
static void put_mark(uint16_t kind, int call, uint64_t ns) {
  struct buffer *b = cached.b;
  if (!b || cached.generation != __atomic_load_n(&syncGeneration, __ATOMIC_RELAXED)) {
    slow_mark(kind, call, ns);
    return;
  }
  for (;;) {
    uint32_t k = __atomic_load_n(&b->markCount, __ATOMIC_RELAXED);
    uint8_t *c = cursor();
    if (k >= MAX_MARKS || b->closed || !c || c < b->base || c > b->base + BUFFER_BYTES) {
      slow_mark(kind, call, ns);
      return;
    }
    b->marks[k] = (AtomxTraceMark){(uint32_t)(c - b->base), kind, (uint16_t)call, ns};
    if (__atomic_compare_exchange_n(&b->markCount, &k, k + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Before the call: its ENTERED mark, or none for a thread-only call while
 * the process has one thread (the reader ties marks to calls by their
 * stream position: an unmarked call is simply no cut).  Whether the call
 * is marked. */
static int sync_enter(int call) {
  if (threadsOnly[call] && programSingleThreaded && *programSingleThreaded) return 0;
  put_mark(ATOMX_TRACE_MARK_SYNC_ENTERED, call, now());
  return 1;
}
static void sync_leave(int call) { put_mark(ATOMX_TRACE_MARK_SYNC_RETURNED, call, now()); }

#define ENTER(name) const int marked_ = sync_enter(ATOMX_SYNC_ID_##name)
#define LEAVE(name) \
  if (marked_) sync_leave(ATOMX_SYNC_ID_##name)
/* A wrapper of `name`, of type `ret params`, calling it with `args`. */
#define WRAP(name, ret, params, args)   \
  static ret(*real_##name) params;      \
  static ret wrap_##name params {       \
    ENTER(name);                        \
    ret result_ = real_##name args;     \
    LEAVE(name);                        \
    return result_;                     \
  }

WRAP(read, ssize_t, (int fd, void *p, size_t n), (fd, p, n))
WRAP(write, ssize_t, (int fd, const void *p, size_t n), (fd, p, n))
WRAP(readv, ssize_t, (int fd, const struct iovec *v, int n), (fd, v, n))
WRAP(writev, ssize_t, (int fd, const struct iovec *v, int n), (fd, v, n))
WRAP(pread, ssize_t, (int fd, void *p, size_t n, off_t o), (fd, p, n, o))
WRAP(pwrite, ssize_t, (int fd, const void *p, size_t n, off_t o), (fd, p, n, o))
WRAP(pread64, ssize_t, (int fd, void *p, size_t n, off64_t o), (fd, p, n, o))
WRAP(pwrite64, ssize_t, (int fd, const void *p, size_t n, off64_t o), (fd, p, n, o))
WRAP(recv, ssize_t, (int fd, void *p, size_t n, int f), (fd, p, n, f))
WRAP(recvfrom, ssize_t, (int fd, void *p, size_t n, int f, struct sockaddr *a, socklen_t *l), (fd, p, n, f, a, l))
WRAP(recvmsg, ssize_t, (int fd, struct msghdr *m, int f), (fd, m, f))
WRAP(send, ssize_t, (int fd, const void *p, size_t n, int f), (fd, p, n, f))
WRAP(sendto, ssize_t, (int fd, const void *p, size_t n, int f, const struct sockaddr *a, socklen_t l), (fd, p, n, f, a, l))
WRAP(sendmsg, ssize_t, (int fd, const struct msghdr *m, int f), (fd, m, f))
WRAP(accept, int, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l))
WRAP(accept4, int, (int fd, struct sockaddr *a, socklen_t *l, int f), (fd, a, l, f))
WRAP(connect, int, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
WRAP(poll, int, (struct pollfd *p, nfds_t n, int t), (p, n, t))
WRAP(select, int, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t), (n, r, w, e, t))
WRAP(epoll_wait, int, (int fd, struct epoll_event *e, int n, int t), (fd, e, n, t))
WRAP(pipe, int, (int fds[2]), (fds))
WRAP(pipe2, int, (int fds[2], int f), (fds, f))
WRAP(close, int, (int fd), (fd))
WRAP(kill, int, (pid_t p, int s), (p, s))
WRAP(raise, int, (int s), (s))
WRAP(wait, pid_t, (int *s), (s))
WRAP(waitpid, pid_t, (pid_t p, int *s, int o), (p, s, o))
WRAP(nanosleep, int, (const struct timespec *a, struct timespec *b), (a, b))
WRAP(sleep, unsigned, (unsigned s), (s))
WRAP(usleep, int, (useconds_t u), (u))
WRAP(sched_yield, int, (void), ())
WRAP(pthread_mutex_lock, int, (pthread_mutex_t *m), (m))
WRAP(pthread_mutex_trylock, int, (pthread_mutex_t *m), (m))
WRAP(pthread_mutex_unlock, int, (pthread_mutex_t *m), (m))
WRAP(pthread_cond_wait, int, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
WRAP(pthread_cond_timedwait, int, (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))
WRAP(pthread_cond_signal, int, (pthread_cond_t *c), (c))
WRAP(pthread_cond_broadcast, int, (pthread_cond_t *c), (c))
WRAP(pthread_rwlock_rdlock, int, (pthread_rwlock_t *l), (l))
WRAP(pthread_rwlock_wrlock, int, (pthread_rwlock_t *l), (l))
WRAP(pthread_rwlock_unlock, int, (pthread_rwlock_t *l), (l))
WRAP(pthread_barrier_wait, int, (pthread_barrier_t *b), (b))
WRAP(pthread_spin_lock, int, (pthread_spinlock_t *l), (l))
WRAP(pthread_spin_unlock, int, (pthread_spinlock_t *l), (l))
WRAP(sem_wait, int, (sem_t *s), (s))
WRAP(sem_post, int, (sem_t *s), (s))
WRAP(pthread_create, int, (pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg), (t, a, f, arg))
WRAP(pthread_join, int, (pthread_t t, void **r), (t, r))
WRAP(fread, size_t, (void *p, size_t s, size_t n, FILE *f), (p, s, n, f))
WRAP(fwrite, size_t, (const void *p, size_t s, size_t n, FILE *f), (p, s, n, f))
WRAP(fflush, int, (FILE * f), (f))
WRAP(fgets, char *, (char *s, int n, FILE *f), (s, n, f))
WRAP(fputs, int, (const char *s, FILE *f), (s, f))
WRAP(puts, int, (const char *s), (s))
WRAP(getc, int, (FILE * f), (f))
WRAP(fgetc, int, (FILE * f), (f))
WRAP(putc, int, (int c, FILE *f), (c, f))
WRAP(fputc, int, (int c, FILE *f), (c, f))
WRAP(putchar, int, (int c), (c))
WRAP(getchar, int, (void), ())
WRAP(__read_chk, ssize_t, (int fd, void *p, size_t n, size_t size), (fd, p, n, size))
WRAP(__fread_chk, size_t, (void *p, size_t size, size_t s, size_t n, FILE *f), (p, size, s, n, f))
WRAP(__fgets_chk, char *, (char *s, size_t size, int n, FILE *f), (s, size, n, f))
WRAP(fclose, int, (FILE * f), (f))

/* The variadic ones call the program's libc's va_list forms. */
static int (*real_vprintf)(const char *, va_list);
static int (*real_vfprintf)(FILE *, const char *, va_list);
static int (*real___vprintf_chk)(int, const char *, va_list);
static int (*real___vfprintf_chk)(FILE *, int, const char *, va_list);
static void *real_printf, *real_fprintf, *real___printf_chk, *real___fprintf_chk;
#define WRAP_VA(name, params, call) \
  static int wrap_##name params {   \
    va_list args;                   \
    va_start(args, format);         \
    ENTER(name);                    \
    int r = call;                   \
    LEAVE(name);                    \
    va_end(args);                   \
    return r;                       \
  }
WRAP_VA(printf, (const char *format, ...), real_vprintf(format, args))
WRAP_VA(fprintf, (FILE * f, const char *format, ...), real_vfprintf(f, format, args))
WRAP_VA(__printf_chk, (int flag, const char *format, ...), real___vprintf_chk(flag, format, args))
WRAP_VA(__fprintf_chk, (FILE * f, int flag, const char *format, ...), real___vfprintf_chk(f, flag, format, args))
/* open's mode is there when the flags create a file. */
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
#define WRAP_OPEN(name)                                             \
  static int wrap_##name(const char *path, int flags, ...) {        \
    mode_t mode = 0;                                                \
    if (flags & (O_CREAT | __O_TMPFILE)) {                          \
      va_list args;                                                 \
      va_start(args, flags);                                        \
      mode = va_arg(args, mode_t);                                  \
      va_end(args);                                                 \
    }                                                               \
    ENTER(name);                                                    \
    int r = real_##name(path, flags, mode);                         \
    LEAVE(name);                                                    \
    return r;                                                       \
  }
WRAP_OPEN(open)
WRAP_OPEN(open64)

/* Every call of the list, taken over where the program imports it (a
 * function missing here fails the build: the list names it); a variadic
 * one only when the program's libc has its va_list form. */
void hook_sync(void) {
  real_vprintf = (int (*)(const char *, va_list))dlsym(programLibc, "vprintf");
  real_vfprintf = (int (*)(FILE *, const char *, va_list))dlsym(programLibc, "vfprintf");
  real___vprintf_chk = (int (*)(int, const char *, va_list))dlsym(programLibc, "__vprintf_chk");
  real___vfprintf_chk = (int (*)(FILE *, int, const char *, va_list))dlsym(programLibc, "__vfprintf_chk");
  programSingleThreaded = (const char *)dlsym(programLibc, "__libc_single_threaded");
  const void *vaForm[ATOMX_SYNC_COUNT] = {0};
  vaForm[ATOMX_SYNC_ID_printf] = (void *)real_vprintf;
  vaForm[ATOMX_SYNC_ID_fprintf] = (void *)real_vfprintf;
  vaForm[ATOMX_SYNC_ID___printf_chk] = (void *)real___vprintf_chk;
  vaForm[ATOMX_SYNC_ID___fprintf_chk] = (void *)real___vfprintf_chk;
  const int variadic[] = {ATOMX_SYNC_ID_printf, ATOMX_SYNC_ID_fprintf, ATOMX_SYNC_ID___printf_chk, ATOMX_SYNC_ID___fprintf_chk};
  int skip[ATOMX_SYNC_COUNT] = {0};
  for (unsigned i = 0; i < sizeof variadic / sizeof *variadic; i++) skip[variadic[i]] = !vaForm[variadic[i]];
#define HOOK_(name, way, when) \
  if (!skip[ATOMX_SYNC_ID_##name]) atomx_hook_import(#name, (void *)wrap_##name, (void **)&real_##name);
  ATOMX_SYNC_CALLS(HOOK_)
#undef HOOK_
}
