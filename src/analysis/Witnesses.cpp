#include "analysis/Witnesses.h"

#include <algorithm>
#include <cmath>

#include "analysis/Loops.h"
#include "analysis/SpanningTree.h"

namespace atomx::analysis {

TraceGraph traceGraph(const ir::Procedure& proc, const std::vector<bool>& records, const std::vector<bool>& evaluated) {
  TraceGraph g;
  const uint32_t n = uint32_t(proc.blocks.size());
  g.exit = n;
  g.flags.assign(n + 1, 0);
  g.out.assign(n + 1, {});
  g.flags[n] = TraceGraph::kRecords;
  auto add = [&](uint32_t from, uint32_t to) {
    for (uint32_t k : g.out[from])
      if (g.arcs[k].to == to) return;
    g.out[from].push_back(uint32_t(g.arcs.size()));
    g.arcs.push_back({from, to});
  };
  for (uint32_t b = 0; b < n; ++b) {
    const ir::Block& blk = proc.blocks[b];
    if (blk.isEntry || blk.isLandingPad || blk.isExternalEntry) g.flags[b] |= TraceGraph::kEntered;
    if (b < records.size() && records[b]) g.flags[b] |= TraceGraph::kRecords;
    if (b < evaluated.size() && evaluated[b]) g.flags[b] |= TraceGraph::kEvaluated;
    for (const ir::Edge& e : blk.succs) {
      if (e.kind == ir::EdgeKind::JumpTable) g.flags[b] |= TraceGraph::kIndirect | TraceGraph::kRecords;
      add(b, e.to);
    }
    for (const ir::OutEdge& e : blk.outs) {
      if (e.kind == ir::EdgeKind::Call || e.kind == ir::EdgeKind::Exit) g.flags[b] |= TraceGraph::kRecords;
      if (ir::leadsToExit(e.kind)) add(b, n);
    }
  }
  return g;
}

namespace {

// Estimated (or measured) runs of each arc.
std::vector<double> arcWeights(const ir::Procedure& proc, const TraceGraph& g, const std::vector<double>& counts) {
  std::vector<double> w(g.arcs.size(), 0);
  if (counts.size() == proc.blocks.size()) {
    // Arc counts from block counts by flow conservation, as gcc's profile
    // pass solves them: a node's out-arcs add up to its count, and so do
    // the in-arcs of a node control enters only through them (not entered
    // from outside); an arc that is the one unknown of such a sum is known.
    std::vector<char> known(g.arcs.size(), 0);
    std::vector<std::vector<uint32_t>> in(g.nodes());
    for (uint32_t k = 0; k < g.arcs.size(); ++k) in[g.arcs[k].to].push_back(k);
    auto solve = [&](const std::vector<uint32_t>& arcs, double total) {
      int unknown = -1;
      double sum = 0;
      for (uint32_t k : arcs) {
        if (known[k]) sum += w[k];
        else if (unknown >= 0) return false;
        else unknown = int(k);
      }
      if (unknown < 0) return false;
      w[size_t(unknown)] = std::max(0.0, total - sum);
      known[size_t(unknown)] = 1;
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t n = 0; n < g.exit; ++n) {
        if (!g.out[n].empty()) changed |= solve(g.out[n], counts[n]);
        if (!in[n].empty() && !(g.flags[n] & TraceGraph::kEntered)) changed |= solve(in[n], counts[n]);
      }
    }
    // The rest: the source's count split evenly, and no more than the
    // target ran.
    for (size_t k = 0; k < g.arcs.size(); ++k) {
      if (known[k]) continue;
      const TraceArc& a = g.arcs[k];
      const double share = counts[a.from] / double(g.out[a.from].size());
      w[k] = a.to == g.exit ? share : std::min(share, counts[a.to]);
    }
    return w;
  }
  std::vector<uint32_t> depth(g.nodes(), 0);
  if (!proc.blocks.empty()) depth = procedureLoops(proc).depth;
  for (size_t k = 0; k < g.arcs.size(); ++k) {
    const TraceArc& a = g.arcs[k];
    w[k] = std::pow(10.0, double(std::min<uint32_t>(depth[a.from], 30))) / double(g.out[a.from].size());
  }
  return w;
}

// Step 1: the arc p -> x writes a blocking witness when a path from x through
// no predicate reaches a node that records, or EXIT.
std::vector<bool> blockingArcs(const TraceGraph& g) {
  std::vector<bool> blocking(g.arcs.size(), false);
  std::vector<uint32_t> seenAt(g.nodes(), UINT32_MAX), stack;
  for (uint32_t p = 0; p < g.nodes(); ++p) {
    if (!g.isPredicate(p)) continue;
    for (uint32_t k : g.out[p]) {
      const uint32_t mark = k;  // arcs are distinct: one walk per arc
      stack.assign(1, g.arcs[k].to);
      bool reaches = false;
      while (!stack.empty() && !reaches) {
        const uint32_t x = stack.back();
        stack.pop_back();
        if (seenAt[x] == mark) continue;
        seenAt[x] = mark;
        if (g.flags[x] & (TraceGraph::kRecords | TraceGraph::kEvaluated)) reaches = true;
        else if (!g.isPredicate(x))
          for (uint32_t j : g.out[x]) stack.push_back(g.arcs[j].to);
      }
      blocking[k] = reaches;
    }
  }
  return blocking;
}

}  // namespace

