// The seed's melting (Melt.h, steps 3 to 5): instructions below the
// threshold dropped, the chunks left counted, each distinct chunk parsed
// for its cyclic sequence.
//
// Distinct chunks and sequences are told apart by a 128-bit hash of their
// instructions, so memory is a few dozen bytes per distinct chunk, not its
// length.  The contents of the first chunks seen are kept up to a budget;
// when a chunk or a sequence that makes the top was not kept, the caller
// melts the trace once more with fetch() to pick up its instructions.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "melt/Melt.h"

namespace atomx::melt {

class SeedMelter {
 public:
  struct Key {
    uint64_t a = 0, b = 0;
    bool operator==(const Key& o) const { return a == o.a && b == o.b; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return size_t(k.a); }
  };

  // `executions[i]`: instruction id i's executions (the coverage).
  // `budget`: bytes of chunk contents kept while counting.
  SeedMelter(const std::vector<uint64_t>& executions, uint64_t threshold, uint64_t budget = 64 << 20);
  void add(const std::vector<uint32_t>& insns);  // a block's instruction ids
  void cut();                                     // the segment ends
  // Counting done: fills the chunk figures of `out` and chooses the top
  // `top` sequences and `topChunks` chunks.  True when their instructions
  // are all at hand; else melt the trace again through fetch() first.
  bool rank(SeedResult& out, size_t top, size_t topChunks);
  void fetch() { fetching_ = true; }
  // The chosen sequences and chunks, with their instructions (ids).
  void finish(SeedResult& out);

 private:
  struct ChunkInfo {
    uint64_t count = 0, first = 0;  // occurrences; ordinal of the first
    uint32_t length = 0, period = 0;
    Key sequence;                   // the sequence it adds to
    uint64_t repeats = 0;           // its occurrences per chunk
  };
  struct SeqInfo {
    uint64_t occurrences = 0, chunks = 0, first = 0;
    uint32_t length = 0;
    bool cyclic = false;
    Key from;  // the first chunk it came from: its first `length` instructions
  };
  Key hash(const uint32_t* s, size_t n) const;

  const std::vector<uint64_t>& executions_;
  uint64_t threshold_;
  uint64_t budget_;
  bool fetching_ = false;
  std::vector<uint32_t> chunk_;
  std::unordered_map<Key, ChunkInfo, KeyHash> distinct_;
  std::unordered_map<Key, SeqInfo, KeyHash> sequences_;
  std::unordered_map<Key, std::vector<uint32_t>, KeyHash> contents_;  // chunk -> instructions
  uint64_t contentBytes_ = 0;
  std::vector<std::pair<Key, ChunkInfo>> topChunks_;
  std::vector<std::pair<Key, SeqInfo>> topSequences_;
  uint64_t chunks_ = 0, kept_ = 0, smallest_ = 0, largest_ = 0;
};

}  // namespace atomx::melt
