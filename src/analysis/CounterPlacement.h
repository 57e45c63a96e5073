// Where to count so that every block and edge count of a procedure is known
// exactly from the fewest counters: the one place that decides it, for
// every tool that asks for counts (atomx::Counters::count).
//
// Knuth's argument, as gcc's profile.c and LLVM's CFGMST use it: where the
// count of every node's entries equals the count of its exits (flow
// conservation), only the edges outside a spanning tree (the chords) need a
// counter; each tree edge's count follows, leaf by leaf, from its node's
// other edges.  The cyclomatic number of the graph is how many counters are
// needed; which edges they go on decides what they cost, so the tree is a
// maximum-weight one (SpanningTree.h) with weight = estimated runs x the
// code an increment there needs.
//
// The graph (countGraph), made so that conservation holds at every node of
// it even when control leaves a procedure other than by returning:
//   - each block b is two nodes, in(b) and out(b), joined by the edge of
//     its own count (a counter there is an increment when b starts);
//   - an intra-procedural edge b -> c is out(b) -> in(c);
//   - the virtual node X stands for everything outside the procedure, and
//     conservation is never assumed at X: a procedure entered but not yet
//     left when the process ends, or left by longjmp, breaks it there;
//   - a block that ends in a call leaves to X (when it starts: the call is
//     its last instruction) and the call's return enters its fall-through
//     block from X (counted after the call returns, whichever way it
//     returns: normally, or a longjmp to a setjmp, so frames left by an
//     exception or a longjmp never unbalance a node);
//   - control leaving otherwise (return, tail call, no-return call, stop,
//     an indirect jump no table explains, a jump through a table that also
//     reaches another procedure, or nothing known) goes to X, and
//     control entering otherwise (the procedure's entry, a landing pad, a
//     block whose address is taken or that another procedure jumps to)
//     comes from X.
// Conservation still fails for a block that starts and never ends: a
// signal handler that does not return, a fault, or the process ending in a
// system call inside the block.  Those cases are documented where counts
// are (docs/instrumenting.md).
//
// Some edges cannot hold a counter: an entry from X into a block that also
// has predecessors (no place sees only those entries), a jump-table edge
// whose target another table edge of the procedure shares (the target's
// stub sees them all).  They are forced into the tree.  With each block
// split in two, entries and exits never close a cycle among themselves
// (each touches X and a distinct node); jump-table edges can (two tables
// that reach the same two blocks), and then the procedure counts every
// block (CounterPlan::everyBlock).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

struct CountEdge {
  enum class Kind : uint8_t {
    Block,   // in(block) -> out(block): the block's own count
    Flow,    // out(block) -> in(to): the block's intra-procedural edge `succ`
    Return,  // X -> in(to): the call ending `block` returned (its fall-through edge `succ`)
    Enter,   // X -> in(block): entered from outside (entry, landing pad, ...)
    Leave,   // out(block) -> X: left other than through an edge of the procedure
  };
  Kind kind = Kind::Block;
  uint32_t from = 0, to = 0;  // nodes
  uint32_t block = 0;         // the block it belongs to (Return, Flow: the source)
  uint32_t succ = 0;          // Flow, Return: index in blocks[block].succs
  // Where a counter measures it: at the start of `block` (Block; Enter or
  // Leave when the node has no other edge on that side), or on the edge
  // blocks[block].succs[succ] (Flow, Return).  False: it has no place.
  bool measurable = true;
  bool atBlockStart() const { return kind == Kind::Block || kind == Kind::Enter || kind == Kind::Leave; }
};

struct CountGraph {
  uint32_t blocks = 0;
  std::vector<CountEdge> edges;
  uint32_t nodes() const { return 2 * blocks + 1; }
  uint32_t exit() const { return 2 * blocks; }
  static uint32_t in(uint32_t b) { return 2 * b; }
  static uint32_t out(uint32_t b) { return 2 * b + 1; }
  uint32_t blockEdge(uint32_t b) const { return b; }  // the Block edges come first, in block order
};

CountGraph countGraph(const ir::Procedure& proc);

// One derived count: edges[edge] = sum over terms of +-edges[term].
struct SolveStep {
  uint32_t edge = 0;
  std::vector<std::pair<uint32_t, bool>> terms;  // (edge, negated)
};

struct CounterPlan {
  std::vector<bool> chord;        // per edge: a counter measures it
  std::vector<bool> known;        // per edge: measured or derived (see everyBlock)
  std::vector<SolveStep> steps;   // in order: every other known edge's count
  uint32_t chords = 0;
  // Two jump tables of the procedure reach the same blocks, through edges
  // no counter can tell apart (the stub of a jump-table target counts every
  // table's jumps there): then every block has a counter, and those edges,
  // and what only they would give, are not known.  Otherwise every edge is.
  bool everyBlock = false;
};

// `blockWeights`: per block, how often it runs (an earlier run's counts,
// BlockProfile.h), or empty to estimate as qpt did (10^loop depth, branches
// split evenly).  Measured, an edge's runs are what flow conservation gives
// from the block counts where it gives them, else the most the flow left at
// both its ends allows.
//
// `freeBlocks`: blocks whose own count costs nothing where they run (an
// induction variable gives it, CounterPromotion.h): the tree takes their
// Block edges last, so that each is a chord wherever a cycle runs through
// it.
CounterPlan placeCounters(const ir::Procedure& proc, const CountGraph& graph,
                          const std::vector<double>& blockWeights = {},
                          const std::vector<uint32_t>& freeBlocks = {});

}  // namespace atomx::analysis
