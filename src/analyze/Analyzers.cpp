#include "analyze/Analyzers.h"

#include <atomx/cachegrind.hpp>
#include <atomx/demangle.hpp>
#include <atomx/trace_format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "debuginfo/LineTable.h"
#include "support/Error.h"

namespace atomx::analyze {

namespace {

using trace::BlockRun;
using trace::Consumer;
using trace::OrderedOutput;
using trace::Shard;
using trace::SignalEvent;
using Shards = std::vector<std::unique_ptr<Consumer>>;

// An output file, or stdout for "-"; closed (and checked) by close().
class OutFile {
 public:
  OutFile(const std::string& path, bool binary) : path_(path), own_(path != "-") {
    f_ = own_ ? std::fopen(path.c_str(), binary ? "wb" : "w") : stdout;
    if (!f_) throw Error(path + ": cannot write: " + std::strerror(errno));
    // (stdout keeps its buffer: setvbuf is only allowed before a stream's
    // first output, and analysers that report at the end open theirs late.)
    if (own_) std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~OutFile() {
    if (f_ && own_) std::fclose(f_);
  }
  std::FILE* get() const { return f_; }
  // Flushes; throws atomx::Error when the output could not be written.
  void close() {
    if (!f_) return;
    const bool bad = std::fflush(f_) != 0 || std::ferror(f_);
    const bool closeBad = own_ && std::fclose(f_) != 0;
    if (own_) f_ = nullptr;
    if (bad || closeBad) throw Error((own_ ? path_ : std::string("standard output")) + ": cannot write: " + std::strerror(errno));
  }

 private:
  std::string path_;
  bool own_;
  std::FILE* f_;
};

// An analyser whose shards write in stream order to one file: each shard
// an OrderedOutput, drained into the file at the merge.
template <class ShardT>
class StreamAnalyzer : public trace::Analyzer {
 public:
  StreamAnalyzer(const char* name, const std::string& path, bool binary) : name_(name), out_(path, binary) {}
  const char* name() const override { return name_; }
  std::unique_ptr<Consumer> shard(const Shard& s) override { return std::make_unique<ShardT>(s, out_.get()); }
  void merge(Shards& shards) override {
    for (auto& s : shards)
      if (s) static_cast<ShardT&>(*s).out.drainTo(out_.get());
  }
  void report(const trace::Summary&) override { out_.close(); }

 protected:
  const char* name_;
  OutFile out_;
};

// --- text and blocks ----------------------------------------------------

struct TextShard : Consumer {
  TextShard(const Shard& s, std::FILE* to, bool blocks, bool cpus = false) : out(s, to), blocks(blocks), cpus(cpus) {}
  OrderedOutput out;
  bool blocks;
  bool cpus;  // a line `cpu N` before each slice of a merged stream (Consumer::slice)

