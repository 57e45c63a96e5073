// ease: what one instruction contributes to each report, from the facts
// atomx embeds in the program (<atomx/facts.h>: the x86 semantics module's
// answers for every instruction and operand; no instruction text is read):
// its operands (kind, register, width, element type; memory operands'
// parts and directions), category, mnemonic, registers and flags read and
// written, condition, scalar SSE, rep prefix.  Each fact is a (table, key,
// weight) triple, counted `weight` times each time the instruction runs;
// ease_anal.cpp multiplies by block counts.  Header only.
#pragma once

#include <atomx/facts.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ease {

struct Fact {
  std::string table, key;
  int weight = 1;
};

// The keys the analysis side reads back: its totals are the "total" table.
inline const char* const kTotal = "total";

using Operand = AtomxOperandFacts;

// One instruction: its facts and its operands (hidden ones included).
struct Inst {
  const AtomxInstFacts& f;
  std::vector<Operand> ops;
  explicit Inst(const AtomxInstFacts& facts) : f(facts) {
    ops.reserve(f.operandCount);
    for (uint32_t k = 0; k < f.operandCount; ++k) ops.push_back(*AtomxOperand(long(f.firstOperand + k)));
  }
  std::string mnemonic() const { return f.mnemonic; }
  std::string category() const { return f.category; }
  bool isCondBranch() const { return f.kind == ATOMX_INST_COND_BRANCH; }
  bool isJump() const { return f.kind == ATOMX_INST_JUMP || f.kind == ATOMX_INST_INDIRECT_JUMP; }
  bool isCall() const { return f.kind == ATOMX_INST_CALL || f.kind == ATOMX_INST_INDIRECT_CALL; }
  bool isReturn() const { return f.kind == ATOMX_INST_RETURN; }
  // A control transfer: a jump, call, return or conditional branch (not
  // ud2 or hlt, which stop: tools/ease/README.md, report 10).
  bool isBranch() const { return f.kind != ATOMX_INST_OTHER && f.kind != ATOMX_INST_STOP; }
  bool isScalarVector() const { return f.traits & ATOMX_SCALAR_VECTOR; }
  bool isRepeated() const { return f.traits & ATOMX_REPEATED; }
  // Its repeat prefix as Zydis names it: "rep", "repe", "repne" ("" without one).
  std::string repeatPrefix() const {
    if (!isRepeated()) return "";
    if (!(f.traits & ATOMX_REPEATED_WHILE)) return "rep";
    return f.traits & ATOMX_REPEATED_WHILE_NE ? "repne" : "repe";
  }
};

inline bool isHidden(const Operand& o) { return o.access & ATOMX_OPERAND_HIDDEN; }
inline bool isVector(const Operand& o) { return o.kind == ATOMX_OPERAND_REGISTER && o.regKind == ATOMX_REGKIND_VECTOR; }
inline bool isMemory(const Operand& o) { return o.kind == ATOMX_OPERAND_MEMORY; }
inline bool touchesVectors(const AtomxInstFacts& f) { return ((f.regsRead | f.regsWritten) >> 32) != 0; }
inline bool isX87(const Inst& i) {
  const std::string c = i.category();
  return c.rfind("X87", 0) == 0 || c == "FCMOV";
}

