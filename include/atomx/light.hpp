// atomx: building blocks for "light" analysis routines (analysis side, C++).
//
// An inserted call whose analysis routine, and everything it reaches, uses
// general registers only costs a fraction of one that does not: atomx then
// skips saving and restoring the x87/SSE/AVX state (XSAVE/XRSTOR, most of
// the cost of a call; src/instrument/RoutineFootprint decides).  Any call
// through the PLT counts as "may touch", since libc's string functions use
// AVX: std::mutex, std::map and operator new all make a routine heavy.  The
// summary line of `atomx ... -o OUT` says how many calls came out light.
//
// What is here calls nothing: SpinLock (std::lock_guard works with it) and
// FlatMap, an open-addressing uint64 -> uint64 hash map that gets its
// memory straight from the kernel (mmap and munmap system calls, inline).
// Header only.  Watch for the compiler's own vector instructions too: it
// zeroes or copies neighbouring fields with SSE (a switch becomes a jump
// through a table, an indirect jump: heavy too); objdump the routine if the
// summary line counts it heavy.
//
//     atomx::SpinLock lock;
//     atomx::FlatMap bySize;
//     void OnMalloc(long size) {                 // stays light
//       std::lock_guard<atomx::SpinLock> g(lock);
//       ++bySize.at(uint64_t(size));
//     }
#pragma once

#include <cstddef>
#include <cstdint>

namespace atomx {

// Hidden: a shared object calls its own default-visibility inline functions
// through the PLT, which would make the caller heavy.  Members are built for
// general registers only (the compiler would copy a Slot with SSE); that
// attribute stops inlining of anything else, so it is no tool for routines
// that use the standard library.  The members that move slots are not
// inlined either: inlined, they would be compiled for the caller's target.
#define ATOMX_LIGHT_HIDDEN __attribute__((visibility("hidden")))
#define ATOMX_LIGHT_GPR __attribute__((target("general-regs-only")))

// Zeroed memory straight from the kernel (an mmap system call: no libc, no
// PLT), or null if it refuses.  For per-thread state set up inside a light
// routine (tools/cache, tools/cachesim).
ATOMX_LIGHT_HIDDEN ATOMX_LIGHT_GPR inline void* kernelMemory(size_t bytes) {
  long r;
  asm volatile("mov %5, %%r10\n\tmov $-1, %%r8\n\txor %%r9d, %%r9d\n\tsyscall"
               : "=a"(r)
               : "0"(9L /* mmap */), "D"(0L), "S"(bytes), "d"(3L /* PROT_READ | PROT_WRITE */),
                 "r"(0x22L /* MAP_PRIVATE | MAP_ANONYMOUS */)
               : "rcx", "r8", "r9", "r10", "r11", "memory");
  return r < 0 && r > -4096 ? nullptr : reinterpret_cast<void*>(r);
}

// Copies `bytes` (a multiple of 8) word by word through general registers:
// a struct copy or memcpy would be SSE stores or a call to libc's.  For
// state copied into a thread's memory inside a light routine
// (tools/cache, tools/cachesim: a cachesim::Simulator's shape).
ATOMX_LIGHT_HIDDEN ATOMX_LIGHT_GPR inline void copyWords(void* to, const void* from, size_t bytes) {
  uint64_t* d = static_cast<uint64_t*>(to);
  const uint64_t* s = static_cast<const uint64_t*>(from);
  for (size_t k = 0; k < bytes / 8; ++k) {
    uint64_t w = s[k];
    asm("" : "+r"(w));  // no loop the compiler turns into a memcpy call
    d[k] = w;
  }
}

// A test-and-test-and-set lock, for short critical sections.
class ATOMX_LIGHT_HIDDEN SpinLock {
 public:
  ATOMX_LIGHT_GPR void lock() {
    while (__atomic_exchange_n(&held_, 1, __ATOMIC_ACQUIRE))
      while (__atomic_load_n(&held_, __ATOMIC_RELAXED)) asm volatile("pause");
  }
  ATOMX_LIGHT_GPR void unlock() { __atomic_store_n(&held_, 0, __ATOMIC_RELEASE); }

 private:
  char held_ = 0;
};

// uint64 keys (any value) to uint64 values, linear probing, doubled when 70%
// full.  Not thread-safe: guard it.  If the kernel refuses memory, at()
// returns a scratch slot and failed() says so from then on.
class ATOMX_LIGHT_HIDDEN FlatMap {
 public:
  FlatMap() = default;
  FlatMap(const FlatMap&) = delete;
  FlatMap& operator=(const FlatMap&) = delete;
  ~FlatMap() { release(slots_, capacity_); }

