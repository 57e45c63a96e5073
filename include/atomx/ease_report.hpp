// ease: the reports' data, merged over runs, and their text and JSON
// forms.  Shared by the analysis side (ease_anal.cpp, inside the measured
// program) and `atomx ease-report` (src/driver/EaseReports.cpp), which
// merges the ease.json files of several runs, as the seed's report program
// accumulated the data of several programs.  Header only.
#pragma once

#include <atomx/report.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace ease {

using Table = std::map<std::string, long>;

struct ProcRow {
  std::string program, name;
  long insts = 0, bytes = 0, dr = 0, dw = 0, bc = 0;
  std::map<std::string, long> causes;  // its memory references by cause ("memory reference by cause")
};

struct BranchRow {
  std::string program, proc, condition;
  uint64_t pc = 0;
  long executed = 0, taken = 0;
  bool counted = true;  // false: no taken edge (a branch to another procedure), taken unknown
};

struct Data {
  std::vector<std::string> programs;
  // Static (ease's static measurements): each instruction of the program
  // counted once, whether or not it ran; else each as often as it ran.
  bool isStatic = false;
  std::map<std::string, Table> tables;  // "total" holds the totals
  std::vector<ProcRow> procs;
  std::vector<BranchRow> branches;

  long total(const std::string& key) const { return get("total", key); }
  long get(const std::string& table, const std::string& key) const {
    auto t = tables.find(table);
    if (t == tables.end()) return 0;
    auto k = t->second.find(key);
    return k == t->second.end() ? 0 : k->second;
  }

  // Sums another run's data into this one: tables key by key, procedures by
  // (program, name), branches by (program, pc).
  void merge(const Data& o) {
    if (programs.empty()) isStatic = o.isStatic;
    for (const std::string& p : o.programs)
      if (std::find(programs.begin(), programs.end(), p) == programs.end()) programs.push_back(p);
    for (const auto& [name, t] : o.tables)
      for (const auto& [k, v] : t) tables[name][k] += v;
    for (const ProcRow& r : o.procs) {
      auto it = std::find_if(procs.begin(), procs.end(), [&](const ProcRow& x) { return x.program == r.program && x.name == r.name; });
      if (it == procs.end()) { procs.push_back(r); continue; }
      it->insts += r.insts, it->bytes += r.bytes, it->dr += r.dr, it->dw += r.dw, it->bc += r.bc;
      for (const auto& [k, v] : r.causes) it->causes[k] += v;
    }
    for (const BranchRow& b : o.branches) {
      auto it = std::find_if(branches.begin(), branches.end(), [&](const BranchRow& x) { return x.program == b.program && x.pc == b.pc; });
      if (it == branches.end()) { branches.push_back(b); continue; }
      it->executed += b.executed, it->taken += b.taken;
    }
  }
};

// The tables in report order: (table, title, what a row counts).
struct TableInfo {
  const char* table;
  const char* title;
};
inline const TableInfo kTables[] = {
    {"class", "3. Instruction type distribution (classes)"},
    {"mnemonic", "3. Instruction type distribution (mnemonics; Table V)"},
    {"addressing mode", "4. Addressing mode distribution (operands; Table IV)"},
    {"memory reference size", "5. Memory reference size distribution (bytes)"},
    {"memory reference", "6. Memory reference addressing mode by load/store and size (Table VI)"},
    {"memory reference by cause", "6. Memory references by cause (Figure 12)"},
    {"register read", "7. Register usage: reads"},
    {"register written", "7. Register usage: writes"},
    {"flag written", "8. Condition codes: flags written"},
    {"flag read", "8. Condition codes: flags read"},
    {"flag writer", "8. Condition codes: which instructions write which flags"},
    {"condition tested", "8. Condition codes: conditions tested (jcc, setcc, cmovcc)"},
    {"flag writes never read", "8. Condition codes: flag writes never read, by instruction"},
    {"branches executed", "9. Conditional branches executed, per condition"},
    {"branches taken", "9. Conditional branches taken, per condition"},
    {"data type", "11. Data type distribution"},
};

