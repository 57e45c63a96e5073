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
//   - every instruction with a memory operand (rep-prefixed string and
//     %gs-relative ones aside): conditional increments (incrementIf) when
//     the first operand's address is not 8-aligned and when the access
//     crosses a 64-byte line == what a call with effectiveAddress(0)
//     computes from the same address;
//   - every block ending in a conditional branch, direct jump or plain
//     fall-through within its procedure: the sum of its out-edges == its
//     count (same caveat);
//   - every block and every edge: its exact count from the fewest counters
//     (Counters::count, derived at exit) == its own increment's; for
//     jump-table edges of one procedure that reach the same block (whose
//     increments all count every table jump there, at the target's stub):
//     their exact counts' sum == each one's increment, unless one is -1
//     (no counter sees it alone).
// With ATOMX_COUNTERS_STRICT=1 in the environment of the instrumentation,
// any difference is also a line on the program's stderr, so that a
// comparison of the outputs (corpus/check.sh) fails on it.
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  std::vector<long> instBlock, edgeBlock, blockChecked, blockPc, edgeGroup;
  long nBlocks = 0, nEdges = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      nBlocks++;
      for (Inst i : b.insts()) (void)i, instBlock.push_back(0);
      for (Edge e : b.succs()) (void)e, ++nEdges;
    }
  const Counters blocks{size_t(nBlocks)}, insts{instBlock.size() + 1}, edges{size_t(nEdges) + 1};
  const Counters odd, crossing;  // conditional: per memory instruction
  const Counters exactBlocks{size_t(nBlocks)}, exactEdges{size_t(nEdges) + 1};  // Counters::count
  Routine start("CountersStart(long*, long, long*, long*, long)");
  Routine count("CountBlock(long)");
  Routine address("CheckAddress(long, VALUE, long)");
  Routine check(
      "CountersCheck(long*, long*, long*, long, long[], long, long[], long[], long[], long, long*, long*, long*, long*, long[])");
  const char* strict = std::getenv("ATOMX_COUNTERS_STRICT");
  long bi = 0, ii = 0, ei = 0, mi = 0;
  for (Proc p : program().procs()) {
    // Jump-table edges of p by target: the first one's index names the group.
    std::map<uint64_t, long> firstTableEdge;
    long pe = ei;
    for (Block b : p.blocks())
      for (Edge e : b.succs()) {
        if (e.kind() == EdgeKind::JumpTable && !firstTableEdge.count(e.to().pc())) firstTableEdge[e.to().pc()] = pe;
        ++pe;
      }
    std::map<uint64_t, int> tableEdgesTo;
    for (Block b : p.blocks())
      for (Edge e : b.succs()) tableEdgesTo[e.to().pc()] += e.kind() == EdgeKind::JumpTable;
    for (Block b : p.blocks()) {
      blocks.increment(b, size_t(bi));
      exactBlocks.count(b, size_t(bi));
      count.before(b, bi);
      for (Inst i : b.insts()) {
        insts.increment(i, size_t(ii));
        instBlock[size_t(ii++)] = bi;
        const std::string text = i.text();
        if (!i.memOperandCount() || text.rfind("rep", 0) == 0 || text.find("%gs:") != std::string::npos) continue;
        const unsigned size = i.accessSize(0);
        if (size == 0 || size > 64) continue;
        odd.incrementIf(i, misaligned(0, 8), size_t(mi));
        crossing.incrementIf(i, crossesLine(0, size, 64), size_t(mi));
        address.before(i, mi++, effectiveAddress(0), long(size));
      }
      // Control leaves such a block only along its edges (a branch to
      // another procedure, a `.cold` part say, has no edge).
      const Inst last = b.last();
      const bool inside = !last.hasTarget() || (last.target() >= p.pc() && last.target() < p.endPc());
      const InstClass k = last.kind();
      const bool conserved = inside && (k == InstClass::CondBranch || k == InstClass::Jump || k == InstClass::Other);
      for (Edge e : b.succs()) {
        exactEdges.count(e, size_t(ei));
        const bool shared = e.kind() == EdgeKind::JumpTable && tableEdgesTo[e.to().pc()] > 1;
        edgeGroup.push_back(shared ? firstTableEdge[e.to().pc()] : -1);
        edges.increment(e, size_t(ei++));
        edgeBlock.push_back(bi);
      }
      blockChecked.push_back(conserved && !b.succs().empty());
      blockPc.push_back(long(b.pc()));
      ++bi;
    }
  }
  if (edgeBlock.empty()) edgeBlock.push_back(-1), edgeGroup.push_back(-1);
  if (blockChecked.empty()) blockChecked.push_back(0), instBlock.push_back(0), blockPc.push_back(0);
  start.atProgramStart(blocks, nBlocks, odd, crossing, mi);
  check.atProgramEnd(blocks, insts, edges, long(instBlock.size()), instBlock, long(ei), edgeBlock, blockChecked, blockPc,
                     long(strict && std::strcmp(strict, "1") == 0), odd, crossing, exactBlocks, exactEdges,
                     edgeGroup);
}
