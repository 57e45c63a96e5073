// Dominators, post-dominators and natural loops (src/analysis/Dominators,
// Loops) on hand-written CFGs, each checked against the naive definitions in
// cfg_oracle.h and against the answers worked out by hand.  By convention
// node 0 is the entry and the last node is the virtual exit.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "cfg_oracle.h"

namespace atomx {
namespace {

using analysis::kNoNode;

analysis::Graph makeGraph(uint32_t n, std::initializer_list<std::pair<uint32_t, uint32_t>> edges) {
  analysis::Graph g(n);
  for (auto [a, b] : edges) g.addEdge(a, b);
  return g;
}

// Runs all three analyses and compares them with the oracle.
struct Analysed {
  analysis::DomTree dom;
  analysis::PostDominators post;
  analysis::LoopForest loops;
};

Analysed analyse(const analysis::Graph& g) {
  Analysed a;
  const uint32_t exit = g.size() - 1;
  a.dom = analysis::dominators(g, 0);
  EXPECT_EQ(oracle::checkDomTree(g, a.dom), "");
  a.post = analysis::postDominators(g, exit);
  analysis::Graph withArtificial = g;
  for (uint32_t v : a.post.artificial) withArtificial.addEdge(v, exit);
  EXPECT_EQ(oracle::checkDomTree(withArtificial.reversed(), a.post.tree), "");
  for (uint32_t v = 0; v < g.size(); ++v) EXPECT_TRUE(a.post.tree.reachable(v)) << "node " << v;
  a.loops = analysis::naturalLoops(g, a.dom);
  EXPECT_EQ(oracle::checkLoops(g, 0, a.loops), "");
  return a;
}

TEST(CfgAnalysis, Diamond) {
  // 0 -> 1, 2 -> 3 -> exit(4)
  auto g = makeGraph(5, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
  Analysed a = analyse(g);
  EXPECT_EQ(a.dom.idom[1], 0u);
  EXPECT_EQ(a.dom.idom[2], 0u);
  EXPECT_EQ(a.dom.idom[3], 0u);
  EXPECT_EQ(a.post.tree.idom[0], 3u);
  EXPECT_EQ(a.post.tree.idom[1], 3u);
  EXPECT_EQ(a.post.tree.idom[3], 4u);
  EXPECT_TRUE(a.post.artificial.empty());
  EXPECT_TRUE(a.loops.loops.empty());
}

TEST(CfgAnalysis, NestedLoops) {
  // 0 -> 1 (outer header) -> 2 (inner header) -> 3 -> 2 (inner back edge),
  // 3 -> 4 -> 1 (outer back edge), 1 -> 5 -> exit(6)
  auto g = makeGraph(7, {{0, 1}, {1, 2}, {1, 5}, {2, 3}, {3, 2}, {3, 4}, {4, 1}, {5, 6}});
  Analysed a = analyse(g);
  ASSERT_EQ(a.loops.loops.size(), 2u);
  const analysis::Loop& outer = a.loops.loops[0];
  const analysis::Loop& inner = a.loops.loops[1];
  EXPECT_EQ(outer.header, 1u);
  EXPECT_EQ(outer.body, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(outer.depth, 1u);
  EXPECT_EQ(outer.parent, -1);
  EXPECT_EQ(outer.preheader, 0u);
  EXPECT_EQ(outer.exits, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 5}}));
  EXPECT_EQ(inner.header, 2u);
  EXPECT_EQ(inner.body, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(inner.latches, (std::vector<uint32_t>{3}));
  EXPECT_EQ(inner.depth, 2u);
  EXPECT_EQ(inner.parent, 0);
  EXPECT_EQ(inner.preheader, kNoNode);  // 1 also goes to 5
  EXPECT_EQ(inner.exits, (std::vector<std::pair<uint32_t, uint32_t>>{{3, 4}}));
  EXPECT_EQ(a.loops.depth, (std::vector<uint32_t>{0, 1, 2, 2, 1, 0, 0}));
  EXPECT_EQ(a.loops.innermost[3], 1);
  EXPECT_EQ(a.post.tree.idom[2], 3u);
  EXPECT_EQ(a.post.tree.idom[4], 1u);
}

TEST(CfgAnalysis, SelfLoopAndTwoLatches) {
  // 0 -> 1 -> 1 (self loop) -> 2 -> 3 -> 2, 2 -> 4 -> 2 (two latches), 3 -> exit(5)
  auto g = makeGraph(6, {{0, 1}, {1, 1}, {1, 2}, {2, 3}, {2, 4}, {3, 2}, {4, 2}, {3, 5}});
  Analysed a = analyse(g);
  ASSERT_EQ(a.loops.loops.size(), 2u);
  EXPECT_EQ(a.loops.loops[0].header, 1u);
  EXPECT_EQ(a.loops.loops[0].body, (std::vector<uint32_t>{1}));
  EXPECT_EQ(a.loops.loops[0].preheader, 0u);
  EXPECT_EQ(a.loops.loops[1].header, 2u);
  EXPECT_EQ(a.loops.loops[1].latches, (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(a.loops.loops[1].body, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(a.loops.loops[1].preheader, kNoNode);  // 1 also loops to itself
}

TEST(CfgAnalysis, IrreducibleLoopIsNoNaturalLoop) {
  // 0 -> 1, 0 -> 2, 1 <-> 2 (entered at both), 2 -> exit(3)
  auto g = makeGraph(4, {{0, 1}, {0, 2}, {1, 2}, {2, 1}, {2, 3}});
  Analysed a = analyse(g);
  EXPECT_TRUE(a.loops.loops.empty());
  EXPECT_EQ(a.dom.idom[1], 0u);
  EXPECT_EQ(a.dom.idom[2], 0u);
  EXPECT_EQ(a.post.tree.idom[1], 2u);
}

TEST(CfgAnalysis, UnreachableBlocksAndLandingPads) {
  // 0 -> 1 -> exit(5); 2 is a landing pad with no predecessor: 2 -> 3 -> exit;
  // 4 is dead code in a cycle with itself.
  auto g = makeGraph(6, {{0, 1}, {1, 5}, {2, 3}, {3, 5}, {4, 4}});
  Analysed a = analyse(g);
  EXPECT_EQ(a.dom.idom[2], kNoNode);
  EXPECT_EQ(a.dom.idom[3], kNoNode);
  EXPECT_FALSE(a.dom.dominates(0, 2));
  EXPECT_FALSE(a.dom.dominates(2, 3));  // no dominance among blocks the entry does not reach
  EXPECT_EQ(a.dom.rpo.size(), 3u);
  EXPECT_TRUE(a.loops.loops.empty());   // the dead cycle is no loop
  // Post-dominance covers them: 3 post-dominates the landing pad.
  EXPECT_EQ(a.post.tree.idom[2], 3u);
  EXPECT_EQ(a.post.artificial, (std::vector<uint32_t>{4}));
}

TEST(CfgAnalysis, InfiniteLoopGetsOneArtificialExit) {
  // 0 -> 1 -> exit(6); 0 -> 2 -> 3 -> 4 -> 3 (never leaves); 4 -> 5 -> 4.
  // The closed component is {3, 4, 5}: its lowest block, 3, gets the edge; 2
  // reaches the exit through it.
  auto g = makeGraph(7, {{0, 1}, {1, 6}, {0, 2}, {2, 3}, {3, 4}, {4, 3}, {4, 5}, {5, 4}});
  Analysed a = analyse(g);
  EXPECT_EQ(a.post.artificial, (std::vector<uint32_t>{3}));
  EXPECT_EQ(a.post.tree.idom[2], 3u);
  EXPECT_EQ(a.post.tree.idom[3], 6u);
  EXPECT_EQ(a.post.tree.idom[0], 6u);
  ASSERT_EQ(a.loops.loops.size(), 2u);
  EXPECT_EQ(a.loops.loops[0].header, 3u);
  EXPECT_TRUE(a.loops.loops[0].exits.empty());
}

TEST(CfgAnalysis, TwoSeparateInfiniteLoopsAndADeadEnd) {
  // 0 -> 1 -> 1; 0 -> 2 -> 3 -> 2; 0 -> 4 (no successor, e.g. a block the
  // CFG could not finish); nothing reaches the exit(5).
  auto g = makeGraph(6, {{0, 1}, {1, 1}, {0, 2}, {2, 3}, {3, 2}, {0, 4}});
  Analysed a = analyse(g);
  EXPECT_EQ(a.post.artificial, (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_EQ(a.post.tree.idom[0], 5u);
  EXPECT_EQ(a.post.tree.idom[3], 2u);
}

TEST(CfgAnalysis, MultipleReturns) {
  // 0 -> 1 -> exit(4), 0 -> 2 -> exit, 2 -> 3 -> exit
  auto g = makeGraph(5, {{0, 1}, {0, 2}, {1, 4}, {2, 4}, {2, 3}, {3, 4}});
  Analysed a = analyse(g);
  EXPECT_EQ(a.post.tree.idom[0], 4u);
  EXPECT_EQ(a.post.tree.idom[3], 4u);
  EXPECT_EQ(a.post.tree.idom[2], 4u);
  EXPECT_TRUE(a.post.artificial.empty());
}

TEST(CfgAnalysis, EntryIsLoopHeader) {
  // 0 -> 1 -> 0, 1 -> exit(2): the entry heads a loop with no preheader.
  auto g = makeGraph(3, {{0, 1}, {1, 0}, {1, 2}});
  Analysed a = analyse(g);
  ASSERT_EQ(a.loops.loops.size(), 1u);
  EXPECT_EQ(a.loops.loops[0].header, 0u);
  EXPECT_EQ(a.loops.loops[0].preheader, kNoNode);
  EXPECT_EQ(a.loops.loops[0].exits, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 2}}));
}

// Random graphs: the fast algorithms agree with the definitions.
TEST(CfgAnalysis, RandomGraphsAgreeWithTheDefinitions) {
  uint64_t seed = 12345;
  auto next = [&] { seed = seed * 6364136223846793005ULL + 1442695040888963407ULL; return uint32_t(seed >> 33); };
  for (int round = 0; round < 400; ++round) {
    const uint32_t n = 2 + next() % 14;
    analysis::Graph g(n);
    const uint32_t edges = next() % (2 * n + 1);
    for (uint32_t e = 0; e < edges; ++e) {
      uint32_t a = next() % (n - 1), b = next() % n;  // nothing leaves the exit
      g.addEdge(a, b);
    }
    SCOPED_TRACE("round " + std::to_string(round));
    analyse(g);
  }
}

}  // namespace
}  // namespace atomx
