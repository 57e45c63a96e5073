// ease: the eleven architecture reports of Davidson and Whalley's ease
// (instruction path length and size, instruction types, addressing modes,
// memory reference sizes and modes, register and condition code usage,
// conditional branches taken, instructions between branches, data types),
// measured on x86-64.  Every report is a static fact of an instruction
// weighted by how often it ran, so the program only counts: how often each
// block ran and each conditional branch was taken, exact at program end
// from the fewest counters (atomx::Counters::count: a spanning tree's
// chords, the rest derived), no call.  What was counted -- procedures,
// blocks, instructions and the semantics module's facts of each -- atomx
// embeds itself (embedFacts); ease_anal.cpp turns counts and facts into
// the reports.
// Options: --top N (rows of each table in ease.out, default 12); --naive
// (each executed instruction described apart, not once per shape: the same
// reports, slower; the check of the shapes); --static (ease's static
// measurements: every instruction of the program counted once, written
// when the program starts, which then exits before any of its own code
// runs).
#include <atomx/atomx.hpp>

#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long top = 12, naive = 0;
  bool staticOnly = false;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") top = optionNumber("ease", a, k + 1 < argc ? argv[++k] : nullptr);
    else if (a == "--naive") naive = 1;
    else if (a == "--static") staticOnly = true;
    else throw Error("ease: unknown option '" + a + "' (options: --top N, --naive, --static)");
  }
  embedFacts(FactsDetail::Operands);
  if (staticOnly) {  // nothing is counted: the facts alone
    Routine("EaseStatic(long)").atProgramStart(top);
    return;
  }
  // Both by Block::id(): a block's runs, and, for a block that ends in a
  // conditional branch with a taken edge (a target in its procedure), how
  // often that edge was taken.
  Counters blocks, taken;
  size_t nBlocks = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      blocks.count(b, b.id());
      nBlocks = b.id() + 1;
      if (b.last().isCondBranch())
        for (Edge e : b.succs())
          if (e.kind() == EdgeKind::Taken) {
            taken.count(e, b.id());
            break;
          }
    }
  taken.reserve(nBlocks);  // one per block: ease_anal.cpp reads it by block
  Routine("EaseFini(long, long, long*, long*)").atProgramEnd(top, naive, blocks, taken);
}
