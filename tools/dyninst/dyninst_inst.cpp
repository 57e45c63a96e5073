// dyninst: dynamic instruction counts per procedure, basic block and
// instruction class (ATOM's "dyninst" tool).  Cheap by design: exact block
// counts from the fewest inline counters (atomx::Counters::count, no call);
// what a block holds (its instructions, their classes and mnemonics) the
// analysis side looks up in the facts atomx embeds (atomx::embedFacts).  The
// counts are exact because atomx ends a block at every control transfer,
// calls included: once a block starts, all of its instructions run (unless
// one of them faults, see README.md).  A rep-prefixed string instruction
// counts once per execution, however many iterations it makes.
// Options: --top N (rows of the procedure table in dyninst.out, default 10).
#include <atomx/atomx.hpp>

#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long top = 10;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") {
      top = optionNumber("dyninst", a, k + 1 < argc ? argv[++k] : nullptr);
    } else {
      throw Error("dyninst: unknown option '" + a + "' (options: --top N)");
    }
  }
  embedFacts();  // what each block holds: the analysis side reads it (<atomx/facts.h>)
  Counters blockCount;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) blockCount.count(b, b.id());
  Routine("DynFini(long*, long)").atProgramEnd(blockCount, top);
}
