/* atomx's abstract-execution trace: the one definition of its format,
 * shared by the recorder (runtime/analysis/trace.c, inside the traced
 * program) and the reader (src/trace, `atomx regen`), as DynamoRIO's
 * raw2trace.h is for drmemtrace.  docs/trace.md explains it in prose.
 *
 * A trace is a directory:
 *   manifest            text, one `key value` per line, written by
 *                       `atomx trace` before the program runs (kManifest*)
 *   thread.TID.axt      one stream per thread: chunks (AtomxTraceChunk)
 *   events              the processes' and threads' events, in order
 *                       (ATOMX_TRACE_EVENTS)
 *   profile             with --profile: the block counts the witness
 *                       placement was weighed with (ATOMX_TRACE_PROFILE)
 *   schedule            as root: every context switch of the run's threads
 *                       (ATOMX_TRACE_SCHEDULE, AtomxScheduleRecord)
 *
 * A stream is what the program's inserted stores wrote, cut into chunks at
 * buffer boundaries.  Each chunk is self-contained (a header, then its
 * bytes), so a process killed mid-run leaves a stream that decodes up to
 * its last whole chunk.  The bytes are not self-describing: the regenerator
 * walks the program's CFG and knows at each point what comes next --
 *   - a witness, at a predicate (analysis/Witnesses.h: one byte per value,
 *     or two little-endian where a procedure needs more than 255);
 *   - a jump table's target, as the target's block index in its procedure
 *     (two bytes, four where a procedure has more than 65535 blocks);
 *   - a tag, at the entry of a procedure code outside the trace may call
 *     (ENTRY, then the procedure's id, four bytes), at an address-taken
 *     block of a procedure that jumps through pointers (BLOCK, then the
 *     procedure's id and the block's index, four bytes each; also at a
 *     landing pad), after a call that may run code outside the trace
 *     (RETURN), and after a call to setjmp (RESUMED, the procedure's id and
 *     the calling block's index);
 *   - with data (ATOMX_TRACE_KEY_DATA), register values, little-endian,
 *     lowest register number first: those the data slices need
 *     (analysis/DataSlices.h; eight bytes, or after a load the bytes it
 *     read, InsnSlice::valueBytes), and a library call's (below, eight
 *     bytes each).
 *
 * A library call (with data): a call or tail jump, through the PLT or the
 * GOT, to one of libc's memory and string functions
 * (include/atomx/libc_model.hpp; analysis/TracePlan.h, libraryLength, says
 * which: memcpy, mempcpy, memmove, memset, bzero, explicit_bzero, bcopy,
 * strlen, strnlen, stpcpy, strcpy, strcmp, strncmp, memcmp, bcmp,
 * __memcmpeq and their _chk forms; calloc by calls only) records
 *   before the instruction, after every other record due there (the
 *   block's tags and values, an early witness): %rdx, %rsi, %rdi
 *   (ATOMX_TRACE_LIBRARY_ARGUMENTS);
 *   for calloc, and strlen, strnlen and stpcpy called, when it returns,
 *   right after its RETURN and before the values the slices record after
 *   the call: %rax (ATOMX_TRACE_LIBRARY_RESULT);
 *   for strcpy, strcmp, strncmp, memcmp, bcmp, __memcmpeq, and strlen,
 *   strnlen and stpcpy jumped to: after the arguments, the length
 *   measured in memory (<atomx/libc_length.h>), eight bytes
 *   (ATOMX_TRACE_LIBRARY_MEASURED).  A signal delivered at the instruction
 *   (its mark) may come before or after the length; the length is the
 *   call's, whichever.
 */
#ifndef ATOMX_TRACE_FORMAT_H
#define ATOMX_TRACE_FORMAT_H

#include <stdint.h>

/* 6: the sync marks (ATOMX_TRACE_MARK_SYNC_*), which a reader of 5 would
 * take for signal marks. */
#define ATOMX_TRACE_VERSION 6

