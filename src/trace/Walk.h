// What the regenerator (Regenerate.cpp) lends the other readers of a trace
// in src/trace (Merge.cpp): one stream regenerated with the trace's
// program and plan, and the summary's sums.  Private to src/trace.
#pragma once

#include <atomx/trace.hpp>

#include <string>
#include <vector>

#include "trace/TraceFiles.h"

namespace atomx::trace {

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
