// The offline cache simulator (`atomx cachesim`, src/analyze/Cachesim.cpp)
// against a naive one written here from docs/cachesim.md: hand-made event
// sequences of two threads (block runs with instructions that straddle
// lines, data references of every kind, locked read-modify-writes, libc's
// modelled references, a parent's inherited run, a load bias) fed to the
// analyser's shards, and the same events to a list-per-set, true-LRU model
// whose first levels are each thread's and whose shared levels see thread
// 0's references, then thread 1's.  Every pc's Ir, Dr, Dw and misses per
// level, and every libc function's, must be equal.  The must-fail twins
// break the analyser through its test hooks (a locked modify counted as one
// read; a straddling instruction fetched in its first line only) and
// require the comparison to name what differs.
#include <atomx/cachesim.hpp>
#include <atomx/libc_model.hpp>
#include <atomx/trace.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analyze/Cachesim.h"

namespace cs = atomx::cachesim;
using atomx::analyze::CachesimAnalyzer;
using atomx::trace::BlockRun;
using atomx::trace::DataRef;
using atomx::trace::Instruction;
using atomx::trace::LibraryCall;

namespace {

// One thread's events, kept so that both simulators see the same ones.
struct Event {
  enum Kind { Bias, Block, Library } kind = Block;
  uint64_t bias = 0;
  size_t from = 0, count = 0;  // a run of insns[from, from + count)
  bool inherited = false;
  std::vector<DataRef> refs;
  const char* function = nullptr;
};

constexpr const char* kConfig = R"(
config split
I1 size=256 assoc=2 line=32
D1 size=256 assoc=2 line=32
LL size=1K assoc=4 line=64
config unified
U1 size=512 assoc=4 line=32
L2 size=2K assoc=2 line=64 shared=no
config data
D1 size=128 assoc=1 line=16
L2 size=512 assoc=2 line=32 shared=yes
LL size=2K assoc=4 line=64
config mixed
I1 size=128 assoc=2 line=16 policy=lru
D1 size=128 assoc=2 line=16
L2 size=512 assoc=2 line=32 shared=yes
LL size=1K assoc=2 line=64 shared=no
)";

// The program: one procedure of 96 instructions of 1 to 15 bytes.
std::vector<Instruction> program() {
  std::mt19937 r(7);
  std::vector<Instruction> in;
  uint64_t pc = 0x1000;
  for (int k = 0; k < 96; ++k) {
    const uint8_t len = uint8_t(1 + r() % 15);
    in.push_back({pc, len});
    pc += len;
  }
  return in;
}

std::vector<Event> events(unsigned seed, const std::vector<Instruction>& insns, uint64_t bias) {
  std::mt19937 r(seed);
  std::vector<Event> out;
  if (bias) {
    Event b;
    b.kind = Event::Bias, b.bias = bias;
    out.push_back(b);
  }
  const uint16_t sizes[] = {1, 2, 4, 8, 16, 32, 64};
  for (int n = 0; n < 400; ++n) {
    Event e;
    e.from = r() % insns.size();
    e.count = 1 + r() % std::min<size_t>(12, insns.size() - e.from);
    e.inherited = seed == 2 && n < 20;  // a forked child's stream starts with its parent's path
    const size_t nrefs = r() % 5;
    for (size_t k = 0; k < nrefs; ++k) {
      DataRef d{};
      d.address = 0x7f0000 + (r() % 1024) * 4 + (r() % 3 == 0 ? 0x10000 * (r() % 4) : 0);
      d.size = sizes[r() % 7];
      d.kind = uint8_t(1 + r() % 3);
      d.locked = d.kind == atomx::trace::kModify && r() % 3 == 0;
      d.insn = uint32_t(r() % e.count);
      e.refs.push_back(d);
    }
    out.push_back(e);
    if (r() % 10 == 0) {
      Event l;
      l.kind = Event::Library;
      l.function = r() % 2 ? "memcpy" : "memset";
      const uint64_t base = 0x900000 + (r() % 64) * 32;
      for (int k = 0; k < 4; ++k) {
        DataRef d{};
        d.address = base + uint64_t(k) * 32;
        d.size = 32;
        d.kind = std::string(l.function) == "memset" || k % 2 ? atomx::trace::kWrite : atomx::trace::kRead;
        l.refs.push_back(d);
      }
      out.push_back(l);
    }
  }
  return out;
}

// --- the naive simulator: a list of lines per set, most recent first ---------

