// analysis::promoteCounters with branches' states (a predictor's 2-bit
// counter that the edges out of a block update): on hand-written loops,
// which go in a register, which register, and that they come before the
// chords.  Whether the counts and predictions stay exact is the tools'
// tests' business (tool.branch.model against Valgrind's lackey); this checks
// the choice itself.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "analysis/CounterPlacement.h"
#include "analysis/CounterPromotion.h"
#include "analysis/RegisterLiveness.h"
#include "assembled_program.h"

namespace atomx {
namespace {

const char* kSource = R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        ret
        .size main, .-main

        .globl spin                  # a loop of two branches that calls nothing
        .type spin, @function
spin:   mov $100, %rcx
        xor %eax, %eax
s_head: test $1, %cl
        je s_skip
s_odd:  add $1, %eax
s_skip: sub $1, %rcx
        jne s_head
        xor %r8d, %r8d               # (dead in the loop: atomx takes nothing for granted at a ret)
        xor %r9d, %r9d
        xor %r10d, %r10d
        mov $0, %r11d
        ret
        .size spin, .-spin

        .globl calls                 # the same loop, calling: a register would not survive it
        .type calls, @function
calls:  push %rbx
        mov $100, %rbx
c_head: test $1, %bl
        je c_skip
c_odd:  call spin
c_skip: sub $1, %rbx
        jne c_head
        mov $0, %r11d
        pop %rbx
        ret
        .size calls, .-calls

        .globl crowded               # a loop that leaves one register (%r11) alone
        .type crowded, @function
crowded:
        push %rbx
        push %rbp
        push %r12
        push %r13
        push %r14
        push %r15
        mov $100, %rcx
k_head: mov %rcx, %rdx
        mov %rcx, %rsi
        mov %rcx, %rdi
        mov %rcx, %r8
        mov %rcx, %r9
        mov %rcx, %r10
        mov %rcx, %rbx
        mov %rcx, %rbp
        mov %rcx, %r12
        mov %rcx, %r13
        mov %rcx, %r14
        mov %rcx, %r15
        test $1, %cl
        je k_skip
k_odd:  add $1, %eax
k_skip: sub $1, %rcx
        jne k_head
        mov $0, %r11d
        pop %r15
        pop %r14
        pop %r13
        pop %r12
        pop %rbp
        pop %rbx
        ret
        .size crowded, .-crowded
)";

class CounterPromotionTest : public testing::AssembledProgramTest<CounterPromotionTest> {
 public:
  static const char* source() { return kSource; }

 protected:
  uint32_t block(const ir::Procedure& p, const char* mark) {
    return uint32_t(p.blockIndexAt(program_->address(mark)));
  }
  // promoteCounters on the procedure of `mark`, with the states of the
  // blocks `states` and, with `chords`, its counters' placement; no spill.
  std::vector<analysis::PromotedLoop> promote(const char* mark, const std::vector<const char*>& states, bool chords) {
    const ir::Procedure* p = at(mark).first;
    if (!p) return {};
    proc_ = p;
    graph_ = chords ? analysis::countGraph(*p) : analysis::CountGraph{};
    plan_ = chords ? analysis::placeCounters(*p, graph_) : analysis::CounterPlan{};
    std::vector<uint32_t> blocks;
    for (const char* s : states) blocks.push_back(block(*p, s));
    live_ = std::make_unique<analysis::RegisterLiveness>(model().program, *p, model().decoder);
    return analysis::promoteCounters(*p, graph_, plan_, [&]() -> const analysis::RegisterLiveness& { return *live_; },
                                     false, blocks);
  }
  // The registers any instruction of the loop reads or writes.
  x86::RegSet touched(const analysis::PromotedLoop& l) const {
    x86::RegSet r;
    for (uint32_t b : l.blocks)
      for (uint32_t i = proc_->blocks[b].firstInsn; i < proc_->blocks[b].firstInsn + proc_->blocks[b].insnCount; ++i)
        r |= live_->touched(i);
    return r;
  }

  const ir::Procedure* proc_ = nullptr;
  analysis::CountGraph graph_;
  analysis::CounterPlan plan_;
  std::unique_ptr<analysis::RegisterLiveness> live_;
};

TEST_F(CounterPromotionTest, ALoopThatCallsNothingHoldsEachBranchsStateInARegisterOfItsOwn) {
  const std::vector<analysis::PromotedLoop> loops = promote("s_head", {"s_head", "s_skip"}, true);
  ASSERT_EQ(loops.size(), 1u);
  const analysis::PromotedLoop& l = loops[0];
  EXPECT_FALSE(l.entries.empty());
  EXPECT_FALSE(l.exits.empty());
  std::vector<bool> held(2, false);
  x86::RegSet regs;
  for (const analysis::PromotedCounter& c : l.counters) {
    EXPECT_FALSE(regs.has(c.reg)) << "register " << c.reg << " twice";
    regs |= x86::RegSet::gpr(c.reg);
    EXPECT_FALSE(c.spilled);
    if (c.state) {
      ASSERT_LT(c.chord, 2u);
      held[c.chord] = true;
    }
  }
  EXPECT_TRUE(held[0] && held[1]);
  EXPECT_EQ((regs & touched(l)).gprs(), 0u) << "a register the loop uses";
  EXPECT_FALSE(regs.has(0) || regs.has(4)) << "%rax or %rsp";
}

TEST_F(CounterPromotionTest, ALoopThatCallsHoldsNothing) {
  EXPECT_TRUE(promote("c_head", {"c_head", "c_skip"}, true).empty());
}

// One register left: the state has it, not the chords (a state's update is
// a load, four instructions and a store the next one waits on; a chord's
// an increment).
TEST_F(CounterPromotionTest, StatesGoAheadOfChords) {
  const std::vector<analysis::PromotedLoop> loops = promote("k_head", {"k_head"}, true);
  ASSERT_EQ(loops.size(), 1u);
  ASSERT_EQ(loops[0].counters.size(), 1u);
  EXPECT_TRUE(loops[0].counters[0].state);
  EXPECT_EQ(loops[0].counters[0].chord, 0u);
  EXPECT_EQ(loops[0].counters[0].reg, 11u);
  // Without the state, a chord takes it.
  const std::vector<analysis::PromotedLoop> chordsOnly = promote("k_head", {}, true);
  ASSERT_EQ(chordsOnly.size(), 1u);
  ASSERT_EQ(chordsOnly[0].counters.size(), 1u);
  EXPECT_FALSE(chordsOnly[0].counters[0].state);
}

// A procedure nobody counts (no graph, no plan) still holds its states.
TEST_F(CounterPromotionTest, StatesWithoutCounts) {
  const std::vector<analysis::PromotedLoop> loops = promote("s_head", {"s_skip"}, false);
  ASSERT_EQ(loops.size(), 1u);
  ASSERT_EQ(loops[0].counters.size(), 1u);
  EXPECT_TRUE(loops[0].counters[0].state);
}

}  // namespace
}  // namespace atomx
