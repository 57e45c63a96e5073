/* The recorder of an abstract-execution trace: the analysis object of a
 * program rewritten by `atomx trace` (built from this file alone, with
 * libatomx_analysis.a).  The program's inserted stores write straight into
 * the running thread's buffer through the cursor at
 * %fs:ATOMX_TRACE_CURSOR_OFFSET (instrument/CallCode.h, emitStores); no
 * store calls anything.  This file only
 *   - gives a thread its first buffer, and a full buffer's thread a fresh
 *     one: both arrive as a fault of the first store of a sequence (the
 *     cursor is 0 in a new thread, and every buffer ends in a guard page),
 *     which the SIGSEGV handler recognises, answers and restarts;
 *   - hands a full buffer to the process's writer thread, which compresses
 *     it and writes it as one chunk of the thread's stream
 *     (include/atomx/trace_format.h), in $ATOMX_TRACE_DIR/thread.TID.axt,
 *     while the thread goes on in the next buffer of its pool (or nowhere
 *     when that is unset: the stores alone, for measurement);
 *   - writes every thread's last chunk when the thread ends (a destructor
 *     of the program's own pthread key) and when the process exits, once
 *     the writer has written what was queued before.
 * The program's own SIGSEGV handler must not replace the recorder's: its
 * GOT slots for sigaction and signal are pointed at wrappers here, which
 * keep the program's SIGSEGV disposition aside (and hand it back when
 * asked).  A fault that is not a store's goes to that disposition: the
 * program's handler, or, for the default, the streams are written and the
 * process dies as it would have. */
#define _GNU_SOURCE
#include <atomx/address_map.h>
#include <atomx/trace_format.h>
/* ZSTD_initStaticCCtx and ZSTD_estimateCCtxSize: the writer thread's
 * compressor, in a workspace of its own (no malloc). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <time.h>
#include <unistd.h>

#define BUFFER_BYTES (1u << 20)
#define GUARD_BYTES 4096u
#define MAX_MARKS 256u /* signal marks per chunk; more: the chunk ends early */
/* Buffers per thread: the one the thread fills, and up to POOL_BUFFERS - 1
 * full ones queued for the writer thread.  A thread whose pool is all
 * queued waits for the writer (back-pressure: no byte is dropped).  They
 * are mapped as they are first needed: a thread the writer keeps up with
 * uses two. */
#define POOL_BUFFERS 4u
#define PACKED_BYTES ZSTD_COMPRESSBOUND(BUFFER_BYTES)

struct buffer {
  struct buffer *next; /* the registry, newest first */
  uint8_t *base;       /* the buffer being filled: BUFFER_BYTES, then the guard page */
  uint64_t threadPointer;
  pid_t pid, tid;
  int fd;
  uint64_t sequence; /* the stream's next chunk */
  int ended;
  /* Who writes to the stream holds `lock`: the thread in its fault handler
   * (hand_off), when it forks or ends, and any thread of the process at
   * exit or exec (flush_all), which may write another thread's last chunk
   * while that thread still runs.  `closed`: the last chunk is written;
   * what the thread records after it is dropped (the process is ending). */
  uint32_t lock;
  int closed;
  int childFirst; /* a forked child's next chunk is its first own one */
  ZSTD_CCtx *zstd;   /* the compressor of the chunks written in the thread itself */
  uint8_t *packed;   /* PACKED_BYTES bytes, for it */
  /* The pool (base is pool[queued % POOL_BUFFERS]) and the chunks queued
   * for the writer: chunk k (k counts the queued chunks from 0) is
   * pool[k % POOL_BUFFERS]'s first queue[k % POOL_BUFFERS].rawSize bytes.
   * The thread alone raises queued, the writer alone raises written. */
  uint8_t *pool[POOL_BUFFERS];
  struct {
    uint32_t rawSize, flags; /* flags: ATOMX_TRACE_CHUNK_CHILD or 0 */
    uint64_t sequence;
    uint32_t markCount; /* the signal marks of its bytes */
    AtomxTraceMark marks[MAX_MARKS];
  } queue[POOL_BUFFERS];
  uint32_t queued;  /* chunks queued */
  uint32_t written; /* of them, written to the stream (a futex word) */
  char path[4200]; /* the stream's file, once open */
  uint32_t markCount; /* signal marks of the bytes in the buffer */
  AtomxTraceMark marks[MAX_MARKS];
};

static struct buffer *registry;
static char traceDir[4096];
static int discarding = 1;
static int (*realSigaction)(int, const struct sigaction *, struct sigaction *);
static pthread_key_t programKey;
static void *programLibc; /* the program's libc (dlmopen's handle) */
static int (*programSetSpecific)(pthread_key_t, const void *);

