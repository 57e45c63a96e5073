// Analysis routines of the inline tool (inline_inst.cpp).  A direct call
// site is counted inline by the program (atomx::Counters); an indirect one
// calls InlineIndirect, which keeps its first four
// targets in lock-free slots, further ones in a map under a mutex
// (<atomx/targets.hpp>).  At the
// end: inline.out (the most frequent call sites) and inline.json (all
// executed sites).
#include <atomx/facts.h>
#include <atomx/report.hpp>
#include <atomx/targets.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {
constexpr long kRuntime = -(1L << 40);
struct Site { long pc, caller, callee; };
struct Row { long site, callee; uint64_t count; };

long nproc, nsite, top;
std::vector<std::string> procNames, where, externals;
std::vector<long> procInfo;  // triples: start, end, instructions (address order)
std::vector<Site> sites;
const uint64_t* counts;  // per direct site, atomx's inline counters
std::unique_ptr<atomx::TargetCounts> targets;

// A run-time target's callee (<atomx/targets.hpp>): the procedure holding
// it, else a shared library's function (dladdr), else the address.
long calleeOf(uint64_t target) { return atomx::calleeOf(target, procInfo.data(), nproc, 3, externals); }

std::string nameOf(long callee) { return callee >= 0 ? procNames[size_t(callee)] : externals[size_t(-1 - callee)]; }
}  // namespace

extern "C" {
// st: per site, its call instruction's id and its callee; the rest is in
// atomx's embedded facts.
void InlineInit(long ns, const long* st, long next, const char* extNames, long topN) {
  nproc = AtomxProcCount(), nsite = ns, top = topN;
  for (long p = 0; p < nproc; ++p) {
    const AtomxProcFacts* f = AtomxProc(p);
    long insts = 0;
    for (uint32_t b = f->firstBlock; b < f->firstBlock + f->blockCount; ++b) insts += AtomxBlock(b)->instCount;
    procNames.push_back(atomx::demangle(f->name));
    procInfo.insert(procInfo.end(), {long(f->pc), long(f->endPc), insts});
  }
  for (long k = 0; k < ns; ++k) {
    const AtomxInstFacts* call = AtomxInst(st[2 * k]);
    sites.push_back({long(call->pc), long(AtomxBlock(call->block)->proc), st[2 * k + 1]});
    const char* file = std::strrchr(call->file, '/');
    where.push_back(call->line ? std::string(file ? file + 1 : call->file) + ":" + std::to_string(call->line) : "");
  }
  externals = atomx::splitStrings(extNames, size_t(next));
  targets = std::make_unique<atomx::TargetCounts>(ns);
}

void InlineIndirect(long site, long target) {
  if (targets) targets->count(site, uint64_t(target));
}

void InlineFinish(const uint64_t* siteCounts) {
  counts = siteCounts;
  std::vector<Row> rows;
  uint64_t calls = 0;
  for (long k = 0; k < nsite; ++k)
    if (sites[k].callee != kRuntime)
      if (uint64_t n = counts[k]) rows.push_back({k, sites[k].callee, n});
  std::map<std::pair<long, long>, uint64_t> indirect;  // (site, callee) -> calls
  targets->forEach(nsite, [&](long k, uint64_t target, uint64_t n) { indirect[{k, calleeOf(target)}] += n; });
  for (auto& [key, n] : indirect) rows.push_back({key.first, key.second, n});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.count > b.count; });
  std::vector<bool> seen(static_cast<size_t>(nsite));
  size_t executedSites = 0;
  for (const Row& r : rows) {
    calls += r.count;
    if (!seen[size_t(r.site)]) seen[size_t(r.site)] = true, ++executedSites;
  }
  auto bytes = [](long c) { return c >= 0 ? procInfo[3 * c + 1] - procInfo[3 * c] : 0L; };
  auto insts = [](long c) { return c >= 0 ? procInfo[3 * c + 2] : 0L; };

  if (FILE* out = atomx::openToolOutput("inline.out")) {
    std::fprintf(out, "inline: %s calls from %zu call sites executed (of %ld); by calls, with the callee's size\n\n",
                 atomx::groupDigits(calls).c_str(), executedSites, nsite);
    std::fprintf(out, "%15s %6s  %-10s %-22s %-24s %7s %6s  %s\n", "calls", "%", "site", "caller", "callee", "bytes",
                 "insts", "line");
    for (size_t k = 0; k < rows.size() && long(k) < top; ++k) {
      const Row& r = rows[k];
      const Site& s = sites[r.site];
      std::string caller = procNames[size_t(s.caller)].substr(0, 22), callee = nameOf(r.callee).substr(0, 24);
      if (s.callee == kRuntime) callee = "*" + callee.substr(0, 23);
      std::string size = r.callee >= 0 ? std::to_string(bytes(r.callee)) : "-";
      std::string n = r.callee >= 0 ? std::to_string(insts(r.callee)) : "-";
      std::fprintf(out, "%15s %5.1f%%  0x%-8lx %-22s %-24s %7s %6s  %s\n", atomx::groupDigits(r.count).c_str(),
                   calls ? 100.0 * double(r.count) / double(calls) : 0.0, s.pc, caller.c_str(), callee.c_str(),
                   size.c_str(), n.c_str(), where[size_t(r.site)].c_str());
    }
    std::fprintf(out, "\n(*: an indirect call, this target; -: not in the program)  all sites: inline.json\n");
    std::fclose(out);
  }

  if (FILE* js = atomx::openToolOutput("inline.json")) {
    atomx::JsonWriter j(js);
    j.beginObject().key("tool").value("inline").key("calls").value((unsigned long long)calls);
    j.key("sites").beginArray();
    for (const Row& r : rows) {
      const Site& s = sites[r.site];
      j.beginObject().key("pc").hex(uint64_t(s.pc)).key("line").value(where[size_t(r.site)]);
      j.key("caller").value(procNames[size_t(s.caller)]).key("caller_pc").hex(uint64_t(procInfo[3 * s.caller]));
      j.key("callee").value(nameOf(r.callee));
      if (r.callee >= 0)
        j.key("callee_pc").hex(uint64_t(procInfo[3 * r.callee])).key("callee_bytes").value(bytes(r.callee))
            .key("callee_instructions").value(insts(r.callee));
      j.key("kind").value(s.callee == kRuntime ? "indirect" : "direct");
      j.key("count").value((unsigned long long)r.count).endObject();
    }
    j.endArray().endObject();
    std::fclose(js);
  }
}
}
