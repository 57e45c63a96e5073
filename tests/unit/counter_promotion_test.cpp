// analysis::promoteCounters with branches' states (a predictor's 2-bit
// counter that the edges out of a block update): on hand-written loops,
// which go in a register, which register, and that they come before the
// chords.  Whether the counts and predictions stay exact is the tools'
// tests' business (tool.branch.model against Valgrind's lackey); this checks
// the choice itself.
#include <gtest/gtest.h>

#include <algorithm>
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

        .globl walk                  # a pointer loop: %rdi steps by 8 in its one block
        .type walk, @function
walk:   xor %eax, %eax
w_head: add (%rdi), %rax
        add $8, %rdi
        cmp %rdi, %rsi
        jne w_head
        mov $0, %r11d                # (dead at the ret: a register for the count)
        ret
        .size walk, .-walk

        .globl twice                 # %rcx steps in two blocks, %edx on 32 bits: no induction
        .type twice, @function
twice:  mov $100, %rcx
        xor %edx, %edx
t_head: test $1, %cl
        je t_skip
t_odd:  sub $1, %rcx
t_skip: sub $1, %rcx
        add $1, %edx
        cmp $0, %rcx
        jg t_head
        mov %edx, %eax
        ret
        .size twice, .-twice

        .globl nest                  # a loop in a loop: each has its own variable
        .type nest, @function
nest:   mov $10, %rsi
        xor %eax, %eax
n_outer: mov $10, %rcx
n_inner: add %rcx, %rax
        dec %rcx
        jne n_inner
n_latch: sub $1, %rsi
        jne n_outer
        mov $0, %r11d
        mov $0, %r10d
        ret
        .size nest, .-nest
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

  std::vector<analysis::Induction> inductions(const char* mark) {
    const ir::Procedure* p = at(mark).first;
    if (!p) return {};
    proc_ = p;
    live_ = std::make_unique<analysis::RegisterLiveness>(model().program, *p, model().decoder);
    return analysis::findInductions(*p, [&]() -> const analysis::RegisterLiveness& { return *live_; });
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

TEST_F(CounterPromotionTest, InductionVariables) {
  const std::vector<analysis::Induction> w = inductions("w_head");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].header, block(*proc_, "w_head"));
  EXPECT_EQ(w[0].block, block(*proc_, "w_head"));
  EXPECT_EQ(w[0].reg, 7u);  // %rdi
  EXPECT_EQ(w[0].step, 8);
  const std::vector<analysis::Induction> s = inductions("s_head");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].block, block(*proc_, "s_skip"));
  EXPECT_EQ(s[0].reg, 1u);  // %rcx
  EXPECT_EQ(s[0].step, -1);
  EXPECT_TRUE(inductions("t_head").empty());
  EXPECT_TRUE(inductions("c_head").empty());  // it calls
  // Inner loop first; %rcx is no induction of the outer loop (set in it too).
  const std::vector<analysis::Induction> n = inductions("n_inner");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].block, block(*proc_, "n_inner"));
  EXPECT_EQ(n[0].reg, 1u);
  EXPECT_EQ(n[1].header, block(*proc_, "n_outer"));
  EXPECT_EQ(n[1].block, block(*proc_, "n_latch"));
  EXPECT_EQ(n[1].reg, 6u);  // %rsi
}

// The placement makes an induction's block count a chord, and the loop
// holds it by the variable, in a register the loop leaves alone.
TEST_F(CounterPromotionTest, AnInductionsBlockIsAChordItsLoopHolds) {
  for (const char* mark : {"s_head", "n_inner", "w_head"}) {
    const std::vector<analysis::Induction> v = inductions(mark);
    ASSERT_FALSE(v.empty()) << mark;
    std::vector<uint32_t> free;
    for (const analysis::Induction& i : v) free.push_back(i.block);
    graph_ = analysis::countGraph(*proc_);
    const analysis::CounterPlan without = analysis::placeCounters(*proc_, graph_);
    plan_ = analysis::placeCounters(*proc_, graph_, {}, free);
    EXPECT_EQ(plan_.chords, without.chords) << mark << ": as many counters";
    for (const analysis::Induction& i : v) {
      EXPECT_TRUE(plan_.chord[graph_.blockEdge(i.block)]) << mark;
    }
    const std::vector<analysis::PromotedLoop> loops = analysis::promoteCounters(
        *proc_, graph_, plan_, [&]() -> const analysis::RegisterLiveness& { return *live_; }, false, {}, v);
    size_t byInduction = 0;
    for (const analysis::PromotedLoop& l : loops)
      for (const analysis::PromotedCounter& c : l.counters) {
        if (c.step == 0) continue;
        ++byInduction;
        const auto it = std::find_if(v.begin(), v.end(), [&](const analysis::Induction& i) {
          return graph_.blockEdge(i.block) == c.chord;
        });
        ASSERT_NE(it, v.end()) << mark;
        EXPECT_EQ(c.step, it->step);
        EXPECT_EQ(c.variable, it->reg);
        EXPECT_FALSE(touched(l).has(c.reg)) << mark << ": register " << c.reg;
      }
    EXPECT_EQ(byInduction, v.size()) << mark;
  }
}

}  // namespace
}  // namespace atomx

