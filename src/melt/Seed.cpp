#include "melt/Seed.h"

#include <algorithm>
#include <unordered_map>

namespace atomx::melt {

SeedMelter::SeedMelter(const std::vector<uint64_t>& executions, uint64_t threshold, uint64_t budget)
    : executions_(executions), threshold_(threshold), budget_(budget) {}

SeedMelter::Key SeedMelter::hash(const uint32_t* s, size_t n) const {
  // Two independent 64-bit hashes: FNV-1a, and a multiplicative one.
  uint64_t a = 0xcbf29ce484222325ull ^ n, b = n * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    a = (a ^ s[i]) * 0x100000001b3ull;
    b = (b + s[i] + 1) * 0xff51afd7ed558ccdull;
    b ^= b >> 29;
  }
  return {a, b};
}

void SeedMelter::add(const std::vector<uint32_t>& insns) {
  for (uint32_t i : insns) {
    if (executions_[i] >= threshold_) chunk_.push_back(i);
    else cut();
  }
}

void SeedMelter::cut() {
  if (chunk_.empty()) return;
  const Key key = hash(chunk_.data(), chunk_.size());
  if (fetching_) {
    auto it = contents_.find(key);
    if (it != contents_.end() && it->second.empty()) it->second = chunk_;
    chunk_.clear();
    return;
  }
  const uint64_t ordinal = chunks_++;
  kept_ += chunk_.size();
  smallest_ = smallest_ ? std::min<uint64_t>(smallest_, chunk_.size()) : chunk_.size();
  largest_ = std::max<uint64_t>(largest_, chunk_.size());
  auto [it, fresh] = distinct_.try_emplace(key);
  ChunkInfo& c = it->second;
  if (fresh) {
    c.first = ordinal;
    c.length = uint32_t(chunk_.size());
    c.period = uint32_t(smallestPeriod(chunk_));
    // Cyclic: every instruction recurs at interval p, twice at least.
    const bool cyclic = 2 * size_t(c.period) <= chunk_.size();
    const uint32_t take = cyclic ? c.period : c.length;
    c.sequence = hash(chunk_.data(), take);
    c.repeats = cyclic ? chunk_.size() / c.period : 1;
    auto [s, newSeq] = sequences_.try_emplace(c.sequence);
    if (newSeq) {
      s->second.first = ordinal;
      s->second.length = take;
      s->second.from = key;
    }
    s->second.cyclic = s->second.cyclic || cyclic;
    ++s->second.chunks;
    if (contentBytes_ < budget_) {
      contents_.emplace(key, chunk_);
      contentBytes_ += chunk_.size() * sizeof(uint32_t) + 64;
    }
  }
  ++c.count;
  sequences_[c.sequence].occurrences += c.repeats;
  chunk_.clear();
}

namespace {

// The n entries of `all` with the most coverage (occurrences x length) into
// `top`, most first; ties: shorter first, then the one seen first.
template <class Map, class Info>
void keepTop(const Map& all, uint64_t Info::*occurrences, size_t n, std::vector<std::pair<typename Map::key_type, Info>>& top) {
  top.assign(all.begin(), all.end());
  auto before = [occurrences](const auto& x, const auto& y) {
    const Info &a = x.second, &b = y.second;
    const uint64_t ca = a.*occurrences * a.length, cb = b.*occurrences * b.length;
    if (ca != cb) return ca > cb;
    if (a.length != b.length) return a.length < b.length;
    return a.first < b.first;
  };
  n = std::min(n, top.size());
  std::partial_sort(top.begin(), top.begin() + long(n), top.end(), before);
  top.resize(n);
}

}  // namespace

bool SeedMelter::rank(SeedResult& out, size_t top, size_t topChunks) {
  cut();
  out.keptInstructions = kept_;
  out.chunks = chunks_;
  out.distinctChunks = distinct_.size();
  out.smallestChunk = smallest_;
  out.largestChunk = largest_;
  out.sequencesFound = sequences_.size();
  keepTop(distinct_, &ChunkInfo::count, topChunks, topChunks_);
  keepTop(sequences_, &SeqInfo::occurrences, top, topSequences_);
  // Keep only the contents wanted; an empty one is fetched by melting again.
  std::unordered_map<Key, std::vector<uint32_t>, KeyHash> wanted;
  bool all = true;
  auto want = [&](const Key& k) {
    if (wanted.count(k)) return;  // a top chunk and a top sequence's source
    auto it = contents_.find(k);
    if (it != contents_.end()) wanted[k] = std::move(it->second);
    else all = false, wanted[k];
  };
  for (const auto& [k, c] : topChunks_) want(k);
  for (const auto& [k, s] : topSequences_) want(s.from);
  contents_.swap(wanted);
  distinct_.clear();
  sequences_.clear();
  return all;
}

void SeedMelter::finish(SeedResult& out) {
  cut();
  for (const auto& [k, c] : topChunks_) out.topChunks.push_back({contents_.at(k), c.count, c.period});
  for (const auto& [k, s] : topSequences_) {
    const std::vector<uint32_t>& from = contents_.at(s.from);
    Sequence q;
    q.insns.assign(from.begin(), from.begin() + s.length);
    q.occurrences = s.occurrences;
    q.cyclic = s.cyclic;
    q.chunks = s.chunks;
    out.sequences.push_back(std::move(q));
  }
}

// The seed's parse of a chunk (its step 5 pseudocode; Melt.h, IntervalRow).
std::vector<IntervalRow> intervalTable(const std::vector<uint32_t>& chunk) {
  std::vector<IntervalRow> rows;
  std::unordered_map<uint32_t, size_t> row, last;  // instruction -> its row, its previous position
  for (size_t k = 0; k < chunk.size(); ++k) {
    const uint32_t i = chunk[k];
    auto [it, fresh] = row.try_emplace(i, rows.size());
    if (fresh) {
      rows.push_back({k + 1, i, 1, {}});
    } else {
      IntervalRow& r = rows[it->second];
      ++r.count;
      const size_t d = k - last[i];
      if (std::find(r.intervals.begin(), r.intervals.end(), d) == r.intervals.end()) r.intervals.push_back(d);
    }
    last[i] = k;
  }
  return rows;
}

}  // namespace atomx::melt
