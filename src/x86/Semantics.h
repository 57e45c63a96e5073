// Semantics: what one decoded instruction reads and writes, in plain
// structs, for every analysis and code generator that asks (the typed API's
// queries, RoutineFootprint, FlagsLiveness, the effective-address code of
// CallCode).  Derived once from Zydis' full operand list, hidden operands
// included, and corrected where that list says less than the instruction
// does (syscall's rax and argument registers; see describe()).
//
// One register-set encoding serves the whole project: RegSet, a bit per
// general register by hardware number (rax = bit 0 ... r15 = bit 15) and a
// bit per vector register by number (xmm/ymm/zmm n = bit 32 + n).  It is
// the typed API's RegSet layout (include/atomx/atomx.hpp), whose bit 16
// (the status flags) this type leaves to the API.
//
// A memory operand is a MemOperand descriptor; the same descriptor is both
// evaluated (evaluate(), from register values) and turned into machine code
// computing it (emitLinearAddress() and emitSegmentBase()), so the address
// an analysis routine receives and the one the model predicts cannot drift.
#pragma once

#include <Zydis/Zydis.h>

#include <cstddef>
#include <cstdint>

#include "x86/Assembler.h"

namespace atomx::x86 {

// A set of general and vector registers (see the top).
struct RegSet {
  uint64_t bits = 0;

  static constexpr RegSet gpr(unsigned hw) { return RegSet{uint64_t(1) << hw}; }
  static constexpr RegSet vector(unsigned n) { return RegSet{uint64_t(1) << (32 + n)}; }
  // The set of one Zydis register: a general register (any width) by its
  // 64-bit container, a vector register by number, empty for anything else.
  static RegSet of(ZydisRegister r);

  constexpr bool has(unsigned hw) const { return bits & (uint64_t(1) << hw); }
  constexpr bool empty() const { return bits == 0; }
  constexpr uint16_t gprs() const { return uint16_t(bits); }
  constexpr RegSet operator|(RegSet o) const { return RegSet{bits | o.bits}; }
  constexpr RegSet operator&(RegSet o) const { return RegSet{bits & o.bits}; }
  constexpr RegSet operator~() const { return RegSet{~bits}; }
  RegSet& operator|=(RegSet o) { bits |= o.bits; return *this; }
  RegSet& operator&=(RegSet o) { bits &= o.bits; return *this; }
  constexpr bool operator==(RegSet o) const { return bits == o.bits; }
  constexpr bool operator!=(RegSet o) const { return bits != o.bits; }
};

// The 64-bit Zydis register of hardware number hw (0..15), and its 32-bit half.
inline ZydisRegister reg64(unsigned hw) { return ZydisRegister(ZYDIS_REGISTER_RAX + hw); }
inline ZydisRegister reg32(unsigned hw) { return ZydisRegister(ZYDIS_REGISTER_EAX + hw); }
inline ZydisRegister reg16(unsigned hw) { return ZydisRegister(ZYDIS_REGISTER_AX + hw); }

// Status flags and DF, a bit each: CF PF AF ZF SF OF are bits 0..5 (the
// mask analysis::FlagsLiveness tracks), DF bit 6.
namespace flag {
inline constexpr uint8_t CF = 1, PF = 2, AF = 4, ZF = 8, SF = 16, OF = 32, DF = 64;
inline constexpr uint8_t kStatus = 0x3f;
}  // namespace flag

// What an instruction does to each flag.  `set` and `undefined` are always
// written (with a defined value, or one the program cannot rely on: either
// way the old value is gone); `maybe` may or may not be written (a shift
// by %cl, a rep-prefixed string instruction, syscall, whose sysret brings
// RFLAGS back).  The three write sets are disjoint.
struct FlagEffect {
  uint8_t read = 0;
  uint8_t set = 0;
  uint8_t undefined = 0;
  uint8_t maybe = 0;

