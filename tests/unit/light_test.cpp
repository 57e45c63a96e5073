// atomx/light.hpp: FlatMap against std::unordered_map on random operations
// (growth, backward-shift erase across the wrap-around, the reserved key),
// and SpinLock under contention.
#include <atomx/light.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

void expectSame(const atomx::FlatMap& map, const std::unordered_map<uint64_t, uint64_t>& model) {
  ASSERT_EQ(map.size(), model.size());
  size_t seen = 0;
  map.forEach([&](uint64_t key, uint64_t value) {
    auto it = model.find(key);
    ASSERT_NE(it, model.end()) << key;
    EXPECT_EQ(it->second, value) << key;
    ++seen;
  });
  EXPECT_EQ(seen, model.size());
}

TEST(FlatMap, RandomOperationsMatchUnorderedMap) {
  std::mt19937_64 rng(7);
  atomx::FlatMap map;
  std::unordered_map<uint64_t, uint64_t> model;
  // Few distinct keys (many collisions, erases of present keys) and the
  // keys a map is likely to get wrong: 0 and ~0 (its "free slot" marker).
  std::vector<uint64_t> keys = {0, ~uint64_t(0), 1, 16};
  for (int k = 0; k < 3000; ++k) keys.push_back(rng() % 2 ? rng() : 0x7f0000001000ull + 16 * (rng() % 100000));
  for (int step = 0; step < 200000; ++step) {
    const uint64_t key = keys[rng() % keys.size()];
    switch (rng() % 4) {
      case 0: case 1: {
        const uint64_t v = rng();
        map.at(key) += v, model[key] += v;
        break;
      }
      case 2:
        EXPECT_EQ(map.erase(key), model.erase(key) == 1);
        break;
      case 3: {
        uint64_t* v = map.find(key);
        auto it = model.find(key);
        ASSERT_EQ(v != nullptr, it != model.end());
        if (v) {
          EXPECT_EQ(*v, it->second);
        }
        break;
      }
    }
    if (step % 20000 == 0) expectSame(map, model);
  }
  expectSame(map, model);
  EXPECT_FALSE(map.failed());
}

TEST(FlatMap, GrowsAndShrinksBackToEmpty) {
  atomx::FlatMap map;
  const uint64_t n = 300000;  // several doublings
  for (uint64_t k = 1; k <= n; ++k) map.at(k * 48) = k;
  EXPECT_EQ(map.size(), n);
  for (uint64_t k = 1; k <= n; ++k) ASSERT_EQ(*map.find(k * 48), k);
  for (uint64_t k = 1; k <= n; k += 2) ASSERT_TRUE(map.erase(k * 48));
  for (uint64_t k = 1; k <= n; ++k) ASSERT_EQ(map.find(k * 48) != nullptr, k % 2 == 0) << k;
  for (uint64_t k = 2; k <= n; k += 2) ASSERT_TRUE(map.erase(k * 48));
  EXPECT_EQ(map.size(), 0u);
  EXPECT_FALSE(map.erase(48));
  EXPECT_EQ(map.find(96), nullptr);
}

TEST(SpinLock, GuardsACounterAcrossThreads) {
  atomx::SpinLock lock;
  atomx::FlatMap map;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 50000; ++k) {
        std::lock_guard<atomx::SpinLock> g(lock);
        ++map.at(uint64_t(k % 7));
      }
    });
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  map.forEach([&](uint64_t, uint64_t v) { total += v; });
  EXPECT_EQ(total, 4u * 50000u);
}

}  // namespace
