// RoutineFootprint: what an analysis routine, with everything it can reach,
// may change of the program's state, read from its code as ATOM did.
//
//   - The vector state (x87, MMX, SSE, AVX ...): saving it (XSAVE/XRSTOR of
//     every XCR0 component) is most of the cost of a dispatched call, so a
//     routine that leaves it alone is "light" (runtime/abi.h,
//     kAtomxSlotEnterLight).
//   - The caller-saved general registers it writes: a light site's direct
//     body (CallCode.h) saves only those, and what its own argument code
//     uses.
//
// The routine and everything it reaches through direct calls and jumps
// inside the analysis object are decoded.  A call through the PLT, an
// indirect call or jump (libc's memcpy uses AVX; the target is unknown) or
// anything that cannot be decoded makes it heavy, touching everything: when
// unsure, save.  Callee-saved registers are left to the routine (SysV ABI).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "elf/ElfImage.h"
#include "x86/Decoder.h"
#include "x86/Semantics.h"

namespace atomx::instrument {

struct Footprint {
  bool vectorState = true;      // may touch the vector or x87 state (heavy)
  x86::RegSet registers{0xffff};  // general registers it may write
};

class RoutineFootprint {
 public:
  // `object`: the analysis shared object's bytes, read with elf::ElfImage
  // (copied: the footprint does not keep `object`).
  RoutineFootprint(const std::vector<uint8_t>& object, const x86::Decoder& decoder);
  ~RoutineFootprint();
  // Heavy (the defaults above) unless the routine's code proves otherwise.
  Footprint of(const std::string& routine) const;

 private:
  Footprint walk(uint64_t entry) const;
  const uint8_t* codeAt(uint64_t address, size_t& avail) const;

  const x86::Decoder& decoder_;
  std::unique_ptr<elf::ElfImage> image_;     // null when the object cannot be read
  std::vector<const elf::Section*> code_;    // executable sections except the PLT
  std::map<std::string, uint64_t> functions_;
  mutable std::map<uint64_t, Footprint> memo_;  // by entry address
};

}  // namespace atomx::instrument
