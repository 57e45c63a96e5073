// Analysis routines of the gprof tool (gprof_inst.cpp).  The program counts
// its blocks inline (atomx::Counters); conditional tail calls taken are
// relaxed atomics; an indirect site keeps its first four
// targets in lock-free slots, further ones in a map under a mutex
// (<atomx/targets.hpp>).  At the
// end: arcs, per-procedure instructions, and an estimate of inclusive cost
// as gprof makes it (a callee's inclusive cost shared among its callers by
// call counts; recursive procedures as one node per cycle), for gprof.out,
// gprof.json and a callgrind file (events: Ir; calls= lines).
#include <atomx/cachegrind.hpp>
#include <atomx/facts.h>
#include <atomx/report.hpp>
#include <atomx/targets.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {
constexpr long kRuntime = -(1L << 40);
struct Site { long tail, block, caller, callee, line; };  // tail: 0 call, 1 jump, 2 conditional jump

long nproc, nblock, nsite, top;
std::vector<std::string> procNames, procFiles, externals;
std::vector<long> procInfo;  // triples: start, end, line of the entry (address order)
std::vector<int> blocks;     // pairs: procedure, instructions
std::vector<long> blockPc;   // pairs: start, end
std::vector<Site> sites;
std::map<uint64_t, long> imported;  // PLT stub / GOT call target -> external name index
std::string callgrindPath, programPath;
const uint64_t* counts;  // per block, atomx's inline counters
std::unique_ptr<std::atomic<uint64_t>[]> taken;
std::unique_ptr<atomx::TargetCounts> targets;

double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; }

// A run-time target's callee (<atomx/targets.hpp>): a procedure index, or -1
// - external name index; the caller itself for a jump inside the caller
// (computed goto).
long calleeOf(uint64_t target) { return atomx::calleeOf(target, procInfo.data(), nproc, 3, externals, &imported); }

std::string nameOf(long callee) { return callee >= 0 ? procNames[size_t(callee)] : externals[size_t(-1 - callee)]; }

struct Arc { long caller, callee, tail; uint64_t calls; long line; };  // line: of one of its call sites

// gprof's estimate of inclusive cost, with cycles as gprof and kcachegrind
// treat them: the procedures of one strongly connected component of the call
// graph (a recursive procedure, or procedures that call each other) are one
// node, whose cost is its members' own plus its share of what it calls
// outside the cycle; a callee's cost is shared among the arcs that enter it
// from outside its cycle, by their calls.  Arcs inside a cycle carry none
// (so the callgrind file's inclusive costs add up: a recursive procedure is
// not counted again for each level).  A member that is entered from outside
// its cycle reports the cycle's cost in proportion to its part of those
// entries; one that is not, its own cost plus what it calls outside.
struct Inclusive {
  std::vector<std::vector<size_t>> out;  // arc indices by caller
  std::vector<long> cycle;               // per procedure: its component
  std::vector<double> value;             // per procedure
  std::vector<double> arcShare;          // per arc: its part of the caller's inclusive cost
  std::vector<bool> inCycle;             // per procedure: a member of a component of several, or recursive