  void slice(int, int cpu) override {
    if (cpus) std::fprintf(out.file(), "cpu %d\n", cpu);
  }
  void block(const BlockRun& b) override {
    std::FILE* f = out.file();
    if (b.inherited) return;  // the parent's stream has it
    if (blocks) {
      if (b.continued)
        std::fprintf(f, "%d %llx %zu %s continued\n", b.thread, static_cast<unsigned long long>(b.insns[0].pc), b.count,
                     b.procedure);
      else
        std::fprintf(f, "%d %llx %zu %s\n", b.thread, static_cast<unsigned long long>(b.start), b.count, b.procedure);
      return;
    }
    // `TID PC` per instruction, formatted here: printf's parsing costs more
    // than everything else regen does per instruction.
    // A trace with data: each instruction's references after it, ` R ADDR
    // SIZE` (W a write, M a read-modify-write; ADDR hex, SIZE decimal).
    char tid[16];
    const int tidLength = std::snprintf(tid, sizeof tid, "%d ", b.thread);
    char buf[4096];
    size_t used = 0;
    auto hex = [&](uint64_t v) {
      char digits[16];
      int n = 0;
      do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
      } while (v);
      while (n) buf[used++] = digits[--n];
    };
    size_t r = 0;
    for (size_t k = 0; k < b.count; ++k) {
      if (used + 48 > sizeof buf) {
        std::fwrite(buf, 1, used, f);
        used = 0;
      }
      std::memcpy(buf + used, tid, size_t(tidLength));
      used += size_t(tidLength);
      hex(b.insns[k].pc);
      buf[used++] = '\n';
      for (; r < b.refCount && b.refs[r].insn == k; ++r) {
        if (used + 48 > sizeof buf) {
          std::fwrite(buf, 1, used, f);
          used = 0;
        }
        const trace::DataRef& d = b.refs[r];
        buf[used++] = ' ';
        buf[used++] = d.kind == trace::kModify ? 'M' : d.kind == trace::kWrite ? 'W' : 'R';
        buf[used++] = ' ';
        hex(d.address);
        used += size_t(std::snprintf(buf + used, 16, " %u\n", unsigned(d.size)));
      }
    }
    std::fwrite(buf, 1, used, f);
  }
  void outsideCall(int thread, uint64_t, const std::string& name) override {
    std::fprintf(out.file(), "%d call %s\n", thread, name.empty() ? "*" : name.c_str());
  }
  // A library call's modelled references, after its `call` line (or, for a
  // call that needs its result, when it returns: after the handlers and
  // callbacks that ran during it): ` L NAME`, then ` LR ADDR SIZE`, ` LW
  // ADDR SIZE`.
  void libraryCall(const trace::LibraryCall& c) override {
    if (blocks || c.inherited) return;
    std::fprintf(out.file(), " L %s\n", c.function);
    for (size_t k = 0; k < c.refCount; ++k)
      std::fprintf(out.file(), " L%c %llx %u\n", c.refs[k].kind == trace::kWrite ? 'W' : 'R',
                   static_cast<unsigned long long>(c.refs[k].address), unsigned(c.refs[k].size));
  }
  void signal(const SignalEvent& e) override {
    if (e.inherited) return;
    std::fprintf(out.file(), "%d %s %d %llx\n", e.thread, e.returned ? "sigreturn" : "signal", e.signo,
                 static_cast<unsigned long long>(e.pc));
  }
};

template <bool Blocks, bool Cpus = false>
struct TextShardOf : TextShard {
  TextShardOf(const Shard& s, std::FILE* to) : TextShard(s, to, Blocks, Cpus) {}
};

// --- binary ---------------------------------------------------------------

struct BinaryShard : Consumer {
  BinaryShard(const Shard& s, std::FILE* to) : out(s, to) {}
  OrderedOutput out;
  std::vector<uint8_t> buf;

  // kind, flags, a 16-bit length: every record's first four bytes.
  void head(unsigned kind, unsigned flags, size_t n16) {
    buf.clear();
    buf.push_back(uint8_t(kind));
    buf.push_back(uint8_t(flags));
    buf.push_back(uint8_t(n16));
    buf.push_back(uint8_t(n16 >> 8));
  }
  template <typename T>
  void field(T v) {
    for (size_t i = 0; i < sizeof v; ++i) buf.push_back(uint8_t(uint64_t(v) >> (8 * i)));
  }
  void put() { std::fwrite(buf.data(), 1, buf.size(), out.file()); }

