// dyninst: dynamic instruction counts per procedure, basic block and
// instruction class (ATOM's "dyninst" tool).  Cheap by design: exact block
// counts from the fewest inline counters (atomx::Counters::count, no call);
// what a block holds (its
// instruction count, its classes and mnemonics) is tallied here, once, and
// handed to the analysis side as constant arrays at program start.  The
// counts are exact because atomx ends a block at every control transfer,
// calls included: once a block starts, all of its instructions run (unless
// one of them faults, see README.md).  A rep-prefixed string instruction
// counts once per execution, however many iterations it makes.
// Options: --top N (rows of the procedure table in dyninst.out, default 10).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace atomx;

namespace {
// Names appended to one blob of NUL-terminated strings, by offset.
struct Names {
  std::vector<char> blob;
  int add(std::string_view s) {
    const int at = int(blob.size());
    blob.insert(blob.end(), s.begin(), s.end());
    blob.push_back('\0');
    return at;
  }
};

// Interns keys (class or mnemonic names) as small integers.
struct Keys {
  std::map<std::string, int> ids;
  std::vector<std::string> order;
  int id(const std::string& k) {
    auto [it, fresh] = ids.emplace(k, int(order.size()));
    if (fresh) order.push_back(k);
    return it->second;
  }
};
}  // namespace

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
  Routine init("DynInit(long, long[], int[], int[], long, int[], char[], int[], int[], int[], long, long, int[], long, const char*)");
  Counters blockCount;
  Routine fini("DynFini(long*)");

  Keys classes, mnemonics;
  std::vector<long> blockPc;  // start and end of each block
  std::vector<int> blockProc, blockInsts, procName;
  std::vector<int> tallyStart{0}, tallyKey, tallyCount;
  Names names;
  for (Proc p : program().procs()) {
    const int proc = int(procName.size());
    procName.push_back(names.add(p.name()));
    for (Block b : p.blocks()) {
      std::map<int, int> c, m;
      int n = 0;
      for (Inst i : b.insts()) ++n, ++c[classes.id(i.category())], ++m[mnemonics.id(i.mnemonic())];
      blockCount.count(b, blockInsts.size());
      blockPc.push_back(long(b.pc())), blockPc.push_back(long(b.endPc()));
      blockProc.push_back(proc);
      blockInsts.push_back(n);
      // Classes and mnemonics share one tally list per block, (key, count):
      // class k as k, mnemonic k as -1 - k.
      for (auto [k, v] : c) tallyKey.push_back(k), tallyCount.push_back(v);
      for (auto [k, v] : m) tallyKey.push_back(-1 - k), tallyCount.push_back(v);
      tallyStart.push_back(int(tallyKey.size()));
    }
  }
  const long nBlocks = long(blockInsts.size());
  std::vector<int> keyName;  // classes, then mnemonics
  for (const std::string& k : classes.order) keyName.push_back(names.add(k));
  for (const std::string& k : mnemonics.order) keyName.push_back(names.add(k));
  if (blockPc.empty()) blockPc = {0, 0}, blockProc.push_back(0), blockInsts.push_back(0);
  if (procName.empty()) procName.push_back(names.add(""));
  if (tallyKey.empty()) tallyKey.push_back(0), tallyCount.push_back(0);
  if (keyName.empty()) keyName.push_back(names.add(""));
  init.atProgramStart(nBlocks, blockPc, blockProc, blockInsts, long(procName.size()), procName, names.blob,
                      tallyStart, tallyKey, tallyCount, long(classes.order.size()), long(mnemonics.order.size()),
                      keyName, top, std::string(program().path()));
  fini.atProgramEnd(blockCount);
}
