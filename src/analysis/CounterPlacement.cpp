#include "analysis/CounterPlacement.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/Loops.h"
#include "analysis/SpanningTree.h"
#include "support/Error.h"

namespace atomx::analysis {

namespace {

// How control leaves block b: its last instruction's flow (Sequential for an empty block).
x86::Flow endFlow(const ir::Procedure& proc, const ir::Block& b) {
  return b.insnCount ? proc.insns[b.firstInsn + b.insnCount - 1].flow : x86::Flow::Sequential;
}

bool endsInCall(const ir::Procedure& proc, const ir::Block& b) {
  const x86::Flow f = endFlow(proc, b);
  return f == x86::Flow::Call || f == x86::Flow::IndirectCall;
}

// What an increment costs on each kind of edge, in units of one inline
// increment at a place the code passes anyway: a taken edge or a jump-table
// edge goes through a stub and one more jump.  With estimated runs, a hair
// more than twice: where a block and a taken edge are estimated to cost
// alike (a loop whose body branches, split evenly), the block counts, for
// a taken jump costs more than an increment (another redirect of the
// fetch) and the even split is only a guess.  Measured runs decide alone
// (the fewest increments).
double placeCost(const ir::Procedure& proc, const CountEdge& e, bool measured) {
  if (e.kind != CountEdge::Kind::Flow) return 1;
  if (proc.blocks[e.block].succs[e.succ].kind == ir::EdgeKind::FallThrough) return 1;
  return measured ? 2 : 2.001;
}

// How often each block runs: measured, or 10^(loop depth).
std::vector<double> blockFrequencies(const ir::Procedure& proc, const std::vector<double>& measured) {
  if (measured.size() == proc.blocks.size()) return measured;
  std::vector<double> f(proc.blocks.size(), 1);
  if (proc.blocks.empty()) return f;
  const std::vector<uint32_t> depth = procedureLoops(proc).depth;
  for (uint32_t b = 0; b < proc.blocks.size(); ++b) f[b] = std::pow(10.0, double(std::min<uint32_t>(depth[b], 30)));
  return f;
}

// An intra-procedural edge's runs, estimated from block frequencies.  An
// edge that leaves a loop runs once per loop, not per iteration: no more
// than its target runs, nor than an even share of its source's.  The edges
// that stay in the loop share what is left: a latch's back edge runs about
// as often as the latch (so the taken jump it is, where a counter needs a
// stub and one more jump, stays in the tree, and a block of the loop
// counts instead).  Two that stay share it evenly but where one goes to a
// block that returns: Ball and Larus's return heuristic (a branch to a
// return is taken ~28% of the time), which puts the counters of a
// procedure that tests, and returns early, step after step (bzip2's
// mainGtU) on its way out, not on every step.
double estimatedRuns(const ir::Procedure& proc, const std::vector<double>& freq, uint32_t block, uint32_t succ) {
  const ir::Block& from = proc.blocks[block];
  const double runs = freq[block];
  const double share = runs / double(from.succs.size());
  double leaving = 0;
  unsigned staying = 0;
  for (const ir::Edge& s : from.succs)
    if (freq[s.to] < runs) leaving += std::min(share, freq[s.to]);
    else ++staying;
  const ir::Edge& edge = from.succs[succ];
  if (freq[edge.to] < runs) return std::min(share, freq[edge.to]);
  const double left = std::max(share * staying, runs - leaving);
  if (staying == 2 && from.succs.size() == 2) {
    auto returns = [&](uint32_t b) { return endFlow(proc, proc.blocks[b]) == x86::Flow::Return; };
    const bool here = returns(edge.to), there = returns(from.succs[1 - succ].to);
    if (here != there) return left * (here ? 0.28 : 0.72);
  }
  return left / staying;
}

}  // namespace

CountGraph countGraph(const ir::Procedure& proc) {
  CountGraph g;
  const uint32_t n = uint32_t(proc.blocks.size());
  g.blocks = n;
  const uint32_t X = g.exit();
  for (uint32_t b = 0; b < n; ++b) g.edges.push_back({CountEdge::Kind::Block, CountGraph::in(b), CountGraph::out(b), b});
  // A jump-table target that more than one table edge reaches: its stub
  // (one per target) counts them all, so no single one has a place.
  std::map<uint32_t, uint32_t> tableEdgesTo;
  for (const ir::Block& blk : proc.blocks)
    for (const ir::Edge& e : blk.succs)
      if (e.kind == ir::EdgeKind::JumpTable) ++tableEdgesTo[e.to];
  std::vector<uint32_t> inEdges(n, 0), outEdges(n, 0);  // Flow and Return edges at in(b), at out(b)
  for (uint32_t b = 0; b < n; ++b) {
    const ir::Block& blk = proc.blocks[b];
    const bool call = endsInCall(proc, blk);
    for (uint32_t s = 0; s < blk.succs.size(); ++s) {
      const ir::Edge& e = blk.succs[s];
      CountEdge c;
      c.block = b, c.succ = s;
      if (call && e.kind == ir::EdgeKind::FallThrough) {
        c.kind = CountEdge::Kind::Return, c.from = X, c.to = CountGraph::in(e.to);
      } else {
        c.kind = CountEdge::Kind::Flow, c.from = CountGraph::out(b), c.to = CountGraph::in(e.to);
        c.measurable = e.kind != ir::EdgeKind::JumpTable || tableEdgesTo[e.to] == 1;
        ++outEdges[b];
      }
      ++inEdges[e.to];
      g.edges.push_back(c);
    }
  }
  // A jump table that also reaches another procedure (a .cold part): its
  // jumps there leave this one, with no edge of it.
  bool crossTables = false;
  for (const ir::JumpTable& jt : proc.jumpTables)
    for (uint64_t target : jt.entryTargets) crossTables |= !proc.contains(target);
  for (uint32_t b = 0; b < n; ++b) {
    const ir::Block& blk = proc.blocks[b];
    const bool tableJump = crossTables && endFlow(proc, blk) == x86::Flow::IndirectJump;
    if (blk.isEntry || blk.isLandingPad || blk.isAddressTaken || blk.isExternalEntry) {
      CountEdge c{CountEdge::Kind::Enter, X, CountGraph::in(b), b};
      c.measurable = inEdges[b] == 0;  // then it is the block's count
      g.edges.push_back(c);
    }
    const bool leaves = endsInCall(proc, blk) || outEdges[b] == 0 || tableJump ||
                        std::any_of(blk.outs.begin(), blk.outs.end(), [](const ir::OutEdge& o) { return ir::leadsToExit(o.kind); });
    if (leaves) {
      CountEdge c{CountEdge::Kind::Leave, CountGraph::out(b), X, b};
      c.measurable = outEdges[b] == 0;
      g.edges.push_back(c);
    }
  }
  return g;
}

namespace {

// The placement with the forest given: chords, then the solve steps.
// `unknown` edges have no counter and join no tree; what cannot be derived
// because of them stays unknown.
CounterPlan solveFrom(const ir::Procedure& proc, const CountGraph& g, const std::vector<bool>& inTree,
                      const std::vector<bool>& unknownEdge) {
  CounterPlan plan;
  plan.chord.assign(g.edges.size(), false);
  plan.known.assign(g.edges.size(), false);
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    if (inTree[k] || unknownEdge[k]) continue;
    if (!g.edges[k].measurable) {
      plan.chords = UINT32_MAX;  // no place for this chord: the caller tries otherwise
      return plan;
    }
    plan.chord[k] = plan.known[k] = true;
    ++plan.chords;
  }
  // Peel the forest from its leaves (never at X, where conservation is not
  // assumed): a node with one edge whose count is unknown gets it from its
  // other edges.
  const uint32_t X = g.exit();
  std::vector<std::vector<uint32_t>> at(g.nodes());
  for (uint32_t k = 0; k < g.edges.size(); ++k) at[g.edges[k].from].push_back(k), at[g.edges[k].to].push_back(k);
  std::vector<uint32_t> unknown(g.nodes(), 0);
  for (uint32_t k = 0; k < g.edges.size(); ++k)
    if (!plan.known[k]) ++unknown[g.edges[k].from], ++unknown[g.edges[k].to];
  std::vector<uint32_t> ready;
  for (uint32_t v = 0; v < g.nodes(); ++v)
    if (v != X && unknown[v] == 1) ready.push_back(v);
  while (!ready.empty()) {
    const uint32_t v = ready.back();
    ready.pop_back();
    if (unknown[v] != 1) continue;
    const uint32_t t = *std::find_if(at[v].begin(), at[v].end(), [&](uint32_t k) { return !plan.known[k]; });
    const bool enters = g.edges[t].to == v;
    SolveStep step{t, {}};
    for (uint32_t k : at[v]) {
      if (k == t) continue;
      const bool kEnters = g.edges[k].to == v;
      step.terms.push_back({k, kEnters == enters});  // same side as t: subtracted
    }
    plan.steps.push_back(std::move(step));
    plan.known[t] = true;
    --unknown[v];
    const uint32_t u = enters ? g.edges[t].from : g.edges[t].to;
    if (--unknown[u] == 1 && u != X) ready.push_back(u);
  }
  const bool anyUnknown = std::find(unknownEdge.begin(), unknownEdge.end(), true) != unknownEdge.end();
  if (!anyUnknown && std::find(plan.known.begin(), plan.known.end(), false) != plan.known.end())
    throw InternalError("counter placement in " + proc.name + ": a tree edge's count is not derived");
  return plan;
}

// Each edge's runs from measured block counts: what flow conservation
// gives exactly (a node with one edge of unknown runs), then, for the rest,
// the most the flow left at both ends allows.  X conserves nothing.
std::vector<double> measuredEdgeRuns(const CountGraph& g, const std::vector<double>& blockRuns) {
  const size_t n = g.edges.size();
  std::vector<double> runs(n, -1);
  for (uint32_t b = 0; b < g.blocks; ++b) runs[g.blockEdge(b)] = blockRuns[b];
  std::vector<std::vector<uint32_t>> at(g.nodes());
  for (uint32_t k = 0; k < n; ++k) at[g.edges[k].from].push_back(k), at[g.edges[k].to].push_back(k);
  // The runs that must still leave v through its unknown exits (or enter
  // through its unknown entries).
  auto residual = [&](uint32_t v, bool exits) {
    double left = 0;
    for (uint32_t k : at[v])
      if (runs[k] >= 0) left += (g.edges[k].to == v) == exits ? runs[k] : -runs[k];
    return std::max(left, 0.0);
  };
  // Peel as solveFrom does: a node (not X) with one edge of unknown runs
  // gets it from its other edges.
  std::vector<uint32_t> unknown(g.nodes(), 0);
  for (uint32_t k = 0; k < n; ++k)
    if (runs[k] < 0) ++unknown[g.edges[k].from], ++unknown[g.edges[k].to];
  std::vector<uint32_t> ready;
  for (uint32_t v = 0; v < g.nodes(); ++v)
    if (v != g.exit() && unknown[v] == 1) ready.push_back(v);
  while (!ready.empty()) {
    const uint32_t v = ready.back();
    ready.pop_back();
    if (unknown[v] != 1) continue;
    const uint32_t k = *std::find_if(at[v].begin(), at[v].end(), [&](uint32_t e) { return runs[e] < 0; });
    runs[k] = residual(v, g.edges[k].from == v);
    const uint32_t u = g.edges[k].from == v ? g.edges[k].to : g.edges[k].from;
    --unknown[v];
    if (--unknown[u] == 1 && u != g.exit()) ready.push_back(u);
  }
  const double inf = 1e300;
  std::vector<double> out = runs;
  for (uint32_t k = 0; k < n; ++k)
    if (out[k] < 0) {
      const CountEdge& e = g.edges[k];
      out[k] = std::min(e.from == g.exit() ? inf : residual(e.from, true), e.to == g.exit() ? inf : residual(e.to, false));
    }
  return out;
}

}  // namespace

