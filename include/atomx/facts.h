/* atomx: what the instrumentation side knew, for analysis code (C and C++).
 *
 * A count means something only beside what was counted.  A tool whose
 * Instrument calls atomx::embedFacts() gets, in the instrumented file, every
 * procedure, block and instruction atomx instruments, numbered as
 * Proc::id(), Block::id() and Inst::id() number them there; its analysis
 * code looks them up by those ids, from program start (before its
 * ProgramBefore calls) to the end:
 *
 *     Instrument:  counts.count(b, b.id());  report.atProgramEnd(counts);
 *     analysis:    void Report(long *counts) {
 *                    for (long b = 0; b < AtomxBlockCount(); ++b) {
 *                      const AtomxBlockFacts *f = AtomxBlock(b);
 *                      ... counts[b] * f->instCount, AtomxProc(f->proc)->name,
 *                      AtomxInst(f->firstInst + k)->mnemonic ...
 *
 * No marshalling of names, addresses and instruction facts by hand.  The
 * facts are read-only, and the strings live as long as the process.
 *
 * The facts are one blob (atomx writes it, src/instrument/Facts.cpp; the
 * analysis library reads it, runtime/analysis/facts.c): the header, the
 * records of the procedures, blocks and instructions, then their strings,
 * NUL-terminated, which records name by offset. */
#ifndef ATOMX_FACTS_H
#define ATOMX_FACTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- What analysis code reads ------------------------------------------- */

typedef struct {
  const char *name;      /* as the symbol table names it (mangled for C++) */
  uint64_t pc, endPc;    /* original addresses: [pc, endPc) */
  uint32_t firstBlock;   /* its blocks: ids firstBlock .. firstBlock + blockCount - 1 */
  uint32_t blockCount;
} AtomxProcFacts;

typedef struct {
  uint64_t pc, endPc;    /* original addresses of its first instruction and past its last */
  uint32_t proc;         /* its procedure's id */
  uint32_t firstInst;    /* its instructions: ids firstInst .. firstInst + instCount - 1 */
  uint32_t instCount;
} AtomxBlockFacts;

typedef struct {
  uint64_t pc;           /* original address */
  uint32_t block;        /* its block's id */
  uint8_t size;          /* bytes */
  uint8_t kind;          /* atomx::InstClass: 0 other, 1 conditional branch, 2 jump, 3 indirect
                            jump, 4 call, 5 indirect call, 6 return, 7 stop */
  uint8_t memOperands;   /* memory operands (Inst::memOperandCount) */
  uint8_t access;        /* 1: it loads, 2: it stores (either or both) */
  uint16_t accessSize;   /* bytes of its first memory operand, 0 without one */
  uint64_t regsRead, regsWritten; /* Inst::regsRead / regsWritten bits */
  const char *mnemonic;  /* "mov", "jnz" ... */
  const char *category;  /* Inst::category(): "DATAXFER", "COND_BR" ... */
  const char *file;      /* its source file ("" without a line) */
  uint32_t line;         /* its source line (0 without one) */
} AtomxInstFacts;

/* 0 when the tool did not call atomx::embedFacts(). */
long AtomxProcCount(void);
long AtomxBlockCount(void);
long AtomxInstCount(void);
/* Null for an id out of range. */
const AtomxProcFacts *AtomxProc(long id);
const AtomxBlockFacts *AtomxBlock(long id);
const AtomxInstFacts *AtomxInst(long id);
/* The instrumented program's file, as atomx read it ("" without facts). */
const char *AtomxProgramFile(void);

/* Called by the runtime at ProgramBefore, ahead of the tool's calls, with
 * the blob below; analysis code does not call it. */
void atomx_facts_init(const char *blob, long size);

/* --- The blob ------------------------------------------------------------ */

#define ATOMX_FACTS_MAGIC 0x53544346u /* "FCTS" */
#define ATOMX_FACTS_VERSION 1u

typedef struct {
  uint32_t magic, version;
  uint32_t procs, blocks, insts;
  uint32_t program; /* string: the program's file */
} AtomxFactsHeader;

typedef struct {
  uint64_t pc, endPc;
  uint32_t name; /* string */
  uint32_t firstBlock, blockCount;
  uint32_t reserved;
} AtomxFactsProc;

typedef struct {
  uint64_t pc, endPc;
  uint32_t proc, firstInst, instCount, reserved;
} AtomxFactsBlock;

typedef struct {
  uint64_t pc, regsRead, regsWritten;
  uint32_t block;
  uint8_t size, kind, memOperands, access;
  uint16_t accessSize, reserved;
  uint32_t mnemonic, category, file, line; /* strings, and the line */
} AtomxFactsInst;

#ifdef __cplusplus
}
#endif

#endif
