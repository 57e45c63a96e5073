// Analysis side of cachesim (cachesim_inst.cpp): reads the hierarchies from
// the file ATOMX_CACHE_CONFIG names (else the default, docs/cachesim.md) when
// the program starts, and feeds every configuration the program's instruction
// fetches (per block) and data references (per group) through
// <atomx/cachesim.hpp>.
//
// Threads: each thread simulates its own first levels (and the outer levels
// the configuration does not share) with counters of its own (no lock, no
// shared line on the hot path); the levels marked shared (the last, unless
// the configuration says otherwise) are one for all threads, reached under
// a lock after a first-level miss (cachesim::Shared).  The report adds the
// threads' counters up.  The per-reference routines call no library
// function and use general registers only: a thread's state is one block
// mapped by a raw mmap system call at its first reference.
//
// libc: the calls the program makes to libc's memory and string functions
// are given to the simulator as the references their arguments determine
// (<atomx/libc_model.hpp>), counted apart from the program's own.
#include <atomx/cachegrind.hpp>
#include <atomx/cachesim.hpp>
#include <atomx/cachesim_report.hpp>
#include <atomx/libc_model.hpp>
#include <atomx/light.hpp>
#include <atomx/memsites.hpp>
#include <atomx/report.hpp>

#include <algorithm>
#include <tuple>
#include <utility>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <pthread.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace cs = atomx::cachesim;
namespace libc = atomx::libc;

