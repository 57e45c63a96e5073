// Analysis side of the cache tool (cache_inst.cpp): one data cache, the
// level the rewrite chose (a statement of the one configuration format),
// simulated by <atomx/cachesim.hpp>, the same model as Valgrind
// cachegrind's cg_sim.c (write-allocate by default; each set an array of
// lines, most recently used first; an access that straddles two lines
// touches both and counts once, as a miss if either line missed).
//
// Threads: each thread simulates its own private cache (like per-core L1
// caches) and keeps its own counters, so the hot path takes no lock and
// shares no cache line with other threads; the report adds the threads up.
#include <atomx/cachesim.hpp>
#include <atomx/light.hpp>
#include <atomx/memsites.hpp>
#include <atomx/report.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace cs = atomx::cachesim;

namespace {
using atomx::memsites::Site;
using atomx::memsites::kWrite;
using atomx::memsites::kLockedModify;

// Per site and thread.  Written only by the owning thread (relaxed atomics:
// plain moves, but the report may read them while threads still run).
struct Counts {
  std::atomic<uint64_t> reads{0}, writes{0}, readMisses{0}, writeMisses{0};
};
inline void bump(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

long topN, nsites, verify;
std::atomic<long> verified{0}, mismatches{0};
std::atomic<uint64_t> firstMismatch{0};
cs::Hierarchy cache;  // one level, D1
cs::Simulator shape;  // copied (empty) into each thread
std::vector<Site> sites;
std::vector<std::string> procNames;

// The per-access routines call no library function (no malloc, memmove or
// __tls_get_addr), so atomx calls them without saving the vector registers:
// a thread's state is one block mapped by a raw mmap system call at its first
// access, zeroed by the kernel, and linked into a lock-free list.
struct Thread {
  Thread* next;
  cs::Simulator sim;
  Counts* counts;
  uint64_t* computed;  // --verify-merge: the address each member was given
  atomx::memsites::Rep rep;  // CacheRepBefore -> CacheRepAfter

  // One operand of site s at addr.
  void op(long s, long desc, uint64_t addr) {
    const int kind = atomx::memsites::kind(desc);
    const uint32_t size = atomx::memsites::size(desc);
    Counts& c = counts[s];
    const bool write = kind == kWrite;
    const bool miss = sim.data(addr, size, write) != 0;
    bump(write ? c.writes : c.reads);
    if (miss) bump(write ? c.writeMisses : c.readMisses);
    if (kind == kLockedModify) {  // Valgrind: a load, then a compare-and-swap (one more read)
      bump(c.reads);
      if (sim.data(addr, size, false)) bump(c.readMisses);
    }
  }
};

std::atomic<Thread*> threads{nullptr};  // every thread's, never freed: the report reads them
__attribute__((tls_model("initial-exec"))) thread_local Thread* self;

void* mapZeroed(size_t bytes) {
  void* m = atomx::kernelMemory(bytes);
  if (!m) __builtin_trap();  // out of memory: nothing sensible to count with
  return m;
}

__attribute__((noinline)) Thread* newThread() {
  const size_t words = cs::Simulator::words(cache, false);
  const size_t bytes = sizeof(Thread) + words * 8 + size_t(nsites) * sizeof(Counts) + (verify ? size_t(nsites) * 8 : 0);
  char* m = static_cast<char*>(mapZeroed(bytes));
  Thread* t = reinterpret_cast<Thread*>(m);
  uint64_t* state = reinterpret_cast<uint64_t*>(m + sizeof(Thread));
  atomx::copyWords(&t->sim, &shape, sizeof(cs::Simulator));
  t->sim.place(state);
  t->counts = reinterpret_cast<Counts*>(state + words);
  t->computed = verify ? reinterpret_cast<uint64_t*>(t->counts + nsites) : nullptr;
  t->next = threads.load(std::memory_order_relaxed);
  while (!threads.compare_exchange_weak(t->next, t, std::memory_order_release, std::memory_order_relaxed)) {
  }
  return t;
}

Thread& me() {
  if (__builtin_expect(self == nullptr, 0)) self = newThread();
  return *self;
}

// Site s's operands at ea0/ea1, `times` iterations (rep).
void both(Thread& t, long s, long ea0, long ea1, uint64_t times) {
  atomx::memsites::operands(sites.data(), s, ea0, ea1, times, [&](long site, long desc, uint64_t addr) { t.op(site, desc, addr); });
}
}  // namespace

extern "C" {
void CacheInit(long* config, const char* level, long* table, const char* procs) {
  topN = config[0], nsites = config[1], verify = config[3];
  cache = cs::parseConfig(level, "").hierarchies[0];  // checked by the rewrite (cache_inst.cpp)
  shape = cs::Simulator(cache, nullptr, false);  // no inline hit tests, so no tables for them
  sites = atomx::memsites::read(table, nsites);
  for (const char* p = procs; *p;) {  // '\n' after each name
    const char* nl = std::strchr(p, '\n');
    procNames.emplace_back(p, nl - p);
    p = nl + 1;
  }
}

void CacheRef1(long s, long ea) { both(me(), s, ea, ea, 1); }
void CacheRef2(long s, long ea0, long ea1) { both(me(), s, ea0, ea1, 1); }

// A group: site `first` (addresses ea0, ea1), then count - 1 sites whose one
// operand's address is computed from the registers r[] had before `first`.
void CacheGroup(long first, long count, long ea0, long ea1, long r0, long r1, long r2, long r3, long r4, long r5,
                long r6, long r7, long r8, long r9) {
  Thread& t = me();
  // Exactly ten, each stored on its own: no zero-filled tail, which the
  // compiler writes with vector stores (nor a switch: a jump table is an
  // indirect jump, which atomx cannot see through).
  const uint64_t r[10] = {uint64_t(r0), uint64_t(r1), uint64_t(r2), uint64_t(r3), uint64_t(r4),
                          uint64_t(r5), uint64_t(r6), uint64_t(r7), uint64_t(r8), uint64_t(r9)};
  both(t, first, ea0, ea1, 1);
  atomx::memsites::members(sites.data(), first, count, r, [&](long s, long desc, uint64_t addr) {
    if (verify) t.computed[s] = addr;
    t.op(s, desc, addr);
  });
}

// --verify-merge: the real address of a member, to check the computed one.
void CacheVerify(long s, long ea) {
  Thread& t = me();
  verified.fetch_add(1, std::memory_order_relaxed);
  if (t.computed[s] != uint64_t(ea) && mismatches.fetch_add(1, std::memory_order_relaxed) == 0)
    firstMismatch = sites[s].pc;
}

// rep string instructions: one access per iteration (atomx::memsites::Rep).
void CacheRepBefore(long s, long ea0, long ea1, long rcx) {
  Thread& t = me();
  t.rep.before(sites.data(), s, ea0, ea1, rcx, [&](long site, long desc, uint64_t addr) { t.op(site, desc, addr); });
}
void CacheRepAfter(long s, long rcx) {
  Thread& t = me();
  t.rep.after(sites.data(), s, rcx, [&](long site, long desc, uint64_t addr) { t.op(site, desc, addr); });
}

void CacheReport() {
  struct Total { uint64_t r = 0, w = 0, rm = 0, wm = 0; uint64_t all() const { return r + w; } uint64_t miss() const { return rm + wm; } };
  std::vector<Total> site(nsites), proc(procNames.size());
  Total total;
  long nthreads = 0;
  for (Thread* t = threads.load(std::memory_order_acquire); t; t = t->next, ++nthreads)
      for (long s = 0; s < nsites; ++s) {
        const Counts& c = t->counts[s];
        site[s].r += c.reads.load(std::memory_order_relaxed);
        site[s].w += c.writes.load(std::memory_order_relaxed);
        site[s].rm += c.readMisses.load(std::memory_order_relaxed);
        site[s].wm += c.writeMisses.load(std::memory_order_relaxed);
      }
  for (long s = 0; s < nsites; ++s) {
    Total& p = proc[sites[s].proc];
    p.r += site[s].r, p.w += site[s].w, p.rm += site[s].rm, p.wm += site[s].wm;
  }
  for (const Total& p : proc) total.r += p.r, total.w += p.w, total.rm += p.rm, total.wm += p.wm;
  auto rate = [](uint64_t m, uint64_t a) { return a ? 100.0 * double(m) / double(a) : 0.0; };
  const cs::Level& l = cache.levels[0];
  const char* policies[] = {"lru", "fifo", "random"};

  if (FILE* out = atomx::openToolOutput("cache.out")) {
    std::fprintf(out, "cache: %s (%ld thread%s, one private cache each)\n", cs::describe(l).c_str(), nthreads,
                 nthreads == 1 ? "" : "s");
    std::fprintf(out, "accesses %16llu   misses %14llu   miss rate %6.2f%%\n", (unsigned long long)total.all(),
                 (unsigned long long)total.miss(), rate(total.miss(), total.all()));
    std::fprintf(out, "reads    %16llu   misses %14llu   miss rate %6.2f%%\n", (unsigned long long)total.r,
                 (unsigned long long)total.rm, rate(total.rm, total.r));
    std::fprintf(out, "writes   %16llu   misses %14llu   miss rate %6.2f%%\n", (unsigned long long)total.w,
                 (unsigned long long)total.wm, rate(total.wm, total.w));
    std::vector<long> order;
    for (size_t p = 0; p < proc.size(); ++p)
      if (proc[p].all()) order.push_back(long(p));
    std::sort(order.begin(), order.end(), [&](long a, long b) {
      return proc[a].miss() != proc[b].miss() ? proc[a].miss() > proc[b].miss() : proc[a].all() > proc[b].all();
    });
    std::fprintf(out, "\ntop procedures by misses:\n%14s %14s %7s %14s %14s  %s\n", "accesses", "misses", "rate",
                 "read misses", "write misses", "procedure");
    for (size_t k = 0; k < order.size() && long(k) < topN; ++k) {
      const Total& p = proc[order[k]];
      std::fprintf(out, "%14llu %14llu %6.2f%% %14llu %14llu  %s\n", (unsigned long long)p.all(),
                   (unsigned long long)p.miss(), rate(p.miss(), p.all()), (unsigned long long)p.rm,
                   (unsigned long long)p.wm, procNames[order[k]].c_str());
    }
    if (verify)
      std::fprintf(out, "\nverify-merge: %ld computed addresses checked, %ld wrong (first at 0x%llx)\n",
                   verified.load(), mismatches.load(), (unsigned long long)firstMismatch.load());
    std::fclose(out);
  }

  if (FILE* out = atomx::openToolOutput("cache.json")) {
    atomx::JsonWriter j(out);
    j.beginObject();
    j.key("tool").value("cache");
    j.key("cache").beginObject();
    j.key("size").value(long(l.size)).key("line").value(long(l.line)).key("assoc").value(long(l.assoc));
    j.key("sets").value(long(l.sets())).key("policy").value(policies[int(l.policy)]);
    j.key("write_allocate").value(l.writeAllocate).key("threads").value(nthreads);
    j.endObject();
    auto counts = [&](const Total& t) {
      j.key("accesses").value(t.all()).key("misses").value(t.miss());
      j.key("reads").value(t.r).key("writes").value(t.w);
      j.key("read_misses").value(t.rm).key("write_misses").value(t.wm);
    };
    if (verify) {
      j.key("verify_merge").beginObject().key("checked").value(verified.load()).key("wrong").value(mismatches.load());
      j.key("first_wrong").hex(firstMismatch.load()).endObject();
    }
    j.key("total").beginObject();
    counts(total);
    j.endObject();
    j.key("procedures").beginArray();
    for (size_t p = 0; p < proc.size(); ++p)
      if (proc[p].all()) {
        j.beginObject().key("name").value(procNames[p]);
        counts(proc[p]);
        j.endObject();
      }
    j.endArray();
    j.key("instructions").beginArray();
    for (long s = 0; s < nsites; ++s)
      if (site[s].all()) {
        j.beginObject().key("pc").hex(sites[s].pc).key("procedure").value(procNames[sites[s].proc]);
        counts(site[s]);
        j.endObject();
      }
    j.endArray();
    j.endObject();
    std::fclose(out);
  }
}
}
