// Branch re-encoding: every form decodes back to the same kind of branch
// with the requested target.
#include <gtest/gtest.h>

#include "x86/BranchEncoder.h"
#include "x86/Decoder.h"

using namespace atomx::x86;

namespace {

Insn decodeOne(const std::vector<uint8_t>& bytes, uint64_t at) {
  Decoder d;
  Insn insn;
  EXPECT_TRUE(d.decode(bytes.data(), bytes.size(), at, insn));
  return insn;
}

}  // namespace

TEST(BranchEncoder, ConditionalBranchesKeepTheirCondition) {
  for (uint8_t cc = 0; cc < 16; ++cc) {
    Insn jcc = decodeOne({uint8_t(0x70 | cc), 0x10}, 0x1000);
    ASSERT_EQ(jcc.flow, Flow::CondBranch);
    EXPECT_EQ(jcc.condCode, cc);
    for (BranchForm form : {BranchForm::Short, BranchForm::Long}) {
      std::vector<uint8_t> out;
      encodeBranch(jcc, form, 0x5000, 0x5020, out);
      EXPECT_EQ(out.size(), branchSize(jcc, form));
      Insn back = decodeOne(out, 0x5000);
      EXPECT_EQ(back.flow, Flow::CondBranch);
      EXPECT_EQ(back.condCode, cc);
      EXPECT_EQ(back.target, 0x5020u);
      EXPECT_EQ(back.mnemonic, jcc.mnemonic);
    }
  }
}

TEST(BranchEncoder, ShortFormReachIsChecked) {
  Insn jmp = decodeOne({0xeb, 0x00}, 0x1000);
  EXPECT_TRUE(branchReaches(jmp, BranchForm::Short, 0x1000, 0x1000 + 2 + 127));
  EXPECT_FALSE(branchReaches(jmp, BranchForm::Short, 0x1000, 0x1000 + 2 + 128));
  EXPECT_TRUE(branchReaches(jmp, BranchForm::Short, 0x1000, 0x1000 + 2 - 128));
  EXPECT_TRUE(branchReaches(jmp, BranchForm::Long, 0x1000, 0x1000 + 0x7fff0000));
}

TEST(BranchEncoder, LoopFamilyLongFormStillLoops) {
  // loop rel8 -> "loop +2; jmp +5; jmp rel32": decode the pieces.
  Insn loop = decodeOne({0xe2, 0xfe}, 0x1000);
  ASSERT_TRUE(loop.isLoopFamily());
  std::vector<uint8_t> out;
  encodeBranch(loop, BranchForm::Long, 0x2000, 0x9000, out);
  ASSERT_EQ(out.size(), 9u);
  Insn first = decodeOne(out, 0x2000);
  EXPECT_EQ(first.target, 0x2004u);  // to the long jmp
  Insn skip = decodeOne({out.begin() + 2, out.end()}, 0x2002);
  EXPECT_EQ(skip.target, 0x2009u);  // past the long jmp
  Insn far = decodeOne({out.begin() + 4, out.end()}, 0x2004);
  EXPECT_EQ(far.flow, Flow::Jump);
  EXPECT_EQ(far.target, 0x9000u);
}

TEST(BranchEncoder, CallsAreAlwaysRel32) {
  Insn call = decodeOne({0xe8, 0, 0, 0, 0}, 0x1000);
  std::vector<uint8_t> out;
  encodeBranch(call, BranchForm::Short, 0x4000, 0x1000, out);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(decodeOne(out, 0x4000).target, 0x1000u);
}

TEST(Decoder, RipRelativeOperandTarget) {
  // lea 0x10(%rip), %rax at 0x1000: 48 8d 05 10 00 00 00 -> 0x1017
  Insn lea = decodeOne({0x48, 0x8d, 0x05, 0x10, 0, 0, 0}, 0x1000);
  EXPECT_TRUE(lea.isRipRelative());
  EXPECT_EQ(lea.dispOffset, 3);
  EXPECT_EQ(lea.target, 0x1017u);
  EXPECT_EQ(lea.flow, Flow::Sequential);
}
