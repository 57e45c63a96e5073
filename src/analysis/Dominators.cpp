#include "analysis/Dominators.h"

#include <algorithm>
#include <utility>

namespace atomx::analysis {

void Graph::addEdge(uint32_t a, uint32_t b) {
  if (std::find(succs[a].begin(), succs[a].end(), b) != succs[a].end()) return;
  succs[a].push_back(b);
  preds[b].push_back(a);
}

Graph Graph::reversed() const {
  Graph r;
  r.succs = preds;
  r.preds = succs;
  return r;
}

Graph procedureGraph(const ir::Procedure& proc) {
  const uint32_t n = uint32_t(proc.blocks.size());
  Graph g(n + 1);
  for (uint32_t bi = 0; bi < n; ++bi) {
    const ir::Block& b = proc.blocks[bi];
    for (const ir::Edge& e : b.succs) g.addEdge(bi, e.to);
    for (const ir::OutEdge& e : b.outs)
      if (ir::leadsToExit(e.kind)) g.addEdge(bi, n);
  }
  return g;
}

std::vector<bool> reachableFrom(const Graph& g, uint32_t root) { return reachableFrom(g, std::vector<uint32_t>{root}); }

std::vector<bool> reachableFrom(const Graph& g, const std::vector<uint32_t>& roots) {
  std::vector<bool> seen(g.size(), false);
  std::vector<uint32_t> work = roots;
  for (uint32_t r : roots) seen[r] = true;
  while (!work.empty()) {
    uint32_t v = work.back();
    work.pop_back();
    for (uint32_t w : g.succs[v])
      if (!seen[w]) seen[w] = true, work.push_back(w);
  }
  return seen;
}

bool DomTree::dominates(uint32_t a, uint32_t b) const {
  if (a == b) return true;
  if (!reachable(a) || !reachable(b)) return false;
  return in[a] <= in[b] && out[b] <= out[a];
}

DomTree dominators(const Graph& g, uint32_t root) {
  const uint32_t n = g.size();
  DomTree t;
  t.root = root;
  t.idom.assign(n, kNoNode);
  t.in.assign(n, 0);
  t.out.assign(n, 0);
  t.level.assign(n, 0);

  // Postorder by an explicit-stack depth-first walk.
  std::vector<uint32_t> postNum(n, kNoNode);
  std::vector<bool> seen(n, false);
  std::vector<std::pair<uint32_t, size_t>> stack = {{root, 0}};
  seen[root] = true;
  std::vector<uint32_t> post;
  while (!stack.empty()) {
    auto& [v, i] = stack.back();
    if (i < g.succs[v].size()) {
      uint32_t w = g.succs[v][i++];
      if (!seen[w]) seen[w] = true, stack.push_back({w, 0});
      continue;
    }
    postNum[v] = uint32_t(post.size());
    post.push_back(v);
    stack.pop_back();
  }
  t.rpo.assign(post.rbegin(), post.rend());

  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (postNum[a] < postNum[b]) a = t.idom[a];
      while (postNum[b] < postNum[a]) b = t.idom[b];
    }
    return a;
  };
  t.idom[root] = root;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 1; k < t.rpo.size(); ++k) {
      const uint32_t b = t.rpo[k];
      uint32_t nd = kNoNode;
      for (uint32_t p : g.preds[b]) {
        if (t.idom[p] == kNoNode) continue;  // unreachable, or not yet processed
        nd = nd == kNoNode ? p : intersect(p, nd);
      }
      if (t.idom[b] != nd) t.idom[b] = nd, changed = true;
    }
  }

  // Preorder intervals and levels over the tree.
  std::vector<std::vector<uint32_t>> children(n);
  for (uint32_t v : t.rpo)
    if (v != root) children[t.idom[v]].push_back(v);
  uint32_t clock = 0;
  std::vector<std::pair<uint32_t, size_t>> walk = {{root, 0}};
  t.in[root] = ++clock;
  while (!walk.empty()) {
    auto& [v, i] = walk.back();
    if (i < children[v].size()) {
      uint32_t c = children[v][i++];
      t.in[c] = ++clock;
      t.level[c] = t.level[v] + 1;
      walk.push_back({c, 0});
      continue;
    }
    t.out[v] = clock;
    walk.pop_back();
  }
  return t;
}

namespace {

// Strongly connected components of the subgraph of `g` induced by the nodes
// with inSet[v] (iterative Tarjan); comp[v] is the component number, kNoNode
// outside the set.  Returns the number of components.
uint32_t components(const Graph& g, const std::vector<bool>& inSet, std::vector<uint32_t>& comp) {
  const uint32_t n = g.size();
  comp.assign(n, kNoNode);
  std::vector<uint32_t> index(n, kNoNode), low(n, 0);
  std::vector<bool> onStack(n, false);
  std::vector<uint32_t> stack;
  uint32_t counter = 0, ncomp = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (!inSet[s] || index[s] != kNoNode) continue;
    std::vector<std::pair<uint32_t, size_t>> calls = {{s, 0}};
    index[s] = low[s] = counter++;
    stack.push_back(s), onStack[s] = true;
    while (!calls.empty()) {
      auto& [v, i] = calls.back();
      if (i < g.succs[v].size()) {
        uint32_t w = g.succs[v][i++];
        if (!inSet[w]) continue;
        if (index[w] == kNoNode) {
          index[w] = low[w] = counter++;
          stack.push_back(w), onStack[w] = true;
          calls.push_back({w, 0});
        } else if (onStack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const uint32_t done = v;
      calls.pop_back();
      if (low[done] == index[done]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back(), onStack[w] = false;
          comp[w] = ncomp;
        } while (w != done);
        ++ncomp;
      }
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
    }
  }
  return ncomp;
}

}  // namespace

PostDominators postDominators(const Graph& g, uint32_t exit) {
  PostDominators pd;
  Graph work = g;
  std::vector<bool> reachesExit = reachableFrom(g.reversed(), exit);
  std::vector<bool> stuck(g.size());
  bool any = false;
  for (uint32_t v = 0; v < g.size(); ++v) stuck[v] = !reachesExit[v], any |= stuck[v];
  if (any) {
    // The successors of a stuck node are stuck too, so the closed
    // components are the ones with no edge to another component.
    std::vector<uint32_t> comp;
    const uint32_t ncomp = components(g, stuck, comp);
    std::vector<bool> closed(ncomp, true);
    std::vector<uint32_t> lowest(ncomp, kNoNode);
    for (uint32_t v = 0; v < g.size(); ++v) {
      if (!stuck[v]) continue;
      lowest[comp[v]] = std::min(lowest[comp[v]], v);
      for (uint32_t w : g.succs[v])
        if (comp[w] != comp[v]) closed[comp[v]] = false;
    }
    for (uint32_t c = 0; c < ncomp; ++c)
      if (closed[c]) pd.artificial.push_back(lowest[c]);
    std::sort(pd.artificial.begin(), pd.artificial.end());
    for (uint32_t v : pd.artificial) work.addEdge(v, exit);
  }
  pd.tree = dominators(work.reversed(), exit);
  return pd;
}

}  // namespace atomx::analysis
