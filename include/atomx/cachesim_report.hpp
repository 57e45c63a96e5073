// atomx::cachesim::report: the one writer of a cache simulation's results
// per configuration, header only: the online tool (tools/cachesim,
// cachesim.out, cachesim.json, cachesim.cg) and the offline simulator of a
// trace (`atomx cachesim`, src/analyze/Cachesim.cpp) both fill a Table and
// write it with these functions, so their text, JSON and cachegrind files
// have one layout (docs/cachesim.md).
#pragma once

#include <atomx/cachegrind.hpp>
#include <atomx/cachesim.hpp>
#include <atomx/json.hpp>
#include <atomx/libc_model.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace atomx::cachesim::report {

// A configuration's events, in cachegrind's order: Ir, instruction misses
// per level of the instruction path, Dr, read misses per data level, Dw,
// write misses per data level.
struct Events {
  int ni, nd;
  size_t size() const { return size_t(3 + ni + 2 * nd); }
  size_t ir() const { return 0; }
  size_t imiss(int k) const { return size_t(1 + k); }
  size_t dr() const { return size_t(1 + ni); }
  size_t drmiss(int k) const { return size_t(2 + ni + k); }
  size_t dw() const { return size_t(2 + ni + nd); }
  size_t dwmiss(int k) const { return size_t(3 + ni + nd + k); }
  // cachegrind's names: level 1, L for the last of a path, else its position.
  static std::string level(int k, int n) { return k == 0 ? "1" : k == n - 1 ? "L" : std::to_string(k + 1); }
  std::vector<std::string> names() const {
    std::vector<std::string> v = {"Ir"};
    for (int k = 0; k < ni; ++k) v.push_back("I" + level(k, ni) + "mr");
    v.push_back("Dr");
    for (int k = 0; k < nd; ++k) v.push_back("D" + level(k, nd) + "mr");
    v.push_back("Dw");
    for (int k = 0; k < nd; ++k) v.push_back("D" + level(k, nd) + "mw");
    return v;
  }
  static Events of(const Hierarchy& h) { return {int(h.iPath.size()), int(h.dPath.size())}; }
};

using Row = std::vector<uint64_t>;
inline void add(Row& to, const uint64_t* from) {
  for (size_t k = 0; k < to.size(); ++k) to[k] += from[k];
}

inline constexpr long kLibcFunctions = long(std::size(libc::kFunctions));

// One configuration's results.  Procedures and files are numbers into the
// Names the writers are given.
struct Table {
  Events ev{0, 0};
  Row total;
  std::vector<Row> procs;                          // per procedure
  std::map<std::tuple<int, int, int>, Row> lines;  // (procedure, file (-1: none), line)
  std::vector<Row> libc;                           // per libc::kFunctions entry: its modelled references
  Row libcTotal;
  uint64_t switches = 0;                           // periodic context switches
  // Per CPU (`atomx cachesim --merged` with the schedule log): the totals
  // of the references that ran on it, each CPU with its own private levels.
  std::map<int, Row> cpus;
  void reset(const Events& e, size_t nprocs) {
    ev = e;
    total.assign(ev.size(), 0);
    procs.assign(nprocs, Row(ev.size(), 0));
    lines.clear();
    libc.assign(size_t(kLibcFunctions), Row(ev.size(), 0));
    libcTotal.assign(ev.size(), 0);
  }
};

struct Names {
  const std::vector<std::string>& procs;  // symbols, as the program has them
  const std::vector<std::string>& files;
  const std::vector<uint64_t>& procPc;    // each procedure's lowest address
};

inline uint64_t firstMisses(const Events& ev, const Row& r) {
  return (ev.ni ? r[ev.imiss(0)] : 0) + (ev.nd ? r[ev.drmiss(0)] + r[ev.dwmiss(0)] : 0);
}

// misses: {"I1": {"ir": n}, "D1": {"dr": n, "dw": n}, "LL": {"ir": .., "dr": .., "dw": ..}}
inline void jsonCounts(JsonWriter& j, const Hierarchy& h, const Events& ev, const Row& r) {
  j.key("Ir").value(r[ev.ir()]).key("Dr").value(r[ev.dr()]).key("Dw").value(r[ev.dw()]);
  j.key("misses").beginObject();
  for (int l = 0; l < int(h.levels.size()); ++l) {
    j.key(h.levels[size_t(l)].name.c_str()).beginObject();
    for (int k = 0; k < ev.ni; ++k)
      if (h.iPath[size_t(k)] == l) j.key("ir").value(r[ev.imiss(k)]);
    for (int k = 0; k < ev.nd; ++k)
      if (h.dPath[size_t(k)] == l) j.key("dr").value(r[ev.drmiss(k)]).key("dw").value(r[ev.dwmiss(k)]);
    j.endObject();
  }
  j.endObject();
}

