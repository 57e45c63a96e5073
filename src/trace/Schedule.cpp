// The merge of every thread's cut points into one sequence of slices
// (Schedule.h).
#include "trace/Schedule.h"

#include <algorithm>
#include <queue>
#include <tuple>

namespace atomx::trace {

std::vector<Slice> mergeSchedule(const std::vector<ThreadCuts>& threads) {
  // Each thread's slices, its keys raised to be non-decreasing.
  std::vector<std::vector<Slice>> own(threads.size());
  for (size_t t = 0; t < threads.size(); ++t) {
    const std::vector<CutPoint>& cuts = threads[t].cuts;
    uint64_t latest = 0;
    // A cut that does not say its CPU is in the run of the last one that
    // does (before the first one that does: on that one's CPU).
    int cpu = -1;
    for (const CutPoint& c : cuts)
      if (c.cpu >= 0) {
        cpu = c.cpu;
        break;
      }
    for (size_t k = 0; k < cuts.size(); ++k) {
      latest = std::max(latest, cuts[k].key);
      if (cuts[k].cpu >= 0) cpu = cuts[k].cpu;
      const uint64_t from = k == 0 ? 0 : cuts[k].index;  // before the first cut: at its key
      const uint64_t to = k + 1 < cuts.size() ? cuts[k + 1].index : Slice::kPathEnd;
      if (to > from) own[t].push_back({t, from, to, latest, cpu});
    }
  }
  // A k-way merge: (key, pid, thread id, input index) of each thread's next slice.
  using Head = std::tuple<uint64_t, int, int, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<size_t> next(threads.size(), 0);
  for (size_t t = 0; t < threads.size(); ++t)
    if (!own[t].empty()) heads.emplace(own[t][0].key, threads[t].pid, threads[t].thread, t);
  std::vector<Slice> out;
  while (!heads.empty()) {
    const size_t t = std::get<3>(heads.top());
    heads.pop();
    out.push_back(own[t][next[t]++]);
    if (next[t] < own[t].size()) heads.emplace(own[t][next[t]].key, threads[t].pid, threads[t].thread, t);
  }
  return out;
}

}  // namespace atomx::trace