// analysis::promoteCursor: which loops hold the trace's cursor in a
// register, and which register (whether the trace stays exact is
// trace.regen.cursor_signals' business).
namespace atomx {
namespace {

class CursorPromotionTest : public CounterPromotionTest {
 protected:
  // promoteCursor on the procedure of `mark`: every block wanted but those
  // of `unwanted`, the blocks of `refused` refused.
  std::vector<analysis::PromotedLoop> cursor(const char* mark, const std::vector<const char*>& refused = {},
                                             const std::vector<const char*>& unwanted = {}) {
    const ir::Procedure* p = at(mark).first;
    if (!p) return {};
    proc_ = p;
    live_ = std::make_unique<analysis::RegisterLiveness>(model().program, *p, model().decoder);
    std::vector<bool> wanted(p->blocks.size(), true), no(p->blocks.size(), false);
    for (const char* s : unwanted) wanted[block(*p, s)] = false;
    for (const char* s : refused) no[block(*p, s)] = true;
    return analysis::promoteCursor(*p, [&]() -> const analysis::RegisterLiveness& { return *live_; }, wanted, no);
  }
};

TEST_F(CursorPromotionTest, ALoopThatCallsNothingHoldsTheCursorInARegisterItLeavesAlone) {
  const std::vector<analysis::PromotedLoop> loops = cursor("s_head");
  ASSERT_EQ(loops.size(), 1u);
  ASSERT_EQ(loops[0].counters.size(), 1u);
  const analysis::PromotedCounter& c = loops[0].counters[0];
  EXPECT_FALSE(touched(loops[0]).has(c.reg));
  EXPECT_NE(c.reg, 12u);  // the stores' disp8 form has no room for its SIB byte
  EXPECT_NE(c.reg, 4u);
  EXPECT_FALSE(c.spilled);  // r8-r11 are dead there
  EXPECT_FALSE(loops[0].entries.empty());
  EXPECT_FALSE(loops[0].exits.empty());
  EXPECT_TRUE(cursor("s_head", {}, {"s_head", "s_odd", "s_skip"}).empty()) << "a loop that stores nothing";
}

TEST_F(CursorPromotionTest, ALoopThatCallsKeepsTheCursorInMemory) { EXPECT_TRUE(cursor("c_head").empty()); }

TEST_F(CursorPromotionTest, TheOnlyRegisterALoopLeavesAloneIsTheCursors) {
  const std::vector<analysis::PromotedLoop> loops = cursor("k_head");
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].counters[0].reg, 11u);
}

TEST_F(CursorPromotionTest, TheOutermostLoopHoldsItUnlessAToolIsInItOrOnItsEdges) {
  const ir::Procedure* p = at("n_outer").first;
  ASSERT_NE(p, nullptr);
  std::vector<analysis::PromotedLoop> loops = cursor("n_outer", {}, {"n_outer", "n_latch"});
  ASSERT_EQ(loops.size(), 1u);  // the inner loop's stores are the outer loop's too
  EXPECT_TRUE(std::count(loops[0].blocks.begin(), loops[0].blocks.end(), block(*p, "n_outer")));
  EXPECT_TRUE(std::count(loops[0].blocks.begin(), loops[0].blocks.end(), block(*p, "n_inner")));
  // A call or a counter of a tool's in the outer loop, where the inner
  // one is left (its exit edge would hold the Save), or in the inner one.
  EXPECT_TRUE(cursor("n_outer", {"n_latch"}).empty());
  EXPECT_TRUE(cursor("n_outer", {"n_inner"}).empty());
}

}  // namespace
}  // namespace atomx