  void threadBegin(int thread) override {
    head(ATOMX_REGEN_THREAD_BEGIN, 0, 0);
    field(uint32_t(thread));
    put();
  }
  // A merged stream's turn (Consumer::slice): the records after it are
  // `thread`'s, up to the next.
  void slice(int thread, int cpu) override {
    head(ATOMX_REGEN_SLICE, 0, 0);
    field(uint32_t(thread));
    field(int32_t(cpu));
    put();
  }
  // One reference as DATA and LIBRARY records hold it: address, the
  // instruction's index in the BLOCK record before it, size, kind, flags.
  void reference(const trace::DataRef& d, size_t insn) {
    field(d.address);
    field(uint16_t(insn));
    field(d.size);
    buf.push_back(d.kind);
    buf.push_back(d.locked ? ATOMX_REGEN_LOCKED : 0);
  }
  void block(const BlockRun& b) override {
    const unsigned inherited = b.inherited ? ATOMX_REGEN_INHERITED : 0;
    size_t r = 0;
    for (size_t from = 0, n; from < b.count; from += n) {
      n = std::min<size_t>(b.count - from, 0xffff);
      head(ATOMX_REGEN_BLOCK, inherited | (b.continued || from > 0 ? ATOMX_REGEN_CONTINUED : 0), n);
      field(b.insns[from].pc);
      for (size_t k = from; k < from + n; ++k) buf.push_back(b.insns[k].length);
      put();
      // The record's data references (those of its instructions), if any.
      size_t end = r;
      while (end < b.refCount && b.refs[end].insn < from + n) ++end;
      if (end == r) continue;
      head(ATOMX_REGEN_DATA, inherited, 0);
      field(uint32_t(end - r));
      for (; r < end; ++r) reference(b.refs[r], b.refs[r].insn - from);
      put();
    }
  }
  void libraryCall(const trace::LibraryCall& c) override {
    const std::string_view name = c.function ? c.function : "";
    const size_t n = std::min<size_t>(name.size(), 0xffff);
    head(ATOMX_REGEN_LIBRARY, c.inherited ? ATOMX_REGEN_INHERITED : 0, n);
    field(c.callSite);
    field(uint32_t(c.refCount));
    buf.insert(buf.end(), name.begin(), name.begin() + long(n));
    for (size_t k = 0; k < c.refCount; ++k) reference(c.refs[k], 0);
    put();
  }
  void signal(const SignalEvent& e) override {
    head(ATOMX_REGEN_SIGNAL, (e.returned ? ATOMX_REGEN_RETURNED : 0) | (e.inherited ? ATOMX_REGEN_INHERITED : 0), e.signo);
    field(e.pc);
    put();
  }
  void outsideCall(int, uint64_t site, const std::string& name) override {
    const size_t n = std::min<size_t>(name.size(), 0xffff);
    head(ATOMX_REGEN_CALL, 0, n);
    field(site);
    buf.insert(buf.end(), name.begin(), name.begin() + long(n));
    put();
  }
  void threadEnd(int thread, const std::string& problem) override {
    const size_t n = std::min<size_t>(problem.size(), 0xffff);
    head(ATOMX_REGEN_THREAD_END, 0, n);
    field(uint32_t(thread));
    buf.insert(buf.end(), problem.begin(), problem.begin() + long(n));
    put();
  }
};

class BinaryAnalyzer : public StreamAnalyzer<BinaryShard> {
 public:
  explicit BinaryAnalyzer(const std::string& path) : StreamAnalyzer("binary", path, true) {
    const uint32_t header[2] = {ATOMX_REGEN_MAGIC, ATOMX_REGEN_VERSION};
    std::fwrite(header, 1, sizeof header, out_.get());
  }
};

// --- counts and cachegrind ------------------------------------------------

// Executions per instruction address, and its procedure's symbol (valid
// until analyze() returns); in a trace with data, its data reads and writes
// as Valgrind counts them (cachegrind's Dr and Dw).
struct PcCount {
  uint64_t n = 0, dr = 0, dw = 0;
  const char* procedure = nullptr;
};
using PcCounts = std::unordered_map<uint64_t, PcCount>;
// Reads and writes of libc's modelled references, per function.
using LibraryCounts = std::map<std::string, std::pair<uint64_t, uint64_t>>;

// Valgrind's model, as the cache tools count (docs/cachesim.md, "What is
// simulated"): a read-modify-write operand is one read, a locked one two
// reads (the load before its compare-and-swap, and the CAS).
inline void countReference(const trace::DataRef& d, uint64_t& dr, uint64_t& dw) {
  if (d.kind == trace::kWrite) ++dw;
  else dr += d.kind == trace::kModify && d.locked ? 2 : 1;
}

// Per program of the trace (BlockRun::program): a workload's programs
// have addresses and procedures of their own.
struct ProgramCounts {
  PcCounts pcs;
  LibraryCounts library;
};
using Counts = std::vector<ProgramCounts>;

ProgramCounts& countsOf(Counts& counts, size_t program) {
  program = countedProgram(program);
  if (counts.size() <= program) counts.resize(program + 1);
  return counts[program];
}

struct CountShard : Consumer {
  Counts counts;
  void block(const BlockRun& b) override {
    if (b.inherited) return;
    PcCounts& pcs = countsOf(counts, b.program).pcs;
    for (size_t k = 0; k < b.count; ++k) {
      PcCount& c = pcs[b.insns[k].pc];
      ++c.n;
      c.procedure = b.procedure;
    }
    for (size_t k = 0; k < b.refCount; ++k) {
      PcCount& c = pcs[b.insns[b.refs[k].insn].pc];
      countReference(b.refs[k], c.dr, c.dw);
    }
  }
  void libraryCall(const trace::LibraryCall& l) override {
    if (l.inherited) return;
    auto& [dr, dw] = countsOf(counts, l.program).library[l.function ? l.function : "?"];
    for (size_t k = 0; k < l.refCount; ++k) countReference(l.refs[k], dr, dw);
  }
};

// counts and cachegrind, per program: `PC N` lines, the first program's,
// then each further program's after a line `program K PATH`; one
// cachegrind file per program, FILE for the first and FILE.K for the K-th
// (K = 2, 3, ...: the manifest's program-K), as cachegrind
// --trace-children=yes writes one file per process.
class CountAnalyzer : public trace::Analyzer {
 public:
  // `countsTo`: where the `PC N` lines go ("" for none); `cachegrindTo`:
  // the cachegrind file ("" for none); `programs`: the trace's
  // (TraceReader::programs); `how`: what made the output (the cachegrind
  // files' cmd: line is `PROGRAM (HOW)`); `data`: the trace has data, the
  // file has Dr and Dw too.
  CountAnalyzer(std::string countsTo, std::string cachegrindTo, std::vector<std::string> programs, std::string how,
                bool data)
      : countsTo_(std::move(countsTo)), cachegrindTo_(std::move(cachegrindTo)), programs_(std::move(programs)),
        how_(std::move(how)), data_(data) {}
  const char* name() const override { return countsTo_.empty() ? "cachegrind" : "counts"; }
  // counts and cachegrind named together: one count serves both.
  void alsoCachegrind(const std::string& to) { cachegrindTo_ = to; }
  std::unique_ptr<Consumer> shard(const Shard&) override { return std::make_unique<CountShard>(); }
  void merge(Shards& shards) override {
    total_.resize(programs_.size());
    for (auto& s : shards) {
      if (!s) continue;
      const CountShard& shard = static_cast<CountShard&>(*s);
      for (size_t k = 0; k < shard.counts.size(); ++k) {
        ProgramCounts& to = countsOf(total_, k);
        for (const auto& [pc, c] : shard.counts[k].pcs) {
          PcCount& t = to.pcs[pc];
          t.n += c.n;
          t.dr += c.dr;
          t.dw += c.dw;
          t.procedure = c.procedure;
        }
        for (const auto& [fn, c] : shard.counts[k].library) {
          to.library[fn].first += c.first;
          to.library[fn].second += c.second;
        }
      }
      s.reset();
    }
  }
  void report(const trace::Summary&) override {
    if (!countsTo_.empty()) {
      OutFile f(countsTo_, false);
      for (size_t k = 0; k < total_.size(); ++k) {
        if (k > 0) std::fprintf(f.get(), "program %zu %s\n", k + 1, programs_[k].c_str());
        std::vector<std::pair<uint64_t, uint64_t>> sorted;
        sorted.reserve(total_[k].pcs.size());
        for (const auto& [pc, c] : total_[k].pcs) sorted.emplace_back(pc, c.n);
        std::sort(sorted.begin(), sorted.end());
        for (const auto& [pc, n] : sorted)
          std::fprintf(f.get(), "%llx %llu\n", static_cast<unsigned long long>(pc), static_cast<unsigned long long>(n));
      }
      f.close();
    }
    if (cachegrindTo_.empty()) return;
    if (total_.size() > 1 && cachegrindTo_ == "-")
      throw UsageError("cachegrind: a trace of " + std::to_string(total_.size()) +
                       " programs writes a file per program (FILE, FILE.2, ...): give a file name, not -");
    for (size_t k = 0; k < total_.size(); ++k)
      writeCachegrind(k, k == 0 ? cachegrindTo_ : cachegrindTo_ + "." + std::to_string(k + 1));
  }

