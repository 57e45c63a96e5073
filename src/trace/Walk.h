// What the regenerator (Regenerate.cpp) lends the other readers of a trace
// in src/trace (Merge.cpp): one stream regenerated with the trace's
// program and plan, and the summary's sums.  Private to src/trace.
#pragma once

#include <atomx/trace.hpp>

#include <string>
#include <vector>

#include "trace/TraceFiles.h"

namespace atomx::trace {

// In a trace with data the walk goes instruction by instruction, and knows
// before each where the stream stands (the values recorded among a block's
// instructions move it inside the block) and the registers it knows there.
// A consumer that is also a WalkProbe (the schedule log's placement,
// Switches.cpp) is told both before each instruction it walks, before the
// block run that holds the instruction is reported.
struct WalkPoint {
  uint32_t offset;       // the instruction's index in the run to be reported (BlockRun::insns)
  uint64_t pc;
  uint64_t pos;          // the stream position before it (every record before it read)
  uint64_t runPos;       // the run's (BlockRun::streamPos)
  const uint64_t* gpr;   // the walk's registers before it, by hardware number
  uint16_t known;        // those an interrupted context's must equal there (comparableRegisters)
  bool inherited;        // as BlockRun's (a forked child's parent's)
};
class WalkProbe {
 public:
  virtual ~WalkProbe() = default;
  virtual void before(const WalkPoint& at) = 0;
};

// A walker's instruction lists: per program of the trace, per procedure
// (filled as met).
using InstructionLists = std::vector<std::vector<std::vector<Instruction>>>;

// Reads stream `s` and regenerates it into `consumer` (as TraceReader::
// analyze does one shard), with its own program; `insns` is the walking
// thread's own (one per thread, from instructionLists).  s.syncs stays read afterwards, its bytes and signal marks go.
// `callPositions`: each outside call's stream position is appended to it
// just before the call's event.
void walkStream(const TraceReader::Impl& impl, Stream& s, Consumer& consumer, Summary& sum,
                InstructionLists& insns, std::vector<uint64_t>* callPositions = nullptr);
// Empty lists for every procedure of every program of the trace.
InstructionLists instructionLists(const TraceReader::Impl& impl);
// The trace's manifest.
const Manifest& manifestOf(const TraceReader::Impl& impl);
// to += s; and the event log's streamless threads added to `sum`.
void addSummary(Summary& to, const Summary& s);
void addStreamless(const std::string& dir, Summary& sum);

}  // namespace atomx::trace