/* A library call's records (above): the registers, as a mask of hardware
 * register numbers (bit k: register k), stored lowest number first. */
#define ATOMX_TRACE_LIBRARY_ARGUMENTS ((1u << 7) | (1u << 6) | (1u << 2)) /* %rdi %rsi %rdx */
#define ATOMX_TRACE_LIBRARY_RESULT (1u << 0)                              /* %rax */
/* The measured length: bytes, one uint64_t. */
#define ATOMX_TRACE_LIBRARY_MEASURED 8u

/* The per-thread cursor: the next free byte of the thread's buffer, at this
 * offset from the thread pointer (%fs).  It is the first word of glibc's
 * tcbhead_t.__glibc_unused2 on x86-64, which glibc keeps and never uses. */
#define ATOMX_TRACE_CURSOR_OFFSET 0x80
/* Where a loop that holds the cursor in a register whose value the program
 * keeps across the loop saves that value meanwhile (runtime/trace/stores.h):
 * the fourth word of __glibc_unused2 (the second is the per-thread
 * counters' owner, runtime/abi.h; the third the recorder's library slot,
 * runtime/trace/stores.h ATOMX_STORES_LIBRARY_SLOT). */
#define ATOMX_TRACE_SPILL_OFFSET 0x98

/* The bytes of a thread's buffer: a chunk holds at most this many. */
#define ATOMX_TRACE_BUFFER_BYTES (1u << 20)
/* Words the recorder keeps beside the cursor, in __glibc_unused2's fifth
 * to eighth words, for the privileged schedule log's eBPF program
 * (bpf/schedule.bpf.c) to read when the thread is switched out: the stream
 * position is ATOMX_TRACE_CHUNK_OFFSET's chunk, at the cursor's distance
 * from ATOMX_TRACE_BUFFER_OFFSET's base.  Written by runtime/trace
 * (buffer.c, publish) whenever the thread's buffer or chunk changes. */
#define ATOMX_TRACE_BUFFER_OFFSET 0xa0  /* the base of the buffer being filled (0: none yet) */
#define ATOMX_TRACE_CHUNK_OFFSET 0xa8   /* the sequence number of the chunk that buffer becomes */
#define ATOMX_TRACE_CODEMAP_OFFSET 0xb0 /* &atomx_analysis_code_map (include/atomx/address_map.h) */
/* The thread the words are for (its tid): a child that runs on its
 * parent's thread pointer (posix_spawn's clone, CLONE_VM without a TCB of
 * its own) finds its parent's there. */
#define ATOMX_TRACE_OWNER_OFFSET 0xb8

/* Every stream begins with ATOMX_TRACE_STREAM_HEADER bytes (a forked or
 * vfork'd child's stream begins with its parent's): two uint64_t, the
 * program's load bias in the process (an instruction's run-time address is
 * its address in the file plus the bias; 0 for a program that is not a
 * PIE) and the thread's %fs base (its thread pointer). */
#define ATOMX_TRACE_STREAM_HEADER 16u

/* Tags. */
#define ATOMX_TRACE_RETURN 0u /* the call that may have run outside code returned */
#define ATOMX_TRACE_ENTRY 1u  /* a procedure was entered; its id (uint32_t) follows */
/* A block control may reach from anywhere was reached: a landing pad (the
 * unwinder delivered an exception there), or an address-taken block of a
 * procedure that jumps through pointers (a computed goto); its procedure's
 * id and its block index (uint32_t each) follow. */
#define ATOMX_TRACE_BLOCK 2u
/* A call to a setjmp-like function returned: the first time, or again
 * through longjmp; the calling block's procedure id and block index
 * (uint32_t each) follow.  It takes the place of RETURN after such calls. */
#define ATOMX_TRACE_RESUMED 3u

#define ATOMX_TRACE_CHUNK_MAGIC 0x43545841u /* "AXTC" */
#define ATOMX_TRACE_CODEC_RAW 0u
#define ATOMX_TRACE_CODEC_ZSTD 1u
#define ATOMX_TRACE_CODEC_MASK 0xffu
/* With the codec: the thread's last chunk (it ended, or the process exited
 * or exec'd; when an exec fails, that chunk is taken out of the file again).
 * A stream without one was cut short (the process was killed). */