inline double percent(long a, long b) { return b ? 100.0 * double(a) / double(b) : 0.0; }

// Keys of a table, largest first (ties by key).
inline std::vector<std::pair<std::string, long>> sorted(const Table& t) {
  std::vector<std::pair<std::string, long>> v(t.begin(), t.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

inline std::string programList(const Data& d) {
  std::string s;
  for (const std::string& p : d.programs) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// The figures of reports 1, 2, 9 and 10, and the memory and flag totals:
// (label, value, remark).
struct Figure {
  std::string label;
  long value;
  std::string remark;
};
inline std::vector<Figure> figures(const Data& d) {
  const long insts = d.total("instructions"), bytes = d.total("bytes"), transfers = d.total("control transfers");
  const long cond = d.total("conditional branches"), refs = d.total("memory references");
  long taken = 0;
  for (const auto& [k, v] : d.tables.count("branches taken") ? d.tables.at("branches taken") : Table{}) taken += v;
  char buf[160];
  std::vector<Figure> f;
  const char* counted = d.isStatic ? "in the program" : "executed";
  if (d.isStatic) f.push_back({"1. instructions", insts, "in the program, each counted once whether or not it ran"});
  else f.push_back({"1. instruction path length", insts, "instructions executed (a rep-prefixed one counts once)"});
  std::snprintf(buf, sizeof buf, "bytes of instructions %s, %.2f per instruction", counted, insts ? double(bytes) / double(insts) : 0.0);
  f.push_back({d.isStatic ? "2. instruction bytes" : "2. instruction path size", bytes, buf});
  f.push_back({"memory references", refs, "data accesses (report 5)"});
  // Each kind of reference on its own row (a modify both reads and writes).
  for (const char* kind : {"loads", "stores", "modifies"}) {
    std::snprintf(buf, sizeof buf, "%.1f%% of references", percent(d.total(kind), refs));
    f.push_back({std::string("  ") + kind, d.total(kind), buf});
  }
  f.push_back({"8. flag-writing instructions", d.total("flag-writing instructions"), counted});
  std::snprintf(buf, sizeof buf, "%.1f%% of flag writes: every flag they write is written again before a read",
                percent(d.total("flag writes never read"), d.total("flag-writing instructions")));
  f.push_back({"   flag writes never read", d.total("flag writes never read"), buf});
  if (d.isStatic) f.push_back({"9. conditional branches", cond, "in the program (taken: a dynamic measurement)"});
  else {
    std::snprintf(buf, sizeof buf, "executed; %.1f%% taken", percent(taken, cond));
    f.push_back({"9. conditional branches", cond, buf});
    f.push_back({"   taken", taken, "(branches to other procedures not counted)"});
  }
  std::snprintf(buf, sizeof buf, "%.2f instructions between transfers, %.2f between conditional branches",
                transfers ? double(insts) / double(transfers) : 0.0, cond ? double(insts) / double(cond) : 0.0);
  f.push_back({"10. control transfers", transfers, buf});
  return f;
}

// ease.out: what a person reads on a screen; at most `top` rows a table.
inline void writeText(FILE* out, const Data& d, long top) {
  std::fprintf(out, "ease: architecture reports (Davidson & Whalley) of %s\n", programList(d).c_str());
  std::fprintf(out, "%s\n\n", d.isStatic ? "static: each instruction of the program counted once, whether or not it ran"
                                           : "dynamic: each instruction counted as often as it ran");
  for (const Figure& f : figures(d))
    std::fprintf(out, "  %-32s %18s  %s\n", f.label.c_str(), atomx::groupDigits(uint64_t(f.value)).c_str(), f.remark.c_str());
  for (const TableInfo& ti : kTables) {
    auto it = d.tables.find(ti.table);
    if (it == d.tables.end() || it->second.empty()) continue;
    long sum = 0;
    for (const auto& [k, v] : it->second) sum += v;
    std::fprintf(out, "\n%s\n", ti.title);
    const bool six = std::string(ti.table) == "memory reference", taken = std::string(ti.table) == "branches taken";
    if (six)
      std::fprintf(out, "  %-8s %-26s %5s %18s %8s\n", "access", "addressing mode", "size",
                   d.isStatic ? "number in program" : "number executed", "per cent");
    else if (taken) std::fprintf(out, "  %-40s %18s %8s\n", "condition", "number taken", "of exec.");
    else std::fprintf(out, "  %-40s %18s %8s\n", "", d.isStatic ? "number in program" : "number executed", "per cent");
    long shown = 0, rest = 0;
    auto rows = sorted(it->second);
    if (six)  // by access, mode and size in bytes, as the seed's Table VI
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        const size_t x = a.first.rfind('|'), y = b.first.rfind('|');
        return std::make_pair(a.first.substr(0, x), std::atol(a.first.c_str() + x + 1)) <
               std::make_pair(b.first.substr(0, y), std::atol(b.first.c_str() + y + 1));
      });
    std::string lastAccess, lastMode;
    for (const auto& [k, v] : rows) {
      if (!six && top >= 0 && shown >= top) { rest += v; continue; }
      ++shown;
      if (six) {  // access|mode|size, grouped as the seed's Table VI
        const size_t a = k.find('|'), b = k.find('|', a + 1);
        const std::string access = k.substr(0, a), mode = k.substr(a + 1, b - a - 1);
        std::fprintf(out, "  %-8s %-26s %5s %18s %7.2f%%\n", access == lastAccess ? "" : access.c_str(),
                     access == lastAccess && mode == lastMode ? "" : mode.c_str(), k.substr(b + 1).c_str(),
                     atomx::groupDigits(uint64_t(v)).c_str(), percent(v, sum));
        lastAccess = access, lastMode = mode;
      } else {
        // Report 9: the per cent of that condition's branches taken.
        const long of = taken ? d.get("branches executed", k) : sum;
        std::fprintf(out, "  %-40s %18s %7.2f%%\n", k.c_str(), atomx::groupDigits(uint64_t(v)).c_str(), percent(v, of));
      }
    }
    if (rest) std::fprintf(out, "  %-40s %18s %7.2f%%\n", ("(" + std::to_string(rows.size() - size_t(shown)) + " more)").c_str(),
                           atomx::groupDigits(uint64_t(rest)).c_str(), percent(rest, sum));
    std::fprintf(out, "  %-40s %18s %7.2f%%\n", "total", atomx::groupDigits(uint64_t(sum)).c_str(),
                 taken ? percent(sum, d.total("conditional branches")) : sum ? 100.0 : 0.0);
  }
}

// ease.json: everything; `more` adds keys to the top object (the analysis
// side's per-block counts).
template <class More>
void writeJson(FILE* out, const Data& d, More more) {
  atomx::JsonWriter j(out);
  j.beginObject();
  j.key("tool").value("ease");
  j.key("programs").beginArray();
  for (const std::string& p : d.programs) j.value(p);
  j.endArray();
  j.key("weighting").value(d.isStatic ? "static" : "dynamic");
  j.key("rep_counting").value("once per execution");
  j.key("totals").beginObject();
  for (const auto& [k, v] : d.tables.count("total") ? d.tables.at("total") : Table{}) j.key(k.c_str()).value(v);
  j.endObject();
  j.key("tables").beginObject();
  for (const auto& [name, t] : d.tables) {
    if (name == "total") continue;
    j.key(name.c_str()).beginObject();
    for (const auto& [k, v] : sorted(t)) j.key(k.c_str()).value(v);
    j.endObject();
  }
  j.endObject();
  j.key("procs").beginArray();
  for (const ProcRow& r : d.procs) {
    j.beginObject().key("program").value(r.program).key("name").value(r.name).key("instructions").value(r.insts);
    j.key("bytes").value(r.bytes).key("Dr").value(r.dr).key("Dw").value(r.dw).key("Bc").value(r.bc);
    j.key("causes").beginObject();
    for (const auto& [k, v] : r.causes) j.key(k.c_str()).value(v);
    j.endObject().endObject();
  }
  j.endArray();
  j.key("branches").beginArray();
  for (const BranchRow& b : d.branches) {
    j.beginObject().key("program").value(b.program).key("pc").hex(b.pc).key("proc").value(b.proc);
    j.key("condition").value(b.condition).key("executed").value(b.executed);
    if (b.counted) j.key("taken").value(b.taken);
    else j.key("taken").value(static_cast<const char*>(nullptr));
    j.endObject();
  }
  j.endArray();
  more(j);
  j.endObject();
}


// ---- comparing two builds (the seed's Tables II and III) -------------------

// One row of a comparison: the count in A, in B, and B - A.
struct DiffRow {
  std::string key;
  long a = 0, b = 0;
  long change() const { return b - a; }
};

// The rows of one table (or of the totals, "total"), every key of either,
// largest change first (by size; ties by key).
inline std::vector<DiffRow> diffRows(const Data& a, const Data& b, const std::string& table) {
  std::map<std::string, DiffRow> rows;
  for (const Data* d : {&a, &b})
    if (auto t = d->tables.find(table); t != d->tables.end())
      for (const auto& [k, v] : t->second) {
        DiffRow& r = rows[k];
        r.key = k;
        (d == &a ? r.a : r.b) = v;
      }
  std::vector<DiffRow> v;
  for (auto& [k, r] : rows) v.push_back(r);
  std::stable_sort(v.begin(), v.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::labs(x.change()) > std::labs(y.change());
  });
  return v;
}

