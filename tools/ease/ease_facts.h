// ease: what one instruction contributes to each report, from the public
// instruction queries only (atomx's x86 semantics module answers them; no
// instruction text is read): its operands (Inst::operand: kind, register,
// width, element type; memory operands' parts and directions), category,
// mnemonic, registers and flags read and written, condition, scalar SSE,
// rep prefix.  Each fact is a (table,
// key, weight) triple, counted `weight` times each time the instruction
// runs; the analysis side multiplies by block counts.  Header only
// (included by ease_inst.cpp).
#pragma once

#include "ease_flags.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ease {

struct Fact {
  std::string table, key;
  int weight = 1;
};

// The keys the analysis side reads back: its totals are the "total" table.
inline const char* const kTotal = "total";

using atomx::Operand;

inline std::vector<Operand> operandsOf(atomx::Inst i) {
  std::vector<Operand> v;
  for (unsigned k = 0, n = i.operandCount(); k < n; ++k) v.push_back(i.operand(k));
  return v;
}

inline bool touchesVectors(atomx::Inst i) { return ((i.regsRead() | i.regsWritten()) >> 32) != 0; }
inline bool isX87(atomx::Inst i) {
  const std::string c = i.category();
  return c.rfind("X87", 0) == 0 || c == "FCMOV";
}
inline bool isVector(const Operand& o) { return o.kind == Operand::Kind::Register && o.regKind == Operand::RegKind::Vector; }
inline bool isMemory(const Operand& o) { return o.kind == Operand::Kind::Memory; }

// The instruction type (report 3), one of: move, ALU, shift,
// multiply/divide, compare/test, conditional branch, unconditional branch,
// call/return, string, x87, SSE/AVX scalar, SSE/AVX packed, other.
inline std::string instClass(atomx::Inst i) {
  const std::string c = i.category(), m = i.mnemonic();
  if (i.isCondBranch()) return "conditional branch";
  if (i.isJump()) return "unconditional branch";
  if (i.isCall() || i.isReturn()) return "call/return";
  if (c == "STRINGOP") return "string";
  if (isX87(i)) return "x87";
  if (touchesVectors(i)) return i.isScalarVector() ? "SSE/AVX scalar" : "SSE/AVX packed";
  if (m == "cmp" || m == "test" || m == "bt") return "compare/test";
  if (m == "mul" || m == "imul" || m == "div" || m == "idiv" || m == "mulx") return "multiply/divide";
  if (c == "SHIFT" || c == "ROTATE" || m == "shld" || m == "shrd") return "shift";
  if (c == "DATAXFER" || c == "PUSH" || c == "POP" || c == "CMOV" || m == "movzx" || m == "movsx" || m == "movsxd")
    return "move";
  if (c == "BINARY" || c == "LOGICAL" || c == "SETCC" || c == "BITBYTE" || c == "CONVERT" || c == "BMI1" ||
      c == "BMI2" || m == "lea")
    return "ALU";
  return "other";
}

inline const char* const kRegNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

inline std::vector<std::string> registerNames(uint64_t set) {
  std::vector<std::string> out;
  for (int r = 0; r < 16; ++r)
    if (set & (uint64_t(1) << r)) out.push_back(kRegNames[r]);
  if (set & atomx::kFlagsBit) out.push_back("flags");
  for (int v = 0; v < 32; ++v)
    if (set & atomx::vectorRegBit(unsigned(v))) out.push_back("xmm" + std::to_string(v));
  return out;
}

// The data type an instruction works on (report 11): the integer width of
// its destination (its first operand the text shows: a register's width,
// a memory operand's size; else its first memory operand's size); the
// element of a scalar SSE/AVX operation (its first operand of one
// floating-point element: float, double, half; else intN of movd and
// movq); float/double/extended of an x87 one by its memory operand's type
// (x87 integer/control for integers, BCD and control words; register
// operations are extended); the width and element type of a vector
// operation (the widest vector register or access; the element of its
// first vector register or memory operand); "none" for control transfers,
// nops and instructions without operands.
inline std::string dataType(atomx::Inst i, const std::vector<Operand>& ops) {
  using T = Operand::Type;
  const std::string m = i.mnemonic(), c = i.category();
  if (i.isBranch() || c == "NOP" || m.rfind("nop", 0) == 0) return "none";
  if (isX87(i)) {
    for (const Operand& o : ops)
      if (isMemory(o))
        return o.type == T::Float32 ? "float (x87)" : o.type == T::Float64 ? "double (x87)"
             : o.type == T::Float80 ? "extended (x87)" : "x87 integer/control";
    return "extended (x87)";
  }
  if (touchesVectors(i)) {
    if (i.isScalarVector()) {
      for (const Operand& o : ops)
        if (!o.hidden && o.elements == 1 && (o.type == T::Float16 || o.type == T::Float32 || o.type == T::Float64))
          return o.type == T::Float64 ? "double" : o.type == T::Float32 ? "float" : "half";
      for (const Operand& o : ops)  // movd, movq: the general register or memory side, else the one element
        if (!o.hidden && o.kind != Operand::Kind::Immediate && (!isVector(o) || o.elements == 1))
          return "int" + std::to_string(o.bits) + " (vector register)";
      return "none";
    }
    unsigned width = 0;
    const Operand* first = nullptr;
    for (const Operand& o : ops) {
      if ((isVector(o) && !o.hidden) || isMemory(o)) width = std::max(width, isVector(o) ? o.regBits : o.bits);
      if (!first && !o.hidden && (isVector(o) || isMemory(o))) first = &o;
    }
    const char* element = !first ? "integer" : first->type == T::Float32 ? "float" : first->type == T::Float64 ? "double" : "integer";
    return "vector" + std::to_string(width ? width : 128) + " " + element;
  }
  unsigned bits = 0;
  for (const Operand& o : ops) {
    if (o.hidden) continue;
    if (o.kind == Operand::Kind::Register) bits = o.regBits;
    else if (isMemory(o)) bits = o.bits;
    break;
  }
  for (const Operand& o : ops)
    if (!bits && isMemory(o)) bits = o.bits;
  if (!bits) return "none";
  return "int" + std::to_string(bits);
}

