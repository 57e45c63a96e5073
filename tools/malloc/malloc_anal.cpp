// malloc tool, analysis side: counts the program's allocator calls per
// function and call site, a histogram of requested sizes (power-of-two
// classes and exact sizes), and, from the returned pointers, live and peak
// bytes.  Every thread allocates, so all updates happen under one lock.
// The routines called at the sites use atomx/light.hpp's lock and map, which
// call nothing: atomx then leaves the vector state alone around those calls
// (std::mutex and std::map reach libc through the PLT: 3x the cost).
#include <atomx/light.hpp>
#include <atomx/report.hpp>


#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {
// Must match malloc_inst.cpp.
enum Kind { kAlloc0, kAlloc1, kAlloc2, kCalloc, kRealloc, kReallocArray, kPosixMemalign, kFree };

struct Site {
  uint64_t pc = 0;
  int fn = 0;
  bool tail = false;
  std::string proc, source;
  unsigned long calls = 0, bytes = 0;
};
struct Fn {
  std::string name;
  int kind = 0;
  unsigned long calls = 0, bytes = 0;
};
// What a call site's MallocCall leaves for its MallocReturn (same thread).
struct Pending {
  long site = -1;
  uint64_t size = 0, old = 0, oldSize = 0, memptr = 0;
  bool hadOld = false;
};

atomx::SpinLock mu;
std::vector<Site> sites;
std::vector<Fn> fns;
std::string program;
long topN = 10;
bool trackLive = true;
unsigned long classes[65], classBytes[65];  // class k: sizes with bit width k (0; 1; 2-3; 4-7 ...)
atomx::FlatMap bySize;  // size -> allocations
atomx::FlatMap live;    // pointer -> size, for pointers the program's calls returned
uint64_t liveBytes = 0, peakBytes = 0;
unsigned long untrackedFrees = 0;
__attribute__((tls_model("initial-exec"))) thread_local Pending pending;

std::vector<std::string> lines(const char* s) {
  std::vector<std::string> v;
  for (const char* e; (e = std::strchr(s, '\n')); s = e + 1) v.emplace_back(s, e);
  return v;
}
int widthOf(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }
uint64_t mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;  // the allocator fails such a call
}
void forget(uint64_t p) {  // mu held
  uint64_t* size = live.find(p);
  if (!size) { ++untrackedFrees; return; }
  liveBytes -= *size;
  live.erase(p);
}
void remember(uint64_t p, uint64_t size) {  // mu held
  if (uint64_t* old = live.find(p)) liveBytes -= *old;  // freed by a call we did not see
  live.at(p) = size;
  liveBytes += size;
  peakBytes = std::max(peakBytes, liveBytes);
}
// A procedure name for people: demangled, at most `width` characters.
std::string readable(const std::string& name, size_t width) {
  const std::string r = atomx::demangle(name);
  return r.size() > width ? r.substr(0, width - 3) + "..." : r;
}
std::string sizeClass(int k) {
  if (k <= 1) return std::to_string(k);
  const uint64_t lo = uint64_t(1) << (k - 1), hi = lo * 2 - 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}
}  // namespace

