#include "analyze/Cachesim.h"

#include <atomx/json.hpp>
#include <atomx/libc_model.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "analyze/Analyzers.h"
#include "debuginfo/LineTable.h"
#include "support/Error.h"

namespace atomx::analyze {

namespace cs = atomx::cachesim;
namespace report = atomx::cachesim::report;
using report::Row;
using trace::BlockRun;
using trace::DataRef;

namespace {

// A hierarchy cut where its first shared level begins: `prefix`, the levels
// before it (each thread's own); `tail`, that level and the rest (the
// shared ones in a cachesim::Shared, any later private one per thread).
// iCut/dCut: the positions in the instruction/data path where the tail
// begins (the path's length when it never reaches a shared level).
struct Split {
  cs::Hierarchy whole, prefix, tail;
  int iCut = 0, dCut = 0;
  bool iTail = false, dTail = false;
};

Split split(const cs::Hierarchy& h) {
  Split s;
  s.whole = h;
  int first = int(h.levels.size());
  for (int k = 0; k < int(h.levels.size()); ++k)
    if (h.levels[size_t(k)].shared) {
      first = k;
      break;
    }
  s.prefix.name = s.tail.name = h.name;
  s.prefix.contextSwitch = h.contextSwitch;
  for (int k = 0; k < int(h.levels.size()); ++k) {
    cs::Level l = h.levels[size_t(k)];
    if (k < first) l.shared = false, s.prefix.levels.push_back(l);
    else s.tail.levels.push_back(l);
  }
  auto cut = [&](const std::vector<int>& path, std::vector<int>& pre, std::vector<int>& tail) {
    for (int k : path) (k < first ? pre.push_back(k) : tail.push_back(k - first));
    return int(pre.size());
  };
  s.iCut = cut(h.iPath, s.prefix.iPath, s.tail.iPath);
  s.dCut = cut(h.dPath, s.prefix.dPath, s.tail.dPath);
  s.iTail = !s.tail.iPath.empty(), s.dTail = !s.tail.dPath.empty();
  return s;
}

// Each thread's copy of a tail's private levels, over the analyser's Shared.
struct Tail {
  std::vector<uint64_t> memory;
  cs::Simulator sim;
  Tail(const cs::Hierarchy& tail, cs::Shared* shared)
      : memory(cs::Simulator::words(tail, false, true) + 1), sim(tail, memory.data(), false, shared) {}
};

// A reference that reached the tail of a shard that is not the first: kept
// until the merge replays it (or a flush of the tail: the context switch).
struct Deferred {
  uint64_t addr;
  uint64_t* row;  // where its misses count
  uint32_t size;
  uint8_t type;   // kFetch, kRead, kWrite, kFlush
};
enum : uint8_t { kFetch, kRead, kWrite, kFlush };

struct Hooks {
  bool firstLineOnly = false;  // ATOMX_TEST_CACHESIM_FETCH=first-line
  bool lockedOnce = false;     // ATOMX_TEST_CACHESIM_DATA=locked-once
  Hooks() {
    const char* f = std::getenv("ATOMX_TEST_CACHESIM_FETCH");
    const char* d = std::getenv("ATOMX_TEST_CACHESIM_DATA");
    firstLineOnly = f && std::strcmp(f, "first-line") == 0;
    lockedOnce = d && std::strcmp(d, "locked-once") == 0;
  }
};

}  // namespace

struct ATOMX_CACHESIM_HIDDEN CachesimAnalyzer::Impl {
  std::vector<Split> splits;
  // Per hierarchy: the shared levels' state and the first shard's tail.
  std::vector<std::vector<uint64_t>> sharedMemory;
  std::vector<std::unique_ptr<cs::Shared>> shared;
  std::vector<std::unique_ptr<Tail>> firstTail;
  std::vector<CachesimCounts> counts;
  Hooks hooks;
  bool libc = true;  // library calls simulated
};

namespace {

// One hierarchy's state in one shard.
class HierarchyShard {
 public:
  HierarchyShard(const Split& s, Tail* direct, cs::Shared* shared, const Hooks& hooks)
      : split_(s), hooks_(hooks), ev_(report::Events::of(s.whole)), direct_(direct), shared_(shared) {
    memory_.assign(cs::Simulator::words(s.prefix, false) + 1, 0);
    sim_ = cs::Simulator(s.prefix, nullptr, false);
    sim_.place(memory_.data());  // (a copied Simulator points into its original until placed)
    sink_.assign(ev_.size(), 0);
    libc_.assign(size_t(report::kLibcFunctions), Row(ev_.size(), 0));
  }

  void setBias(uint64_t bias) {
    bias_ = bias;
    settle();
    plans_.clear();  // their fetch addresses were at the old bias
    recent_.fill({});
  }

