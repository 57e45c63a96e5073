// The fast decoder (Zydis minimal mode, raw fields only) must agree with
// Zydis' full operand decoding on every instruction of real code: libc's
// text has almost every instruction class, AVX-512 included.
#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "x86/Decoder.h"

using namespace atomx;

namespace {

struct Expected {
  bool ripRelative = false;
  uint64_t ripTarget = 0;
  bool relative = false;
  uint64_t branchTarget = 0;
  bool isBranchCategory = false;
};

Expected fromOperands(const x86::Decoder& d, const uint8_t* bytes, size_t avail, uint64_t addr) {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  Expected e;
  if (!d.decodeFull(bytes, avail, insn, ops)) return e;
  for (unsigned i = 0; i < insn.operand_count; ++i) {
    ZyanU64 abs = 0;
    if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_RIP) {
      ZydisCalcAbsoluteAddress(&insn, &ops[i], addr, &abs);
      e.ripRelative = true;
      e.ripTarget = abs;
    }
    if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative) {
      ZydisCalcAbsoluteAddress(&insn, &ops[i], addr, &abs);
      e.relative = true;
      e.branchTarget = abs;
    }
  }
  e.isBranchCategory = insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
                       insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR || insn.meta.category == ZYDIS_CATEGORY_CALL ||
                       insn.meta.category == ZYDIS_CATEGORY_RET;
  return e;
}

// The .text section of any ELF file (shared objects included, which the
// rewriter itself does not accept), read directly.
struct RawText {
  std::vector<uint8_t> bytes;
  uint64_t addr = 0;
};
RawText readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RawText out;
  if (file.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), file.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  const char* names = reinterpret_cast<const char*>(file.data() + sh[eh.e_shstrndx].sh_offset);
  for (auto& s : sh)
    if (std::string(names + s.sh_name) == ".text") {
      out.bytes.assign(file.begin() + s.sh_offset, file.begin() + s.sh_offset + s.sh_size);
      out.addr = s.sh_addr;
    }
  return out;
}

void compareOn(const std::string& path, size_t& checked) {
  RawText text = readText(path);
  ASSERT_FALSE(text.bytes.empty()) << path;
  x86::Decoder d;
  const auto& bytes = text.bytes;
  for (size_t off = 0; off < bytes.size();) {
    x86::Insn insn;
    const uint64_t addr = text.addr + off;
    if (!d.decode(bytes.data() + off, bytes.size() - off, addr, insn)) {
      off += 1;
      continue;
    }
    Expected e = fromOperands(d, bytes.data() + off, bytes.size() - off, addr);
    ASSERT_EQ(insn.isRipRelative(), e.ripRelative) << path << " at " << std::hex << addr;
    if (e.ripRelative) {
      ASSERT_EQ(insn.target, e.ripTarget) << path << " at " << std::hex << addr;
    }
    ASSERT_EQ(insn.isDirectBranch(), e.relative) << path << " at " << std::hex << addr;
    if (e.relative) {
      ASSERT_EQ(insn.target, e.branchTarget) << path << " at " << std::hex << addr;
    }
    // Zydis files xabort/xend under branches; both continue at the next instruction
    // (or, inside a transaction, at xbegin's handler, which atomx refuses).
    if (insn.mnemonic != ZYDIS_MNEMONIC_XABORT && insn.mnemonic != ZYDIS_MNEMONIC_XEND) {
      ASSERT_EQ(insn.flow != x86::Flow::Sequential && insn.flow != x86::Flow::Stop, e.isBranchCategory)
          << path << " at " << std::hex << addr;
    }
    ++checked;
    off += insn.length;
  }
}

}  // namespace

TEST(Decoder, FastPathAgreesWithOperandDecodingOnSystemCode) {
  size_t checked = 0;
  for (const char* path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
                           "/lib/x86_64-linux-gnu/libstdc++.so.6"})
    compareOn(path, checked);
  EXPECT_GT(checked, 200000u);
}

