/* atomx: what the instrumentation side knew, for analysis code (C and C++).
 *
 * A count means something only beside what was counted.  A tool whose
 * Instrument calls atomx::embedFacts() gets, in the instrumented file, every
 * procedure, block and instruction atomx instruments, numbered as
 * Proc::id(), Block::id() and Inst::id() number them there; its analysis
 * code looks them up by those ids, from program start (before its
 * ProgramBefore calls) to the end.  Not in a constructor of the analysis
 * object: that runs while the object loads, before the facts are handed
 * over, and a query there is refused (a message naming it, then SIGABRT).  An instruction's facts include the
 * semantics module's: its operands (AtomxOperand), the flags it reads and
 * writes, its condition, so a report that weights what instructions do by
 * how often they ran needs nothing else from the instrumentation side:
 *
 *     Instrument:  counts.count(b, b.id());  report.atProgramEnd(counts);
 *     analysis:    void Report(long *counts) {
 *                    for (long b = 0; b < AtomxBlockCount(); ++b) {
 *                      const AtomxBlockFacts *f = AtomxBlock(b);
 *                      ... counts[b] * f->instCount, AtomxProc(f->proc)->name,
 *                      AtomxInst(f->firstInst + k)->mnemonic ...
 *
 * No marshalling of names, addresses and instruction facts by hand.  The
 * facts are read-only, and the strings live as long as the process; each
 * distinct string is kept once, so equal strings (two instructions'
 * mnemonics) are the same pointer, and a table keyed by pointer is keyed
 * by content.
 *
 * The facts are one blob (atomx writes it, src/instrument/Facts.cpp; the
 * analysis library reads it, runtime/analysis/facts.c): the header, the
 * records of the procedures, blocks, instructions and operands, then
 * their strings, NUL-terminated, which records name by offset. */
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
  uint8_t lastKind;      /* how it ends: its last instruction's kind (ATOMX_INST_COND_BRANCH ...) */
  uint64_t lastPc;       /* and that instruction's original address: a tool that looks at how blocks
                            end (a branch's pc) reads no instruction record */
} AtomxBlockFacts;

/* One operand, as atomx::Inst::operand() gives it (atomx.hpp's Operand
 * and MemoryOperand; the enums' values are the ATOMX_* below). */
typedef struct {
  uint8_t kind;          /* ATOMX_OPERAND_REGISTER ... ATOMX_OPERAND_TARGET */
  uint8_t regKind;       /* ATOMX_REGKIND_NONE ... ATOMX_REGKIND_OTHER */
  uint8_t type;          /* ATOMX_TYPE_NONE ... ATOMX_TYPE_OTHER: its elements' type */
  uint8_t access;        /* ATOMX_OPERAND_READ | _WRITE | _IMPLICIT | _HIDDEN */
  int16_t reg;           /* Register: the hardware number (%al and %rax 0), -1 for none */
  int16_t memIndex;      /* Memory: which memory operand it is (0 ...), else -1 */
  uint16_t regBits;      /* Register: its width as named (%eax 32, %ymm 256) */
  uint16_t bits;         /* what the instruction reads or writes of it */
  uint16_t elementBits;  /* its elements' width, */
  uint16_t elements;     /* and how many (addpd's %xmm: 2 of 64 bits) */
  /* Memory and Address operands: the parts (the rest 0, base/index -1). */
  int8_t base, index;    /* general registers, -1 for none */
  uint8_t scale;         /* 1, 2, 4, 8 with an index */
  uint8_t segment;       /* ATOMX_SEGMENT_NONE ... ATOMX_SEGMENT_GS */
  uint16_t size;         /* bytes accessed (Address: 0) */
  uint8_t memAccess;     /* ATOMX_OPERAND_READ | _WRITE | _IMPLICIT: the memory's */
  uint8_t ripRelative;   /* 1: %rip-relative, at target */
  int64_t disp;
  uint64_t target;       /* ripRelative: the original address it names */
  uint8_t cause;         /* Memory: why the program references it, ATOMX_CAUSE_* (analysis/MemoryCauses.h;
                            tools/ease/README.md, "Memory references by cause"); else ATOMX_CAUSE_NONE */
} AtomxOperandFacts;

