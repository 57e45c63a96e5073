// The order of every thread's path against the others' (docs/trace.md,
// "Ordering threads and processes"): the one unit that turns per-thread cut
// points into one interleaved sequence of slices.  Whatever says where a
// thread ran -- the sync points the recorder timestamps (the fallback mode,
// SyncPoints.h), or an exact schedule log of when each thread was switched
// in and out -- gives each thread's path as cut points, and
// `mergeSchedule` merges them.  It knows nothing of streams or walks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace atomx::trace {

// Where a thread's path is cut: the slice from instruction `index` of the
// thread's regenerated path (its own instructions, counted from 0: a forked
// child's inherited ones are its parent's and do not count) up to the next
// cut runs at time `key` (CLOCK_MONOTONIC nanoseconds, the event log's
// clock) in the merged order.
struct CutPoint {
  uint64_t index = 0;
  uint64_t key = 0;
  int cpu = -1;  // the CPU the slice ran on, when the source knows it; else -1
};

// One thread's cuts, by increasing index (equal indices: the later cut
// wins, the slice between them is empty).  The slice before the first cut,
// if that is not at 0, runs at the first cut's key.
struct ThreadCuts {
  int pid = 0;
  int thread = 0;  // the thread's id (its stream's)
  std::vector<CutPoint> cuts;
};

// A part of one thread's path in the merged sequence: instructions
// [from, to) of threads[thread] (to == kPathEnd: up to its end).
struct Slice {
  static constexpr uint64_t kPathEnd = UINT64_MAX;
  size_t thread = 0;  // index in the input
  uint64_t from = 0, to = 0;
  uint64_t key = 0;
  // The CPU it ran on: its cut's; for a cut that does not say (-1: a sync
  // point's, inside a run), the CPU of the run it is in, its thread's last
  // cut before it that says one (before the first such cut: that cut's).
  // -1 only when none of its thread's cuts says a CPU (no schedule log).
  int cpu = -1;
};

// Every thread's slices, each thread's in its own order, merged by key;
// equal keys by (pid, thread id).  A thread's keys that go back in time
// (clocks read on two CPUs are one clock, CLOCK_MONOTONIC, but a source
// may be coarse) are raised to the latest before them: a thread's own
// order always wins.  Empty slices are left out.
std::vector<Slice> mergeSchedule(const std::vector<ThreadCuts>& threads);

}  // namespace atomx::trace