  Inclusive(const std::vector<Arc>& arcs, const std::vector<uint64_t>& self)
      : out(self.size()), cycle(self.size(), -1), value(self.size()), arcShare(arcs.size()), inCycle(self.size()) {
    const size_t n = self.size();
    for (size_t a = 0; a < arcs.size(); ++a) out[size_t(arcs[a].caller)].push_back(a);
    // Tarjan's components, without recursion (call graphs can be deep); they
    // come out callees first.
    std::vector<long> index(n, -1), low(n, 0), stack;
    std::vector<bool> onStack(n);
    std::vector<std::vector<long>> components;
    long next = 0;
    for (size_t root = 0; root < n; ++root) {
      if (index[root] >= 0) continue;
      std::vector<std::pair<long, size_t>> work = {{long(root), 0}};  // procedure, next arc
      index[root] = low[root] = next++;
      stack.push_back(long(root));
      onStack[root] = true;
      while (!work.empty()) {
        auto& [v, k] = work.back();
        if (k < out[size_t(v)].size()) {
          const long w = arcs[out[size_t(v)][k++]].callee;
          if (w < 0) continue;
          if (index[size_t(w)] < 0) {
            index[size_t(w)] = low[size_t(w)] = next++;
            stack.push_back(w);
            onStack[size_t(w)] = true;
            work.push_back({w, 0});
          } else if (onStack[size_t(w)]) {
            low[size_t(v)] = std::min(low[size_t(v)], index[size_t(w)]);
          }
          continue;
        }
        const long done = v;
        work.pop_back();
        if (!work.empty()) low[size_t(work.back().first)] = std::min(low[size_t(work.back().first)], low[size_t(done)]);
        if (low[size_t(done)] != index[size_t(done)]) continue;
        components.emplace_back();
        for (long w = -1; w != done;) {
          w = stack.back();
          stack.pop_back();
          onStack[size_t(w)] = false;
          cycle[size_t(w)] = long(components.size() - 1);
          components.back().push_back(w);
        }
      }
    }
    // Calls entering each procedure and each component from outside it.
    std::vector<uint64_t> entries(n), componentEntries(components.size());
    for (const Arc& a : arcs) {
      if (a.callee < 0) continue;
      if (cycle[size_t(a.callee)] == cycle[size_t(a.caller)]) {
        inCycle[size_t(a.callee)] = inCycle[size_t(a.caller)] = true;
        continue;
      }
      entries[size_t(a.callee)] += a.calls;
      componentEntries[size_t(cycle[size_t(a.callee)])] += a.calls;
    }
    std::vector<double> cost(components.size());
    for (size_t c = 0; c < components.size(); ++c) {  // callees' components first
      double v = 0;
      for (long p : components[c]) {
        v += double(self[size_t(p)]);
        for (size_t a : out[size_t(p)]) {
          const long q = arcs[a].callee;
          if (q < 0 || size_t(cycle[size_t(q)]) == c) continue;
          const size_t qc = size_t(cycle[size_t(q)]);
          arcShare[a] = cost[qc] * double(arcs[a].calls) / double(componentEntries[qc]);
          v += arcShare[a];
        }
      }
      cost[c] = v;
      for (long p : components[c]) {
        if (!inCycle[size_t(p)]) {
          value[size_t(p)] = v;
        } else if (entries[size_t(p)]) {
          value[size_t(p)] = v * double(entries[size_t(p)]) / double(componentEntries[c]);
        } else {
          double own = double(self[size_t(p)]);
          for (size_t a : out[size_t(p)]) own += arcShare[a];
          value[size_t(p)] = own;
        }
      }
    }
  }
};
}  // namespace

