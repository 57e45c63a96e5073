// parallelFor: fn(i) for every i in [0, n), over the machine's cores, for
// work whose items are independent (one procedure each: decoding, the CFG).
// Each fn(i) must touch only item i and read shared state that nothing
// writes meanwhile; then the result does not depend on the thread count,
// and the rewritten file is byte-identical with 1 and N threads
// (tests/programs: rewrite.threads.*).
//
// Threads: ATOMX_THREADS=N if set (1 = none; also for small n, which the
// tests rely on), else the cores, at most 8, and only when n > minItems (a
// thread costs more than a small program's whole analysis).  Every item
// runs even if one throws; then the exception of the lowest item is
// rethrown here, the one a single thread would have met first (runItems,
// below, which the trace's analysers share).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace atomx {

// The ATOMX_THREADS override (0 when unset or not a positive number).
inline unsigned threadsOverride() {
  const char* v = std::getenv("ATOMX_THREADS");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n > 0 ? unsigned(std::min(n, 64L)) : 0;
}

// runItems: fn(state, item) for every item of `items` (a permutation of
// [0, n), taken in that order, one at a time) on `threads` threads, the
// caller's among them, each with its own state from makeState().  Every item
// runs even if one throws; then the exception of the lowest-numbered item is
// rethrown here, the one a single thread taking the items in number order
// would have met first.
template <class MakeState, class F>
void runItems(const std::vector<size_t>& items, unsigned threads, MakeState&& makeState, F&& fn) {
  const size_t n = items.size();
  std::atomic<size_t> next{0};
  std::mutex failed;
  std::exception_ptr error;
  size_t errorAt = n;
  auto worker = [&] {
    auto state = makeState();
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      const size_t item = items[i];
      try {
        fn(state, item);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failed);
        if (item < errorAt) errorAt = item, error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// The threads for n items: `wanted` if not 0, else the cores (at most 8);
// never more than the items.
inline unsigned threadsFor(size_t n, unsigned wanted) {
  const unsigned threads = wanted ? wanted : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  return unsigned(std::min<size_t>(threads, std::max<size_t>(n, 1)));
}

template <class F>
void parallelFor(size_t n, F&& fn, size_t minItems = 256) {
  const unsigned forced = threadsOverride();
  const unsigned threads = !forced && n <= minItems ? 1 : threadsFor(n, forced);
  // Chunks small enough to balance the load, big enough to share one atomic.
  const size_t chunk = std::clamp<size_t>(n / (size_t(threads) * 16), 1, 64);
  std::vector<size_t> chunks;
  for (size_t i = 0; i < n; i += chunk) chunks.push_back(i / chunk);
  // (A chunk's items run in order, so the lowest failing chunk holds the
  // lowest failing item.)
  runItems(chunks, threads, [] { return 0; }, [&](int&, size_t c) {
    std::exception_ptr first;
    for (size_t j = c * chunk; j < std::min((c + 1) * chunk, n); ++j) {
      try {
        fn(j);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  });
}

}  // namespace atomx
