/* The analysis side of <atomx/facts.h>: the blob atomx embeds
 * (src/instrument/Facts.cpp writes it), checked once at ProgramBefore and
 * read into records only as analysis code asks for them, a chunk of
 * records at a time: a short process that looks at a few blocks pays for
 * those, not for every instruction of the program (sqlite3's facts are tens
 * of megabytes).  The records' strings are pointers into the blob, which
 * lives as long as the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "atomx/facts.h"

static const char *blobRecords[4]; /* per kind: its first record in the blob */
static const char *strings;
static size_t stringBytes;
static AtomxProcFacts *procs;
static AtomxBlockFacts *blocks;
static AtomxInstFacts *insts;
static AtomxOperandFacts *operands;
static long procCount, blockCount, instCount, operandCount;
static const char *programFile = "";

/* Per chunk of kChunk records of a kind: 0 not read yet, kReady read, else
 * (thread id << 2 | 1) while that thread reads it. */
enum { kProcs, kBlocks, kInsts, kOperands, kChunk = 16 };
static const uint32_t kReady = 2;
static uint32_t *chunkState[4];

static void bad(const char *why) {
  fprintf(stderr, "atomx: the embedded program facts are unusable (%s)\n", why);
  procCount = blockCount = instCount = operandCount = 0;
}

static const char *string(uint32_t off) { return off < stringBytes ? strings + off : ""; }

static void readProc(long k) {
  AtomxFactsProc r;
  memcpy(&r, blobRecords[kProcs] + k * sizeof r, sizeof r);
  procs[k] = (AtomxProcFacts){string(r.name), r.pc, r.endPc, r.firstBlock, r.blockCount};
}

static void readBlock(long k) {
  AtomxFactsBlock r;
  memcpy(&r, blobRecords[kBlocks] + k * sizeof r, sizeof r);
  blocks[k] = (AtomxBlockFacts){r.pc, r.endPc, r.proc, r.firstInst, r.instCount, r.lastKind, r.endPc - r.lastSize};
}

static void readInst(long k) {
  AtomxFactsInst r;
  memcpy(&r, blobRecords[kInsts] + k * sizeof r, sizeof r);
  if ((uint64_t)r.firstOperand + r.operandCount > (uint64_t)operandCount) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "atomx: the embedded program facts are damaged (an operand out of range): left out\n");
    r.firstOperand = 0, r.operandCount = 0;
  }
  insts[k] = (AtomxInstFacts){.pc = r.pc, .block = r.block, .size = r.size, .kind = r.kind,
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

/* Operands first ... end-1, in order: the instruction of the first is
 * searched for, each next one's found by stepping on from it. */
static void readOperands(long first, long end) {
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
                           .disp = (int64_t)((uint64_t)r.dispHigh << 32 | r.dispLow)};
    /* A %rip-relative operand's target: the next instruction's address plus the displacement. */
    if (o.ripRelative && instCount > 0) {
      AtomxFactsInst i;
      memcpy(&i, blobRecords[kInsts] + inst * sizeof i, sizeof i);
      o.target = i.pc + i.size + (uint64_t)o.disp;
    }
    operands[k] = o;
  }
}

static void readProcs(long first, long end) {
  for (long k = first; k < end; ++k) readProc(k);
}
static void readBlocks(long first, long end) {
  for (long k = first; k < end; ++k) readBlock(k);
}
static void readInsts(long first, long end) {
  for (long k = first; k < end; ++k) readInst(k);
}

static void (*const readRecords[4])(long, long) = {readProcs, readBlocks, readInsts, readOperands};

/* Whether the thread that claimed a chunk is gone: a forked child's copy
 * of a chunk another thread of the parent was reading (no thread of the
 * child finishes it). */
static int ownerGone(uint32_t state) {
  return syscall(SYS_tgkill, getpid(), (pid_t)(state >> 2), 0) != 0 && errno == ESRCH;
}

/* Record `id` of `kind` is read: its chunk is read by the first thread to
 * ask, while others wait; a signal handler that interrupts its own thread
 * in the middle reads the chunk again (the same values), and so does a
 * thread that finds the one reading it gone. */
static void ensure(int kind, long id, long count) {
  uint32_t *state = &chunkState[kind][id / kChunk];
  uint32_t s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
  if (s == kReady) return;
  const uint32_t me = (uint32_t)gettid() << 2 | 1;
  const long first = id / kChunk * kChunk, end = first + kChunk < count ? first + kChunk : count;
  for (unsigned waits = 0;; s = __atomic_load_n(state, __ATOMIC_ACQUIRE)) {
    if (s == kReady) return;
    if (s == me) break;
    uint32_t seen = s;
    if ((s == 0 || (++waits % 256 == 0 && ownerGone(s))) &&
        __atomic_compare_exchange_n(state, &seen, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
      break;
    sched_yield();
  }
  readRecords[kind](first, end);
  __atomic_store_n(state, kReady, __ATOMIC_RELEASE);
}

void atomx_facts_init(const char *blob, long size) {
  if (procs || blocks || insts || operands) return; /* once (a forked child has them already) */
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
  /* Fresh zeroed memory, touched only where records are read. */
  const uint32_t counts[4] = {h.procs, h.blocks, h.insts, h.operands};
  procs = calloc(h.procs + 1, sizeof *procs);
  blocks = calloc(h.blocks + 1, sizeof *blocks);
  insts = calloc(h.insts + 1, sizeof *insts);
  operands = calloc(h.operands + 1, sizeof *operands);
  for (int k = 0; k < 4; ++k) chunkState[k] = calloc(counts[k] / kChunk + 1, sizeof(uint32_t));
  if (!procs || !blocks || !insts || !operands || !chunkState[0] || !chunkState[1] || !chunkState[2] ||
      !chunkState[3])
    return bad("out of memory");
  programFile = string(h.program);
  procCount = h.procs, blockCount = h.blocks, instCount = h.insts, operandCount = h.operands;
}

long AtomxProcCount(void) { return procCount; }
long AtomxBlockCount(void) { return blockCount; }
long AtomxInstCount(void) { return instCount; }
long AtomxOperandCount(void) { return operandCount; }

/* Record `id` of `kind` in `array` (records of `size` bytes), read if it was not yet. */
static const void *record(int kind, long id, long count, const void *array, size_t size) {
  if (id < 0 || id >= count) return NULL;
  ensure(kind, id, count);
  return (const char *)array + (size_t)id * size;
}

const AtomxProcFacts *AtomxProc(long id) { return record(kProcs, id, procCount, procs, sizeof *procs); }
const AtomxBlockFacts *AtomxBlock(long id) { return record(kBlocks, id, blockCount, blocks, sizeof *blocks); }
const AtomxInstFacts *AtomxInst(long id) { return record(kInsts, id, instCount, insts, sizeof *insts); }
const AtomxOperandFacts *AtomxOperand(long id) {
  return record(kOperands, id, operandCount, operands, sizeof *operands);
}
const char *AtomxProgramFile(void) { return programFile; }

AtomxInstNames AtomxInstNamesOf(long id) {
  AtomxInstNames n = {NULL, NULL, NULL, 0};
  if (id < 0 || id >= instCount) return n;
  const char *r = blobRecords[kInsts] + (size_t)id * sizeof(AtomxFactsInst);
  uint32_t f[4]; /* mnemonic, category, file, line: adjacent in the record */
  memcpy(f, r + offsetof(AtomxFactsInst, mnemonic), sizeof f);
  n.mnemonic = string(f[0]), n.category = string(f[1]), n.file = string(f[2]), n.line = f[3];
  return n;
}