WitnessPlan placeWitnesses(const ir::Procedure& proc, const TraceGraph& g, const std::vector<double>& blockCounts) {
  WitnessPlan plan;
  plan.witness.assign(g.arcs.size(), -1);
  const std::vector<bool> blocking = blockingArcs(g);  // 1.
  const std::vector<double> weight = arcWeights(proc, g, blockCounts);

  // 2. The forest: imaginary EXIT -> n arcs for the places control enters
  // (first), then the arcs out of indirect jumps (their targets are
  // recorded), then the others by weight; blocking arcs stay out.
  std::vector<TreeEdge> edges;
  for (uint32_t b = 0; b < g.exit; ++b)
    if (g.flags[b] & TraceGraph::kEntered) edges.push_back({g.exit, b, 0, true, false});
  const size_t firstArc = edges.size();
  for (size_t k = 0; k < g.arcs.size(); ++k) {
    const TraceArc& a = g.arcs[k];
    const bool indirect = g.flags[a.from] & TraceGraph::kIndirect;
    edges.push_back({a.from, a.to, weight[k], indirect, bool(blocking[k])});
  }
  const std::vector<bool> inTree = maximumSpanningForest(g.nodes(), edges);
  std::vector<bool> writes(g.arcs.size(), false);
  for (size_t k = 0; k < g.arcs.size(); ++k)
    writes[k] = !inTree[firstArc + k] && !(g.flags[g.arcs[k].from] & TraceGraph::kIndirect);

  // 3. The forest is a counting argument: with the imaginary arcs, every
  // path from the entry to EXIT closes a cycle, so a procedure with no
  // predicate still gets a witness.  Tracing needs a witness only where it
  // can be the next one read after a predicate's edge: drop those on arcs
  // from a node that is no predicate and that no predicate reaches along
  // witness-free arcs (nothing a predicate sees changes, nor any cycle
  // through one).
  std::vector<bool> seen(g.nodes(), false);
  std::vector<uint32_t> stack;
  for (uint32_t p = 0; p < g.nodes(); ++p)
    if (g.isPredicate(p))
      for (uint32_t k : g.out[p])
        if (!writes[k]) stack.push_back(g.arcs[k].to);
  while (!stack.empty()) {
    const uint32_t x = stack.back();
    stack.pop_back();
    if (seen[x]) continue;
    seen[x] = true;
    for (uint32_t k : g.out[x])
      if (!writes[k]) stack.push_back(g.arcs[k].to);
  }
  for (size_t k = 0; k < g.arcs.size(); ++k) {
    const uint32_t from = g.arcs[k].from;
    if (!writes[k] || (!g.isPredicate(from) && !seen[from]) || (g.flags[from] & TraceGraph::kEvaluated)) continue;
    plan.witness[k] = int32_t(plan.count++);
    plan.blocking += blocking[k];
  }
  plan.width = plan.count <= 255 ? 1 : 2;
  return plan;
}

}  // namespace atomx::analysis