// decode()'s own table for the common instructions (Decoder::decodeCommon)
// against Zydis alone (zydisOnly): every field of every instruction equal,
// decoding or not alike.
namespace {

std::string differs(const x86::Insn& a, const x86::Insn& b) {
  std::string why;
  auto field = [&](const char* name, uint64_t x, uint64_t y) {
    if (x != y) why += std::string(" ") + name + " " + std::to_string(x) + " vs Zydis " + std::to_string(y);
  };
  field("length", a.length, b.length);
  field("mnemonic", a.mnemonic, b.mnemonic);
  field("flow", uint64_t(a.flow), uint64_t(b.flow));
  field("target", a.target, b.target);
  field("relOffset", a.relOffset, b.relOffset);
  field("relSize", a.relSize, b.relSize);
  field("dispOffset", a.dispOffset, b.dispOffset);
  field("condCode", a.condCode, b.condCode);
  return why;
}

std::string hexBytes(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += std::string(i ? " " : "") + digits[p[i] >> 4] + digits[p[i] & 15];
  return s;
}

// One position: both decoders, compared.  Counts what the table answered.
void agree(const x86::Decoder& common, const x86::Decoder& zydis, const uint8_t* p, size_t avail, uint64_t addr,
           size_t& answered) {
  x86::Insn a, b;
  x86::RawFields raw;
  if (x86::Decoder::decodeCommon(p, avail, raw)) ++answered;
  const bool okA = common.decode(p, avail, addr, a), okB = zydis.decode(p, avail, addr, b);
  ASSERT_EQ(okA, okB) << "at " << std::hex << addr << ": " << hexBytes(p, std::min<size_t>(avail, 15));
  if (okA) {
    const std::string why = differs(a, b);
    ASSERT_TRUE(why.empty()) << "at " << std::hex << addr << " (" << hexBytes(p, a.length) << "):" << why;
  }
}

}  // namespace

TEST(Decoder, CommonTableAgreesWithZydisOnRealCode) {
  x86::Decoder common, zydis;
  zydis.zydisOnly();
  size_t positions = 0, answered = 0;
  for (const char* path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6",
                           "/lib/x86_64-linux-gnu/libm.so.6", "/usr/bin/bash"}) {
    const RawText text = readText(path);
    ASSERT_FALSE(text.bytes.empty()) << path;
    // Linear sweep, and every byte offset too (data in code, misaligned starts).
    for (size_t off = 0; off < text.bytes.size(); ++off, ++positions) {
      agree(common, zydis, text.bytes.data() + off, text.bytes.size() - off, text.addr + off, answered);
      if (HasFatalFailure()) return;
    }
  }
  // The table is there for speed: it must answer most positions' instructions.
  EXPECT_GT(answered, positions / 3) << answered << " of " << positions;
}

TEST(Decoder, CommonTableAgreesWithZydisOnRandomBytes) {
  x86::Decoder common, zydis;
  zydis.zydisOnly();
  std::mt19937 rng(2026);
  // Starts the table knows, with and without its prefixes, then anything.
  const uint8_t firsts[] = {0x66, 0x40, 0x41, 0x44, 0x48, 0x49, 0x4c, 0x4f, 0x0f, 0x00, 0x01, 0x03, 0x05, 0x25,
                            0x3d, 0x50, 0x5f, 0x63, 0x68, 0x69, 0x6a, 0x6b, 0x70, 0x7f, 0x80, 0x81, 0x83, 0x84,
                            0x85, 0x87, 0x88, 0x89, 0x8b, 0x8d, 0x90, 0xa8, 0xa9, 0xb0, 0xb8, 0xbf, 0xc0, 0xc1,
                            0xc3, 0xc6, 0xc7, 0xcc, 0xd0, 0xd1, 0xd3, 0xe8, 0xe9, 0xeb, 0xf6, 0xf7, 0xfe, 0xff};
  size_t answered = 0;
  uint8_t buf[15];
  for (int i = 0; i < 400000; ++i) {
    for (uint8_t& b : buf) b = uint8_t(rng());
    const int lead = int(rng() % 3);  // up to two bytes from the list
    for (int k = 0; k < lead; ++k) buf[k] = firsts[rng() % sizeof firsts];
    const size_t avail = rng() % 4 ? sizeof buf : 1 + rng() % sizeof buf;  // sometimes cut short
    agree(common, zydis, buf, avail, 0x401000, answered);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(answered, 100000u);
}
