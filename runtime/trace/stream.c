/* A thread's stream, $ATOMX_TRACE_DIR/thread.TID.axt: its chunks
 * (include/atomx/trace_format.h), each a buffer's bytes and their signal
 * marks, compressed.  A full buffer is handed off to the process's writer
 * thread (writer.c), which writes it while the thread goes on in the next
 * buffer of its pool; the last chunk, and the one before a fork, the thread
 * writes itself, after the ones queued before it. */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The thread's stream file: thread.TID.axt, or thread.TID-K.axt when a
 * program this one exec'd from left one under the same thread id. */
void open_stream(struct buffer *b) {
  for (int k = 0; b->fd < 0; k++) {
    if (k == 0) snprintf(b->path, sizeof b->path, "%s/thread.%ld.axt", traceDir, (long)b->tid);
    else snprintf(b->path, sizeof b->path, "%s/thread.%ld-%d.axt", traceDir, (long)b->tid, k);
    b->fd = open(b->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (b->fd < 0 && (errno != EEXIST || k > 1000)) fail(b->path);
  }
  event("stream", "%s", strrchr(b->path, '/') + 1);
}

/* A forked child's stream starts with its parent's: the first `chunks`
 * chunks of the parent's file, the ones written before the fork.  Copied
 * through `scratch` (a vfork child's), else a buffer of this file's. */
void copy_chunks(const char *from, uint64_t chunks, int to, uint8_t *scratch, uint32_t scratchBytes) {
  static uint8_t buffer[1 << 16]; /* a forked child has one thread */
  uint8_t *data = scratch ? scratch : buffer;
  const uint32_t dataBytes = scratch ? scratchBytes : (uint32_t)sizeof buffer;
  int fd = open(from, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(from);
  for (uint64_t i = 0; i < chunks; i++) {
    AtomxTraceChunk h;
    if (read(fd, &h, sizeof h) != (ssize_t)sizeof h) fail("cannot read the parent's trace stream");
    write_all(to, &h, sizeof h);
    /* The stored bytes, then the chunk's marks (signals, sync points). */
    for (uint64_t left = h.storedSize + (uint64_t)h.marks * sizeof(AtomxTraceMark); left > 0;) {
      ssize_t k = read(fd, data, left < dataBytes ? left : dataBytes);
      if (k <= 0) fail("cannot read the parent's trace stream");
      write_all(to, data, (size_t)k);
      left -= (uint64_t)k;
    }
  }
  close(fd);
}

/* [data, data + n) as chunk `sequence`, compressed with zstd at level 1
 * where that pays (levels below 1 were no faster on gzip's stream: they
 * save less time compressing than they add writing).  No errno, no malloc,
 * no lock: the writer thread runs this too. */
struct chunk pack_chunk(const uint8_t *data, uint32_t n, const AtomxTraceMark *marks, uint32_t markCount,
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
void put_chunk(int fd, const struct chunk *c) {
  write_all(fd, &c->header, sizeof c->header);
  write_all(fd, c->stored, c->header.storedSize);
  write_all(fd, c->marks, c->header.marks * sizeof(AtomxTraceMark));
}

/* The compressor of the chunks a program's thread writes itself (none in
 * a vfork child: zstd's malloc would be its parent's; its chunks are raw). */
static void own_compressor(struct buffer *b) {
  if (b->vfork) return;
  if (!b->zstd) b->zstd = ZSTD_createCCtx();
  if (!b->packed) {
    void *p = mmap(NULL, PACKED_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    b->packed = p == MAP_FAILED ? NULL : p;
  }
}

/* b's queued chunks not yet written, written here: a forked child's copy
 * of what its parent had queued, in a process without a writer. */
void write_queued(struct buffer *b) {
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
void drain(struct buffer *b) {
  if (!writer_runs()) {
    write_queued(b);
    return;
  }
  for (uint32_t w; (w = __atomic_load_n(&b->written, __ATOMIC_ACQUIRE)) != __atomic_load_n(&b->queued, __ATOMIC_ACQUIRE);)
    sys_futex_wait(&b->written, w, NULL);
}

/* The bytes [b->base, end) as the stream's next chunk, compressed and
 * written here (compressed while the writer may still be writing the
 * chunks queued before it, written once they are); `final`: its last. */
void flush(struct buffer *b, const uint8_t *end, int final) {
  if (!end || end < b->base || end > b->base + BUFFER_BYTES) end = b->base;
  /* The last chunk of a stream that has no bytes yet, not even its first
   * (another thread's exit closes a thread's buffer between new_buffer and
   * its cursor's setting): the stream's header, so that it is the stream
   * of a thread that recorded nothing (regen read it as shorter than its
   * header). */
  if (final && b->sequence == 0 && end == b->base) end = stream_begin(b);
  const uint32_t n = (uint32_t)(end - b->base);
  const uint32_t marks = take_marks(b, b->flushed);
  if (n == 0 && marks == 0 && !final) return;
  if (discarding) return;
  if (b->fd < 0) open_stream(b);
  if (!writer_runs()) write_queued(b); /* first: it uses the same compressor */
  if (n > 0) own_compressor(b);
  const struct chunk c =
      pack_chunk(b->base, n, b->flushed, marks, (final ? ATOMX_TRACE_CHUNK_FINAL : 0u) | (b->childFirst ? ATOMX_TRACE_CHUNK_CHILD : 0u),
                 b->sequence++, b->zstd, b->packed);
  if (final) b->finalMarks = marks, b->finalChild = b->childFirst;
  b->childFirst = 0;
  drain(b);
  /* The stream's end, where this chunk goes (the file is opened for
   * appending, and nothing else writes to it now). */
  if (final) b->finalAt = lseek(b->fd, 0, SEEK_END);
  put_chunk(b->fd, &c);
}

/* The final chunk written is not the stream's last after all (an exec
 * failed, and the thread goes on): taken out of the file again, with its
 * marks and its sequence number back in the buffer, whose bytes it held
 * (flush_all leaves every cursor where it was): the stream is as if there
 * had been no exec, also for the process's other threads, whose cursors
 * went on meanwhile. */
void reopen_stream(struct buffer *b) {
  if (b->finalAt < 0 || b->fd < 0) return;
  if (ftruncate(b->fd, (off_t)b->finalAt) != 0) fail(b->path);
  b->finalAt = -1;
  b->sequence--;
  memcpy(b->marks, b->flushed, b->finalMarks * sizeof(AtomxTraceMark));
  b->markCount = b->finalMarks;
  b->childFirst = b->finalChild;
}

uint32_t take_marks(struct buffer *b, AtomxTraceMark *to) {
  const uint32_t n = __atomic_exchange_n(&b->markCount, MAX_MARKS, __ATOMIC_ACQ_REL);
  memcpy(to, b->marks, n * sizeof(AtomxTraceMark));
  __atomic_store_n(&b->markCount, 0, __ATOMIC_RELEASE);
  return n;
}


/* A full buffer, [b->base, end): queued for the writer thread, and b->base
 * the next buffer of the pool, at once unless all the others are still
 * queued (then this waits for the writer).  In the SIGSEGV handler: only
 * atomics, futexes and mmap, but for the stream's first open.  Once the
 * stream is closed, the buffer starts over and nothing is written. */
static void hand_off_locked(struct buffer *b, const uint8_t *end);
void hand_off(struct buffer *b, const uint8_t *end) {
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
  b->queue[i].markCount = take_marks(b, b->queue[i].marks);
  b->childFirst = 0;
  __atomic_store_n(&b->queued, k + 1, __ATOMIC_RELEASE);
  wake_writer();
  /* Chunk k + 1 goes where chunk k + 1 - POOL_BUFFERS was, once that is written. */
  for (uint32_t w; k + 1 - (w = __atomic_load_n(&b->written, __ATOMIC_ACQUIRE)) >= POOL_BUFFERS;) sys_futex_wait(&b->written, w, NULL);
  uint8_t **next = &b->pool[(k + 1) % POOL_BUFFERS];
  if (!*next) *next = map_buffer(1);
  b->base = *next;
}

/* Every buffer of this process, at exit (or before a fatal signal). */
void flush_all(void) {
  sigset_t mask;
  block_signals(&mask);
  const struct buffer *mine = own_buffer(); /* in a forked child: adopt the parent's copy first */
  const uint64_t tp = thread_pointer();
  const pid_t pid = getpid();
  /* first: a buffer made from now on starts closed (a vfork child makes
   * none, and closedPid is its parent's) */
  if (!(mine && mine->vfork)) __atomic_store_n(&closedPid, pid, __ATOMIC_RELEASE);
  for (struct buffer *b = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); b; b = b->next) {
    if (b->pid != pid) continue;
    lock_buffer(b);
    if (!b->ended && !b->closed) {
      /* Every cursor stays where it is: a thread records on into its closed
       * buffer (dropped when full), and if exec fails, in the same bytes
       * again (reopen_stream). */
      flush(b, b->threadPointer == tp ? cursor() : *(uint8_t *const *)(b->threadPointer + ATOMX_TRACE_CURSOR_OFFSET), 1);
      b->closed = 1;
    }
    unlock_buffer(b);
  }
  restore_signals(&mask);
}