/* AtomxOperandFacts.cause: a memory reference's cause (ease's Figure 12). */
enum { ATOMX_CAUSE_NONE, ATOMX_CAUSE_SAVE_RESTORE, ATOMX_CAUSE_CALL_LINKAGE, ATOMX_CAUSE_STACK_VARIABLE,
       ATOMX_CAUSE_SPILL, ATOMX_CAUSE_GLOBAL, ATOMX_CAUSE_POINTER };

enum { ATOMX_OPERAND_REGISTER, ATOMX_OPERAND_IMMEDIATE, ATOMX_OPERAND_MEMORY, ATOMX_OPERAND_ADDRESS,
       ATOMX_OPERAND_TARGET };
enum { ATOMX_REGKIND_NONE, ATOMX_REGKIND_GENERAL, ATOMX_REGKIND_VECTOR, ATOMX_REGKIND_X87, ATOMX_REGKIND_MMX,
       ATOMX_REGKIND_MASK, ATOMX_REGKIND_FLAGS, ATOMX_REGKIND_OTHER };
enum { ATOMX_TYPE_NONE, ATOMX_TYPE_INT, ATOMX_TYPE_UINT, ATOMX_TYPE_FLOAT16, ATOMX_TYPE_FLOAT32, ATOMX_TYPE_FLOAT64,
       ATOMX_TYPE_FLOAT80, ATOMX_TYPE_BCD, ATOMX_TYPE_OTHER };
enum { ATOMX_SEGMENT_NONE, ATOMX_SEGMENT_ES, ATOMX_SEGMENT_CS, ATOMX_SEGMENT_SS, ATOMX_SEGMENT_DS,
       ATOMX_SEGMENT_FS, ATOMX_SEGMENT_GS };
enum { ATOMX_OPERAND_READ = 1, ATOMX_OPERAND_WRITE = 2, ATOMX_OPERAND_IMPLICIT = 4, ATOMX_OPERAND_HIDDEN = 8 };

/* Register sets (regsRead, regsWritten): bit r for general register r
 * (0 rax, 1 rcx, 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15, any
 * width), bit 16 for the status flags, bit 32 + n for vector register n. */
#define ATOMX_FLAGS_BIT ((uint64_t)1 << 16)
#define ATOMX_VECTOR_BIT(n) ((uint64_t)1 << (32 + (n)))
/* Status flags (flagsRead ...): atomx::kCF ... kOF. */
enum { ATOMX_CF = 1, ATOMX_PF = 2, ATOMX_AF = 4, ATOMX_ZF = 8, ATOMX_SF = 16, ATOMX_OF = 32 };
/* AtomxInstFacts.kind: atomx::InstClass */
enum { ATOMX_INST_OTHER, ATOMX_INST_COND_BRANCH, ATOMX_INST_JUMP, ATOMX_INST_INDIRECT_JUMP, ATOMX_INST_CALL,
       ATOMX_INST_INDIRECT_CALL, ATOMX_INST_RETURN, ATOMX_INST_STOP };
/* AtomxInstFacts.traits */
enum { ATOMX_SCALAR_VECTOR = 1, ATOMX_REPEATED = 2, ATOMX_LOCKED = 4,
       ATOMX_REPEATED_WHILE = 8, ATOMX_REPEATED_WHILE_NE = 16 }; /* Inst::isRepeatedWhile, isRepeatedWhileNotEqual */

typedef struct {
  uint64_t pc;           /* original address */
  uint32_t block;        /* its block's id */
  uint8_t size;          /* bytes */
  uint8_t kind;          /* ATOMX_INST_OTHER ... ATOMX_INST_STOP (atomx::InstClass) */
  uint8_t memOperands;   /* memory operands (Inst::memOperandCount) */
  uint8_t access;        /* 1: it loads, 2: it stores (either or both) */
  uint16_t accessSize;   /* bytes of its first memory operand, 0 without one */
  uint64_t regsRead, regsWritten; /* Inst::regsRead / regsWritten: the register sets above */
  const char *mnemonic;  /* "mov", "jnz" ... */
  const char *category;  /* Inst::category(): "DATAXFER", "COND_BR" ... */
  const char *file;      /* its source file ("" without a line) */
  uint32_t line;         /* its source line (0 without one) */
  /* The semantics module's facts (Inst's queries of the same names): */
  uint8_t flagsRead, flagsWritten, flagsMaybeWritten, flagsLiveAfter; /* ATOMX_CF ... bits */
  int8_t condition;      /* Inst::condition(): 0..15, -1 for none */
  uint8_t traits;        /* ATOMX_SCALAR_VECTOR | ATOMX_REPEATED | ATOMX_LOCKED | ATOMX_REPEATED_WHILE[_NE] */
  uint16_t operandCount; /* its operands (Inst::operand), hidden ones included: AtomxOperand(firstOperand) */
  uint32_t firstOperand; /*   ... (firstOperand + operandCount - 1); 0 without FactsDetail::Operands */
  uint64_t target;       /* a direct branch's original target, else 0 */
} AtomxInstFacts;

