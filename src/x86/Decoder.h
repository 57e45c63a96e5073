// The x86-64 decoder: a thin wrapper over Zydis that keeps, for every
// instruction, only what the rewriter needs to move it (a few bytes per
// instruction, so a large program's full decode stays small).  Detailed
// queries (operands, registers) decode again with decodeFull().
//
// decode() answers the instructions compilers emit most from a table of its
// own (decodeCommon: a few times faster than Zydis, which costs about 70 ns
// an instruction on the benchmark machine) and asks Zydis for the rest; the
// table must answer exactly what Zydis would (tests/unit/decoder_test.cpp).
#pragma once

#include <Zydis/Zydis.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace atomx::x86 {

// How control leaves an instruction.
enum class Flow : uint8_t {
  Sequential,    // falls through (including syscalls and string ops)
  CondBranch,    // jcc, loop*, jrcxz: taken edge + fall-through
  Jump,          // direct jmp
  IndirectJump,  // jmp *reg / jmp *mem
  Call,          // direct call
  IndirectCall,  // call *reg / call *mem
  Return,        // ret
  Stop,          // ud2, hlt, int3: no fall-through edge
};

const char* flowName(Flow flow);

struct Insn {
  uint64_t address = 0;
  uint64_t target = 0;     // direct branch target, or the address a RIP-relative operand refers to
  uint16_t mnemonic = 0;   // ZydisMnemonic
  uint8_t length = 0;
  Flow flow = Flow::Sequential;
  uint8_t relOffset = 0;   // offset of the branch displacement field (0 = none)
  uint8_t relSize = 0;     // its size in bytes (1 or 4)
  uint8_t dispOffset = 0;  // offset of a RIP-relative disp32 field (0 = none)
  uint8_t condCode = 0;    // jcc condition (0..15); 0xff for loop/jrcxz family

  bool isDirectBranch() const { return relOffset != 0; }
  bool isRipRelative() const { return dispOffset != 0; }
  bool isLoopFamily() const { return condCode == 0xff; }
  uint64_t end() const { return address + length; }
  bool fallsThrough() const {
    return flow == Flow::Sequential || flow == Flow::CondBranch || flow == Flow::Call ||
           flow == Flow::IndirectCall;
  }
};

// What decode() keeps of an instruction, from Zydis or from the common-case
// decoder below.
struct RawFields {
  uint8_t length = 0;
  ZydisMnemonic mnemonic = ZYDIS_MNEMONIC_INVALID;
  uint8_t opcode = 0;
  bool mapDefault = true;      // the one-byte opcode map
  bool hasModrm = false;
  uint8_t mod = 0, reg = 0, rm = 0;
  bool hasSib = false;
  uint8_t dispSize = 0;        // bits
  int64_t disp = 0;
  uint8_t dispOffset = 0;
  bool relative = false;       // imm[0] is a branch displacement
  int64_t rel = 0;
  uint8_t relOffset = 0, relSize = 0;  // relSize in bits, as Zydis has it
};

class Decoder {
 public:
  Decoder();
  // Decodes one instruction at `address` from `bytes` (at most `avail` bytes
  // are read).  Returns false for an invalid or truncated instruction.
  bool decode(const uint8_t* bytes, size_t avail, uint64_t address, Insn& out) const;
  bool decodeFull(const uint8_t* bytes, size_t avail, ZydisDecodedInstruction& insn,
                  ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT]) const;
  // AT&T syntax text of the instruction, with absolute branch targets.
  std::string format(const uint8_t* bytes, size_t avail, uint64_t address) const;
  // decode() without its own table for the common instructions: every
  // instruction through Zydis (the tests' oracle for that table).
  void zydisOnly() { useCommon_ = false; }
  // The common instructions' table alone: false where it leaves the
  // instruction to Zydis.
  static bool decodeCommon(const uint8_t* bytes, size_t avail, RawFields& out);

 private:
  ZydisDecoder decoder_;
  ZydisDecoder fastDecoder_;
  ZydisFormatter formatter_;
  bool useCommon_ = true;
};

}  // namespace atomx::x86
