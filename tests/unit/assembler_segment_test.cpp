// Segment-relative operands of the Assembler (x86::segmentOffset): what
// per-thread counters emit (instrument/CallCode, runtime/abi.h), decoded
// back by the decoder (Zydis' formatter), and their bytes as objdump shows them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "x86/Assembler.h"
#include "x86/Decoder.h"

using namespace atomx;

namespace {

std::string text(const std::vector<uint8_t>& code) {
  x86::Decoder d;
  return d.format(code.data(), code.size(), 0);
}

}  // namespace

TEST(AssemblerSegment, IncrementThroughGs) {
  std::vector<uint8_t> code;
  x86::Assembler(code, 0).incMem(x86::segmentOffset(ZYDIS_REGISTER_GS, 0x300), false);
  EXPECT_EQ(code, (std::vector<uint8_t>{0x65, 0x48, 0xff, 0x04, 0x25, 0x00, 0x03, 0x00, 0x00}));
  EXPECT_EQ(text(code), "inc %gs:0x0000000000000300");
}

TEST(AssemblerSegment, SizeDoesNotDependOnTheOffset) {
  std::vector<uint8_t> small, large;
  x86::Assembler(small, 0).incMem(x86::segmentOffset(ZYDIS_REGISTER_GS, 0), false);
  x86::Assembler(large, 0).incMem(x86::segmentOffset(ZYDIS_REGISTER_GS, 0x7fff0000), false);
  EXPECT_EQ(small.size(), large.size());
}

TEST(AssemblerSegment, ThreadCheck) {
  std::vector<uint8_t> code;
  x86::Assembler a(code, 0);
  a.movLoad(ZYDIS_REGISTER_R11D, x86::segmentOffset(ZYDIS_REGISTER_FS, 0x2d0, 4));
  EXPECT_EQ(code, (std::vector<uint8_t>{0x64, 0x44, 0x8b, 0x1c, 0x25, 0xd0, 0x02, 0x00, 0x00}));
  EXPECT_EQ(text(code), "mov %fs:0x00000000000002D0, %r11d");
  code.clear();
  x86::Assembler(code, 0).cmpMemReg(x86::segmentOffset(ZYDIS_REGISTER_FS, 0x88, 4), ZYDIS_REGISTER_ECX);
  EXPECT_EQ(code, (std::vector<uint8_t>{0x64, 0x39, 0x0c, 0x25, 0x88, 0x00, 0x00, 0x00}));
  EXPECT_EQ(text(code), "cmp %ecx, %fs:0x0000000000000088");
}

TEST(AssemblerSegment, LockedAndPlainRipRelativeKeepNoSegment) {
  std::vector<uint8_t> code;
  x86::Assembler(code, 0x1000).incMem(x86::ripAbsolute(0x2000), true);
  EXPECT_EQ(code[0], 0xf0);  // lock, no segment prefix
  EXPECT_EQ(code.size(), 8u);
}
