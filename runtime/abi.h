/* The contract between atomx (the rewriter) and the runtime that runs inside
 * every instrumented program.  Shared by C (runtime/stub) and C++ (src/instrument).
 *
 * What atomx puts into prog.atom:
 *   - the runtime blob (runtime/stub, built position-independent, no relocations)
 *     somewhere in the new executable segment; e_entry points to its first slot;
 *   - an AtomxDescriptor in a new writable segment; atomx writes the blob's
 *     kAtomxBlobDescriptorDelta field: descriptor address - blob address;
 *   - the analysis shared object's bytes, the routine names and the address map
 *     in a new read-only segment;
 *   - the routine table (uint64_t per routine) in the writable segment.
 *
 * All addresses atomx writes are LINK-TIME addresses of the output file; the
 * runtime adds `bias` (run-time minus link-time; 0 for non-PIE).
 */
#ifndef ATOMX_RUNTIME_ABI_H
#define ATOMX_RUNTIME_ABI_H

#include <stdint.h>

#include "../include/atomx/address_map.h"
#include "../include/atomx/end_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offsets of the blob's entry slots (each slot is a jmp, 8 bytes apart). */
enum {
  /* The process entry point: called as the kernel/ld.so enters a program
   * (%rsp -> argc, %rdx = function for atexit).  Loads the analysis object,
   * fills the routine table, runs ProgramBefore bodies, arranges ProgramAfter,
   * then jumps to originalEntry with %rsp and %rdx as they were. */
  kAtomxSlotEntry = 0,
  /* uint64_t original_address(uint64_t runTimeAddress): the original LINK-TIME
   * address of a code address (SysV call; clobbers only what C may). */
  kAtomxSlotOriginalAddress = 8,
  /* void program_after(void): runs the ProgramAfter bodies and the analysis
   * object's finish routine, once per process (later calls return at once). */
  kAtomxSlotProgramAfter = 16,
  /* The state-saving dispatcher used by every inserted call; see AtomxFrame. */
  kAtomxSlotEnter = 24,
  /* int64_t: descriptor address - blob address; written by atomx. */
  kAtomxBlobDescriptorDelta = 32,
  /* 8 bytes "ATOMXRT1". */
  kAtomxBlobMagic = 40,
  /* enter without the XSAVE state: for sites whose analysis routines, and
   * all code they reach, use general registers only (atomx decides:
   * src/instrument/RoutineFootprint).  Same frame, same body convention.
   * (Most light sites call no dispatcher at all: atomx gives them a body
   * that saves only the caller-saved registers their routines write;
   * src/instrument/SaveSet.h decides.) */
  kAtomxSlotEnterLight = 48,
  /* enter and enter-light without saving RFLAGS: for sites where no status
   * flag is live and whose procedure never sets DF (atomx decides:
   * analysis/FlagsLiveness).  The frame's rflags slot holds garbage. */
  kAtomxSlotEnterNoFlags = 56,
  kAtomxSlotEnterLightNoFlags = 64,
  /* void thread_counters(void): the per-thread counters' check (below,
   * "Per-thread counters"): registers the calling thread if the array %gs
   * points at is not its own.  Preserves every register and RFLAGS; the
   * site steps over the red zone first. */
  kAtomxSlotThreadCounters = 72,
};

/* Per-thread counters (atomx --counters per-thread).  Each thread counts
 * into its own copy of the counter arrays (the .atomx.counters section's
 * layout), which %gs points at: an increment is `incq %gs:OFFSET`, OFFSET
 * being the counter's offset in the section, so no increment is locked and
 * none is lost.  A thread gets its copy from thread_counters, which the
 * entry of every procedure that code outside the moved code may call runs
 * first (every thread's first moved code is such an entry): the inline
 * test `%fs:ATOMX_GLIBC_TID_OFFSET == %fs:ATOMX_COUNTERS_OWNER_OFFSET`
 * (the thread's own id, which glibc keeps in its thread control block,
 * against the id that registered this control block's thread) skips the
 * call once the thread has its copy.  A thread's copy outlives it; the copy
 * of a thread that has ended is added to the section and given to the next
 * thread that needs one.  ProgramAfter adds every copy to the section before
 * the ProgramAfter calls, which see the totals there. */
#define ATOMX_COUNTERS_OWNER_OFFSET 0x88 /* tcbhead_t.__glibc_unused2, after the trace cursor */
/* (0x90 and 0x98, the words after it: the trace recorder's library slot and
 * spill word, runtime/trace/stores.h ATOMX_STORES_LIBRARY_SLOT and
 * include/atomx/trace_format.h ATOMX_TRACE_SPILL_OFFSET) */
#define ATOMX_GLIBC_TID_OFFSET 0x2d0     /* struct pthread.tid (glibc 2.3x, x86-64) */