  void block(const BlockRun& b) {
    Plan& p = plan(b);
    const bool counting = !b.inherited;
    auto row = [&](size_t k) { return counting ? p.rows[k] : sink_.data(); };
    if (split_.whole.iPath.size()) {
      uint64_t firstMisses = 0;
      for (const Fetch& f : p.fetches) {
        unsigned missed = sim_.fetch(f.addr, f.size);
        uint64_t* r = row(f.k);
        if (int(missed) == split_.iCut && split_.iTail) missed += tail(kFetch, f.addr, f.size, r);
        for (unsigned k = 0; k < missed; ++k) ++r[ev_.imiss(int(k))];
        firstMisses += missed != 0;
      }
      if (sim_.switching() && sim_.tick(b.count, b.count, firstMisses)) flushTail();
    }
    p.runs += counting;  // its instructions' Ir, added to their rows by settle()
    // Without a data level the references are still counted (Dr, Dw), as
    // the online tool counts them in every configuration (data(), below).
    for (size_t k = 0; k < b.refCount; ++k) {
      const DataRef& r = b.refs[k];
      reference(r, r.insn < b.count ? row(r.insn) : sink_.data());
    }
  }

  void library(const trace::LibraryCall& c) {
    if (split_.whole.dPath.empty()) return;
    const libc::Function* f = libc::find(c.function);
    uint64_t* r = f && !c.inherited ? libc_[size_t(f - libc::kFunctions)].data() : sink_.data();
    for (size_t k = 0; k < c.refCount; ++k) reference(c.refs[k], r);
  }

  // The merge: the references this shard kept for the tail, through
  // `thread`'s tail, in order.
  void replay(Tail& thread) {
    for (const Deferred& d : deferred_) {
      if (d.type == kFlush) {
        thread.sim.flush();
        continue;
      }
      const unsigned missed = d.type == kFetch ? thread.sim.fetch(d.addr, d.size) : thread.sim.data(d.addr, d.size, d.type == kWrite);
      const int from = d.type == kFetch ? split_.iCut : split_.dCut;
      for (unsigned k = 0; k < missed; ++k) ++d.row[d.type == kFetch ? ev_.imiss(from + int(k)) : d.type == kWrite ? ev_.dwmiss(from + int(k)) : ev_.drmiss(from + int(k))];
    }
    deferred_.clear();
  }
  bool deferredAny() const { return !deferred_.empty(); }

  // `cpu`: the CPU whose private levels these are (Consumer::slice); a known
  // one gets the sum of this shard's rows in CachesimCounts::perCpu too.
  void addTo(CachesimCounts& c, int cpu) {
    settle();
    Row* total = nullptr;
    if (cpu >= 0) {
      Row& t = c.perCpu[cpu];
      if (t.empty()) t.assign(ev_.size(), 0);
      total = &t;
    }
    for (auto& [pc, cost] : perPc_) {
      if (total) report::add(*total, cost.second.data());
      auto [it, fresh] = c.perPc.try_emplace(pc, cost.first, Row());
      if (fresh) it->second.second = std::move(cost.second);
      else report::add(it->second.second, cost.second.data());
    }
    for (size_t f = 0; f < libc_.size(); ++f) report::add(c.libc[f], libc_[f].data());
    c.switches += sim_.switches();
  }

 private:
  struct Fetch {
    uint64_t addr;
    uint32_t size;
    uint32_t k;  // its instruction in the run
  };
  struct Plan {
    const trace::Instruction* insns;
    size_t count;
    uint64_t runs = 0;  // counted runs whose Ir are not in `rows` yet
    std::vector<Fetch> fetches;
    std::vector<uint64_t*> rows;  // per instruction: its pc's events
  };

