// pipe tool, analysis side: the program counts its basic blocks inline
// (atomx::Counters); at the end, the static per-block costs that
// pipe_inst.cpp computed are weighted by the counts.
#include <atomx/facts.h>
#include <atomx/report.hpp>


#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
struct BlockInfo {
  uint64_t pc, end, worstPc;
  int insts, stalls, proc, worstStall;
  std::string worstText;
};
struct ProcTotal {
  std::string name;
  uint64_t pc;
  unsigned long insts = 0, stalls = 0;
};
std::vector<BlockInfo> blocks;
const unsigned long* counts;  // per block, atomx's inline counters
std::vector<ProcTotal> procs;
long topN = 10, params[5];

std::vector<std::string> lines(const char* s) {
  std::vector<std::string> v;
  for (const char* e; (e = std::strchr(s, '\n')); s = e + 1) v.emplace_back(s, e);
  return v;
}
// A procedure name for people: demangled (pipe.json keeps the symbol), at
// most `width` characters.
std::string readable(const std::string& name, size_t width) {
  const std::string r = atomx::demangle(name);
  return r.size() > width ? r.substr(0, width - 3) + "..." : r;
}
}  // namespace

extern "C" {
// Per block id: the model's stalls and worst instruction; the rest comes
// from atomx's embedded facts.
void PipeInit(long n, long top, int* stalls, long* worstPc, int* worstStall, const char* worstText, long* model) {
  const std::vector<std::string> texts = lines(worstText);
  blocks.resize(n);
  for (long k = 0; k < n; ++k) {
    const AtomxBlockFacts* f = AtomxBlock(k);
    blocks[k] = {f->pc, f->endPc, uint64_t(worstPc[k]), int(f->instCount), stalls[k], int(f->proc), worstStall[k],
                 texts[k]};
  }
  for (long p = 0; p < AtomxProcCount(); ++p) procs.push_back({AtomxProc(p)->name, AtomxProc(p)->pc});
  topN = top;
  std::memcpy(params, model, sizeof params);
}

void PipeReport(const unsigned long* blockCounts) {
  counts = blockCounts;
  unsigned long insts = 0, stalls = 0;
  std::vector<size_t> hot;  // executed blocks with stalls
  for (size_t k = 0; k < blocks.size(); ++k) {
    const unsigned long c = counts[k];
    insts += c * blocks[k].insts, stalls += c * blocks[k].stalls;
    procs[blocks[k].proc].insts += c * blocks[k].insts, procs[blocks[k].proc].stalls += c * blocks[k].stalls;
    if (c && blocks[k].stalls) hot.push_back(k);
  }
  auto blockStalls = [](size_t k) { return counts[k] * blocks[k].stalls; };
  std::stable_sort(hot.begin(), hot.end(), [&](size_t a, size_t b) { return blockStalls(a) > blockStalls(b); });
  std::vector<const ProcTotal*> byStall;
  for (const ProcTotal& p : procs) if (p.stalls) byStall.push_back(&p);
  std::stable_sort(byStall.begin(), byStall.end(), [](auto* a, auto* b) { return a->stalls > b->stalls; });
  const unsigned long cycles = insts + stalls;
  auto pct = [](unsigned long a, unsigned long b) { return b ? 100.0 * double(a) / double(b) : 0.0; };

  if (FILE* o = atomx::openToolOutput("pipe.out")) {
    std::fprintf(o, "pipe: in-order single-issue pipeline model (latencies: load %ld, mul %ld, div %ld, fp %ld, fp div %ld)\n",
                 params[0], params[1], params[2], params[3], params[4]);
    std::fprintf(o, "instructions %lu  cycles %lu  stall cycles %lu (%.1f%%)  CPI %.3f\n", insts, cycles, stalls,
                 pct(stalls, cycles), insts ? double(cycles) / double(insts) : 0.0);
    std::fprintf(o, "top procedures by stall cycles    instructions          stalls    CPI\n");
    for (size_t k = 0; k < byStall.size() && long(k) < topN; ++k) {
      const ProcTotal& p = *byStall[k];
      std::fprintf(o, "  %-28s %14lu %15lu  %5.2f\n", readable(p.name, 28).c_str(), p.insts, p.stalls,
                   double(p.insts + p.stalls) / double(p.insts));
    }
    std::fprintf(o, "top blocks by stall cycles (per execution: stalls/instructions; the longest stall)\n"
                    "  block      procedure       executions  stall/inst     stalls  longest\n");
    for (size_t k = 0; k < hot.size() && long(k) < topN; ++k) {
      const BlockInfo& b = blocks[hot[k]];
      std::fprintf(o, "  %#-10lx %-14.14s %11lu %5d/%-5d %10lu  %d at %#lx %s\n", (unsigned long)b.pc,
                   readable(procs[b.proc].name, 14).c_str(), counts[hot[k]], b.stalls, b.insts, blockStalls(hot[k]),
                   b.worstStall, (unsigned long)b.worstPc, b.worstText.c_str());
    }
    std::fclose(o);
  }
  FILE* o = atomx::openToolOutput("pipe.json");
  if (!o) return;
  atomx::JsonWriter j(o);
  j.beginObject().key("tool").value("pipe").key("model").beginObject();
  const char* names[] = {"load", "mul", "div", "fp", "fpdiv"};
  for (int k = 0; k < 5; ++k) j.key(names[k]).value(params[k]);
  j.endObject().key("instructions").value(insts).key("cycles").value(cycles).key("stalls").value(stalls);
  j.key("cpi").value(insts ? double(cycles) / double(insts) : 0.0);
  j.key("procedures").beginArray();
  for (const ProcTotal& p : procs)
    if (p.insts)
      j.beginObject().key("name").value(p.name).key("pc").hex(p.pc).key("instructions").value(p.insts)
          .key("stalls").value(p.stalls).endObject();
  j.endArray().key("blocks").beginArray();  // executed blocks; stalls and instructions per execution
  for (size_t k = 0; k < blocks.size(); ++k) {
    const BlockInfo& b = blocks[k];
    if (!counts[k]) continue;
    j.beginObject().key("pc").hex(b.pc).key("end").hex(b.end).key("procedure").value(procs[b.proc].name)
        .key("count").value(counts[k]).key("instructions").value(b.insts).key("stalls").value(b.stalls);
    if (b.worstStall) j.key("worst_pc").hex(b.worstPc).key("worst_stall").value(b.worstStall);
    j.endObject();
  }
  j.endArray().endObject();
  std::fclose(o);
}
}
