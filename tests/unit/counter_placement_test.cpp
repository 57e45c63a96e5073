// analysis::placeCounters on hand-written code: where the counters of a
// loop whose body branches go when no profile says how often anything runs.
// Any placement of as many counters as the graph's cyclomatic number is
// exact (cfg_corpus_test checks that on real programs); this checks what
// they cost: a counter on a taken edge needs a stub and one more jump, so
// when a block of the loop runs at least as often as the estimate says the
// taken edge does, the block counts and both taken jumps stay in the tree;
// and a procedure that returns early, step after step, counts on its ways
// out, not on every step.
#include <gtest/gtest.h>

#include <string>

#include "analysis/CounterPlacement.h"
#include "assembled_program.h"

namespace atomx {
namespace {

// The shape of bc's _bc_shift_addsub: header H ends in a jle to the join J,
// which ends in the loop's back edge (a jne to H); X, on the fall-through
// side, is the rarer arm.
const char* kSource = R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        mov $100, %rcx
m_head: add $1, %eax
        cmp $9, %eax
        jle m_join
m_arm:  sub $10, %eax
m_join: sub $1, %rcx
        jne m_head
        ret
        .size main, .-main

        .globl steps
        .type steps, @function       # mainGtU's shape: test, return early, step after step
steps:  mov (%rdi), %al
        cmp (%rsi), %al
        jne m_out
m_step1:
        mov 1(%rdi), %al
        cmp 1(%rsi), %al
        jne m_out
m_step2:
        mov 2(%rdi), %al
        cmp 2(%rsi), %al
        jne m_out
m_step3:
        mov 3(%rdi), %al
        cmp 3(%rsi), %al
        jne m_out
        add $4, %rdi
        jmp m_more
m_out:  setb %al
        ret
m_more: xor %eax, %eax
        ret
        .size steps, .-steps
)";

class CounterPlacementTest : public testing::AssembledProgramTest<CounterPlacementTest> {
 public:
  static const char* source() { return kSource; }

 protected:
  // The procedure holding label `mark`, its count graph and the placement.
  struct Placed {
    const ir::Procedure* proc = nullptr;
    analysis::CountGraph graph;
    analysis::CounterPlan plan;
  };
  Placed place(const std::string& mark) {
    Placed r;
    r.proc = at(mark).first;
    if (!r.proc) return r;
    r.graph = analysis::countGraph(*r.proc);
    r.plan = analysis::placeCounters(*r.proc, r.graph);
    return r;
  }
};

TEST_F(CounterPlacementTest, ALoopThatBranchesCountsBlocksNotTakenEdges) {
  const Placed placed = place("m_head");
  ASSERT_NE(placed.proc, nullptr);
  const ir::Procedure* p = placed.proc;
  const analysis::CountGraph& g = placed.graph;
  const analysis::CounterPlan& plan = placed.plan;
  const uint32_t head = uint32_t(p->blockIndexAt(program_->address("m_head")));
  const uint32_t join = uint32_t(p->blockIndexAt(program_->address("m_join")));
  unsigned inLoop = 0;
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    if (!plan.chord[k]) continue;
    const analysis::CountEdge& e = g.edges[k];
    if (e.kind == analysis::CountEdge::Kind::Flow) {
      const ir::Edge& edge = p->blocks[e.block].succs[e.succ];
      EXPECT_NE(edge.kind, ir::EdgeKind::Taken) << "a counter on the taken edge " << e.block << " -> " << edge.to;
    }
    inLoop += e.block >= head && e.block <= join;
  }
  EXPECT_EQ(inLoop, 2u);  // the loop's two cycles
}

// Ball and Larus's return heuristic: a branch to a block that returns is
// the rarer way, so the steps run without a counter and each way out has
// one (the taken jumps to m_out), not each step (an increment per step
// passed, where the call leaves by one way).
TEST_F(CounterPlacementTest, EarlyReturnsCountOnTheWayOut) {
  const Placed placed = place("m_step1");
  ASSERT_NE(placed.proc, nullptr);
  const ir::Procedure* p = placed.proc;
  const analysis::CountGraph& g = placed.graph;
  const analysis::CounterPlan& plan = placed.plan;
  for (const char* step : {"m_step1", "m_step2", "m_step3"}) {
    const uint32_t b = uint32_t(p->blockIndexAt(program_->address(step)));
    for (uint32_t k = 0; k < g.edges.size(); ++k) {
      const analysis::CountEdge& e = g.edges[k];
      const bool into = e.kind == analysis::CountEdge::Kind::Flow && p->blocks[e.block].succs[e.succ].to == b;
      EXPECT_FALSE(plan.chord[k] && (into || (e.kind == analysis::CountEdge::Kind::Block && e.block == b)))
          << "a counter on the way into " << step;
    }
  }
}

}  // namespace
}  // namespace atomx
