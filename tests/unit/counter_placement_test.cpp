// analysis::placeCounters on hand-written code: where the counters of a
// loop whose body branches go when no profile says how often anything runs.
// Any placement of as many counters as the graph's cyclomatic number is
// exact (cfg_corpus_test checks that on real programs); this checks what
// they cost: a counter on a taken edge needs a stub and one more jump, so
// when a block of the loop runs at least as often as the estimate says the
// taken edge does, the block counts and both taken jumps stay in the tree.
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
)";

class CounterPlacementTest : public testing::AssembledProgramTest<CounterPlacementTest> {
 public:
  static const char* source() { return kSource; }
};

TEST_F(CounterPlacementTest, ALoopThatBranchesCountsBlocksNotTakenEdges) {
  const auto [p, insn] = at("m_head");
  ASSERT_NE(p, nullptr);
  const analysis::CountGraph g = analysis::countGraph(*p);
  const analysis::CounterPlan plan = analysis::placeCounters(*p, g);
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

}  // namespace
}  // namespace atomx
