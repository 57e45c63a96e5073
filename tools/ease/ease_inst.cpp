// ease: the eleven architecture reports of Davidson and Whalley's ease
// (instruction path length and size, instruction types, addressing modes,
// memory reference sizes and modes, register and condition code usage,
// conditional branches taken, instructions between branches, data types),
// measured on x86-64.  Every report is a static fact of an instruction
// (ease_facts.h) weighted by how often it ran, so the program only counts:
// an inline counter per basic block and one per conditional branch's taken
// edge (atomx::Counters), no call.  The static tallies go to the analysis
// side (ease_anal.cpp) as constant arrays at program start.
// Options: --top N (rows of each table in ease.out, default 12).
#include <atomx/atomx.hpp>

#include "ease_facts.h"

#include <array>
#include <map>
#include <string>
#include <vector>

using namespace atomx;

namespace {
// Strings appended to one blob, NUL-terminated, by offset; each one once.
struct Names {
  std::vector<char> blob;
  std::map<std::string, int> at;
  int add(const std::string& s) {
    auto [it, fresh] = at.emplace(s, int(blob.size()));
    if (fresh) appendString(blob, s);
    return it->second;
  }
};

// Interns keys as small integers, in first-seen order.
template <class K>
struct Ids {
  std::map<K, int> ids;
  std::vector<K> order;
  int id(const K& k) {
    auto [it, fresh] = ids.emplace(k, int(order.size()));
    if (fresh) order.push_back(k);
    return it->second;
  }
};

// The counts the reports need: how often each block ran and how often each
// conditional branch was taken, in counter k, exact at program end from the
// fewest counters (Counters::count: a spanning tree's chords, the rest
// derived; no counter of its own for a taken edge).
struct Counts {
  Counters blocks, taken;
  void block(Block b, size_t k) const { blocks.count(b, k); }
  void edge(Edge e, size_t k) const { taken.count(e, k); }
};

template <class T>
std::vector<T> nonEmpty(std::vector<T> v) {  // atomx passes no empty arrays
  if (v.empty()) v.push_back(T());
  return v;
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  long top = 12;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") top = optionNumber("ease", a, k + 1 < argc ? argv[++k] : nullptr);
    else throw Error("ease: unknown option '" + a + "' (options: --top N)");
  }
  Routine init("EaseInit(long, long[], int[], int[], int[], int[], long, int[], long, int[], char[], const char*, long)");
  Routine lines("EaseLines(int[], int[], int[])");
  Routine branches("EaseBranches(long, long[], int[], int[], int[])");
  Routine fini("EaseFini(long*, long*)");
  Counts counts;

  Names names;
  Ids<std::string> keys;                      // "table\tkey"
  Ids<std::pair<int, unsigned>> sourceLines;  // (file name, line)
  std::vector<long> blockPc;                  // start and end of each block
  std::vector<int> blockProc, procName, tallyStart{0}, tallyKey, tallyCount;
  std::vector<int> lineStart{0}, lineRec;     // per block: (line, Ir, Dr, Dw, Bc) records
  std::vector<long> branchPc;
  std::vector<int> branchBlock, branchCond, branchTaken;  // taken: its counter, or -1
  int nTaken = 0;
  for (Proc p : program().procs()) {
    const int proc = int(procName.size());
    procName.push_back(names.add(std::string(p.name())));
    for (Block b : p.blocks()) {
      const int block = int(blockProc.size());
      counts.block(b, size_t(block));
      blockPc.push_back(long(b.pc())), blockPc.push_back(long(b.endPc()));
      blockProc.push_back(proc);
      std::map<int, int> tally;
      std::map<int, std::array<int, 4>> perLine;  // line -> Ir, Dr, Dw, Bc
      for (Inst i : b.insts()) {
        const Inst::SourceLine sl = i.sourceLine();
        std::array<int, 4>& cost = perLine[sourceLines.id({names.add(sl.file.empty() ? "???" : sl.file), sl.line})];
        for (const ease::Fact& f : ease::describe(i)) {
          tally[keys.id(f.table + "\t" + f.key)] += f.weight;
          if (f.table != ease::kTotal) continue;
          if (f.key == "instructions") ++cost[0];
          if (f.key == "Dr") ++cost[1];
          if (f.key == "Dw") ++cost[2];
          if (f.key == "Bc") ++cost[3];
        }
      }
      for (auto [k, n] : tally) tallyKey.push_back(k), tallyCount.push_back(n);
      tallyStart.push_back(int(tallyKey.size()));
      for (auto& [line, cost] : perLine) lineRec.insert(lineRec.end(), {line, cost[0], cost[1], cost[2], cost[3]});
      lineStart.push_back(int(lineRec.size() / 5));
      const Inst last = b.last();
      if (!last.isCondBranch()) continue;
      branchPc.push_back(long(last.pc()));
      branchBlock.push_back(block);
      branchCond.push_back(names.add(ease::branchCondition(last)));
      int taken = -1;  // no taken edge (a branch to another procedure): not counted
      for (Edge e : b.succs())
        if (e.kind() == EdgeKind::Taken && taken < 0) taken = nTaken++, counts.edge(e, size_t(taken));
      branchTaken.push_back(taken);
    }
  }
  const long nBlocks = long(blockProc.size());
  std::vector<int> keyName;
  for (const std::string& k : keys.order) keyName.push_back(names.add(k));
  std::vector<int> lineInfo;
  for (auto [file, line] : sourceLines.order) lineInfo.push_back(file), lineInfo.push_back(int(line));
  init.atProgramStart(nBlocks, nonEmpty(blockPc), nonEmpty(blockProc), tallyStart, nonEmpty(tallyKey),
                      nonEmpty(tallyCount), long(keys.order.size()), nonEmpty(keyName), long(procName.size()),
                      nonEmpty(procName), nonEmpty(names.blob), std::string(program().path()), top);
  lines.atProgramStart(lineStart, nonEmpty(lineRec), nonEmpty(lineInfo));
  branches.atProgramStart(long(branchPc.size()), nonEmpty(branchPc), nonEmpty(branchBlock), nonEmpty(branchCond),
                          nonEmpty(branchTaken));
  fini.atProgramEnd(counts.blocks, counts.taken);
}
