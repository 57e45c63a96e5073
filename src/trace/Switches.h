// The privileged schedule log (DIR/schedule, include/atomx/trace_format.h
// AtomxScheduleRecord; docs/trace.md, "The privileged schedule log") read
// back, and each switch placed in its thread's regenerated path: the cut
// points that order the threads' paths against each other.  `atomx regen
// --switches` lists them; switchCuts gives them to the merge
// (trace/Schedule.h, mergeSchedule) as each thread's cuts.
#pragma once

#include <atomx/trace_format.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/Schedule.h"
#include "trace/ScheduleFile.h"

namespace atomx::trace {

class TraceReader;

// One thread switched out of or into a CPU, and where in its path: before
// instruction `index` of its regenerated sequence (the count of its own
// instructions that ran before the switch, as CutPoint counts them: a
// forked child's inherited ones are its parent's; a switch-in's is its
// previous switch-out's, 0 the first time).
struct SwitchPoint {
  uint64_t ns = 0;     // CLOCK_MONOTONIC, the event log's clock
  uint32_t cpu = 0;
  int tid = 0, pid = 0;
  bool out = false;    // switched out (else in)
  int other = 0;       // the thread that took its place (out) or that it replaced (in); 0: none of the trace
  uint32_t flags = 0;  // its record's ATOMX_SCHEDULE_*
  std::string stream;  // the stream (thread.TID.axt, or thread.TID-K.axt after exec) its index counts in
  uint64_t pc = 0;     // out, traced code: the original instruction it was about to run
  bool positioned = false;
  uint64_t pos = 0;    // positioned: its stream position
  bool placed = false;
  uint64_t index = 0;  // placed: as above
  uint64_t regs[16] = {};  // out, REGISTERS: the registers it was switched out with, by hardware number
  // placed, in a data trace's loop of evaluated predicates (which records
  // nothing per iteration), at the first of several visits of pc at its
  // position whose known registers all equal regs (or, none does, at the
  // first visit): its iteration is not known
  bool ambiguous = false;
  // Its record does not follow its CPU's last one (ScheduleChain): switches
  // the kernel did not report came before it, so the runs around it on
  // that CPU are not known exactly.
  bool unreported = false;
  std::string why;     // not placed: why
};

// Every switch of the log, in time order, each placed in its thread's path
// (the trace regenerated once): in the stream of the program the thread
// ran then (a program exec'd in the thread writes thread.TID-K.axt; the
// event log's `process` lines say when each began).
std::vector<SwitchPoint> switchPoints(const TraceReader& reader);

// The merge's input (trace/Schedule.h): per stream (by file name), a cut at
// each placed switch-in, keyed by its time, on its CPU -- the thread runs
// from there to its next switch-out, and nothing until its next switch-in.
std::map<std::string, ThreadCuts> switchCuts(const std::vector<SwitchPoint>& points);

// `NS CPU TID out|in OTHER INDEX PC FLAGS` (INDEX and PC `-` when unknown;
// FLAGS a comma list: preempted, untraced, inserted, pending, register, exiting, ambiguous,
// unreported (switches the log lacks came before it on its CPU), or `-`; a switch-out not placed ends `  # WHY`), as `atomx regen
// --switches` prints it.
std::string switchLine(const SwitchPoint& s);

}  // namespace atomx::trace