// Per procedure (by name: two builds' programs are different files):
// instructions, bytes, Dr, Dw, Bc in A and in B.
struct ProcDiff {
  std::string name;
  ProcRow a, b;
};
inline std::vector<ProcDiff> diffProcs(const Data& a, const Data& b) {
  std::map<std::string, ProcDiff> by;
  for (const Data* d : {&a, &b})
    for (const ProcRow& r : d->procs) {
      ProcDiff& p = by[r.name];
      p.name = r.name;
      ProcRow& into = d == &a ? p.a : p.b;
      into.insts += r.insts, into.bytes += r.bytes, into.dr += r.dr, into.dw += r.dw, into.bc += r.bc;
    }
  std::vector<ProcDiff> v;
  for (auto& [k, p] : by) v.push_back(p);
  std::stable_sort(v.begin(), v.end(), [](const ProcDiff& x, const ProcDiff& y) {
    return std::labs(x.b.insts - x.a.insts) > std::labs(y.b.insts - y.a.insts);
  });
  return v;
}

inline std::string signedDigits(long v) { return (v > 0 ? "+" : v < 0 ? "-" : "") + atomx::groupDigits(uint64_t(std::labs(v))); }
inline std::string changePercent(long a, long b) {
  if (!a) return b ? "new" : "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * double(b - a) / double(a));
  return buf;
}

