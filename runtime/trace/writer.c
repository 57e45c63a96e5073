/* The writer thread: one per process, started at the first full buffer (so
 * never while the bytes are discarded, and again in a forked child, which
 * has none), compresses and writes the chunks the program's threads queue
 * (hand_off), stream by stream in their order.
 *
 * It is a bare clone() thread, not one of the program's libc's
 * pthread_create, nor of this namespace's (which never saw the program's
 * threads).  The program's libc would count it among the program's
 * threads: glibc ends a process whose main thread called pthread_exit when
 * its count of threads reaches zero, which it then never would; it would
 * make the program's libc multi-threaded for good (__libc_single_threaded:
 * stdio and libstdc++ would take the locks they skip in a program that
 * started no thread, so the program would run otherwise than untraced);
 * and this namespace's code in it would need atomx_analysis_thread_start
 * first.  A clone() thread is known to neither libc.  It dies with the
 * process (exit_group: exit, _exit, a fatal signal) and at exec, and never
 * runs program code: so it blocks every signal (a signal to the process
 * goes to a thread of the program), and has no buffer and no event but
 * `writer`.  It runs only pack_chunk and put_chunk: raw system calls,
 * futexes and zstd with a static workspace (ZSTD_initStaticCCtx: no
 * malloc), on a stack of its own and a thread control block of its own
 * (zeroed, with the stack protector's canary copied), whose libc thread
 * state is never read. */
#include "recorder.h"

#include <limits.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#define WRITER_STACK_BYTES (256u << 10)
#define WRITER_TLS_BYTES (64u << 10) /* below its thread pointer, where static TLS would be */
#define WRITER_TCB_BYTES (16u << 10)
static uint32_t writerWork; /* chunks queued so far, by every thread: the writer's futex word */
static pid_t writerPid;     /* the process whose writer thread runs */
static pid_t writerClaim;   /* the process that started one, or tried to */
static uint8_t *writerArea; /* its stack, its TLS and thread control block */
static void *writerWorkspace;
static size_t writerWorkspaceBytes;
static ZSTD_CCtx *writerZstd;
static uint8_t *writerPacked; /* PACKED_BYTES */

int writer_runs(void) { return __atomic_load_n(&writerPid, __ATOMIC_ACQUIRE) == getpid(); }

static int writer_main(void *process) {
  const pid_t pid = (pid_t)(intptr_t)process;
  for (;;) {
    const uint32_t seen = __atomic_load_n(&writerWork, __ATOMIC_ACQUIRE);
    int wrote = 0;
    for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
      if (__atomic_load_n(&b->pid, __ATOMIC_ACQUIRE) != pid) continue;
      const uint32_t k = __atomic_load_n(&b->written, __ATOMIC_RELAXED);
      if (k == __atomic_load_n(&b->queued, __ATOMIC_ACQUIRE)) continue;
      const uint32_t i = k % POOL_BUFFERS;
      const struct chunk c =
          pack_chunk(b->pool[i], b->queue[i].rawSize, b->queue[i].marks, b->queue[i].markCount, b->queue[i].flags,
                     b->queue[i].sequence, writerZstd, writerPacked);
      put_chunk(b->fd, &c);
      __atomic_store_n(&b->written, k + 1, __ATOMIC_RELEASE);
      sys_futex_wake(&b->written, INT_MAX);
      wrote = 1;
    }
    if (!wrote) sys_futex_wait(&writerWork, seen, NULL);
  }
  return 0;
}

/* This process's writer thread: 1 when it runs.  0 when another thread of
 * the process is starting it, or it could not be started: the caller then
 * writes its chunk itself, as before there was a writer.  Async-signal-safe
 * but for the `writer` event (as new_buffer's `thread`). */
int start_writer(void) {
  const pid_t pid = getpid();
  if (__atomic_load_n(&writerPid, __ATOMIC_ACQUIRE) == pid) return 1;
  if (vfork_buffer()) return 0; /* a vfork child: these variables are its parent's */
  pid_t claim = __atomic_load_n(&writerClaim, __ATOMIC_RELAXED);
  if (claim == pid || !__atomic_compare_exchange_n(&writerClaim, &claim, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return 0;
  /* Mapped once per address space: a forked child takes its parent's
   * copies, which no thread of the child uses. */
  if (!writerArea) {
    writerWorkspaceBytes = (ZSTD_estimateCCtxSize(1) + 63) & ~(size_t)63;
    uint8_t *area = mmap(NULL, WRITER_STACK_BYTES + WRITER_TLS_BYTES + WRITER_TCB_BYTES, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *zstd = mmap(NULL, writerWorkspaceBytes + PACKED_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED || zstd == MAP_FAILED) return 0;
    mprotect(area, 4096, PROT_NONE); /* the stack's guard page */
    writerWorkspace = zstd;
    writerPacked = zstd + writerWorkspaceBytes;
    writerArea = area;
  }
  writerZstd = ZSTD_initStaticCCtx(writerWorkspace, writerWorkspaceBytes);
  if (!writerZstd) return 0;
  /* Zero but for these words (a fresh mapping, which the writer never writes). */
  uint64_t *tcb = (uint64_t *)(writerArea + WRITER_STACK_BYTES + WRITER_TLS_BYTES);
  tcb[0] = tcb[2] = (uint64_t)tcb; /* tcbhead_t: tcb, self */
  __asm__("mov %%fs:0x28, %0" : "=r"(tcb[5]));  /* stack_guard */
  __asm__("mov %%fs:0x30, %0" : "=r"(tcb[6]));  /* pointer_guard */
  /* Started with every signal blocked (it inherits the mask), which is
   * then given back to this thread. */
  uint64_t all = ~(uint64_t)0, mask;
  sys_sigprocmask_set(&all, &mask);
  const int tid = clone(writer_main, writerArea + WRITER_STACK_BYTES,
                        CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS,
                        (void *)(intptr_t)pid, NULL, tcb, NULL);
  sys_sigprocmask_set(&mask, NULL);
  if (tid <= 0) return 0;
  __atomic_store_n(&writerPid, pid, __ATOMIC_RELEASE);
  event("writer", "%d", tid);
  return 1;
}

/* A chunk was queued (hand_off): the writer's work. */
void wake_writer(void) {
  __atomic_add_fetch(&writerWork, 1, __ATOMIC_RELEASE);
  sys_futex_wake(&writerWork, 1);
}