  // The value of `key`, inserted as 0 if absent.
  ATOMX_LIGHT_GPR uint64_t& at(uint64_t key) {
    if (key == kEmpty) return emptyKey(true);
    if (slots_)
      if (Slot* s = probe(slots_, capacity_, key); s->key == key) return s->value;
    if ((size_ + 1) * 10 > capacity_ * 7 && !grow()) return scratch_ = 0;
    Slot* s = probe(slots_, capacity_, key);
    if (s->key == kEmpty) s->key = key, s->value = 0, ++size_;
    return s->value;
  }
  // The value of `key`, or null.
  ATOMX_LIGHT_GPR uint64_t* find(uint64_t key) {
    if (key == kEmpty) return hasEmptyKey_ ? &emptyKeyValue_ : nullptr;
    if (!slots_) return nullptr;
    Slot* s = probe(slots_, capacity_, key);
    return s->key == kEmpty ? nullptr : &s->value;
  }
  // Removes `key`; false if it was absent.  Backward-shift deletion: no
  // tombstones, so a map that sees many inserts and erases stays fast.
  ATOMX_LIGHT_GPR __attribute__((noinline)) bool erase(uint64_t key) {
    if (key == kEmpty) return hasEmptyKey_ ? (hasEmptyKey_ = false, --size_, true) : false;
    if (!slots_) return false;
    Slot* hole = probe(slots_, capacity_, key);
    if (hole->key == kEmpty) return false;
    const size_t mask = capacity_ - 1;
    for (size_t i = size_t(hole - slots_), j = (i + 1) & mask; slots_[j].key != kEmpty; j = (j + 1) & mask) {
      const size_t home = hash(slots_[j].key) & mask;
      // slots_[j] may move into the hole if its home is not in (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) slots_[i] = slots_[j], i = j, hole = &slots_[j];
    }
    hole->key = kEmpty;
    --size_;
    return true;
  }
  ATOMX_LIGHT_GPR size_t size() const { return size_; }
  ATOMX_LIGHT_GPR bool failed() const { return failed_; }
  // Calls f(key, value) for every entry, in no particular order.
  template <class F>
  void forEach(F f) const {
    if (hasEmptyKey_) f(kEmpty, emptyKeyValue_);
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != kEmpty) f(slots_[i].key, slots_[i].value);
  }

 private:
  struct Slot {
    uint64_t key, value;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // a free slot (that key lives apart)

  ATOMX_LIGHT_GPR static size_t hash(uint64_t key) { return size_t((key * 0x9E3779B97F4A7C15ull) >> 17); }
  ATOMX_LIGHT_GPR static Slot* probe(Slot* slots, size_t capacity, uint64_t key) {
    for (size_t i = hash(key) & (capacity - 1);; i = (i + 1) & (capacity - 1))
      if (slots[i].key == key || slots[i].key == kEmpty) return &slots[i];
  }
  ATOMX_LIGHT_GPR uint64_t& emptyKey(bool insert) {
    if (insert && !hasEmptyKey_) hasEmptyKey_ = true, emptyKeyValue_ = 0, ++size_;
    return emptyKeyValue_;
  }
  ATOMX_LIGHT_GPR __attribute__((noinline)) bool grow() {
    if (failed_) return false;
    const size_t capacity = capacity_ ? capacity_ * 2 : 1024;
    Slot* slots = static_cast<Slot*>(allocate(capacity * sizeof(Slot)));
    if (!slots) return failed_ = true, false;
    for (size_t i = 0; i < capacity; ++i) slots[i].key = kEmpty;
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key != kEmpty) *probe(slots, capacity, slots_[i].key) = slots_[i];
    release(slots_, capacity_);
    slots_ = slots, capacity_ = capacity;
    return true;
  }
  // mmap/munmap as system calls: no libc, no PLT.
  ATOMX_LIGHT_GPR static void* allocate(size_t bytes) { return kernelMemory(bytes); }
  ATOMX_LIGHT_GPR static void release(Slot* slots, size_t capacity) {
    if (!slots) return;
    long r;
    asm volatile("syscall" : "=a"(r) : "0"(11L /* munmap */), "D"(slots), "S"(capacity * sizeof(Slot))
                 : "rcx", "r11", "memory");
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0, size_ = 0;
  bool failed_ = false, hasEmptyKey_ = false;
  uint64_t emptyKeyValue_ = 0, scratch_ = 0;
};

}  // namespace atomx
