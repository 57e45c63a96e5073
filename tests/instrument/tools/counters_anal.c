/* The analysis side of the counters check (counters_inst.cpp). */
#include <atomx/analysis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic long* calls;
static long* early; /* inline counts at ProgramBefore */
static long nCalls;

void CountersStart(long* blocks, long n) {
  nCalls = n;
  calls = calloc((size_t)n + 1, sizeof *calls);
  early = malloc(((size_t)n + 1) * sizeof *early);
  for (long b = 0; b < n; ++b) early[b] = blocks[b];
}

void CountBlock(long b) { atomic_fetch_add_explicit(&calls[b], 1, memory_order_relaxed); }

void CountersCheck(long* blocks, long* insts, long* edges, long nInsts, long* instBlock, long nEdges, long* edgeBlock,
                   long* checked, long* blockPc) {
  FILE* f = fopen(AtomxOutputPath("counters.out"), "w");
  long nBlocks = 0, executed = 0, blockDiff = 0, instDiff = 0, edgeDiff = 0, instExec = 0, before = 0;
  for (long i = 0; i < nInsts; ++i)
    if (instBlock[i] + 1 > nBlocks) nBlocks = instBlock[i] + 1;
  for (long b = 0; b < nBlocks; ++b) {
    const long c = calls[b];
    executed += blocks[b];
    before += early[b] > 0;
    if (blocks[b] - early[b] != c && blockDiff++ < 10)
      fprintf(f, "block %#lx: inline %ld (%ld before start), call %ld\n", blockPc[b], blocks[b], early[b], c);
  }
  for (long i = 0; i < nInsts; ++i) {
    instExec += insts[i];
    if (insts[i] != blocks[instBlock[i]] && instDiff++ < 10)
      fprintf(f, "instruction %ld: %ld, its block %#lx: %ld\n", i, insts[i], blockPc[instBlock[i]], blocks[instBlock[i]]);
  }
  long* out = calloc((size_t)nBlocks + 1, sizeof *out);
  for (long e = 0; e < nEdges; ++e) out[edgeBlock[e]] += edges[e];
  for (long b = 0; b < nBlocks; ++b)
    if (checked[b] && out[b] != blocks[b] && edgeDiff++ < 10)
      fprintf(f, "edges out of block %#lx: %ld, block: %ld\n", blockPc[b], out[b], blocks[b]);
  fprintf(f, "blocks %ld executed %ld instructions %ld\n", nBlocks, executed, instExec);
  fprintf(f, "blocks counted before start %ld\n", before);
  fprintf(f, "differences: blocks %ld instructions %ld edges %ld\n", blockDiff, instDiff, edgeDiff);
  fclose(f);
}