 private:
  // Program k's Ir (and, with data, Dr and Dw) per source line of its
  // DWARF, under each instruction's procedure, C++ names demangled as
  // cachegrind does; with data, libc's modelled references under the file
  // the online and offline cache simulators name (docs/cachesim.md), a
  // function each.
  void writeCachegrind(size_t k, const std::string& to) const {
    const debuginfo::LineTable lines(programs_[k]);
    std::unordered_map<const char*, std::string> names;
    const size_t events = data_ ? 3 : 1;
    cachegrind::CostTable table(events);
    for (const auto& [pc, c] : total_[k].pcs) {
      auto [it, fresh] = names.try_emplace(c.procedure);
      if (fresh) it->second = demangle(c.procedure);  // sorted by the name cachegrind shows
      const debuginfo::SourceLine where = lines.lookup(pc);
      const uint64_t costs[3] = {c.n, c.dr, c.dw};
      table.add(where.file ? *where.file : "???", it->second, where.file ? where.line : 0, costs);
    }
    for (const auto& [fn, c] : data_ ? total_[k].library : LibraryCounts{}) {
      const uint64_t costs[3] = {0, c.first, c.second};
      table.add(kLibraryFile, fn, 0, costs);
    }
    OutFile out(to, false);
    std::vector<std::string> names3 = {"Ir", "Dr", "Dw"};
    names3.resize(events);
    cachegrind::Writer w(out.get(), {"atomx regen: instructions regenerated from an abstract-execution trace"},
                         programs_[k] + " (" + how_ + ")", names3);
    table.write(w);
    w.summary(table.totals());
    out.close();
  }

