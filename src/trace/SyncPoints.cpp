// The fallback schedule's cuts (SyncPoints.h).
#include "trace/SyncPoints.h"

#include <atomx/sync_calls.h>
#include <atomx/trace_format.h>

#include <cstdlib>
#include <cstring>

#include "support/Hex.h"

namespace atomx::trace {

namespace {

struct SyncInfo {
  const char* name;
  int way;   // ATOMX_SYNC_SEND, ATOMX_SYNC_RECEIVE
  int when;  // ATOMX_SYNC_ALWAYS, ATOMX_SYNC_THREADS
};
constexpr SyncInfo kSync[] = {
#define ATOMX_SYNC_INFO_(name, way, when) {#name, ATOMX_SYNC_##way, ATOMX_SYNC_##when},
    ATOMX_SYNC_CALLS(ATOMX_SYNC_INFO_)
#undef ATOMX_SYNC_INFO_
};
static_assert(sizeof kSync / sizeof kSync[0] == ATOMX_SYNC_COUNT);

// ATOMX_TEST_SCHEDULE_SKEW=NAME:NS: the call numbered NAME and NS, or -1.
int skewed(uint64_t& ns) {
  const char* v = std::getenv("ATOMX_TEST_SCHEDULE_SKEW");
  const char* colon = v ? std::strchr(v, ':') : nullptr;
  if (!colon) return -1;
  ns = std::strtoull(colon + 1, nullptr, 10);
  return syncCallOf(std::string(v, colon));
}

}  // namespace

int syncCallOf(const std::string& name) {
  const size_t at = name.find('@');
  const std::string base = name.substr(0, at);
  for (int k = 0; k < ATOMX_SYNC_COUNT; ++k)
    if (base == kSync[k].name) return k;
  return -1;
}

const char* syncCallName(int call) { return call >= 0 && call < ATOMX_SYNC_COUNT ? kSync[call].name : "a call through a pointer"; }

void SyncCallFinder::block(const BlockRun& b) {
  inherited_ = b.inherited;
  if (!b.inherited) count_ += b.count;
}

void SyncCallFinder::outsideCall(int, uint64_t site, const std::string& name) {
  if (inherited_ || count_ == 0 || positions_.empty()) return;
  calls_.push_back({count_ - 1, positions_.back(), syncCallOf(name), site});
}

ThreadCuts syncCuts(int pid, int thread, const std::vector<SyncMark>& syncs, const std::vector<SyncCall>& calls,
                    uint64_t startKey, std::string& problem) {
  ThreadCuts t;
  t.pid = pid;
  t.thread = thread;
  uint64_t skew = 0;
  const int skewedCall = skewed(skew);
  // Each call's entry and return (0: none) and its function (the mark's).
  std::vector<uint64_t> entry(calls.size(), 0), ret(calls.size(), 0);
  std::vector<int> called(calls.size(), -1);
  std::vector<size_t> open;  // the calls entered and not returned, innermost last
  size_t next = 0;           // calls before it are behind every mark from here on
  for (const SyncMark& m : syncs) {
    if (m.inherited) continue;
    const uint64_t ns = m.ns + (m.call == skewedCall ? skew : 0);
    if (m.kind == ATOMX_TRACE_MARK_SYNC_ENTERED) {
      while (next < calls.size() && calls[next].pos < m.pos) ++next;
      if (next == calls.size() || calls[next].pos != m.pos) continue;  // a call the path does not have: no cut
      const size_t k = next++;
      if (calls[k].call >= 0 && calls[k].call != m.call) {
        if (problem.empty())
          problem = std::string("its mark at stream byte ") + std::to_string(m.pos) + " is " + syncCallName(m.call) +
                    "'s, its path's call there (" + hex(calls[k].site) + ") " + syncCallName(calls[k].call) +
                    "'s: that call is no cut";
        continue;
      }
      entry[k] = ns;
      called[k] = m.call;
      open.push_back(k);
    } else {
      // A call that never returned (exit, pthread_exit, a longjmp out of a
      // handler) is closed by the return of a call outside it.
      while (!open.empty() && called[open.back()] != m.call) open.pop_back();
      if (open.empty()) continue;
      ret[open.back()] = ns;
      open.pop_back();
    }
  }
  size_t unmarked = 0, firstUnmarked = 0;
  for (size_t k = 0; k < calls.size(); ++k)
    if (!entry[k] && calls[k].call >= 0 && kSync[calls[k].call].when == ATOMX_SYNC_ALWAYS && !unmarked++) firstUnmarked = k;
  if (unmarked && problem.empty() && !syncs.empty())
    problem = std::to_string(unmarked) + " of its calls of the sync list have no marks (the first: " +
              syncCallName(calls[firstUnmarked].call) + " at " + hex(calls[firstUnmarked].site) + ")";
  uint64_t first = 0;  // the first marked call's entry
  for (size_t k = 0; k < calls.size() && !first; ++k) first = entry[k];
  if (!first) first = startKey;
  t.cuts.push_back({0, startKey && startKey < first ? startKey : first});
  for (size_t k = 0; k < calls.size(); ++k) {
    if (!entry[k]) continue;  // unmarked: no cut
    const uint64_t back = ret[k] ? ret[k] : entry[k];
    t.cuts.push_back({calls[k].index, kSync[called[k]].way == ATOMX_SYNC_SEND ? entry[k] : back});
    t.cuts.push_back({calls[k].index + 1, back});
  }
  return t;
}

}  // namespace atomx::trace
