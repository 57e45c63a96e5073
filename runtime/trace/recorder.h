/* What the files of the trace recorder share (recorder.c says what the
 * recorder does, and which file does what).  Private to runtime/trace: the
 * first include of each of its .c files.  Everything declared here is
 * hidden: the analysis object exports none of it. */
#ifndef ATOMX_TRACE_RECORDER_H
#define ATOMX_TRACE_RECORDER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <atomx/hooks.h>
#include <atomx/trace_format.h>
/* ZSTD_initStaticCCtx and ZSTD_estimateCCtxSize: the writer thread's
 * compressor, in a workspace of its own (no malloc). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/ucontext.h>

#include "../sys.h"
#include "stepper.h"

#pragma GCC visibility push(hidden)

#define BUFFER_BYTES ATOMX_TRACE_BUFFER_BYTES
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
  /* Where the stream's final chunk starts in its file (-1: none written),
   * its signal marks and whether it was the child's first: an exec that
   * fails takes it out again (reopen_stream), and the thread goes on in
   * the buffer whose bytes it held. */
  int64_t finalAt;
  uint32_t finalMarks;
  int finalChild;
  int childFirst; /* a forked child's next chunk is its first own one */
  /* A vfork child's buffer (vfork_started): the child runs in its parent's
   * memory, so the registry holds it, with the child's pid while the child
   * runs and 0 once the parent goes on (free for its next vfork child). */
  int vfork;
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
  /* The marks of the chunk `flush` writes (take_marks), and of the final
   * chunk until an exec that fails puts them back (reopen_stream). */
  AtomxTraceMark flushed[MAX_MARKS];
};

static inline uint64_t thread_pointer(void) {
  uint64_t tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));
  return tp;
}
/* The thread's cursor, %fs:ATOMX_TRACE_CURSOR_OFFSET. */
static inline uint8_t *cursor(void) {
  uint8_t *c;
  __asm__ volatile("mov %%fs:%c1, %0" : "=r"(c) : "i"(ATOMX_TRACE_CURSOR_OFFSET));
  return c;
}
static inline void set_cursor(uint8_t *c) {
  __asm__ volatile("mov %0, %%fs:%c1" : : "r"(c), "i"(ATOMX_TRACE_CURSOR_OFFSET) : "memory");
}

/* library.c: library calls whose length the recorder measures; their
 * site is in the thread's library slot (stores.h, ATOMX_STORES_LIBRARY_SLOT)
 * while the thread is before one. */
uint64_t library_slot_take(void);
void library_slot_put(uint64_t v);
/* The original address of the measured library call a signal found the
 * thread before (in its call code, or the recorder's routine: its context
 * g, which it may move back to the start of the routine's write), or 0. */
uint64_t library_interrupted(greg_t *g);
/* The routine's write faulted (a full buffer, or none yet): answered. */
int library_store_fault(greg_t *g, uintptr_t addr);
/* The word a promoted loop keeps its register's value in,
 * %fs:ATOMX_TRACE_SPILL_OFFSET (runtime/trace/stores.h). */
static inline uint64_t spill_word(void) {
  uint64_t v;
  __asm__ volatile("mov %%fs:%c1, %0" : "=r"(v) : "i"(ATOMX_TRACE_SPILL_OFFSET));
  return v;
}
static inline void set_spill_word(uint64_t v) {
  __asm__ volatile("mov %0, %%fs:%c1" : : "r"(v), "i"(ATOMX_TRACE_SPILL_OFFSET) : "memory");
}

/* recorder.c: the session. */
extern char traceDir[4096]; /* $ATOMX_TRACE_DIR */
extern int discarding;      /* it is unset: the bytes are dropped */

/* events.c: what the recorder says. */
void write_all(int fd, const void *data, size_t n);
void fail(const char *what);
void event(const char *what, const char *format, ...);

/* buffer.c: the threads' buffers. */
extern struct buffer *registry;
extern pid_t closedPid;
uint8_t *map_buffer(int populate);
struct buffer *own_buffer(void);
struct buffer *new_buffer(void);
/* Writes a stream's first bytes (ATOMX_TRACE_STREAM_HEADER) at b->base,
 * for a stream that begins there; where its records go. */
uint8_t *stream_begin(struct buffer *b);
/* The words the privileged schedule log reads beside the cursor
 * (ATOMX_TRACE_BUFFER_OFFSET...): b's buffer and chunk, in the calling
 * thread (NULL: none). */
void publish(const struct buffer *b);
void publish_owner(void);
struct buffer *vfork_buffer(void);
void vfork_started(void);
void vfork_ended(pid_t child);
int swap_buffer(greg_t *g, int reg, uint8_t *slot, uintptr_t addr);
void block_signals(sigset_t *old);
void restore_signals(const sigset_t *old);
void catch_thread_ends(void *libc);
/* struct buffer's lock (no signal handler of the program runs while it is
 * held: every holder has them blocked). */
static inline void lock_buffer(struct buffer *b) {
  while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE)) sys_sched_yield();
}
static inline void unlock_buffer(struct buffer *b) { __atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE); }

/* stream.c: the threads' streams, chunk by chunk.  A chunk ready to be
 * written: its header, and its stored bytes (in the buffer, or compressed
 * in `packed`). */
struct chunk {
  AtomxTraceChunk header;
  const uint8_t *stored;
  const AtomxTraceMark *marks; /* header.marks of them */
};
void open_stream(struct buffer *b);
void copy_chunks(const char *from, uint64_t chunks, int to, uint8_t *scratch, uint32_t scratchBytes);
struct chunk pack_chunk(const uint8_t *data, uint32_t n, const AtomxTraceMark *marks, uint32_t markCount, uint32_t flags,
                        uint64_t sequence, ZSTD_CCtx *zstd, uint8_t *packed);
void put_chunk(int fd, const struct chunk *c);
void write_queued(struct buffer *b);
void drain(struct buffer *b);
void flush(struct buffer *b, const uint8_t *end, int final);
void hand_off(struct buffer *b, const uint8_t *end);
void flush_all(void);
void reopen_stream(struct buffer *b);
/* The buffer's marks moved to `to` (b's lock held): a sync mark the thread
 * writes meanwhile without the lock (sync.c) finds the marks full, and
 * waits for the lock in add_mark. */
uint32_t take_marks(struct buffer *b, AtomxTraceMark *to);

/* writer.c: the process's writer thread. */
int writer_runs(void);
int start_writer(void);
void wake_writer(void);

/* marks.c: where a signal interrupted the thread. */
int in_moved_code(uint64_t pc);
int cursor_register_at(uint64_t pc);
uint8_t *store_cursor(const greg_t *g, int reg);
extern int noCursorSync;
void sync_cursor(greg_t *g, int back);
uint64_t interrupted_at(ucontext_t *uc);
void add_mark(uint16_t kind, int sig, uint64_t pc);

/* signals.c: the recorder's SIGSEGV handler and the program's handlers. */
extern struct sigaction programActs[NSIG];
int install_fault_handler(int onStack, struct sigaction *old);
void hook_signals(void);

/* process.c: fork, vfork and exec. */
void hook_process(void);

/* sync.c: the sync points' marks (<atomx/sync_calls.h>).  A forked or
 * vfork child raises syncGeneration: the thread's buffer it keeps at hand
 * is to be found again. */
extern unsigned syncGeneration;
void hook_sync(void);

/* hooks.c: the program's uses of the functions above, taken over through
 * <atomx/hooks.h>. */
extern void *programLibc; /* the program's libc (dlmopen's handle) */
void hook_program(void *libc);

#pragma GCC visibility pop

#endif