  static constexpr const char* kLibraryFile = "(libc, modelled by atomx regen)";
  std::string countsTo_, cachegrindTo_;
  std::vector<std::string> programs_;
  std::string how_;
  bool data_;
  Counts total_;
};

// --- procs ------------------------------------------------------------------

struct ProcShard : Consumer {
  std::unordered_map<const char*, std::pair<uint64_t, uint64_t>> perProc;  // instructions, blocks
  void block(const BlockRun& b) override {
    if (b.inherited) return;
    auto& c = perProc[b.procedure];
    c.first += b.count;
    ++c.second;
  }
};

class ProcAnalyzer : public trace::Analyzer {
 public:
  explicit ProcAnalyzer(const std::string& to) : to_(to) {}
  const char* name() const override { return "procs"; }
  std::unique_ptr<Consumer> shard(const Shard&) override { return std::make_unique<ProcShard>(); }
  void merge(Shards& shards) override {
    for (auto& s : shards)
      if (s)
        for (const auto& [p, c] : static_cast<ProcShard&>(*s).perProc) {
          auto& t = total_[demangle(p)];
          t.first += c.first;
          t.second += c.second;
        }
  }
  void report(const trace::Summary& sum) override {
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> rows(total_.begin(), total_.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    uint64_t all = 0;
    for (const auto& r : rows) all += r.second.first;
    OutFile out(to_, false);
    std::FILE* f = out.get();
    std::fprintf(f, "%14s %7s %7s %12s  %s\n", "instructions", "share", "cum.", "blocks", "procedure");
    uint64_t cum = 0;
    for (const auto& [name, c] : rows) {
      cum += c.first;
      std::fprintf(f, "%14llu %6.2f%% %6.2f%% %12llu  %s\n", static_cast<unsigned long long>(c.first),
                   all ? 100.0 * double(c.first) / double(all) : 0.0, all ? 100.0 * double(cum) / double(all) : 0.0,
                   static_cast<unsigned long long>(c.second), name.c_str());
    }
    std::fprintf(f, "%14llu instructions in %zu procedure(s), %llu outside call(s)\n", static_cast<unsigned long long>(all),
                 rows.size(), static_cast<unsigned long long>(sum.outsideCalls));
    out.close();
  }

 private:
  std::string to_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> total_;  // by name: ties in a fixed order
};

// --- threads ------------------------------------------------------------------

struct ThreadShard : Consumer {
  int thread = 0;
  uint64_t blocks = 0, instructions = 0, inherited = 0, calls = 0, signals = 0;
  std::string problem;
  void threadBegin(int t) override { thread = t; }
  void block(const BlockRun& b) override {
    if (b.inherited) {
      inherited += b.count;
      return;
    }
    ++blocks;
    instructions += b.count;
  }
  void outsideCall(int, uint64_t, const std::string&) override { ++calls; }
  void signal(const SignalEvent& e) override { signals += !e.returned && !e.inherited; }
  void threadEnd(int, const std::string& p) override { problem = p; }
};

class ThreadAnalyzer : public trace::Analyzer {
 public:
  explicit ThreadAnalyzer(const std::string& to) : out_(to, false) {}
  const char* name() const override { return "threads"; }
  std::unique_ptr<Consumer> shard(const Shard&) override { return std::make_unique<ThreadShard>(); }
  void merge(Shards& shards) override {
    std::FILE* f = out_.get();
    std::fprintf(f, "%-8s %14s %12s %12s %8s %14s  %s\n", "thread", "instructions", "blocks", "outside-calls", "signals",
                 "inherited", "end");
    for (auto& s : shards) {
      if (!s) continue;
      const ThreadShard& t = static_cast<ThreadShard&>(*s);
      std::fprintf(f, "%-8d %14llu %12llu %12llu %8llu %14llu  %s\n", t.thread, static_cast<unsigned long long>(t.instructions),
                   static_cast<unsigned long long>(t.blocks), static_cast<unsigned long long>(t.calls),
                   static_cast<unsigned long long>(t.signals), static_cast<unsigned long long>(t.inherited),
                   t.problem.empty() ? "complete" : t.problem.c_str());
    }
  }
  void report(const trace::Summary&) override { out_.close(); }

