// Which status flags (CF, PF, AF, ZF, SF, OF) a procedure may still read
// before it overwrites them, at each instruction: inserted code that changes
// the flags must keep them only where they are live.  They rarely are at a
// block's start, so an inline counter there is one `inc`.
//
// Conservative in every doubt: a flag counts as written only when the
// instruction always writes it (a shift by %cl and a rep-prefixed string
// instruction may leave the flags alone), and control leaving the procedure
// keeps every flag live, except through a return, a call, or a jump to
// another procedure's entry (the ABI says no flags cross those).  A jump to
// a `.cold` part keeps them live: it continues the same function.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/Liveness.h"
#include "ir/Program.h"
#include "x86/Decoder.h"

namespace atomx::analysis {

inline constexpr uint8_t kAllStatusFlags = 0x3f;  // CF PF AF ZF SF OF, bits 0..5

class FlagsLiveness {
 public:
  FlagsLiveness(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder);

  // Status flags live right before instruction `insn` (an index in proc.insns).
  uint8_t before(uint32_t insn) const { return before_[insn]; }
  // Live right after it, on its fall-through path.
  uint8_t after(uint32_t insn) const { return insn + 1 < before_.size() ? before_[insn + 1] : kAllStatusFlags; }
  // Live where control arrives at original address `target` (a branch target):
  // before that instruction when it is in this procedure, otherwise as the
  // rule above for control leaving the procedure says.
  uint8_t at(uint64_t target) const;

 private:
  Transfer<uint8_t> effect(uint32_t insn) const;  // reads, and always writes
  uint8_t leaving(uint64_t target) const;  // control goes to `target`, outside this procedure

  const ir::Program& program_;
  const ir::Procedure& proc_;
  const x86::Decoder& decoder_;
  std::vector<uint8_t> before_;
};

}  // namespace atomx::analysis