static uint64_t thread_pointer(void) {
  uint64_t tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));
  return tp;
}
static uint8_t *cursor(void) {
  uint8_t *c;
  __asm__ volatile("mov %%fs:%c1, %0" : "=r"(c) : "i"(ATOMX_TRACE_CURSOR_OFFSET));
  return c;
}
static void set_cursor(uint8_t *c) {
  __asm__ volatile("mov %0, %%fs:%c1" : : "r"(c), "i"(ATOMX_TRACE_CURSOR_OFFSET) : "memory");
}

/* A system call without libc: no errno (the writer thread has no libc
 * thread state), and safe in a signal handler.  Returns -errno on error. */
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
  return ret;
}
static void futex_wait(uint32_t *word, uint32_t value) {
  sys6(SYS_futex, (long)word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, value, 0, 0, 0);
}
static void futex_wake(uint32_t *word, int n) { sys6(SYS_futex, (long)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, 0, 0, 0); }

static void write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    const long k = sys6(SYS_write, fd, (long)p, (long)n, 0, 0, 0);
    if (k == -EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= (size_t)k;
  }
}

static void fail(const char *what) {
  char msg[512];
  int n = snprintf(msg, sizeof msg, "atomx trace: %s: %s\n", what, strerror(errno));
  write_all(2, msg, (size_t)n);
  _exit(127);
}

/* One line of the trace's event log (ATOMX_TRACE_EVENTS): the monotonic
 * clock, the process and thread, the event and what it concerns.  One
 * write to a file opened for appending, which every process of the trace
 * shares: the lines of different processes do not mix, and their order in
 * time is the clock's. */
static int eventsFd = -1;
static void event(const char *what, const char *format, ...) {
  if (discarding) return;
  if (eventsFd < 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", traceDir, ATOMX_TRACE_EVENTS);
    eventsFd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (eventsFd < 0) fail(path);
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char line[4400];
  int n = snprintf(line, sizeof line, "%llu %ld %ld %s", (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                   (long)getpid(), (long)syscall(SYS_gettid), what);
  if (format && n < (int)sizeof line - 2) {
    line[n++] = ' ';
    va_list args;
    va_start(args, format);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, format, args);
    va_end(args);
  }
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  write_all(eventsFd, line, (size_t)n);
}

/* The thread's stream file: thread.TID.axt, or thread.TID-K.axt when a
 * program this one exec'd from left one under the same thread id. */
static void open_stream(struct buffer *b) {
  for (int k = 0; b->fd < 0; k++) {
    if (k == 0) snprintf(b->path, sizeof b->path, "%s/thread.%ld.axt", traceDir, (long)b->tid);
    else snprintf(b->path, sizeof b->path, "%s/thread.%ld-%d.axt", traceDir, (long)b->tid, k);
    b->fd = open(b->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (b->fd < 0 && (errno != EEXIST || k > 1000)) fail(b->path);
  }
  event("stream", "%s", strrchr(b->path, '/') + 1);
}

/* A forked child's stream starts with its parent's: the first `chunks`
 * chunks of the parent's file, the ones written before the fork. */
static void copy_chunks(const char *from, uint64_t chunks, int to) {
  static uint8_t data[1 << 16]; /* a forked child has one thread */
  int fd = open(from, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(from);
  for (uint64_t i = 0; i < chunks; i++) {
    AtomxTraceChunk h;
    if (read(fd, &h, sizeof h) != (ssize_t)sizeof h) fail("cannot read the parent's trace stream");
    write_all(to, &h, sizeof h);
    for (uint32_t left = h.storedSize; left > 0;) {
      ssize_t k = read(fd, data, left < sizeof data ? left : sizeof data);
      if (k <= 0) fail("cannot read the parent's trace stream");
      write_all(to, data, (size_t)k);
      left -= (uint32_t)k;
    }
  }
  close(fd);
}

/* A chunk ready to be written: its header, and its stored bytes (in the
 * buffer, or compressed in `packed`). */
struct chunk {
  AtomxTraceChunk header;
  const uint8_t *stored;
  const AtomxTraceMark *marks; /* header.marks of them */
};

/* [data, data + n) as chunk `sequence`, compressed with zstd at level 1
 * where that pays (levels below 1 were no faster on gzip's stream: they
 * save less time compressing than they add writing).  No errno, no malloc,
 * no lock: the writer thread runs this too. */
static struct chunk pack_chunk(const uint8_t *data, uint32_t n, const AtomxTraceMark *marks, uint32_t markCount,
                               uint32_t flags, uint64_t sequence, ZSTD_CCtx *zstd, uint8_t *packed) {
  const uint8_t *stored = data;
  uint32_t storedSize = n, codec = ATOMX_TRACE_CODEC_RAW;
  if (n > 0 && zstd && packed) {
    const size_t k = ZSTD_compressCCtx(zstd, packed, PACKED_BYTES, data, n, 1);
    if (!ZSTD_isError(k) && k < n) stored = packed, storedSize = (uint32_t)k, codec = ATOMX_TRACE_CODEC_ZSTD;
  }
  const uint32_t checksum =
      atomx_trace_checksum_more(atomx_trace_checksum(stored, storedSize), marks, markCount * sizeof(AtomxTraceMark));
  const struct chunk c = {
      {ATOMX_TRACE_CHUNK_MAGIC, ATOMX_TRACE_VERSION, sequence, n, storedSize, codec | flags, checksum, markCount, 0},
      stored, marks};
  return c;
}
static void put_chunk(int fd, const struct chunk *c) {
  write_all(fd, &c->header, sizeof c->header);
  write_all(fd, c->stored, c->header.storedSize);
  write_all(fd, c->marks, c->header.marks * sizeof(AtomxTraceMark));
}

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

static int writer_runs(void) { return __atomic_load_n(&writerPid, __ATOMIC_ACQUIRE) == getpid(); }

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
      futex_wake(&b->written, INT_MAX);
      wrote = 1;
    }
    if (!wrote) futex_wait(&writerWork, seen);
  }
  return 0;
}