 private:
  OutFile out_;
};

// --- summary and problems -------------------------------------------------------

class SummaryAnalyzer : public trace::Analyzer {
 public:
  explicit SummaryAnalyzer(const std::string& to) : to_(to) {}
  const char* name() const override { return "summary"; }
  std::unique_ptr<Consumer> shard(const Shard&) override { return std::make_unique<Consumer>(); }
  void merge(Shards&) override {}
  void report(const trace::Summary& s) override {
    OutFile out(to_, false);
    std::fprintf(out.get(), "%s\n", summaryLine(s).c_str());
    out.close();
  }

 private:
  std::string to_;
};

struct ProblemShard : Consumer {
  std::vector<std::pair<int, std::string>> problems;
  void threadEnd(int thread, const std::string& problem) override {
    if (!problem.empty()) problems.emplace_back(thread, problem);
  }
};

class ProblemAnalyzer : public trace::Analyzer {
 public:
  const char* name() const override { return "problems"; }
  std::unique_ptr<Consumer> shard(const Shard&) override { return std::make_unique<ProblemShard>(); }
  void merge(Shards& shards) override {
    for (auto& s : shards)
      if (s)
        for (const auto& [thread, problem] : static_cast<ProblemShard&>(*s).problems)
          std::fprintf(stderr, "atomx: thread %d: regenerated up to a problem: %s\n", thread, problem.c_str());
  }
  void report(const trace::Summary& s) override {
    for (const std::string& t : s.streamless) std::fprintf(stderr, "atomx: %s\n", t.c_str());
  }
};

}  // namespace

const std::vector<AnalyzerInfo>& analyzers() {
  static const std::vector<AnalyzerInfo> all = {
      {"text", "one line per executed instruction: TID PC (and TID call NAME, TID signal SIGNO PC)"},
      {"blocks", "one line per executed block: TID START COUNT PROCEDURE"},
      {"counts", "PC N lines by address: executions per instruction over every thread"},
      {"cachegrind", "Ir per function and source line in cachegrind's format (cg_annotate FILE); Dr and Dw too in a"
                     " trace with data"},
      {"binary", "the instruction stream as binary records, with data references in a trace with data"
                 " (include/atomx/trace_format.h, AtomxRegen*)"},
      {"procs", "instructions and blocks per procedure, most first, with shares"},
      {"threads", "per thread: instructions, blocks, outside calls, signals, and how its regeneration ended"},
      {"summary", "the totals line: threads, blocks, instructions, outside calls, stream bytes, ..."},
      {"problems", "a line on stderr per thread regenerated only up to a problem, and per thread of the event log that"
                   " left no stream (always run)"},
  };
  return all;
}

std::string summaryLine(const trace::Summary& s) {
  char b[512];
  std::snprintf(b, sizeof b,
                "threads %llu blocks %llu instructions %llu outside-calls %llu stream-bytes %llu incomplete-threads %llu"
                " witnesses %llu table-targets %llu",
                static_cast<unsigned long long>(s.threads), static_cast<unsigned long long>(s.blocks),
                static_cast<unsigned long long>(s.instructions), static_cast<unsigned long long>(s.outsideCalls),
                static_cast<unsigned long long>(s.streamBytes), static_cast<unsigned long long>(s.incompleteThreads),
                static_cast<unsigned long long>(s.witnesses), static_cast<unsigned long long>(s.tableTargets));
  // Only when there are any: the line's fields stay as they were otherwise.
  std::string line = b;
  if (s.dataRefs || s.recordedValues)
    line += " data-refs " + std::to_string(s.dataRefs) + " library-refs " + std::to_string(s.libraryRefs) +
            " recorded-values " + std::to_string(s.recordedValues) + " value-bytes " + std::to_string(s.valueBytes);
  if (s.evaluated) line += " evaluated " + std::to_string(s.evaluated);
  if (!s.streamless.empty()) line += " streamless-threads " + std::to_string(s.streamless.size());
  return line;
}

namespace {

UsageError unknownAnalyzer(const std::string& name) {
  std::string known;
  for (const AnalyzerInfo& a : analyzers()) known += (known.empty() ? "" : ", ") + std::string(a.name);
  return UsageError("unknown analyser '" + name + "' (known: " + known + ")");
}

}  // namespace

std::unique_ptr<trace::Analyzer> makeAnalyzer(const std::string& name, const std::string& to,
                                              const std::vector<std::string>& programs, const std::string& how, bool data) {
  if (name == "text") return std::make_unique<StreamAnalyzer<TextShardOf<false>>>("text", to, false);
  if (name == "blocks") return std::make_unique<StreamAnalyzer<TextShardOf<true>>>("blocks", to, false);
  if (name == "binary") return std::make_unique<BinaryAnalyzer>(to);
  if (name == "counts") return std::make_unique<CountAnalyzer>(to, "", programs, how, data);
  if (name == "cachegrind") return std::make_unique<CountAnalyzer>("", to, programs, how, data);
  if (name == "procs") return std::make_unique<ProcAnalyzer>(to);
  if (name == "threads") return std::make_unique<ThreadAnalyzer>(to);
  if (name == "summary") return std::make_unique<SummaryAnalyzer>(to);
  if (name == "problems") return std::make_unique<ProblemAnalyzer>();
  throw unknownAnalyzer(name);
}

std::unique_ptr<trace::Analyzer> makeCpuTextAnalyzer(const std::string& to) {
  return std::make_unique<StreamAnalyzer<TextShardOf<false, true>>>("text", to, false);
}

std::vector<std::pair<std::string, std::string>> parseAnalyzerList(const std::string& list) {
  std::vector<std::pair<std::string, std::string>> named;  // name, destination
  for (size_t from = 0; from <= list.size();) {
    const size_t comma = std::min(list.find(',', from), list.size());
    const std::string item = list.substr(from, comma - from);
    from = comma + 1;
    if (item.empty()) throw UsageError("an empty name in the analyser list '" + list + "'");
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string to = eq == std::string::npos ? "-" : item.substr(eq + 1);
    if (to.empty()) throw UsageError("analyser " + name + ": '=' needs a file name ('-': standard output)");
    if (std::none_of(analyzers().begin(), analyzers().end(), [&](const AnalyzerInfo& a) { return name == a.name; }))
      throw unknownAnalyzer(name);
    for (const auto& [n, t] : named)
      if (n == name) throw UsageError("analyser " + name + " is named twice");
    named.emplace_back(name, to);
  }
  // The trace outputs write as they go: two of them on standard output
  // would interleave.
  int streamsOnStdout = 0;
  for (const auto& [n, t] : named) streamsOnStdout += t == "-" && (n == "text" || n == "blocks" || n == "binary");
  if (streamsOnStdout > 1) throw UsageError("text, blocks and binary write as they go: give all but one a file (NAME=FILE)");
  return named;
}

std::vector<std::unique_ptr<trace::Analyzer>> makeAnalyzers(const std::string& list, const std::vector<std::string>& programs,
                                                            const std::string& how, bool data) {
  std::vector<std::unique_ptr<trace::Analyzer>> out;
  CountAnalyzer* counts = nullptr;
  std::string cachegrindTo;
  for (const auto& [n, t] : parseAnalyzerList(list)) {
    if (n == "cachegrind") {
      cachegrindTo = t;
      continue;
    }
    out.push_back(makeAnalyzer(n, t, programs, how, data));
    if (n == "counts") counts = static_cast<CountAnalyzer*>(out.back().get());
  }
  if (!cachegrindTo.empty() && counts) counts->alsoCachegrind(cachegrindTo);
  else if (!cachegrindTo.empty()) out.push_back(makeAnalyzer("cachegrind", cachegrindTo, programs, how, data));
  return out;
}

size_t countedProgram(size_t program) {
  static const bool one = [] {
    const char* v = std::getenv("ATOMX_TEST_COUNTS_ONE_PROGRAM");
    return v && *v == '1';
  }();
  return one ? 0 : program;
}

}  // namespace atomx::analyze
