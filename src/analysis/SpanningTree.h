// A maximum-weight spanning forest of an undirected view of a graph: the one
// place where atomx chooses which edges of a CFG need not be instrumented.
//
// Both uses follow the same argument.  Counting (Knuth; Ball & Larus; gcc's
// profile.c, LLVM's CFGMST): put counters only on the edges outside a
// spanning tree of the CFG with its virtual EXIT -> entry edge, and every
// other edge's count follows from flow conservation.  Tracing (Larus'
// abstract execution; qpt; Mazieres & Smith section 2.2.2): the edges left
// uninstrumented must hold no directed cycle or diamond, which a forest
// guarantees.  Heavier (more often run) edges go into the tree first, so the
// instrumented ones are the rarely run ones.
//
// Kruskal's algorithm with union-find: edges marked `forced` join the forest
// first, in order, when they do not close a cycle (the imaginary EXIT ->
// entry edge); edges marked `excluded` never join (an edge already
// instrumented for another reason); the rest are taken by decreasing weight,
// ties by index, so the result depends only on the input.
#pragma once

#include <cstdint>
#include <vector>

namespace atomx::analysis {

struct TreeEdge {
  uint32_t a = 0, b = 0;  // endpoints (the direction does not matter)
  double weight = 0;
  bool forced = false;    // join first (skipped only if it would close a cycle)
  bool excluded = false;  // never in the tree
};

// For each edge, whether it is in the forest.  `nodes`: endpoints are < nodes.
std::vector<bool> maximumSpanningForest(uint32_t nodes, const std::vector<TreeEdge>& edges);

}  // namespace atomx::analysis