  // The run's fetches and rows, made the first time a run of these
  // instructions is met.
  // A direct-mapped table of the plans met last in front of the map (a
  // map lookup per block run was half of the simulator's time).
  struct Recent {
    const trace::Instruction* insns = nullptr;
    size_t count = 0;
    Plan* plan = nullptr;
  };
  static constexpr size_t kRecent = 4096;
  static size_t recentSlot(const trace::Instruction* insns, size_t count) {
    return ((reinterpret_cast<uintptr_t>(insns) >> 4) ^ (count << 7)) & (kRecent - 1);
  }
  Plan& plan(const BlockRun& b) {
    Recent& r = recent_[recentSlot(b.insns, b.count)];
    if (r.insns == b.insns && r.count == b.count) return *r.plan;
    Plan& p = mapPlan(b);
    r = {b.insns, b.count, &p};
    return p;
  }
  // Every plan's counted runs added to its instructions' Ir.
  void settle() {
    for (auto& [key, p] : plans_) settle(p);
  }
  void settle(Plan& p) {
    if (p.runs)
      for (uint64_t* r : p.rows) r[ev_.ir()] += p.runs;
    p.runs = 0;
  }
  Plan& mapPlan(const BlockRun& b) {
    const uint64_t key = uint64_t(reinterpret_cast<uintptr_t>(b.insns)) * 31 + b.count;
    auto [it, fresh] = plans_.try_emplace(key);
    Plan& p = it->second;
    if (!fresh && p.insns == b.insns && p.count == b.count) return p;
    if (!fresh) {  // another run's plan with the same key goes
      settle(p);
      Recent& old = recent_[recentSlot(p.insns, p.count)];
      if (old.plan == &p) old = {};
    }
    p = Plan{b.insns, b.count, 0, {}, {}};
    for (size_t k = 0; k < b.count; ++k) {
      auto [c, added] = perPc_.try_emplace(pcKey(countedProgram(b.program), b.insns[k].pc), b.procedure, Row());
      if (added) c->second.second.assign(ev_.size(), 0);
      p.rows.push_back(c->second.second.data());
    }
    // The rest of a block a signal interrupted is not fetched again (the
    // online tool fetches a block once, at its start).
    if (!split_.whole.iPath.empty() && !b.continued)
      cs::blockFetches(
          b.count, sim_.instructionLineBits(),
          [&](size_t k) { return std::pair<uint64_t, uint32_t>(b.insns[k].pc + bias_, b.insns[k].length); },
          [&](uint64_t addr, uint32_t size, size_t k) {
            if (hooks_.firstLineOnly) size = std::min<uint32_t>(size, uint32_t(((addr | ((1ull << sim_.instructionLineBits()) - 1)) + 1) - addr));
            p.fetches.push_back({addr, size, uint32_t(k)});
          });
    return p;
  }

  // One data reference in Valgrind's model.
  void reference(const DataRef& r, uint64_t* row) {
    if (r.kind == trace::kWrite) return data(r.address, r.size, true, row);
    data(r.address, r.size, false, row);
    if (r.kind == trace::kModify && r.locked && !hooks_.lockedOnce) data(r.address, r.size, false, row);
  }
  void data(uint64_t addr, uint32_t size, bool write, uint64_t* row) {
    ++row[write ? ev_.dw() : ev_.dr()];
    if (split_.whole.dPath.empty()) return;  // counted, with nothing to simulate it in
    unsigned missed = sim_.data(addr, size, write);
    if (int(missed) == split_.dCut && split_.dTail) missed += tail(write ? kWrite : kRead, addr, size, row);
    for (unsigned k = 0; k < missed; ++k) ++row[write ? ev_.dwmiss(int(k)) : ev_.drmiss(int(k))];
    if (sim_.switching() && sim_.tick(0, 1, missed != 0)) flushTail();
  }

  // A reference that missed every level before the tail: the first shard
  // simulates it now (its misses in the tail, returned), the others keep it
  // for the merge.
  unsigned tail(uint8_t type, uint64_t addr, uint32_t size, uint64_t* row) {
    if (direct_) return type == kFetch ? direct_->sim.fetch(addr, size) : direct_->sim.data(addr, size, type == kWrite);
    deferred_.push_back({addr, row, size, type});
    return 0;
  }
  void flushTail() {
    if (!split_.iTail && !split_.dTail) return;
    if (direct_) direct_->sim.flush();
    else deferred_.push_back({0, nullptr, 0, kFlush});
  }

  const Split& split_;
  const Hooks& hooks_;
  report::Events ev_;
  Tail* direct_;
  cs::Shared* shared_;
  std::vector<uint64_t> memory_;
  cs::Simulator sim_;
  uint64_t bias_ = 0;
  std::unordered_map<uint64_t, std::pair<const char*, Row>> perPc_;
  std::unordered_map<uint64_t, Plan> plans_;
  std::array<Recent, kRecent> recent_{};
  std::vector<Row> libc_;
  Row sink_;  // what inherited blocks (the parent's, before a fork) would count: simulated, not counted
  std::vector<Deferred> deferred_;

