// malloc tool, analysis side: counts the program's allocator calls per
// function and call site, a histogram of requested sizes (power-of-two
// classes and exact sizes), and, from the returned pointers, live and peak
// bytes.  Every thread allocates, so all updates happen under one lock.
//
// Every call the program's own code makes, however it makes it: at start
// the tool takes over the program's uses of each allocator function it
// imports (<atomx/hooks.h>: its PLT and GOT slots and the function-pointer
// data the loader filled in), so a call through a pointer -- an
// allocator's table `{calloc, realloc, free}` -- calls a wrapper here too.
// A call at an instrumented site (MallocCall, before it) names its site;
// a call that reaches a wrapper without one was made through a pointer (or
// from code atomx left in place) and is counted per return address.  A
// function the program defines itself (or a static program's) cannot be
// taken over: its instrumented sites count it as before (MallocCall and
// MallocReturn), and its calls through pointers are not seen, which the
// report says.
//
// The routines called at the sites use atomx/light.hpp's lock and map, which
// call nothing: atomx then leaves the vector state alone around those calls
// (std::mutex and std::map reach libc through the PLT: 3x the cost).
#include <atomx/address_map.h>
#include <atomx/facts.h>
#include <atomx/hooks.h>
#include <atomx/light.hpp>
#include <atomx/report.hpp>

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

// The address map, filled in by the atomx runtime before the program starts
// (return addresses in the moved code to original addresses).
extern "C" AtomxCodeMap atomx_analysis_code_map;
AtomxCodeMap atomx_analysis_code_map;