/* This process's writer thread: 1 when it runs.  0 when another thread of
 * the process is starting it, or it could not be started: the caller then
 * writes its chunk itself, as before there was a writer.  Async-signal-safe
 * but for the `writer` event (as new_buffer's `thread`). */
static int start_writer(void) {
  const pid_t pid = getpid();
  if (__atomic_load_n(&writerPid, __ATOMIC_ACQUIRE) == pid) return 1;
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
  sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&mask, sizeof mask, 0, 0);
  const int tid = clone(writer_main, writerArea + WRITER_STACK_BYTES,
                        CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS,
                        (void *)(intptr_t)pid, NULL, tcb, NULL);
  sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof mask, 0, 0);
  if (tid <= 0) return 0;
  __atomic_store_n(&writerPid, pid, __ATOMIC_RELEASE);
  event("writer", "%d", tid);
  return 1;
}

/* The compressor of the chunks a program's thread writes itself. */
static void own_compressor(struct buffer *b) {
  if (!b->zstd) b->zstd = ZSTD_createCCtx();
  if (!b->packed) {
    void *p = mmap(NULL, PACKED_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    b->packed = p == MAP_FAILED ? NULL : p;
  }
}

/* b's queued chunks not yet written, written here: a forked child's copy
 * of what its parent had queued, in a process without a writer. */
static void write_queued(struct buffer *b) {
  for (uint32_t k; (k = b->written) != b->queued; b->written = k + 1) {
    const uint32_t i = k % POOL_BUFFERS;
    own_compressor(b);
    const struct chunk c =
        pack_chunk(b->pool[i], b->queue[i].rawSize, b->queue[i].marks, b->queue[i].markCount, b->queue[i].flags,
                     b->queue[i].sequence, b->zstd, b->packed);
    put_chunk(b->fd, &c);
  }
}

/* Every chunk of b queued so far, written. */
static void drain(struct buffer *b) {
  if (!writer_runs()) {
    write_queued(b);
    return;
  }
  for (uint32_t w; (w = __atomic_load_n(&b->written, __ATOMIC_ACQUIRE)) != __atomic_load_n(&b->queued, __ATOMIC_ACQUIRE);)
    futex_wait(&b->written, w);
}

/* The bytes [b->base, end) as the stream's next chunk, compressed and
 * written here (compressed while the writer may still be writing the
 * chunks queued before it, written once they are); `final`: its last. */
static void flush(struct buffer *b, const uint8_t *end, int final) {
  if (!end || end < b->base || end > b->base + BUFFER_BYTES) end = b->base;
  const uint32_t n = (uint32_t)(end - b->base);
  const uint32_t marks = b->markCount;
  b->markCount = 0;
  if (n == 0 && marks == 0 && !final) return;
  if (discarding) return;
  if (b->fd < 0) open_stream(b);
  if (!writer_runs()) write_queued(b); /* first: it uses the same compressor */
  if (n > 0) own_compressor(b);
  const struct chunk c =
      pack_chunk(b->base, n, b->marks, marks, (final ? ATOMX_TRACE_CHUNK_FINAL : 0u) | (b->childFirst ? ATOMX_TRACE_CHUNK_CHILD : 0u),
                 b->sequence++, b->zstd, b->packed);
  b->childFirst = 0;
  drain(b);
  put_chunk(b->fd, &c);
}

/* A buffer and its guard page; `populate`: its pages now, in one go (a
 * buffer of the pool, which will be filled), rather than a fault each. */
static uint8_t *map_buffer(int populate) {
  uint8_t *base = mmap(NULL, BUFFER_BYTES + GUARD_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (base == MAP_FAILED) fail("cannot map a trace buffer");
  if (mprotect(base + BUFFER_BYTES, GUARD_BYTES, PROT_NONE) != 0) fail("cannot protect a trace buffer's guard page");
  return base;
}

/* struct buffer's lock (no signal handler of the program runs while it is
 * held: every holder has them blocked). */
static void lock_buffer(struct buffer *b) {
  while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE)) sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}
