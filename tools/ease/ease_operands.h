// ease: an instruction's operands as the public API shows them
// (Inst::text(), AT&T syntax), with the addressing mode of each, and the
// program's code bytes to tell a %rip-relative operand from an absolute one
// (Inst::text() prints both as the absolute address).  Header only: the
// instrumentation plugin is built from one file (ease_inst.cpp).
#pragma once

#include <atomx/atomx.hpp>

#include <elf.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ease {

// One operand of the AT&T text.
struct Operand {
  enum Kind { Register, Immediate, Memory, Label } kind = Register;
  std::string reg;                    // Register: its name without '%'
  std::string segment, base, index;   // Memory: names without '%' ("" if none)
  bool hasDisp = false;
  bool absoluteAddress = false;       // Memory: only an address, no base or index
  uint64_t address = 0;               // ... that address
};

// Width in bits of a register named as AT&T does (without '%'); 0 if unknown.
inline int registerWidth(const std::string& r) {
  if (r.empty()) return 0;
  if (r.rfind("xmm", 0) == 0) return 128;
  if (r.rfind("ymm", 0) == 0) return 256;
  if (r.rfind("zmm", 0) == 0) return 512;
  if (r.rfind("st", 0) == 0) return 80;
  if (r.rfind("mm", 0) == 0) return 64;
  if (r[0] == 'k' && r.size() == 2) return 64;
  if (r[0] == 'r' && r.size() >= 2 && std::isdigit(static_cast<unsigned char>(r[1]))) {
    const char last = r.back();
    return last == 'b' ? 8 : last == 'w' ? 16 : last == 'd' ? 32 : 64;
  }
  if (r[0] == 'r' && r.size() == 3) return 64;   // rax, rsp, rip
  if (r[0] == 'e' && r.size() == 3) return 32;   // eax, esp
  if (r.size() == 2 && (r[1] == 'l' || r[1] == 'h')) return 8;  // al, ah
  if (r.size() == 3 && r[2] == 'l') return 8;    // sil, dil, spl, bpl
  if (r.size() == 2 && r[1] == 'x') return 16;   // ax
  if (r == "si" || r == "di" || r == "sp" || r == "bp") return 16;
  return 0;
}

inline std::string stripPercent(std::string s) {
  while (!s.empty() && (s[0] == '%' || s[0] == ' ')) s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

inline Operand parseOperand(std::string s) {
  Operand o;
  if (!s.empty() && s[0] == '*') s.erase(0, 1);  // an indirect branch's operand
  if (!s.empty() && s[0] == '$') { o.kind = Operand::Immediate; return o; }
  const size_t colon = s.find(':');
  const size_t paren = s.find('(');
  if (s[0] == '%' && colon == std::string::npos && paren == std::string::npos) {
    o.reg = stripPercent(s);
    return o;
  }
  o.kind = Operand::Memory;
  if (colon != std::string::npos && (paren == std::string::npos || colon < paren)) {
    o.segment = stripPercent(s.substr(0, colon));
    s = s.substr(colon + 1);
  }
  const size_t open = s.find('(');
  const std::string disp = s.substr(0, open);
  o.hasDisp = !disp.empty() && disp != "0x00" && disp != "0x0" && disp != "0";
  if (open != std::string::npos) {
    const std::string inside = s.substr(open + 1, s.find(')') - open - 1);
    const size_t c1 = inside.find(',');
    o.base = stripPercent(inside.substr(0, c1));
    if (c1 != std::string::npos) o.index = stripPercent(inside.substr(c1 + 1, inside.find(',', c1 + 1) - c1 - 1));
  } else if (o.segment.empty()) {
    o.absoluteAddress = true;
    o.address = std::strtoull(disp.c_str(), nullptr, 16);
  }
  return o;
}

inline const char* const kPrefixes[] = {"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "bnd",
                                        "xacquire", "xrelease", "data16", "addr32"};

// The words before the operands: prefixes and the mnemonic ("rep stosq").
inline size_t operandsStart(const std::string& text, bool* repPrefixed = nullptr) {
  size_t at = 0;
  if (repPrefixed) *repPrefixed = false;
  for (;;) {
    const size_t sp = text.find(' ', at);
    const std::string word = text.substr(at, sp == std::string::npos ? std::string::npos : sp - at);
    bool prefix = false;
    for (const char* p : kPrefixes) prefix |= word == p;
    if (prefix && repPrefixed && word.rfind("rep", 0) == 0) *repPrefixed = true;
    if (!prefix || sp == std::string::npos) return sp == std::string::npos ? text.size() : sp + 1;
    at = sp + 1;
  }
}

// The operands of an AT&T instruction text, in its order (sources first,
// the destination last).
inline std::vector<Operand> parseOperands(const std::string& text, bool directBranch) {
  std::vector<Operand> out;
  std::string rest = text.substr(operandsStart(text));
  if (const size_t comment = rest.find("  <"); comment != std::string::npos) rest.resize(comment);
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    const std::string t = stripPercent(cur) == "" ? "" : cur.substr(cur.find_first_not_of(' '));
    if (!t.empty()) {
      Operand o = parseOperand(t);
      if (directBranch && o.absoluteAddress) o.kind = Operand::Label;
      out.push_back(o);
    }
    cur.clear();
  };
  for (char c : rest) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) flush();
    else cur += c;
  }
  flush();
  return out;
}