#define ATOMX_TRACE_CHUNK_FINAL 0x100u
/* With the codec: the first chunk a forked child wrote.  The chunks before
 * it are its parent's, up to the fork (the child continues its path). */
#define ATOMX_TRACE_CHUNK_CHILD 0x200u

/* Every chunk starts with this header, little-endian, 40 bytes; the stored
 * bytes follow, then `marks` AtomxTraceMark records. */
typedef struct {
  uint32_t magic;      /* ATOMX_TRACE_CHUNK_MAGIC */
  uint32_t version;    /* ATOMX_TRACE_VERSION */
  uint64_t sequence;   /* 0, 1, 2, ... within the stream */
  uint32_t rawSize;    /* bytes of stream in this chunk, once decoded */
  uint32_t storedSize; /* bytes of stream as stored (compressed) */
  uint32_t codec;      /* ATOMX_TRACE_CODEC_*, | ATOMX_TRACE_CHUNK_FINAL */
  uint32_t checksum;   /* FNV-1a (32 bits) of the stored bytes, then the marks */
  uint32_t marks;      /* AtomxTraceMark records after the stored bytes */
  uint32_t reserved;   /* 0 */
} AtomxTraceChunk;

/* Signals, beside the stream: where a signal handler of the program ran
 * (an asynchronous signal, or a fault of the program's own) while the
 * thread was in traced code, and where the thread went on when the handler
 * returned.  The witness bytes do not say it: a signal can come between
 * any two instructions, also where no record is due.  Within one
 * witness-free stretch of the path an instruction occurs at most once, so
 * the stream position and the interrupted instruction fix the point (in a
 * data trace's loop of evaluated predicates, with the registers:
 * ATOMX_TRACE_MARK_REGISTER). */
typedef struct {
  uint32_t offset; /* the stream position, in this chunk's raw bytes */
  uint16_t kind;   /* ATOMX_TRACE_MARK_* */
  uint16_t signo;
  uint64_t pc;     /* original address; see the kinds */
} AtomxTraceMark;
/* The handler was called before the instruction at pc ran (every record due
 * before it is in the stream: the recorder completes inserted code the
 * signal interrupted); pc ATOMX_TRACE_MARK_UNKNOWN: the recorder could not
 * tell where. */
#define ATOMX_TRACE_MARK_DELIVERED 1u
/* The instruction at pc faulted (SIGSEGV, SIGBUS, SIGFPE, SIGILL): as for
 * DELIVERED, it did not execute (it runs if the handler returns to it). */
#define ATOMX_TRACE_MARK_FAULTED 2u
/* The handler of the innermost signal still open returned; pc: where the
 * thread goes on (the handler changed its context), or 0: where it was. */
#define ATOMX_TRACE_MARK_RETURNED 3u
#define ATOMX_TRACE_MARK_UNKNOWN (~(uint64_t)0)
/* Right after a DELIVERED or FAULTED mark at an instruction of traced code
 * (since version 5), one per general register: signo its hardware number
 * (rax 0 ... r15 15), pc its value in the interrupted context, at the same
 * position.  A loop whose branches the regenerator of a data trace
 * evaluates (docs/trace.md, "Evaluated predicates") records nothing per
 * iteration, so an instruction of it may occur many times at one stream
 * position: the registers the regenerator knows there tell the iterations
 * apart. */
