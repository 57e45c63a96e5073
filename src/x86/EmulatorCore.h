// The executing half of the emulator (Emulator.h): one instruction the
// regenerator can repeat, compiled to a few plain fields (EmuOp), and the
// function that repeats it on a register file.  Nothing here depends on
// Zydis or on any other part of atomx, so that code which cannot link the
// model -- the slices oracle's analysis object (tests/oracles/slices) --
// runs exactly this code on exactly these ops: there is one definition of
// what an emulated instruction does.
//
// x86-64's rules for a register destination, which every op follows:
//   - a 64-bit write replaces the register;
//   - a 32-bit write zero-extends: bits 63..32 become 0 (Intel SDM vol. 1,
//     3.4.1.1 "General-Purpose Registers in 64-Bit Mode");
//   - an 8- or 16-bit write merges: the other bits keep their value.
// High-byte registers (ah, ch, dh, bh) are never compiled (Emulator.cpp).
#pragma once

#include <cstdint>

namespace atomx::x86 {

// The stack slots one procedure activation may treat as registers
// (SlotStore, SlotLoad; analysis/DataSlices decides which): numbered
// 0 .. kSlots-1 per procedure.
inline constexpr unsigned kSlots = 48;

// 16 general registers by hardware number (rax = 0 ... r15 = 15), the
// load bias of the file whose %rip-relative lea is repeated (0 for a
// non-PIE executable), and the activation's stack slots.
struct RegisterFile {
  uint64_t gpr[16] = {};
  uint64_t loadBias = 0;
  uint64_t slot[kSlots] = {};
};

enum class EmuKind : uint8_t {
  None,       // not emulable
  Mov,        // dst = src, or imm
  MovAddress, // dst = imm + loadBias: a %rip-relative lea (imm: the original address)
  Lea,        // dst = base + index * scale + imm, at the address width
  Add, Sub, And, Or, Xor,  // dst = dst op (src or imm)
  Imul,       // dst = dst * src
  ImulImm,    // dst = src * imm
  Neg, Not, Inc, Dec,
  Shl, Shr, Sar, Rol, Ror,  // dst = dst op count: imm, or %cl when src is 1 (masked as the CPU does)
  Movsx, Movzx,             // dst = src (srcWidth bytes) extended
  Xchg,       // dst <-> src
  SignFill,   // cwd/cdq/cqo: rdx = the sign of rax, at `width`
  Leave,      // rsp = rbp + 8 (leave's rbp is a load: not computed)
  StackAdd,   // rsp += imm: push (-8), pop (+8; its destination is a load), ret (8 + imm),
              // call seen from its caller once it returns (0)
  SlotStore,  // slot[slot] = src (or imm), `width` bytes (4 or 8): a store to a stack slot
  SlotLoad,   // dst = slot[slot], `width` bytes (4 or 8; 4 zero-extends): its reload
};

struct EmuOp {
  EmuKind kind = EmuKind::None;
  uint8_t dst = 0;        // hardware number
  uint8_t width = 8;      // bytes written: 1, 2, 4, 8
  int8_t src = -1;        // a register source; -1: the immediate
  uint8_t srcWidth = 8;   // bytes read of src (movsx, movzx)
  int8_t base = -1;       // lea
  int8_t index = -1;
  uint8_t scale = 1;
  uint8_t addrWidth = 8;  // lea: bytes of the address size (4 with a 0x67 prefix)
  uint8_t slot = 0;       // SlotStore, SlotLoad: the procedure's slot number (< kSlots)
  int64_t imm = 0;        // immediate, lea's displacement, shift count, stack step

