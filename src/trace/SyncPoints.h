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

// An outside call of the regenerated path (the thread's own, not
// inherited): the call instruction's index in the thread's own path, the
// stream position where the walk met it (a sync mark of it is at that
// position: trace_format.h), the function's number if its name is one of
// the sync list's (ATOMX_SYNC_ID_*; -1: another function, or a call
// through a pointer the path cannot name), its address.
struct SyncCall {
  uint64_t index;
  uint64_t pos;
  int call;
  uint64_t site;
};

// The number of a callee named as outsideCall names it ("write@plt",
// "write@got"), or -1: not a sync point.
int syncCallOf(const std::string& name);
const char* syncCallName(int call);

// Consumes a thread's regenerated path and keeps its outside calls;
// `positions` is the walk's (walkStream's callPositions).
class SyncCallFinder : public Consumer {
 public:
  explicit SyncCallFinder(const std::vector<uint64_t>& positions) : positions_(positions) {}
  void block(const BlockRun& b) override;
  void outsideCall(int thread, uint64_t site, const std::string& name) override;
  const std::vector<SyncCall>& calls() const { return calls_; }

 private:
  const std::vector<uint64_t>& positions_;
  std::vector<SyncCall> calls_;
  uint64_t count_ = 0;
  bool inherited_ = false;  // the last block ran in the parent
};

// The cuts of one thread's path: at each call that has an ENTERED mark
// (`syncs`, the stream's; a forked child's inherited ones are skipped) at
// its stream position, the call instruction alone keyed by its entry (a
// SEND) or its return (a RECEIVE, by the RETURNED mark of the innermost
// open call), the code after it by its return; the code before the first
// by `startKey` (the thread's start in the event log; 0: unknown, the
// first call's entry).  A call without marks is no cut: a thread-only call
// made while the process had one thread (sync_calls.h, THREADS), a call
// made before the recorder took the program's imports over.  `problem`
// says where the marks do not fit the path (a mark whose call the path
// names as another function; a call of the list marked ALWAYS that has no
// mark).  ATOMX_TEST_SCHEDULE_SKEW=NAME:NS (a test's hook) adds NS to
// both times of every call to NAME.
ThreadCuts syncCuts(int pid, int thread, const std::vector<SyncMark>& syncs, const std::vector<SyncCall>& calls,
                    uint64_t startKey, std::string& problem);

}  // namespace atomx::trace
