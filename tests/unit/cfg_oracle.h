// Naive oracles for the CFG analyses, straight from the definitions, shared
// by the hand-written CFG tests and the check on real programs.  Quadratic or
// worse: only for small graphs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/Dominators.h"
#include "analysis/Loops.h"

namespace atomx::oracle {

// Nodes reachable from `root` in `g` when `removed` is deleted.
inline std::vector<bool> reachWithout(const analysis::Graph& g, uint32_t root, uint32_t removed) {
  std::vector<bool> seen(g.size(), false);
  if (root == removed) return seen;
  std::vector<uint32_t> work = {root};
  seen[root] = true;
  while (!work.empty()) {
    uint32_t v = work.back();
    work.pop_back();
    for (uint32_t w : g.succs[v])
      if (w != removed && !seen[w]) seen[w] = true, work.push_back(w);
  }
  return seen;
}

// dom[d][n]: d dominates n iff n is reachable from root and either d == n or
// removing d makes n unreachable.
inline std::vector<std::vector<bool>> dominance(const analysis::Graph& g, uint32_t root) {
  const uint32_t n = g.size();
  const std::vector<bool> reach = reachWithout(g, root, analysis::kNoNode);
  std::vector<std::vector<bool>> dom(n, std::vector<bool>(n, false));
  for (uint32_t d = 0; d < n; ++d) {
    if (!reach[d]) continue;
    const std::vector<bool> without = reachWithout(g, root, d);
    for (uint32_t v = 0; v < n; ++v) dom[d][v] = reach[v] && (d == v || !without[v]);
  }
  return dom;
}

// Compares a DomTree with the definition; returns "" or what differs.
inline std::string checkDomTree(const analysis::Graph& g, const analysis::DomTree& t) {
  const auto dom = dominance(g, t.root);
  const uint32_t n = g.size();
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = 0; b < n; ++b)
      if (dom[a][b] != t.dominates(a, b) && !(a == b && !dom[a][a]))
        return "dominates(" + std::to_string(a) + ", " + std::to_string(b) + ") is " +
               (t.dominates(a, b) ? "true" : "false");
  for (uint32_t v = 0; v < n; ++v) {
    if (!dom[v][v]) {
      if (t.idom[v] != analysis::kNoNode) return "unreachable node " + std::to_string(v) + " has an idom";
      continue;
    }
    if (v == t.root) {
      if (t.idom[v] != v) return "root's idom is not itself";
      continue;
    }
    // The immediate dominator: the strict dominator every strict dominator dominates.
    uint32_t i = t.idom[v];
    if (i == analysis::kNoNode || i == v || !dom[i][v]) return "idom of " + std::to_string(v) + " is no strict dominator";
    for (uint32_t d = 0; d < n; ++d)
      if (d != v && dom[d][v] && !dom[d][i])
        return "idom of " + std::to_string(v) + " is not the closest dominator";
  }
  return "";
}

// Natural loops by the definition: one per header h with an edge t -> h where
// h dominates t; the body is h and every node reachable from the entry that
// reaches such a t without passing h.  Returns header -> sorted body.
inline std::vector<std::pair<uint32_t, std::vector<uint32_t>>> naturalLoops(const analysis::Graph& g,
                                                                            uint32_t root) {
  const auto dom = dominance(g, root);
  const uint32_t n = g.size();
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> loops;
  for (uint32_t h = 0; h < n; ++h) {
    std::vector<uint32_t> latches;
    for (uint32_t t = 0; t < n; ++t)
      if (dom[t][t] && dom[h][t] && std::count(g.succs[t].begin(), g.succs[t].end(), h)) latches.push_back(t);
    if (latches.empty()) continue;
    std::vector<uint32_t> body = {h};
    for (uint32_t v = 0; v < n; ++v) {
      if (v == h || !dom[v][v]) continue;
      const std::vector<bool> r = reachWithout(g, v, h);
      for (uint32_t t : latches)
        if (r[t]) {
          body.push_back(v);
          break;
        }
    }
    std::sort(body.begin(), body.end());
    loops.push_back({h, body});
  }
  return loops;
}

// Compares a LoopForest with naturalLoops() and checks the nesting depths.
inline std::string checkLoops(const analysis::Graph& g, uint32_t root, const analysis::LoopForest& f) {
  auto expected = naturalLoops(g, root);
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> got;
  for (const analysis::Loop& l : f.loops) got.push_back({l.header, l.body});
  std::sort(got.begin(), got.end());
  if (got != expected)
    return std::to_string(got.size()) + " loops, the definition gives " + std::to_string(expected.size()) +
           " (or bodies differ)";
  for (uint32_t v = 0; v < g.size(); ++v) {
    uint32_t depth = 0;
    for (const auto& [h, body] : expected) depth += std::binary_search(body.begin(), body.end(), v);
    if (f.depth[v] != depth) return "loop depth of " + std::to_string(v) + " is " + std::to_string(f.depth[v]);
  }
  for (const analysis::Loop& l : f.loops) {
    uint32_t depth = 0;
    for (const auto& [h, body] : expected) depth += std::binary_search(body.begin(), body.end(), l.header);
    if (l.depth != depth) return "depth of loop at " + std::to_string(l.header);
    if (l.parent >= 0 && !f.loops[l.parent].contains(l.header)) return "parent does not contain the loop";
  }
  return "";
}

}  // namespace atomx::oracle
