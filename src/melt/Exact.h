// The exact miner (Melt.h, the exact method): every sequence of whole
// consecutive blocks of a segment, up to a length in instructions, counted
// with its non-overlapping occurrences in a trie, streaming over the blocks.
//
// The candidates split by their first block: part p of P holds those whose
// first block id is p mod P.  A candidate's count depends only on its own
// occurrences, so the parts are mined independently, each by its own thread
// (ParallelExact), and their candidates ranked together (topSequences).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "melt/Melt.h"

namespace atomx::melt {

struct Found {
  std::vector<uint32_t> blocks;
  uint64_t occurrences;
  uint64_t length;  // instructions
};

class ExactMiner {
 public:
  ExactMiner(unsigned maxLength, unsigned part, unsigned parts);
  void add(uint32_t block, uint32_t length);  // the next block of the current segment
  void cut();                                 // the segment ends
  uint64_t candidates() const { return nodes_.size() - 1; }

 private:
  friend std::vector<Found> topSequences(const std::vector<const ExactMiner*>& parts, size_t k);
  struct Node {
    uint32_t parent, block;
    uint32_t depth, length;  // blocks, instructions
    uint64_t occurrences, lastEnd;
    uint64_t first;                 // where its first occurrence starts (ties)
    uint32_t lastBlock, lastChild;  // the child found last: loops repeat it
  };
  struct Entry {
    uint32_t block, length;
  };
  uint32_t child(uint32_t parent, uint32_t block, uint32_t length);
  uint32_t find(uint32_t parent, uint32_t block, uint32_t length);  // the hash table
  void walk();  // the windows from the oldest pending start
  void grow();

  unsigned maxLength_, part_, parts_;
  std::vector<Node> nodes_;
  // (parent << 32 | block) + 1 -> node; open addressing, linear probing.
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  uint64_t mask_ = 0;
  // The current segment's blocks from the oldest start not yet walked.
  std::vector<Entry> window_;
  size_t head_ = 0;
  uint64_t pending_ = 0;   // instructions in window_[head_..]
  uint64_t position_ = 0;  // global block position of window_[head_]
};

// The top k over all parts (Melt.h says which candidates are skipped).
std::vector<Found> topSequences(const std::vector<const ExactMiner*>& parts, size_t k);

// `threads` miners, one part each, each in its own thread, fed the same
// block stream in batches by the thread that reads the trace; 0: one miner,
// in the reading thread.
class ParallelExact {
 public:
  ParallelExact(unsigned maxLength, unsigned threads);
  ~ParallelExact();
  void add(uint32_t block, uint32_t length);
  void cut();
  // Waits for the miners; then the top k, and the candidates counted.
  std::vector<Found> finish(size_t k, uint64_t* candidates);

 private:
  static constexpr uint32_t kCut = UINT32_MAX;
  using Batch = std::vector<std::pair<uint32_t, uint32_t>>;  // (block, length); kCut: a cut
  struct Worker {
    std::unique_ptr<ExactMiner> miner;
    std::deque<std::shared_ptr<const Batch>> queue;
    std::thread thread;
  };
  void flush(bool last);
  void run(Worker& w);

  bool threaded_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Batch> batch_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
};

}  // namespace atomx::melt