static void unlock_buffer(struct buffer *b) { __atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE); }

/* A full buffer, [b->base, end): queued for the writer thread, and b->base
 * the next buffer of the pool, at once unless all the others are still
 * queued (then this waits for the writer).  In the SIGSEGV handler: only
 * atomics, futexes and mmap, but for the stream's first open.  Once the
 * stream is closed, the buffer starts over and nothing is written. */
static void hand_off_locked(struct buffer *b, const uint8_t *end);
static void hand_off(struct buffer *b, const uint8_t *end) {
  lock_buffer(b);
  if (b->closed) b->markCount = 0;
  else hand_off_locked(b, end);
  unlock_buffer(b);
}
static void hand_off_locked(struct buffer *b, const uint8_t *end) {
  if (discarding) {
    b->markCount = 0;
    return;
  }
  if (!start_writer()) {
    flush(b, end, 0);
    return;
  }
  if (end > b->base + BUFFER_BYTES) end = b->base + BUFFER_BYTES;
  if (b->fd < 0) open_stream(b);
  const uint32_t k = b->queued, i = k % POOL_BUFFERS;
  b->queue[i].rawSize = (uint32_t)(end - b->base);
  b->queue[i].flags = b->childFirst ? ATOMX_TRACE_CHUNK_CHILD : 0u;
  b->queue[i].sequence = b->sequence++;
  b->queue[i].markCount = b->markCount;
  memcpy(b->queue[i].marks, b->marks, b->markCount * sizeof(AtomxTraceMark));
  b->markCount = 0;
  b->childFirst = 0;
  __atomic_store_n(&b->queued, k + 1, __ATOMIC_RELEASE);
  __atomic_add_fetch(&writerWork, 1, __ATOMIC_RELEASE);
  futex_wake(&writerWork, 1);
  /* Chunk k + 1 goes where chunk k + 1 - POOL_BUFFERS was, once that is written. */
  for (uint32_t w; k + 1 - (w = __atomic_load_n(&b->written, __ATOMIC_ACQUIRE)) >= POOL_BUFFERS;) futex_wait(&b->written, w);
  uint8_t **next = &b->pool[(k + 1) % POOL_BUFFERS];
  if (!*next) *next = map_buffer(1);
  b->base = *next;
}

/* This thread's buffer.  A forked child finds its parent's copy and makes
 * it its own: a stream of its own, from the bytes not yet written. */
static struct buffer *own_buffer(void) {
  const uint64_t tp = thread_pointer();
  const pid_t pid = getpid();
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->ended || b->threadPointer != tp) continue;
    if (b->pid != pid) {
      /* The child continues its parent's path: its stream is the parent's
       * chunks written before the fork, then the ones it still had queued
       * (written here), then this buffer (which holds the rest of the
       * parent's bytes up to the fork), then its own. */
      char parent[sizeof b->path];
      strcpy(parent, b->path);
      event("forked", "%ld", (long)getppid());
      if (b->fd >= 0) close(b->fd);
      b->tid = (pid_t)syscall(SYS_gettid);
      b->fd = -1;
      b->childFirst = 1;
      b->lock = 0, b->closed = 0; /* the child's own copy */
      if (!discarding) {
        open_stream(b);
        const uint64_t whole = b->written != b->queued ? b->queue[b->written % POOL_BUFFERS].sequence : b->sequence;
        if (whole > 0) copy_chunks(parent, whole, b->fd);
        write_queued(b);
      }
      __atomic_store_n(&b->pid, pid, __ATOMIC_RELEASE); /* this process's writer may take its chunks now */
    }
    return b;
  }
  return NULL;
}