namespace {
using atomx::memsites::Site;
namespace memsites = atomx::memsites;

// An instruction fetch the first level must see: the block's instructions
// in order, less those whose bytes lie in the line the previous one ended in
// (a sure hit that changes nothing, as cachegrind's own fetch of it would).
struct Fetch {
  uint64_t addr;
  uint32_t size;
  uint32_t inst;  // the instruction it is counted for
};
// One configuration, read-only on the hot path.
struct Config {
  cs::Hierarchy h;
  cs::Simulator shape;        // copied (empty) into each thread
  std::vector<Fetch> fetches;
  std::vector<uint32_t> blockFetch;  // per block: its first fetch; [nblocks]: the end
  size_t words = 0;           // the simulator's state (a thread's own levels)
  cs::Shared* shared = nullptr;  // the levels all threads share (null: none)
  uint32_t chunk = 0;         // libc's references: pieces of this many bytes (0: no data levels)
};
using cs::report::kLibcFunctions;

long nblocks, ninsts, nsites, nprocs, nfiles, topN;
bool haveFetches, haveData;
const long* blocks;  // first instruction, count
const long* pcs;
const int* insts;    // size, proc, file, line
std::vector<Site> sites;
std::vector<std::string> procNames, fileNames;
std::string program, configSource;
Config* configs;
long nconfigs;
uint64_t bias;  // run-time address - link-time address of the program's code

// Per thread: counters (written by their thread only; relaxed atomics so the
// report may read them while other threads still run) and simulators.
struct PerConfig {
  cs::Simulator sim;
  const Fetch* fetches;          // the configuration's, copied here: one line of memory per block
  const uint32_t* blockFetch;
  std::atomic<uint64_t>* imiss;  // [fetch * ilevels + k]: missed level k
  std::atomic<uint64_t>* dmiss;  // [(site * dlevels + k) * 2 + write]
  std::atomic<uint64_t>* lrefs;  // libc's modelled references: [function * 2 + write]
  std::atomic<uint64_t>* lmiss;  // [(function * dlevels + k) * 2 + write]
};
struct Thread {
  Thread* next;
  std::atomic<uint64_t>* reads;   // per site: rep string instructions' (the others are counted inline)
  std::atomic<uint64_t>* writes;
  std::atomic<uint64_t> fetchCalls, dataCalls;  // calls made: what the inline tests did not settle
  PerConfig* per;
  memsites::Rep rep;  // CsRepBefore -> CsRepAfter
  std::atomic<uint64_t>* lcalls;  // per libc function: calls modelled, bytes read, bytes written
  std::atomic<uint64_t>* lread;
  std::atomic<uint64_t>* lwritten;
  uint64_t pending[3];       // calloc's arguments, until it returns
  libc::Extent pendingExtent;  // another modelled call's extent, until it returns
  // A tail jump's extent (function tailF - 1; 0: none, as the zeroed
  // mapping newThread makes it), simulated after the fetch of its block
  // tailBlock, whose call (a follower of the jump's own site where the jump
  // starts its block) runs after CsLibc's, or before whatever the thread
  // does next: fetches, then data, then libc, as a trace orders them (atomx
  // cachesim).
  long tailF, tailBlock;
  libc::Extent tailExtent;
};
void flushTail(Thread& t);
inline void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

std::atomic<Thread*> threads{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local Thread* self;

// The inline hit tests (cachesim_inst.cpp; atomx.hpp, MruDescriptor).  Per
// test (instruction fetches, data references): its descriptor, filled at
// start-up or left failing every test; the first level whose table of most
// recent lines it reads (configuration 0's; -1: none); a table of
// Cache::kNoLine that threads without state of their own use; and each
// thread's own table, as an offset from that one, in initial-exec TLS.
constexpr int kDescriptorWords = 5;  // atomx::MruDescriptor::kWords
struct InlineTest {
  long* descriptor;
  int level = -1;
  uint64_t* none = nullptr;
};
InlineTest iTest, dTest;
__attribute__((tls_model("initial-exec"))) thread_local int64_t iTable, dTable;

void* mapZeroed(size_t bytes) {
  void* m = atomx::kernelMemory(bytes);
  if (!m) __builtin_trap();  // out of memory: nothing sensible to simulate with
  return m;
}

size_t counterWords(const Config& c) {
  return c.fetches.size() * size_t(c.shape.instructionLevels()) + size_t(nsites) * size_t(c.shape.dataLevels()) * 2 +
         size_t(kLibcFunctions) * 2 * (1 + size_t(c.shape.dataLevels()));
}

__attribute__((noinline)) Thread* newThread() {
  size_t bytes = sizeof(Thread) + size_t(nconfigs) * sizeof(PerConfig) + 2 * size_t(nsites) * 8 + 3 * kLibcFunctions * 8;
  for (long c = 0; c < nconfigs; ++c) bytes += (configs[c].words + counterWords(configs[c])) * 8;
  char* m = static_cast<char*>(mapZeroed(bytes));
  Thread* t = reinterpret_cast<Thread*>(m);
  m += sizeof(Thread);
  t->per = reinterpret_cast<PerConfig*>(m);
  m += size_t(nconfigs) * sizeof(PerConfig);
  auto counters = [&](size_t n) {
    auto* p = reinterpret_cast<std::atomic<uint64_t>*>(m);
    m += n * 8;
    return p;
  };
  t->reads = counters(size_t(nsites));
  t->writes = counters(size_t(nsites));
  t->lcalls = counters(size_t(kLibcFunctions));
  t->lread = counters(size_t(kLibcFunctions));
  t->lwritten = counters(size_t(kLibcFunctions));
  for (long c = 0; c < nconfigs; ++c) {
    const Config& cfg = configs[c];
    PerConfig& p = t->per[c];
    atomx::copyWords(&p.sim, &cfg.shape, sizeof(cs::Simulator));
    p.sim.place(reinterpret_cast<uint64_t*>(m));
    // One at a time, through a register (the compiler would pair the
    // stores with SSE, and the routines calling this would save the vector state).
    const Fetch* fetches = cfg.fetches.data();
    const uint32_t* blockFetch = cfg.blockFetch.data();
    asm("" : "+r"(fetches), "+r"(blockFetch));
    p.fetches = fetches, p.blockFetch = blockFetch;
    m += cfg.words * 8;
    p.imiss = counters(cfg.fetches.size() * size_t(cfg.shape.instructionLevels()));
    p.dmiss = counters(size_t(nsites) * size_t(cfg.shape.dataLevels()) * 2);
    p.lrefs = counters(size_t(kLibcFunctions) * 2);
    p.lmiss = counters(size_t(kLibcFunctions) * size_t(cfg.shape.dataLevels()) * 2);
  }
  if (iTest.level >= 0) iTable = int64_t(t->per[0].sim.mru(iTest.level)) - int64_t(iTest.none);
  if (dTest.level >= 0) dTable = int64_t(t->per[0].sim.mru(dTest.level)) - int64_t(dTest.none);
  t->next = threads.load(std::memory_order_relaxed);
  while (!threads.compare_exchange_weak(t->next, t, std::memory_order_release, std::memory_order_relaxed)) {
  }
  return t;
}

// The calling thread's state (a tail jump's extent not yet simulated is
// now, unless `keepTail`: CsFetch's).
inline Thread& me(bool keepTail = false) {
  if (__builtin_expect(self == nullptr, 0)) self = newThread();
  if (__builtin_expect(self->tailF != 0, 0) && !keepTail) flushTail(*self);
  return *self;
}

// Block b's instruction fetches, in every configuration.
inline void fetchBlock(Thread& t, long b) {
  for (long c = 0; c < nconfigs; ++c) {
    PerConfig& p = t.per[c];
    const int n = p.sim.instructionLevels();
    if (!n) continue;
    uint64_t firstMisses = 0;
    for (uint32_t f = p.blockFetch[b]; f < p.blockFetch[b + 1]; ++f) {
      const unsigned missed = p.sim.fetch(p.fetches[f].addr, p.fetches[f].size);
      for (unsigned k = 0; k < missed; ++k) bump(p.imiss[f * uint32_t(n) + k]);
      firstMisses += missed != 0;
    }
    if (p.sim.switching()) {
      const uint64_t count = uint64_t(blocks[2 * b + 1]);
      p.sim.tick(count, count, firstMisses);
    }
  }
}

// One data reference of site s (`counted`: the call counts it; a rep
// string instruction's iterations are known only here).
inline void reference(Thread& t, long s, bool write, uint64_t addr, uint32_t size, bool counted) {
  if (counted) bump(write ? t.writes[s] : t.reads[s]);
  for (long c = 0; c < nconfigs; ++c) {
    PerConfig& p = t.per[c];
    const int n = p.sim.dataLevels();
    if (!n) continue;
    const unsigned missed = p.sim.data(addr, size, write);
    for (unsigned k = 0; k < missed; ++k) bump(p.dmiss[(size_t(s) * size_t(n) + k) * 2 + write]);
    if (p.sim.switching()) p.sim.tick(0, 1, missed != 0);
  }
}

// One operand of site s at addr (a locked read-modify-write: two reads).
inline void op(Thread& t, long s, long desc, uint64_t addr, bool counted = false) {
  const int kind = memsites::kind(desc);
  reference(t, s, kind == memsites::kWrite, addr, memsites::size(desc), counted);
  if (kind == memsites::kLockedModify) reference(t, s, false, addr, memsites::size(desc), counted);
}

// Site s's operands at ea0/ea1 (not a rep string instruction's).
void both(Thread& t, long s, long ea0, long ea1) {
  memsites::operands(sites.data(), s, ea0, ea1, 1, [&](long site, long desc, uint64_t addr) { op(t, site, desc, addr); });
}

inline Thread& start() {
  Thread& t = me();
  bump(t.dataCalls);
  return t;
}

[[noreturn]] void die(const std::string& line) {
  std::fprintf(stderr, "cachesim: %s\n", line.c_str());
  std::fflush(stderr);
  _exit(1);
}


// Configuration c's fetch list: per block, its instructions' fetches at the
// first level's line size (all of them are needed by the levels beyond only
// when the first missed, and then the same reference goes on, as in
// cachegrind).
void buildFetches(Config& c) {
  c.blockFetch.assign(size_t(nblocks) + 1, 0);
  if (!c.shape.instructionLevels()) return;
  const uint32_t bits = c.shape.instructionLineBits();
  for (long b = 0; b < nblocks; ++b) {
    c.blockFetch[size_t(b)] = uint32_t(c.fetches.size());
    const long from = blocks[2 * b];
    cs::blockFetches(
        size_t(blocks[2 * b + 1]), bits,
        [&](size_t k) { return std::pair<uint64_t, uint32_t>(uint64_t(pcs[from + long(k)]) + bias, uint32_t(insts[4 * (from + long(k))])); },
        [&](uint64_t addr, uint32_t size, size_t k) { c.fetches.push_back({addr, size, uint32_t(from + long(k))}); });
  }
  c.blockFetch[size_t(nblocks)] = uint32_t(c.fetches.size());
}
}  // namespace

extern "C" {
void CsInit(const long* config, const long* blk, const long* pc, const int* in, const long* table, const char* procs,
            const char* files, const char* path, long* iDescriptor, long* iShortDescriptor, long* dDescriptor) {
  nblocks = config[0], ninsts = config[1], nsites = config[2], nprocs = config[3], nfiles = config[4];
  haveFetches = config[5], haveData = config[6], topN = config[7];
  blocks = blk, pcs = pc, insts = in, program = path;
  sites = memsites::read(table, nsites);
  procNames = atomx::splitStrings(procs, size_t(nprocs));
  fileNames = atomx::splitStrings(files, size_t(nfiles));
  bias = AtomxLoadBias();

  const char* env = std::getenv("ATOMX_CACHE_CONFIG");
  cs::Config parsed;
  try {
    parsed = env && *env ? cs::readConfig(env) : cs::defaultConfig();
  } catch (const cs::ConfigError& e) {
    die(e.what());
  }
  configSource = parsed.source;
  nconfigs = long(parsed.hierarchies.size());
  configs = new Config[size_t(nconfigs)];
  for (long c = 0; c < nconfigs; ++c) {
    Config& cfg = configs[c];
    cfg.h = parsed.hierarchies[size_t(c)];
    if (!cfg.h.iPath.empty() && !haveFetches)
      die(configSource + ": configuration '" + cfg.h.name + "' simulates instruction fetches (" +
          cfg.h.levels[size_t(cfg.h.iPath[0])].name + "), but " + program + " was instrumented with --refs d");
    if (!cfg.h.dPath.empty() && !haveData)
      die(configSource + ": configuration '" + cfg.h.name + "' simulates data references (" +
          cfg.h.levels[size_t(cfg.h.dPath[0])].name + "), but " + program + " was instrumented with --refs i");
    if (const size_t words = cs::Shared::words(cfg.h))
      cfg.shared = new cs::Shared(cfg.h, static_cast<uint64_t*>(mapZeroed(words * 8)));
    cfg.words = cs::Simulator::words(cfg.h, true, cfg.shared != nullptr);
    cfg.shape = cs::Simulator(cfg.h, nullptr, true, cfg.shared);
    cfg.chunk = std::min<uint32_t>(32, cfg.shape.dataLine());
    buildFetches(cfg);
  }
  // A child of fork: a thread of the parent that held a shared level's lock
  // is not there to let it go.
  pthread_atfork(nullptr, nullptr, [] {
    for (long c = 0; c < nconfigs; ++c)
      if (configs[c].shared) configs[c].shared->forget();
  });
  iTest.descriptor = iDescriptor, dTest.descriptor = dDescriptor;
  // A hit on the most recent line of its set changes nothing in one
  // hierarchy; with several, or a context switch (which counts every
  // reference), every reference comes here (the descriptors stay zero).
  const cs::Hierarchy& h = configs[0].h;
  if (nconfigs == 1 && h.contextSwitch.unit == cs::SwitchUnit::None) {
    auto enable = [&](InlineTest& test, const std::vector<int>& path, int64_t* tls) {
      if (path.empty() || !cs::Simulator::mruTable(h.levels[size_t(path[0])])) return;
      const cs::Level& l = h.levels[size_t(path[0])];
      const size_t words = cs::Simulator::mruWords(l);
      test.none = static_cast<uint64_t*>(mapZeroed(words * 8));
      for (size_t k = 0; k < words; ++k) test.none[k] = cs::Cache::kNoLine;
      test.level = path[0];
      long* d = test.descriptor;
      uint64_t threadPointer;
      asm("mov %%fs:0, %0" : "=r"(threadPointer));
      d[1] = long(test.none);
      d[2] = long((l.sets() - 1) * l.line);
      d[3] = ~long(l.line - 1);
      d[4] = long(bias);
      d[0] = long(uint64_t(tls) - threadPointer);
    };
    // A block tested whole (config[9]: the longest) passes only within one
    // line: its last line must not be in its first line's set unless it is
    // that line, so no block may span as many lines as there are sets.
    const cs::Level* i1 = h.iPath.empty() ? nullptr : &h.levels[size_t(h.iPath[0])];
    const bool wholeBlocks = !i1 || uint64_t(config[9]) <= (i1->sets() - 1) * i1->line;
    enable(iTest, h.iPath, &iTable);
    enable(dTest, h.dPath, &dTable);
    // Blocks of config[8] bytes or fewer are tested at their first and last
    // bytes, which is exact when a line is at least that long.
    if (iTest.level >= 0 && h.levels[size_t(iTest.level)].line >= uint64_t(config[8]))
      for (int k = 0; k < kDescriptorWords; ++k) iShortDescriptor[k] = iDescriptor[k];
    if (!wholeBlocks)
      for (int k = 0; k < kDescriptorWords; ++k) iDescriptor[k] = 0;  // every whole-block test fails
  }
}

void CsFetch(long b) {
  Thread& t = me(true);
  const bool tailHere = t.tailF != 0 && t.tailBlock == b;
  if (t.tailF != 0 && !tailHere) flushTail(t);
  bump(t.fetchCalls);
  fetchBlock(t, b);
  if (tailHere) flushTail(t);
}
void CsRef1(long s, long ea) { both(start(), s, ea, ea); }
void CsRef2(long s, long ea0, long ea1) { both(start(), s, ea0, ea1); }

// A group: site `first` (addresses ea0, ea1), then count - 1 sites whose one
// operand's address is computed from the registers r[] had before `first`.
void CsGroup(long first, long count, long ea0, long ea1, long r0, long r1, long r2, long r3, long r4, long r5, long r6,
             long r7, long r8, long r9) {
  Thread& t = start();
  const uint64_t r[10] = {uint64_t(r0), uint64_t(r1), uint64_t(r2), uint64_t(r3), uint64_t(r4),
                          uint64_t(r5), uint64_t(r6), uint64_t(r7), uint64_t(r8), uint64_t(r9)};
  both(t, first, ea0, ea1);
  memsites::members(sites.data(), first, count, r, [&](long s, long desc, uint64_t addr) { op(t, s, desc, addr); });
}

// rep string instructions: one access per iteration (memsites::Rep).
void CsRepBefore(long s, long ea0, long ea1, long rcx) {
  Thread& t = start();
  t.rep.before(sites.data(), s, ea0, ea1, rcx, [&](long site, long desc, uint64_t addr) { op(t, site, desc, addr, true); });
}
void CsRepAfter(long s, long rcx) {
  Thread& t = me();
  t.rep.after(sites.data(), s, rcx, [&](long site, long desc, uint64_t addr) { op(t, site, desc, addr, true); });
}
}

// ---- libc's memory traffic -------------------------------------------------

// The program's calls into shared libraries (cachesim_inst.cpp): per call
// site of a modelled libc function, the function; per block that ends in a
// call of another imported function, the block and the function's number
// among the names.
long nlibcSites, notherCalls;
bool libcModelled;
const long* libcSites;
const long* otherCalls;
std::vector<std::string> otherNames;

namespace {
// A libc call's references, in every configuration, counted for function f.
void modelled(Thread& t, long f, const libc::Extent& e) {
  bump(t.lcalls[f]);
  bump(t.lread[f], e.read * (e.two ? 2 : 1));
  bump(t.lwritten[f], e.written);
  for (long c = 0; c < nconfigs; ++c) {
    PerConfig& p = t.per[c];
    const int n = p.sim.dataLevels();
    if (!n) continue;
    libc::references(e, configs[c].chunk, [&](uint64_t addr, uint32_t size, bool write) {
      bump(p.lrefs[f * 2 + write]);
      const unsigned missed = p.sim.data(addr, size, write);
      for (unsigned k = 0; k < missed; ++k) bump(p.lmiss[(size_t(f) * size_t(n) + k) * 2 + write]);
      if (p.sim.switching()) p.sim.tick(0, 1, missed != 0);
    });
  }
}
// Copies an extent from general registers: else adjacent fields are copied
// with SSE, and the routine would then save the vector state (not light).
void putExtent(libc::Extent& to, const libc::Extent& e) {
  auto put = [](uint64_t& at, uint64_t v) {
    asm("" : "+r"(v));
    at = v;
  };
  put(to.from, e.from), put(to.also, e.also), put(to.to, e.to), put(to.read, e.read), put(to.written, e.written);
  to.two = e.two;
}
void flushTail(Thread& t) {
  const long f = t.tailF - 1;
  t.tailF = 0;
  modelled(t, f, t.tailExtent);
}
}  // namespace

extern "C" {
void CsLibraryCalls(const long* counts, const long* sitesTable, const long* others, const char* names) {
  nlibcSites = counts[0], notherCalls = counts[1], libcModelled = counts[3];
  libcSites = sitesTable, otherCalls = others;
  otherNames = atomx::splitStrings(names, size_t(counts[2]));
}

// Before a call of a modelled function (site s; ~(f | block << 8): a tail
// jump ending block `block`): its first three arguments.  The extent is
// taken now (strings as the call finds them) and simulated when the call
// returns (after the call's own push); a tail jump's after its block's
// fetch (Thread::tailF).
void CsLibc(long s, long a0, long a1, long a2) {
  Thread& t = me();
  const bool tail = libcSites[s] < 0;
  const long f = tail ? (~libcSites[s] & 0xff) : libcSites[s];
  const libc::Kind kind = libc::kFunctions[f].kind;
  if (libc::needsResult(kind)) {
    t.pending[0] = uint64_t(a0), t.pending[1] = uint64_t(a1), t.pending[2] = uint64_t(a2);
    return;
  }
  const libc::Extent e = libc::extent(kind, uint64_t(a0), uint64_t(a1), uint64_t(a2));
  if (tail) {
    putExtent(t.tailExtent, e);
    t.tailF = f + 1, t.tailBlock = ~libcSites[s] >> 8;
    return;
  }
  putExtent(t.pendingExtent, e);
}
// When it returns: its references (calloc's from its result).
void CsLibcResult(long s, long result) {
  Thread& t = me();
  const long f = libcSites[s];
  const libc::Kind kind = libc::kFunctions[f].kind;
  if (libc::needsResult(kind)) modelled(t, f, libc::extent(kind, t.pending[0], t.pending[1], t.pending[2], uint64_t(result)));
  else modelled(t, f, t.pendingExtent);
}
}

// ---- the report --------------------------------------------------------

namespace {
using Events = cs::report::Events;
using Row = cs::report::Row;
using cs::report::add;

// A configuration's results (cs::report::Table), and per instruction.
struct Totals : cs::report::Table {
  std::vector<uint64_t> inst;  // [instruction * ev.size() + event]
};

// Block and group executions, counted inline (cachesim_inst.cpp).
const long* blockRuns;
const long* groupRuns;

Totals gather(long c, const std::map<uint64_t, long>& instAt, long& nthreads) {
  const Config& cfg = configs[c];
  Totals t;
  t.reset({cfg.shape.instructionLevels(), cfg.shape.dataLevels()}, size_t(nprocs));
  const size_t E = t.ev.size();
  t.inst.assign(size_t(ninsts) * E, 0);
  nthreads = 0;
  for (long b = 0; b < nblocks; ++b)
    if (const uint64_t n = uint64_t(blockRuns[b]))
      for (long i = blocks[2 * b]; i < blocks[2 * b] + blocks[2 * b + 1]; ++i) t.inst[size_t(i) * E] += n;
  // A group's members run as often as the group (its first site's counter).
  uint64_t runs = 0;
  for (long s = 0; s < nsites; ++s) {
    const Site& site = sites[size_t(s)];
    if ((site.op[0] >> 32) & 3) continue;  // a rep string instruction: its calls count it
    if (((site.op[0] >> 24) & 0xff) != 2) runs = uint64_t(groupRuns[s]);  // the first of its group
    uint64_t* row = &t.inst[size_t(instAt.at(site.pc)) * E];
    for (long desc : site.op) {
      if (desc < 0) continue;
      const int kind = memsites::kind(desc);
      row[kind == memsites::kWrite ? t.ev.dw() : t.ev.dr()] += kind == memsites::kLockedModify ? 2 * runs : runs;
    }
  }
  for (Thread* th = threads.load(std::memory_order_acquire); th; th = th->next, ++nthreads) {
    const PerConfig& p = th->per[c];
    for (long f = 0; f < kLibcFunctions && t.ev.nd; ++f) {
      Row& row = t.libc[size_t(f)];
      row[t.ev.dr()] += p.lrefs[f * 2].load(std::memory_order_relaxed);
      row[t.ev.dw()] += p.lrefs[f * 2 + 1].load(std::memory_order_relaxed);
      for (int k = 0; k < t.ev.nd; ++k) {
        row[t.ev.drmiss(k)] += p.lmiss[(size_t(f) * size_t(t.ev.nd) + size_t(k)) * 2].load(std::memory_order_relaxed);
        row[t.ev.dwmiss(k)] += p.lmiss[(size_t(f) * size_t(t.ev.nd) + size_t(k)) * 2 + 1].load(std::memory_order_relaxed);
      }
    }
    for (size_t f = 0; f < cfg.fetches.size(); ++f)
      for (int k = 0; k < t.ev.ni; ++k)
        t.inst[cfg.fetches[f].inst * E + t.ev.imiss(k)] += p.imiss[f * size_t(t.ev.ni) + size_t(k)].load(std::memory_order_relaxed);
    for (long s = 0; s < nsites; ++s) {
      uint64_t* row = &t.inst[size_t(instAt.at(sites[size_t(s)].pc)) * E];
      row[t.ev.dr()] += th->reads[s].load(std::memory_order_relaxed);
      row[t.ev.dw()] += th->writes[s].load(std::memory_order_relaxed);
      for (int k = 0; k < t.ev.nd; ++k) {
        row[t.ev.drmiss(k)] += p.dmiss[(size_t(s) * size_t(t.ev.nd) + size_t(k)) * 2].load(std::memory_order_relaxed);
        row[t.ev.dwmiss(k)] += p.dmiss[(size_t(s) * size_t(t.ev.nd) + size_t(k)) * 2 + 1].load(std::memory_order_relaxed);
      }
    }
  }
  for (long i = 0; i < ninsts; ++i) {
    const uint64_t* row = &t.inst[size_t(i) * E];
    const int proc = insts[4 * i + 1], file = insts[4 * i + 2], line = insts[4 * i + 3];
    add(t.total, row);
    add(t.procs[size_t(proc)], row);
    Row& l = t.lines[{proc, file, line}];
    if (l.empty()) l.assign(E, 0);
    add(l, row);
  }
  for (const Row& r : t.libc) add(t.libcTotal, r.data());
  return t;
}

// The program's calls into shared libraries, over all threads: per modelled
// function, calls and bytes; per other imported function, calls.
struct LibraryCalls {
  std::vector<uint64_t> calls, read, written;  // per libc::kFunctions entry
  std::vector<std::pair<uint64_t, std::string>> others;  // calls, name: most first
  uint64_t modelled = 0, notModelled = 0;
};
LibraryCalls libraryCalls() {
  LibraryCalls l;
  l.calls.assign(size_t(kLibcFunctions), 0), l.read = l.written = l.calls;
  for (Thread* th = threads.load(std::memory_order_acquire); th; th = th->next)
    for (long f = 0; f < kLibcFunctions; ++f) {
      l.calls[size_t(f)] += th->lcalls[f].load(std::memory_order_relaxed);
      l.read[size_t(f)] += th->lread[f].load(std::memory_order_relaxed);
      l.written[size_t(f)] += th->lwritten[f].load(std::memory_order_relaxed);
    }
  for (uint64_t n : l.calls) l.modelled += n;
  std::vector<uint64_t> byName(otherNames.size(), 0);
  for (long k = 0; k < notherCalls; ++k) byName[size_t(otherCalls[2 * k + 1])] += uint64_t(blockRuns[otherCalls[2 * k]]);
  for (size_t n = 0; n < byName.size(); ++n)
    if (byName[n]) l.others.push_back({byName[n], otherNames[n]}), l.notModelled += byName[n];
  std::sort(l.others.begin(), l.others.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  return l;
}

std::string bytesText(uint64_t n) {
  char b[64];
  if (n >= (1ull << 30)) std::snprintf(b, sizeof b, "%.1f GB", double(n) / double(1ull << 30));
  else if (n >= (1ull << 20)) std::snprintf(b, sizeof b, "%.1f MB", double(n) / double(1ull << 20));
  else if (n >= 1024) std::snprintf(b, sizeof b, "%.1f KB", double(n) / 1024.0);
  else std::snprintf(b, sizeof b, "%llu B", (unsigned long long)n);
  return b;
}

// cachesim.cg and cachesim.NAME.cg (<atomx/cachesim_report.hpp>).
void writeCg(const char* name, const cs::Hierarchy& h, const Totals& t, const cs::report::Names& n) {
  FILE* f = atomx::openToolOutput(name);
  if (!f) return;
  cs::report::writeCg(f, h, t, n, configSource, program);
  std::fclose(f);
}
}  // namespace

extern "C" void CsReport(const long* blockCounts, const long* groupCounts) {
  blockRuns = blockCounts, groupRuns = groupCounts;
  for (Thread* th = threads.load(std::memory_order_acquire); th; th = th->next)
    if (th->tailF != 0) flushTail(*th);  // a tail jump the thread made last
  std::map<uint64_t, long> instAt;
  std::vector<uint64_t> procPc(size_t(nprocs), UINT64_MAX);  // a procedure's lowest address
  for (long i = 0; i < ninsts; ++i) {
    instAt[uint64_t(pcs[i])] = i;
    procPc[size_t(insts[4 * i + 1])] = std::min(procPc[size_t(insts[4 * i + 1])], uint64_t(pcs[i]));
  }
  FILE* out = atomx::openToolOutput("cachesim.out");
  FILE* json = atomx::openToolOutput("cachesim.json");
  atomx::JsonWriter j(json ? json : stderr);
  long nthreads = 0;
  std::vector<Totals> all;
  for (long c = 0; c < nconfigs; ++c) all.push_back(gather(c, instAt, nthreads));
  const LibraryCalls lib = libraryCalls();
  if (out)
    std::fprintf(out, "cachesim: %ld configuration%s from %s (%ld thread%s, each with its own first levels)\n", nconfigs,
                 nconfigs == 1 ? "" : "s", configSource.c_str(), nthreads, nthreads == 1 ? "" : "s");
  if (json) {
    j.beginObject();
    j.key("tool").value("cachesim").key("config").value(configSource).key("threads").value(nthreads);
    // What the inline hit tests left to the simulator: the calls made, and
    // whether the run used the tests at all (docs/cachesim.md, "Speed").
    uint64_t fetchCalls = 0, dataCalls = 0;
    for (Thread* th = threads.load(); th; th = th->next)
      fetchCalls += th->fetchCalls.load(std::memory_order_relaxed), dataCalls += th->dataCalls.load(std::memory_order_relaxed);
    j.key("calls").beginObject().key("fetch").value(fetchCalls).key("data").value(dataCalls);
    j.key("inline_tests").beginObject().key("fetch").value(iTest.level >= 0).key("data").value(dTest.level >= 0);
    j.endObject().endObject();
    // The program's calls into shared libraries: those whose references
    // were modelled (libc's memory and string functions), and the others,
    // whose references no count includes.
    j.key("library_calls").beginObject();
    j.key("modelled").beginObject().key("calls").value(lib.modelled).key("functions").beginArray();
    for (long f = 0; f < kLibcFunctions; ++f)
      if (lib.calls[size_t(f)])
        j.beginObject().key("name").value(libc::kFunctions[f].name).key("calls").value(lib.calls[size_t(f)])
            .key("bytes_read").value(lib.read[size_t(f)]).key("bytes_written").value(lib.written[size_t(f)]).endObject();
    j.endArray().endObject();
    j.key("not_modelled").beginObject().key("calls").value(lib.notModelled).key("functions").beginArray();
    for (const auto& [n, name] : lib.others) j.beginObject().key("name").value(name).key("calls").value(n).endObject();
    j.endArray().endObject().endObject();
    j.key("configurations").beginArray();
  }
  const cs::report::Names names{procNames, fileNames, procPc};
  for (long c = 0; c < nconfigs; ++c) {
    const cs::Hierarchy& h = configs[c].h;
    Totals& t = all[size_t(c)];
    for (Thread* th = threads.load(); th; th = th->next) t.switches += th->per[c].sim.switches();
    if (out) cs::report::writeText(out, h, t, names, lib.modelled != 0, topN);
    if (json) cs::report::writeJson(j, h, t, names);
    writeCg(c == 0 ? "cachesim.cg" : ("cachesim." + cs::report::plainName(h.name) + ".cg").c_str(), h, t, names);
  }
  if (json) {
    j.endArray().endObject();
    std::fclose(json);
  }
  if (out) {
    // What was simulated of the program's calls into shared libraries.
    std::fprintf(out, "\nlibrary calls:\n");
    if (lib.modelled) {
      std::string list;
      for (long f = 0; f < kLibcFunctions; ++f)
        if (lib.calls[size_t(f)])
          list += std::string(list.empty() ? "" : "; ") + libc::kFunctions[f].name + " " + std::to_string(lib.calls[size_t(f)]) +
                  " (" + bytesText(lib.read[size_t(f)]) + " read, " + bytesText(lib.written[size_t(f)]) + " written)";
      std::fprintf(out, "  %llu to libc's memory and string functions, simulated from their arguments: %s\n",
                   (unsigned long long)lib.modelled, list.c_str());
    } else if (!libcModelled)
      std::fprintf(out, "  libc's memory and string functions not modelled (--libc none, or --refs i)\n");
    if (lib.notModelled) {
      std::string list;
      for (size_t k = 0; k < lib.others.size() && k < 8; ++k)
        list += std::string(k ? ", " : "") + lib.others[k].second + " " + std::to_string(lib.others[k].first);
      if (lib.others.size() > 8) list += ", ...";
      const double share = 100.0 * double(lib.notModelled) / double(lib.notModelled + lib.modelled);
      std::fprintf(out, "  %llu (%.1f%%) to other library functions, whose memory references are not simulated: %s\n",
                   (unsigned long long)lib.notModelled, share, list.c_str());
    } else std::fprintf(out, "  none to other library functions: every reference the program's calls make is simulated\n");
    std::fprintf(out, "  (calls through function pointers, and libraries' own calls, are not seen)\n");
    std::fprintf(out, "\nall of it: cachesim.json; by source line: cg_annotate cachesim.cg\n");
    std::fclose(out);
  }
}
