// analysis::FlagsLiveness on hand-written code: a small program assembled
// and linked (with --emit-relocs) at test time, analysed as atomx analyses
// any input, and the live status flags before chosen instructions compared
// with what the x86 manual says.  Bits: CF 1, PF 2, AF 4, ZF 8, SF 16, OF 32.
#include <gtest/gtest.h>


#include <cstdio>
#include <string>

#include "assembled_program.h"
#include "analysis/FlagsLiveness.h"

namespace atomx {
namespace {

constexpr uint8_t CF = 1, ZF = 8, OF = 32, ALL = analysis::kAllStatusFlags;

// Each case is a procedure; `mark_N:` labels (local symbols) name the
// instructions whose live flags the test checks.
const char* kSource = R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        ret
        .size main, .-main

        .type across, @function      # cmp; mov; jne: ZF live across the mov
across: cmp %rdi, %rsi
m_across_mov:
        mov $1, %eax
        jne 1f
        ret
1:      ret
        .size across, .-across

        .type shiftcl, @function     # a shift by %cl may write nothing
shiftcl: test %eax, %eax
m_shiftcl:
        shl %cl, %eax
        jz 1f
        ret
1:      ret
        .size shiftcl, .-shiftcl

        .type shiftimm, @function    # a shift by 3 always writes ZF
shiftimm: test %eax, %eax
m_shiftimm:
        shl $3, %eax
        jz 1f
        ret
1:      ret
        .size shiftimm, .-shiftimm

        .type carry, @function       # inc keeps CF: adc still needs it
carry:  cmp %rdi, %rsi
m_carry_inc:
        inc %rax
        adc $0, %rdx
        ret
        .size carry, .-carry

        .type callkills, @function   # flags do not cross a call
callkills: cmp %rdi, %rsi
m_callkills:
        call across
        jne 1f
1:      ret
        .size callkills, .-callkills

        .type tail, @function        # a jump to another procedure's entry: a tail call
tail:   cmp %rdi, %rsi
m_tail:
        jmp across
        .size tail, .-tail

        .type cold, @function        # a jump to a .cold part continues the function
cold:   cmp %rdi, %rsi
m_cold:
        jmp cold.cold
        .size cold, .-cold

        .type cold.cold, @function
cold.cold: jne 1f
1:      ret
        .size cold.cold, .-cold.cold


        .type loop, @function        # around a loop: ZF needed at its jnz only
loop:   mov $10, %ecx
m_loop_top:
        add $1, %eax
m_loop_dec:
        dec %ecx
m_loop_jnz:
        jnz m_loop_top
        ret
        .size loop, .-loop

        .type overflow, @function    # jo reads OF only
overflow: add %rdi, %rsi
m_overflow:
        lea 1(%rax), %rax
        jo 1f
        ret
1:      ret
        .size overflow, .-overflow
)";

class FlagsLivenessTest : public testing::AssembledProgramTest<FlagsLivenessTest> {
 public:
  static const char* source() {
    static const std::string s = std::string(kSource) + testing::kColdTableAsm;
    return s.c_str();
  }

 protected:
  // Live flags before the instruction at label `mark`.
  uint8_t liveAt(const std::string& mark) {
    const auto [p, insn] = at(mark);
    if (!p) return 0xff;
    return analysis::FlagsLiveness(model().program, *p, model().decoder).before(insn);
  }
};

TEST_F(FlagsLivenessTest, LiveAcrossAnInstructionThatLeavesThemAlone) { EXPECT_EQ(liveAt("m_across_mov"), ZF); }
TEST_F(FlagsLivenessTest, ShiftByClMayWriteNothing) { EXPECT_EQ(liveAt("m_shiftcl") & ZF, ZF); }
TEST_F(FlagsLivenessTest, ShiftByImmediateWrites) { EXPECT_EQ(liveAt("m_shiftimm"), 0); }
TEST_F(FlagsLivenessTest, IncLeavesCarryLive) { EXPECT_EQ(liveAt("m_carry_inc"), CF); }
TEST_F(FlagsLivenessTest, NoFlagCrossesACall) { EXPECT_EQ(liveAt("m_callkills"), 0); }
TEST_F(FlagsLivenessTest, TailCallNeedsNone) { EXPECT_EQ(liveAt("m_tail"), 0); }
TEST_F(FlagsLivenessTest, JumpToColdPartKeepsAll) { EXPECT_EQ(liveAt("m_cold"), ALL); }
TEST_F(FlagsLivenessTest, TableCaseInColdPartKeepsAll) { EXPECT_EQ(liveAt("m_table"), ALL); }
TEST_F(FlagsLivenessTest, LoopNeedsZfAtItsBranchOnly) {
  EXPECT_EQ(liveAt("m_loop_jnz"), ZF);
  EXPECT_EQ(liveAt("m_loop_dec"), 0);
  EXPECT_EQ(liveAt("m_loop_top"), 0);
}
TEST_F(FlagsLivenessTest, JoNeedsOverflowOnly) { EXPECT_EQ(liveAt("m_overflow"), OF); }

}  // namespace
}  // namespace atomx
