// The fast decoder (Zydis minimal mode, raw fields only) must agree with
// Zydis' full operand decoding on every instruction of real code: libc's
// text has almost every instruction class, AVX-512 included.
#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
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