// ease-diff.out: per report what changed from A to B, the rows that changed
// most first (at most `top` a table; 0: the figures and procedures only).
inline void writeDiffText(FILE* out, const Data& a, const Data& b, long top) {
  std::fprintf(out, "ease: what changed from A to B\n  A: %s (%s)\n  B: %s (%s)\n", programList(a).c_str(),
               a.isStatic ? "static" : "dynamic", programList(b).c_str(), b.isStatic ? "static" : "dynamic");
  auto header = [&](const char* title, const char* what) {
    std::fprintf(out, "\n%s\n  %-40s %16s %16s %16s %8s\n", title, what, "A", "B", "B - A", "change");
  };
  auto row = [&](const std::string& key, long x, long y) {
    std::fprintf(out, "  %-40s %16s %16s %16s %8s\n", key.c_str(), atomx::groupDigits(uint64_t(x)).c_str(),
                 atomx::groupDigits(uint64_t(y)).c_str(), signedDigits(y - x).c_str(), changePercent(x, y).c_str());
  };
  header("Totals", "");
  for (const DiffRow& r : diffRows(a, b, "total")) row(r.key, r.a, r.b);
  for (const TableInfo& ti : kTables) {
    const std::vector<DiffRow> rows = diffRows(a, b, ti.table);
    long changed = 0;
    for (const DiffRow& r : rows) changed += r.change() != 0;
    if (!changed || !top) continue;
    header(ti.title, "");
    long shown = 0;
    for (const DiffRow& r : rows) {
      if (!r.change()) continue;
      if (shown++ == top) {
        std::fprintf(out, "  (%ld more rows changed)\n", changed - top);
        break;
      }
      row(r.key, r.a, r.b);
    }
  }
  header("Procedures (instructions; by name)", "procedure");
  long shown = 0;
  const std::vector<ProcDiff> procs = diffProcs(a, b);
  for (const ProcDiff& p : procs) {
    if (p.a.insts == p.b.insts) continue;
    if (top && shown++ == top) {
      std::fprintf(out, "  (more: ease-diff.json)\n");
      break;
    }
    row(p.name + (p.a.insts ? p.b.insts ? "" : " (only in A)" : " (only in B)"), p.a.insts, p.b.insts);
  }
}

