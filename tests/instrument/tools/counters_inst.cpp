// The counters check: inline counters (atomx::Counters) before every
// instruction and on every CFG edge, and beside them a call per block that
// counts the same blocks in the analysis object (the call path, checked on
// its own by the other tests).  Increments before every instruction land
// between flag setters and their readers (cmp; jcc), so the flag-keeping
// code runs too; the program's output must not change.  At program end
// CountersCheck compares (counters.out):
//   - every block: inline count == call count, less what it counted before
//     ProgramBefore (code ld.so runs before the entry point: IFUNC
//     resolvers, .preinit_array; calls are skipped there);
//   - every instruction: its count == its block's (unless the program
//     leaves a block in the middle: a fault, siglongjmp);
//   - every block ending in a conditional branch, direct jump or plain
//     fall-through within its procedure: the sum of its out-edges == its
//     count (same caveat).
#include <atomx/atomx.hpp>

#include <vector>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  std::vector<long> instBlock, edgeBlock, blockChecked, blockPc;
  long nBlocks = 0, nEdges = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      nBlocks++;
      for (Inst i : b.insts()) (void)i, instBlock.push_back(0);
      for (Edge e : b.succs()) (void)e, ++nEdges;
    }
  const Counters blocks{size_t(nBlocks)}, insts{instBlock.size() + 1}, edges{size_t(nEdges) + 1};
  Routine start("CountersStart(long*, long)");
  Routine count("CountBlock(long)");
  Routine check("CountersCheck(long*, long*, long*, long, long[], long, long[], long[], long[])");
  long bi = 0, ii = 0, ei = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      blocks.increment(b, size_t(bi));
      count.before(b, bi);
      for (Inst i : b.insts()) {
        insts.increment(i, size_t(ii));
        instBlock[size_t(ii++)] = bi;
      }
      // Control leaves such a block only along its edges (a branch to
      // another procedure, a `.cold` part say, has no edge).
      const Inst last = b.last();
      const bool inside = !last.hasTarget() || (last.target() >= p.pc() && last.target() < p.endPc());
      const InstClass k = last.kind();
      const bool conserved = inside && (k == InstClass::CondBranch || k == InstClass::Jump || k == InstClass::Other);
      for (Edge e : b.succs()) {
        edges.increment(e, size_t(ei++));
        edgeBlock.push_back(bi);
      }
      blockChecked.push_back(conserved && !b.succs().empty());
      blockPc.push_back(long(b.pc()));
      ++bi;
    }
  if (edgeBlock.empty()) edgeBlock.push_back(-1);
  if (blockChecked.empty()) blockChecked.push_back(0), instBlock.push_back(0), blockPc.push_back(0);
  start.atProgramStart(blocks, nBlocks);
  check.atProgramEnd(blocks, insts, edges, long(instBlock.size()), instBlock, long(ei), edgeBlock, blockChecked, blockPc);
}