 public:
  cs::Shared* shared() const { return shared_; }
};

struct CachesimShard : trace::Consumer {
  // Per CPU the events ran on (Consumer::slice: known in merged mode with
  // the schedule log; else -1, one set): each hierarchy's state, whose
  // private levels (Split::prefix) are that CPU's; every CPU's over the same
  // tail (the shared levels), which sees their references in the order
  // they come.
  struct Cpu {
    std::vector<std::unique_ptr<HierarchyShard>> h;
    int biased = 0;  // the thread whose bias h has
  };
  std::map<int, Cpu> cpus;
  std::function<Cpu()> make;  // a CPU's set, the first time it is seen
  bool libc = true;
  // Each thread's load bias: a merged shard has the threads of several
  // processes, whose biases may differ (TraceReader::analyzeMerged).
  std::unordered_map<int, uint64_t> biases;
  Cpu* now = nullptr;  // the set of the current slice's CPU
  Cpu& current() { return now ? *now : (slice(0, -1), *now); }
  void slice(int, int cpu) override {
    auto it = cpus.find(cpu);
    if (it == cpus.end()) it = cpus.emplace(cpu, make()).first;
    now = &it->second;
  }
  void loadBias(int thread, uint64_t bias) override { biases[thread] = bias; }
  void block(const BlockRun& b) override {
    Cpu& c = current();
    if (b.thread != c.biased) {
      c.biased = b.thread;
      for (auto& s : c.h) s->setBias(biases[b.thread]);
    }
    for (auto& s : c.h) s->block(b);
  }
  void libraryCall(const trace::LibraryCall& c) override {
    if (!libc) return;
    for (auto& s : current().h) s->library(c);
  }
};

}  // namespace

CachesimAnalyzer::CachesimAnalyzer(std::vector<cs::Hierarchy> hierarchies, bool libc) : impl_(std::make_unique<Impl>()) {
  impl_->libc = libc;
  for (const cs::Hierarchy& h : hierarchies) {
    Split s = split(h);
    const size_t words = cs::Shared::words(s.tail);
    impl_->sharedMemory.emplace_back(words + 1, 0);
    impl_->shared.push_back(std::make_unique<cs::Shared>(s.tail, impl_->sharedMemory.back().data()));
    impl_->firstTail.push_back(std::make_unique<Tail>(s.tail, impl_->shared.back().get()));
    CachesimCounts c;
    c.ev = report::Events::of(h);
    c.libc.assign(size_t(report::kLibcFunctions), Row(c.ev.size(), 0));
    impl_->counts.push_back(std::move(c));
    impl_->splits.push_back(std::move(s));
  }
}
CachesimAnalyzer::~CachesimAnalyzer() = default;

std::unique_ptr<trace::Consumer> CachesimAnalyzer::shard(const trace::Shard& shard) {
  auto s = std::make_unique<CachesimShard>();
  s->libc = impl_->libc;
  s->make = [impl = impl_.get(), first = shard.index == 0] {
    CachesimShard::Cpu c;
    for (size_t k = 0; k < impl->splits.size(); ++k)
      c.h.push_back(std::make_unique<HierarchyShard>(impl->splits[k], first ? impl->firstTail[k].get() : nullptr,
                                                     impl->shared[k].get(), impl->hooks));
    return c;
  };
  return s;
}

void CachesimAnalyzer::merge(std::vector<std::unique_ptr<trace::Consumer>>& shards) {
  for (auto& c : shards) {
    if (!c) continue;
    auto& s = static_cast<CachesimShard&>(*c);
    for (auto& [cpu, set] : s.cpus)
      for (size_t k = 0; k < set.h.size(); ++k) {
        HierarchyShard& h = *set.h[k];
        if (h.deferredAny()) {  // this thread's tail: its private levels fresh, the shared ones as the threads before left them
          Tail thread(impl_->splits[k].tail, impl_->shared[k].get());
          h.replay(thread);
        }
        h.addTo(impl_->counts[k], cpu);
      }
    c.reset();
  }
}

const std::vector<CachesimCounts>& CachesimAnalyzer::counts() const { return impl_->counts; }

// --- the report ---------------------------------------------------------------

namespace {

// Text written to a string through a FILE*.
class StringFile {
 public:
  StringFile() : f_(open_memstream(&data_, &size_)) {
    if (!f_) throw Error(std::string("cannot make an in-memory file: ") + std::strerror(errno));
  }
  ~StringFile() {
    if (f_) std::fclose(f_);
    std::free(data_);
  }
  std::FILE* get() const { return f_; }
  std::string take() {
    std::fclose(f_);
    f_ = nullptr;
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* f_;
};

// What the writers need from the programs: procedures by number (the
// first program's order, then as met), each pc's source line in its own
// program.  In a workload's trace of several programs, a procedure of
// program K > 0 is named `PROGRAM:NAME` (PROGRAM its file's name), so that
// two programs' `main` stay apart.
struct ProgramNames {
  std::vector<std::string> procs;
  std::vector<uint64_t> procPc;
  std::map<std::pair<size_t, std::string>, int> procIndex;
  std::vector<std::string> programs;              // TraceReader::programs()
  std::vector<std::unique_ptr<debuginfo::LineTable>> lines;  // per program, read when first needed
  explicit ProgramNames(const trace::TraceReader& trace) : programs(trace.programs()) {
    lines.resize(programs.size());
    for (const trace::TraceReader::ProcedureSize& p : trace.procedures())
      if (procIndex.try_emplace({0, p.name}, int(procs.size())).second) procs.push_back(p.name), procPc.push_back(p.start);
  }
  int proc(size_t program, const char* name) {
    auto [it, fresh] = procIndex.try_emplace({program, name}, int(procs.size()));
    if (fresh) {
      procs.push_back(program ? std::filesystem::path(programs.at(program)).filename().string() + ":" + name : name);
      procPc.push_back(0);
    }
    return it->second;
  }
  debuginfo::SourceLine line(size_t program, uint64_t pc) {
    std::unique_ptr<debuginfo::LineTable>& t = lines.at(program);
    if (!t) t = std::make_unique<debuginfo::LineTable>(programs[program]);
    return t->lookup(pc);
  }
};

// The configuration's table; `files`: the source files it names, numbered
// in the order of their names (so that a configuration's bytes depend on
// its counts alone, whichever process computed it).
report::Table tabulate(const CachesimCounts& c, ProgramNames& names, std::vector<std::string>& files) {
  std::vector<uint64_t> pcs;
  for (const auto& [pc, cost] : c.perPc) pcs.push_back(pc);
  std::sort(pcs.begin(), pcs.end());
  std::vector<int> procs;
  std::vector<debuginfo::SourceLine> where;
  std::map<std::string, int> fileIndex;
  for (uint64_t key : pcs) {
    procs.push_back(names.proc(keyProgram(key), c.perPc.at(key).first));
    where.push_back(names.line(keyProgram(key), keyPc(key)));
    if (where.back().file) fileIndex.try_emplace(*where.back().file, 0);
  }
  files.clear();
  for (auto& [name, index] : fileIndex) index = int(files.size()), files.push_back(name);
  report::Table t;
  t.reset(c.ev, names.procs.size());
  for (size_t k = 0; k < pcs.size(); ++k) {
    const Row& r = c.perPc.at(pcs[k]).second;
    report::add(t.total, r.data());
    report::add(t.procs[size_t(procs[k])], r.data());
    const int file = where[k].file ? fileIndex.at(*where[k].file) : -1;
    Row& l = t.lines[{procs[k], file, file < 0 ? 0 : int(where[k].line)}];
    if (l.empty()) l.assign(c.ev.size(), 0);
    report::add(l, r.data());
  }
  for (size_t f = 0; f < c.libc.size(); ++f) {
    report::add(t.libc[f], c.libc[f].data());
    report::add(t.libcTotal, c.libc[f].data());
  }
  t.switches = c.switches;
  t.cpus = c.perCpu;
  return t;
}

CachesimOutput output(const cs::Config& config, const cs::Hierarchy& h, const CachesimCounts& c, ProgramNames& names,
                      const std::string& command) {
  std::vector<std::string> files;
  const report::Table t = tabulate(c, names, files);
  const report::Names n{names.procs, files, names.procPc};
  CachesimOutput o;
  bool libc = false;
  for (const Row& r : t.libc) libc |= r[t.ev.dr()] || r[t.ev.dw()];
  {
    StringFile f;
    report::writeText(f.get(), h, t, n, libc, 10);
    o.text = f.take();
  }
  {
    StringFile f;
    JsonWriter j(f.get());
    report::writeJson(j, h, t, n);
    o.json = f.take();
    while (!o.json.empty() && o.json.back() == '\n') o.json.pop_back();
  }
  {
    StringFile f;
    report::writeCg(f.get(), h, t, n, config.source, command);
    o.cg = f.take();
  }
  return o;
}

size_t streamCount(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    n += name.rfind("thread.", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".axt") == 0;
  }
  return n;
}

}  // namespace

namespace {

// A sweep's groups of configurations over one regeneration: the
// regenerating thread copies the events the simulator reads (load bias,
// block runs with their data references, library calls) in chunks and
// hands them to one thread per group, which simulates its configurations
// from them in order (the simulators' state per shard is each group's own,
// so the results are those of a regeneration per group).  Regenerating
// once keeps the sweep from paying the regeneration per group, which made
// it no faster on more cores than on one; the regenerating thread
// simulates nothing itself, so that it is never the group that waits.
struct Chunk {
  enum Kind : uint8_t { kBias, kBlock, kLibrary };
  // One event in 40 bytes (a copy of a BlockRun and a LibraryCall side by
  // side was three times that, and the copying showed in the profile).
  struct Event {
    const void* what;       // kBlock: the instructions; kLibrary: the function's name
    const char* procedure;  // kBlock
    uint64_t value;         // kBias: the bias; kBlock: the start; kLibrary: the call site
    uint32_t count;         // kBlock: instructions
    uint32_t refs;          // its references, the next ones in `refs`
    int32_t thread;
    Kind kind;
    uint8_t flags;     // kInherited, kContinued
    uint16_t program;  // kBlock, kLibrary: BlockRun::program
  };
  enum : uint8_t { kInherited = 1, kContinued = 2 };
  std::vector<Event> events;
  std::vector<DataRef> refs;
};

// One producer, `readers` threads that each see every chunk, in order; at
// most kDepth chunks held.
class Relay {
 public:
  static constexpr size_t kDepth = 4;
  explicit Relay(size_t readers) : next_(readers, 0) {}
  void push(std::shared_ptr<const Chunk> c) {
    std::unique_lock<std::mutex> lock(m_);
    room_.wait(lock, [&] { return chunks_.size() < kDepth; });
    chunks_.push_back(std::move(c));
    ready_.notify_all();
  }
  void close() {
    const std::lock_guard<std::mutex> lock(m_);
    closed_ = true;
    ready_.notify_all();
  }
  // Reader r's next chunk; null once the producer closed and all are read.
  std::shared_ptr<const Chunk> take(size_t r) {
    std::unique_lock<std::mutex> lock(m_);
    ready_.wait(lock, [&] { return next_[r] < first_ + chunks_.size() || closed_; });
    if (next_[r] == first_ + chunks_.size()) return nullptr;
    std::shared_ptr<const Chunk> c = chunks_[size_t(next_[r]++ - first_)];
    // Chunks every reader has passed go.
    const uint64_t low = *std::min_element(next_.begin(), next_.end());
    for (; first_ < low; ++first_) chunks_.pop_front();
    room_.notify_all();
    return c;
  }

