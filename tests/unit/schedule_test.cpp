// trace::mergeSchedule (src/trace/Schedule.h) against a naive model: every
// thread's slices listed thread after thread, each key raised to the
// latest before it in its thread, then stably sorted by (key, pid, thread
// id).  Random cut lists, including equal keys across threads, keys that
// go back in time, repeated indices (empty slices) and a first cut past 0.
// A slice's CPU: its cut's, or for a cut that says none (-1), the nearest
// cut before it in its thread that says one, else the nearest after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "trace/Schedule.h"

namespace {

using atomx::trace::CutPoint;
using atomx::trace::Slice;
using atomx::trace::ThreadCuts;

std::vector<Slice> naive(const std::vector<ThreadCuts>& threads) {
  std::vector<Slice> all;
  for (size_t t = 0; t < threads.size(); ++t) {
    uint64_t latest = 0;
    const auto& c = threads[t].cuts;
    for (size_t k = 0; k < c.size(); ++k) {
      latest = std::max(latest, c[k].key);
      const uint64_t from = k == 0 ? 0 : c[k].index;
      const uint64_t to = k + 1 < c.size() ? c[k + 1].index : Slice::kPathEnd;
      int cpu = -1;
      for (size_t j = k + 1; j-- > 0 && cpu < 0;) cpu = c[j].cpu;
      for (size_t j = k; j < c.size() && cpu < 0; ++j) cpu = c[j].cpu;
      if (to > from) all.push_back({t, from, to, latest, cpu});
    }
  }
  std::stable_sort(all.begin(), all.end(), [&](const Slice& a, const Slice& b) {
    return std::make_tuple(a.key, threads[a.thread].pid, threads[a.thread].thread) <
           std::make_tuple(b.key, threads[b.thread].pid, threads[b.thread].thread);
  });
  return all;
}

TEST(Schedule, MergeEqualsNaiveModel) {
  std::mt19937_64 rng(38);
  for (int round = 0; round < 500; ++round) {
    std::vector<ThreadCuts> threads(1 + rng() % 5);
    for (size_t t = 0; t < threads.size(); ++t) {
      threads[t].pid = int(100 + rng() % 2);
      threads[t].thread = int(1000 + t * 7 % 5 + 10 * t);
      uint64_t index = rng() % 3, key = rng() % 20;
      for (int k = int(rng() % 8); k >= 0; --k) {
        threads[t].cuts.push_back({index, key, int(rng() % 3) - 1});
        index += rng() % 4;                // 0: an empty slice
        key = key + rng() % 10 - rng() % 4;  // at times back in time
      }
    }
    const std::vector<Slice> got = atomx::trace::mergeSchedule(threads), want = naive(threads);
    ASSERT_EQ(got.size(), want.size()) << "round " << round;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].thread, want[i].thread) << "round " << round << " slice " << i;
      EXPECT_EQ(got[i].from, want[i].from) << "round " << round << " slice " << i;
      EXPECT_EQ(got[i].to, want[i].to) << "round " << round << " slice " << i;
      EXPECT_EQ(got[i].key, want[i].key) << "round " << round << " slice " << i;
      EXPECT_EQ(got[i].cpu, want[i].cpu) << "round " << round << " slice " << i;
    }
  }
}

// One thread: sync points' cuts (-1) inside runs the log's switch-ins begin.
TEST(Schedule, UnknownCpuIsTheRunsCpu) {
  std::vector<ThreadCuts> one(1);
  one[0].pid = one[0].thread = 7;
  one[0].cuts = {{0, 1, -1}, {4, 2, 1}, {6, 3, -1}, {9, 4, 0}, {12, 5, -1}};
  const std::vector<Slice> got = atomx::trace::mergeSchedule(one);
  ASSERT_EQ(got.size(), 5u);
  const int want[] = {1, 1, 1, 0, 0};
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].cpu, want[i]) << "slice " << i;
  one[0].cuts = {{0, 1, -1}, {4, 2, -1}};  // no log: unknown
  for (const Slice& s : atomx::trace::mergeSchedule(one)) EXPECT_EQ(s.cpu, -1);
}

}  // namespace
