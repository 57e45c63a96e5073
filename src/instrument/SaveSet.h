// SaveSet: the one owner of what inserted code saves and which registers it
// may use, in the spirit of DynamoRIO's drreg.  Call sites, direct bodies
// and inline counter increments all ask here:
//
//   - SiteLiveness: what is live where a site runs -- the status flags
//     (analysis::FlagsLiveness), whether DF is known clear, and the general
//     registers inserted code may use without saving them
//     (analysis::RegisterLiveness); markLiveFlags() records the first two
//     in every site;
//   - chooseCallSaves(): how a site reaches its routines (which runtime
//     dispatcher, runtime/abi.h slots; or a direct body) from those flags
//     and what the routines clobber (RoutineFootprint);
//   - directBodySaves() / directPushes() / savedState(): what a direct body
//     pushes, in which order, and where a body finds each of the program's
//     registers afterwards (a dispatcher's frame is AtomxFrame, abi.h);
//   - reserveForIncrements(): the scratch registers, the red-zone step and
//     the flags an inline increment sequence keeps.
//
// The argument code (CallBody.cpp) uses the scratch registers rax, r10 and
// r11 (never argument registers), the argument registers, and the frame
// register %rbx; those are the registers reserved here for it.
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "instrument/Plan.h"
#include "instrument/RoutineFootprint.h"
#include "x86/Semantics.h"

namespace atomx::instrument {

// The saved state is found from here in a body (callee-saved, so it
// survives the routine calls).
inline constexpr ZydisRegister kFrameRegister = ZYDIS_REGISTER_RBX;

// How a site's body is reached, and what it saves.
struct BodyKind {
  bool direct = false;
  bool saveFlags = true;  // direct bodies: RFLAGS too (and DF cleared for the calls)
  x86::RegSet saves;      // direct bodies: the general registers saved
};

// What is live where a site runs (before its instruction, after it, or on
// its edge), per procedure analysed once, on first demand.
class SiteLiveness {
 public:
  explicit SiteLiveness(const Engine& engine);
  ~SiteLiveness();
  SiteLiveness(const SiteLiveness&) = delete;
  SiteLiveness& operator=(const SiteLiveness&) = delete;

  // The status flags live at the site (bits as analysis::kAllStatusFlags).
  uint8_t flags(const Site& site);
  // DF is known clear at the site: its procedure has no `std`.
  bool directionClear(const Site& site);
  // The general registers dead at the site: code inserted there may
  // overwrite them without saving them.  Empty for a site outside the
  // program's procedures (an exit hook).
  x86::RegSet deadRegisters(const Site& site);

 private:
  struct PerProcedure;
  PerProcedure& of(const ir::Procedure& proc);
  const Engine& engine_;
  std::vector<std::unique_ptr<PerProcedure>> procs_;  // by procedure id
};

// Sets each site's liveFlags and directionClear (SiteLiveness): increments
// keep the live flags, and a call site saves none where none is live; and
// the storeScratch of a site with trace stores.
void markLiveFlags(const Engine& engine, std::vector<Site>& sites);

// The whole decision for one call site.
struct CallSaves {
  uint32_t enterSlot = 0;  // the runtime slot of its dispatcher (abi.h kAtomxSlot*)
  bool light = false;      // the vector state is not saved
  bool noFlags = false;    // RFLAGS is not saved
  BodyKind body;
};

// `footprints`: per routine id.  A site calling only light routines skips
// the vector state; one where no status flag is live and DF is known clear
// skips RFLAGS; a light site whose arguments need no call gets a direct
// body.  An _exit hook runs ProgramAfter, which may do anything.
CallSaves chooseCallSaves(const Site& site, const std::vector<Footprint>& footprints);

// Whether the site's arguments allow a direct body (its routines must also be light).
bool allowsDirectBody(const Site& site);
// What a direct body for `site` saves, given the general registers its
// routines may write: those of them that are caller-saved, the argument
// registers and scratch registers its argument code uses, and the frame
// register.  Callee-saved registers the routines restore themselves.
x86::RegSet directBodySaves(const Site& site, x86::RegSet routinesWrite);
// The registers of `saves` in the order a direct body pushes them (the
// frame register last: it keeps the unaligned %rsp across the calls).
std::vector<ZydisRegister> directPushes(x86::RegSet saves);

// Where a body finds the program's state, as offsets from kFrameRegister.
struct SavedState {
  int32_t reg[16];    // each general register (hardware number); kLive: still in the register
  int32_t rflags;     // kLive: not saved
  int32_t appStack;   // the program's %rsp at the site
  static constexpr int32_t kLive = -1;
};
SavedState savedState(const BodyKind& kind);

// Values computed through a call or a syscall (ThreadId, an indirect
// branch target): such a site needs a dispatcher.
bool needsCall(const Arg& a, const x86::Insn* insn);

// The register trace stores keep the buffer's cursor in: one of `dead`, or
// NONE when none is usable (the stores then save one below the red zone).
ZydisRegister storeScratch(x86::RegSet dead);

// What an inline increment sequence saves around itself.
struct IncrementSaves {
  std::vector<ZydisRegister> scratch;  // one per dynamic address test, pushed in this order
  uint8_t keepFlags = 0;               // status flags kept (in %rax, by lahf / seto)
  bool keepArith = false;              // SF ZF AF PF CF: lahf/sahf
  bool keepOverflow = false;           // OF: seto/add
  bool redZone = false;                // step over the red zone first
  int32_t below = 0;                   // from the inner %rsp to the program's
};
// `liveFlags`: live at the site; `addressRegs`: the registers the dynamic
// addresses read (never chosen as scratch); `tests`: how many dynamic
// address tests (or predictions without a dead register) need a scratch
// register.  A bare inc leaves CF alone; `writesCarry`: a prediction
// (Counters::predict) writes it.
IncrementSaves reserveForIncrements(uint8_t liveFlags, x86::RegSet addressRegs, size_t tests, bool writesCarry = false);
// What the inline tests of a call made unless they pass save around
// themselves (Routine::beforeUnless): three scratch registers (an address,
// a table, an offset), dead ones first; where a status flag is live, the
// flags kept in %rax (lahf, seto) and the program's %rax in `appRax` (NONE
// when %rax is dead); the registers not dead pushed below the red zone.
struct UnlessSaves {
  ZydisRegister address = ZYDIS_REGISTER_NONE, table = ZYDIS_REGISTER_NONE, offset = ZYDIS_REGISTER_NONE;
  ZydisRegister appRax = ZYDIS_REGISTER_NONE;
  std::vector<ZydisRegister> pushed;  // in push order
  bool keepArith = false, keepOverflow = false;
  bool redZone = false;
  int32_t below = 0;  // from the inner %rsp to the program's
  // Where the program's value of general register hw is while the tests run.
  ZydisRegister app(unsigned hw) const {
    return hw == 0 && appRax != ZYDIS_REGISTER_NONE ? appRax : x86::reg64(hw);
  }
};
// `addressRegs`: the registers the tests' addresses read.
UnlessSaves reserveForUnless(uint8_t liveFlags, x86::RegSet dead, x86::RegSet addressRegs);
// The register a site's predictions (Counters::predict) keep a state in:
// one of `dead` other than %rax (which lahf may need) and %rsp, or NONE
// (then one is saved).
ZydisRegister predictionScratch(x86::RegSet dead);

}  // namespace atomx::instrument
