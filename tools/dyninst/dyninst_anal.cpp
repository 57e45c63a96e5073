// Analysis routines of the dyninst tool (dyninst_inst.cpp): the program
// counts its blocks inline (atomx::Counters::count) and nothing runs here
// until the end, when every figure is computed from those counts and what
// atomx embedded of each block and instruction (<atomx/facts.h>).
#include <atomx/facts.h>
#include <atomx/report.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
const long* counts;  // per block id: exact counts (Counters::count)
long nBlocks, nProcs, topN;
// Classes and mnemonics, numbered in the order the executed instructions
// first show them.
std::vector<std::string> classNames, mnemonicNames;

struct Totals {
  long insts = 0, blocks = 0, liveBlocks = 0;
  std::vector<long> proc, procBlocks, cls, mnem;
};

// Adds n to name's entry of v, numbering a name seen first: by the string's
// address, since the facts keep each distinct string once.
void add(std::unordered_map<const char*, size_t>& ids, std::vector<std::string>& names, std::vector<long>& v,
         const char* name, long n) {
  auto it = ids.find(name);
  if (it == ids.end()) it = ids.emplace(name, names.size()).first, names.push_back(name), v.push_back(0);
  v[it->second] += n;
}

// Only the blocks that ran are read: a short run of a big program pays
// for what it executed, not for every instruction of the program.
Totals total() {
  Totals t;
  nBlocks = AtomxBlockCount(), nProcs = AtomxProcCount();
  t.proc.assign(size_t(nProcs), 0), t.procBlocks.assign(size_t(nProcs), 0);
  std::unordered_map<const char*, size_t> classes, mnemonics;
  for (long b = 0; b < nBlocks; ++b) {
    const long n = counts[b];
    if (!n) continue;
    const AtomxBlockFacts* f = AtomxBlock(b);
    t.blocks += n, ++t.liveBlocks, t.insts += n * f->instCount;
    t.proc[f->proc] += n * f->instCount, t.procBlocks[f->proc] += n;
    for (uint32_t i = f->firstInst; i < f->firstInst + f->instCount; ++i) {
      const AtomxInstNames x = AtomxInstNamesOf(i);  // no record: a short process pays little at its end
      add(classes, classNames, t.cls, x.category, n);
      add(mnemonics, mnemonicNames, t.mnem, x.mnemonic, n);
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

template <class Name>
void table(FILE* out, const char* title, const std::vector<long>& v, long limit, Name nameOf, long total) {
  std::fprintf(out, "\n%s\n  %16s %7s %7s  %s\n", title, "instructions", "%", "cum%", "name");
  long cum = 0, shown = 0;
  for (long k : top(v, limit)) {
    cum += v[size_t(k)], ++shown;
    std::fprintf(out, "  %16ld %6.2f%% %6.2f%%  %s\n", v[size_t(k)], percent(v[size_t(k)], total), percent(cum, total),
                 nameOf(k));
  }
  long rest = 0, others = 0;
  for (long x : v) others += x != 0, rest += x;
  if (others > shown) std::fprintf(out, "  %16ld %6.2f%%          (%ld more)\n", rest - cum, percent(rest - cum, total), others - shown);
}

void writeSummary(const Totals& t) {
  FILE* out = atomx::openToolOutput("dyninst.out");
  if (!out) return;
  std::fprintf(out, "dyninst: dynamic instruction counts of %s\n", AtomxProgramFile());
  std::fprintf(out, "  instructions executed %16ld   (a rep-prefixed instruction counts once)\n", t.insts);
  std::fprintf(out, "  basic blocks executed %16ld   (%ld of %ld blocks ever ran)\n", t.blocks, t.liveBlocks, nBlocks);
  std::fprintf(out, "  instructions / block  %16.2f\n", t.blocks ? double(t.insts) / double(t.blocks) : 0.0);
  long increments = 0, counted = 0;
  AtomxCountCost(&increments, &counted);
  std::fprintf(out, "  counter increments    %16ld   (%.3f per block executed; a counter per block: 1)\n", increments,
               counted ? double(increments) / double(counted) : 0.0);
  table(out, "Procedures:", t.proc, topN, [](long p) { return AtomxProc(p)->name; }, t.insts);
  table(out, "Instruction classes:", t.cls, 12, [](long k) { return classNames[size_t(k)].c_str(); }, t.insts);
  std::fclose(out);
}

void writeJson(const Totals& t) {
  FILE* out = atomx::openToolOutput("dyninst.json");
  if (!out) return;
  atomx::JsonWriter j(out);
  j.beginObject();
  j.key("tool").value("dyninst");
  j.key("program").value(AtomxProgramFile());
  j.key("rep_counting").value("once per execution");
  j.key("instructions").value(t.insts);
  j.key("blocks_executed").value(t.blocks);
  long increments = 0;
  AtomxCountCost(&increments, nullptr);
  j.key("counter_increments").value(increments);
  j.key("procs").beginArray();
  for (long p : top(t.proc, nProcs)) {
    j.beginObject().key("name").value(AtomxProc(p)->name);
    j.key("instructions").value(t.proc[size_t(p)]).key("blocks").value(t.procBlocks[size_t(p)]).endObject();
  }
  j.endArray();
  j.key("classes").beginObject();
  for (long k : top(t.cls, long(classNames.size()))) j.key(classNames[size_t(k)].c_str()).value(t.cls[size_t(k)]);
  j.endObject();
  j.key("mnemonics").beginObject();
  for (long k : top(t.mnem, long(mnemonicNames.size()))) j.key(mnemonicNames[size_t(k)].c_str()).value(t.mnem[size_t(k)]);
  j.endObject();
  // Every block that ran, in address order within its procedure (a short
  // run of a big program executes few of them, and this file is written
  // at every process's exit).
  j.key("blocks").beginArray();
  for (long b = 0; b < nBlocks; ++b) {
    if (!counts[b]) continue;
    const AtomxBlockFacts* f = AtomxBlock(b);
    j.beginObject().key("pc").hex(f->pc).key("end").hex(f->endPc).key("proc").value(AtomxProc(f->proc)->name);
    j.key("insts").value(long(f->instCount)).key("count").value(counts[b]).endObject();
  }
  j.endArray();
  j.endObject();
  std::fclose(out);
}
}  // namespace

extern "C" void DynFini(const long* blockCounts, long topRows) {
  counts = blockCounts, topN = topRows;
  const Totals t = total();
  writeSummary(t);
  writeJson(t);
}