extern "C" {
void MallocInit(long n, long top, long liveOn, long* pcs, int* fnOf, int* tail, const char* where,
                const char* names, int* kinds, const char* prog) {
  std::vector<std::string> w = lines(where), nm = lines(names);
  sites.resize(n);
  for (long k = 0; k < n; ++k) {
    Site& s = sites[k];
    s.pc = uint64_t(pcs[k]), s.fn = fnOf[k], s.tail = tail[k];
    s.proc = w[k].substr(0, w[k].find('\t'));
    s.source = w[k].substr(w[k].find('\t') + 1);
  }
  fns.resize(nm.size());
  for (size_t k = 0; k < nm.size(); ++k) fns[k].name = nm[k], fns[k].kind = kinds[k];
  topN = top, trackLive = liveOn, program = prog;
}

void MallocCall(long site, uint64_t a0, uint64_t a1, uint64_t a2) {
  Site& s = sites[site];
  Fn& f = fns[s.fn];
  // The size requested: an argument, or the product of two (kinds as in
  // Kind; a table, not a switch, which would jump through a table: heavy).
  static constexpr int kFirst[] = {0, 1, 2, 0, 1, 1, 2, 0}, kSecond[] = {-1, -1, -1, 1, -1, 2, -1, -1};
  const uint64_t args[3] = {a0, a1, a2};
  uint64_t size = args[kFirst[f.kind]];
  if (kSecond[f.kind] >= 0) size = mul(size, args[kSecond[f.kind]]);
  std::lock_guard<atomx::SpinLock> g(mu);
  ++s.calls, ++f.calls;
  if (f.kind == kFree) {
    if (trackLive && a0) forget(a0);
    return;
  }
  s.bytes += size, f.bytes += size;
  ++classes[widthOf(size)], classBytes[widthOf(size)] += size;
  ++bySize.at(size);
  if (!trackLive || s.tail) return;
  // (field by field: the compiler copies a whole struct with SSE, which
  // would make this routine save the vector state; atomx/light.hpp)
  pending.site = site, pending.size = size, pending.old = a0, pending.oldSize = 0;
  pending.memptr = f.kind == kPosixMemalign ? a0 : 0, pending.hadOld = false;
  // realloc frees the old block before another thread can get it back:
  // forget it now, restore it if the call fails.
  if ((f.kind == kRealloc || f.kind == kReallocArray) && a0) {
    const uint64_t* old = live.find(a0);
    pending.hadOld = old != nullptr;
    if (old) pending.oldSize = *old;
    forget(a0);
  }
}

void MallocReturn(long site, uint64_t rax) {
  if (pending.site != site) return;  // not after our own MallocCall
  const Pending& p = pending;
  uint64_t ptr = rax;
  const int kind = fns[sites[site].fn].kind;
  if (kind == kPosixMemalign) ptr = rax == 0 ? *reinterpret_cast<uint64_t*>(p.memptr) : 0;
  std::lock_guard<atomx::SpinLock> g(mu);
  if (ptr) remember(ptr, p.size);
  else if (p.hadOld && p.size != 0) remember(p.old, p.oldSize);  // realloc failed: old block still there
  pending.site = -1;
}

void MallocReport() {
  std::lock_guard<atomx::SpinLock> g(mu);
  unsigned long allocs = 0, bytes = 0, frees = 0;
  for (const Fn& f : fns) (f.kind == kFree ? frees : allocs) += f.calls, bytes += f.bytes;
  std::vector<const Site*> top;
  for (const Site& s : sites) if (s.calls) top.push_back(&s);
  std::stable_sort(top.begin(), top.end(), [](const Site* a, const Site* b) { return a->calls > b->calls; });
  std::vector<std::pair<uint64_t, unsigned long>> sizes;  // by size, for malloc.json
  bySize.forEach([&](uint64_t size, uint64_t n) { sizes.emplace_back(size, n); });
  std::sort(sizes.begin(), sizes.end());
  std::vector<std::pair<uint64_t, unsigned long>> common = sizes;
  std::stable_sort(common.begin(), common.end(), [](auto& a, auto& b) { return a.second > b.second; });

  if (FILE* o = atomx::openToolOutput("malloc.out")) {
    std::fprintf(o, "malloc: allocator calls made by the program's own code (%s)\n", program.c_str());
    std::fprintf(o, "%lu allocations, %lu bytes requested, %lu frees, %zu call sites instrumented\n", allocs,
                 bytes, frees, sites.size());
    if (trackLive)
      std::fprintf(o, "live at exit %lu bytes in %zu blocks, peak %lu bytes (%lu frees of pointers not seen allocated)\n",
                   (unsigned long)liveBytes, live.size(), (unsigned long)peakBytes, untrackedFrees);
    if (live.failed() || bySize.failed())
      std::fprintf(o, "warning: the kernel refused memory for the tool's tables: sizes and live figures are incomplete\n");
    std::string per = "calls:";
    for (const Fn& f : fns) {
      if (!f.calls) continue;
      std::string item = "  " + f.name + " " + std::to_string(f.calls);
      if (per.size() + item.size() > 100) std::fprintf(o, "%s\n", per.c_str()), per = "      ";
      per += item;
    }
    std::fprintf(o, "%s\n", per.size() > 6 ? per.c_str() : "calls: none");
    std::fprintf(o, "size class          allocations            bytes\n");
    int lo = 65, hi = -1;
    for (int k = 0; k < 65; ++k) if (classes[k]) lo = std::min(lo, k), hi = k;
    for (int k = lo; k <= hi && k - lo < 16; ++k)
      std::fprintf(o, "  %-16s %12lu %16lu\n", sizeClass(k).c_str(), classes[k], classBytes[k]);
    if (hi - lo >= 16) std::fprintf(o, "  ... (larger classes in malloc.json)\n");
    std::fprintf(o, "top sizes:");
    for (size_t k = 0; k < common.size() && long(k) < topN; ++k) std::fprintf(o, " %lux%lu", (unsigned long)common[k].first, common[k].second);
    std::fprintf(o, "%s\ntop call sites        calls          bytes  function       procedure (source)\n",
                 sizes.size() > size_t(topN) ? " ..." : "");
    for (size_t k = 0; k < top.size() && long(k) < topN; ++k) {
      const Site& s = *top[k];
      std::fprintf(o, "  0x%-10lx %12lu %14lu  %-14s %s%s%s%s%s\n", (unsigned long)s.pc, s.calls, s.bytes,
                   fns[s.fn].name.c_str(), readable(s.proc, 40).c_str(), s.source.empty() ? "" : " (", s.source.c_str(),
                   s.source.empty() ? "" : ")", s.tail ? " [tail call]" : "");
    }
    std::fprintf(o, "Not seen: allocations inside shared libraries (strdup, fopen, libstdc++ ...).\n");
    std::fclose(o);
  }
  FILE* o = atomx::openToolOutput("malloc.json");
  if (!o) return;
  atomx::JsonWriter j(o);
  j.beginObject().key("tool").value("malloc").key("program").value(program);
  j.key("allocations").value(allocs).key("bytes_requested").value(bytes).key("frees").value(frees);
  j.key("live_tracking").value(trackLive).key("tables_incomplete").value(live.failed() || bySize.failed());
  if (trackLive) {
    j.key("live_bytes_at_exit").value((unsigned long)liveBytes).key("live_blocks_at_exit").value((unsigned long)live.size());
    j.key("peak_live_bytes").value((unsigned long)peakBytes).key("untracked_frees").value(untrackedFrees);
  }
  j.key("functions").beginArray();
  for (const Fn& f : fns)
    if (f.calls) j.beginObject().key("name").value(f.name).key("calls").value(f.calls).key("bytes").value(f.bytes).endObject();
  j.endArray().key("size_classes").beginArray();
  for (int k = 0; k < 65; ++k)
    if (classes[k])
      j.beginObject().key("min").value(k ? 1ul << (k - 1) : 0ul).key("max").value(k ? (k == 64 ? ~0ul : (1ul << k) - 1) : 0ul)
          .key("allocations").value(classes[k]).key("bytes").value(classBytes[k]).endObject();
  j.endArray().key("sizes").beginArray();
  for (auto& [size, n] : sizes) j.beginObject().key("size").value((unsigned long)size).key("allocations").value(n).endObject();
  j.endArray().key("sites").beginArray();
  for (const Site& s : sites)
    j.beginObject().key("pc").hex(s.pc).key("function").value(fns[s.fn].name).key("procedure").value(s.proc)
        .key("source").value(s.source).key("tail_call").value(s.tail).key("calls").value(s.calls)
        .key("bytes").value(s.bytes).endObject();
  j.endArray().endObject();
  std::fclose(o);
}
}
