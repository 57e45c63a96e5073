#include "analysis/Loops.h"

#include <algorithm>

namespace atomx::analysis {

bool Loop::contains(uint32_t n) const { return std::binary_search(body.begin(), body.end(), n); }

LoopForest naturalLoops(const Graph& g, const DomTree& dom) {
  const uint32_t n = g.size();
  LoopForest f;
  f.innermost.assign(n, -1);
  f.depth.assign(n, 0);

  std::vector<Loop> loops;
  std::vector<int32_t> loopOf(n, -1);  // header -> index in `loops`
  for (uint32_t t = 0; t < n; ++t) {
    if (!dom.reachable(t)) continue;
    for (uint32_t h : g.succs[t]) {
      if (!dom.dominates(h, t)) continue;
      if (loopOf[h] < 0) {
        loopOf[h] = int32_t(loops.size());
        loops.emplace_back().header = h;
      }
      loops[loopOf[h]].latches.push_back(t);
    }
  }

  std::vector<bool> in(n, false);
  for (Loop& l : loops) {
    std::sort(l.latches.begin(), l.latches.end());
    std::vector<uint32_t> work;
    in[l.header] = true;
    l.body.push_back(l.header);
    for (uint32_t t : l.latches)
      if (!in[t]) in[t] = true, l.body.push_back(t), work.push_back(t);
    while (!work.empty()) {
      uint32_t v = work.back();
      work.pop_back();
      for (uint32_t p : g.preds[v])
        if (!in[p] && dom.reachable(p)) in[p] = true, l.body.push_back(p), work.push_back(p);
    }
    for (uint32_t v : l.body) in[v] = false;
    std::sort(l.body.begin(), l.body.end());

    uint32_t outside = kNoNode, count = 0;
    for (uint32_t p : g.preds[l.header])
      if (!l.contains(p)) outside = p, ++count;
    if (count == 1 && g.succs[outside].size() == 1) l.preheader = outside;
    for (uint32_t v : l.body)
      for (uint32_t w : g.succs[v])
        if (!l.contains(w)) l.exits.push_back({v, w});
  }

  // Nesting: an inner loop's body is strictly smaller than its parent's, so
  // the parent is the smallest larger loop that contains the header.
  std::sort(loops.begin(), loops.end(), [](const Loop& a, const Loop& b) {
    return a.body.size() != b.body.size() ? a.body.size() > b.body.size() : a.header < b.header;
  });
  for (size_t i = 0; i < loops.size(); ++i)
    for (size_t j = i; j-- > 0;)
      if (loops[j].body.size() > loops[i].body.size() && loops[j].contains(loops[i].header)) {
        loops[i].parent = int32_t(j);
        loops[i].depth = loops[j].depth + 1;
        break;
      }
  // Outer before inner, then by header: a stable order that keeps parents first.
  std::vector<size_t> order(loops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return loops[a].depth != loops[b].depth ? loops[a].depth < loops[b].depth : loops[a].header < loops[b].header;
  });
  std::vector<int32_t> newIndex(loops.size());
  for (size_t k = 0; k < order.size(); ++k) newIndex[order[k]] = int32_t(k);
  for (size_t k : order) {
    Loop l = std::move(loops[k]);
    if (l.parent >= 0) l.parent = newIndex[l.parent];
    f.loops.push_back(std::move(l));
  }
  // Deeper loops come later, so the last write is the innermost loop.
  for (size_t k = 0; k < f.loops.size(); ++k)
    for (uint32_t v : f.loops[k].body) {
      f.innermost[v] = int32_t(k);
      f.depth[v] = f.loops[k].depth;
    }
  return f;
}

LoopForest procedureLoops(const ir::Procedure& proc) {
  uint32_t entry = 0;
  for (uint32_t b = 0; b < proc.blocks.size(); ++b)
    if (proc.blocks[b].isEntry) entry = b;
  const Graph cfg = procedureGraph(proc);
  return naturalLoops(cfg, dominators(cfg, entry));
}

}  // namespace atomx::analysis
