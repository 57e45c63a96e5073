// The exact miner (Melt.h, mineExact): every sequence of whole consecutive
// blocks of a segment, up to a length in instructions, counted with its
// non-overlapping occurrences in a trie, streaming over the blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "melt/Melt.h"

namespace atomx::melt {

class ExactMiner {
 public:
  // `lengths[b]`: instructions in block id b (grows as blocks appear).
  ExactMiner(unsigned maxLength, const std::vector<uint32_t>& lengths);
  void add(uint32_t block);  // the next block of the current segment
  void cut();                // the segment ends
  // The top sequences as block-id sequences (Melt.h says which are skipped).
  struct Found {
    std::vector<uint32_t> blocks;
    uint64_t occurrences;
    uint64_t length;  // instructions
  };
  std::vector<Found> top(size_t k);
  uint64_t candidates() const { return nodes_.size() - 1; }

 private:
  struct Node {
    uint32_t parent, block;
    uint32_t depth, length;  // blocks, instructions
    uint64_t occurrences, lastEnd;
  };
  uint32_t child(uint32_t parent, uint32_t block);
  void walk();  // the windows from the oldest pending start
  void grow();

  unsigned maxLength_;
  const std::vector<uint32_t>& lengths_;
  std::vector<Node> nodes_;
  // (parent << 32 | block) + 1 -> node; open addressing, linear probing.
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  uint64_t mask_ = 0;
  // The current segment's blocks from the oldest start not yet walked.
  std::vector<uint32_t> window_;
  size_t head_ = 0;
  uint64_t pending_ = 0;   // instructions in window_[head_..]
  uint64_t position_ = 0;  // global block position of window_[head_]
};

}  // namespace atomx::melt
