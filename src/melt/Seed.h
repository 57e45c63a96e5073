// The seed's melting (Melt.h, steps 3 to 5): instructions below the
// threshold dropped, the chunks left counted, each distinct chunk parsed
// for its cyclic sequence.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "melt/Melt.h"
#include "melt/Symbols.h"

namespace atomx::melt {

class SeedMelter {
 public:
  // `executions[i]`: instruction id i's executions (the coverage).
  SeedMelter(const std::vector<uint64_t>& executions, uint64_t threshold);
  void add(const std::vector<uint32_t>& insns);  // a block's instruction ids
  void cut();                                     // the segment ends
  // Fills the chunk figures and the sequences (insns, occurrences, cyclic,
  // chunks) of `out`, the `top` by coverage and `topChunks` chunks.
  void finish(SeedResult& out, size_t top, size_t topChunks);

 private:
  const std::vector<uint64_t>& executions_;
  uint64_t threshold_;
  std::vector<uint32_t> chunk_;
  std::unordered_map<std::vector<uint32_t>, uint64_t, IdsHash> distinct_;
  uint64_t chunks_ = 0, kept_ = 0, smallest_ = 0, largest_ = 0;
};

}  // namespace atomx::melt
