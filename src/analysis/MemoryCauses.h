// MemoryCauses: why the program makes each memory reference (ease's
// Figure 12, Davidson & Whalley): saving and restoring callee-saved
// registers, call linkage, stack variables, spills and temporaries,
// globals, or through a pointer.  Decided per instruction, statically,
// from the instruction, the CFI (.eh_frame: the CFA rule and each
// register's saved slot at every pc) and the stack variables' places
// (DWARF, given by the caller: src/debuginfo/StackVariables.h reads them).
// The rules, first that applies (tools/ease/README.md, "Memory references
// by cause"):
//   1. call's pushed return address, ret's popped one, leave's pop of %rbp:
//      call linkage;
//   2. %fs/%gs-based (thread-local), %rip-relative or absolute (no base
//      register): global;
//   3. a push or a 64-bit store of %rbx, %rbp, %r12-%r15 whose slot the CFI
//      says, at the next instruction, holds that register's saved value;
//      a pop or 64-bit load of one into it from the slot the CFI says holds
//      it at that pc: save/restore -- but call linkage for %rbp in a
//      procedure whose CFA is ever %rbp-based (frame-pointer set-up and its
//      undoing);
//   4. %rsp-based, or %rbp-based while the CFA is %rbp-based (%rbp the frame
//      pointer): a stack variable when a variable's slot at that pc
//      overlaps [disp, disp + size), else a spill or temporary (push and pop
//      of anything else included);
//   5. anything else: through a pointer (heap, global or stack, which the
//      instruction alone cannot tell).
#pragma once

#include "unwind/EhFrame.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace atomx::analysis {

// The values are the facts' ATOMX_CAUSE_* (src/instrument/Facts.cpp checks).
enum class MemCause : uint8_t { None, SaveRestore, CallLinkage, StackVariable, Spill, Global, Pointer };
const char* causeName(MemCause c);

// A variable's stack slot: [offset, offset + size) from the base, while
// the pc is in [lo, hi).
struct StackSlot {
  enum class Base : uint8_t { Cfa, Rsp, Rbp };
  uint64_t lo = 0, hi = 0;
  Base base = Base::Cfa;
  int64_t offset = 0;
  uint64_t size = 0;
};

// One memory operand of one instruction (general registers by hardware
// number: 0 %rax ... 4 %rsp, 5 %rbp ... 15 %r15).
struct MemRef {
  enum class Op : uint8_t { Other, Push, Pop, Call, Return, Leave, Move };
  uint64_t pc = 0;
  unsigned instSize = 0;
  Op op = Op::Other;
  int reg = -1;  // Push, Pop, Move: the 64-bit general register pushed, popped, stored or loaded, else -1
  int base = -1, index = -1;
  int64_t disp = 0;
  unsigned size = 0;
  bool fsOrGs = false, ripRelative = false, implicit = false, read = false, write = false;
};

// The CFI at one pc: the CFA (a register, DWARF-numbered, plus an offset)
// and each register's saved slot (CFA + offset), DWARF-numbered 0..16.
struct CfiRow {
  bool cfaKnown = false;
  int cfaReg = -1;
  int64_t cfaOffset = 0;
  bool saved[17] = {};
  int64_t savedAt[17] = {};
};

class MemoryCauses {
 public:
  // `slots` sorted by lo.
  MemoryCauses(const unwind::EhFrameInfo& info, unwind::ByteView ehFrame, std::vector<StackSlot> slots);
  MemCause classify(const MemRef& m);
  // The CFI at pc (nullopt outside every FDE).
  std::optional<CfiRow> cfiAt(uint64_t pc);

 private:
  struct FdeRows {
    std::vector<std::pair<uint64_t, CfiRow>> rows;  // by location
    bool framePointer = false;                     // the CFA is %rbp-based somewhere
  };
  const FdeRows* rowsOf(uint64_t pc);
  bool holdsVariable(uint64_t pc, int reg, int64_t disp, unsigned size, const CfiRow& row) const;

  const unwind::EhFrameInfo& info_;
  unwind::ByteView eh_;
  std::vector<StackSlot> slots_;
  std::map<const unwind::Fde*, FdeRows> rows_;
};

}  // namespace atomx::analysis