/* 0 when the tool did not call atomx::embedFacts() (operands: without
 * FactsDetail::Operands). */
long AtomxProcCount(void);
long AtomxBlockCount(void);
long AtomxInstCount(void);
long AtomxOperandCount(void);
/* Null for an id out of range.  A record is read from the blob when it is
 * first asked for (any thread may ask), so each call gives one record: to
 * reach the next, call again with the next id, never step the pointer. */
const AtomxProcFacts *AtomxProc(long id);
const AtomxBlockFacts *AtomxBlock(long id);
const AtomxInstFacts *AtomxInst(long id);
const AtomxOperandFacts *AtomxOperand(long id);
/* An instruction's names and source position, the same strings as its
 * record's, read straight from the blob into the value returned: no
 * record is read or kept.  For a report that only groups instructions by
 * these (by mnemonic, by source line), which then touches no memory per
 * instruction (a record is 104 bytes of the process's own).  All null and
 * 0 for an id out of range. */
typedef struct {
  const char *mnemonic, *category, *file;
  uint32_t line;
} AtomxInstNames;
AtomxInstNames AtomxInstNamesOf(long id);
/* The instrumented program's file, as atomx read it ("" without facts). */
const char *AtomxProgramFile(void);

/* Called by the runtime at ProgramBefore, ahead of the tool's calls, with
 * the blob below; analysis code does not call it. */
void atomx_facts_init(const char *blob, long size);

/* --- The blob ------------------------------------------------------------ */

#define ATOMX_FACTS_MAGIC 0x53544346u /* "FCTS" */
#define ATOMX_FACTS_VERSION 4u

typedef struct {
  uint32_t magic, version;
  uint32_t procs, blocks, insts, operands;
  uint32_t program; /* string: the program's file */
  uint32_t reserved;
} AtomxFactsHeader;

typedef struct {
  uint64_t pc, endPc;
  uint32_t name; /* string */
  uint32_t firstBlock, blockCount;
  uint32_t reserved;
} AtomxFactsProc;

typedef struct {
  uint64_t pc, endPc;
  uint32_t proc, firstInst, instCount;
  uint8_t lastKind, lastSize; /* its last instruction's kind and bytes */
  uint16_t reserved;
} AtomxFactsBlock;

typedef struct {
  uint64_t pc, regsRead, regsWritten;
  uint32_t block;
  uint8_t size, kind, memOperands, access;
  uint16_t accessSize, reserved;
  uint32_t mnemonic, category, file, line; /* strings, and the line */
  uint32_t firstOperand;
  uint64_t target;
  uint16_t operandCount;
  uint8_t flagsRead, flagsWritten, flagsMaybeWritten, flagsLiveAfter;
  int8_t condition;
  uint8_t traits;
} AtomxFactsInst;

/* An operand: AtomxOperandFacts' fields in fewer bytes (the widths that
 * fit in one, the displacement as two halves, no %rip-relative target:
 * the reader computes it, the next instruction's address plus the
 * displacement).  No record has padding: the blob is the same bytes for
 * the same program. */
typedef struct {
  uint8_t kind, regKind, type, access;
  int8_t reg, memIndex, base, index;
  uint16_t regBits, bits;
  uint8_t elementBits, elements, scale, segment;
  uint16_t size;
  uint8_t memAccess, ripRelative;
  uint32_t dispLow, dispHigh;
  uint8_t cause, reserved[3];
} AtomxFactsOperand;

#ifdef __cplusplus
}
#endif

#endif