// ease-diff.json: {"tool":"ease-diff", "a":{programs, weighting}, "b":...,
// "totals":{KEY:[A,B]}, "tables":{TABLE:{KEY:[A,B]}}, "procs":[{"name",
// "a":{instructions,bytes,Dr,Dw,Bc} or null, "b":...}]}: every row, changed or not.
inline void writeDiffJson(FILE* out, const Data& a, const Data& b) {
  atomx::JsonWriter j(out);
  j.beginObject().key("tool").value("ease-diff");
  for (const Data* d : {&a, &b}) {
    j.key(d == &a ? "a" : "b").beginObject().key("programs").beginArray();
    for (const std::string& p : d->programs) j.value(p);
    j.endArray().key("weighting").value(d->isStatic ? "static" : "dynamic").endObject();
  }
  auto pairs = [&](const std::string& table) {
    j.beginObject();
    std::vector<DiffRow> rows = diffRows(a, b, table);
    std::sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) { return x.key < y.key; });
    for (const DiffRow& r : rows) j.key(r.key.c_str()).beginArray().value(r.a).value(r.b).endArray();
    j.endObject();
  };
  j.key("totals");
  pairs("total");
  j.key("tables").beginObject();
  for (const TableInfo& ti : kTables) {
    j.key(ti.table);
    pairs(ti.table);
  }
  j.endObject();
  j.key("procs").beginArray();
  std::vector<ProcDiff> procs = diffProcs(a, b);
  std::sort(procs.begin(), procs.end(), [](const ProcDiff& x, const ProcDiff& y) { return x.name < y.name; });
  for (const ProcDiff& p : procs) {
    j.beginObject().key("name").value(p.name);
    for (const ProcRow* r : {&p.a, &p.b}) {
      j.key(r == &p.a ? "a" : "b");
      if (!r->insts && !r->bytes) {
        j.value(static_cast<const char*>(nullptr));
        continue;
      }
      j.beginObject().key("instructions").value(r->insts).key("bytes").value(r->bytes).key("Dr").value(r->dr);
      j.key("Dw").value(r->dw).key("Bc").value(r->bc).endObject();
    }
    j.endObject();
  }
  j.endArray().endObject();
}

}  // namespace ease