  // The registers the op writes, and those its result depends on.
  uint16_t outputs() const;
  uint16_t inputs() const;
  // Three words (what an analysis call receives as constants) and back.
  void encode(int64_t w[3]) const;
  static EmuOp decode(const int64_t w[3]);
};

namespace emu {

inline uint64_t mask(unsigned bytes) { return bytes >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * bytes)) - 1; }
inline uint64_t read(const RegisterFile& f, unsigned r, unsigned bytes) { return f.gpr[r] & mask(bytes); }
// x86's write rules (see the top).
inline void write(RegisterFile& f, unsigned r, unsigned bytes, uint64_t v) {
  if (bytes >= 8) f.gpr[r] = v;
  else if (bytes == 4) f.gpr[r] = uint32_t(v);
  else f.gpr[r] = (f.gpr[r] & ~mask(bytes)) | (v & mask(bytes));
}
inline int64_t signExtend(uint64_t v, unsigned bytes) {
  if (bytes >= 8) return int64_t(v);
  const unsigned shift = 64 - 8 * bytes;
  return int64_t(v << shift) >> shift;
}
inline uint16_t bit(int r) { return r < 0 ? 0 : uint16_t(1u << unsigned(r)); }

}  // namespace emu

inline uint16_t EmuOp::outputs() const {
  switch (kind) {
    case EmuKind::None: case EmuKind::SlotStore: return 0;  // (a slot store writes its slot only)
    case EmuKind::Xchg: return uint16_t(emu::bit(dst) | emu::bit(src));
    case EmuKind::SignFill: return emu::bit(2);
    case EmuKind::Leave: case EmuKind::StackAdd: return emu::bit(4);
    default: return emu::bit(dst);
  }
}

inline uint16_t EmuOp::inputs() const {
  const uint16_t merged = width < 4 ? emu::bit(dst) : 0;  // an 8/16-bit write keeps the rest
  switch (kind) {
    case EmuKind::None: case EmuKind::MovAddress: case EmuKind::SlotLoad: return merged;  // (a reload reads its slot)
    case EmuKind::SlotStore: return emu::bit(src);
    case EmuKind::Mov: case EmuKind::ImulImm: case EmuKind::Movsx: case EmuKind::Movzx:
      return uint16_t(emu::bit(src) | merged);
    case EmuKind::Lea: return uint16_t(emu::bit(base) | emu::bit(index) | merged);
    case EmuKind::Sub: case EmuKind::Xor:
      if (src == int8_t(dst)) return merged;  // a zeroing idiom: 0 whatever dst held
      return uint16_t(emu::bit(dst) | emu::bit(src));
    case EmuKind::Add: case EmuKind::And: case EmuKind::Or: case EmuKind::Imul: case EmuKind::Xchg:
      return uint16_t(emu::bit(dst) | emu::bit(src));
    case EmuKind::SignFill: return uint16_t(emu::bit(0) | (width < 4 ? emu::bit(2) : 0));
    case EmuKind::Leave: return emu::bit(5);
    case EmuKind::StackAdd: return emu::bit(4);
    default: return uint16_t(emu::bit(dst) | emu::bit(src));  // neg, not, inc, dec; shifts and rotates (by %cl: src)
  }
}

inline void EmuOp::encode(int64_t w[3]) const {
  w[0] = int64_t(uint64_t(kind) | uint64_t(dst) << 8 | uint64_t(width) << 16 | uint64_t(uint8_t(src)) << 24 |
                 uint64_t(srcWidth) << 32 | uint64_t(uint8_t(base)) << 40 | uint64_t(uint8_t(index)) << 48 |
                 uint64_t(scale) << 56);
  w[1] = int64_t(uint64_t(addrWidth) | uint64_t(slot) << 8);
  w[2] = imm;
}

inline EmuOp EmuOp::decode(const int64_t w[3]) {
  const uint64_t a = uint64_t(w[0]);
  EmuOp op;
  op.kind = EmuKind(a & 0xff);
  op.dst = uint8_t(a >> 8);
  op.width = uint8_t(a >> 16);
  op.src = int8_t(uint8_t(a >> 24));
  op.srcWidth = uint8_t(a >> 32);
  op.base = int8_t(uint8_t(a >> 40));
  op.index = int8_t(uint8_t(a >> 48));
  op.scale = uint8_t(a >> 56);
  op.addrWidth = uint8_t(w[1]);
  op.slot = uint8_t(uint64_t(w[1]) >> 8);
  op.imm = w[2];
  return op;
}