// The instruction type (report 3), one of: move, ALU, shift,
// multiply/divide, compare/test, conditional branch, unconditional branch,
// call/return, string, x87, SSE/AVX scalar, SSE/AVX packed, other.
inline std::string instClass(const Inst& i) {
  const std::string c = i.category(), m = i.mnemonic();
  if (i.isCondBranch()) return "conditional branch";
  if (i.isJump()) return "unconditional branch";
  if (i.isCall() || i.isReturn()) return "call/return";
  if (c == "STRINGOP") return "string";
  if (isX87(i)) return "x87";
  if (touchesVectors(i.f)) return i.isScalarVector() ? "SSE/AVX scalar" : "SSE/AVX packed";
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

// The registers of a set (regsRead, regsWritten): report 7's keys.
inline std::vector<std::string> registerNames(uint64_t set) {
  std::vector<std::string> out;
  for (int r = 0; r < 16; ++r)
    if (set & (uint64_t(1) << r)) out.push_back(kRegNames[r]);
  if (set & ATOMX_FLAGS_BIT) out.push_back("flags");
  for (int v = 0; v < 32; ++v)
    if (set & ATOMX_VECTOR_BIT(v)) out.push_back("xmm" + std::to_string(v));
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
inline std::string dataType(const Inst& i) {
  const std::vector<Operand>& ops = i.ops;
  const std::string m = i.mnemonic(), c = i.category();
  if (i.isBranch() || c == "NOP" || m.rfind("nop", 0) == 0) return "none";
  if (isX87(i)) {
    for (const Operand& o : ops)
      if (isMemory(o))
        return o.type == ATOMX_TYPE_FLOAT32 ? "float (x87)" : o.type == ATOMX_TYPE_FLOAT64 ? "double (x87)"
             : o.type == ATOMX_TYPE_FLOAT80 ? "extended (x87)" : "x87 integer/control";
    return "extended (x87)";
  }
  if (touchesVectors(i.f)) {
    if (i.isScalarVector()) {
      for (const Operand& o : ops)
        if (!isHidden(o) && o.elements == 1 && (o.type == ATOMX_TYPE_FLOAT16 || o.type == ATOMX_TYPE_FLOAT32 || o.type == ATOMX_TYPE_FLOAT64))
          return o.type == ATOMX_TYPE_FLOAT64 ? "double" : o.type == ATOMX_TYPE_FLOAT32 ? "float" : "half";
      for (const Operand& o : ops)  // movd, movq: the general register or memory side, else the one element
        if (!isHidden(o) && o.kind != ATOMX_OPERAND_IMMEDIATE && (!isVector(o) || o.elements == 1))
          return "int" + std::to_string(o.bits) + " (vector register)";
      return "none";
    }
    unsigned width = 0;
    const Operand* first = nullptr;
    for (const Operand& o : ops) {
      if ((isVector(o) && !isHidden(o)) || isMemory(o)) width = std::max<unsigned>(width, isVector(o) ? o.regBits : o.bits);
      if (!first && !isHidden(o) && (isVector(o) || isMemory(o))) first = &o;
    }
    const char* element = !first ? "integer" : first->type == ATOMX_TYPE_FLOAT32 ? "float" : first->type == ATOMX_TYPE_FLOAT64 ? "double" : "integer";
    return "vector" + std::to_string(width ? width : 128) + " " + element;
  }
  unsigned bits = 0;
  for (const Operand& o : ops) {
    if (isHidden(o)) continue;
    if (o.kind == ATOMX_OPERAND_REGISTER) bits = o.regBits;
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
// base+disp.  By number (kModes names them): all that describe() reads of
// an operand's address, so the analysis side tells shapes apart by it.
inline const char* const kModes[] = {"register", "immediate", "branch target", "segment-based", "%rip-relative",
                                     "absolute", "base+index*scale(+disp)", "%rsp/%rbp-based", "base", "base+disp"};
inline uint8_t addressingModeId(const Operand& o) {
  switch (o.kind) {
    case ATOMX_OPERAND_REGISTER: return 0;
    case ATOMX_OPERAND_IMMEDIATE: return 1;
    case ATOMX_OPERAND_TARGET: return 2;
    default: break;  // memory, address
  }
  if (o.segment == ATOMX_SEGMENT_FS || o.segment == ATOMX_SEGMENT_GS) return 3;
  if (o.ripRelative) return 4;
  if (o.base < 0 && o.index < 0) return 5;
  if (o.index >= 0) return 6;
  if (o.base == 4 || o.base == 5) return 7;  // %rsp, %rbp
  return o.disp ? 9 : 8;
}
inline std::string addressingMode(const Operand& o) { return kModes[addressingModeId(o)]; }

// Why the program references memory (ease's Figure 12): the cause atomx
// decided for a memory operand when it embedded the facts
// (src/analysis/MemoryCauses.h; tools/ease/README.md, "Memory references
// by cause").
inline const char* const kCauses[] = {"none", "save/restore", "call linkage", "stack variable", "spill/temporary",
                                      "global", "through a pointer"};
inline const char* causeName(const Operand& o) { return o.cause <= ATOMX_CAUSE_POINTER ? kCauses[o.cause] : "none"; }

// How a memory operand is accessed: load, store, or modify (read and
// written by the same operand: add %eax,(%rdi)).
inline const char* accessRole(const Operand& m) {
  const bool read = m.memAccess & ATOMX_OPERAND_READ, write = m.memAccess & ATOMX_OPERAND_WRITE;
  return read && write ? "modify" : write ? "store" : "load";
}

// Zydis' names of the conditions 0..15 (Inst::condition()), as the
// mnemonics of jcc, setcc and cmovcc spell them.
inline const char* const kConditions[16] = {"o", "no", "b", "nb", "z", "nz", "be", "nbe",
                                            "s", "ns", "p", "np", "l", "nl", "le", "nle"};

// The condition of a conditional branch, for report 9: "z", "nle" ..., or
// the mnemonic of loop and jrcxz.
inline std::string branchCondition(const Inst& i) {
  const int c = i.f.condition;
  return c >= 0 ? kConditions[c] : i.mnemonic();
}

namespace flags {
inline const char* const kNames[6] = {"CF", "PF", "AF", "ZF", "SF", "OF"};  // ATOMX_CF ... ATOMX_OF
}  // namespace flags

// "OF SF ZF"-style name of a set of flags.
inline std::string flagSetName(uint8_t f) {
  std::string out;
  for (int k = 5; k >= 0; --k)
    if (f & (1 << k)) out += (out.empty() ? "" : " ") + std::string(flags::kNames[k]);
  return out.empty() ? "none" : out;
}

// What an instruction does to the status flags (ATOMX_CF ... bits): reads,
// always writes, may write (a shift by %cl, a rep-prefixed compare).
struct FlagEffect {
  uint8_t read = 0;
  uint8_t written = 0;
  uint8_t maybe = 0;
};

inline FlagEffect flagEffect(const Inst& i) {
  return {i.f.flagsRead, uint8_t(i.f.flagsWritten & ~i.f.flagsMaybeWritten), i.f.flagsMaybeWritten};
}

// Whether an instruction writes flags that nothing ever reads: every flag
// it writes is written again, on every path, before any instruction reads
// it (flagsLiveAfter: atomx's own flag liveness).  A call's flags are its
// callee's.
inline bool flagWriteNeverRead(const AtomxInstFacts& f) {
  return f.flagsWritten && f.kind != ATOMX_INST_CALL && f.kind != ATOMX_INST_INDIRECT_CALL && (f.flagsWritten & f.flagsLiveAfter) == 0;
}

// What one execution of an instruction counts in cachegrind's events:
// itself (Ir), its memory reads and writes (Dr, Dw: a read-modify-write
// operand is one read, as cachegrind counts it), a conditional branch (Bc).
struct Events {
  long ir = 1, dr = 0, dw = 0, bc = 0;
};

inline Events events(const Inst& i) {
  Events e;
  for (const Operand& o : i.ops)
    if (isMemory(o)) ++(std::string(accessRole(o)) == "store" ? e.dw : e.dr);
  e.bc = i.isCondBranch();
  return e;
}

// Every fact of instruction i but the registers it reads and writes
// (report 7), which its caller counts by register bit: they tell apart
// instructions alike in all else, and registerNames() names each bit once.
inline std::vector<Fact> describe(const Inst& i) {
  std::vector<Fact> f;
  const std::string m = i.mnemonic(), c = i.category();
  const std::vector<Operand>& ops = i.ops;
  const bool rep = i.isRepeated();
  const Events e = events(i);
  f.push_back({kTotal, "instructions"});
  if (e.dr) f.push_back({kTotal, "Dr", int(e.dr)});
  if (e.dw) f.push_back({kTotal, "Dw", int(e.dw)});
  if (e.bc) f.push_back({kTotal, "Bc", int(e.bc)});
  f.push_back({kTotal, "bytes", int(i.f.size)});
  f.push_back({"class", instClass(i)});
  f.push_back({"mnemonic", (rep ? i.repeatPrefix() + " " : "") + m});
  f.push_back({"data type", dataType(i)});
  if (i.isBranch()) f.push_back({kTotal, "control transfers"});
  if (i.isCondBranch()) f.push_back({kTotal, "conditional branches"});
  if (rep) f.push_back({kTotal, "rep-prefixed"});

  // Addressing modes: the operands the text shows, then the memory
  // operands it does not (the stack slot of push, pop, call, ret; the
  // %rsi/%rdi operands of string instructions).
  for (const Operand& o : ops)
    if (!isHidden(o)) f.push_back({"addressing mode", addressingMode(o)});
  for (const Operand& o : ops) {
    if (!isMemory(o)) continue;
    const std::string mode = addressingMode(o);
    if (isHidden(o)) f.push_back({"addressing mode", mode});
    const std::string size = std::to_string(o.size);
    const std::string role = accessRole(o);
    f.push_back({kTotal, "memory references"});
    f.push_back({kTotal, role == "load" ? "loads" : role == "store" ? "stores" : "modifies"});
    f.push_back({"memory reference size", size});
    f.push_back({"memory reference", role + "|" + mode + "|" + size});
    f.push_back({"memory reference by cause", causeName(o)});
  }

  const FlagEffect fe = flagEffect(i);
  for (int k = 0; k < 6; ++k) {
    if (fe.read & (1 << k)) f.push_back({"flag read", flags::kNames[k]});
    if ((fe.written | fe.maybe) & (1 << k)) f.push_back({"flag written", flags::kNames[k]});
  }
  if (fe.written | fe.maybe) {
    f.push_back({kTotal, "flag-writing instructions"});
    f.push_back({"flag writer", m + ": " + flagSetName(fe.written) + (fe.maybe ? " (maybe " + flagSetName(fe.maybe) + ")" : "")});
    if (flagWriteNeverRead(i.f)) f.push_back({kTotal, "flag writes never read"}), f.push_back({"flag writes never read", m});
  }
  if (fe.read) f.push_back({kTotal, "flag-reading instructions"});
  if (const int cc = i.f.condition; cc >= 0) {
    const char* kind = i.isCondBranch() ? "jcc" : c == "SETCC" ? "setcc" : c == "FCMOV" ? "fcmovcc" : "cmovcc";
    f.push_back({"condition tested", std::string(kind) + " " + kConditions[cc]});
  } else if (i.isCondBranch()) {
    f.push_back({"condition tested", m});  // loop, loope, loopne, jrcxz
  }
  return f;
}

}  // namespace ease
