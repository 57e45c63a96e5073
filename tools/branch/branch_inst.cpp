// The ATOM paper's branch-counting tool (its Figures 2 and 3) in atomx's
// typed C++ API, extended: for every conditional branch, how often it was
// taken and not taken (btaken.out, the paper's format, unchanged), and how
// often a 2-bit saturating-counter predictor mispredicted it (branch.out,
// branch.json).  No call on the hot path: on the edge control takes, an
// inline increment of the outcome's counter and an inline update of the
// branch's predictor (Counters::increment, Counters::predict; four
// counters a branch: taken, not taken, mispredicted, the predictor's
// state).  A branch whose edges are not both in its procedure (to a `.cold`
// part, say) calls CondBranch with branchCondition() from before it
// instead.  Everything static (addresses, procedure names) goes to the
// analysis side once, as constant arrays, at program start.  Options:
// --top N (rows of the tables in branch.out, default 10).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

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
  Routine init("BranchInit(long, long[], int[], char[], long, const char*, long*)");
  Routine condBranch("CondBranch(long, VALUE)");
  Routine fini("BranchFini()");
  Counters counts;  // per branch k: 4k taken, 4k+1 not taken, 4k+2 mispredicted, 4k+3 state

  std::vector<long> pcs;
  std::vector<int> procName;  // offset of the branch's procedure name in `names`
  std::vector<char> names;    // NUL-terminated procedure names, one after the other
  for (Proc p : program().procs()) {
    const int offset = int(names.size());
    names.insert(names.end(), p.name().begin(), p.name().end());
    names.push_back('\0');
    for (Block b : p.blocks())
      if (Inst i = b.last(); i.isCondBranch()) {
        const long id = long(pcs.size());
        Edge taken, fallThrough;
        for (Edge e : b.succs()) (e.kind() == EdgeKind::Taken ? taken : fallThrough) = e;
        if (taken.handle() && fallThrough.handle()) {
          counts.increment(taken, size_t(4 * id));
          counts.predict(taken, size_t(4 * id + 3), size_t(4 * id + 2), true);
          counts.increment(fallThrough, size_t(4 * id + 1));
          counts.predict(fallThrough, size_t(4 * id + 3), size_t(4 * id + 2), false);
        } else {
          condBranch.before(i, id, branchCondition());
        }
        pcs.push_back(long(i.pc()));
        procName.push_back(offset);
      }
  }
  const long n = long(pcs.size());
  counts.reserve(size_t(4 * n + 4));
  // Constant arrays are never empty (n says how many entries count).
  if (pcs.empty()) pcs.push_back(0), procName.push_back(0);
  if (names.empty()) names.push_back('\0');
  init.atProgramStart(n, pcs, procName, names, top, std::string(program().path()), counts);
  fini.atProgramEnd();
}