/* The process whose streams are closed (at exit, or exec): a thread it
 * starts from then on records nothing (its streams would get no last
 * chunk, the process is about to end). */
static pid_t closedPid;

static struct buffer *new_buffer(void) {
  struct buffer *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) fail("cannot map a trace buffer");
  b->base = b->pool[0] = map_buffer(0);
  b->threadPointer = thread_pointer();
  b->pid = getpid();
  b->tid = (pid_t)syscall(SYS_gettid);
  b->fd = -1;
  b->closed = __atomic_load_n(&closedPid, __ATOMIC_ACQUIRE) == b->pid;
  b->next = __atomic_load_n(&registry, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&registry, &b->next, b, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
  if (programSetSpecific) programSetSpecific(programKey, b);
  event("thread", NULL);
  return b;
}

/* No handler of the program may run between writing a buffer and moving
 * its cursor: its records would go after the bytes written, and be lost
 * (a handler that comes later gets a buffer of its own). */
static void block_signals(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, old);
}
static void restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* The program's thread ends: its last chunk, and a zero cursor, so that a
 * thread that reuses this thread's descriptor starts a buffer of its own. */
static void thread_ends(void *value) {
  struct buffer *b = value;
  if (!b || b->threadPointer != thread_pointer()) return;
  sigset_t mask;
  block_signals(&mask);
  own_buffer(); /* in a forked child: adopt the parent's copy first */
  lock_buffer(b);
  if (!b->closed) flush(b, cursor(), 1);
  b->closed = b->ended = 1;
  unlock_buffer(b);
  event("thread-end", NULL);
  set_cursor(NULL);
  if (b->fd >= 0) close(b->fd);
  for (unsigned i = 0; i < POOL_BUFFERS; i++)
    if (b->pool[i]) munmap(b->pool[i], BUFFER_BYTES + GUARD_BYTES);
  restore_signals(&mask);
}

/* Every buffer of this process, at exit (or before a fatal signal). */
static void flush_all(void) {
  sigset_t mask;
  block_signals(&mask);
  own_buffer(); /* in a forked child: adopt the parent's copy first */
  const uint64_t tp = thread_pointer();
  const pid_t pid = getpid();
  __atomic_store_n(&closedPid, pid, __ATOMIC_RELEASE); /* first: a buffer made from now on starts closed */
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->pid != pid) continue;
    lock_buffer(b);
    if (!b->ended && !b->closed) {
      if (b->threadPointer == tp) {
        flush(b, cursor(), 1);
        set_cursor(b->base);
      } else {
        flush(b, *(uint8_t *const *)(b->threadPointer + ATOMX_TRACE_CURSOR_OFFSET), 1);
      }
      b->closed = 1;
    }
    unlock_buffer(b);
  }
  restore_signals(&mask);
}

static void at_exit(void) {
  flush_all();
  event("exit", NULL);
}