// The configuration's section of the text report: its levels, the totals
// per level (`libcRows`: with libc's modelled references apart), the top
// procedures by first-level misses.
inline void writeText(FILE* out, const Hierarchy& h, const Table& t, const Names& names, bool libcRows, long topN) {
  const Events& ev = t.ev;
  auto rate = [](uint64_t m, uint64_t a) { return a ? 100.0 * double(m) / double(a) : 0.0; };
  std::fprintf(out, "\nconfiguration '%s':\n", h.name.c_str());
  for (const Level& l : h.levels) std::fprintf(out, "  %-3s %s\n", l.name.c_str(), describe(l).c_str());
  if (h.contextSwitch.unit != SwitchUnit::None) {
    const char* units[] = {"", "instructions", "references", "work units"};
    std::fprintf(out, "  context switch every %llu %s: %llu switches\n", (unsigned long long)h.contextSwitch.every,
                 units[int(h.contextSwitch.unit)], (unsigned long long)t.switches);
  }
  std::fprintf(out, "  %-12s %16s", "", "references");
  for (const Level& l : h.levels) std::fprintf(out, " %14s %7s", (l.name + " misses").c_str(), "rate");
  std::fputc('\n', out);
  auto row = [&](const char* what, uint64_t refs, const std::vector<int>& path, auto missAt) {
    std::fprintf(out, "  %-12s %16llu", what, (unsigned long long)refs);
    for (int l = 0; l < int(h.levels.size()); ++l) {
      int k = -1;
      for (size_t q = 0; q < path.size(); ++q)
        if (path[q] == l) k = int(q);
      if (k < 0) std::fprintf(out, " %14s %7s", "-", "");
      else std::fprintf(out, " %14llu %6.2f%%", (unsigned long long)missAt(k), rate(missAt(k), refs));
    }
    std::fputc('\n', out);
  };
  if (ev.ni) row("instructions", t.total[ev.ir()], h.iPath, [&](int k) { return t.total[ev.imiss(k)]; });
  if (ev.nd) {
    row("data reads", t.total[ev.dr()], h.dPath, [&](int k) { return t.total[ev.drmiss(k)]; });
    row("data writes", t.total[ev.dw()], h.dPath, [&](int k) { return t.total[ev.dwmiss(k)]; });
    if (libcRows) {
      const Row& l = t.libcTotal;
      row("libc reads", l[ev.dr()], h.dPath, [&](int k) { return l[ev.drmiss(k)]; });
      row("libc writes", l[ev.dw()], h.dPath, [&](int k) { return l[ev.dwmiss(k)]; });
    }
  }
  if (!t.cpus.empty()) std::fprintf(out, "  per CPU (its own private levels; the shared ones' misses it caused):\n");
  for (const auto& [cpu, r] : t.cpus) {
    char what[3][32];
    std::snprintf(what[0], sizeof what[0], "cpu %d instr", cpu);
    std::snprintf(what[1], sizeof what[1], "cpu %d reads", cpu);
    std::snprintf(what[2], sizeof what[2], "cpu %d writes", cpu);
    if (ev.ni) row(what[0], r[ev.ir()], h.iPath, [&](int k) { return r[ev.imiss(k)]; });
    if (ev.nd) {
      row(what[1], r[ev.dr()], h.dPath, [&](int k) { return r[ev.drmiss(k)]; });
      row(what[2], r[ev.dw()], h.dPath, [&](int k) { return r[ev.dwmiss(k)]; });
    }
  }
  std::vector<size_t> order;
  for (size_t p = 0; p < t.procs.size(); ++p)
    if (firstMisses(ev, t.procs[p])) order.push_back(p);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return firstMisses(ev, t.procs[a]) > firstMisses(ev, t.procs[b]); });
  std::fprintf(out, "  top procedures by first-level misses:\n");
  const std::vector<std::string> events = ev.names();
  for (size_t k = 0; k < order.size() && long(k) < topN; ++k) {
    const Row& r = t.procs[order[k]];
    std::fprintf(out, "  %14llu misses  (", (unsigned long long)firstMisses(ev, r));
    bool sep = false;
    for (size_t e = 0; e < events.size(); ++e)
      if (r[e]) std::fprintf(out, "%s%s %llu", sep ? ", " : "", events[e].c_str(), (unsigned long long)r[e]), sep = true;
    std::fprintf(out, ")  %s\n", names.procs[order[k]].c_str());
  }
}

