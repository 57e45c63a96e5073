// atomx: writing Valgrind's cachegrind and callgrind file formats, the one
// writer of both (header only).  It needs only libc and libstdc++, so an
// analysis object (ease.cg, cachesim.cg, prof's and gprof's callgrind files)
// and atomx itself (`atomx regen --cachegrind-out`) use the same code.
//
// Function names are written as cachegrind and callgrind write them: a C++
// symbol ("_Z...") demangled (atomx/demangle.hpp), any other name as it is,
// so that a file compares with Valgrind's own by function name.  A caller
// may pass symbols or names it demangled already.
//
//     atomx::cachegrind::Writer w(file, {"desc line"}, program, {"Ir", "Dr"});
//     w.file("a.c"); w.function("_Z1fv"); w.cost(12, costs);   // costs[events]
//     w.summary(totals);
//
//     atomx::cachegrind::CostTable t(2);  // or: collect, and write in cachegrind's order
//     t.add("a.c", "main", 12, costs); ...; t.write(w); w.summary(t.totals());
//
//     atomx::cachegrind::CallgrindWriter c(file, "atomx prof", pid, program, {"Ir"}, totals);
//     c.object("ob", 1, program); c.file("fl", 3, "a.c"); c.function("fn", 7, "main");
//     c.cost(12, costs); c.call(calls, calleeLine, siteLine, inclusive); c.endFunction();
//     c.totals(totals);
#pragma once

#include <atomx/demangle.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace atomx::cachegrind {

// " 1 2 3": n costs, each after a space.
inline void writeCosts(FILE* out, const uint64_t* costs, size_t n) {
  for (size_t k = 0; k < n; ++k) std::fprintf(out, " %llu", static_cast<unsigned long long>(costs[k]));
}

// Cachegrind's format (cg_annotate): its header, then cost lines, each at
// the file (fl=) and function (fn=) named last, then the summary.  A fn=
// follows every fl=; cg_annotate adds up a (file, function, line) that
// comes more than once.
//
// For the oracles' self-tests only, as <atomx/json.hpp>'s: with
// ATOMX_TEST_MISCOUNT=cg.EVENT (or cg.EVENT#N) in the environment, the
// first (N-th) positive cost of EVENT on a cost line is written one too
// high, the summary left as it is: a file off by one on one line.
class Writer {
 public:
  Writer(FILE* out, const std::vector<std::string>& desc, const std::string& cmd,
         const std::vector<std::string>& events)
      : out_(out), events_(events.size()) {
    for (const std::string& d : desc) std::fprintf(out_, "desc: %s\n", d.c_str());
    std::fprintf(out_, "cmd: %s\nevents:", cmd.c_str());
    for (const std::string& e : events) std::fprintf(out_, " %s", e.c_str());
    std::fputc('\n', out_);
    if (const char* m = std::getenv("ATOMX_TEST_MISCOUNT"); m && std::strncmp(m, "cg.", 3) == 0) {
      const std::string spec = m + 3;
      const size_t hash = spec.find('#');
      for (size_t k = 0; k < events.size(); ++k)
        if (events[k] == spec.substr(0, hash)) miscount_ = long(k);
      if (hash != std::string::npos) miscountSkip_ = std::atol(spec.c_str() + hash + 1) - 1;
    }
  }

  size_t events() const { return events_; }
  void file(const std::string& name) { std::fprintf(out_, "fl=%s\n", name.c_str()); }
  void function(const std::string& symbol) { std::fprintf(out_, "fn=%s\n", demangle(symbol).c_str()); }
  // One line's costs, one per event.
  void cost(unsigned line, const uint64_t* costs) {
    std::fprintf(out_, "%u", line);
    if (miscount_ >= 0 && costs[miscount_] > 0 && miscountSkip_-- == 0) {  // ATOMX_TEST_MISCOUNT=cg.EVENT
      std::vector<uint64_t> wrong(costs, costs + events_);
      ++wrong[size_t(miscount_)];
      miscount_ = -1;
      writeCosts(out_, wrong.data(), events_);
    } else {
      writeCosts(out_, costs, events_);
    }
    std::fputc('\n', out_);
  }
  void summary(const uint64_t* totals) {
    std::fputs("summary:", out_);
    writeCosts(out_, totals, events_);
    std::fputc('\n', out_);
  }