/* gregs index of each hardware register number. */
static const int kGreg[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                              REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

/* The program's dispositions, as it set them through sigaction or signal
 * (the GOT hooks below).  SIGSEGV's handler is always on_fault, which
 * passes the faults that are not the recorder's to programActs[SIGSEGV];
 * another signal with a handler of the program's gets on_signal, which
 * marks where the handler ran and calls it (`wrapped`). */
static struct sigaction programActs[NSIG];
static volatile unsigned char wrapped[NSIG];

/* The address map, filled in by the atomx runtime before the program starts
 * (include/atomx/address_map.h). */
AtomxCodeMap atomx_analysis_code_map;

/* A store through register `reg`, which holds the cursor `slot`, faulted at
 * `addr`: a thread's first store (the cursor is 0) or a full buffer.  Gives
 * the thread a fresh buffer (queueing the full one) and points the register
 * at it; 0 when the fault is not such a store's. */
static int swap_buffer(greg_t *g, int reg, uint8_t *slot, uintptr_t addr) {
  if ((uint8_t *)g[kGreg[reg]] != slot) return 0;
  struct buffer *b = own_buffer();
  const int fresh = slot == NULL && addr < 4096;
  const int full = b && slot >= b->base && addr >= (uintptr_t)b->base + BUFFER_BYTES &&
                   addr < (uintptr_t)b->base + BUFFER_BYTES + GUARD_BYTES;
  if (!fresh && !full) return 0;
  if (full) hand_off(b, slot);
  if (fresh && !b) b = new_buffer();
  g[kGreg[reg]] = (greg_t)b->base;
  set_cursor(b->base);
  return 1;
}

/* 66? REX? C6|C7 modrm(mod 01, reg 000) disp8 imm: a trace store (its
 * base register in *reg, its offset in *disp, its width in *width); the
 * length of the instruction, or 0. */
static int store_form(const uint8_t *p, int *reg, int *disp, int *width) {
  const uint8_t *q = p;
  int rexB = 0, wide = 4;
  if (*q == 0x66) q++, wide = 2;
  if ((*q & 0xf0) == 0x40) rexB = *q++ & 1;
  if (!((q[0] == 0xc6 || q[0] == 0xc7) && (q[1] & 0xc0) == 0x40 && (q[1] & 0x38) == 0)) return 0;
  *reg = rexB << 3 | (q[1] & 7);
  *disp = (int8_t)q[2];
  *width = q[0] == 0xc6 ? 1 : wide;
  return (int)(q + 3 + *width - p);
}

static void on_fault(int sig, siginfo_t *info, void *context);
static void deliver(int sig, siginfo_t *info, void *context, struct sigaction *act);

/* Runs one instruction of the code atomx inserted (instrument/CallCode's
 * emitStores, and the jumps of edge stubs and stitches) on the interrupted
 * context, as the CPU would have; 0 for an instruction of another form. */
static int step_inserted(greg_t *g) {
  uint8_t *p = (uint8_t *)g[REG_RIP];
  int reg, disp, width;
  const int len = store_form(p, &reg, &disp, &width);
  if (len) {
    uint8_t *slot = cursor();
    uint8_t *at = (uint8_t *)g[kGreg[reg]] + disp;
    struct buffer *b = own_buffer();
    const int inside = b && (uint8_t *)g[kGreg[reg]] >= b->base && at >= b->base && at + width <= b->base + BUFFER_BYTES;
    if (!inside) {
      if (!swap_buffer(g, reg, slot, (uintptr_t)at)) return 0;
      at = (uint8_t *)g[kGreg[reg]] + disp;
    }
    memcpy(at, p + len - width, (size_t)width);
    g[REG_RIP] += len;
    return 1;
  }
  /* mov %fs:0x80,%r and mov %r,%fs:0x80: 64 REX.W(R) 8B|89 modrm(00 r 100) 25 disp32 */
  if (p[0] == 0x64 && (p[1] & 0xfb) == 0x48 && (p[2] == 0x8b || p[2] == 0x89) && (p[3] & 0xc7) == 0x04 && p[4] == 0x25 &&
      p[5] == ATOMX_TRACE_CURSOR_OFFSET && !p[6] && !p[7] && !p[8]) {
    const int r = ((p[1] & 4) << 1) | ((p[3] >> 3) & 7);
    if (p[2] == 0x8b) g[kGreg[r]] = (greg_t)cursor();
    else set_cursor((uint8_t *)g[kGreg[r]]);
    g[REG_RIP] += 9;
    return 1;
  }
  /* lea disp8(%r),%r: REX.W(R,B) 8D modrm(01 r r) disp8 */
  if ((p[0] & 0xfa) == 0x48 && p[1] == 0x8d && (p[2] & 0xc0) == 0x40 && ((p[0] & 4) >> 2) == (p[0] & 1) &&
      ((p[2] >> 3) & 7) == (p[2] & 7) && (p[2] & 7) != 4) {
    const int r = ((p[0] & 1) << 3) | (p[2] & 7);
    g[kGreg[r]] += (int8_t)p[3];
    g[REG_RIP] += 4;
    return 1;
  }
  /* lea disp8(%rsp),%rsp: 48 8D 64 24 d8; lea disp32(%rsp),%rsp: 48 8D A4 24 d32 */
  if (p[0] == 0x48 && p[1] == 0x8d && p[3] == 0x24 && (p[2] == 0x64 || p[2] == 0xa4)) {
    int32_t d;
    if (p[2] == 0x64) d = (int8_t)p[4];
    else memcpy(&d, p + 4, 4);
    g[REG_RSP] += d;
    g[REG_RIP] += p[2] == 0x64 ? 5 : 8;
    return 1;
  }
  if (p[0] == 0x50) { /* push %rax */
    g[REG_RSP] -= 8;
    *(greg_t *)g[REG_RSP] = g[REG_RAX];
    g[REG_RIP] += 1;
    return 1;
  }
  if (p[0] == 0x58) { /* pop %rax */
    g[REG_RAX] = *(greg_t *)g[REG_RSP];
    g[REG_RSP] += 8;
    g[REG_RIP] += 1;
    return 1;
  }
  if (p[0] == 0xe9) { /* jmp rel32 */
    int32_t d;
    memcpy(&d, p + 1, 4);
    g[REG_RIP] += 5 + d;
    return 1;
  }
  if (p[0] == 0xeb) { /* jmp rel8 */
    g[REG_RIP] += 2 + (int8_t)p[1];
    return 1;
  }
  return 0;
}

/* Where the interrupted thread is in the program's traced code: the
 * original address of the instruction it runs next, 0 outside that code
 * (a library, the recorder, code atomx left in place), or
 * ATOMX_TRACE_MARK_UNKNOWN.  Inserted code the signal interrupted is run
 * to its end first, so that every record due before that instruction is
 * in the stream, and the handler's records come after them, not inside a
 * sequence of stores that has read the cursor but not yet moved it. */
static uint64_t interrupted_at(ucontext_t *uc) {
  const AtomxCodeMap *m = &atomx_analysis_code_map;
  greg_t *g = uc->uc_mcontext.gregs;
  for (int steps = 0; steps < 256; steps++) {
    const uint64_t rip = (uint64_t)g[REG_RIP];
    if (!m->pairs || rip < m->newStart || rip >= m->newEnd) return 0;
    const int64_t k = atomx_map_find(m->pairs, m->count, rip - m->base);
    if (k < 0 || m->pairs[k].oldOffset == ATOMX_MAP_NONE) return 0;
    if (!(m->pairs[k].oldOffset & ATOMX_MAP_INSERTED)) return m->linkBase + m->pairs[k].oldOffset + (rip - m->base - m->pairs[k].newOffset);
    if (!step_inserted(g)) return ATOMX_TRACE_MARK_UNKNOWN;
  }
  return ATOMX_TRACE_MARK_UNKNOWN;
}

/* A signal mark at the cursor of the calling thread's buffer (the thread is
 * at an instruction of its own, not inside inserted code: the cursor is
 * the stream position). */
static void add_mark(uint16_t kind, int sig, uint64_t pc) {
  struct buffer *b = own_buffer();
  if (!b) {
    b = new_buffer();
    set_cursor(b->base);
  }
  uint8_t *c = cursor();
  if (!c || c < b->base || c > b->base + BUFFER_BYTES) {
    c = b->base;
    set_cursor(c);
  }
  if (b->markCount == MAX_MARKS) { /* the chunk ends here */
    hand_off(b, c);
    c = b->base;
    set_cursor(c);
  }
  b->marks[b->markCount++] = (AtomxTraceMark){(uint32_t)(c - b->base), kind, (uint16_t)sig, pc};
}

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
  if (pc) add_mark(fault && pc != ATOMX_TRACE_MARK_UNKNOWN ? ATOMX_TRACE_MARK_FAULTED : ATOMX_TRACE_MARK_DELIVERED, sig, pc);
  sigset_t mask = uc->uc_sigmask;
  for (int s = 1; s < NSIG; s++)
    if (sigismember(&act.sa_mask, s)) sigaddset(&mask, s);
  if (!(act.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  sigdelset(&mask, SIGSEGV);
  pthread_sigmask(SIG_SETMASK, &mask, NULL);
  if (act.sa_flags & SA_SIGINFO) act.sa_sigaction(sig, info, context);
  else act.sa_handler(sig);
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
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
  int reg, disp, width;
  if (store_form((const uint8_t *)g[REG_RIP], &reg, &disp, &width) && swap_buffer(g, reg, cursor(), (uintptr_t)info->si_addr))
    return;
  /* Not ours: the program's own handler, if it set one ... */
  struct sigaction *program = &programActs[SIGSEGV];
  if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN) {
    deliver(sig, info, context, program);
    return;
  }
  /* ... else keep what the trace has, and let the fault take its course. */
  flush_all();
  event("killed", "%d", sig);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
}

/* on_fault, as SIGSEGV's handler; on the alternate stack when the
 * program's own SIGSEGV handler wants it (a stack overflow). */
static int install_fault_handler(int onStack, struct sigaction *old) {
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

/* Points the main program's GOT slots for `name` at `wrapper`. */
static void hook_slots(const struct link_map *program, const char *name, void *wrapper, void **real) {
  const ElfW(Dyn) *dyn = program->l_ld;
  if (!dyn) return;
  uintptr_t symtab = 0, strtab = 0, rela[2] = {0, 0}, relasz[2] = {0, 0};
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = dyn->d_un.d_ptr; break;
      case DT_STRTAB: strtab = dyn->d_un.d_ptr; break;
      case DT_JMPREL: rela[0] = dyn->d_un.d_ptr; break;
      case DT_PLTRELSZ: relasz[0] = dyn->d_un.d_val; break;
      case DT_RELA: rela[1] = dyn->d_un.d_ptr; break;
      case DT_RELASZ: relasz[1] = dyn->d_un.d_val; break;
    }
  }
  /* ld.so relocates these entries in place for the main program; a PIE's
   * may still be link-time offsets. */
  const uintptr_t bias = program->l_addr;
  uintptr_t relroStart = 0, relroEnd = 0;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  for (unsigned long i = 0, n = getauxval(AT_PHNUM); ph && i < n; i++)
    if (ph[i].p_type == PT_GNU_RELRO) {
      relroStart = (bias + ph[i].p_vaddr) & ~(uintptr_t)4095;
      relroEnd = (bias + ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~(uintptr_t)4095;
    }
  if (bias && symtab < bias) symtab += bias, strtab += bias, rela[0] += rela[0] ? bias : 0, rela[1] += rela[1] ? bias : 0;
  if (!symtab || !strtab) return;
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *r = (const ElfW(Rela) *)rela[t];
    for (size_t k = 0; r && k < relasz[t] / sizeof *r; k++) {
      const unsigned type = ELF64_R_TYPE(r[k].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const ElfW(Sym) *s = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[k].r_info);
      if (strcmp((const char *)strtab + s->st_name, name) != 0) continue;
      void **slot = (void **)(bias + r[k].r_offset);
      const uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
      /* The RELRO part is read-only by now; the rest (a lazily bound
       * .got.plt) is writable and must stay so. */
      const int relro = (uintptr_t)slot >= relroStart && (uintptr_t)slot < relroEnd;
      if (relro && mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0) continue;
      /* The function itself, not what the slot holds: in a program bound
       * lazily that is the PLT's way to the resolver, which would write the
       * function into the slot over the wrapper at the first call. */
      if (!*real) *real = dlsym(programLibc, name);
      if (!*real) *real = *slot;
      *slot = wrapper;
      if (relro) mprotect((void *)page, 4096, PROT_READ);
    }
  }
}

