// Dominators and post-dominators of a procedure's CFG.
//
// The analyses work on a Graph: plain successor and predecessor lists over
// nodes 0..n-1.  procedureGraph() makes one from a procedure: node i is block
// i, node blocks.size() is the virtual exit, and the edges are the
// intra-procedural ones (Block::succs) plus one edge to the exit for every
// leaving edge that leadsToExit (returns, tail calls, no-return calls, stops,
// unknown indirect jumps).  Call edges are not in it: a call comes back to its
// fall-through block.
//
// Dominators are computed with the iterative algorithm of Cooper, Harvey and
// Kennedy ("A Simple, Fast Dominance Algorithm", 2001) over reverse
// postorder.  The root of the dominator tree is the entry block; a block the
// entry does not reach (a landing pad reached only by the unwinder, a block
// only other procedures branch to, dead code) has no immediate dominator and
// dominates nothing but itself.
//
// Post-dominators are dominators of the reversed graph rooted at the exit.
// A block from which the exit cannot be reached (an infinite loop, or code
// leading only into one) would have none, so the reversed graph gets extra
// edges first, deterministically: the blocks that cannot reach the exit are
// split into strongly connected components, and every component with no
// edge to another such component (a closed cycle, or a lone block with no
// successor) gets one artificial edge to the exit from its lowest-numbered
// block.  Every block then reaches the exit; PostDominators::artificial lists
// the blocks that were given such an edge.  This is what LLVM's post-dominator
// tree does for infinite loops, with "lowest block number" as the choice.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

constexpr uint32_t kNoNode = UINT32_MAX;

struct Graph {
  std::vector<std::vector<uint32_t>> succs;
  std::vector<std::vector<uint32_t>> preds;

  explicit Graph(size_t n = 0) : succs(n), preds(n) {}
  uint32_t size() const { return uint32_t(succs.size()); }
  // Adds a -> b unless it is already there.
  void addEdge(uint32_t a, uint32_t b);
  Graph reversed() const;
};

// Blocks 0..n-1 and the virtual exit n (see above).
Graph procedureGraph(const ir::Procedure& proc);

// Nodes that `root` reaches, as flags; or any of `roots`.
std::vector<bool> reachableFrom(const Graph& g, uint32_t root);
std::vector<bool> reachableFrom(const Graph& g, const std::vector<uint32_t>& roots);

struct DomTree {
  uint32_t root = kNoNode;
  // idom[root] == root; kNoNode for a node the root does not reach.
  std::vector<uint32_t> idom;
  // Reachable nodes in reverse postorder of a depth-first walk from root.
  std::vector<uint32_t> rpo;
  // Preorder interval of each node in the tree: a dominates b iff
  // in[a] <= in[b] && out[b] <= out[a].  Unreachable nodes have in == out == 0.
  std::vector<uint32_t> in, out;
  // Depth in the tree (root 0).
  std::vector<uint32_t> level;

  bool reachable(uint32_t n) const { return idom[n] != kNoNode; }
  // Whether every path from the root to b passes through a (a node dominates
  // itself).  False when either is unreachable, except a == b.
  bool dominates(uint32_t a, uint32_t b) const;
};

// Dominator tree of `g` rooted at `root`.
DomTree dominators(const Graph& g, uint32_t root);

struct PostDominators {
  DomTree tree;                    // over the reversed graph, root = exit
  std::vector<uint32_t> artificial;  // blocks given an artificial edge to the exit
};

// Post-dominator tree of `g` with `exit` as its root (see above for the
// blocks that cannot reach it).
PostDominators postDominators(const Graph& g, uint32_t exit);

}  // namespace atomx::analysis