namespace {
// Must match malloc_inst.cpp.
enum Kind { kAlloc0, kAlloc1, kAlloc2, kCalloc, kRealloc, kReallocArray, kPosixMemalign, kFree };

struct Site {
  uint64_t pc = 0;  // an instrumented site: the call; another: the return address
  int fn = 0;
  bool tail = false;
  std::string proc, source;
  unsigned long calls = 0, bytes = 0;
};
struct Fn {
  std::string name;
  int kind = 0;
  unsigned long calls = 0, bytes = 0;
  int hooked = 0;  // places of the program taken over (atomx_hook_import), 0: none
  bool sites = false;  // the program has instrumented sites calling it
};
// What a call site's MallocCall leaves for its MallocReturn (same thread),
// for a function that is not taken over.
struct Pending {
  long site = -1;
  uint64_t size = 0, old = 0, oldSize = 0, memptr = 0;
  bool hadOld = false;
};
typedef uint64_t (*Real)(uint64_t, uint64_t, uint64_t);

atomx::SpinLock mu;
std::vector<Site> sites;  // instrumented sites, then the others as they are seen
size_t instrumentedSites;
atomx::FlatMap otherSites;  // (return address, function) -> index in sites + 1
std::vector<Fn> fns;
std::vector<Real> reals;  // per function: what the program would call
std::string program;
long topN = 10;
bool trackLive = true;
unsigned long classes[65], classBytes[65];  // class k: sizes with bit width k (0; 1; 2-3; 4-7 ...)
atomx::FlatMap bySize;  // size -> allocations
atomx::FlatMap live;    // pointer -> size, for pointers the program's calls returned
uint64_t liveBytes = 0, peakBytes = 0;
unsigned long untrackedFrees = 0;
__attribute__((tls_model("initial-exec"))) thread_local Pending pending;
// The instrumented site whose call is on its way to a wrapper (taken-over functions).
__attribute__((tls_model("initial-exec"))) thread_local long siteOnItsWay = -1;
// The program's code: its original executable segments (code atomx left in
// place runs there) and the moved code, and the load bias.
uint64_t codeLo[8], codeHi[8], bias;
int codeSegments;

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
// The size a call requests: an argument, or the product of two (a table,
// not a switch, which would jump through a table: heavy).
uint64_t requested(int kind, uint64_t a0, uint64_t a1, uint64_t a2) {
  static constexpr int kFirst[] = {0, 1, 2, 0, 1, 1, 2, 0}, kSecond[] = {-1, -1, -1, 1, -1, 2, -1, -1};
  const uint64_t args[3] = {a0, a1, a2};
  uint64_t size = args[kFirst[kind]];
  if (kSecond[kind] >= 0) size = mul(size, args[kSecond[kind]]);
  return size;
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
// One call counted at site `site` (mu held).
void count(Site& s, Fn& f, uint64_t size) {
  ++s.calls, ++f.calls;
  if (f.kind == kFree) return;
  s.bytes += size, f.bytes += size;
  ++classes[widthOf(size)], classBytes[widthOf(size)] += size;
  ++bySize.at(size);
}

// --- Functions taken over: every call reaches a wrapper ---------------------

bool inProgram(uint64_t a) {
  for (int k = 0; k < codeSegments; ++k)
    if (a >= codeLo[k] && a < codeHi[k]) return true;
  return false;
}
// The original link-time address of a code address of the program.
uint64_t original(uint64_t a) {
  const AtomxCodeMap& m = atomx_analysis_code_map;
  if (m.pairs && a >= m.newStart && a < m.newEnd) {
    const int64_t o = atomx_map_original_offset(m.pairs, m.count, a - m.base);
    if (o >= 0) return m.linkBase + uint64_t(o);
  }
  return a - bias;
}
// The site of a call no instrumented site announced (mu held).
long otherSite(int fn, uint64_t ret) {
  const uint64_t key = (ret << 6) | uint64_t(fn);  // original addresses are far below 2^58
  if (uint64_t* k = otherSites.find(key)) return long(*k) - 1;
  Site s;
  s.pc = ret, s.fn = fn;
  const long n = AtomxProcCount();
  long lo = 0, hi = n;  // procedures in address order: the last one starting at or before ret
  while (lo < hi) {
    const long mid = (lo + hi) / 2;
    if (AtomxProc(mid)->pc <= ret) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && ret <= AtomxProc(lo - 1)->endPc) s.proc = AtomxProc(lo - 1)->name;
  sites.push_back(s);
  otherSites.at(key) = sites.size();
  return long(sites.size()) - 1;
}
// Every call of a taken-over function: counted when the program's own code
// made it (an instrumented site announced it, or its return address is in
// the program's code), forwarded in every case.  A library that calls
// through a pointer the program gave it is forwarded only, as its own
// calls (which do not come here) are not counted either.
uint64_t through(int fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t ret) {
  long site = siteOnItsWay;
  siteOnItsWay = -1;
  if (site >= 0 && sites[size_t(site)].fn != fn) site = -1;
  if (site < 0 && !inProgram(ret)) return reals[size_t(fn)](a0, a1, a2);
  Fn& f = fns[size_t(fn)];
  const uint64_t size = requested(f.kind, a0, a1, a2);
  bool hadOld = false;
  uint64_t oldSize = 0;
  {
    std::lock_guard<atomx::SpinLock> g(mu);
    if (site < 0) site = otherSite(fn, original(ret));
    count(sites[size_t(site)], f, size);
    // free, and realloc's old block, before another thread can get it back.
    if (trackLive && a0 && (f.kind == kFree || f.kind == kRealloc || f.kind == kReallocArray)) {
      if (const uint64_t* old = live.find(a0)) hadOld = true, oldSize = *old;
      forget(a0);
    }
  }
  const uint64_t r = reals[size_t(fn)](a0, a1, a2);
  if (!trackLive || f.kind == kFree) return r;
  uint64_t ptr = r;
  if (f.kind == kPosixMemalign) ptr = r == 0 ? *reinterpret_cast<uint64_t*>(a0) : 0;
  std::lock_guard<atomx::SpinLock> g(mu);
  if (ptr) remember(ptr, size);
  else if (hadOld && size != 0) remember(a0, oldSize);  // realloc failed: the old block is still there
  return r;
}
template <int K>
uint64_t wrapper(uint64_t a0, uint64_t a1, uint64_t a2) {
  return through(K, a0, a1, a2, uint64_t(__builtin_return_address(0)));
}
template <int... K>
constexpr Real wrapperOf(int fn, std::integer_sequence<int, K...>) {
  constexpr Real all[] = {wrapper<K>...};
  return all[fn];
}

// The program's executable segments, from its program headers, and its
// load bias.
void findProgramCode() {
  bias = AtomxLoadBias();
  const ElfW(Phdr)* ph = reinterpret_cast<const ElfW(Phdr)*>(getauxval(AT_PHDR));
  const unsigned long n = getauxval(AT_PHNUM);
  for (unsigned long i = 0; ph && i < n && codeSegments < 7; ++i)
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
      codeLo[codeSegments] = bias + ph[i].p_vaddr, codeHi[codeSegments++] = bias + ph[i].p_vaddr + ph[i].p_memsz;
  const AtomxCodeMap& m = atomx_analysis_code_map;
  if (m.pairs) codeLo[codeSegments] = m.newStart, codeHi[codeSegments++] = m.newEnd;
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
  fns.resize(nm.size());
  reals.resize(nm.size());
  for (long k = 0; k < n; ++k) {
    Site& s = sites[k];
    s.pc = uint64_t(pcs[k]), s.fn = fnOf[k], s.tail = tail[k];
    s.proc = w[k].substr(0, w[k].find('\t'));
    s.source = w[k].substr(w[k].find('\t') + 1);
    fns[size_t(s.fn)].sites = true;
  }
  instrumentedSites = size_t(n);
  topN = top, trackLive = liveOn, program = prog;
  findProgramCode();
  constexpr int kMaxFns = 32;
  if (nm.size() > size_t(kMaxFns)) std::abort();  // malloc_inst.cpp's table grew: raise kMaxFns
  // A test's wrong tool (tool.malloc.pointers.fails): nothing taken over.
  const bool noHooks = std::getenv("ATOMX_TEST_MALLOC_NO_HOOKS") != nullptr;
  for (size_t k = 0; k < nm.size(); ++k) {
    fns[k].name = nm[k], fns[k].kind = kinds[k];
    if (noHooks) continue;
    void* real = nullptr;
    const int changed = atomx_hook_import(nm[k].c_str(),
                                          reinterpret_cast<void*>(wrapperOf(int(k), std::make_integer_sequence<int, kMaxFns>())),
                                          &real);
    fns[k].hooked = changed > 0 ? changed : 0;
    reals[k] = reinterpret_cast<Real>(real);
  }
}

void MallocCall(long site, uint64_t a0, uint64_t a1, uint64_t a2) {
  Site& s = sites[site];
  Fn& f = fns[s.fn];
  if (f.hooked) {  // its wrapper counts it
    siteOnItsWay = site;
    return;
  }
  const uint64_t size = requested(f.kind, a0, a1, a2);
  std::lock_guard<atomx::SpinLock> g(mu);
  count(s, f, size);
  if (f.kind == kFree) {
    if (trackLive && a0) forget(a0);
    return;
  }
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
  if (pending.site != site) return;  // not after our own MallocCall (or a taken-over function's)
  const Pending& p = pending;
  uint64_t ptr = rax;
  const int kind = fns[sites[site].fn].kind;
  if (kind == kPosixMemalign) ptr = rax == 0 ? *reinterpret_cast<uint64_t*>(p.memptr) : 0;
  std::lock_guard<atomx::SpinLock> g(mu);
  if (ptr) remember(ptr, p.size);
  else if (p.hadOld && p.size != 0) remember(p.old, p.oldSize);  // realloc failed: old block still there
  pending.site = -1;
}

// Live figures are complete when every allocator function the program's
// code calls was taken over: otherwise its calls through pointers (and a
// free's) are not seen.  The functions that were not.
std::string notTakenOver() {
  std::string list;
  for (const Fn& f : fns)
    if (f.sites && !f.hooked) list += (list.empty() ? "" : ", ") + f.name;
  return list;
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
  const std::string unseen = notTakenOver();
  unsigned long otherCalls = 0;
  for (size_t k = instrumentedSites; k < sites.size(); ++k) otherCalls += sites[k].calls;

  if (FILE* o = atomx::openToolOutput("malloc.out")) {
    std::fprintf(o, "malloc: allocator calls made by the program's own code (%s)\n", program.c_str());
    std::fprintf(o, "%lu allocations, %lu bytes requested, %lu frees, %zu call sites instrumented; %lu calls through pointers at %zu return addresses\n",
                 allocs, bytes, frees, instrumentedSites, otherCalls, sites.size() - instrumentedSites);
    if (trackLive && unseen.empty())
      std::fprintf(o, "not freed by the program's own calls at exit %lu bytes in %zu blocks, peak %lu bytes (%lu frees of pointers not seen allocated)\n",
                   (unsigned long)liveBytes, live.size(), (unsigned long)peakBytes, untrackedFrees);
    else if (trackLive)
      std::fprintf(o, "live bytes not known: the program defines %s itself (or is linked statically), so its calls through pointers are not seen\n",
                   unseen.c_str());
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
      const bool other = &s - sites.data() >= long(instrumentedSites);
      std::fprintf(o, "  0x%-10lx %12lu %14lu  %-14s %s%s%s%s%s\n", (unsigned long)s.pc, s.calls, s.bytes,
                   fns[s.fn].name.c_str(), readable(s.proc, 40).c_str(), s.source.empty() ? "" : " (", s.source.c_str(),
                   s.source.empty() ? "" : ")", s.tail ? " [tail call]" : other ? " [through a pointer: returns here]" : "");
    }
    std::fprintf(o, "Not seen: calls made inside shared libraries (strdup, fopen, libstdc++ ...), and their frees of the program's blocks.\n");
    std::fclose(o);
  }
  FILE* o = atomx::openToolOutput("malloc.json");
  if (!o) return;
  atomx::JsonWriter j(o);
  j.beginObject().key("tool").value("malloc").key("program").value(program);
  j.key("allocations").value(allocs).key("bytes_requested").value(bytes).key("frees").value(frees);
  j.key("live_tracking").value(trackLive).key("tables_incomplete").value(live.failed() || bySize.failed());
  j.key("not_taken_over").beginArray();
  for (const Fn& f : fns)
    if (f.sites && !f.hooked) j.value(f.name);
  j.endArray();
  if (trackLive && unseen.empty()) {
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
  for (size_t k = 0; k < instrumentedSites; ++k) {
    const Site& s = sites[k];
    j.beginObject().key("pc").hex(s.pc).key("function").value(fns[s.fn].name).key("procedure").value(s.proc)
        .key("source").value(s.source).key("tail_call").value(s.tail).key("calls").value(s.calls)
        .key("bytes").value(s.bytes).endObject();
  }
  j.endArray().key("pointer_calls").beginArray();
  for (size_t k = instrumentedSites; k < sites.size(); ++k) {
    const Site& s = sites[k];
    j.beginObject().key("return_address").hex(s.pc).key("function").value(fns[s.fn].name).key("procedure").value(s.proc)
        .key("calls").value(s.calls).key("bytes").value(s.bytes).endObject();
  }
  j.endArray().endObject();
  std::fclose(o);
}
}
