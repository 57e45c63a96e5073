// An earlier run's block counts (block start address -> executions), from
// the dyninst or prof tool's JSON: the weights of the placements that
// choose where instrumentation goes so that the hot paths carry the least
// of it -- abstract execution's witnesses (Witnesses.h) and the counters
// behind Counters::count (CounterPlacement.h).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

using BlockProfile = std::unordered_map<uint64_t, uint64_t>;

// Per block of `proc`, its count in `profile` (0 where it has none).
inline std::vector<double> blockCounts(const ir::Procedure& proc, const BlockProfile& profile) {
  std::vector<double> counts(proc.blocks.size(), 0);
  for (size_t b = 0; b < proc.blocks.size(); ++b)
    if (auto it = profile.find(proc.blocks[b].start); it != profile.end()) counts[b] = double(it->second);
  return counts;
}

}  // namespace atomx::analysis