struct NaiveLevel {
  uint32_t line, assoc;
  uint64_t sets;
  std::vector<std::list<uint64_t>> set;
  explicit NaiveLevel(const cs::Level& l) : line(l.line), assoc(l.assoc), sets(l.sets()), set(l.sets()) {}
  bool touch(uint64_t ln) {
    std::list<uint64_t>& s = set[ln % sets];
    for (auto it = s.begin(); it != s.end(); ++it)
      if (*it == ln) {
        s.erase(it);
        s.push_front(ln);
        return false;
      }
    if (s.size() == assoc) s.pop_back();
    s.push_front(ln);
    return true;
  }
  // Every line the reference covers (at most two: it is clamped to a line).
  bool ref(uint64_t addr, uint32_t size) {
    if (size > line) size = line;
    const uint64_t a = addr / line, b = (addr + size - 1) / line;
    bool miss = touch(a);
    if (b != a) miss = touch(b) || miss;
    return miss;
  }
};

using Row = std::vector<uint64_t>;
struct Naive {
  const cs::Hierarchy& h;
  std::vector<std::unique_ptr<NaiveLevel>> shared;
  std::map<uint64_t, Row> perPc;
  std::map<std::string, Row> libc;
  int ni, nd;
  explicit Naive(const cs::Hierarchy& hh) : h(hh), ni(int(hh.iPath.size())), nd(int(hh.dPath.size())) {
    for (const cs::Level& l : h.levels) shared.push_back(l.shared ? std::make_unique<NaiveLevel>(l) : nullptr);
  }
  size_t events() const { return size_t(3 + ni + 2 * nd); }
  Row& row(std::map<uint64_t, Row>& m, uint64_t pc) {
    Row& r = m[pc];
    if (r.empty()) r.assign(events(), 0);
    return r;
  }

  void thread(const std::vector<Event>& evs, const std::vector<Instruction>& insns) {
    std::vector<std::unique_ptr<NaiveLevel>> own;
    for (const cs::Level& l : h.levels) own.push_back(l.shared ? nullptr : std::make_unique<NaiveLevel>(l));
    auto level = [&](int k) -> NaiveLevel& { return own[size_t(k)] ? *own[size_t(k)] : *shared[size_t(k)]; };
    // The levels missed along a path.
    auto walk = [&](const std::vector<int>& path, uint64_t addr, uint32_t size) {
      unsigned missed = 0;
      for (int k : path) {
        if (!level(k).ref(addr, size)) break;
        ++missed;
      }
      return missed;
    };
    Row sink(events(), 0);
    uint64_t bias = 0;
    for (const Event& e : evs) {
      if (e.kind == Event::Bias) {
        bias = e.bias;
        continue;
      }
      auto rowOf = [&](uint64_t pc) -> Row& { return e.inherited ? sink : row(perPc, pc); };
      if (e.kind == Event::Block) {
        if (ni) {
          // docs/cachesim.md: every instruction in order, except one whose
          // bytes all lie in the line the previous instruction ended in.
          const uint32_t line = h.levels[size_t(h.iPath[0])].line;
          bool have = false;
          uint64_t endLine = 0;
          for (size_t k = e.from; k < e.from + e.count; ++k) {
            const uint64_t a = insns[k].pc + bias, z = a + insns[k].length - 1;
            const bool skip = have && a / line == endLine && z / line == endLine;
            have = true, endLine = z / line;
            if (skip) continue;
            const unsigned m = walk(h.iPath, a, insns[k].length);
            for (unsigned j = 0; j < m; ++j) ++rowOf(insns[k].pc)[1 + j];
          }
        }
        for (size_t k = e.from; k < e.from + e.count; ++k) ++rowOf(insns[k].pc)[0];
      }
      if (!nd) continue;
      for (const DataRef& d : e.refs) {
        Row& r = e.kind == Event::Library ? (e.inherited ? sink : libcRow(e.function)) : rowOf(insns[e.from + d.insn].pc);
        // Valgrind's model: a modify one read, a locked modify two.
        const int reads = d.kind == atomx::trace::kWrite ? 0 : d.kind == atomx::trace::kModify && d.locked ? 2 : 1;
        for (int k = 0; k < reads; ++k) {
          ++r[size_t(1 + ni)];
          const unsigned m = walk(h.dPath, d.address, d.size);
          for (unsigned j = 0; j < m; ++j) ++r[size_t(2 + ni + int(j))];
        }
        if (d.kind == atomx::trace::kWrite) {
          ++r[size_t(2 + ni + nd)];
          const unsigned m = walk(h.dPath, d.address, d.size);
          for (unsigned j = 0; j < m; ++j) ++r[size_t(3 + ni + nd + int(j))];
        }
      }
    }
  }
  Row& libcRow(const char* f) {
    Row& r = libc[f];
    if (r.empty()) r.assign(events(), 0);
    return r;
  }
};