 private:
  std::mutex m_;
  std::condition_variable ready_, room_;
  std::deque<std::shared_ptr<const Chunk>> chunks_;
  uint64_t first_ = 0;  // chunks_.front()'s number
  std::vector<uint64_t> next_;
  bool closed_ = false;
};

// One shard of the fan-out: each group's consumer on a thread of its own
// for the length of the shard (threadBegin to threadEnd, which waits for
// them).  ATOMX_TEST_CACHESIM_FANOUT=drop-ref (the must-fail twin of the
// test that a sweep's bytes do not depend on -j, over a data trace): the
// copy of a block run that every group but the first receives lacks its
// last data reference.
class FanoutShard : public trace::Consumer {
 public:
  explicit FanoutShard(std::vector<std::unique_ptr<trace::Consumer>> groups) : groups_(std::move(groups)) {}
  ~FanoutShard() override { finish(false); }

  void threadBegin(int t) override {
    for (auto& g : groups_) g->threadBegin(t);
    relay_ = std::make_unique<Relay>(groups_.size());
    fresh();
    for (size_t g = 0; g < groups_.size(); ++g) readers_.emplace_back([this, g] { read(g); });
  }
  void loadBias(int t, uint64_t bias) override { add({nullptr, nullptr, bias, 0, 0, t, Chunk::kBias, 0, 0}); }
  void block(const BlockRun& b) override {
    const uint8_t flags = uint8_t((b.inherited ? Chunk::kInherited : 0) | (b.continued ? Chunk::kContinued : 0));
    chunk_->refs.insert(chunk_->refs.end(), b.refs, b.refs + b.refCount);
    add({b.insns, b.procedure, b.start, uint32_t(b.count), uint32_t(b.refCount), b.thread, Chunk::kBlock, flags,
         uint16_t(b.program)});
  }
  void libraryCall(const trace::LibraryCall& c) override {
    chunk_->refs.insert(chunk_->refs.end(), c.refs, c.refs + c.refCount);
    add({c.function, nullptr, c.callSite, 0, uint32_t(c.refCount), c.thread, Chunk::kLibrary,
         uint8_t(c.inherited ? Chunk::kInherited : 0), uint16_t(c.program)});
  }
  void threadEnd(int t, const std::string& problem) override {
    finish();
    for (auto& g : groups_) g->threadEnd(t, problem);
  }
  std::vector<std::unique_ptr<trace::Consumer>>& groups() { return groups_; }

