/* The threads' buffers: a thread's first (at its first store, or its first
 * signal mark), the one a forked child finds of its parent's and makes its
 * own, a vfork child's own (vfork_started), the fresh one a full buffer's
 * store is given (swap_buffer, from the fault handler), and the last chunk
 * when the thread ends.  The stores write into them through the thread's
 * cursor (stores.h). */
#include "recorder.h"

#include <sys/auxv.h>

#include <atomx/address_map.h>

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Every thread's buffer, of every process this address space was. */
struct buffer *registry;
/* The program's own libc runs its threads' key destructors: this key's
 * ends each thread's stream (catch_thread_ends). */
static pthread_key_t programKey;
static int (*programSetSpecific)(pthread_key_t, const void *);

/* A buffer and its guard page; `populate`: its pages now, in one go (a
 * buffer of the pool, which will be filled), rather than a fault each. */
uint8_t *map_buffer(int populate) {
  uint8_t *base = mmap(NULL, BUFFER_BYTES + GUARD_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (base == MAP_FAILED) fail("cannot map a trace buffer");
  if (mprotect(base + BUFFER_BYTES, GUARD_BYTES, PROT_NONE) != 0) fail("cannot protect a trace buffer's guard page");
  return base;
}

/* This thread's buffer.  A forked child finds its parent's copy and makes
 * it its own: a stream of its own, from the bytes not yet written.  A vfork
 * child has its own (vfork_started): its parent's is its parent's. */
struct buffer *own_buffer(void) {
  struct buffer *v = vfork_buffer();
  if (v) return v;
  const uint64_t tp = thread_pointer();
  const pid_t pid = getpid();
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->vfork || b->ended || b->threadPointer != tp) continue;
    if (b->pid != pid) {
      /* The child continues its parent's path: its stream is the parent's
       * chunks written before the fork, then the ones it still had queued
       * (written here), then this buffer (which holds the rest of the
       * parent's bytes up to the fork), then its own. */
      char parent[sizeof b->path];
      strcpy(parent, b->path);
      event("forked", "%ld", (long)getppid());
      if (b->fd >= 0) close(b->fd);
      b->tid = (pid_t)sys_gettid();
      b->fd = -1;
      b->finalAt = -1;
      b->childFirst = 1;
      b->lock = 0, b->closed = 0; /* the child's own copy */
      if (!discarding) {
        open_stream(b);
        const uint64_t whole = b->written != b->queued ? b->queue[b->written % POOL_BUFFERS].sequence : b->sequence;
        if (whole > 0) copy_chunks(parent, whole, b->fd, NULL, 0);
        write_queued(b);
      }
      __atomic_store_n(&b->pid, pid, __ATOMIC_RELEASE); /* this process's writer may take its chunks now */
    }
    return b;
  }
  return NULL;
}

/* A child of vfork runs in its parent's memory, on its parent's stack and
 * with its parent's thread pointer (so the same cursor), until it execs or
 * ends, while its parent waits (process.c: wrap_vfork).  It must not write
 * its parent's buffer, queue its chunks, or make it its own as a forked
 * child does: what the parent finds when it goes on would no longer be its
 * own.  So the child records into a buffer of its own, an entry of the
 * registry marked `vfork` (reused: an entry whose child has exec'd or ended
 * is free again, its pid 0), which only the process whose pid it holds
 * sees.  It writes its chunks itself, uncompressed (no writer thread, no
 * malloc: both would be its parent's), and its stream continues its
 * parent's as a forked child's does: its parent's chunks (every one written
 * before vfork), then its own, the first marked child. */
struct buffer *vfork_buffer(void) {
  const pid_t pid = getpid();
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next)
    if (b->vfork && __atomic_load_n(&b->pid, __ATOMIC_ACQUIRE) == pid) return b;
  return NULL;
}

/* In the vfork child, before it runs any of the program's code: its own
 * buffer, and its stream, which starts with its parent's chunks.  The
 * caller points the cursor at it. */
void vfork_started(void) {
  const pid_t pid = getpid(), parent = getppid();
  const uint64_t tp = thread_pointer();
  /* The parent thread's buffer (a forked parent made its copy its own
   * before vfork: its pid is the parent's). */
  struct buffer *from = NULL;
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b && !from; b = b->next)
    if (!b->ended && b->threadPointer == tp && __atomic_load_n(&b->pid, __ATOMIC_ACQUIRE) == parent) from = b;
  struct buffer *b = NULL;
  for (struct buffer *e = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); e && !b; e = e->next) {
    pid_t none = 0;
    if (e->vfork && __atomic_compare_exchange_n(&e->pid, &none, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) b = e;
  }
  if (!b) {
    b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) fail("cannot map a trace buffer");
    b->pool[0] = map_buffer(0);
    b->vfork = 1;
    b->pid = pid;
    b->next = __atomic_load_n(&registry, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&registry, &b->next, b, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
  }
  b->base = b->pool[0];
  b->threadPointer = tp;
  b->tid = (pid_t)sys_gettid();
  b->fd = -1;
  b->finalAt = -1;
  b->sequence = 0;
  b->ended = 0;
  b->lock = 0;
  b->queued = b->written = 0;
  b->markCount = 0;
  b->path[0] = 0;
  b->childFirst = from != NULL;
  /* A parent whose streams are closed (it is exiting): the child's bytes
   * are dropped, as a thread's started then. */
  b->closed = from && from->closed;
  event("vforked", "%ld", (long)parent);
  if (discarding || !from || b->closed) return;
  open_stream(b);
  /* The buffer, empty yet, is the copy's scratch: copy_chunks's own is
   * shared with the parent, and with any other thread's vfork child. */
  if (from->sequence > 0 && from->fd >= 0) copy_chunks(from->path, from->sequence, b->fd, b->base, BUFFER_BYTES);
  b->sequence = from->sequence;
}