#define ATOMX_TRACE_MARK_REGISTER 4u
/* Sync points (since the fallback schedule; docs/trace.md, "Ordering
 * threads and processes"): written by the recorder's wrappers of the calls
 * <atomx/sync_calls.h> lists (runtime/trace/sync.c), read by the reader's
 * sync points (src/trace/SyncPoints.cpp), never by the walk.  ENTERED just
 * before the program's call runs its function, RETURNED once it returned
 * (a call that does not return, exit or pthread_exit, has none): signo the
 * call's number (ATOMX_SYNC_ID_*), pc the time, CLOCK_MONOTONIC in
 * nanoseconds (the event log's clock), offset the stream position then:
 * the position at which the regenerator meets the call (every record due
 * before it is written; the RETURN tag after it is not), which ties the
 * mark to its call, also one the path makes through a pointer.
 * A signal handler that runs in between puts its own calls' marks in
 * between, as the calls nest. */
#define ATOMX_TRACE_MARK_SYNC_ENTERED 5u
#define ATOMX_TRACE_MARK_SYNC_RETURNED 6u

/* The recorder's environment: where the streams go.  Unset, the program
 * runs with its stores discarded (a measurement of the stores alone). */
#define ATOMX_TRACE_DIR_ENV "ATOMX_TRACE_DIR"

/* The event log: text, a line per event, appended by every process of the
 * trace as it happens:  NS PID TID EVENT [ARG]
 * NS is CLOCK_MONOTONIC in nanoseconds (the order across processes); the
 * events:
 *   process PPID     a process of the traced program started (its parent)
 *   thread           a thread's first witness (it has a buffer now);
 *                    `thread closed`: it started while its process was
 *                    exiting, and records nothing
 *   stream FILE      the thread's stream file was opened
 *   thread-end       the thread ended; its last chunk is written
 *   writer TID       the recorder's writer thread started (it writes the
 *                    chunks of the process's streams; not a program thread)
 *   fork CHILD       fork() returned in the parent
 *   forked PARENT    the forked child wrote its first bytes of its own
 *   vfork CHILD      vfork() returned in the parent (the child has exec'd
 *                    or ended by then)
 *   vforked PARENT   the vfork child started its own stream (before any
 *                    of its code ran)
 *   exec FILE        about to exec FILE (the streams are written)
 *   exec-failed ERRNO  and it returned
 *   exit             the process is ending (exit, main returned, its
 *                    own _exit, a fatal signal the atomx runtime catches;
 *                    a vfork child: _exit or _Exit through the GOT)
 *   killed SIGNAL    a fatal signal the recorder saw (its streams written)
 * and, in a workload's trace (`atomx trace -f`, or a PROG atomx cannot
 * instrument), written by atomx's supervisor (src/driver/Workload.cpp),
 * read by src/trace (streamPrograms, untracedProcesses):
 *   program K HOW PATH  process PID runs the manifest's program K from here
 *                    on (HOW: exec, or fork for a new process of one)
 *   untraced PATH ARGV...  it exec'd a program atomx does not trace
 * A process killed by SIGKILL, or ended by _exit, has no last line. */
#define ATOMX_TRACE_EVENTS "events"

/* Manifest keys. */
#define ATOMX_TRACE_MANIFEST "manifest"
#define ATOMX_TRACE_KEY_VERSION "atomx-trace"     /* the format version */
#define ATOMX_TRACE_KEY_PROGRAM "program"         /* the traced file, as given */
#define ATOMX_TRACE_KEY_PROGRAM_SIZE "program-size"
#define ATOMX_TRACE_KEY_PROGRAM_HASH "program-hash" /* FNV-1a 64 of its bytes, hex */
#define ATOMX_TRACE_KEY_PLACEMENT "placement"     /* analysis::TracePlan's digest, hex */
/* With `atomx trace --profile`: the hash of the block counts that weighed
 * the placement, kept in the file ATOMX_TRACE_PROFILE (`PC COUNT` lines,
 * hex and decimal, by address), which the regenerator plans with. */
#define ATOMX_TRACE_KEY_PROFILE "profile"
#define ATOMX_TRACE_PROFILE "profile"
/* `data 1`: recorded with data (`atomx trace --data`): the stream also
 * holds the register values (and addresses) the regenerator computes data
 * addresses from (analysis/DataSlices.h), and the trace plan makes every
 * block that records one a recording node. */
