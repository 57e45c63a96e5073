// The edge kinds of analysis::buildCfgs on hand-written code: a small program
// assembled and linked (with --emit-relocs) at test time and analysed as
// atomx analyses any input.  Each procedure exercises one way of leaving a
// block; the test checks the intra-procedural succs, the leaving edges
// (Block::outs), the predecessors with their kinds and the virtual exit's
// predecessors.
#include <gtest/gtest.h>


#include <memory>
#include <string>
#include <vector>

#include "assembled_program.h"
#include "elf/ElfImage.h"

namespace atomx {
namespace {

const char* kSource = R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   call calls
        xor %eax, %eax
        ret
        .size main, .-main

        .type calls, @function       # direct and indirect calls come back
calls:  push %rbx
        call tail
        call *%rbx
        pop %rbx
        ret
        .size calls, .-calls

        .type tail, @function        # a jump to another procedure's entry
tail:   jmp calls
        .size tail, .-tail

        .type condtail, @function    # a conditional tail call
condtail: test %edi, %edi
        je calls
        ret
        .size condtail, .-condtail

        .type ptrtail, @function     # an indirect jump in a procedure that takes no inner address
ptrtail: mov (%rdi), %rax
        jmp *%rax
        .size ptrtail, .-ptrtail

        .type cgoto, @function       # takes the address of its own block: unknown (a computed goto)
cgoto:  lea 1f(%rip), %rax
        jmp *%rax
1:      ret
        .size cgoto, .-cgoto

        .type dies, @function        # a no-return call: exit edge, no fall-through
dies:   test %edi, %edi
        jne 1f
        call abort
1:      ud2
        .size dies, .-dies

        .type spin, @function        # an infinite loop: no edge to the exit
spin:   jmp spin
        .size spin, .-spin
)";

class CfgEdgesTest : public testing::AssembledProgramTest<CfgEdgesTest> {
 public:
  static const char* source() { return kSource; }

 protected:
  const ir::Procedure& proc(const std::string& name) {
    for (const ir::Procedure& p : program_->model().program.procs)
      if (p.name == name) return p;
    ADD_FAILURE() << "no procedure " << name;
    static ir::Procedure none;
    return none;
  }
  uint64_t addressOf(const std::string& name) { return proc(name).start; }

  // "1:taken 2:fall" for succs, "call:calls return" for outs.
  std::string succs(const ir::Procedure& p, uint32_t b) {
    std::string s;
    for (const ir::Edge& e : p.blocks.at(b).succs)
      s += (s.empty() ? "" : " ") + std::to_string(e.to) + ":" + ir::edgeKindName(e.kind);
    return s;
  }
  std::string outs(const ir::Procedure& p, uint32_t b) {
    std::string s;
    for (const ir::OutEdge& e : p.blocks.at(b).outs) {
      s += (s.empty() ? "" : " ") + std::string(ir::edgeKindName(e.kind));
      if (e.target) s += ":" + program_->model().program.describe(e.target);
    }
    return s;
  }
  template <class Edges> std::string preds(const Edges& ps) {
    std::string s;
    for (const ir::PredEdge& e : ps) s += (s.empty() ? "" : " ") + std::to_string(e.from) + ":" + ir::edgeKindName(e.kind);
    return s;
  }
};

TEST_F(CfgEdgesTest, CallsComeBackThroughTheirFallThrough) {
  const ir::Procedure& p = proc("calls");
  ASSERT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(succs(p, 0), "1:fall");
  EXPECT_EQ(outs(p, 0), "call:tail");
  EXPECT_EQ(succs(p, 1), "2:fall");
  EXPECT_EQ(outs(p, 1), "call");  // call *%rbx: callee unknown
  EXPECT_EQ(succs(p, 2), "");
  EXPECT_EQ(outs(p, 2), "return");
  EXPECT_EQ(preds(p.blocks[1].preds), "0:fall");
  EXPECT_EQ(preds(p.exitPreds), "2:return");
}

TEST_F(CfgEdgesTest, DirectAndConditionalTailCalls) {
  const ir::Procedure& t = proc("tail");
  ASSERT_EQ(t.blocks.size(), 1u);
  EXPECT_EQ(succs(t, 0), "");
  EXPECT_EQ(outs(t, 0), "tail:calls");
  EXPECT_EQ(preds(t.exitPreds), "0:tail");
  const ir::Procedure& c = proc("condtail");
  ASSERT_EQ(c.blocks.size(), 2u);
  EXPECT_EQ(succs(c, 0), "1:fall");
  EXPECT_EQ(outs(c, 0), "tail:calls");
  EXPECT_EQ(preds(c.blocks[1].preds), "0:fall");
  EXPECT_EQ(preds(c.exitPreds), "0:tail 1:return");
}

TEST_F(CfgEdgesTest, IndirectJumpsNoTableExplains) {
  const ir::Procedure& t = proc("ptrtail");
  ASSERT_EQ(t.blocks.size(), 1u);
  EXPECT_EQ(outs(t, 0), "tail");
  const ir::Procedure& g = proc("cgoto");
  ASSERT_EQ(g.blocks.size(), 2u);
  EXPECT_EQ(succs(g, 0), "");
  EXPECT_EQ(outs(g, 0), "unknown");
  EXPECT_EQ(preds(g.blocks[1].preds), "");
  EXPECT_EQ(preds(g.exitPreds), "0:unknown 1:return");
}

TEST_F(CfgEdgesTest, NoReturnCallsAndStops) {
  const ir::Procedure& p = proc("dies");
  ASSERT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(succs(p, 0), "2:taken 1:fall");
  EXPECT_EQ(succs(p, 1), "");  // no fall-through into the ud2
  EXPECT_EQ(outs(p, 1), "call:abort@plt exit:abort@plt");
  EXPECT_EQ(outs(p, 2), "stop");
  EXPECT_EQ(preds(p.blocks[2].preds), "0:taken");
  EXPECT_EQ(preds(p.exitPreds), "1:exit 2:stop");
}

TEST_F(CfgEdgesTest, InfiniteLoopHasNoExitEdge) {
  const ir::Procedure& p = proc("spin");
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(succs(p, 0), "0:taken");
  EXPECT_EQ(outs(p, 0), "");
  EXPECT_EQ(preds(p.blocks[0].preds), "0:taken");
  EXPECT_TRUE(p.exitPreds.empty());
}

}  // namespace
}  // namespace atomx
