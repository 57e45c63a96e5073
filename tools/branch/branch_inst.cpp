// The ATOM paper's branch-counting tool (its Figures 2 and 3) in atomx's
// typed C++ API, extended: for every conditional branch, how often it was
// taken and not taken (btaken.out, the paper's format, unchanged), and how
// often a 2-bit saturating-counter predictor mispredicted it (branch.out,
// branch.json).  No call on the hot path: on the edge control takes, an
// inline update of the branch's predictor (Counters::predict; in a
// register through a loop that calls nothing), and the taken and not-taken
// counts from atomx's fewest increments (Counters::count); four counters a
// branch: taken, not taken, mispredicted, the predictor's state.  A branch
// whose edges are not both in its procedure (to a `.cold` part, say) calls
// CondBranch with branchCondition() from before it instead (and then the
// end cannot be deferred: the analysis runs during the run).  What a branch
// is (its address, its procedure) the analysis side looks up in the facts
// atomx embeds (embedFacts, <atomx/facts.h>): the k-th block there that
// ends in a conditional branch ends in branch k here.  Options: --top N
// (rows of the tables in branch.out, default 10).
#include <atomx/atomx.hpp>

#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long top = 10;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") {
      top = optionNumber("branch", a, k + 1 < argc ? argv[++k] : nullptr);
    } else {
      throw Error("branch: unknown option '" + a + "' (options: --top N)");
    }
  }
  Routine init("BranchInit(long, long, long*)");
  Routine condBranch("CondBranch(long, VALUE)");
  Routine fini("BranchFini()");
  Counters counts;  // per branch k: 4k taken, 4k+1 not taken, 4k+2 mispredicted, 4k+3 state
  embedFacts();
  long n = 0, calls = 0;  // branches, in program order (the facts' order); those that call CondBranch
  for (Proc p : program().procs())
    for (Block b : p.blocks())
      if (Inst i = b.last(); i.isCondBranch()) {
        const size_t k = size_t(n++);
        Edge taken, fallThrough;
        for (Edge e : b.succs()) (e.kind() == EdgeKind::Taken ? taken : fallThrough) = e;
        if (taken.handle() && fallThrough.handle()) {
          counts.count(taken, 4 * k);
          counts.predict(taken, 4 * k + 3, 4 * k + 2, true);
          counts.count(fallThrough, 4 * k + 1);
          counts.predict(fallThrough, 4 * k + 3, 4 * k + 2, false);
        } else {
          condBranch.before(i, long(k), branchCondition());
          ++calls;
        }
      }
  counts.reserve(size_t(4 * n + 4));
  // CondBranch needs BranchInit's state from the start; without a call, the
  // whole of the analysis runs at the end (and --defer-end can defer it).
  if (calls) init.atProgramStart(n, top, counts);
  else init.atProgramEnd(n, top, counts);
  fini.atProgramEnd();
}
