// Which general registers a procedure may still read before it overwrites
// them, at each instruction: where one is dead, inserted code may use it
// without saving it (a trace store's address register, a scratch register
// for an increment).  instrument/SaveSet is the one place that asks.
//
// Conservative in every doubt, because the compiler may have relied on more
// than the ABI: with -fipa-ra gcc lets a caller keep values in caller-saved
// registers across a call to a local function that it knows leaves them
// alone, so neither a call nor a return is taken to kill anything:
//   - a call reads the argument registers (rdi rsi rdx rcx r8 r9, rax for
//     varargs, r10 for a static chain) and %rsp, and passes every register
//     live after it through; in a procedure with landing pads it reads every
//     register (a throw lands there with the registers of the call);
//   - a return keeps every register live but the caller-saved ones that
//     return no value (rcx rsi rdi r8-r11) which the procedure writes
//     somewhere: gcc's -fipa-ra lets a caller rely only on the registers a
//     callee never writes, and nothing else relies on caller-saved ones;
//   - control leaving the procedure any other way (a jump to another
//     procedure, an indirect jump that is not a known table, a call that
//     does not return, an instruction that stops) keeps every register live;
//   - a register is overwritten only by an unconditional whole write (a
//     64-bit destination, or a 32-bit one, which zero-extends; x86::Semantics
//     `killed`): a cmov, or a write of 8 or 16 bits, merges with the old value.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/Program.h"
#include "x86/Decoder.h"
#include "x86/Semantics.h"

namespace atomx::analysis {

inline constexpr uint16_t kAllGprs = 0xffff;

class RegisterLiveness {
 public:
  RegisterLiveness(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder);

  // General registers (bit = hardware number) live right before instruction
  // `insn` (an index in proc.insns).
  x86::RegSet before(uint32_t insn) const { return x86::RegSet{before_[insn]}; }
  // Live right after it, on its fall-through path.
  x86::RegSet after(uint32_t insn) const {
    return x86::RegSet{insn + 1 < before_.size() ? before_[insn + 1] : kAllGprs};
  }
  // Live where control arrives at original address `target`: before that
  // instruction when it is in this procedure, otherwise all.
  x86::RegSet at(uint64_t target) const;
  // The general registers instruction `insn` reads or writes, in part or
  // whole, address registers included (all for one that cannot be decoded).
  x86::RegSet touched(uint32_t insn) const { return x86::RegSet{touched_[insn]}; }
  // Of those, the ones it writes (all for one that cannot be decoded).
  x86::RegSet written(uint32_t insn) const { return x86::RegSet{written_[insn]}; }
  // Where it only adds a constant to a 64-bit register (x86::Semantics
  // stepReg, stepBy): that register's number and the constant; else (-1, 0).
  std::pair<int8_t, int32_t> step(uint32_t insn) const {
    return steps_.empty() || steps_[insn].by == 0 ? std::pair<int8_t, int32_t>{-1, 0}
                                                  : std::pair<int8_t, int32_t>{steps_[insn].reg, steps_[insn].by};
  }

 private:
  struct Step {
    int8_t reg = -1;
    int32_t by = 0;
  };
  std::vector<uint16_t> before_, touched_, written_;
  std::vector<Step> steps_;  // empty where no instruction steps a register
  const ir::Procedure& proc_;
};

}  // namespace atomx::analysis
