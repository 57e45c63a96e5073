// Where an abstract-execution trace records witnesses: the edges of each
// procedure's CFG that write one, chosen so that the path through the
// procedure can be regenerated offline from the witnesses alone (Larus'
// abstract execution and qpt; Mazieres & Smith, "Abstract Execution in a
// Multi-Tasking Environment", sections 2.2.2-2.2.3).
//
// The graph (traceGraph): node i is block i, node blocks.size() the virtual
// EXIT.  Its arcs are the procedure's intra-procedural edges and one arc to
// EXIT for each edge that leaves it (return, tail call, no-return call,
// stop, unknown indirect jump); parallel edges (a jcc to the next
// instruction) are one arc.  Some nodes put something of their own in the
// trace stream, so the regenerator cannot tell it from a witness of the
// procedure: a block that calls (the callee's witnesses follow), a block
// ending in an indirect jump through a table (its target is recorded), and
// EXIT (the caller's witnesses follow).  A predicate is a node with two or
// more successors other than an indirect jump, whose successor the trace
// records, and other than an evaluated predicate (a conditional branch whose
// condition the regenerator computes from registers it knows: DataSlices.h,
// docs/trace.md "Evaluated predicates"), whose successor needs no witness.
//
// The placement (placeWitnesses):
//   1. blocking witnesses (section 2.2.3): for every predicate p and
//      successor x, if a path p -> x -> ... reaches a recording node, an
//      evaluated predicate or EXIT through no other predicate, the arc
//      p -> x writes a witness.  (Stopping at an evaluated predicate keeps
//      the witnesses of the loop it tests out of every predicate's look-
//      ahead, so step 3 drops them: a loop entered costs one witness, not
//      one per iteration; and the arcs out of an evaluated predicate never
//      write one);
//   2. every other arc joins a maximum-weight spanning forest
//      (SpanningTree.h) that starts with an imaginary EXIT -> entry arc for
//      each place control enters the procedure (its entry, landing pads,
//      blocks other procedures branch to) and with the arcs out of indirect
//      jumps; the arcs left out of it write witnesses (section 2.2.2);
//   3. except where no predicate can see the witness: on an arc from a node
//      that is no predicate and that no predicate reaches along witness-free
//      arcs (the forest puts one on every entry-to-EXIT path, which counting
//      needs and tracing does not: a procedure without predicates writes
//      nothing, as in qpt).
// Weights estimate how often an arc runs, as qpt did: loops iterate 10 times
// and branches split evenly (10^loop depth of the source / its successor
// count), or come from an earlier run's block counts.
//
// Witness values are the instrumented arcs numbered from 0 in arc order;
// one byte each when a procedure needs at most 255, else two.
// TracingCheck.h proves a placement correct, independently of this code.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

struct TraceArc {
  uint32_t from = 0, to = 0;  // to == exit node for an arc that leaves the procedure
};

struct TraceGraph {
  enum : uint8_t {
    kRecords = 1,    // writes to the stream itself: calls, or an indirect jump's target
    kIndirect = 2,   // ends in an indirect jump through a table (its successor is recorded)
    kEntered = 4,    // control enters here from outside (entry, landing pad, external entry)
    kEvaluated = 8,  // an evaluated predicate: the regenerator computes its successor (DataSlices.h)
  };
  uint32_t exit = 0;              // the virtual exit node (== number of blocks)
  std::vector<TraceArc> arcs;     // distinct, by source block then first appearance
  std::vector<uint8_t> flags;     // per node (exit included)
  std::vector<std::vector<uint32_t>> out;  // per node: indices of its arcs

  uint32_t nodes() const { return exit + 1; }
  bool isPredicate(uint32_t n) const { return out[n].size() >= 2 && !(flags[n] & (kIndirect | kEvaluated)); }
};

// `records`: per block, whether it writes to the stream itself when it
// starts (TracePlan.h: the entry of a procedure outside code may call, the
// address-taken blocks of one that jumps through pointers); empty for none.
// `evaluated`: per block, whether it is an evaluated predicate (kEvaluated);
// empty for none.
TraceGraph traceGraph(const ir::Procedure& proc, const std::vector<bool>& records = {},
                      const std::vector<bool>& evaluated = {});

struct WitnessPlan {
  std::vector<int32_t> witness;  // per arc of the graph: its witness value, or -1
  uint32_t count = 0;            // witnesses (instrumented arcs)
  uint32_t blocking = 0;         // of them, blocking witnesses (step 1)
  uint8_t width = 1;             // bytes per witness value
};

// blockCounts: per block, how often it ran in an earlier run (the dyninst or
// prof tool's counts), or empty to estimate.
WitnessPlan placeWitnesses(const ir::Procedure& proc, const TraceGraph& graph,
                           const std::vector<double>& blockCounts = {});

}  // namespace atomx::analysis
