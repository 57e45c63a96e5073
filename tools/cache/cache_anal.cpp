// Analysis side of the cache tool (cache_inst.cpp): the cache simulator,
// the same model as Valgrind cachegrind's cg_sim.c (write-allocate by
// default; each set an array of line numbers, most recently used first; an
// access that straddles two lines touches both and counts once, as a miss
// if either line missed).
//
// Threads: each thread simulates its own private cache (like per-core L1
// caches) and keeps its own counters, so the hot path takes no lock and
// shares no cache line with other threads; the report adds the threads up.
#include <atomx/light.hpp>
#include <atomx/memsites.hpp>
#include <atomx/report.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>
#include <string>
#include <vector>

namespace {
using atomx::memsites::Site;
using atomx::memsites::kWrite;
using atomx::memsites::kLockedModify;
enum Policy { kLru = 0, kFifo = 1, kRandom = 2 };

// Per site and thread.  Written only by the owning thread (relaxed atomics:
// plain moves, but the report may read them while threads still run).
struct Counts {
  std::atomic<uint64_t> reads{0}, writes{0}, readMisses{0}, writeMisses{0};
};
inline void bump(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

long cacheSize, assoc, lineSize, policy, writeAllocate, topN, nsites, verify;
std::atomic<long> verified{0}, mismatches{0};
std::atomic<uint64_t> firstMismatch{0};
unsigned lineBits;
uint64_t setMask;
std::vector<Site> sites;
std::vector<std::string> procNames;

// The per-access routines call no library function (no malloc, memmove or
// __tls_get_addr), so atomx calls them without saving the vector registers:
// a thread's state is one block mapped by a raw mmap system call at its first
// access, zeroed by the kernel, and linked into a lock-free list.
struct Thread {
  Thread* next;
  uint64_t* tags;  // per set, assoc ways of line number + 1 (0: invalid), MRU (or newest) first
  Counts* counts;
  uint64_t* computed;  // --verify-merge: the address each member was given
  uint64_t rng;
  atomx::memsites::Rep rep;  // CacheRepBefore -> CacheRepAfter

  // One line: true on a miss.  write && !writeAllocate: a miss installs nothing.
  bool line(uint64_t block, bool fill) {
    const uint64_t tag = block + 1;
    uint64_t* set = &tags[(block & setMask) * assoc];
    if (set[0] == tag) return false;
    for (long i = 1; i < assoc; ++i)
      if (set[i] == tag) {
        if (policy == kLru) moveToFront(set, i, tag);
        return false;
      }
    if (!fill) return true;
    long victim = assoc - 1;  // LRU: the least recent; FIFO: the oldest; invalid ways go first
    if (policy == kRandom && set[victim] != 0) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      victim = long(rng % uint64_t(assoc));
    }
    moveToFront(set, victim, tag);
    return true;
  }
  // set[0..i-1] move up one way, `tag` goes first.  (Not a memmove: the
  // compiler would call libc's, which uses vector registers.)
  static void moveToFront(uint64_t* set, long i, uint64_t tag) {
    uint64_t carry = tag;
    for (long k = 0; k <= i; ++k) std::swap(carry, set[k]);
  }
  bool access(uint64_t addr, unsigned size, bool write) {
    if (size > unsigned(lineSize)) size = unsigned(lineSize);  // as cachegrind clamps xsave & co.
    if (size == 0) size = 1;
    const bool fill = !write || writeAllocate;
    uint64_t first = addr >> lineBits, last = (addr + size - 1) >> lineBits;
    bool miss = false;
    for (uint64_t b = first; b <= last; ++b) miss |= line(b, fill);  // every line, for its state
    return miss;
  }
  // One operand of site s at addr.
  void op(long s, long desc, uint64_t addr) {
    const int kind = int(desc & 0xff);
    const unsigned size = unsigned((desc >> 8) & 0xffff);
    Counts& c = counts[s];
    const bool write = kind == kWrite;
    const bool miss = access(addr, size, write);
    bump(write ? c.writes : c.reads);
    if (miss) bump(write ? c.writeMisses : c.readMisses);
    if (kind == kLockedModify) {  // Valgrind: a load, then a compare-and-swap (one more read)
      bump(c.reads);
      if (access(addr, size, false)) bump(c.readMisses);
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
  const size_t ways = size_t(setMask + 1) * size_t(assoc);
  const size_t bytes = sizeof(Thread) + ways * 8 + size_t(nsites) * sizeof(Counts) + (verify ? size_t(nsites) * 8 : 0);
  char* m = static_cast<char*>(mapZeroed(bytes));
  Thread* t = reinterpret_cast<Thread*>(m);
  t->tags = reinterpret_cast<uint64_t*>(m + sizeof(Thread));
  t->counts = reinterpret_cast<Counts*>(t->tags + ways);
  t->computed = verify ? reinterpret_cast<uint64_t*>(t->counts + nsites) : nullptr;
  t->rng = 0x9e3779b97f4a7c15ull;
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
void CacheInit(long* config, long* table, const char* procs) {
  cacheSize = config[0], assoc = config[1], lineSize = config[2], policy = config[3];
  writeAllocate = config[4], topN = config[5], nsites = config[6], verify = config[8];
  lineBits = unsigned(__builtin_ctzl(uint64_t(lineSize)));
  setMask = uint64_t(cacheSize / lineSize / assoc) - 1;
  sites = atomx::memsites::read(table, nsites);
  for (const char* p = procs; *p;) {
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
  const char* policies[] = {"lru", "fifo", "random"};
  char geometry[160];
  std::snprintf(geometry, sizeof geometry, "%ld B, %ld B lines, %s, %s, %s", cacheSize, lineSize,
                assoc == 1 ? "direct-mapped" : (assoc == cacheSize / lineSize ? "fully associative" : (std::to_string(assoc) + "-way").c_str()),
                policies[policy], writeAllocate ? "write-allocate" : "no-write-allocate");

  if (FILE* out = atomx::openToolOutput("cache.out")) {
    std::fprintf(out, "cache: %s (%zu thread%s, one private cache each)\n", geometry, nthreads, nthreads == 1 ? "" : "s");
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
    j.key("size").value(cacheSize).key("line").value(lineSize).key("assoc").value(assoc);
    j.key("sets").value(long(setMask + 1)).key("policy").value(policies[policy]);
    j.key("write_allocate").value(bool(writeAllocate)).key("threads").value(nthreads);
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