// Feeds one thread's events to a shard.
void feed(atomx::trace::Consumer& c, int tid, const std::vector<Event>& evs, const std::vector<Instruction>& insns) {
  c.threadBegin(tid);
  for (const Event& e : evs) {
    if (e.kind == Event::Bias) c.loadBias(tid, e.bias);
    else if (e.kind == Event::Block) {
      BlockRun b{tid, insns[e.from].pc, insns.data() + e.from, e.count, "f", e.inherited};
      b.refs = e.refs.data(), b.refCount = e.refs.size();
      c.block(b);
    } else {
      c.libraryCall(LibraryCall{tid, 0x2000, e.function, e.refs.data(), e.refs.size(), e.inherited});
    }
  }
  c.threadEnd(tid, "");
}

// The first difference between the analyser's counts and the naive ones,
// named ("[CONFIG] pc 0x1234 D1mr: analyser 3, naive 4"), or "".
std::string compare() {
  const cs::Config config = cs::parseConfig(kConfig, "");
  const std::vector<Instruction> insns = program();
  const std::vector<Event> t0 = events(1, insns, 0), t1 = events(2, insns, 0x10000);
  CachesimAnalyzer a(config.hierarchies);
  std::vector<std::unique_ptr<atomx::trace::Consumer>> shards;
  shards.push_back(a.shard({0, 100, "thread.100.axt", false}));
  shards.push_back(a.shard({1, 101, "thread.101.axt", false}));
  feed(*shards[1], 101, t1, insns);  // out of order, as on several jobs
  feed(*shards[0], 100, t0, insns);
  a.merge(shards);
  for (size_t c = 0; c < config.hierarchies.size(); ++c) {
    const cs::Hierarchy& h = config.hierarchies[c];
    Naive n(h);
    n.thread(t0, insns);
    n.thread(t1, insns);
    const atomx::analyze::CachesimCounts& got = a.counts()[c];
    const std::vector<std::string> names = got.ev.names();
    auto diff = [&](const std::string& where, const Row& mine, const Row& naive) -> std::string {
      for (size_t e = 0; e < naive.size(); ++e)
        if (e >= mine.size() || mine[e] != naive[e])
          return "[" + h.name + "] " + where + " " + names[e] + ": analyser " + (e < mine.size() ? std::to_string(mine[e]) : "none") +
                 ", naive " + std::to_string(naive[e]);
      return "";
    };
    size_t counted = 0;  // (the analyser keeps a zero row for a pc only an inherited run reached)
    for (const auto& [pc, r] : got.perPc) {
      bool any = false;
      for (uint64_t v : r.second) any |= v != 0;
      counted += any;
    }
    if (counted != n.perPc.size())
      return "[" + h.name + "] " + std::to_string(counted) + " pcs counted, naive " + std::to_string(n.perPc.size());
    for (const auto& [pc, r] : n.perPc) {
      char where[32];
      std::snprintf(where, sizeof where, "pc 0x%llx", (unsigned long long)pc);
      const auto it = got.perPc.find(pc);
      if (it == got.perPc.end()) return "[" + h.name + "] " + where + " missing";
      if (std::string d = diff(where, it->second.second, r); !d.empty()) return d;
    }
    for (const auto& [f, r] : n.libc) {
      const size_t k = size_t(atomx::libc::find(f) - atomx::libc::kFunctions);
      if (std::string d = diff("libc " + f, got.libc[k], r); !d.empty()) return d;
    }
  }
  return "";
}

TEST(OfflineCachesim, EqualsNaiveSimulator) { EXPECT_EQ(compare(), ""); }

// The events exercise what the twins break: the naive counts have locked
// modifies, straddling fetches and misses at every level.
// Whether the difference names a pc and one of `events`.
bool names(const std::string& d, std::initializer_list<const char*> events) {
  if (d.find("] pc 0x") == std::string::npos) return false;
  for (const char* e : events)
    if (d.find(std::string(" ") + e + ": analyser") != std::string::npos) return true;
  return false;
}

TEST(OfflineCachesim, TwinLockedModifyOnce) {
  setenv("ATOMX_TEST_CACHESIM_DATA", "locked-once", 1);
  const std::string d = compare();
  unsetenv("ATOMX_TEST_CACHESIM_DATA");
  EXPECT_TRUE(names(d, {"Dr", "D1mr", "D2mr", "DLmr"})) << d;
}

TEST(OfflineCachesim, TwinFetchFirstLineOnly) {
  setenv("ATOMX_TEST_CACHESIM_FETCH", "first-line", 1);
  const std::string d = compare();
  unsetenv("ATOMX_TEST_CACHESIM_FETCH");
  EXPECT_TRUE(names(d, {"I1mr", "ILmr"})) << d;
}

}  // namespace