/* In the parent, vfork returned: the child has exec'd or ended (or never
 * started), and its buffer is free for the next vfork child. */
void vfork_ended(pid_t child) {
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next)
    if (b->vfork && __atomic_load_n(&b->pid, __ATOMIC_ACQUIRE) == child) {
      b->closed = b->ended = 1;
      __atomic_store_n(&b->pid, 0, __ATOMIC_RELEASE);
    }
}

/* The process whose streams are closed (at exit, or exec): a thread it
 * starts from then on records nothing (its streams would get no last
 * chunk, the process is about to end). */
pid_t closedPid;

struct buffer *new_buffer(void) {
  struct buffer *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) fail("cannot map a trace buffer");
  b->base = b->pool[0] = map_buffer(0);
  b->threadPointer = thread_pointer();
  b->pid = getpid();
  b->tid = (pid_t)sys_gettid();
  b->fd = -1;
  b->finalAt = -1;
  b->closed = __atomic_load_n(&closedPid, __ATOMIC_ACQUIRE) == b->pid;
  b->next = __atomic_load_n(&registry, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&registry, &b->next, b, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
  if (programSetSpecific) programSetSpecific(programKey, b);
  /* "closed": started while its process exits; it records nothing (regen
   * does not look for its stream). */
  event("thread", b->closed ? "closed" : NULL);
  return b;
}

/* No handler of the program may run between writing a buffer and moving
 * its cursor: its records would go after the bytes written, and be lost
 * (a handler that comes later gets a buffer of its own). */
void block_signals(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, old);
}
void restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* The program's thread ends: its last chunk, and a zero cursor, so that a
 * thread that reuses this thread's descriptor starts a buffer of its own. */
static void thread_ends(void *value) {
  struct buffer *b = value;
  if (!b || b->threadPointer != thread_pointer() || vfork_buffer()) return; /* a vfork child's: its parent's */
  sigset_t mask;
  block_signals(&mask);
  own_buffer(); /* in a forked child: adopt the parent's copy first */
  lock_buffer(b);
  if (!b->closed) flush(b, cursor(), 1);
  b->closed = b->ended = 1;
  unlock_buffer(b);
  event("thread-end", NULL);
  set_cursor(NULL);
  publish(NULL);
  if (b->fd >= 0) close(b->fd);
  for (unsigned i = 0; i < POOL_BUFFERS; i++)
    if (b->pool[i]) munmap(b->pool[i], BUFFER_BYTES + GUARD_BYTES);
  restore_signals(&mask);
}

/* The program's load bias: where its PT_PHDR is at run time, less where
 * its file says (0 for a program that is not a PIE).  From the auxiliary
 * vector only: safe in a signal handler. */
static uint64_t program_bias(void) {
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  const unsigned long n = getauxval(AT_PHNUM);
  for (unsigned long i = 0; ph && i < n; i++)
    if (ph[i].p_type == PT_PHDR) return (uint64_t)(uintptr_t)ph - ph[i].p_vaddr;
  /* No PT_PHDR: the headers are at e_phoff (64) in the segment at offset 0. */
  for (unsigned long i = 0; ph && i < n; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) return (uint64_t)(uintptr_t)ph - sizeof(ElfW(Ehdr)) - ph[i].p_vaddr;
  return 0;
}

/* The words beside the cursor that the privileged schedule log reads
 * when the thread is switched out (include/atomx/trace_format.h,
 * ATOMX_TRACE_BUFFER_OFFSET; bpf/schedule.bpf.c): the buffer the cursor
 * points into and the chunk it becomes, and the address map, whose pages
 * are touched once per process so that the eBPF program, which cannot
 * fault a page in, can read them (a forked child's file-backed pages are
 * not mapped until it touches them). */
extern AtomxCodeMap atomx_analysis_code_map; /* marks.c */
/* The words are the calling thread's (ATOMX_TRACE_OWNER_OFFSET): at each
 * publish, and in a forked child, whose copies of its parent's are its own
 * (its stream begins with its parent's chunks). */
