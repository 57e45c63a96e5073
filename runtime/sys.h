/* Raw Linux x86-64 system calls, the runtime's one definition of them:
 *   - the runtime blob (runtime/stub) may not use libc: it runs before the
 *     program's libc is initialised, and in signal handlers;
 *   - the trace recorder (runtime/trace) calls them where libc's wrappers
 *     would not do: its writer thread has no libc thread state (no errno),
 *     and its fault handler must be async-signal-safe.
 * Each returns the kernel's result: -errno on failure.  Only <stdint.h>:
 * the blob is freestanding, and the recorder includes libc's headers too
 * (these names are not theirs). */
#ifndef ATOMX_RUNTIME_SYS_H
#define ATOMX_RUNTIME_SYS_H

#include <stdint.h>

#define SYS_READ 0
#define SYS_WRITE 1
#define SYS_CLOSE 3
#define SYS_PREAD64 17
#define SYS_OPENAT 257
#define SYS_NEWFSTATAT 262
#define SYS_MMAP 9
#define SYS_MUNMAP 11
#define SYS_MPROTECT 10
#define SYS_RT_SIGPROCMASK 14
#define SYS_RT_SIGACTION 13
#define SYS_GETPID 39
#define SYS_GETCWD 79
#define SYS_CHDIR 80
#define SYS_READLINK 89
#define SYS_GETPPID 110
#define SYS_ARCH_PRCTL 158
#define SYS_GETTID 186
#define SYS_FUTEX 202
#define SYS_SCHED_YIELD 24
#define SYS_EXIT_GROUP 231
#define SYS_TGKILL 234
#define SYS_KCMP 312
#define SYS_MEMFD_CREATE 319

#define STUB_ARCH_SET_GS 0x1001
#define STUB_ARCH_GET_GS 0x1004
#define STUB_EINTR 4
#define STUB_ESRCH 3
#define STUB_MFD_CLOEXEC 1u
#define STUB_KCMP_VM 1
#define STUB_FUTEX_WAIT_PRIVATE 128   /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define STUB_FUTEX_WAKE_PRIVATE 129   /* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */

static inline long raw_syscall3(long n, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

static inline long raw_syscall4(long n, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}

static inline long sys_write(int fd, const void *buf, unsigned long n) {
  return raw_syscall3(SYS_WRITE, fd, (long)buf, (long)n);
}
static inline long sys_close(int fd) { return raw_syscall3(SYS_CLOSE, fd, 0, 0); }
/* open(path, O_RDONLY | O_CLOEXEC) */
static inline long sys_open_read(const char *path) { return raw_syscall4(SYS_OPENAT, -100 /* AT_FDCWD */, (long)path, 02000000, 0); }
/* open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) */
static inline long sys_open_write(const char *path) {
  return raw_syscall4(SYS_OPENAT, -100 /* AT_FDCWD */, (long)path, 02001101, 0666);
}
static inline long sys_read(int fd, void *buf, unsigned long n) { return raw_syscall3(SYS_READ, fd, (long)buf, (long)n); }
/* The length of the path with its NUL, or -errno. */
static inline long sys_getcwd(char *buf, unsigned long n) { return raw_syscall3(SYS_GETCWD, (long)buf, (long)n, 0); }
static inline long sys_chdir(const char *path) { return raw_syscall3(SYS_CHDIR, (long)path, 0, 0); }
static inline long sys_readlink(const char *path, char *buf, unsigned long n) {
  return raw_syscall3(SYS_READLINK, (long)path, (long)buf, (long)n);
}
/* The kernel's struct stat on x86-64. */
struct stub_stat {
  uint64_t dev, ino, nlink;
  uint32_t mode, uid, gid, pad;
  uint64_t rdev;
  int64_t size, blksize, blocks;
  int64_t atime, atimeNs, mtime, mtimeNs, ctime, ctimeNs;
  int64_t unused[3];
};
static inline long sys_stat(const char *path, struct stub_stat *st) {
  return raw_syscall4(SYS_NEWFSTATAT, -100 /* AT_FDCWD */, (long)path, (long)st, 0);
}
static inline long sys_pread(int fd, void *buf, unsigned long n, long offset) {
  return raw_syscall4(SYS_PREAD64, fd, (long)buf, (long)n, offset);
}
static inline long sys_getpid(void) { return raw_syscall3(SYS_GETPID, 0, 0, 0); }
static inline long sys_getppid(void) { return raw_syscall3(SYS_GETPPID, 0, 0, 0); }
static inline long sys_gettid(void) { return raw_syscall3(SYS_GETTID, 0, 0, 0); }
/* 0 if processes a and b share their address space (KCMP_VM). */
static inline long sys_kcmp_vm(long a, long b) { return raw_syscall3(SYS_KCMP, a, b, STUB_KCMP_VM); }
static inline long sys_memfd_create(const char *name, unsigned flags) {
  return raw_syscall3(SYS_MEMFD_CREATE, (long)name, flags, 0);
}
static inline long sys_tgkill(long pid, long tid, int sig) {
  return raw_syscall3(SYS_TGKILL, pid, tid, sig);
}
static inline long raw_syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return r;
}
/* Anonymous private memory, zero-filled; -errno on failure. */
static inline long sys_mmap_anonymous(unsigned long bytes) {
  return raw_syscall6(SYS_MMAP, 0, (long)bytes, 3 /* PROT_READ|PROT_WRITE */, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, -1, 0);
}
static inline long sys_munmap(void *p, unsigned long bytes) { return raw_syscall3(SYS_MUNMAP, (long)p, (long)bytes, 0); }
static inline long sys_mprotect(uint64_t start, unsigned long bytes, int prot) {
  return raw_syscall3(SYS_MPROTECT, (long)start, (long)bytes, prot);
}
static inline long sys_arch_prctl(int code, unsigned long arg) { return raw_syscall3(SYS_ARCH_PRCTL, code, (long)arg, 0); }
/* Sets the signal mask to *set (8 bytes), the old one to *old. */
static inline long sys_sigprocmask_set(const uint64_t *set, uint64_t *old) {
  return raw_syscall4(SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, (long)set, (long)old, 8);
}
/* The kernel's struct sigaction (not libc's): handler, flags, restorer, mask. */
struct stub_kernel_sigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};
static inline long sys_rt_sigaction(int sig, const struct stub_kernel_sigaction *act,
                                    struct stub_kernel_sigaction *old) {
  return raw_syscall4(SYS_RT_SIGACTION, sig, (long)act, (long)old, 8);
}
struct stub_timespec {
  long tv_sec, tv_nsec;
};
static inline long sys_futex_wait(uint32_t *addr, uint32_t expected, const struct stub_timespec *timeout) {
  return raw_syscall4(SYS_FUTEX, (long)addr, STUB_FUTEX_WAIT_PRIVATE, expected, (long)timeout);
}
/* Wakes up to n waiters. */
static inline long sys_futex_wake(uint32_t *addr, int n) { return raw_syscall3(SYS_FUTEX, (long)addr, STUB_FUTEX_WAKE_PRIVATE, n); }
static inline long sys_futex_wake_all(uint32_t *addr) { return sys_futex_wake(addr, 0x7fffffff); }
static inline long sys_sched_yield(void) { return raw_syscall3(SYS_SCHED_YIELD, 0, 0, 0); }
static inline __attribute__((noreturn)) void sys_exit_group(int status) {
  for (;;) raw_syscall3(SYS_EXIT_GROUP, status, 0, 0);
}

#endif