/* `libc`: the program's libc, whose link map is in the program's
 * namespace; the first object of that namespace is the program. */
static void hook_program(void *libc) {
  programLibc = libc;
  const struct link_map *program = libc;
  while (program->l_prev) program = program->l_prev;
  hook_slots(program, "sigaction", (void *)wrap_sigaction, (void **)&realSigaction);
  /* signal() goes through wrap_sigaction in a program that calls no sigaction */
  if (!realSigaction) realSigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(libc, "sigaction");
  void *signals[3] = {NULL, NULL, NULL}; /* unused: signal_as calls wrap_sigaction */
  hook_slots(program, "signal", (void *)wrap_signal, &signals[0]);
  hook_slots(program, "bsd_signal", (void *)wrap_signal, &signals[1]);
  hook_slots(program, "__sysv_signal", (void *)wrap_sysv_signal, &signals[2]);
  hook_slots(program, "sigprocmask", (void *)wrap_sigprocmask, (void **)&realSigprocmask);
  hook_slots(program, "pthread_sigmask", (void *)wrap_pthread_sigmask, (void **)&realPthreadSigmask);
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

__attribute__((constructor)) static void start_recorder(void) {
  const char *dir = getenv(ATOMX_TRACE_DIR_ENV);
  if (dir && *dir) {
    if (strlen(dir) >= sizeof traceDir) {
      errno = ENAMETOOLONG;
      fail(dir);
    }
    strcpy(traceDir, dir);
    discarding = 0;
  }
  /* The program's own libc runs its threads' key destructors. */
  void *libc = dlmopen(LM_ID_BASE, "libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc) {
    int (*keyCreate)(pthread_key_t *, void (*)(void *)) = (int (*)(pthread_key_t *, void (*)(void *)))dlsym(libc, "pthread_key_create");
    programSetSpecific = (int (*)(pthread_key_t, const void *))dlsym(libc, "pthread_setspecific");
    if (!keyCreate || !programSetSpecific || keyCreate(&programKey, thread_ends) != 0) programSetSpecific = NULL;
  }
  if (install_fault_handler(0, &programActs[SIGSEGV]) != 0) fail("cannot install the trace buffer's fault handler");
  sigset_t segv; /* a process may start with SIGSEGV blocked (see without_segv) */
  sigemptyset(&segv);
  sigaddset(&segv, SIGSEGV);
  sigprocmask(SIG_UNBLOCK, &segv, NULL);
  if (libc) hook_program(libc);
  event("process", "%ld", (long)getppid());
  atexit(at_exit);
}