/* Site code (inserted by atomx before/after an application instruction):
 *
 *     lea  -128(%rsp), %rsp          # step over the red zone
 *     call blob+kAtomxSlotEnter
 *     nopl disp32(%rax)              # 0f 1f 80 <disp32>: body = end of this nop + disp32
 *     lea  128(%rsp), %rsp
 *
 * enter saves RFLAGS and the 15 general registers (the frame below), then the
 * full XSAVE state (mask EDX:EAX = all ones, area of xsaveSize bytes, 64-byte
 * aligned, header zeroed first), calls the body with %rdi = %rbx = frame and
 * the stack 16-byte aligned at the call, restores everything and returns to
 * the nop.  The body is generated by atomx: it sets up arguments from the
 * frame and calls analysis routines through the routine table. */
typedef struct AtomxFrame {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
  uint64_t rdi, rsi, rbp, rbx, rdx, rcx, rax;
  uint64_t rflags;
  uint64_t returnAddress; /* into the site code (the nop) */
  uint8_t redZone[128];
  /* The application's %rsp at the site is frame + kAtomxFrameAppStack. */
} AtomxFrame;
enum { kAtomxFrameAppStack = 8 * 17 + 128 };

/* The address map (AtomxAddressPair): include/atomx/address_map.h. */

#define ATOMX_DESCRIPTOR_MAGIC "ATOMXD01"

typedef struct AtomxDescriptor {
  char magic[8];             /* ATOMX_DESCRIPTOR_MAGIC */
  uint64_t self;             /* link-time address of this descriptor */
  uint64_t originalEntry;    /* the program's own entry point */
  uint64_t analysisImage;    /* the analysis shared object's bytes */
  uint64_t analysisSize;
  uint64_t routineNames;     /* routineCount NUL-terminated names, back to back */
  uint64_t routineCount;
  uint64_t routineTable;     /* uint64_t[routineCount]: run-time addresses, filled by the runtime */
  uint64_t beforeBodies;     /* uint64_t[beforeCount]: link-time addresses of ProgramBefore bodies */
  uint64_t beforeCount;
  uint64_t afterBodies;      /* uint64_t[afterCount]: ProgramAfter bodies, in order */
  uint64_t afterCount;
  uint64_t addressMap;       /* AtomxAddressPair[addressMapCount] */
  uint64_t addressMapCount;
  uint64_t mapBase;
  uint64_t newCodeStart;     /* [newCodeStart, newCodeEnd): the moved code */
  uint64_t newCodeEnd;
  uint64_t programName;      /* C string, for messages */
  /* Written by the runtime at start-up. */
  uint64_t bias;             /* run-time address - link-time address */
  uint64_t xsaveSize;        /* CPUID(0xD,0).EBX rounded up to 64 */
  uint64_t analysisHandle;   /* dlmopen handle */
  uint64_t finish;           /* run-time address of atomx_analysis_finish, or 0 */
  uint32_t programAfterDone; /* set (atomically) when ProgramAfter has run */
  uint32_t initialPid;
  /* Nonzero once the routine table is filled.  Until then every inserted
   * call is skipped: ld.so runs some program code before the entry point
   * (IFUNC resolvers, .preinit_array), when there is no analysis to call. */
  uint64_t ready;
  /* Threads.  The program's libc starts its threads and initialises only its
   * own per-thread state; the analysis namespace's libc never hears of them.
   * So the first heavy inserted call in each thread (one that saves the
   * vector state: only those can reach libc) first calls threadStart
   * (atomx_analysis_thread_start, runtime/analysis) in that thread.  It is
   * due while the analysis object's initial-exec TLS byte at %fs:threadFlag
   * (an offset from the thread pointer, the same in every thread) is zero.
   * Both are 0 when there is no analysis object. */
  int64_t threadFlag;
  uint64_t threadStart;
  /* Counters: the .atomx.counters section (link-time address, bytes), and
   * whether each thread counts into its own copy (above). */
  uint64_t counters;
  uint64_t countersSize;
  uint64_t perThreadCounters;
  /* Written by the runtime: the copies (runtime/stub/counters.c). */
  uint64_t threadCopies;
  /* Deferred end (below): set by atomx (--defer-end); the rest by the
   * runtime.  startedBySelf: the parent process runs this same file, as the
   * analysis library would tell (AtomxOutputPath).  In a replay: replaying,
   * and the pid and naming of the process whose dump it reads. */
  uint64_t deferredEnd;
  uint64_t startedBySelf;
  uint64_t replaying;
  uint64_t endPid;
  uint64_t endSuffixed;
  /* ATOMX_END_DIR_ENV's value at start-up (empty: the working directory at
   * the end): where the dump goes. */
  char endDir[1024];
  /* The trace's loops that hold the cursor in a register
   * (AtomxCursorRegion[cursorRegionCount], include/atomx/address_map.h). */
  uint64_t cursorRegions;
  uint64_t cursorRegionCount;
} AtomxDescriptor;

/* Deferred end (atomx --defer-end): the dump a process leaves and `atomx
 * end` reads, ../include/atomx/end_format.h. */

/* Bodies of ProgramBefore/ProgramAfter calls take no frame: the runtime calls
 * them as void body(void). */
typedef void (*AtomxBody)(void);

#ifdef __cplusplus
}
#endif

#endif
