/* The analysis side of the counters check (counters_inst.cpp). */
#include <atomx/analysis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic long *calls, *oddCalls, *crossingCalls;
static long *early, *oddEarly, *crossingEarly; /* inline counts at ProgramBefore */
static long nCalls, nMem;

static long* copy(const long* a, long n) {
  long* c = malloc(((size_t)n + 1) * sizeof *c);
  for (long k = 0; k < n; ++k) c[k] = a[k];
  return c;
}

void CountersStart(long* blocks, long n, long* odd, long* crossing, long m) {
  nCalls = n, nMem = m;
  calls = calloc((size_t)n + 1, sizeof *calls);
  oddCalls = calloc((size_t)m + 1, sizeof *oddCalls);
  crossingCalls = calloc((size_t)m + 1, sizeof *crossingCalls);
  early = copy(blocks, n), oddEarly = copy(odd, m), crossingEarly = copy(crossing, m);
}

void CountBlock(long b) { atomic_fetch_add_explicit(&calls[b], 1, memory_order_relaxed); }

void CheckAddress(long k, unsigned long ea, long size) {
  if (ea & 7) atomic_fetch_add_explicit(&oddCalls[k], 1, memory_order_relaxed);
  if ((long)(ea & 63) > 64 - size) atomic_fetch_add_explicit(&crossingCalls[k], 1, memory_order_relaxed);
}

void CountersCheck(long* blocks, long* insts, long* edges, long nInsts, long* instBlock, long nEdges, long* edgeBlock,
                   long* checked, long* blockPc, long strict, long* odd, long* crossing, long* exactBlocks,
                   long* exactEdges, long* edgeGroup) {
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
  long addressDiff = 0, oddTotal = 0, crossingTotal = 0;
  for (long k = 0; k < nMem; ++k) {
    oddTotal += odd[k], crossingTotal += crossing[k];
    if ((odd[k] - oddEarly[k] != oddCalls[k] || crossing[k] - crossingEarly[k] != crossingCalls[k]) && addressDiff++ < 10)
      fprintf(f, "memory instruction %ld: inline misaligned %ld crossing %ld, call %ld %ld\n", k, odd[k], crossing[k],
              (long)oddCalls[k], (long)crossingCalls[k]);
  }
  long* out = calloc((size_t)nBlocks + 1, sizeof *out);
  for (long e = 0; e < nEdges; ++e) out[edgeBlock[e]] += edges[e];
  for (long b = 0; b < nBlocks; ++b)
    if (checked[b] && out[b] != blocks[b] && edgeDiff++ < 10)
      fprintf(f, "edges out of block %#lx: %ld, block: %ld\n", blockPc[b], out[b], blocks[b]);
  /* Counters::count: every block's and edge's exact count == its increment's. */
  long exactDiff = 0, unknownEdges = 0;
  for (long b = 0; b < nBlocks; ++b)
    if (exactBlocks[b] != blocks[b] && exactDiff++ < 10)
      fprintf(f, "block %#lx: exact count %ld, increment %ld\n", blockPc[b], exactBlocks[b], blocks[b]);
  for (long e = 0; e < nEdges; ++e) {
    long exact = exactEdges[e];
    if (edgeGroup[e] >= 0) /* the increment counts every table edge of the group */
      for (long g = edgeGroup[e], o = g; o < nEdges && exact >= 0; ++o)
        if (o != e && edgeGroup[o] == g) exact = exactEdges[o] < 0 ? -1 : exact + exactEdges[o];
    if (exact == -1) {
      ++unknownEdges;
      continue;
    }
    if (exact != edges[e] && exactDiff++ < 10)
      fprintf(f, "edge %ld out of block %#lx: exact count %ld, increment %ld\n", e, blockPc[edgeBlock[e]], exact, edges[e]);
  }
  long increments = 0, counted = 0;
  AtomxCountCost(&increments, &counted);
  fprintf(f, "exact counts: %ld differences, %ld edges not known; %ld increments for %ld blocks (%.3f per block)\n",
          exactDiff, unknownEdges, increments, counted, counted ? (double)increments / (double)counted : 0.0);
  fprintf(f, "blocks %ld executed %ld instructions %ld\n", nBlocks, executed, instExec);
  fprintf(f, "memory instructions %ld misaligned %ld crossing %ld differences %ld\n", nMem, oddTotal, crossingTotal,
          addressDiff);
  fprintf(f, "blocks counted before start %ld\n", before);
  fprintf(f, "differences: blocks %ld instructions %ld edges %ld\n", blockDiff, instDiff, edgeDiff);
  fclose(f);
  if (strict && (blockDiff || instDiff || edgeDiff || addressDiff || exactDiff || executed == 0))
    fprintf(stderr,
            "counters: differences: blocks %ld instructions %ld edges %ld addresses %ld exact counts %ld (%ld blocks "
            "executed)\n",
            blockDiff, instDiff, edgeDiff, addressDiff, exactDiff, executed);
}