CounterPlan placeCounters(const ir::Procedure& proc, const CountGraph& g, const std::vector<double>& blockWeights,
                          const std::vector<uint32_t>& freeBlocks) {
  const bool measured = blockWeights.size() == proc.blocks.size();
  const std::vector<double> freq = blockFrequencies(proc, blockWeights);
  const std::vector<double> edgeRuns = measured ? measuredEdgeRuns(g, freq) : std::vector<double>{};
  std::vector<TreeEdge> tree;
  tree.reserve(g.edges.size());
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    const CountEdge& e = g.edges[k];
    TreeEdge t{e.from, e.to};
    double runs = freq[e.block];
    if (measured) {
      runs = edgeRuns[k];
    } else if (e.kind == CountEdge::Kind::Flow) {
      runs = estimatedRuns(proc, freq, e.block, e.succ);
    } else if (e.kind == CountEdge::Kind::Enter) {
      runs = 1;  // an entry that heads a loop is not entered per iteration
    }
    t.weight = runs * placeCost(proc, e, measured);
    t.forced = !e.measurable;
    tree.push_back(t);
  }
  for (uint32_t b : freeBlocks) tree[g.blockEdge(b)].weight = -1;  // below every runs x cost (>= 0)
  const std::vector<bool> none(g.edges.size(), false);
  CounterPlan plan = solveFrom(proc, g, maximumSpanningForest(g.nodes(), tree), none);
  if (plan.chords != UINT32_MAX) return plan;
  // Jump-table edges with no place formed a cycle (two tables reach the
  // same two blocks): no counters can tell them apart.  Count every block
  // of the procedure, and derive what the rest allows.
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    if (g.edges[k].kind == CountEdge::Kind::Block) tree[k].excluded = true;
    if (g.edges[k].kind == CountEdge::Kind::Flow && !g.edges[k].measurable) tree[k].forced = false, tree[k].excluded = true;
  }
  std::vector<bool> unknownEdge(g.edges.size(), false);
  for (uint32_t k = 0; k < g.edges.size(); ++k)
    unknownEdge[k] = g.edges[k].kind == CountEdge::Kind::Flow && !g.edges[k].measurable;
  // A forest edge at a node that a jump-table edge of unknown count also
  // touches cannot be derived there (sqlite3's exprNodeIsConstant: both
  // edges of a conditional branch into such blocks came out unknown, -1):
  // such an edge, when it has a place, gets a counter of its own, until only
  // the jump-table edges are left unknown.
  for (;;) {
    plan = solveFrom(proc, g, maximumSpanningForest(g.nodes(), tree), unknownEdge);
    if (plan.chords == UINT32_MAX) throw InternalError("counter placement in " + proc.name + ": a chord has no place");
    bool more = false;
    for (uint32_t k = 0; k < g.edges.size(); ++k)
      if (!plan.known[k] && !unknownEdge[k] && g.edges[k].measurable && !tree[k].excluded)
        tree[k].excluded = true, more = true;
    if (!more) break;
  }
  plan.everyBlock = true;
  return plan;
}

}  // namespace atomx::analysis