#define ATOMX_TRACE_KEY_DATA "data"
/* `schedule MODE...`: how the trace orders its threads and processes
 * against each other (docs/trace.md, "Ordering threads and processes"),
 * written by `atomx trace`, read by `atomx regen --merge`: `sync-points`,
 * at the calls of <atomx/sync_calls.h> (their marks; every trace since
 * version 6), then `switches` when the privileged schedule log (below) was
 * recorded too.  Absent: a trace recorded before there was one (no sync
 * marks; its threads are merged by the event log's times alone). */
#define ATOMX_TRACE_KEY_SCHEDULE "schedule"
#define ATOMX_TRACE_SCHEDULE_SYNC_POINTS "sync-points"

/* `program-K SIZE HASH PLACEMENT PATH` (K = 2, 3, ...): a workload's
 * further programs (`atomx trace -- sh -c ...`: src/driver/Workload.h
 * instruments each program the workload execs on first use, and Record.cpp
 * writes the manifest again with each), as the keys above are the first's;
 * no profile weighs them.  Read by src/trace (TraceFiles.cpp), which ties
 * each stream to its program through the event log's `program K PATH`
 * lines, written by the same supervisor (trace::streamPrograms). */
#define ATOMX_TRACE_KEY_PROGRAM_N "program-"

/* The privileged schedule log, DIR/schedule (docs/trace.md, "The
 * privileged schedule log"): written by `atomx trace` as root (the
 * collector, src/driver/ScheduleLog.cpp, draining the eBPF program
 * bpf/schedule.bpf.c on sched:sched_switch), read by src/trace/Switches.cpp
 * (`atomx regen --switches`).  The manifest then says `schedule sync-points
 * switches` (ATOMX_TRACE_KEY_SCHEDULE).  The file: an AtomxScheduleHeader, then
 * frames, each an AtomxScheduleFrame followed by its `storedSize` bytes: its
 * `records` AtomxScheduleRecord records, in the order the collector drained
 * them (per CPU in time order; sort by ns for one order), compressed as one
 * zstd frame.  The collector writes a frame, whole and with one write, each
 * time it has drained 256 records or a second has passed, and at the end,
 * so a run that ends abruptly leaves every frame it wrote complete; a
 * reader streams the file frame by frame (src/trace/ScheduleFile.h, the
 * one reader and writer of the frames).  Version 1 (before the frames):
 * the records followed the header uncompressed, 192 bytes each. */
#define ATOMX_TRACE_SCHEDULE "schedule"
#define ATOMX_TRACE_SCHEDULE_SWITCHES "switches" /* the manifest's schedule mode for this log */
#define ATOMX_SCHEDULE_MAGIC 0x48535841u    /* "AXSH" */
/* 2: the records in zstd frames (AtomxScheduleFrame).  Bump it with any
 * change of the header, the frame or the record. */
#define ATOMX_SCHEDULE_VERSION 2u
#define ATOMX_SCHEDULE_FRAME_MAGIC 0x46535841u /* "AXSF" */
/* How many records a frame holds at most (the collector's batch). */
#define ATOMX_SCHEDULE_FRAME_RECORDS 256u
typedef struct {
  uint32_t magic;      /* ATOMX_SCHEDULE_MAGIC */
  uint32_t version;    /* ATOMX_SCHEDULE_VERSION */
  uint32_t recordSize; /* sizeof(AtomxScheduleRecord) */
  uint32_t reserved;   /* 0 */
  uint64_t lost;       /* switches the ring buffer had no room for (written at the end) */
} AtomxScheduleHeader;
/* A frame's header, 16 bytes, before its stored bytes. */
typedef struct {
  uint32_t magic;      /* ATOMX_SCHEDULE_FRAME_MAGIC */
  uint32_t records;    /* 1 .. ATOMX_SCHEDULE_FRAME_RECORDS records, decompressed */
  uint32_t storedSize; /* bytes of zstd frame that follow */
  uint32_t checksum;   /* atomx_trace_checksum of those bytes */
} AtomxScheduleFrame;
/* One context switch on `cpu` at `ns` (CLOCK_MONOTONIC, the event log's
 * clock) that involves a thread of the trace: OUT, prev (the thread
 * switched out) is one; IN, next is.  For OUT: */
