#include "melt/Seed.h"

#include <algorithm>

namespace atomx::melt {

SeedMelter::SeedMelter(const std::vector<uint64_t>& executions, uint64_t threshold)
    : executions_(executions), threshold_(threshold) {}

void SeedMelter::add(const std::vector<uint32_t>& insns) {
  for (uint32_t i : insns) {
    if (executions_[i] >= threshold_) chunk_.push_back(i);
    else cut();
  }
}

void SeedMelter::cut() {
  if (chunk_.empty()) return;
  ++chunks_;
  kept_ += chunk_.size();
  smallest_ = smallest_ ? std::min<uint64_t>(smallest_, chunk_.size()) : chunk_.size();
  largest_ = std::max<uint64_t>(largest_, chunk_.size());
  ++distinct_[chunk_];
  chunk_.clear();
}

void SeedMelter::finish(SeedResult& out, size_t top, size_t topChunks) {
  cut();
  out.keptInstructions = kept_;
  out.chunks = chunks_;
  out.distinctChunks = distinct_.size();
  out.smallestChunk = smallest_;
  out.largestChunk = largest_;
  struct Found {
    uint64_t occurrences = 0, chunks = 0;
    bool cyclic = false;
  };
  std::unordered_map<std::vector<uint32_t>, Found, IdsHash> found;
  std::vector<Chunk> all;
  all.reserve(distinct_.size());
  for (auto& [c, count] : distinct_) {
    const size_t p = smallestPeriod(c);
    all.push_back({c, count, p});
    // Cyclic: every instruction recurs at interval p, twice at least.
    if (2 * p <= c.size()) {
      Found& f = found[std::vector<uint32_t>(c.begin(), c.begin() + long(p))];
      f.occurrences += count * (c.size() / p);
      f.cyclic = true;
      ++f.chunks;
    } else {
      Found& f = found[c];
      f.occurrences += count;
      ++f.chunks;
    }
  }
  std::sort(all.begin(), all.end(), [](const Chunk& a, const Chunk& b) {
    if (a.count * a.insns.size() != b.count * b.insns.size()) return a.count * a.insns.size() > b.count * b.insns.size();
    if (a.insns.size() != b.insns.size()) return a.insns.size() < b.insns.size();
    return a.insns < b.insns;
  });
  if (all.size() > topChunks) all.resize(topChunks);
  out.topChunks = std::move(all);
  std::vector<Sequence> seqs;
  seqs.reserve(found.size());
  for (auto& [s, f] : found) {
    Sequence q;
    q.insns = s;
    q.occurrences = f.occurrences;
    q.cyclic = f.cyclic;
    q.chunks = f.chunks;
    seqs.push_back(std::move(q));
  }
  out.sequencesFound = seqs.size();
  std::sort(seqs.begin(), seqs.end(), [](const Sequence& a, const Sequence& b) {
    if (a.coverage() != b.coverage()) return a.coverage() > b.coverage();
    if (a.insns.size() != b.insns.size()) return a.insns.size() < b.insns.size();
    return a.insns < b.insns;
  });
  if (seqs.size() > top) seqs.resize(top);
  out.sequences = std::move(seqs);
}

}  // namespace atomx::melt