// The configuration as one JSON object: name, levels, context switch,
// total, procedures, libc, lines.
inline void writeJson(JsonWriter& j, const Hierarchy& h, const Table& t, const Names& names) {
  const Events& ev = t.ev;
  j.beginObject().key("name").value(h.name);
  j.key("levels").beginArray();
  const char* policies[] = {"lru", "fifo", "random"};
  for (const Level& l : h.levels) {
    j.beginObject().key("name").value(l.name).key("size").value(l.size).key("assoc").value(l.assoc);
    j.key("line").value(l.line).key("sets").value(l.sets()).key("policy").value(policies[int(l.policy)]);
    j.key("write_allocate").value(l.writeAllocate).key("shared").value(l.shared).endObject();
  }
  j.endArray();
  if (h.contextSwitch.unit != SwitchUnit::None) {
    const char* units[] = {"", "instructions", "references", "work"};
    j.key("context_switch").beginObject().key("unit").value(units[int(h.contextSwitch.unit)]);
    j.key("every").value(h.contextSwitch.every).key("switches").value(t.switches).endObject();
  }
  j.key("total").beginObject();
  jsonCounts(j, h, ev, t.total);
  j.endObject();
  if (!t.cpus.empty()) {
    j.key("cpus").beginArray();
    for (const auto& [cpu, r] : t.cpus) {
      j.beginObject().key("cpu").value(cpu);
      jsonCounts(j, h, ev, r);
      j.endObject();
    }
    j.endArray();
  }
  j.key("procedures").beginArray();
  for (size_t p = 0; p < t.procs.size(); ++p) {
    const Row& r = t.procs[p];
    if (!r[ev.ir()] && !r[ev.dr()] && !r[ev.dw()]) continue;
    j.beginObject().key("name").value(names.procs[p]).key("pc").hex(names.procPc[p]);
    jsonCounts(j, h, ev, r);
    j.endObject();
  }
  j.endArray();
  // libc's modelled references: not in "total".
  j.key("libc").beginObject();
  jsonCounts(j, h, ev, t.libcTotal);
  j.key("functions").beginArray();
  for (long f = 0; f < kLibcFunctions; ++f) {
    const Row& r = t.libc[size_t(f)];
    if (!r[ev.dr()] && !r[ev.dw()]) continue;
    j.beginObject().key("name").value(libc::kFunctions[f].name);
    jsonCounts(j, h, ev, r);
    j.endObject();
  }
  j.endArray().endObject();
  j.key("lines").beginArray();
  for (const auto& [key, r] : t.lines) {
    const auto [p, fl, line] = key;
    if (fl < 0 || (!r[ev.ir()] && !r[ev.dr()] && !r[ev.dw()])) continue;
    j.beginObject().key("file").value(names.files[size_t(fl)]).key("line").value(line);
    j.key("procedure").value(names.procs[size_t(p)]);
    jsonCounts(j, h, ev, r);
    j.endObject();
  }
  j.endArray();
  j.endObject();
}

// The configuration in cachegrind's format (cg_annotate reads it): per
// file, function and line, then libc's modelled references under the file
// "(libc, modelled by atomx cachesim)"; `source`: where the configuration
// came from, `cmd`: the cmd: line.
inline void writeCg(FILE* f, const Hierarchy& h, const Table& t, const Names& names, const std::string& source,
                    const std::string& cmd) {
  std::vector<std::string> desc;
  for (const Level& l : h.levels) {
    char line[256];
    std::snprintf(line, sizeof line, "%s cache:         %llu B, %u B, %u-way associative", l.name.c_str(),
                  (unsigned long long)l.size, l.line, l.assoc);
    desc.push_back(line);
  }
  desc.push_back("simulated by:     atomx cachesim, configuration '" + h.name + "' of " + source);
  cachegrind::Writer cg(f, desc, cmd, t.ev.names());
  int proc = -1, file = -2;
  for (const auto& [key, row] : t.lines) {
    const auto [p, fl, line] = key;
    bool any = false;
    for (uint64_t v : row) any |= v != 0;
    if (!any) continue;
    if (fl != file || p != proc) {
      cg.file(fl < 0 ? "???" : names.files[size_t(fl)]);
      cg.function(names.procs[size_t(p)]);
      file = fl, proc = p;
    }
    cg.cost(unsigned(line), row.data());
  }
  Row all = t.total;
  bool libcFile = false;
  for (long fn = 0; fn < kLibcFunctions; ++fn) {
    const Row& r = t.libc[size_t(fn)];
    if (!r[t.ev.dr()] && !r[t.ev.dw()]) continue;
    if (!libcFile) cg.file("(libc, modelled by atomx cachesim)"), libcFile = true;
    cg.function(libc::kFunctions[fn].name);
    cg.cost(0, r.data());
    add(all, r.data());
  }
  cg.summary(all.data());
}

// A configuration's name as part of a file name (cachesim.NAME.cg).
inline std::string plainName(const std::string& s) {
  std::string o;
  for (char ch : s) o += ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_') ? ch : '_';
  return o;
}

}  // namespace atomx::cachesim::report
