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
static long procCount, blockCount, instCount;
static const char *programFile = "";

static void bad(const char *why) {
  fprintf(stderr, "atomx: the embedded program facts are unusable (%s)\n", why);
  procCount = blockCount = instCount = 0;
}

void atomx_facts_init(const char *blob, long size) {
  if (procs || blocks || insts) return; /* once (a forked child has them already) */
  AtomxFactsHeader h;
  if (size < (long)sizeof h) return bad("too short");
  memcpy(&h, blob, sizeof h);
  if (h.magic != ATOMX_FACTS_MAGIC || h.version != ATOMX_FACTS_VERSION) return bad("not this version's");
  const size_t records = sizeof h + h.procs * sizeof(AtomxFactsProc) + h.blocks * sizeof(AtomxFactsBlock) +
                         h.insts * sizeof(AtomxFactsInst);
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
    insts[k] = (AtomxInstFacts){r.pc,          r.block,           r.size,           r.kind,
                                r.memOperands, r.access,          r.accessSize,     r.regsRead,
                                r.regsWritten, STRING(r.mnemonic), STRING(r.category), STRING(r.file),
                                r.line};
  }
  programFile = STRING(h.program);
#undef STRING
  procCount = h.procs, blockCount = h.blocks, instCount = h.insts;
}

long AtomxProcCount(void) { return procCount; }
long AtomxBlockCount(void) { return blockCount; }
long AtomxInstCount(void) { return instCount; }
const AtomxProcFacts *AtomxProc(long id) { return id >= 0 && id < procCount ? &procs[id] : NULL; }
const AtomxBlockFacts *AtomxBlock(long id) { return id >= 0 && id < blockCount ? &blocks[id] : NULL; }
const AtomxInstFacts *AtomxInst(long id) { return id >= 0 && id < instCount ? &insts[id] : NULL; }
const char *AtomxProgramFile(void) { return programFile; }
