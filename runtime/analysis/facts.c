/* The analysis side of <atomx/facts.h>: the blob atomx embeds
 * (src/instrument/Facts.cpp writes it), checked once at ProgramBefore and
 * read into records only as analysis code asks for them, a chunk of
 * records at a time: a short process that looks at a few blocks pays for
 * those, not for every instruction of the program (sqlite3's facts are tens
 * of megabytes).  The chunks read are laid end to end, in the order they
 * are first asked for, so the memory a process touches (a page fault per
 * page, several microseconds each in a VM) is what it read, not every page
 * the records it read are scattered over.  The records' strings are
 * pointers into the blob, which lives as long as the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "atomx/facts.h"
#include "../abi.h"
#include "../sys.h"

static const char *blobRecords[4]; /* per kind: its first record in the blob */
static const char *strings;
static size_t stringBytes;
static long procCount, blockCount, instCount, operandCount;
static const char *programFile = "";

/* Per chunk of kChunk records of a kind: 0 not read yet, kReady read, else
 * (thread id << 2 | 1) while that thread reads it; and where it is: a slot
 * of the kind's arena, taken when the chunk is first claimed (a reader
 * that reads it again, a signal handler or a thread taking over from one
 * gone, reuses it: a kind's arena holds each chunk at most once). */
enum { kProcs, kBlocks, kInsts, kOperands, kChunk = 16 };
static const uint32_t kReady = 2;
static uint32_t *chunkState[4];
static char **chunkAt[4];
static char *arena[4];
static long arenaChunks[4]; /* slots taken */
static long arenaSlots[4];  /* a slot per chunk, and kSpareSlots */
enum { kSpareSlots = 64 };
static const size_t recordSize[4] = {sizeof(AtomxProcFacts), sizeof(AtomxBlockFacts), sizeof(AtomxInstFacts),
                                     sizeof(AtomxOperandFacts)};

static void bad(const char *why) {
  fprintf(stderr, "atomx: the embedded program facts are unusable (%s)\n", why);
  procCount = blockCount = instCount = operandCount = 0;
}

static const char *string(uint32_t off) { return off < stringBytes ? strings + off : ""; }

static void readProc(long k, AtomxProcFacts *to) {
  AtomxFactsProc r;
  memcpy(&r, blobRecords[kProcs] + k * sizeof r, sizeof r);
  *to = (AtomxProcFacts){string(r.name), r.pc, r.endPc, r.firstBlock, r.blockCount};
}

static void readBlock(long k, AtomxBlockFacts *to) {
  AtomxFactsBlock r;
  memcpy(&r, blobRecords[kBlocks] + k * sizeof r, sizeof r);
  *to = (AtomxBlockFacts){r.pc, r.endPc, r.proc, r.firstInst, r.instCount, r.lastKind, r.endPc - r.lastSize};
}

static void readInst(long k, AtomxInstFacts *to) {
  AtomxFactsInst r;
  memcpy(&r, blobRecords[kInsts] + k * sizeof r, sizeof r);
  if ((uint64_t)r.firstOperand + r.operandCount > (uint64_t)operandCount) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "atomx: the embedded program facts are damaged (an operand out of range): left out\n");
    r.firstOperand = 0, r.operandCount = 0;
  }
  *to = (AtomxInstFacts){.pc = r.pc, .block = r.block, .size = r.size, .kind = r.kind,
                              .memOperands = r.memOperands, .access = r.access, .accessSize = r.accessSize,
                              .regsRead = r.regsRead, .regsWritten = r.regsWritten,
                              .mnemonic = string(r.mnemonic), .category = string(r.category),
                              .file = string(r.file), .line = r.line, .flagsRead = r.flagsRead,
                              .flagsWritten = r.flagsWritten, .flagsMaybeWritten = r.flagsMaybeWritten,
                              .flagsLiveAfter = r.flagsLiveAfter, .condition = r.condition, .traits = r.traits,
                              .operandCount = r.operandCount, .firstOperand = r.firstOperand, .target = r.target};
}

