// The one rule for relocated fields (analysis::fieldValue, relocatedField):
// what each relocation type's field holds for a target, and where it stops
// fitting.  Before this rule, data relocations of type R_X86_64_32S were
// range-checked as if zero-extended and absolute fields in code that stays
// were not checked at all.
#include <elf.h>
#include <gtest/gtest.h>

#include "analysis/RelocIndex.h"
#include "support/Error.h"

namespace atomx::analysis {
namespace {

TEST(RelocField, Absolute64HoldsAnything) {
  EXPECT_EQ(fieldValue(R_X86_64_64, 0x1000, 0xffff800012345678ull), 0xffff800012345678ull);
}

TEST(RelocField, Absolute32IsZeroExtended) {
  EXPECT_EQ(fieldValue(R_X86_64_32, 0x1000, 0xffffffffull), 0xffffffffull);
  EXPECT_EQ(fieldValue(R_X86_64_32, 0x1000, 0x100000000ull), std::nullopt);
}

TEST(RelocField, Absolute32SIsSignExtended) {
  EXPECT_EQ(fieldValue(R_X86_64_32S, 0x1000, 0x7fffffffull), 0x7fffffffull);
  // Fits 32 bits unsigned, but the CPU sign-extends it to 0xffffffff80000000.
  EXPECT_EQ(fieldValue(R_X86_64_32S, 0x1000, 0x80000000ull), std::nullopt);
  EXPECT_EQ(fieldValue(R_X86_64_32S, 0x1000, 0xffffffff80000000ull), 0x80000000ull);
  EXPECT_EQ(fieldValue(R_X86_64_32S, 0x1000, 0xffffffff7fffffffull), std::nullopt);
}

TEST(RelocField, PcRelativeIsTheDistance) {
  EXPECT_EQ(fieldValue(R_X86_64_PC32, 0x401000, 0x400000), 0xfffff000ull);  // -0x1000
  EXPECT_EQ(fieldValue(R_X86_64_PC32, 0x1000, 0x1000 + 0x7fffffffull), 0x7fffffffull);
  EXPECT_EQ(fieldValue(R_X86_64_PC32, 0x1000, 0x1000 + 0x80000000ull), std::nullopt);
  EXPECT_EQ(fieldValue(R_X86_64_PC32, 0x90000000ull, 0x10000000ull - 1), std::nullopt);
  EXPECT_EQ(fieldValue(R_X86_64_PC64, 0x2000, 0x1000), uint64_t(-0x1000));
}

TEST(RelocField, OtherTypesAreNotAddresses) {
  EXPECT_EQ(fieldValue(R_X86_64_GOTPCREL, 0x1000, 0x2000), std::nullopt);
  EXPECT_EQ(fieldValue(R_X86_64_PLT32, 0x1000, 0x2000), std::nullopt);
}

TEST(RelocField, RefersToComparesTheStoredBytes) {
  EXPECT_TRUE(fieldRefersTo(R_X86_64_32S, 0x1000, 0x80000000ull, 0xffffffff80000000ull));
  EXPECT_TRUE(fieldRefersTo(R_X86_64_PC32, 0x401000, 0xfffff000ull, 0x400000));
  EXPECT_FALSE(fieldRefersTo(R_X86_64_PC32, 0x401000, 0xfffff004ull, 0x400000));
  EXPECT_FALSE(fieldRefersTo(R_X86_64_64, 0x1000, 0, 0x2000));
}

TEST(RelocField, RelocatedFieldThrowsWhenTheNewTargetDoesNotFit) {
  elf::Relocation r;
  r.type = R_X86_64_32S;
  r.place = 0x401234;
  EXPECT_EQ(relocatedField(r, 0x7ffff000), 0x7ffff000ull);
  try {
    relocatedField(r, 0x80001000);
    FAIL() << "no error for a 32S field that cannot hold 0x80001000";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("0x401234"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace atomx::analysis
