// Natural loops of a procedure's CFG.
//
// A back edge is an edge t -> h whose head h dominates its tail t (both
// reachable from the entry).  The natural loop of a header h is h together
// with every node that reaches the tail of one of h's back edges without
// passing through h; back edges to the same header make one loop.  Two
// natural loops are either disjoint or nested, so they form a forest.  A
// cycle entered at more than one place (irreducible control flow) has no
// back edge and is no loop here; blocks the entry does not reach are in no
// loop.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/Dominators.h"

namespace atomx::analysis {

struct Loop {
  uint32_t header = 0;
  std::vector<uint32_t> latches;  // tails of the back edges, ascending
  std::vector<uint32_t> body;     // every node of the loop, header included, ascending
  int32_t parent = -1;            // index of the innermost enclosing loop, or -1
  uint32_t depth = 1;             // 1 for an outermost loop
  // The single node outside the loop with an edge to the header, when there
  // is exactly one and the header is its only successor (LLVM's definition);
  // otherwise kNoNode.
  uint32_t preheader = kNoNode;
  // Edges from a body node to a node outside the loop (possibly the virtual
  // exit), in (from, to) order.
  std::vector<std::pair<uint32_t, uint32_t>> exits;

  bool contains(uint32_t n) const;
};

struct LoopForest {
  // Outer loops before the loops they contain; same depth by header.
  std::vector<Loop> loops;
  // Per node: the innermost loop containing it (-1 if none) and the number
  // of loops containing it (0 if none).
  std::vector<int32_t> innermost;
  std::vector<uint32_t> depth;
};

LoopForest naturalLoops(const Graph& g, const DomTree& dom);

// The natural loops of a procedure (it has blocks): of its procedureGraph,
// dominators rooted at its entry block.
LoopForest procedureLoops(const ir::Procedure& proc);

}  // namespace atomx::analysis
