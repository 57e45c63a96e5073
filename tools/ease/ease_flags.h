// ease: condition codes (report 8 of the seed): the names of the status
// flags, what an instruction does to them (Inst::flagsRead, flagsWritten,
// flagsMaybeWritten) and whether a flag write is ever read
// (Inst::flagsLiveAfter).  Header only (included by ease_inst.cpp).
#pragma once

#include <atomx/atomx.hpp>

#include <cstdint>
#include <string>

namespace ease {

namespace flags {
inline const char* const kNames[6] = {"CF", "PF", "AF", "ZF", "SF", "OF"};  // atomx::kCF ... kOF
}  // namespace flags

// "OF SF ZF"-style name of a set of flags.
inline std::string flagSetName(uint8_t f) {
  std::string out;
  for (int k = 5; k >= 0; --k)
    if (f & (1 << k)) out += (out.empty() ? "" : " ") + std::string(flags::kNames[k]);
  return out.empty() ? "none" : out;
}

// What instruction `i` does to the status flags (kCF ... bits): reads,
// always writes, may write.
struct FlagEffect {
  uint8_t read = 0;
  uint8_t written = 0;
  uint8_t maybe = 0;
};

inline FlagEffect flagEffect(atomx::Inst i) {
  const unsigned maybe = i.flagsMaybeWritten();
  return {uint8_t(i.flagsRead()), uint8_t(i.flagsWritten() & ~maybe), uint8_t(maybe)};
}

// Whether instruction i writes flags that nothing ever reads: every flag
// it writes is written again, on every path, before any instruction reads
// it (Inst::flagsLiveAfter: atomx's own flag liveness).  A call's flags are
// its callee's.
inline bool flagWriteNeverRead(atomx::Inst i) {
  const unsigned written = i.flagsWritten();
  return written && !i.isCall() && (written & i.flagsLiveAfter()) == 0;
}

}  // namespace ease
