// Counters kept in registers through loops (analysis/CounterPromotion.h),
// checked against plain increments: every block counted exactly
// (Counters::count, whose chords in loops go in registers) and incremented
// (a counter of its own), and every conditional branch's edges predicted
// (Counters::predict: inline code that takes a dead register for its
// state, which must never be a promoted counter's).  promote_anal.c
// compares the two counts of every block (promote.out).
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Counters exact, each, predictions;
  size_t branches = 0, blocks = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      exact.count(b, b.id());
      each.increment(b, b.id());
      blocks = b.id() + 1;
      if (!b.last().isCondBranch()) continue;
      for (Edge e : b.succs())
        predictions.predict(e, 2 * branches, 2 * branches + 1, e.kind() == EdgeKind::Taken);
      ++branches;
    }
  predictions.reserve(2 * branches + 2);
  Routine("PromoteCheck(long*, long*, long)").atProgramEnd(exact, each, long(blocks));
}