 private:
  static constexpr size_t kEvents = 16384, kRefs = 32768;
  void fresh() {
    chunk_ = std::make_shared<Chunk>();
    chunk_->events.reserve(kEvents);
    chunk_->refs.reserve(kRefs + 1024);
  }
  void add(const Chunk::Event& e) {
    chunk_->events.push_back(e);
    if (chunk_->events.size() >= kEvents || chunk_->refs.size() >= kRefs) send();
  }
  void send() {
    if (!chunk_ || chunk_->events.empty()) return;
    relay_->push(std::move(chunk_));
    fresh();
  }
  // The rest sent, the readers done (the events they consume point into
  // the regenerating thread's instruction lists, which outlive the shard).
  void finish(bool rethrow = true) {
    if (!relay_) return;
    send();
    relay_->close();
    for (std::thread& t : readers_) t.join();
    readers_.clear();
    relay_.reset();
    if (error_ && rethrow) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  void read(size_t g) {
    try {
      trace::Consumer& c = *groups_[g];
      const bool drop = dropRef_ && g > 0;
      while (std::shared_ptr<const Chunk> chunk = relay_->take(g)) {
        const DataRef* refs = chunk->refs.data();
        for (const Chunk::Event& e : chunk->events) {
          if (e.kind == Chunk::kBias) {
            c.loadBias(e.thread, e.value);
          } else if (e.kind == Chunk::kBlock) {
            BlockRun b{e.thread, e.value, static_cast<const trace::Instruction*>(e.what), e.count, e.procedure,
                       bool(e.flags & Chunk::kInherited), bool(e.flags & Chunk::kContinued), refs,
                       e.refs - (drop && e.refs)};
            b.program = e.program;
            c.block(b);
          } else {
            c.libraryCall({e.thread, e.value, static_cast<const char*>(e.what), refs, e.refs,
                           bool(e.flags & Chunk::kInherited), e.program});
          }
          refs += e.refs;
        }
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failed_);
      if (!error_) error_ = std::current_exception();
      while (relay_->take(g)) {}  // let the producer go on
    }
  }

  std::vector<std::unique_ptr<trace::Consumer>> groups_;
  const bool dropRef_ = [] {
    const char* v = std::getenv("ATOMX_TEST_CACHESIM_FANOUT");
    return v && std::strcmp(v, "drop-ref") == 0;
  }();
  std::unique_ptr<Relay> relay_;
  std::shared_ptr<Chunk> chunk_;
  std::vector<std::thread> readers_;
  std::mutex failed_;
  std::exception_ptr error_;
};

// The groups' analysers as one: a shard of each, fanned out.
class FanoutAnalyzer : public trace::Analyzer {
 public:
  explicit FanoutAnalyzer(std::vector<trace::Analyzer*> groups) : groups_(std::move(groups)) {}
  const char* name() const override { return "cachesim"; }
  std::unique_ptr<trace::Consumer> shard(const trace::Shard& shard) override {
    std::vector<std::unique_ptr<trace::Consumer>> to;
    for (trace::Analyzer* a : groups_) to.push_back(a->shard(shard));
    return std::make_unique<FanoutShard>(std::move(to));
  }
  void merge(std::vector<std::unique_ptr<trace::Consumer>>& shards) override {
    for (size_t g = 0; g < groups_.size(); ++g) {
      std::vector<std::unique_ptr<trace::Consumer>> mine;
      for (auto& s : shards) mine.push_back(s ? std::move(static_cast<FanoutShard&>(*s).groups()[g]) : nullptr);
      groups_[g]->merge(mine);
    }
  }