// The program's code bytes by original address (its PT_LOAD segments).
class CodeBytes {
 public:
  explicit CodeBytes(const std::string& path) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fseek(f, 0, SEEK_END);
      file_.resize(size_t(std::ftell(f)));
      std::fseek(f, 0, SEEK_SET);
      if (std::fread(file_.data(), 1, file_.size(), f) != file_.size()) file_.clear();
      std::fclose(f);
    }
  }
  // The `n` bytes at original address `pc`; empty if not in the file.
  std::string at(uint64_t pc, size_t n) const {
    if (file_.size() < sizeof(Elf64_Ehdr)) return {};
    Elf64_Ehdr eh;
    std::memcpy(&eh, file_.data(), sizeof eh);
    for (unsigned k = 0; k < eh.e_phnum; ++k) {
      Elf64_Phdr ph;
      const size_t off = size_t(eh.e_phoff) + size_t(k) * eh.e_phentsize;
      if (off + sizeof ph > file_.size()) break;
      std::memcpy(&ph, file_.data() + off, sizeof ph);
      if (ph.p_type == PT_LOAD && pc >= ph.p_vaddr && pc + n <= ph.p_vaddr + ph.p_filesz &&
          ph.p_offset + (pc - ph.p_vaddr) + n <= file_.size())
        return std::string(file_.data() + ph.p_offset + (pc - ph.p_vaddr), n);
    }
    return {};
  }
  // An operand printed as an address alone (no base, no index) is
  // %rip-relative when the instruction holds the address less the next
  // instruction's, as 4 bytes; otherwise it is an absolute address.
  bool ripRelative(atomx::Inst i, uint64_t address) const {
    const std::string bytes = at(i.pc(), i.size());
    const int32_t rel = int32_t(address - (i.pc() + i.size()));
    char want[4];
    std::memcpy(want, &rel, 4);
    return bytes.find(std::string(want, 4)) != std::string::npos;
  }

 private:
  std::vector<char> file_;
};

// The addressing mode of one operand (report 4 of the seed), exclusive,
// the first that applies: register, immediate, branch target, segment-based
// (%fs:/%gs:), %rip-relative, absolute, %rsp/%rbp-based (base %rsp or
// %rbp, no index), base+index*scale(+disp) (an index, with or without a
// base), base, base+disp.
inline std::string addressingMode(const Operand& o, atomx::Inst i, const CodeBytes& code) {
  switch (o.kind) {
    case Operand::Register: return "register";
    case Operand::Immediate: return "immediate";
    case Operand::Label: return "branch target";
    case Operand::Memory: break;
  }
  if (o.segment == "fs" || o.segment == "gs") return "segment-based";
  if (o.base == "rip" || (o.absoluteAddress && code.ripRelative(i, o.address))) return "%rip-relative";
  if (o.absoluteAddress || (o.base.empty() && o.index.empty())) return "absolute";
  if (!o.index.empty()) return "base+index*scale(+disp)";
  if (o.base == "rsp" || o.base == "rbp" || o.base == "esp" || o.base == "ebp") return "%rsp/%rbp-based";
  return o.hasDisp ? "base+disp" : "base";
}

}  // namespace ease
