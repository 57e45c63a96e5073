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

const char* syncCallName(uint16_t call) { return call < ATOMX_SYNC_COUNT ? kSync[call].name : "?"; }

void SyncCallFinder::block(const BlockRun& b) {
  inherited_ = b.inherited;
  if (!b.inherited) count_ += b.count;
}

void SyncCallFinder::outsideCall(int, uint64_t site, const std::string& name) {
  if (inherited_ || count_ == 0) return;
  const int k = syncCallOf(name);
  if (k >= 0) calls_.push_back({count_ - 1, uint16_t(k), site});
}

ThreadCuts syncCuts(int pid, int thread, const std::vector<SyncMark>& syncs, const std::vector<SyncCall>& calls,
                    uint64_t startKey, std::string& problem) {
  ThreadCuts t;
  t.pid = pid;
  t.thread = thread;
  uint64_t skew = 0;
  const int skewedCall = skewed(skew);
  // Each call's entry and return (0: none; a thread-only call made while
  // the process had one thread has neither: ATOMX_TRACE_MARK_SYNC_SKIPPED).
  std::vector<uint64_t> entry, ret;
  std::vector<size_t> open;  // the calls entered and not returned, innermost last
  auto unmarked = [&](size_t k) {
    problem = "its sync marks stop fitting its path at its call " + std::to_string(k) + " (" +
              (k < calls.size() ? std::string(syncCallName(calls[k].call)) + " at " + hex(calls[k].site) : "none") +
              "): it is ordered up to there";
  };
  for (const SyncMark& m : syncs) {
    if (m.inherited) continue;
    const uint64_t ns = m.ns + (m.call == skewedCall ? skew : 0);
    if (m.kind == ATOMX_TRACE_MARK_SYNC_SKIPPED) {
      for (uint64_t n = 0; n < m.ns && problem.empty(); ++n) {
        const size_t k = entry.size();
        if (k >= calls.size() || kSync[calls[k].call].when != ATOMX_SYNC_THREADS) unmarked(k);
        entry.push_back(0);
        ret.push_back(0);
      }
      if (!problem.empty()) break;
    } else if (m.kind == ATOMX_TRACE_MARK_SYNC_ENTERED) {
      const size_t k = entry.size();
      if (k >= calls.size() || calls[k].call != m.call) {
        unmarked(k);
        break;
      }
      entry.push_back(ns);
      ret.push_back(0);
      open.push_back(k);
    } else {
      // A call that never returned (exit, pthread_exit, a longjmp out of a
      // handler) is closed by the return of a call outside it.
      while (!open.empty() && calls[open.back()].call != m.call) open.pop_back();
      if (open.empty()) continue;
      ret[open.back()] = ns;
      open.pop_back();
    }
  }
  // The path's last calls may be thread-only ones made unmarked.
  size_t said = entry.size();
  while (problem.empty() && said < calls.size() && kSync[calls[said].call].when == ATOMX_SYNC_THREADS) ++said;
  if (problem.empty() && said < calls.size() && !syncs.empty())
    problem = "its path makes " + std::to_string(calls.size()) + " sync calls and its stream has marks for " +
              std::to_string(entry.size()) + ": it is ordered up to there";
  uint64_t first = 0;  // the first marked call's entry
  for (size_t k = 0; k < entry.size() && !first; ++k) first = entry[k];
  if (!first) first = startKey;
  t.cuts.push_back({0, startKey && startKey < first ? startKey : first});
  for (size_t k = 0; k < entry.size(); ++k) {
    if (!entry[k]) continue;  // unmarked: no cut
    const uint64_t back = ret[k] ? ret[k] : entry[k];
    t.cuts.push_back({calls[k].index, kSync[calls[k].call].way == ATOMX_SYNC_SEND ? entry[k] : back});
    t.cuts.push_back({calls[k].index + 1, back});
  }
  return t;
}

}  // namespace atomx::trace
