#include "melt/Exact.h"

#include <algorithm>

namespace atomx::melt {

namespace {
constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
}

ExactMiner::ExactMiner(unsigned maxLength, unsigned part, unsigned parts)
    : maxLength_(maxLength), part_(part), parts_(parts) {
  nodes_.push_back({0, 0, 0, 0, 0, 0, 0, 0, 0});  // the root: the empty sequence
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

uint32_t ExactMiner::child(uint32_t parent, uint32_t block, uint32_t length) {
  Node& from = nodes_[parent];
  if (from.lastChild && from.lastBlock == block) return from.lastChild;
  const uint32_t id = find(parent, block, length);
  nodes_[parent].lastBlock = block;
  nodes_[parent].lastChild = id;
  return id;
}

uint32_t ExactMiner::find(uint32_t parent, uint32_t block, uint32_t length) {
  const uint64_t key = (uint64_t(parent) << 32 | block) + 1;
  uint64_t h = (key * kMul) >> 20 & mask_;
  while (keys_[h]) {
    if (keys_[h] == key) return values_[h];
    h = (h + 1) & mask_;
  }
  const uint32_t id = uint32_t(nodes_.size());
  const Node& p = nodes_[parent];
  nodes_.push_back({parent, block, p.depth + 1, p.length + length, 0, 0, position_, 0, 0});
  keys_[h] = key;
  values_[h] = id;
  if (nodes_.size() * 2 > keys_.size()) grow();
  return id;
}

void ExactMiner::walk() {
  if (window_[head_].block % parts_ != part_) return;  // another part's
  uint32_t node = 0;
  uint64_t length = 0;
  for (size_t q = head_; q < window_.size(); ++q) {
    length += window_[q].length;
    if (length > maxLength_) break;
    node = child(node, window_[q].block, window_[q].length);
    Node& n = nodes_[node];
    // Greedy, left to right: an occurrence counts unless it overlaps the
    // last one counted (starts are walked in order).
    if (position_ >= n.lastEnd) {
      ++n.occurrences;
      n.lastEnd = position_ + n.depth;
    }
  }
}

void ExactMiner::add(uint32_t block, uint32_t length) {
  window_.push_back({block, length});
  pending_ += length;
  // The oldest start's windows are complete once they cannot grow.
  while (head_ < window_.size() && pending_ > maxLength_) {
    walk();
    pending_ -= window_[head_++].length;
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
    pending_ -= window_[head_++].length;
    ++position_;
  }
  window_.clear();
  head_ = 0;
  pending_ = 0;
}

std::vector<Found> topSequences(const std::vector<const ExactMiner*>& parts, size_t k) {
  struct Ref {
    const ExactMiner* part;
    uint32_t node;
    const ExactMiner::Node& n() const { return part->nodes_[node]; }
    uint64_t coverage() const { return n().occurrences * n().length; }
  };
  std::vector<Ref> order;
  for (const ExactMiner* p : parts)
    for (uint32_t i = 1; i < p->nodes_.size(); ++i)
      if (p->nodes_[i].occurrences >= 2) order.push_back({p, i});
  // Ties: shorter first, then the one that occurred first (one start and
  // one length make one candidate: the order is total, whatever the parts).
  std::sort(order.begin(), order.end(), [](const Ref& a, const Ref& b) {
    if (a.coverage() != b.coverage()) return a.coverage() > b.coverage();
    if (a.n().length != b.n().length) return a.n().length < b.n().length;
    return a.n().first < b.n().first;
  });
  std::vector<Found> out;
  for (const Ref& ref : order) {
    if (out.size() >= k) break;
    const ExactMiner::Node& n = ref.n();
    std::vector<uint32_t> s(n.depth);
    for (uint32_t x = ref.node, d = n.depth; d > 0; x = ref.part->nodes_[x].parent) s[--d] = ref.part->nodes_[x].block;
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

ParallelExact::ParallelExact(unsigned maxLength, unsigned threads) : threaded_(threads > 0) {
  const unsigned parts = std::max(1u, threads);
  for (unsigned t = 0; t < parts; ++t) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->miner = std::make_unique<ExactMiner>(maxLength, t, parts);
  }
  batch_ = std::make_unique<Batch>();
  if (threaded_)
    for (auto& w : workers_) w->thread = std::thread([this, w = w.get()] { run(*w); });
}

ParallelExact::~ParallelExact() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  changed_.notify_all();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void ParallelExact::add(uint32_t block, uint32_t length) {
  if (!threaded_) return workers_[0]->miner->add(block, length);
  batch_->emplace_back(block, length);
  if (batch_->size() >= (1 << 16)) flush(false);
}

void ParallelExact::cut() {
  if (!threaded_) return workers_[0]->miner->cut();
  batch_->emplace_back(kCut, 0);
  if (batch_->size() >= (1 << 16)) flush(false);
}

void ParallelExact::flush(bool last) {
  std::shared_ptr<const Batch> b(batch_.release());
  batch_ = std::make_unique<Batch>();
  std::unique_lock<std::mutex> lock(mutex_);
  // At most 8 batches in flight per miner: memory stays bounded.
  changed_.wait(lock, [&] {
    for (auto& w : workers_)
      if (w->queue.size() >= 8) return false;
    return true;
  });
  for (auto& w : workers_) w->queue.push_back(b);
  if (last) done_ = true;
  lock.unlock();
  changed_.notify_all();
}

void ParallelExact::run(Worker& w) {
  for (;;) {
    std::shared_ptr<const Batch> b;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !w.queue.empty() || done_; });
      if (w.queue.empty()) return;
      b = w.queue.front();
      w.queue.pop_front();
    }
    changed_.notify_all();
    for (const auto& [block, length] : *b) {
      if (block == kCut) w.miner->cut();
      else w.miner->add(block, length);
    }
  }
}

std::vector<Found> ParallelExact::finish(size_t k, uint64_t* candidates) {
  if (threaded_) {
    flush(true);
    for (auto& w : workers_) w->thread.join();
  }
  std::vector<const ExactMiner*> parts;
  *candidates = 0;
  for (auto& w : workers_) {
    w->miner->cut();
    parts.push_back(w->miner.get());
    *candidates += w->miner->candidates();
  }
  return topSequences(parts, k);
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