// The addressing mode of one operand (report 4 of the seed), exclusive,
// the first that applies: register, immediate, branch target, segment-based
// (%fs:/%gs:), %rip-relative, absolute, base+index*scale(+disp) (an index,
// with or without a base), %rsp/%rbp-based (base %rsp or %rbp), base,
// base+disp.
inline std::string addressingMode(const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::Register: return "register";
    case Operand::Kind::Immediate: return "immediate";
    case Operand::Kind::Target: return "branch target";
    case Operand::Kind::Memory:
    case Operand::Kind::Address: break;
  }
  const atomx::MemoryOperand& a = o.mem;
  using S = atomx::MemoryOperand::Segment;
  if (a.segment == S::FS || a.segment == S::GS) return "segment-based";
  if (a.ripRelative) return "%rip-relative";
  if (a.base < 0 && a.index < 0) return "absolute";
  if (a.index >= 0) return "base+index*scale(+disp)";
  if (a.base == int(atomx::Reg::rsp) || a.base == int(atomx::Reg::rbp)) return "%rsp/%rbp-based";
  return a.disp ? "base+disp" : "base";
}

// How a memory operand is accessed: load, store, or modify (read and
// written by the same operand: add %eax,(%rdi)).
inline const char* accessRole(const atomx::MemoryOperand& m) {
  return m.read && m.write ? "modify" : m.write ? "store" : "load";
}

// Zydis' names of the conditions 0..15 (Inst::condition()), as the
// mnemonics of jcc, setcc and cmovcc spell them.
inline const char* const kConditions[16] = {"o", "no", "b", "nb", "z", "nz", "be", "nbe",
                                            "s", "ns", "p", "np", "l", "nl", "le", "nle"};

// The condition of a conditional branch, for report 9: "z", "nle" ..., or
// the mnemonic of loop and jrcxz.
inline std::string branchCondition(atomx::Inst i) {
  const int c = i.condition();
  return c >= 0 ? kConditions[c] : i.mnemonic();
}

// Every fact of instruction i.
inline std::vector<Fact> describe(atomx::Inst i) {
  std::vector<Fact> f;
  const std::string m = i.mnemonic(), c = i.category();
  const std::vector<Operand> ops = operandsOf(i);
  const bool rep = i.isRepeated();
  f.push_back({kTotal, "instructions"});
  f.push_back({kTotal, "bytes", int(i.size())});
  f.push_back({"class", instClass(i)});
  f.push_back({"mnemonic", (rep ? "rep " : "") + m});
  f.push_back({"data type", dataType(i, ops)});
  if (i.isBranch()) f.push_back({kTotal, "control transfers"});
  if (i.isCondBranch()) f.push_back({kTotal, "conditional branches"}), f.push_back({kTotal, "Bc"});
  if (rep) f.push_back({kTotal, "rep-prefixed"});

  // Addressing modes: the operands the text shows, then the memory
  // operands it does not (the stack slot of push, pop, call, ret; the
  // %rsi/%rdi operands of string instructions).
  for (const Operand& o : ops)
    if (!o.hidden) f.push_back({"addressing mode", addressingMode(o)});
  for (const Operand& o : ops) {
    if (!isMemory(o)) continue;
    const std::string mode = addressingMode(o);
    if (o.hidden) f.push_back({"addressing mode", mode});
    const std::string size = std::to_string(o.mem.size);
    const std::string role = accessRole(o.mem);
    f.push_back({kTotal, "memory references"});
    f.push_back({kTotal, role == "load" ? "loads" : role == "store" ? "stores" : "modifies"});
    f.push_back({kTotal, role == "store" ? "Dw" : "Dr"});  // cachegrind counts a modify as a read
    f.push_back({"memory reference size", size});
    f.push_back({"memory reference", role + "|" + mode + "|" + size});
  }

  for (const std::string& r : registerNames(i.regsRead())) f.push_back({"register read", r});
  for (const std::string& r : registerNames(i.regsWritten())) f.push_back({"register written", r});

  const FlagEffect fe = flagEffect(i);
  for (int k = 0; k < 6; ++k) {
    if (fe.read & (1 << k)) f.push_back({"flag read", flags::kNames[k]});
    if ((fe.written | fe.maybe) & (1 << k)) f.push_back({"flag written", flags::kNames[k]});
  }
  if (fe.written | fe.maybe) {
    f.push_back({kTotal, "flag-writing instructions"});
    f.push_back({"flag writer", m + ": " + flagSetName(fe.written) + (fe.maybe ? " (maybe " + flagSetName(fe.maybe) + ")" : "")});
    if (flagWriteNeverRead(i)) f.push_back({kTotal, "flag writes never read"}), f.push_back({"flag writes never read", m});
  }
  if (fe.read) f.push_back({kTotal, "flag-reading instructions"});
  if (const int cc = i.condition(); cc >= 0) {
    const char* kind = i.isCondBranch() ? "jcc" : c == "SETCC" ? "setcc" : c == "FCMOV" ? "fcmovcc" : "cmovcc";
    f.push_back({"condition tested", std::string(kind) + " " + kConditions[cc]});
  } else if (i.isCondBranch()) {
    f.push_back({"condition tested", m});  // loop, loope, loopne, jrcxz
  }
  return f;
}

}  // namespace ease
