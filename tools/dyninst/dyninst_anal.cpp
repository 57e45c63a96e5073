// Analysis routines of the dyninst tool (dyninst_inst.cpp): the program
// counts each basic block inline (atomx::Counters) and nothing runs here
// until the end, when every figure is computed from those counts and the
// static per-block tallies.
#include <atomx/report.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {
const long* counts;  // per block: atomx's inline counters
long nBlocks, nProcs, nClasses, nMnemonics, topN;
const long* blockPc;  // start, end of each block
const int *blockProc, *blockInsts, *procName, *tallyStart, *tallyKey, *tallyCount, *keyName;
const char* names;
std::string programPath;

struct Totals {
  long insts = 0, blocks = 0, liveBlocks = 0;
  std::vector<long> proc, procBlocks, cls, mnem;
};

Totals total() {
  Totals t;
  t.proc.assign(size_t(nProcs), 0), t.procBlocks.assign(size_t(nProcs), 0);
  t.cls.assign(size_t(nClasses), 0), t.mnem.assign(size_t(nMnemonics), 0);
  for (long b = 0; b < nBlocks; ++b) {
    const long n = counts[b];
    if (!n) continue;
    t.blocks += n, ++t.liveBlocks, t.insts += n * blockInsts[b];
    t.proc[size_t(blockProc[b])] += n * blockInsts[b], t.procBlocks[size_t(blockProc[b])] += n;
    for (int k = tallyStart[b]; k < tallyStart[b + 1]; ++k) {
      const int key = tallyKey[k];
      (key >= 0 ? t.cls[size_t(key)] : t.mnem[size_t(-1 - key)]) += n * tallyCount[k];
    }
  }
  return t;
}

// Indices of the nonzero entries of v, largest first (ties by index), at most `limit`.
std::vector<long> top(const std::vector<long>& v, long limit) {
  std::vector<long> order;
  for (long k = 0; k < long(v.size()); ++k)
    if (v[size_t(k)]) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](long a, long b) { return v[size_t(a)] > v[size_t(b)]; });
  if (long(order.size()) > limit) order.resize(size_t(limit));
  return order;
}

double percent(long a, long b) { return b ? 100.0 * double(a) / double(b) : 0.0; }

void table(FILE* out, const char* title, const std::vector<long>& v, long limit, const int* nameOf, long total) {
  std::fprintf(out, "\n%s\n  %16s %7s %7s  %s\n", title, "instructions", "%", "cum%", "name");
  long cum = 0, shown = 0;
  for (long k : top(v, limit)) {
    cum += v[size_t(k)], ++shown;
    std::fprintf(out, "  %16ld %6.2f%% %6.2f%%  %s\n", v[size_t(k)], percent(v[size_t(k)], total), percent(cum, total),
                 names + nameOf[k]);
  }
  long rest = 0, others = 0;
  for (long x : v) others += x != 0, rest += x;
  if (others > shown) std::fprintf(out, "  %16ld %6.2f%%          (%ld more)\n", rest - cum, percent(rest - cum, total), others - shown);
}

void writeSummary(const Totals& t) {
  FILE* out = atomx::openToolOutput("dyninst.out");
  if (!out) return;
  std::fprintf(out, "dyninst: dynamic instruction counts of %s\n", programPath.c_str());
  std::fprintf(out, "  instructions executed %16ld   (a rep-prefixed instruction counts once)\n", t.insts);
  std::fprintf(out, "  basic blocks executed %16ld   (%ld of %ld blocks ever ran)\n", t.blocks, t.liveBlocks, nBlocks);
  std::fprintf(out, "  instructions / block  %16.2f\n", t.blocks ? double(t.insts) / double(t.blocks) : 0.0);
  long increments = 0, counted = 0;
  AtomxCountCost(&increments, &counted);
  std::fprintf(out, "  counter increments    %16ld   (%.3f per block executed; a counter per block: 1)\n", increments,
               counted ? double(increments) / double(counted) : 0.0);
  table(out, "Procedures:", t.proc, topN, procName, t.insts);
  table(out, "Instruction classes:", t.cls, 12, keyName, t.insts);
  std::fclose(out);
}

void writeJson(const Totals& t) {
  FILE* out = atomx::openToolOutput("dyninst.json");
  if (!out) return;
  atomx::JsonWriter j(out);
  j.beginObject();
  j.key("tool").value("dyninst");
  j.key("program").value(programPath);
  j.key("rep_counting").value("once per execution");
  j.key("instructions").value(t.insts);
  j.key("blocks_executed").value(t.blocks);
  long increments = 0;
  AtomxCountCost(&increments, nullptr);
  j.key("counter_increments").value(increments);
  j.key("procs").beginArray();
  for (long p : top(t.proc, nProcs)) {
    j.beginObject().key("name").value(names + procName[p]);
    j.key("instructions").value(t.proc[size_t(p)]).key("blocks").value(t.procBlocks[size_t(p)]).endObject();
  }
  j.endArray();
  j.key("classes").beginObject();
  for (long k : top(t.cls, nClasses)) j.key(names + keyName[k]).value(t.cls[size_t(k)]);
  j.endObject();
  j.key("mnemonics").beginObject();
  for (long k : top(t.mnem, nMnemonics)) j.key(names + keyName[nClasses + k]).value(t.mnem[size_t(k)]);
  j.endObject();
  // Every block, executed or not, in address order within its procedure.
  j.key("blocks").beginArray();
  for (long b = 0; b < nBlocks; ++b) {
    j.beginObject().key("pc").hex(uint64_t(blockPc[2 * b])).key("end").hex(uint64_t(blockPc[2 * b + 1])).key("proc").value(names + procName[blockProc[b]]);
    j.key("insts").value(blockInsts[b]).key("count").value(counts[b]).endObject();
  }
  j.endArray();
  j.endObject();
  std::fclose(out);
}
}  // namespace

extern "C" {
// The arrays are atomx's copies in the program: they live as long as it.
void DynInit(long nb, const long* pcs, const int* procs, const int* insts, long np, const int* pnames, const char* blob,
             const int* tstart, const int* tkey, const int* tcount, long nc, long nm, const int* knames, long topRows,
             const char* path) {
  nBlocks = nb, blockPc = pcs, blockProc = procs, blockInsts = insts, nProcs = np, procName = pnames, names = blob;
  tallyStart = tstart, tallyKey = tkey, tallyCount = tcount, nClasses = nc, nMnemonics = nm, keyName = knames;
  topN = topRows, programPath = path;
}

void DynFini(const long* blockCounts) {
  counts = blockCounts;
  const Totals t = total();
  writeSummary(t);
  writeJson(t);
}
}