// Repeats `op` on `f`: writes op.outputs() from op.inputs().
inline void emulate(const EmuOp& op, RegisterFile& f) {
  using namespace emu;
  const unsigned w = op.width, bits = 8 * w;
  const uint64_t d = read(f, op.dst, w);
  const uint64_t s = op.src >= 0 ? read(f, unsigned(op.src), w) : uint64_t(op.imm);
  // A shift's count: the immediate, or %cl (src 1); the CPU masks it so.
  const unsigned count = unsigned(op.src >= 0 ? f.gpr[unsigned(op.src)] : uint64_t(op.imm)) & (w == 8 ? 63 : 31);
  switch (op.kind) {
    case EmuKind::None: return;
    case EmuKind::Mov: write(f, op.dst, w, s); return;
    case EmuKind::MovAddress: write(f, op.dst, w, uint64_t(op.imm) + f.loadBias); return;
    case EmuKind::Lea: {
      uint64_t a = uint64_t(op.imm);
      if (op.base >= 0) a += f.gpr[op.base];
      if (op.index >= 0) a += f.gpr[op.index] * op.scale;
      write(f, op.dst, w, a & mask(op.addrWidth));
      return;
    }
    case EmuKind::Add: write(f, op.dst, w, d + s); return;
    case EmuKind::Sub: write(f, op.dst, w, d - s); return;
    case EmuKind::And: write(f, op.dst, w, d & s); return;
    case EmuKind::Or: write(f, op.dst, w, d | s); return;
    case EmuKind::Xor: write(f, op.dst, w, d ^ s); return;
    case EmuKind::Imul: write(f, op.dst, w, d * s); return;
    case EmuKind::ImulImm: write(f, op.dst, w, read(f, unsigned(op.src), w) * uint64_t(op.imm)); return;
    case EmuKind::Neg: write(f, op.dst, w, uint64_t(0) - d); return;
    case EmuKind::Not: write(f, op.dst, w, ~d); return;
    case EmuKind::Inc: write(f, op.dst, w, d + 1); return;
    case EmuKind::Dec: write(f, op.dst, w, d - 1); return;
    case EmuKind::Shl: write(f, op.dst, w, count >= 64 ? 0 : d << count); return;
    case EmuKind::Shr: write(f, op.dst, w, d >> count); return;
    case EmuKind::Sar: write(f, op.dst, w, uint64_t(signExtend(d, w) >> count)); return;
    case EmuKind::Rol: case EmuKind::Ror: {
      const unsigned c = count % bits;  // 8/16-bit rotates: the masked count modulo the width
      if (c == 0) { write(f, op.dst, w, d); return; }
      const uint64_t v = op.kind == EmuKind::Rol ? (d << c) | (d >> (bits - c)) : (d >> c) | (d << (bits - c));
      write(f, op.dst, w, v);
      return;
    }
    case EmuKind::Movsx: {
      const uint64_t v = read(f, unsigned(op.src), op.srcWidth);
      write(f, op.dst, w, uint64_t(signExtend(v, op.srcWidth)));
      return;
    }
    case EmuKind::Movzx: write(f, op.dst, w, read(f, unsigned(op.src), op.srcWidth)); return;
    case EmuKind::Xchg: {
      const uint64_t a = d, b = read(f, unsigned(op.src), w);
      write(f, op.dst, w, b);
      write(f, unsigned(op.src), w, a);
      return;
    }
    case EmuKind::SignFill: write(f, 2, w, signExtend(read(f, 0, w), w) < 0 ? ~uint64_t(0) : 0); return;
    case EmuKind::Leave: f.gpr[4] = f.gpr[5] + 8; return;
    case EmuKind::StackAdd: f.gpr[4] += uint64_t(op.imm); return;
    case EmuKind::SlotStore: f.slot[op.slot % kSlots] = s & mask(w); return;
    case EmuKind::SlotLoad: write(f, op.dst, w, f.slot[op.slot % kSlots] & mask(w)); return;
  }
}