void publish_owner(void) {
  const uint64_t tid = (uint64_t)sys_gettid();
  __asm__ volatile("mov %0, %%fs:%c1" : : "r"(tid), "i"(ATOMX_TRACE_OWNER_OFFSET) : "memory");
}
static pid_t mapTouched;
void publish(const struct buffer *b) {
  const uint64_t words[3] = {b ? (uint64_t)(uintptr_t)b->base : 0, b ? b->sequence : 0,
                             (uint64_t)(uintptr_t)&atomx_analysis_code_map};
  __asm__ volatile("mov %0, %%fs:%c3\n\tmov %1, %%fs:%c4\n\tmov %2, %%fs:%c5"
                   :
                   : "r"(words[0]), "r"(words[1]), "r"(words[2]), "i"(ATOMX_TRACE_BUFFER_OFFSET),
                     "i"(ATOMX_TRACE_CHUNK_OFFSET), "i"(ATOMX_TRACE_CODEMAP_OFFSET)
                   : "memory");
  publish_owner();
  const pid_t pid = getpid();
  if (__atomic_load_n(&mapTouched, __ATOMIC_RELAXED) == pid) return;
  __atomic_store_n(&mapTouched, pid, __ATOMIC_RELAXED);
  const AtomxCodeMap *m = &atomx_analysis_code_map;
  volatile uint8_t sink = 0;
  const uint8_t *pairs = (const uint8_t *)m->pairs, *regions = (const uint8_t *)m->regions;
  for (uint64_t k = 0; pairs && k < m->count * sizeof *m->pairs; k += 4096) sink += pairs[k];
  if (pairs && m->count) sink += pairs[m->count * sizeof *m->pairs - 1];
  for (uint64_t k = 0; regions && k < m->regionCount * sizeof *m->regions; k += 4096) sink += regions[k];
  if (regions && m->regionCount) sink += regions[m->regionCount * sizeof *m->regions - 1];
  (void)sink;
}

uint8_t *stream_begin(struct buffer *b) {
  const uint64_t header[2] = {program_bias(), b->threadPointer};
  memcpy(b->base, header, sizeof header);
  return b->base + ATOMX_TRACE_STREAM_HEADER;
}

/* A store through register `reg`, which holds the cursor `slot`, faulted at
 * `addr`: a thread's first store (the cursor is 0) or a full buffer.  Gives
 * the thread a fresh buffer (queueing the full one) and points the register
 * at it; 0 when the fault is not such a store's. */
int swap_buffer(greg_t *g, int reg, uint8_t *slot, uintptr_t addr) {
  if ((uint8_t *)g[kGreg[reg]] != slot) return 0;
  struct buffer *b = own_buffer();
  const int fresh = slot == NULL && addr < 4096;
  const int full = b && slot >= b->base && addr >= (uintptr_t)b->base + BUFFER_BYTES &&
                   addr < (uintptr_t)b->base + BUFFER_BYTES + GUARD_BYTES;
  if (!fresh && !full) return 0;
  uint8_t *c;
  /* In a loop that keeps the cursor in a register, %fs's copy is behind
   * it: made current first, so that the schedule log, reading it while the
   * thread waits here for the writer, finds the thread at its last record
   * (the register is the cursor again below). */
  if (full) set_cursor(slot), hand_off(b, slot);
  if (fresh && !b) {
    b = new_buffer();
    c = stream_begin(b);
  } else {
    c = b->base;
  }
  g[kGreg[reg]] = (greg_t)c;
  set_cursor(c);
  publish(b);
  return 1;
}

/* `libc`: the program's libc, whose pthread key destructors run
 * thread_ends as each of the program's threads ends. */
void catch_thread_ends(void *libc) {
  int (*keyCreate)(pthread_key_t *, void (*)(void *)) = (int (*)(pthread_key_t *, void (*)(void *)))dlsym(libc, "pthread_key_create");
  programSetSpecific = (int (*)(pthread_key_t, const void *))dlsym(libc, "pthread_setspecific");
  if (!keyCreate || !programSetSpecific || keyCreate(&programKey, thread_ends) != 0) programSetSpecific = NULL;
}

/* The stepper's (stepper.h): the thread's cursor; where a store writes,
 * from the register that holds the cursor (a fresh buffer when the one it
 * points into is full, or the thread has none yet). */
uint8_t *step_cursor(void) { return cursor(); }
void step_set_cursor(uint8_t *c) { set_cursor(c); }
uint64_t step_spill(void) { return spill_word(); }
void step_set_spill(uint64_t v) { set_spill_word(v); }
uint8_t *step_store_at(greg_t *g, int reg, int disp, int width) {
  uint8_t *slot = store_cursor(g, reg);
  uint8_t *at = (uint8_t *)g[kGreg[reg]] + disp;
  struct buffer *b = own_buffer();
  const int inside = b && (uint8_t *)g[kGreg[reg]] >= b->base && at >= b->base && at + width <= b->base + BUFFER_BYTES;
  if (!inside) {
    if (!swap_buffer(g, reg, slot, (uintptr_t)at)) return NULL;
    at = (uint8_t *)g[kGreg[reg]] + disp;
  }
  return at;
}