  uint8_t alwaysWritten() const { return set | undefined; }
  uint8_t anyWritten() const { return set | undefined | maybe; }
};

enum class Segment : uint8_t { None, ES, CS, SS, DS, FS, GS };

// One memory access: [segment: base + index*scale + disp], address_width
// bits wide.  For a rip-relative operand `target` is the absolute address
// (base and index are none).  The hidden stack slot of push, call, pushf
// is described where the value goes (disp = -size), not as Zydis decodes it.
struct MemOperand {
  static constexpr int8_t kNone = -1;
  int8_t base = kNone;   // hardware number 0..15
  int8_t index = kNone;  // hardware number 0..15
  uint8_t scale = 0;     // 1, 2, 4, 8 with an index
  Segment segment = Segment::None;
  int64_t disp = 0;
  uint16_t size = 0;     // bytes accessed
  uint8_t addressWidth = 64;
  bool read = false;
  bool write = false;
  bool implicit = false;  // a hidden operand (push's slot, movs' rsi/rdi ...)
  bool ripRelative = false;
  uint64_t target = 0;    // rip-relative: the address
  int8_t vectorIndex = kNone;  // a gather's or scatter's (VSIB) vector index register, by number (xmm/ymm/zmm n):
                               // one address per element; `index` is none then
  int8_t bitOffset = kNone;    // bt, bts, btr, btc with a register bit offset: that register (hardware number),
                               // read signed at the operand's size; the access is to the word that holds the
                               // bit, bitOffsetBytes() past the address base + index*scale + disp

  bool hasBase() const { return base != kNone; }
  bool hasIndex() const { return index != kNone; }
  bool hasBitOffset() const { return bitOffset != kNone; }
  // The base/index register at the operand's address width (eax or rax ...).
  ZydisRegister baseRegister() const { return addressWidth == 32 ? reg32(unsigned(base)) : reg64(unsigned(base)); }
  ZydisRegister indexRegister() const { return addressWidth == 32 ? reg32(unsigned(index)) : reg64(unsigned(index)); }
};

inline constexpr unsigned kMaxMemOperands = 4;
inline constexpr uint8_t kNoCondition = 0xff;

// Everything above for one instruction.
struct Semantics {
  RegSet read;      // registers read, memory operands' base and index included
  RegSet written;   // registers written (always or conditionally)
  RegSet killed;    // general registers always overwritten whole (a 64-bit or a
                    // zero-extending 32-bit write; not cmov, not 8/16-bit parts)
  RegSet dependsOn;  // of `read`, what the result depends on: all of it but for a
                     // zeroing idiom (xor %eax,%eax; sub %r8,%r8), which the CPU
                     // and liveness treat as a plain write
  FlagEffect flags;
  MemOperand mem[kMaxMemOperands];  // accesses only: not lea's or a nop's operand
  uint8_t memCount = 0;
  uint8_t condition = kNoCondition;  // jcc/setcc/cmovcc: the condition code 0..15
  bool loopFamily = false;           // loop, loope, loopne, jrcxz, jecxz
  bool repeated = false;             // a rep, repe or repne prefix repeats it (string instructions)
  bool repeatedWhile = false;        // of those, a compare (cmps, scas): repe/repne also stop on ZF
  bool repeatedWhileNotEqual = false;  // of those, repne (stops once ZF is set; repe: once it is clear)
  bool locked = false;               // atomic: a lock prefix, or xchg with a memory operand
  bool compareExchange = false;      // cmpxchg, cmpxchg8b, cmpxchg16b (one access, locked or not, for Valgrind)
  bool cacheControl = false;         // a prefetch, or a cache-line flush or write-back (clflush, clflushopt,
                                     // clwb): its memory operand names a line; no data moves
  bool scalarVector = false;         // SSE/AVX on one element of an xmm/ymm/zmm register (addsd, movd)
  bool vectorState = false;          // touches x87, MMX, SSE/AVX, mask or MXCSR state
  // The instruction does nothing to the general registers but add the
  // constant `stepBy` (not 0) to the whole 64-bit register `stepReg`
  // (hardware number): add/sub $imm, inc, dec, lea imm(%r),%r on 64 bits.
  // -1: it does something else.  (A loop's induction variable.)
  int8_t stepReg = -1;
  int32_t stepBy = 0;

