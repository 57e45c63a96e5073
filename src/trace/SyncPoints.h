// The fallback schedule (docs/trace.md, "Ordering threads and processes"):
// a thread's path cut at the calls that may synchronise it with another
// thread or process (<atomx/sync_calls.h>), each side of a cut keyed by
// the time the recorder took around the call (its sync marks).  What
// Schedule.h then merges.
#pragma once

#include <atomx/trace.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "trace/Schedule.h"
#include "trace/TraceFiles.h"

namespace atomx::trace {

// A call of the regenerated path to a function of the sync list: the call
// instruction's index in the thread's own path (inherited blocks not
// counted), the function's number (ATOMX_SYNC_ID_*), the call's address.
struct SyncCall {
  uint64_t index;
  uint16_t call;
  uint64_t site;
};

// The number of a callee named as outsideCall names it ("write@plt",
// "write@got"), or -1: not a sync point.
int syncCallOf(const std::string& name);
const char* syncCallName(uint16_t call);

// Consumes a thread's regenerated path and keeps its sync calls.
class SyncCallFinder : public Consumer {
 public:
  void block(const BlockRun& b) override;
  void outsideCall(int thread, uint64_t site, const std::string& name) override;
  const std::vector<SyncCall>& calls() const { return calls_; }
  uint64_t instructions() const { return count_; }

 private:
  std::vector<SyncCall> calls_;
  uint64_t count_ = 0;
  bool inherited_ = false;  // the last block ran in the parent
};

// The cuts of one thread's path: at each sync call, the call instruction
// alone keyed by its entry (a SEND) or its return (a RECEIVE), the code
// after it by its return; the code before the first by `startKey` (the
// thread's start in the event log; 0: unknown, the first call's entry).
// The marks (`syncs`, the stream's; a forked child's inherited ones are
// skipped) pair with `calls` in order, ENTERED by ENTERED, each RETURNED
// with the innermost open call.  Where they stop fitting (a call through a
// pointer the path cannot name, a stream cut short), `problem` says so and
// the path is cut only up to there.  ATOMX_TEST_SCHEDULE_SKEW=NAME:NS
// (a test's hook) adds NS to both times of every call to NAME.
ThreadCuts syncCuts(int pid, int thread, const std::vector<SyncMark>& syncs, const std::vector<SyncCall>& calls,
                    uint64_t startKey, std::string& problem);

}  // namespace atomx::trace