// An evaluated predicate's flag setter (analysis/DataSlices, docs/trace.md
// "Evaluated predicates"): cmp, sub, test, and, add, inc or dec of a
// general register with a register or an immediate, repeated on the
// register file as it is *before* the instruction, to give the status
// flags a following jcc reads.  Flags as x86::flag numbers them (CF PF AF
// ZF SF OF: bits 0..5); AF is not computed (no jcc reads it).
enum class FlagKind : uint8_t { None, Sub, And, Add, Inc, Dec };  // Sub: cmp and sub; And: test and and

struct FlagOp {
  FlagKind kind = FlagKind::None;
  uint8_t width = 8;   // bytes: 1, 2, 4, 8
  uint8_t a = 0;       // the first operand's register (hardware number)
  int8_t b = -1;       // the second's; -1: the immediate
  int64_t imm = 0;
  // The registers the flags depend on.
  uint16_t inputs() const { return kind == FlagKind::None ? 0 : uint16_t(emu::bit(a) | emu::bit(b)); }
};

// Which status flags `op` sets (inc and dec leave CF as it was).
inline uint8_t flagsSet(const FlagOp& op) {
  if (op.kind == FlagKind::None) return 0;
  return op.kind == FlagKind::Inc || op.kind == FlagKind::Dec ? 0x3e & ~0x04 : 0x3f & ~0x04;
}

namespace emu {

// The status flags `op` sets, computed from `f` before it runs.
inline uint8_t flags(const FlagOp& op, const RegisterFile& f) {
  const unsigned w = op.width, bits = 8 * w;
  const uint64_t m = mask(w), sign = uint64_t(1) << (bits - 1);
  const uint64_t a = read(f, op.a, w);
  uint64_t b = op.b >= 0 ? read(f, unsigned(op.b), w) : uint64_t(op.imm) & m;
  uint64_t r = 0;
  bool cf = false, of = false;
  switch (op.kind) {
    case FlagKind::None: return 0;
    case FlagKind::Inc: b = 1; [[fallthrough]];
    case FlagKind::Add:
      r = (a + b) & m;
      cf = r < a;
      of = (~(a ^ b) & (a ^ r) & sign) != 0;
      break;
    case FlagKind::Dec: b = 1; [[fallthrough]];
    case FlagKind::Sub:
      r = (a - b) & m;
      cf = a < b;
      of = ((a ^ b) & (a ^ r) & sign) != 0;
      break;
    case FlagKind::And: r = a & b; break;
  }
  uint8_t fl = 0;
  if (cf && op.kind != FlagKind::Inc && op.kind != FlagKind::Dec) fl |= 1;
  if (!(__builtin_popcount(unsigned(r & 0xff)) & 1)) fl |= 2;  // PF: even parity of the low byte
  if (r == 0) fl |= 8;
  if (r & sign) fl |= 16;
  if (of) fl |= 32;
  return fl;
}

// Whether condition code `cc` (0..15, as in jcc's opcode) holds for `fl`.
inline bool condition(uint8_t cc, uint8_t fl) {
  const bool cf = fl & 1, pf = fl & 2, zf = fl & 8, sf = fl & 16, of = fl & 32;
  bool v = false;
  switch (cc >> 1) {
    case 0: v = of; break;
    case 1: v = cf; break;
    case 2: v = zf; break;
    case 3: v = cf || zf; break;
    case 4: v = sf; break;
    case 5: v = pf; break;
    case 6: v = sf != of; break;
    case 7: v = zf || sf != of; break;
  }
  return (cc & 1) ? !v : v;
}

// The status flags condition code `cc` reads.
inline uint8_t conditionFlags(uint8_t cc) {
  static constexpr uint8_t kRead[8] = {32, 1, 8, 1 | 8, 16, 2, 16 | 32, 8 | 16 | 32};
  return kRead[(cc >> 1) & 7];
}

}  // namespace emu

}  // namespace atomx::x86