  bool loads() const;
  bool stores() const;
};

// The semantics of a decoded instruction at `address` (operands as
// ZydisDecoderDecodeFull gives them).
Semantics describe(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands, uint64_t address);

// Whether an instruction enters the kernel: a system call (syscall,
// sysenter) or a software interrupt (int, int1, int3, into).  Known from
// the mnemonic alone (x86::Insn::mnemonic).
bool entersKernel(ZydisMnemonic m);

// The legacy prefixes, which come first in an instruction's bytes, in any
// order (REX, VEX and EVEX follow them).
namespace prefix {
inline constexpr uint8_t kLock = 0xf0, kRepne = 0xf2, kRep = 0xf3;
inline constexpr uint8_t kES = 0x26, kCS = 0x2e, kSS = 0x36, kDS = 0x3e, kFS = 0x64, kGS = 0x65;
inline constexpr uint8_t kOperandSize = 0x66, kAddressSize = 0x67;
}  // namespace prefix
// Whether the legacy prefixes the instruction `bytes` (`length` of them)
// starts with include `p` (one of prefix::); reads no byte past them, and
// decodes nothing (a scan of every instruction's bytes stays cheap).
bool hasLegacyPrefix(const uint8_t* bytes, size_t length, uint8_t p);

// One operand of any kind (the typed API's atomx::Operand), in Zydis' order:
// the destination first, those the text shows (Decoder::format) before the
// hidden ones (push's stack slot, mul's rdx, the flags register).
enum class OperandKind : uint8_t { Register, Immediate, Memory, Address, Target };
enum class RegKind : uint8_t { None, General, Vector, X87, MMX, Mask, Flags, Other };
enum class ElementType : uint8_t { None, Int, UInt, Float16, Float32, Float64, Float80, BCD, Other };
struct OperandInfo {
  OperandKind kind = OperandKind::Register;
  RegKind regKind = RegKind::None;
  int8_t reg = -1;        // number within its kind (general: hardware number; xmm/ymm/zmm n; st(n) ...)
  uint16_t regBits = 0;   // the register as named: al 8, eax 32, xmm 128, ymm 256, st 80
  uint16_t bits = 0;      // what the instruction reads or writes of it (addsd's xmm: 64); 0 for an Address
  ElementType type = ElementType::None;
  uint16_t elementBits = 0;
  uint16_t elements = 0;
  bool read = false, write = false;
  bool implicit = false;  // not encoded as an operand (shl's 1, push's slot, mul's rdx)
  bool hidden = false;    // not among the text's operands (push's slot, movs' rsi/rdi, an AVX-512 write mask)
  int8_t memIndex = -1;   // Memory: its index in Semantics::mem
  MemOperand mem;         // Memory and Address (lea's, a nop's): the parts (Address: size 0)
};

// The operands of a decoded instruction at `address`, into out[0 ..
// insn.operand_count); returns their number.
unsigned describeOperands(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands, uint64_t address,
                          OperandInfo out[ZYDIS_MAX_OPERAND_COUNT]);

// Register values an address is evaluated from.
struct RegisterValues {
  uint64_t gpr[16] = {};
  uint64_t fsBase = 0;
  uint64_t gsBase = 0;
};

// The address `m` accesses given the registers' values.
uint64_t evaluate(const MemOperand& m, const RegisterValues& values);

// A bit test's word (MemOperand::bitOffset), as the CPU accesses it: `size`
// times floor(offset / (8 * size)) bytes from the operand's address, the
// offset the register's value `offset` sign-extended from the operand's
// size (Intel SDM, BT: "bit offset operand ... register").  0 without one.
inline int64_t bitOffsetBytes(const MemOperand& m, uint64_t offset) {
  if (m.bitOffset == MemOperand::kNone) return 0;
  const int64_t o = m.size == 2 ? int64_t(int16_t(offset)) : m.size == 4 ? int64_t(int32_t(offset)) : int64_t(offset);
  return (o >> 3) & -int64_t(m.size);  // arithmetic shift: floor, also for a negative offset
}

// Code computing `m`'s address without its segment base into dst: base
// and index values are in `base` and `index` (64-bit registers, ignored
// where the operand has none), and `baseBias` is added where the base is
// %rsp (code that moved the stack pointer).  Changes no flag.
void emitLinearAddress(Assembler& a, const MemOperand& m, ZydisRegister dst, ZydisRegister base,
                       ZydisRegister index, int64_t baseBias = 0);
// Adds the segment base (%fs's thread pointer) to dst, if `m` has one;
// changes the flags.  Throws Error for %gs, whose base atomx cannot read.
void emitSegmentBase(Assembler& a, const MemOperand& m, ZydisRegister dst, uint64_t insnAddress);
// Adds bitOffsetBytes(m, offset) to dst, the bit offset register's value
// being in `offset` (a 64-bit register, which it changes), if `m` has one;
// changes the flags.
void emitBitOffset(Assembler& a, const MemOperand& m, ZydisRegister dst, ZydisRegister offset);
// Whether emitSegmentBase emits anything for `m`.
inline bool hasSegmentBase(const MemOperand& m) { return m.segment == Segment::FS || m.segment == Segment::GS; }

}  // namespace atomx::x86
