/* The analysis side of <atomx/facts.h>: the blob atomx embeds
 * (src/instrument/Facts.cpp writes it) read once, at ProgramBefore, into
 * records whose strings are pointers into the blob (which lives as long as
 * the process). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomx/facts.h"

static AtomxProcFacts *procs;
static AtomxBlockFacts *blocks;
static AtomxInstFacts *insts;
static AtomxOperandFacts *operands;
static long procCount, blockCount, instCount, operandCount;
static const char *programFile = "";

static void bad(const char *why) {
  fprintf(stderr, "atomx: the embedded program facts are unusable (%s)\n", why);
  procCount = blockCount = instCount = operandCount = 0;
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
  const char *strings = blob + records;
  const size_t stringBytes = (size_t)size - records;
#define STRING(off) ((off) < stringBytes ? strings + (off) : "")
  procs = calloc(h.procs + 1, sizeof *procs);
  blocks = calloc(h.blocks + 1, sizeof *blocks);
  insts = calloc(h.insts + 1, sizeof *insts);
  if (!procs || !blocks || !insts) return bad("out of memory");
  const char *at = blob + sizeof h;
  for (uint32_t k = 0; k < h.procs; ++k, at += sizeof(AtomxFactsProc)) {
    AtomxFactsProc r;
    memcpy(&r, at, sizeof r);
    procs[k] = (AtomxProcFacts){STRING(r.name), r.pc, r.endPc, r.firstBlock, r.blockCount};
  }
  for (uint32_t k = 0; k < h.blocks; ++k, at += sizeof(AtomxFactsBlock)) {
    AtomxFactsBlock r;
    memcpy(&r, at, sizeof r);
    blocks[k] = (AtomxBlockFacts){r.pc, r.endPc, r.proc, r.firstInst, r.instCount};
  }
  for (uint32_t k = 0; k < h.insts; ++k, at += sizeof(AtomxFactsInst)) {
    AtomxFactsInst r;
    memcpy(&r, at, sizeof r);
    insts[k] = (AtomxInstFacts){.pc = r.pc, .block = r.block, .size = r.size, .kind = r.kind,
                                .memOperands = r.memOperands, .access = r.access, .accessSize = r.accessSize,
                                .regsRead = r.regsRead, .regsWritten = r.regsWritten,
                                .mnemonic = STRING(r.mnemonic), .category = STRING(r.category),
                                .file = STRING(r.file), .line = r.line, .flagsRead = r.flagsRead,
                                .flagsWritten = r.flagsWritten, .flagsMaybeWritten = r.flagsMaybeWritten,
                                .flagsLiveAfter = r.flagsLiveAfter, .condition = r.condition, .traits = r.traits,
                                .operandCount = r.operandCount, .firstOperand = r.firstOperand,
                                .target = r.target};
    if ((uint64_t)r.firstOperand + r.operandCount > h.operands) return bad("an operand out of range");
  }
  operands = calloc(h.operands + 1, sizeof *operands);
  if (!operands) return bad("out of memory");
  for (uint32_t k = 0; k < h.operands; ++k, at += sizeof(AtomxFactsOperand)) {
    AtomxFactsOperand r;
    memcpy(&r, at, sizeof r);
    operands[k] = (AtomxOperandFacts){.kind = r.kind, .regKind = r.regKind, .type = r.type, .access = r.access,
                                      .reg = r.reg, .memIndex = r.memIndex, .regBits = r.regBits, .bits = r.bits,
                                      .elementBits = r.elementBits, .elements = r.elements, .base = r.base,
                                      .index = r.index, .scale = r.scale, .segment = r.segment, .size = r.size,
                                      .memAccess = r.memAccess, .ripRelative = r.ripRelative,
                                      .disp = (int64_t)((uint64_t)r.dispHigh << 32 | r.dispLow)};
  }
  /* A %rip-relative operand's target: the next instruction's address plus the displacement. */
  for (uint32_t k = 0; k < h.insts; ++k)
    for (uint32_t o = insts[k].firstOperand; o < insts[k].firstOperand + insts[k].operandCount; ++o)
      if (operands[o].ripRelative) operands[o].target = insts[k].pc + insts[k].size + (uint64_t)operands[o].disp;
  programFile = STRING(h.program);
#undef STRING
  procCount = h.procs, blockCount = h.blocks, instCount = h.insts, operandCount = h.operands;
}

long AtomxProcCount(void) { return procCount; }
long AtomxBlockCount(void) { return blockCount; }
long AtomxInstCount(void) { return instCount; }
long AtomxOperandCount(void) { return operandCount; }
const AtomxProcFacts *AtomxProc(long id) { return id >= 0 && id < procCount ? &procs[id] : NULL; }
const AtomxBlockFacts *AtomxBlock(long id) { return id >= 0 && id < blockCount ? &blocks[id] : NULL; }
const AtomxInstFacts *AtomxInst(long id) { return id >= 0 && id < instCount ? &insts[id] : NULL; }
const AtomxOperandFacts *AtomxOperand(long id) { return id >= 0 && id < operandCount ? &operands[id] : NULL; }
const char *AtomxProgramFile(void) { return programFile; }
