// Witness placement for abstract execution (analysis/Witnesses.h), the
// spanning forest it and counting share (analysis/SpanningTree.h), and the
// independent check that a placement solves the tracing problem
// (analysis/TracingCheck.h):
//   * the forest has the largest weight of any forest holding the forced
//     edges and none of the excluded ones (brute force over random graphs);
//   * on hand-written procedures (a loop, a diamond, a call after a branch,
//     ATOM's paper-like Figure 1 shape) the placement passes the check, with
//     the witness counts worked out by hand, and the check fails when any
//     one of those witnesses is taken away or a placement is empty.
// The corpus test (cfg_corpus_test) runs placement and check on every
// procedure of the test programs and the corpus.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "analysis/SpanningTree.h"
#include "analysis/TracingCheck.h"
#include "analysis/Witnesses.h"
#include "assembled_program.h"

namespace atomx {
namespace {

using analysis::TreeEdge;

// The heaviest forest by brute force: every subset of the edges that holds
// the forced ones, none of the excluded ones, and no cycle.
double bruteForceBest(uint32_t nodes, const std::vector<TreeEdge>& edges) {
  double best = -1;
  const uint32_t m = uint32_t(edges.size());
  for (uint32_t mask = 0; mask < (1u << m); ++mask) {
    std::vector<uint32_t> parent(nodes);
    for (uint32_t i = 0; i < nodes; ++i) parent[i] = i;
    auto find = [&](uint32_t x) {
      while (parent[x] != x) x = parent[x];
      return x;
    };
    bool ok = true;
    double w = 0;
    for (uint32_t k = 0; k < m && ok; ++k) {
      const bool in = mask & (1u << k);
      if (in && edges[k].excluded) ok = false;
      if (!in && edges[k].forced) ok = false;
      if (!in || !ok) continue;
      const uint32_t a = find(edges[k].a), b = find(edges[k].b);
      if (a == b) ok = false;
      else parent[a] = b, w += edges[k].weight;
    }
    if (ok) best = std::max(best, w);
  }
  return best;
}

TEST(SpanningTree, HeaviestForestAgainstBruteForce) {
  std::mt19937 rng(1994);
  int checked = 0;
  for (int round = 0; round < 400; ++round) {
    const uint32_t nodes = 2 + rng() % 5, m = 1 + rng() % 9;
    std::vector<TreeEdge> edges;
    for (uint32_t k = 0; k < m; ++k) {
      TreeEdge e{uint32_t(rng() % nodes), uint32_t(rng() % nodes), double(rng() % 20), false, false};
      const uint32_t r = rng() % 10;
      e.forced = r == 0 && k == 0;  // one forced edge at most, first: never a cycle
      e.excluded = r == 1;
      edges.push_back(e);
    }
    const std::vector<bool> in = analysis::maximumSpanningForest(nodes, edges);
    double w = 0;
    for (uint32_t k = 0; k < m; ++k) {
      if (in[k]) {
        EXPECT_FALSE(edges[k].excluded);
        w += edges[k].weight;
      } else if (edges[k].forced) {
        EXPECT_EQ(edges[k].a, edges[k].b) << "a forced edge left out that closes no cycle";
        continue;
      }
    }
    const double best = bruteForceBest(nodes, edges);
    if (best < 0) continue;  // a forced self-loop: no forest holds it
    EXPECT_EQ(w, best) << "round " << round;
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

class WitnessTest : public testing::AssembledProgramTest<WitnessTest> {
 public:
  static const char* source() {
    return R"(
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        ret
        .size main, .-main

        .type loop, @function        # a counted loop: witnesses on both edges of its branch
loop:   xor %eax, %eax
l_head: add $1, %eax
        dec %edi
        jnz l_head
        ret
        .size loop, .-loop

        .type diamond, @function     # if/else, then return: both arms block the exit
diamond:
        test %edi, %edi
        je d_else
        mov $1, %eax
        jmp d_join
d_else: mov $2, %eax
d_join: ret
        .size diamond, .-diamond

        .type callafter, @function   # a call on one arm: both arms need a witness
callafter:
        test %edi, %edi
        je c_skip
        call main
c_skip: ret
        .size callafter, .-callafter

        .type straight, @function    # no predicate: no witness at all
straight:
        call main
        add $1, %eax
        call main
        ret
        .size straight, .-straight

        .type figure1, @function     # P: loop over Q (calls? no) with A/B arms into C
figure1:
        xor %eax, %eax
f_p:    cmp $100, %eax
        jge f_exit
f_q:    test $1, %eax
        je f_b
f_a:    add $3, %eax
        jmp f_c
f_b:    add $5, %eax
f_c:    add $1, %eax
        jmp f_p
f_exit: ret
        .size figure1, .-figure1
)";
  }

  struct Placed {
    const ir::Procedure* proc = nullptr;
    analysis::TraceGraph graph;
    analysis::WitnessPlan plan;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> instrumented;
  };
  Placed place(const std::string& name) {
    Placed r;
    r.proc = at(name).first;
    if (!r.proc) return r;
    r.graph = analysis::traceGraph(*r.proc);
    r.plan = analysis::placeWitnesses(*r.proc, r.graph);
    for (size_t k = 0; k < r.graph.arcs.size(); ++k)
      if (r.plan.witness[k] >= 0) r.instrumented[{r.graph.arcs[k].from, r.graph.arcs[k].to}] = uint32_t(r.plan.witness[k]);
    return r;
  }
  // The placement passes the check, and taking away any one witness fails it.
  void expectMinimalAndCorrect(const Placed& p) {
    ASSERT_NE(p.proc, nullptr);
    EXPECT_EQ(analysis::tracingProblems(*p.proc, p.instrumented), std::vector<std::string>{}) << p.proc->name;
    for (const auto& [arc, v] : p.instrumented) {
      auto fewer = p.instrumented;
      fewer.erase(arc);
      EXPECT_FALSE(analysis::tracingProblems(*p.proc, fewer).empty())
          << p.proc->name << ": still solved without the witness on " << arc.first << " -> " << arc.second;
    }
  }
};

TEST_F(WitnessTest, LoopNeedsBothEdgesOfItsBranch) {
  const Placed p = place("loop");
  EXPECT_EQ(p.plan.count, 2u);
  EXPECT_EQ(p.plan.blocking, 1u);  // the loop's exit edge: a path to EXIT
  expectMinimalAndCorrect(p);
}

TEST_F(WitnessTest, DiamondBlocksBothArms) {
  const Placed p = place("diamond");
  EXPECT_EQ(p.plan.count, 2u);
  EXPECT_EQ(p.plan.blocking, 2u);
  expectMinimalAndCorrect(p);
}

TEST_F(WitnessTest, CallAfterABranch) {
  const Placed p = place("callafter");
  EXPECT_EQ(p.plan.count, 2u);
  EXPECT_EQ(p.plan.blocking, 2u);
  expectMinimalAndCorrect(p);
}

TEST_F(WitnessTest, NoPredicateNoWitness) {
  const Placed p = place("straight");
  EXPECT_EQ(p.plan.count, 0u);
  expectMinimalAndCorrect(p);
}

TEST_F(WitnessTest, Figure1Shape) {
  // P's exit edge blocks (a path to EXIT).  The forest takes the loop's
  // edges first (weight 10: A->C, B->C, C->P), then P->Q (5), so both of
  // Q's arms close a cycle and write witnesses: 3 in all, as in the paper.
  const Placed p = place("figure1");
  EXPECT_EQ(p.plan.count, 3u);
  EXPECT_EQ(p.plan.blocking, 1u);
  expectMinimalAndCorrect(p);
}

TEST_F(WitnessTest, CheckRejectsAnEmptyPlacement) {
  for (const char* name : {"loop", "diamond", "callafter", "figure1"}) {
    const Placed p = place(name);
    ASSERT_NE(p.proc, nullptr);
    EXPECT_FALSE(analysis::tracingProblems(*p.proc, {}).empty()) << name;
  }
}

TEST_F(WitnessTest, CheckRejectsAnEdgeThatIsNot) {
  Placed p = place("straight");
  ASSERT_NE(p.proc, nullptr);
  p.instrumented[{0, 7}] = 0;
  EXPECT_FALSE(analysis::tracingProblems(*p.proc, p.instrumented).empty());
}

TEST_F(WitnessTest, CheckRejectsSharedWitnessValues) {
  Placed p = place("diamond");
  ASSERT_EQ(p.instrumented.size(), 2u);
  for (auto& [arc, v] : p.instrumented) v = 0;  // both arms write the same value
  EXPECT_FALSE(analysis::tracingProblems(*p.proc, p.instrumented).empty());
}

TEST_F(WitnessTest, ProfileCountsKeepWitnessesOffTheHotPath) {
  // figure1 run with arm A once and arm B 1000 times: the loop needs one
  // witness per iteration, and the measured counts must not make the
  // placement write more witnesses than the estimate does (1002), nor put
  // one on the hot edges P -> Q or C -> P.
  const ir::Procedure* proc = at("figure1").first;
  ASSERT_NE(proc, nullptr);
  auto block = [&](const char* label) { return uint32_t(proc->blockIndexAt(program_->address(label))); };
  const uint32_t a = block("f_a"), b = block("f_b"), pp = block("f_p"), q = block("f_q"), c = block("f_c");
  std::vector<double> counts(proc->blocks.size(), 1);
  counts[pp] = 1002, counts[q] = counts[c] = 1001, counts[a] = 1, counts[b] = 1000;
  const analysis::TraceGraph g = analysis::traceGraph(*proc);
  const analysis::WitnessPlan plan = analysis::placeWitnesses(*proc, g, counts);
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> instrumented;
  double executed = 0;
  for (size_t k = 0; k < g.arcs.size(); ++k) {
    if (plan.witness[k] < 0) continue;
    const analysis::TraceArc arc = g.arcs[k];
    instrumented[{arc.from, arc.to}] = uint32_t(plan.witness[k]);
    EXPECT_FALSE(arc.from == pp && arc.to == q);
    EXPECT_FALSE(arc.from == c && arc.to == pp);
    // The true count of each arc: the block's when it has one successor,
    // otherwise the successor's (here each has one predecessor).
    executed += g.out[arc.from].size() == 1 ? counts[arc.from] : arc.to == g.exit ? 1 : counts[arc.to];
  }
  EXPECT_EQ(plan.count, 3u);
  EXPECT_EQ(executed, 1002);
  EXPECT_EQ(analysis::tracingProblems(*proc, instrumented), std::vector<std::string>{});
}

}  // namespace
}  // namespace atomx