extern "C" {
// st: per site, its kind, its block's id and its callee; procedures and
// blocks come from atomx's embedded facts.
void GprofInit(long ns, const long* st, long next, const char* extNames, long nimp, const long* imp,
               const char* callgrind, long topN) {
  nproc = AtomxProcCount(), nblock = AtomxBlockCount(), nsite = ns, top = topN;
  for (long p = 0; p < nproc; ++p) {
    const AtomxProcFacts* f = AtomxProc(p);
    procNames.push_back(atomx::demangle(f->name));
    // The source file and line of its entry (the callgrind file's fl=).
    AtomxInstNames entry{nullptr, nullptr, "", 0};
    for (uint32_t b = f->firstBlock; b < f->firstBlock + f->blockCount && !entry.mnemonic; ++b)
      if (AtomxBlock(b)->pc == f->pc && AtomxBlock(b)->instCount) entry = AtomxInstNamesOf(AtomxBlock(b)->firstInst);
    procFiles.push_back(entry.file);
    procInfo.insert(procInfo.end(), {long(f->pc), long(f->endPc), long(entry.line)});
  }
  for (long b = 0; b < nblock; ++b) {
    const AtomxBlockFacts* f = AtomxBlock(b);
    blocks.insert(blocks.end(), {int(f->proc), int(f->instCount)});
    blockPc.insert(blockPc.end(), {long(f->pc), long(f->endPc)});
  }
  for (long k = 0; k < ns; ++k) {
    const AtomxBlockFacts* b = AtomxBlock(st[3 * k + 1]);
    const AtomxInstNames last = AtomxInstNamesOf(b->firstInst + b->instCount - 1);
    sites.push_back({st[3 * k], st[3 * k + 1], long(b->proc), st[3 * k + 2], long(last.line)});
  }
  externals = atomx::splitStrings(extNames, size_t(next));
  for (long k = 0; k < nimp; ++k) imported.emplace(uint64_t(imp[2 * k]), imp[2 * k + 1]);
  callgrindPath = callgrind, programPath = AtomxProgramFile();
  taken = std::make_unique<std::atomic<uint64_t>[]>(size_t(ns));
  targets = std::make_unique<atomx::TargetCounts>(ns);
}

void GprofCondTail(long site, long isTaken) {
  if (taken && isTaken) taken[site].fetch_add(1, std::memory_order_relaxed);
}

void GprofIndirect(long site, long target) {
  if (targets) targets->count(site, uint64_t(target));
}

void GprofFinish(const uint64_t* blockCounts) {
  counts = blockCounts;
  std::vector<uint64_t> self(static_cast<size_t>(nproc));
  uint64_t total = 0;
  for (long b = 0; b < nblock; ++b) {
    const uint64_t n = counts[b] * uint64_t(blocks[2 * b + 1]);
    self[size_t(blocks[2 * b])] += n, total += n;
  }
  // Arcs, merged over sites: (caller, callee, tail) -> calls.
  std::map<std::tuple<long, long, long>, std::pair<uint64_t, long>> merged;  // -> calls, line
  // A direct site is an arc when it runs (the instrumentation chose them);
  // an indirect jump's target inside its own procedure is one only at the
  // procedure's entry (tail recursion), else it is a branch of the procedure.
  auto add = [&](const Site& s, long callee, uint64_t n) {
    if (n) {
      auto& m = merged[{s.caller, callee, s.tail != 0}];
      m.first += n, m.second = s.line;
    }
  };
  for (long k = 0; k < nsite; ++k)
    if (sites[k].callee != kRuntime)
      add(sites[k], sites[k].callee, sites[k].tail == 2 ? taken[k].load() : counts[sites[k].block]);
  targets->forEach(nsite, [&](long k, uint64_t target, uint64_t n) {
    const long callee = calleeOf(target);
    if (!(sites[k].tail && callee == sites[k].caller && target != uint64_t(procInfo[3 * size_t(callee)])))
      add(sites[k], callee, n);
  });
  std::vector<Arc> arcs;
  std::vector<uint64_t> calledTimes(static_cast<size_t>(nproc));
  uint64_t allCalls = 0;
  for (auto& [k, v] : merged) {
    const uint64_t n = v.first;
    arcs.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), n, v.second});
    if (std::get<1>(k) >= 0) calledTimes[size_t(std::get<1>(k))] += n;
    allCalls += n;
  }
  const Inclusive inc(arcs, self);

  std::vector<long> order;
  for (long p = 0; p < nproc; ++p)
    if (self[size_t(p)] || calledTimes[size_t(p)]) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [&](long a, long b) { return self[size_t(a)] > self[size_t(b)]; });
  std::vector<size_t> arcOrder(arcs.size());
  for (size_t a = 0; a < arcs.size(); ++a) arcOrder[a] = a;
  std::stable_sort(arcOrder.begin(), arcOrder.end(), [&](size_t a, size_t b) { return arcs[a].calls > arcs[b].calls; });

  if (FILE* out = atomx::openToolOutput("gprof.out")) {
    std::fprintf(out, "gprof: %s instructions in %zu procedures; %s calls over %zu caller->callee arcs\n",
                 atomx::groupDigits(total).c_str(), order.size(), atomx::groupDigits(allCalls).c_str(), arcs.size());
    std::fprintf(out, "\nflat profile (self: instructions executed in the procedure; incl.: gprof's estimate)\n");
    std::fprintf(out, "%15s %6s %6s %6s %13s  %s\n", "self", "%", "cum%", "incl%", "called", "procedure");
    uint64_t cum = 0;
    for (size_t k = 0; k < order.size() && long(k) < top; ++k) {
      const long p = order[k];
      cum += self[size_t(p)];
      std::fprintf(out, "%15s %5.1f%% %5.1f%% %5.1f%% %13s  %s\n", atomx::groupDigits(self[size_t(p)]).c_str(),
                   pct(self[size_t(p)], total), pct(cum, total), total ? 100.0 * inc.value[size_t(p)] / double(total) : 0,
                   atomx::groupDigits(calledTimes[size_t(p)]).c_str(), procNames[size_t(p)].c_str());
    }
    std::fprintf(out, "\ntop arcs\n%15s  %s\n", "calls", "caller -> callee");
    for (size_t k = 0; k < arcOrder.size() && long(k) < top / 2 + 5; ++k) {
      const Arc& a = arcs[arcOrder[k]];
      std::fprintf(out, "%15s  %s -> %s%s\n", atomx::groupDigits(a.calls).c_str(), procNames[size_t(a.caller)].c_str(),
                   nameOf(a.callee).c_str(), a.tail ? "  (tail call)" : "");
    }
    if (!callgrindPath.empty())
      std::fprintf(out, "\nall of it: gprof.json; call graph: kcachegrind %s\n", AtomxOutputPath(callgrindPath.c_str()));
    std::fclose(out);
  }

  if (FILE* js = atomx::openToolOutput("gprof.json")) {
    atomx::JsonWriter j(js);
    j.beginObject().key("tool").value("gprof").key("program").value(programPath);
    j.key("instructions").value((unsigned long long)total).key("calls").value((unsigned long long)allCalls);
    j.key("procedures").beginArray();
    for (long p : order)
      j.beginObject().key("name").value(procNames[size_t(p)]).key("pc").hex(uint64_t(procInfo[3 * p]))
          .key("instructions").value((unsigned long long)self[size_t(p)])
          .key("called").value((unsigned long long)calledTimes[size_t(p)])
          .key("inclusive").value((unsigned long long)(inc.value[size_t(p)] + 0.5)).endObject();
    j.endArray();
    j.key("arcs").beginArray();
    for (size_t a : arcOrder) {
      const Arc& r = arcs[a];
      j.beginObject().key("caller").value(procNames[size_t(r.caller)]).key("caller_pc").hex(uint64_t(procInfo[3 * r.caller]));
      j.key("callee").value(nameOf(r.callee));
      if (r.callee >= 0) j.key("callee_pc").hex(uint64_t(procInfo[3 * r.callee]));
      j.key("calls").value((unsigned long long)r.calls).key("kind").value(r.tail ? "tail" : "call").endObject();
    }
    j.endArray();
    j.key("blocks").beginArray();
    for (long b = 0; b < nblock; ++b)
      if (uint64_t c = counts[b])
        j.beginObject().key("pc").hex(uint64_t(blockPc[2 * b])).key("end").hex(uint64_t(blockPc[2 * b + 1]))
            .key("count").value((unsigned long long)c).key("instructions").value(blocks[2 * b + 1]).endObject();
    j.endArray();
    j.endObject();
    std::fclose(js);
  }

  if (callgrindPath.empty()) return;
  FILE* f = atomx::openToolOutput(callgrindPath.c_str());
  if (!f) return;
  // Positions are source lines: a procedure's cost at its entry's line, a
  // call at its site's (0 without -g; per line costs: the prof tool).  Functions and files
  // are named once, then referred to by number (the format's compression).
  atomx::cachegrind::CallgrindWriter cg(f, "atomx gprof", int(AtomxProcessId()), programPath, {"Ir"}, &total);
  cg.object("ob", 1, programPath);
  auto file = [&](const char* key, const std::string& name) { cg.file(key, name.empty() ? "???" : name); };
  auto fn = [&](const char* key, long callee) {
    cg.function(key, (callee >= 0 ? size_t(callee) : size_t(nproc) + size_t(-1 - callee)) + 1, nameOf(callee));
  };
  for (long p = 0; p < nproc; ++p) {
    if (!self[size_t(p)] && inc.out[size_t(p)].empty()) continue;
    file("fl", procFiles[size_t(p)]);
    fn("fn", p);
    cg.cost(procInfo[3 * p + 2], &self[size_t(p)]);
    for (size_t a : inc.out[size_t(p)]) {
      const Arc& r = arcs[a];
      if (r.callee < 0) cg.object("cob", 2, "(imported)");
      file("cfl", r.callee >= 0 ? procFiles[size_t(r.callee)] : "");
      fn("cfn", r.callee);
      // The call's inclusive cost: gprof's estimate, recomputed as above.
      const uint64_t inclusive = uint64_t(inc.arcShare[a] + 0.5);
      cg.call(r.calls, r.callee >= 0 ? procInfo[3 * r.callee + 2] : 0L, r.line, &inclusive);
    }
    cg.endFunction();
  }
  cg.totals(&total);
  std::fclose(f);
}
}