typedef struct {
  uint64_t ns;
  uint32_t cpu;
  uint32_t flags;     /* ATOMX_SCHEDULE_* */
  uint32_t prevTid, prevPid; /* OUT */
  uint32_t nextTid, nextPid; /* IN */
  /* REGISTERS: the user PC; in traced code (not UNTRACED_PC) the original
   * address of the instruction the thread runs next (INSERTED: the one the
   * inserted code it is in stands before), else the run-time PC. */
  uint64_t pc;
  uint64_t chunk;     /* POSITION: the stream position, chunk `chunk`'s ... */
  uint64_t offset;    /* ... raw byte `offset` (every record before is written) */
  uint64_t regs[16];  /* REGISTERS: the general registers, by hardware number (rax 0 ... r15 15); with
                       * CURSOR_REGISTER, the one holding the cursor is the program's (the spill word's) */
  /* The kernel's count of execs each thread's process made (self_exec_id,
   * inherited at fork): where it changes in a thread, the thread runs a
   * program exec'd, whose stream is thread.TID-K.axt. */
  uint32_t prevExec, nextExec;
} AtomxScheduleRecord;
#define ATOMX_SCHEDULE_OUT 1u           /* prev is a thread of the trace */
#define ATOMX_SCHEDULE_IN 2u            /* next is */
#define ATOMX_SCHEDULE_PREEMPTED 4u     /* prev was preempted (still runnable), else it blocked */
#define ATOMX_SCHEDULE_REGISTERS 8u     /* pc and regs were read */
#define ATOMX_SCHEDULE_RECORDER 16u     /* prev's words above were read and are its own (0 in a process without the recorder) */
#define ATOMX_SCHEDULE_POSITION 32u     /* chunk and offset hold its stream position */
#define ATOMX_SCHEDULE_UNTRACED_PC 64u  /* pc is outside the traced code (a library, the recorder) */
#define ATOMX_SCHEDULE_INSERTED 128u    /* pc: inside code atomx inserted, before the instruction at pc */
/* INSERTED: that code still moves the cursor on (its stores' bytes are
 * after the position): the point is the first time the path reaches pc
 * past the position, not at it. */
#define ATOMX_SCHEDULE_PENDING 256u
#define ATOMX_SCHEDULE_CURSOR_REGISTER 512u /* the cursor was a loop's register (AtomxCursorRegion) */
/* RECORDER without POSITION: the thread had no buffer, before its first
 * record or after its last chunk (it was ending). */
#define ATOMX_SCHEDULE_NO_BUFFER 1024u
/* prev was exiting (in the kernel's do_exit): after its last record */
#define ATOMX_SCHEDULE_EXITING 2048u

