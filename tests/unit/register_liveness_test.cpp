// analysis::RegisterLiveness on hand-written code: a small program assembled
// and linked (with --emit-relocs) at test time, analysed as atomx analyses
// any input, and the general registers live before chosen instructions
// compared with what the x86 manual and the rules of RegisterLiveness.h say.
#include <gtest/gtest.h>

#include <string>

#include "analysis/RegisterLiveness.h"
#include "assembled_program.h"

namespace atomx {
namespace {

enum : uint16_t { RAX = 1 << 0, RCX = 1 << 1, RBX = 1 << 3, RSI = 1 << 6, R8 = 1 << 8, R9 = 1 << 9, R11 = 1 << 11 };
constexpr uint16_t ALL = analysis::kAllGprs;

const char* kSource = R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        ret
        .size main, .-main

        .type kill64, @function      # a whole write kills; ret keeps all live
kill64:
m_kill64:
        mov $5, %rax
        ret
        .size kill64, .-kill64

        .type kill32, @function      # a 32-bit write zero-extends: it kills too
kill32:
m_kill32:
        mov $5, %r8d
        ret
        .size kill32, .-kill32

        .type zeroing, @function     # xor/sub of a register with itself: a write, not a read
zeroing:
m_zeroing:
        xor %eax, %eax
        sub %r8, %r8
        xor %cl, %cl                 # (8-bit: merges, rcx stays live)
        ret
        .size zeroing, .-zeroing

        .type partial, @function     # an 8-bit write merges: rax stays live
partial:
m_partial:
        mov $5, %al
        ret
        .size partial, .-partial

        .type cmov, @function        # cmov may not write: rax stays live
cmov:   test %edi, %edi
m_cmov:
        cmove %rsi, %rax
        ret
        .size cmov, .-cmov

        .type readfirst, @function   # read before written: live
readfirst:
m_readfirst:
        add $1, %rbx
        mov $0, %ebx
        ret
        .size readfirst, .-readfirst

        .type callpass, @function    # a call passes through what is dead after it
callpass:
m_callpass:
        call kill64
        mov $1, %ebx
        mov $2, %r11d
        ret
        .size callpass, .-callpass

        .type callargs, @function    # ... but reads the argument registers
callargs:
m_callargs:
        call kill64
        mov $1, %ecx
        mov $2, %eax
        ret
        .size callargs, .-callargs

        .type callkeeps, @function   # r11 read after a call is live before it (-fipa-ra)
callkeeps:
m_callkeeps:
        call kill64
        mov %r11, %rax
        mov $0, %ebx
        ret
        .size callkeeps, .-callkeeps

        .type oneside, @function     # dead on one path, read on the other: live
oneside: test %edi, %edi
m_oneside:
        jz 1f
        mov $1, %ecx
        ret
1:      mov %ecx, %eax
        ret
        .size oneside, .-oneside

        .type bothsides, @function   # overwritten on both paths: dead
bothsides: test %edi, %edi
m_bothsides:
        jz 1f
        mov $1, %ecx
        ret
1:      mov $2, %ecx
        ret
        .size bothsides, .-bothsides

        .type loop, @function        # a register read around a loop stays live in it
loop:   mov $10, %ecx
        xor %ebx, %ebx
m_loop_top:
        add %rcx, %rbx
        dec %ecx
        jnz m_loop_top
m_loop_after:
        mov $0, %ebx
        mov $0, %ecx
        ret
        .size loop, .-loop

        .type retdead, @function     # at a return, caller-saved registers the procedure
retdead:                             # writes somewhere are dead (rsi, r9), not rdi (never
        mov %rdi, %rsi               # written) nor rax and rdx (they return values)
        test %edi, %edi
        jz 1f
        mov $1, %r9d
        mov $2, %edx
        mov $3, %eax
1:
m_retdead:
        ret
        .size retdead, .-retdead

        .type tail, @function        # a jump out of the procedure keeps all live
tail:
m_tail:
        jmp kill64
        .size tail, .-tail

)";

class RegisterLivenessTest : public testing::AssembledProgramTest<RegisterLivenessTest> {
 public:
  static const char* source() {
    static const std::string s = std::string(kSource) + testing::kColdTableAsm;
    return s.c_str();
  }

 protected:
  // General registers live before the instruction at label `mark`.
  uint16_t liveAt(const std::string& mark) {
    const auto [p, insn] = at(mark);
    if (!p) return 0;
    return analysis::RegisterLiveness(model().program, *p, model().decoder).before(insn).gprs();
  }
};

TEST_F(RegisterLivenessTest, WholeWriteKills) { EXPECT_EQ(liveAt("m_kill64"), ALL & ~RAX); }
TEST_F(RegisterLivenessTest, ZeroExtendingWriteKills) { EXPECT_EQ(liveAt("m_kill32"), ALL & ~R8); }
TEST_F(RegisterLivenessTest, ZeroingIdiomKills) { EXPECT_EQ(liveAt("m_zeroing"), ALL & ~(RAX | R8)); }
TEST_F(RegisterLivenessTest, PartialWriteMerges) { EXPECT_EQ(liveAt("m_partial"), ALL); }
TEST_F(RegisterLivenessTest, CmovMayNotWrite) { EXPECT_EQ(liveAt("m_cmov"), ALL); }
TEST_F(RegisterLivenessTest, ReadBeforeWrite) { EXPECT_EQ(liveAt("m_readfirst"), ALL); }
TEST_F(RegisterLivenessTest, CallPassesDeadRegistersThrough) { EXPECT_EQ(liveAt("m_callpass"), ALL & ~(RBX | R11)); }
TEST_F(RegisterLivenessTest, CallReadsArgumentRegisters) { EXPECT_EQ(liveAt("m_callargs"), ALL); }
TEST_F(RegisterLivenessTest, CallKillsNothing) { EXPECT_EQ(liveAt("m_callkeeps"), ALL & ~RBX); }
TEST_F(RegisterLivenessTest, LiveOnOnePathIsLive) { EXPECT_EQ(liveAt("m_oneside") & RCX, RCX); }
TEST_F(RegisterLivenessTest, DeadOnBothPathsIsDead) { EXPECT_EQ(liveAt("m_bothsides"), ALL & ~RCX); }
TEST_F(RegisterLivenessTest, LoopKeepsItsRegistersLive) {
  EXPECT_EQ(liveAt("m_loop_top") & (RCX | RBX), RCX | RBX);
  EXPECT_EQ(liveAt("m_loop_after"), ALL & ~(RCX | RBX));
}
TEST_F(RegisterLivenessTest, LeavingKeepsAllLive) { EXPECT_EQ(liveAt("m_tail"), ALL); }
TEST_F(RegisterLivenessTest, TableCaseInColdPartKeepsAllLive) { EXPECT_EQ(liveAt("m_table"), ALL); }
TEST_F(RegisterLivenessTest, ReturnFreesWhatTheProcedureWrites) { EXPECT_EQ(liveAt("m_retdead"), ALL & ~(RSI | R9)); }

}  // namespace
}  // namespace atomx