 private:
  std::vector<trace::Analyzer*> groups_;
};

}  // namespace

bool simulateConfigurations(const trace::TraceReader& trace, const cs::Config& config, const std::vector<size_t>& which,
                            const CachesimRun& run, trace::Progress* progress, std::vector<CachesimOutput>& outputs,
                            uint64_t& threads) {
  const size_t n = which.size();
  outputs.assign(n, {});
  threads = 0;
  if (!n) return true;
  const unsigned cores = run.jobs ? run.jobs : std::max(1u, std::thread::hardware_concurrency());
  const size_t streams = std::max<size_t>(1, streamCount(trace.dir()));
  // Groups of configurations simulated at once over one regeneration (a
  // FanoutAnalyzer): as many as the cores the threads alone leave idle.
  const size_t groups = run.sweep && !run.merged ? std::clamp<size_t>(cores / streams, 1, n) : 1;
  const unsigned jobsPer = std::max(1u, unsigned(cores / groups));
  std::vector<std::unique_ptr<CachesimAnalyzer>> analyzers(groups);
  std::vector<std::vector<size_t>> members(groups);  // positions in `which`
  for (size_t k = 0; k < n; ++k) members[k % groups].push_back(k);
  std::vector<trace::Analyzer*> parts;
  for (size_t g = 0; g < groups; ++g) {
    std::vector<cs::Hierarchy> hs;
    for (size_t k : members[g]) hs.push_back(config.hierarchies[which[k]]);
    analyzers[g] = std::make_unique<CachesimAnalyzer>(std::move(hs), run.libc);
    parts.push_back(analyzers[g].get());
  }
  FanoutAnalyzer fanout(parts);
  std::unique_ptr<trace::Analyzer> problems = makeAnalyzer("problems", "-", {trace.program()}, run.command);
  const trace::Summary sum =
      run.merged ? trace.analyzeMerged({parts[0], problems.get()})
                 : trace.analyze({groups > 1 ? static_cast<trace::Analyzer*>(&fanout) : parts[0], problems.get()}, jobsPer, progress);
  ProgramNames names(trace);
  // ATOMX_TEST_CACHESIM_ORDER=scheduled (the must-fail twin of the test
  // that a sweep's bytes do not depend on -j or the ranks): the outputs
  // one group after another instead of in the file's order.
  const char* order = std::getenv("ATOMX_TEST_CACHESIM_ORDER");
  const bool scheduled = order && std::strcmp(order, "scheduled") == 0;
  size_t at = 0;
  for (size_t g = 0; g < groups; ++g)
    for (size_t m = 0; m < members[g].size(); ++m, ++at) {
      const size_t k = members[g][m];
      outputs[scheduled ? at : k] = output(config, config.hierarchies[which[k]], analyzers[g]->counts()[m], names, run.command);
    }
  threads = sum.threads;
  return sum.incompleteThreads == 0;
}

namespace {

void writeFile(const std::string& path, const std::string& bytes) {
  std::FILE* f = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
  const bool bad = std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fflush(f) != 0;
  if ((f != stdout && std::fclose(f) != 0) || bad)
    throw Error((path == "-" ? std::string("standard output") : path) + ": cannot write: " + std::strerror(errno));
}

std::string jsonString(const std::string& s) {
  std::string out;
  JsonWriter::quote(s.c_str(), [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

}  // namespace

void writeCachesim(const trace::TraceReader& trace, const cs::Config& config, const CachesimRun& run, uint64_t threads,
                   const std::vector<CachesimOutput>& outputs, const CachesimFiles& files) {
  const size_t n = config.hierarchies.size();
  char head[1024];
  std::snprintf(head, sizeof head,
                "atomx cachesim: %zu configuration%s from %s over the trace %s (%llu thread%s, %s)\n", n, n == 1 ? "" : "s",
                config.source.c_str(), trace.dir().c_str(), (unsigned long long)threads, threads == 1 ? "" : "s",
                run.merged ? "merged in the trace's schedule order (--merged): each CPU the schedule log names its own"
                             " private levels, the shared ones shared by all; without the log one CPU"
                           : "each with its own first levels; a shared level sees the threads one after another");
  std::string text = head;
  for (const CachesimOutput& o : outputs) text += o.text;
  if (!files.cgTo.empty())
    text += "\nby source line: cg_annotate " + files.cgTo + (run.sweep ? ".NAME.cg" : "") + "\n";
  writeFile(files.textTo, text);
  if (!files.jsonTo.empty()) {
    std::string j = "{\"tool\":\"atomx cachesim\",\"trace\":" + jsonString(trace.dir()) + ",\"program\":" +
                    jsonString(trace.program()) + ",\"config\":" + jsonString(config.source) +
                    ",\"threads\":" + std::to_string(threads) + ",\"configurations\":[";
    for (size_t k = 0; k < outputs.size(); ++k) j += (k ? "," : "") + outputs[k].json;
    writeFile(files.jsonTo, j + "]}\n");
  }
  if (!files.cgTo.empty())
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string name = report::plainName(config.hierarchies[k].name);
      std::string path;
      if (run.sweep) path = files.cgTo + "." + name + ".cg";
      else if (k == 0) path = files.cgTo;
      else {
        const std::string& f = files.cgTo;
        const bool cg = f.size() > 3 && f.compare(f.size() - 3, 3, ".cg") == 0;
        path = (cg ? f.substr(0, f.size() - 3) : f) + "." + name + ".cg";
      }
      writeFile(path, outputs[k].cg);
    }
}

int runCachesim(const std::string& traceDir, const std::string& programFile, const CachesimRun& run,
                const CachesimFiles& files, const CachesimProcesses& processes, trace::Progress* progress) {
  cs::Config config;
  try {
    config = cs::readConfig(run.configFile);
  } catch (const cs::ConfigError& e) {
    throw Error(e.what());
  }
  const trace::TraceReader trace(traceDir, programFile);
  std::vector<size_t> mine;
  for (size_t k = size_t(processes.rank); k < config.hierarchies.size(); k += size_t(processes.size)) mine.push_back(k);
  std::vector<CachesimOutput> outputs;
  uint64_t threads = 0;
  bool complete = simulateConfigurations(trace, config, mine, run, processes.rank == 0 ? progress : nullptr, outputs, threads);
  if (processes.size > 1) {
    outputs = processes.gather(outputs, config.hierarchies.size());
    complete = processes.agree(complete);
  }
  if (processes.rank == 0) writeCachesim(trace, config, run, threads, outputs, files);
  return complete ? 0 : 1;
}

}  // namespace atomx::analyze