 private:
  FILE* out_;
  size_t events_;
  long miscount_ = -1;     // ATOMX_TEST_MISCOUNT=cg.EVENT: EVENT's index,
  long miscountSkip_ = 0;  // and the positive costs of it still to pass over
};

// Costs per (file, function, line), written in cachegrind's order: files,
// functions within a file and lines within a function sorted (by the names
// as given: pass symbols and the order is that of the symbols).
class CostTable {
 public:
  explicit CostTable(size_t events) : events_(events), totals_(events) {}

  void add(const std::string& file, const std::string& function, unsigned line, const uint64_t* costs) {
    std::vector<uint64_t>& c = costs_[file][function][line];
    if (c.empty()) c.assign(events_, 0);
    for (size_t k = 0; k < events_; ++k) c[k] += costs[k], totals_[k] += costs[k];
  }
  const uint64_t* totals() const { return totals_.data(); }

  // The cost lines (not the summary).
  void write(Writer& w) const {
    for (const auto& [file, functions] : costs_) {
      w.file(file);
      for (const auto& [function, lines] : functions) {
        w.function(function);
        for (const auto& [line, c] : lines) w.cost(line, c.data());
      }
    }
  }

 private:
  size_t events_;
  std::vector<uint64_t> totals_;
  std::map<std::string, std::map<std::string, std::map<unsigned, std::vector<uint64_t>>>> costs_;
};

// Callgrind's format (callgrind_annotate, KCachegrind) with positions as
// source lines and names compressed: an object, file or function is named
// the first time its number is written ("fn=(7) main"), and by its number
// alone after that ("fn=(7)").  Numbers are the caller's (one space for
// ob/cob, one for fl/fi/fe/cfl, one for fn/cfn), or, for files, given here
// in the order the names are first written (file(key, name)).
class CallgrindWriter {
 public:
  CallgrindWriter(FILE* out, const std::string& creator, int pid, const std::string& cmd,
                  const std::vector<std::string>& events, const uint64_t* summary)
      : out_(out), events_(events.size()) {
    std::fprintf(out_, "# callgrind format\nversion: 1\ncreator: %s\npid: %d\ncmd: %s\npositions: line\nevents:",
                 creator.c_str(), pid, cmd.c_str());
    for (const std::string& e : events) std::fprintf(out_, " %s", e.c_str());
    std::fputs("\nsummary:", out_);
    writeCosts(out_, summary, events_);
    std::fputs("\n\n", out_);
  }

  // key: ob or cob.
  void object(const char* key, size_t id, const std::string& name) { named(key, id, name, objects_); }
  // key: fl, fi, fe or cfl.
  void file(const char* key, size_t id, const std::string& name) { named(key, id, name, files_); }
  void file(const char* key, const std::string& name) {
    auto [it, added] = fileIds_.try_emplace(name, fileIds_.size() + 1);
    file(key, it->second, name);
  }
  // key: fn or cfn; the name demangled.
  void function(const char* key, size_t id, const std::string& symbol) {
    if (id >= functions_.size()) functions_.resize(id + 1);
    named(key, id, functions_[id] ? std::string() : demangle(symbol), functions_);
  }
  void cost(long line, const uint64_t* costs) {
    std::fprintf(out_, "%ld", line);
    writeCosts(out_, costs, events_);
    std::fputc('\n', out_);
  }
  // A call from the current function to the cfn= named last: `calls` times,
  // to its line `target`, from line `site`, costing `inclusive` there.
  void call(uint64_t calls, long target, long site, const uint64_t* inclusive) {
    std::fprintf(out_, "calls=%llu %ld\n", static_cast<unsigned long long>(calls), target);
    cost(site, inclusive);
  }
  void endFunction() { std::fputc('\n', out_); }
  void totals(const uint64_t* totals) {
    std::fputs("totals:", out_);
    writeCosts(out_, totals, events_);
    std::fputc('\n', out_);
  }

 private:
  void named(const char* key, size_t id, const std::string& name, std::vector<bool>& done) {
    if (id >= done.size()) done.resize(id + 1);
    std::fprintf(out_, "%s=(%zu)", key, id);
    if (!done[id]) std::fprintf(out_, " %s", name.c_str()), done[id] = true;
    std::fputc('\n', out_);
  }

  FILE* out_;
  size_t events_;
  std::vector<bool> objects_, files_, functions_;
  std::unordered_map<std::string, size_t> fileIds_;
};

}  // namespace atomx::cachegrind