/* `atomx regen --binary FILE`: the regenerated instruction stream for
 * other programs (docs/trace.md).  A header (magic, version: two uint32_t),
 * then records, little-endian and packed, each starting with a kind byte:
 *   THREAD_BEGIN  kind, 0, 0 (uint16_t), thread (uint32_t)
 *   BLOCK         kind, flags (INHERITED, CONTINUED), count (uint16_t),
 *                 start (uint64_t), then `count` bytes: each instruction's
 *                 length in order (the first is at start); a block of more
 *                 than 65535 instructions is several records
 *   CALL          kind, 0, name length (uint16_t), call site (uint64_t),
 *                 then the name ("puts@plt"; empty: through a pointer)
 *   THREAD_END    kind, 0, problem length (uint16_t), thread (uint32_t),
 *                 then the problem (empty: regenerated to its end)
 *   SIGNAL        kind, flags (RETURNED, INHERITED), signal (uint16_t),
 *                 pc (uint64_t): called before the instruction at pc (or
 *                 after it, when it faulted), or returned to pc
 *   DATA          kind, flags (INHERITED), 0 (uint16_t), count (uint32_t),
 *                 then `count` references (below): the data references of
 *                 the BLOCK record just before it, in execution order (a
 *                 trace recorded with data, `atomx trace --data`; a BLOCK
 *                 whose instructions made none has no DATA record)
 *   LIBRARY       kind, flags (INHERITED), name length (uint16_t), call
 *                 site (uint64_t), count (uint32_t), the name ("memcpy"),
 *                 then `count` references: what the call into libc's
 *                 memory and string functions accesses, modelled from its
 *                 arguments (include/atomx/libc_model.hpp); it follows the
 *                 call's CALL record
 *   SLICE         kind, 0, 0 (uint16_t), thread (uint32_t), cpu (int32_t:
 *                 the CPU it ran on, from the privileged schedule log; -1
 *                 unknown): only in a merged stream (`atomx regen --merge
 *                 --binary`), before each slice's records -- a run of one
 *                 thread between two cuts of the schedule (docs/trace.md,
 *                 "Ordering threads and processes"; Consumer::slice)
 * A reference is 14 bytes: address (uint64_t, run-time), instruction
 * (uint16_t: its index in the BLOCK record before it, the first 0; 0 in a
 * LIBRARY record), size (uint16_t, bytes), kind (uint8_t: 1 read, 2 write,
 * 3 read-modify-write, atomx::trace::RefKind), flags (uint8_t: LOCKED, a
 * locked read-modify-write, which Valgrind counts as two reads).
 * A BLOCK flagged ATOMX_REGEN_CONTINUED holds the rest of the block the
 * SIGNAL before it interrupted (its start is the first instruction left).
 * Threads follow one another: a BLOCK or CALL belongs to the THREAD_BEGIN
 * before it.  In a merged stream the threads take turns: a record belongs
 * to the SLICE before it (a thread's THREAD_BEGIN comes just before its
 * first SLICE, its THREAD_END in its last turn).  Version 2 added DATA and
 * LIBRARY (and LOCKED); a reader of version 1 streams sees neither.
 * Version 3 added SLICE, which a reader of version 2 does not know. */
#define ATOMX_REGEN_MAGIC 0x49545841u /* "AXTI" */
#define ATOMX_REGEN_VERSION 3u
#define ATOMX_REGEN_THREAD_BEGIN 1u
#define ATOMX_REGEN_BLOCK 2u
#define ATOMX_REGEN_CALL 3u
#define ATOMX_REGEN_THREAD_END 4u
#define ATOMX_REGEN_SIGNAL 5u
#define ATOMX_REGEN_DATA 6u
#define ATOMX_REGEN_LIBRARY 7u
#define ATOMX_REGEN_SLICE 8u
/* Flags (one bit space for every kind of record): */
#define ATOMX_REGEN_INHERITED 1u /* BLOCK, SIGNAL: it ran in the parent, before the fork */
#define ATOMX_REGEN_CONTINUED 2u /* BLOCK: the rest of a block a signal interrupted */
#define ATOMX_REGEN_RETURNED 4u  /* SIGNAL: the handler returned (else: it was called) */
/* A reference's flags (DATA, LIBRARY): */
#define ATOMX_REGEN_LOCKED 1u    /* a locked read-modify-write (lock add, xchg with memory) */

/* FNV-1a, 32 bits: atomx_trace_checksum_more(ATOMX_TRACE_CHECKSUM_START, ...)
 * over the stored bytes, then over the marks. */
#define ATOMX_TRACE_CHECKSUM_START 2166136261u
static inline uint32_t atomx_trace_checksum_more(uint32_t h, const void *data, uint64_t n) {
  const unsigned char *p = (const unsigned char *)data;
  for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}
static inline uint32_t atomx_trace_checksum(const void *data, uint64_t n) {
  return atomx_trace_checksum_more(ATOMX_TRACE_CHECKSUM_START, data, n);
}

#endif
