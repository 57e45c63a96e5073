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
// rethrown here, the one a single thread would have met first.
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

template <class F>
void parallelFor(size_t n, F&& fn, size_t minItems = 256) {
  const unsigned forced = threadsOverride();
  unsigned threads = forced ? forced : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (!forced && n <= minItems) threads = 1;
  threads = unsigned(std::min<size_t>(threads, std::max<size_t>(n, 1)));
  // Chunks small enough to balance the load, big enough to share one atomic.
  const size_t chunk = std::clamp<size_t>(n / (size_t(threads) * 16), 1, 64);
  std::atomic<size_t> next{0};
  std::mutex failed;
  std::exception_ptr error;
  size_t errorAt = n;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(chunk)) < n;)
      for (size_t j = i; j < std::min(i + chunk, n); ++j) {
        try {
          fn(j);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(failed);
          if (j < errorAt) errorAt = j, error = std::current_exception();
        }
      }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace atomx
