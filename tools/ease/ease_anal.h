// ease, analysis side: the static facts the instrumentation hands over at
// program start (ease_inst.cpp builds them), shared by the analysis files.
#pragma once

#include <cstdio>

namespace ease {

// Arrays are atomx's constant copies in the program (they live as long as it).
struct Static {
  long nBlocks = 0, nKeys = 0, nProcs = 0, nBranches = 0, top = 12;
  const long* blockPc = nullptr;  // start and end of each block
  const int *blockProc = nullptr, *tallyStart = nullptr, *tallyKey = nullptr, *tallyCount = nullptr;
  const int *keyName = nullptr, *procName = nullptr;  // offsets into names: "table\tkey", procedure names
  const char* names = nullptr;
  const char* program = "";
  // Per block, records [lineStart[b], lineStart[b+1]) of lineRec, five ints
  // each: source line id, then Ir, Dr, Dw, Bc of one execution; line id k is
  // (file name offset, line) = lineInfo[2k], lineInfo[2k+1].
  const int *lineStart = nullptr, *lineRec = nullptr, *lineInfo = nullptr;
  // Conditional branches: pc, block, condition name offset, taken counter (-1: none).
  const long* branchPc = nullptr;
  const int *branchBlock = nullptr, *branchCond = nullptr, *branchTaken = nullptr;
};
extern Static in;

// ease.cg: Ir, Dr, Dw, Bc per source file, function and line, in
// cachegrind's format (cg_annotate reads it).
void writeCachegrind(FILE* out, const long* blockCounts);

}  // namespace ease
