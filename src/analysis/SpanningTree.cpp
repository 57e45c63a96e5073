#include "analysis/SpanningTree.h"

#include <algorithm>
#include <numeric>

namespace atomx::analysis {

namespace {

struct UnionFind {
  std::vector<uint32_t> parent, rank;
  explicit UnionFind(uint32_t n) : parent(n), rank(n, 0) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  // Joins the sets of a and b; false when they were one set already.
  bool unite(uint32_t a, uint32_t b) {
    a = find(a), b = find(b);
    if (a == b) return false;
    if (rank[a] < rank[b]) std::swap(a, b);
    parent[b] = a;
    if (rank[a] == rank[b]) ++rank[a];
    return true;
  }
};

}  // namespace

std::vector<bool> maximumSpanningForest(uint32_t nodes, const std::vector<TreeEdge>& edges) {
  std::vector<bool> inTree(edges.size(), false);
  UnionFind sets(nodes);
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < edges.size(); ++k) {
    if (edges[k].forced) inTree[k] = sets.unite(edges[k].a, edges[k].b);
    else if (!edges[k].excluded) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return edges[x].weight > edges[y].weight; });
  for (uint32_t k : order) inTree[k] = sets.unite(edges[k].a, edges[k].b);
  return inTree;
}

}  // namespace atomx::analysis
