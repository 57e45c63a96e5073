// What the regenerator (Regenerate.cpp) lends the other readers of a trace
// in src/trace (Merge.cpp): one stream regenerated with the trace's
// program and plan, and the summary's sums.  Private to src/trace.
#pragma once

#include <atomx/trace.hpp>

#include <string>
#include <vector>

#include "trace/TraceFiles.h"

namespace atomx::trace {

// Reads stream `s` and regenerates it into `consumer` (as TraceReader::
// analyze does one shard); `insns` is the walking thread's own (one per
// thread).  s.syncs stays read afterwards, its bytes and signal marks go.
// `callPositions`: each outside call's stream position is appended to it
// just before the call's event.
void walkStream(const TraceReader::Impl& impl, Stream& s, Consumer& consumer, Summary& sum,
                std::vector<std::vector<Instruction>>& insns, std::vector<uint64_t>* callPositions = nullptr);
// The number of procedures of the trace's program: the size of `insns`.
size_t procedureCount(const TraceReader::Impl& impl);
// The trace's manifest.
const Manifest& manifestOf(const TraceReader::Impl& impl);
// to += s; and the event log's streamless threads added to `sum`.
void addSummary(Summary& to, const Summary& s);
void addStreamless(const std::string& dir, Summary& sum);

}  // namespace atomx::trace
