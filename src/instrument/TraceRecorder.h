// TraceRecorder: what an abstract-execution trace makes the program write,
// as inline stores (Engine::addStore) -- the recorder side of
// analysis::TracePlan, whose regenerator side is src/trace.  Per traced
// procedure:
//   - ENTRY and its id before the entry block's first instruction, where
//     outside code may call it; BLOCK, its id and the block's index before
//     each tagged block (a computed goto's possible targets);
//   - RETURN after a call that may run outside code (callWritesReturn);
//     RESUMED, its id and the block's index after a call to setjmp;
//   - each witness on the edges of its arc: a fall-through after the
//     block's last instruction, a taken edge in the branch's stub, an arc
//     to EXIT before the last instruction (or on the edge that leaves);
//   - each jump-table target's block index, in that target's table stub;
//   - with data (TracePlan::data): the registers of each RECORD-AT-ENTRY
//     site before the block's first instruction, after its tags, and of
//     each RECORD-AFTER site after the instruction (a call: after its
//     RETURN or RESUMED, before the witness of its fall-through);
//   - with data: a library call's arguments before it, its result after
//     it, or the length it touches, measured by a call of the recorder's
//     atomx_trace_library before it (analysis::libraryLength).
// The format: include/atomx/trace_format.h.
#pragma once

#include "analysis/TracePlan.h"
#include "instrument/Engine.h"

namespace atomx::instrument {

struct TraceStoreCounts {
  uint64_t entries = 0, returns = 0, witnesses = 0, tableTargets = 0, blockTags = 0;
  uint64_t values = 0;  // registers a data trace stores, over all sites
  uint64_t measured = 0;  // library calls whose length the recorder measures (a call before each)
  uint64_t cursorLoops = 0;  // loops holding the cursor in a register (promoteTraceCursor)
};

TraceStoreCounts addTraceStores(Engine& engine, const analysis::TracePlan& plan);

// The loops whose stores keep the cursor in a register
// (analysis::promoteCursor): each loop's stores are marked
// (StoreRequest::cursor), a Load request goes on each of its entry edges
// and a Save on each of its exit edges, the register is reserved from
// other inserted code in it, and the loop is listed for the recorder
// (Engine::cursorLoops).  After every tool has added its calls and
// counters (addTraceStores's requests are only read): a loop where one
// is, or on whose edges, keeps %fs.  The number of loops.
size_t promoteTraceCursor(Engine& engine);

}  // namespace atomx::instrument
