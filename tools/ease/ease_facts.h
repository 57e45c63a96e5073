// ease: what one instruction contributes to each report, from the public
// instruction queries only (category, mnemonic, text, memory operands and
// their sizes, isLoad/isStore, registers read and written).  Each fact is a
// (table, key, weight) triple, counted `weight` times each time the
// instruction runs; the analysis side multiplies by block counts.
// Header only (included by ease_inst.cpp).
#pragma once

#include "ease_flags.h"
#include "ease_operands.h"

#include <string>
#include <vector>

namespace ease {

struct Fact {
  std::string table, key;
  int weight = 1;
};

// The keys the analysis side reads back: its totals are the "total" table.
inline const char* const kTotal = "total";

inline std::string withoutV(const std::string& m) { return m.size() > 3 && m[0] == 'v' ? m.substr(1) : m; }
inline bool endsWith(const std::string& s, const char* t) {
  const size_t n = std::strlen(t);
  return s.size() >= n && s.compare(s.size() - n, n, t) == 0;
}

inline bool touchesVectors(atomx::Inst i) { return ((i.regsRead() | i.regsWritten()) >> 32) != 0; }
inline bool isX87(atomx::Inst i) {
  const std::string c = i.category();
  return c.rfind("X87", 0) == 0 || c == "FCMOV";
}
// An SSE/AVX instruction that works on one element (addsd, vmovss,
// cvtsi2sd, cvttsd2si, ucomisd, movd, movq) rather than on a whole vector.
inline bool scalarVector(const std::string& mnemonic) {
  const std::string m = withoutV(mnemonic);
  if (m[0] == 'p') return false;
  if (m == "movd" || m == "movq") return true;
  return endsWith(m, "ss") || endsWith(m, "sd") || endsWith(m, "sh") || m.find("ss2") != std::string::npos ||
         m.find("sd2") != std::string::npos;
}

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
  if (touchesVectors(i)) return scalarVector(m) ? "SSE/AVX scalar" : "SSE/AVX packed";
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
// its destination (its last operand, AT&T order), float/double of a scalar
// SSE/AVX operation, float/double/extended of an x87 one (by its memory
// access), the width and element type of a vector operation, "none" for
// control transfers and instructions without operands.
inline std::string dataType(atomx::Inst i, const std::vector<Operand>& ops) {
  const std::string m = i.mnemonic(), c = i.category();
  if (i.isBranch() || c == "NOP" || m.rfind("nop", 0) == 0) return "none";
  if (isX87(i)) {
    const unsigned size = i.memOperandCount() ? i.accessSize(0) : 10;
    return size == 4 ? "float (x87)" : size == 8 ? "double (x87)" : size == 10 ? "extended (x87)" : "x87 integer/control";
  }
  if (touchesVectors(i)) {
    const std::string w = withoutV(m);
    if (scalarVector(m)) {
      if (w == "movd") return "int32 (vector register)";
      if (w == "movq") return "int64 (vector register)";
      if (endsWith(w, "sd") || w.find("sd2") != std::string::npos) return "double";
      if (endsWith(w, "ss") || w.find("ss2") != std::string::npos) return "float";
      return "half";
    }
    int width = 0;
    for (const Operand& o : ops) width = std::max(width, o.kind == Operand::Register && registerWidth(o.reg) >= 64 ? registerWidth(o.reg) : 0);
    for (unsigned k = 0; k < i.memOperandCount(); ++k) width = std::max(width, int(i.accessSize(k)) * 8);
    const char* element = endsWith(w, "ps") ? "float" : endsWith(w, "pd") ? "double" : "integer";
    return "vector" + std::to_string(width ? width : 128) + " " + element;
  }
  int bits = 0;
  if (!ops.empty()) {
    const Operand& last = ops.back();
    if (last.kind == Operand::Register) bits = registerWidth(last.reg);
    else if (last.kind == Operand::Memory && i.memOperandCount()) bits = int(i.accessSize(0)) * 8;
  }
  if (!bits && i.memOperandCount()) bits = int(i.accessSize(0)) * 8;
  if (!bits) return "none";
  return "int" + std::to_string(bits);
}

// How memory operand k is accessed: load, store, or modify (read and
// written by the same operand: add %eax,(%rdi)).  With more than one
// operand, the public API says only whether the instruction loads and
// stores; Zydis' order decides: pop and movs write their first operand,
// push and call read their first and write the stack.
inline const char* accessRole(atomx::Inst i, unsigned k) {
  const bool loads = i.isLoad(), stores = i.isStore();
  if (!stores) return "load";
  if (!loads) return "store";
  if (i.memOperandCount() == 1) return "modify";
  const std::string m = i.mnemonic();
  if (m.rfind("pop", 0) == 0 || m.rfind("movs", 0) == 0) return k == 0 ? "store" : "load";
  if (m.rfind("push", 0) == 0 || m == "call") return k == 0 ? "load" : "store";
  return "modify";
}

// Every fact of instruction i.
inline std::vector<Fact> describe(atomx::Inst i, const CodeBytes& code, const FlagsDeadness& deadness) {
  std::vector<Fact> f;
  const std::string text = i.text(), m = i.mnemonic();
  bool rep = false;
  operandsStart(text, &rep);
  const std::vector<Operand> ops = parseOperands(text, i.hasTarget());
  const bool string = i.category() == "STRINGOP";
  f.push_back({kTotal, "instructions"});
  f.push_back({kTotal, "bytes", int(i.size())});
  f.push_back({"class", instClass(i)});
  f.push_back({"mnemonic", (rep ? "rep " : "") + m});
  f.push_back({"data type", dataType(i, ops)});
  if (i.isBranch()) f.push_back({kTotal, "control transfers"});
  if (i.isCondBranch()) f.push_back({kTotal, "conditional branches"}), f.push_back({kTotal, "Bc"});
  if (rep) f.push_back({kTotal, "rep-prefixed"});

  // Addressing modes: the explicit operands of the text, then the memory
  // operands the text does not show (the stack slot of push, pop, call,
  // ret; the %rsi/%rdi operands of string instructions).
  std::vector<std::string> memModes;
  for (const Operand& o : ops) {
    if (string && o.kind == Operand::Memory) continue;
    const std::string mode = addressingMode(o, i, code);
    f.push_back({"addressing mode", mode});
    if (o.kind == Operand::Memory) memModes.push_back(mode);
  }
  for (unsigned k = 0; k < i.memOperandCount(); ++k) {
    const bool implicit = k >= memModes.size();
    const std::string mode = !implicit ? memModes[k] : string ? "base" : "%rsp/%rbp-based";
    if (implicit) f.push_back({"addressing mode", mode});
    const std::string size = std::to_string(i.accessSize(k));
    const std::string role = accessRole(i, k);
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
    if (deadness.dead(i)) f.push_back({kTotal, "flag writes never read"}), f.push_back({"flag writes never read", m});
  }
  if (fe.read) f.push_back({kTotal, "flag-reading instructions"});
  const std::string cond = conditionOf(m);
  if (!cond.empty()) {
    const char* kind = i.isCondBranch() ? "jcc" : m.rfind("set", 0) == 0 ? "setcc" : m.rfind("fcmov", 0) == 0 ? "fcmovcc" : "cmovcc";
    f.push_back({"condition tested", std::string(kind) + " " + cond});
  } else if (i.isCondBranch()) {
    f.push_back({"condition tested", m});  // loop, loope, loopne, jrcxz
  }
  return f;
}

// The condition of a conditional branch, for report 9: "z", "nle" ..., or
// the mnemonic of loop and jrcxz.
inline std::string branchCondition(atomx::Inst i) {
  const std::string c = conditionOf(i.mnemonic());
  return c.empty() ? i.mnemonic() : c;
}

}  // namespace ease
