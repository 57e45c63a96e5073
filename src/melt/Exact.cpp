#include "melt/Exact.h"

#include <algorithm>
#include <numeric>

namespace atomx::melt {

namespace {
constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
}

ExactMiner::ExactMiner(unsigned maxLength, const std::vector<uint32_t>& lengths)
    : maxLength_(maxLength), lengths_(lengths) {
  nodes_.push_back({0, 0, 0, 0, 0, 0});  // the root: the empty sequence
  keys_.assign(1 << 16, 0);
  values_.assign(1 << 16, 0);
  mask_ = (1 << 16) - 1;
}

void ExactMiner::grow() {
  std::vector<uint64_t> keys(keys_.size() * 2, 0);
  std::vector<uint32_t> values(keys.size(), 0);
  const uint64_t mask = keys.size() - 1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (!keys_[i]) continue;
    uint64_t h = (keys_[i] * kMul) >> 20 & mask;
    while (keys[h]) h = (h + 1) & mask;
    keys[h] = keys_[i];
    values[h] = values_[i];
  }
  keys_.swap(keys);
  values_.swap(values);
  mask_ = mask;
}

uint32_t ExactMiner::child(uint32_t parent, uint32_t block) {
  const uint64_t key = (uint64_t(parent) << 32 | block) + 1;
  uint64_t h = (key * kMul) >> 20 & mask_;
  while (keys_[h]) {
    if (keys_[h] == key) return values_[h];
    h = (h + 1) & mask_;
  }
  const uint32_t id = uint32_t(nodes_.size());
  const Node& p = nodes_[parent];
  nodes_.push_back({parent, block, p.depth + 1, p.length + lengths_[block], 0, 0});
  keys_[h] = key;
  values_[h] = id;
  if (nodes_.size() * 2 > keys_.size()) grow();
  return id;
}

void ExactMiner::walk() {
  uint32_t node = 0;
  uint64_t length = 0;
  for (size_t q = head_; q < window_.size(); ++q) {
    length += lengths_[window_[q]];
    if (length > maxLength_) break;
    node = child(node, window_[q]);
    Node& n = nodes_[node];
    // Greedy, left to right: an occurrence counts unless it overlaps the
    // last one counted (starts are walked in order).
    if (position_ >= n.lastEnd) {
      ++n.occurrences;
      n.lastEnd = position_ + n.depth;
    }
  }
}

void ExactMiner::add(uint32_t block) {
  window_.push_back(block);
  pending_ += lengths_[block];
  // The oldest start's windows are complete once they cannot grow.
  while (head_ < window_.size() && pending_ > maxLength_) {
    walk();
    pending_ -= lengths_[window_[head_++]];
    ++position_;
  }
  if (head_ > 4096 && head_ * 2 > window_.size()) {
    window_.erase(window_.begin(), window_.begin() + long(head_));
    head_ = 0;
  }
}

void ExactMiner::cut() {
  while (head_ < window_.size()) {
    walk();
    pending_ -= lengths_[window_[head_++]];
    ++position_;
  }
  window_.clear();
  head_ = 0;
  pending_ = 0;
}

std::vector<ExactMiner::Found> ExactMiner::top(size_t k) {
  std::vector<uint32_t> order;
  for (uint32_t i = 1; i < nodes_.size(); ++i)
    if (nodes_[i].occurrences >= 2) order.push_back(i);
  auto coverage = [&](uint32_t i) { return nodes_[i].occurrences * nodes_[i].length; };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (coverage(a) != coverage(b)) return coverage(a) > coverage(b);
    if (nodes_[a].length != nodes_[b].length) return nodes_[a].length < nodes_[b].length;
    return a < b;
  });
  std::vector<Found> out;
  for (uint32_t i : order) {
    if (out.size() >= k) break;
    const Node& n = nodes_[i];
    std::vector<uint32_t> s(n.depth);
    for (uint32_t x = i, d = n.depth; d > 0; x = nodes_[x].parent) s[--d] = nodes_[x].block;
    const size_t p = smallestPeriod(s);
    if (p < s.size() && s.size() % p == 0) continue;  // a power of a shorter sequence
    bool explained = false;
    for (const Found& r : out) {
      const size_t rn = r.blocks.size();
      uint64_t m = 0;
      for (size_t j = 0; j < rn; ++j) {
        size_t t = 0;
        while (t < s.size() && s[t] == r.blocks[(j + t) % rn]) ++t;
        m += t == s.size();
      }
      // At least half of its occurrences can lie inside r's.
      if (m && n.occurrences <= 2 * m * r.occurrences) {
        explained = true;
        break;
      }
    }
    if (!explained) out.push_back({std::move(s), n.occurrences, n.length});
  }
  return out;
}

size_t smallestPeriod(const std::vector<uint32_t>& s) {
  if (s.empty()) return 0;
  std::vector<size_t> fail(s.size() + 1, 0);
  for (size_t i = 1, k = 0; i < s.size(); ++i) {
    while (k && s[i] != s[k]) k = fail[k];
    if (s[i] == s[k]) ++k;
    fail[i + 1] = k;
  }
  return s.size() - fail[s.size()];
}

}  // namespace atomx::melt
