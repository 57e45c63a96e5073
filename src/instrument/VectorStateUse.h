// VectorStateUse: which analysis routines can run without atomx saving the
// x87/MMX/SSE/AVX state around them (runtime/abi.h, kAtomxSlotEnterLight).
//
// Saving that state (XSAVE/XRSTOR of every XCR0 component) is most of the
// cost of an inserted call.  ATOM saved only what an analysis routine could
// clobber, found from its code; so does this: a routine is "light" when it
// and everything it can reach through direct calls and jumps inside the
// analysis object use general registers only.  A call through the PLT or an
// indirect call or jump (libc's memcpy uses AVX; the target is unknown) or
// anything that cannot be decoded makes it heavy: when unsure, save.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "x86/Decoder.h"

namespace atomx::instrument {

class VectorStateUse {
 public:
  // `object`: the analysis shared object's bytes (ELF64).
  VectorStateUse(const std::vector<uint8_t>& object, const x86::Decoder& decoder);
  // False only when the routine provably leaves the vector and x87 state alone.
  bool mayTouch(const std::string& routine) const;

 private:
  bool reachesVectorState(uint64_t entry) const;
  const uint8_t* codeAt(uint64_t address, size_t& avail) const;

  struct CodeSection {
    uint64_t address, size, offset;
  };
  const std::vector<uint8_t>& object_;
  const x86::Decoder& decoder_;
  std::vector<CodeSection> code_;       // executable sections except the PLT
  std::map<std::string, uint64_t> functions_;
  mutable std::map<uint64_t, bool> memo_;  // entry -> reaches vector state
};

}  // namespace atomx::instrument
