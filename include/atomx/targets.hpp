// atomx: counting the run-time targets of indirect calls and jumps, per site
// (analysis side, C++; header only).
//
//     atomx::TargetCounts targets(nsites);        // at program start
//     targets.count(site, target);                // per execution, any thread
//     targets.forEach([](long site, uint64_t target, uint64_t n) { ... });  // at the end
//
// A site keeps its first four distinct targets in lock-free slots (nearly
// every indirect call site has at most four); further ones go to a map under
// a mutex.  Target 0 is never a target (it marks a free slot).
//
//     long callee = atomx::calleeOf(target, procs, nprocs, 3, externals);   // whose target it is
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace atomx {

class TargetCounts {
 public:
  explicit TargetCounts(long sites) : slots_(std::make_unique<Slot[]>(kSlots * size_t(sites))) {}

  void count(long site, uint64_t target) {
    for (Slot* s = &slots_[kSlots * size_t(site)]; s < &slots_[kSlots * size_t(site) + kSlots]; ++s) {
      uint64_t t = s->target.load(std::memory_order_relaxed);
      if (t == 0) {
        uint64_t expected = 0;  // claim the free slot, unless another thread just did
        t = s->target.compare_exchange_strong(expected, target) ? target : expected;
      }
      if (t == target) {
        s->count.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    std::lock_guard<std::mutex> lock(overflowLock_);
    ++overflow_[{site, target}];
  }

  // f(site, target, count) for every target seen at every site below `sites`.
  template <class F> void forEach(long sites, F&& f) {
    for (long k = 0; k < sites; ++k)
      for (Slot* s = &slots_[kSlots * size_t(k)]; s < &slots_[kSlots * size_t(k) + kSlots]; ++s)
        if (uint64_t t = s->target.load(std::memory_order_acquire)) f(k, t, s->count.load(std::memory_order_relaxed));
    std::lock_guard<std::mutex> lock(overflowLock_);
    for (auto& [key, n] : overflow_) f(key.first, key.second, n);
  }

 private:
  static constexpr size_t kSlots = 4;
  struct Slot {
    std::atomic<uint64_t> target{0}, count{0};
  };
  std::unique_ptr<Slot[]> slots_;
  std::mutex overflowLock_;
  std::map<std::pair<long, uint64_t>, uint64_t> overflow_;
};

// The callee of a run-time target: the index of the procedure that holds it,
// else -1 - the index in `externals` of its name, added there if new.  `procs`
// has `stride` longs per procedure, its start and end address first, in
// address order; `imported` maps the program's PLT stubs and GOT call targets
// to the index of their name in `externals`; anything else is named by its
// shared library's symbol (dladdr), else by its address ("0x7f...").
inline long calleeOf(uint64_t target, const long* procs, long nprocs, size_t stride, std::vector<std::string>& externals,
                     const std::map<uint64_t, long>* imported = nullptr) {
  long lo = 0, hi = nprocs;  // the first procedure starting after target
  while (lo < hi) {
    const long mid = (lo + hi) / 2;
    if (uint64_t(procs[stride * size_t(mid)]) <= target) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && target < uint64_t(procs[stride * size_t(lo - 1) + 1])) return lo - 1;
  if (imported)
    if (auto it = imported->find(target); it != imported->end()) return -1 - it->second;
  Dl_info info;
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)target);
  const std::string name = dladdr(reinterpret_cast<void*>(target), &info) && info.dli_sname ? info.dli_sname : hex;
  auto it = std::find(externals.begin(), externals.end(), name);
  if (it == externals.end()) it = externals.insert(it, name);
  return -1 - long(it - externals.begin());
}

}  // namespace atomx