/* The firstOperand of instruction i's record. */
static uint32_t firstOperandOf(long i) {
  uint32_t first;
  memcpy(&first, blobRecords[kInsts] + i * sizeof(AtomxFactsInst) + offsetof(AtomxFactsInst, firstOperand),
         sizeof first);
  return first;
}

/* The instruction an operand belongs to (records list operands in
 * instruction order): the last whose firstOperand is at most k. */
static long instOfOperand(long k) {
  long lo = 0, hi = instCount - 1;
  while (lo < hi) {
    const long mid = lo + (hi - lo + 1) / 2;
    if (firstOperandOf(mid) <= (uint64_t)k) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Operands first ... end-1 into to[], in order: the instruction of the
 * first is searched for, each next one's found by stepping on from it. */
static void readOperands(long first, long end, void *to_) {
  AtomxOperandFacts *to = to_;
  long inst = instCount > 0 ? instOfOperand(first) : 0;
  for (long k = first; k < end; ++k) {
    while (inst + 1 < instCount && firstOperandOf(inst + 1) <= (uint64_t)k) ++inst;
    AtomxFactsOperand r;
    memcpy(&r, blobRecords[kOperands] + k * sizeof r, sizeof r);
    AtomxOperandFacts o = {.kind = r.kind, .regKind = r.regKind, .type = r.type, .access = r.access,
                           .reg = r.reg, .memIndex = r.memIndex, .regBits = r.regBits, .bits = r.bits,
                           .elementBits = r.elementBits, .elements = r.elements, .base = r.base,
                           .index = r.index, .scale = r.scale, .segment = r.segment, .size = r.size,
                           .memAccess = r.memAccess, .ripRelative = r.ripRelative,
                           .disp = (int64_t)((uint64_t)r.dispHigh << 32 | r.dispLow), .cause = r.cause};
    /* A %rip-relative operand's target: the next instruction's address plus the displacement. */
    if (o.ripRelative && instCount > 0) {
      AtomxFactsInst i;
      memcpy(&i, blobRecords[kInsts] + inst * sizeof i, sizeof i);
      o.target = i.pc + i.size + (uint64_t)o.disp;
    }
    to[k - first] = o;
  }
}

static void readProcs(long first, long end, void *to) {
  for (long k = first; k < end; ++k) readProc(k, (AtomxProcFacts *)to + (k - first));
}
static void readBlocks(long first, long end, void *to) {
  for (long k = first; k < end; ++k) readBlock(k, (AtomxBlockFacts *)to + (k - first));
}
static void readInsts(long first, long end, void *to) {
  for (long k = first; k < end; ++k) readInst(k, (AtomxInstFacts *)to + (k - first));
}

static void (*const readRecords[4])(long, long, void *) = {readProcs, readBlocks, readInsts, readOperands};

/* The calling thread's id without a system call: the word glibc keeps in
 * its thread control block (runtime/abi.h, ATOMX_GLIBC_TID_OFFSET; the
 * analysis code runs on the program's threads, whose %fs is the program's
 * libc's, which also sets it in a forked child), once it is seen to be the
 * id; gettid() otherwise.  A short process read ~1,200 chunks, a gettid each. */
static uint32_t thread_id(void) {
  static int tcbHoldsId; /* 0: not checked yet, 1: it does, -1: it does not */
  uint32_t tid;
  __asm__ volatile("movl %%fs:%c1, %0" : "=r"(tid) : "i"(ATOMX_GLIBC_TID_OFFSET));
  int holds = __atomic_load_n(&tcbHoldsId, __ATOMIC_RELAXED);
  if (holds == 0) {
    holds = tid == (uint32_t)gettid() ? 1 : -1;
    __atomic_store_n(&tcbHoldsId, holds, __ATOMIC_RELAXED);
  }
  return holds > 0 ? tid : (uint32_t)gettid();
}

/* Whether the thread that claimed a chunk is gone: a forked child's copy
 * of a chunk another thread of the parent was reading (no thread of the
 * child finishes it). */
static int ownerGone(uint32_t state) {
  return syscall(SYS_tgkill, getpid(), (pid_t)(state >> 2), 0) != 0 && errno == ESRCH;
}

/* Record `id` of `kind`, read: its chunk is read by the first thread to
 * ask, while others wait; a signal handler that interrupts its own thread
 * in the middle reads the chunk again (the same values, into the same
 * slot), and so does a thread that finds the one reading it gone. */
static const void *ensure(int kind, long id, long count) {
  const long chunk = id / kChunk;
  const size_t at = (size_t)(id % kChunk) * recordSize[kind];
  uint32_t *state = &chunkState[kind][chunk];
  uint32_t s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
  if (s == kReady) return chunkAt[kind][chunk] + at;
  const uint32_t me = thread_id() << 2 | 1;
  const long first = chunk * kChunk, end = first + kChunk < count ? first + kChunk : count;
  for (unsigned waits = 0;; s = __atomic_load_n(state, __ATOMIC_ACQUIRE)) {
    if (s == kReady) return chunkAt[kind][chunk] + at;
    if (s == me) break;
    uint32_t seen = s;
    if ((s == 0 || (++waits % 256 == 0 && ownerGone(s))) &&
        __atomic_compare_exchange_n(state, &seen, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
      break;
    sched_yield();
  }
  char *slot = __atomic_load_n(&chunkAt[kind][chunk], __ATOMIC_ACQUIRE);
  if (!slot) {
    /* A signal handler that claims the chunk again between the load above
     * and the exchange below takes a slot of its own: one of the spare
     * ones, and the first slot set is kept. */
    const long taken = __atomic_fetch_add(&arenaChunks[kind], 1, __ATOMIC_RELAXED);
    if (taken >= arenaSlots[kind]) {
      fprintf(stderr, "atomx: the embedded program facts: out of slots for records\n");
      abort();
    }
    char *mine = arena[kind] + (size_t)taken * kChunk * recordSize[kind];
    slot = NULL;
    if (__atomic_compare_exchange_n(&chunkAt[kind][chunk], &slot, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      slot = mine;
  }
  readRecords[kind](first, end, slot);
  __atomic_store_n(state, kReady, __ATOMIC_RELEASE);
  return slot + at;
}

/* Zeroed memory that costs nothing until a page of it is touched.  Not
 * calloc: the analysis namespace's libc has no brk of its own, and its
 * calloc clears (so touches) every page of a block under the mmap
 * threshold -- about 60 page faults a process for a program like gzip. */
static void *zeroed(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void atomx_facts_init(const char *blob, long size) {
  if (arena[kProcs]) return; /* once (a forked child has them already) */
  AtomxFactsHeader h;
  if (size < (long)sizeof h) return bad("too short");
  memcpy(&h, blob, sizeof h);
  if (h.magic != ATOMX_FACTS_MAGIC || h.version != ATOMX_FACTS_VERSION) return bad("not this version's");
  const size_t records = sizeof h + h.procs * sizeof(AtomxFactsProc) + h.blocks * sizeof(AtomxFactsBlock) +
                         h.insts * sizeof(AtomxFactsInst) + (size_t)h.operands * sizeof(AtomxFactsOperand);
  if ((size_t)size < records) return bad("truncated");
  blobRecords[kProcs] = blob + sizeof h;
  blobRecords[kBlocks] = blobRecords[kProcs] + h.procs * sizeof(AtomxFactsProc);
  blobRecords[kInsts] = blobRecords[kBlocks] + h.blocks * sizeof(AtomxFactsBlock);
  blobRecords[kOperands] = blobRecords[kInsts] + h.insts * sizeof(AtomxFactsInst);
  strings = blob + records;
  stringBytes = (size_t)size - records;
  /* Fresh zeroed pages, touched only as chunks are read: a slot per chunk
   * of the kind. */
  const uint32_t counts[4] = {h.procs, h.blocks, h.insts, h.operands};
  for (int k = 0; k < 4; ++k) {
    const size_t chunks = counts[k] / kChunk + 1;
    chunkState[k] = zeroed(chunks * sizeof(uint32_t));
    chunkAt[k] = zeroed(chunks * sizeof(char *));
    arenaSlots[k] = (long)chunks + kSpareSlots;
    arena[k] = zeroed((size_t)arenaSlots[k] * kChunk * recordSize[k]);
    if (!chunkState[k] || !chunkAt[k] || !arena[k]) return bad("out of memory");
  }
  programFile = string(h.program);
  procCount = h.procs, blockCount = h.blocks, instCount = h.insts, operandCount = h.operands;
}

/* Set by the runtime once the analysis object is loaded
 * (runtime/stub/start.c), before any routine runs: while it is zero, the
 * object's constructors run. */
int atomx_analysis_loaded;

/* A query made while the analysis object loads (from one of its
 * constructors): the facts are handed over later, at ProgramBefore, so its
 * answer would be 0 or null, and a table sized by it too small.  Refused,
 * loudly: a message and SIGABRT, by raw system calls (a routine that asks
 * for facts while the program runs stays light: it reaches no libc). */
static void refuse_early(const char *query, unsigned long length) {
  if (arena[kProcs] || __atomic_load_n(&atomx_analysis_loaded, __ATOMIC_RELAXED)) return;
  static const char head[] = "atomx: ", tail[] =
      " was called while the analysis object loads (from a constructor): the program's facts arrive at "
      "program start; call it from a ProgramBefore routine or later\n";
  sys_write(2, head, sizeof head - 1);
  sys_write(2, query, length);
  sys_write(2, tail, sizeof tail - 1);
  sys_tgkill(sys_getpid(), sys_gettid(), 6 /* SIGABRT */);
  sys_exit_group(134);
}
#define REFUSE_EARLY(query) refuse_early(query, sizeof query - 1)

long AtomxProcCount(void) { return REFUSE_EARLY("AtomxProcCount()"), procCount; }
long AtomxBlockCount(void) { return REFUSE_EARLY("AtomxBlockCount()"), blockCount; }
long AtomxInstCount(void) { return REFUSE_EARLY("AtomxInstCount()"), instCount; }
long AtomxOperandCount(void) { return REFUSE_EARLY("AtomxOperandCount()"), operandCount; }

/* Record `id` of `kind`, read if it was not yet. */
static const void *record(int kind, long id, long count) {
  if (id < 0 || id >= count) return NULL;
  return ensure(kind, id, count);
}

const AtomxProcFacts *AtomxProc(long id) { return REFUSE_EARLY("AtomxProc()"), record(kProcs, id, procCount); }
const AtomxBlockFacts *AtomxBlock(long id) { return REFUSE_EARLY("AtomxBlock()"), record(kBlocks, id, blockCount); }
const AtomxInstFacts *AtomxInst(long id) { return REFUSE_EARLY("AtomxInst()"), record(kInsts, id, instCount); }
const AtomxOperandFacts *AtomxOperand(long id) { return REFUSE_EARLY("AtomxOperand()"), record(kOperands, id, operandCount); }
const char *AtomxProgramFile(void) { return REFUSE_EARLY("AtomxProgramFile()"), programFile; }

AtomxInstNames AtomxInstNamesOf(long id) {
  AtomxInstNames n = {NULL, NULL, NULL, 0};
  if (id < 0 || id >= instCount) return n;
  const char *r = blobRecords[kInsts] + (size_t)id * sizeof(AtomxFactsInst);
  uint32_t f[4]; /* mnemonic, category, file, line: adjacent in the record */
  memcpy(f, r + offsetof(AtomxFactsInst, mnemonic), sizeof f);
  n.mnemonic = string(f[0]), n.category = string(f[1]), n.file = string(f[2]), n.line = f[3];
  return n;
}
