// The facts atomx embeds (atomx::embedFacts, <atomx/facts.h>): nothing is
// passed to the analysis side but the exact block counts, by Block::id();
// facts_anal.c writes facts.out from the embedded facts alone, for
// itest.py's t_facts to compare with objdump, the DWARF line table and a
// counter per block.
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  embedFacts();
  Counters exact, each;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      exact.count(b, b.id());
      each.increment(b, b.id());
    }
  Routine("FactsDump(long*, long*)").atProgramEnd(exact, each);
}
