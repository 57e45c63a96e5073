// SaveSet: the scratch registers and saves of inline increments, a direct
// body's push order and frame, and the choice of a site's dispatcher.
#include <gtest/gtest.h>

#include <runtime/abi.h>

#include <cstddef>

#include "instrument/SaveSet.h"

using namespace atomx;
using namespace atomx::instrument;
using x86::RegSet;

namespace {

RegSet gprs(std::initializer_list<unsigned> hws) {
  RegSet r;
  for (unsigned hw : hws) r |= RegSet::gpr(hw);
  return r;
}

}  // namespace

TEST(SaveSet, IncrementScratchAvoidsRaxRspAndAddressRegisters) {
  // The addresses read rcx and rdx: the first free ones are rbx, then rbp.
  const IncrementSaves s = reserveForIncrements(0, gprs({1, 2}), 2);
  ASSERT_EQ(s.scratch.size(), 2u);
  EXPECT_EQ(s.scratch[0], ZYDIS_REGISTER_RBX);
  EXPECT_EQ(s.scratch[1], ZYDIS_REGISTER_RBP);
  EXPECT_TRUE(s.redZone);
  EXPECT_EQ(s.keepFlags, 0);
  EXPECT_EQ(s.below, 128 + 16);
}

TEST(SaveSet, BareIncrementsKeepAllButCarry) {
  IncrementSaves s = reserveForIncrements(x86::flag::CF, RegSet{}, 0);
  EXPECT_FALSE(s.redZone);  // inc leaves CF alone: nothing to save
  EXPECT_EQ(s.below, 0);
  s = reserveForIncrements(x86::flag::kStatus, RegSet{}, 0);
  EXPECT_EQ(s.keepFlags, x86::flag::kStatus & ~x86::flag::CF);
  EXPECT_TRUE(s.keepArith && s.keepOverflow && s.redZone);
  EXPECT_EQ(s.below, 128 + 8);  // %rax, which holds them
  s = reserveForIncrements(x86::flag::CF, RegSet{}, 1);  // a test writes CF
  EXPECT_EQ(s.keepFlags, x86::flag::CF);
  EXPECT_FALSE(s.keepOverflow);
  EXPECT_EQ(s.below, 128 + 16);
}

TEST(SaveSet, NoScratchLeftIsAnError) {
  EXPECT_THROW(reserveForIncrements(0, RegSet{0xffff}, 1), Error);
}

TEST(SaveSet, DirectBodyFrameFollowsItsPushes) {
  BodyKind kind{true, true, gprs({3, 0, 7, 11})};  // rbx rax rdi r11
  const std::vector<ZydisRegister> pushed = directPushes(kind.saves);
  ASSERT_EQ(pushed.size(), 4u);
  EXPECT_EQ(pushed.front(), ZYDIS_REGISTER_RAX);
  EXPECT_EQ(pushed.back(), kFrameRegister);  // last: keeps the frame
  const SavedState s = savedState(kind);
  EXPECT_EQ(s.reg[3], 0);        // rbx, pushed last, at the frame
  EXPECT_EQ(s.reg[0], 24);       // rax, pushed first
  EXPECT_EQ(s.reg[2], SavedState::kLive);
  EXPECT_EQ(s.rflags, 32);       // pushfq before them
  EXPECT_EQ(s.appStack, 32 + 8 + 8 + 128);  // rflags, the return address, the red zone
}

TEST(SaveSet, DispatcherFrameIsAtomxFrame) {
  const SavedState s = savedState(BodyKind{});
  EXPECT_EQ(s.reg[0], int32_t(offsetof(AtomxFrame, rax)));
  EXPECT_EQ(s.reg[15], int32_t(offsetof(AtomxFrame, r15)));
  EXPECT_EQ(s.reg[4], SavedState::kLive);
  EXPECT_EQ(s.rflags, int32_t(offsetof(AtomxFrame, rflags)));
  EXPECT_EQ(s.appStack, int32_t(kAtomxFrameAppStack));
}

TEST(SaveSet, SlotFollowsTheRoutinesFootprint) {
  CallRequest light, heavy;
  light.routine = 0;
  heavy.routine = 1;
  const std::vector<Footprint> footprints = {Footprint{false, gprs({0})}, Footprint{}};
  Site site;  // a program site: no procedure, so flags are saved and no direct body
  site.calls = {&light};
  CallSaves s = chooseCallSaves(site, footprints);
  EXPECT_EQ(s.enterSlot, uint32_t(kAtomxSlotEnterLight));
  EXPECT_FALSE(s.body.direct);
  site.calls = {&light, &heavy};
  s = chooseCallSaves(site, footprints);
  EXPECT_EQ(s.enterSlot, uint32_t(kAtomxSlotEnter));
  site.calls = {&light};
  site.exitHook = true;  // ProgramAfter may do anything
  EXPECT_EQ(chooseCallSaves(site, footprints).enterSlot, uint32_t(kAtomxSlotEnter));
}
