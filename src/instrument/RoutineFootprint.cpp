#include "instrument/RoutineFootprint.h"

#include "x86/Semantics.h"

#include <elf.h>

#include <cstring>
#include <set>

namespace atomx::instrument {

using x86::RegSet;

namespace {

template <class T> bool read(const std::vector<uint8_t>& bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

RoutineFootprint::RoutineFootprint(const std::vector<uint8_t>& object, const x86::Decoder& decoder)
    : object_(object), decoder_(decoder) {
  Elf64_Ehdr eh;
  if (!read(object, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_shentsize != sizeof(Elf64_Shdr)) return;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i)
    if (!read(object, eh.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return;
  Elf64_Shdr names{};
  if (eh.e_shstrndx < sections.size()) names = sections[eh.e_shstrndx];
  auto sectionName = [&](const Elf64_Shdr& s) -> std::string {
    const uint64_t at = names.sh_offset + s.sh_name;
    if (s.sh_name >= names.sh_size || at >= object.size()) return "";
    return std::string(reinterpret_cast<const char*>(object.data() + at), strnlen(reinterpret_cast<const char*>(object.data() + at), object.size() - at));
  };
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_type == SHT_PROGBITS && (s.sh_flags & SHF_EXECINSTR) && sectionName(s).rfind(".plt", 0) != 0 &&
        s.sh_offset <= object.size() && object.size() - s.sh_offset >= s.sh_size)
      code_.push_back({s.sh_addr, s.sh_size, s.sh_offset});
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    if (s.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[s.sh_link];
    for (uint64_t off = s.sh_offset; off + sizeof(Elf64_Sym) <= s.sh_offset + s.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      if (!read(object, off, sym) || ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
      const uint64_t at = strings.sh_offset + sym.st_name;
      if (sym.st_name >= strings.sh_size || at >= object.size()) continue;
      functions_.emplace(reinterpret_cast<const char*>(object.data() + at), sym.st_value);
    }
  }
}

const uint8_t* RoutineFootprint::codeAt(uint64_t address, size_t& avail) const {
  for (const CodeSection& s : code_)
    if (address >= s.address && address < s.address + s.size) {
      avail = size_t(s.address + s.size - address);
      return object_.data() + s.offset + (address - s.address);
    }
  return nullptr;
}

Footprint RoutineFootprint::walk(uint64_t entry) const {
  if (auto it = memo_.find(entry); it != memo_.end()) return it->second;
  // Every instruction reachable from `entry`; a bound keeps a pathological
  // object from taking long (then: unsure, so heavy).
  constexpr size_t kMaxInstructions = 200000;
  std::set<uint64_t> seen;
  std::vector<uint64_t> work = {entry};
  bool touches = false;
  RegSet written;
  while (!work.empty() && !touches) {
    uint64_t at = work.back();
    work.pop_back();
    while (seen.insert(at).second) {
      size_t avail = 0;
      const uint8_t* bytes = codeAt(at, avail);
      ZydisDecodedInstruction insn;
      ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
      // Every register the instruction writes, the implicit ones too (mul's
      // rdx, cpuid's, a string instruction's rsi/rdi/rcx, syscall's).
      if (!bytes || seen.size() > kMaxInstructions || !decoder_.decodeFull(bytes, avail, insn, ops)) {
        touches = true;
        break;
      }
      const x86::Semantics sem = x86::describe(insn, ops, at);
      touches = sem.vectorState;
      if (touches) break;
      written |= RegSet{sem.written.gprs()};
      const uint64_t next = at + insn.length;
      const bool relative = insn.operand_count_visible > 0 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative;
      const uint64_t target = relative ? next + uint64_t(ops[0].imm.value.s) : 0;
      const ZydisInstructionCategory c = insn.meta.category;
      if (c == ZYDIS_CATEGORY_RET || insn.mnemonic == ZYDIS_MNEMONIC_UD2 || insn.mnemonic == ZYDIS_MNEMONIC_HLT) break;
      if (c == ZYDIS_CATEGORY_CALL || c == ZYDIS_CATEGORY_UNCOND_BR || c == ZYDIS_CATEGORY_COND_BR) {
        if (!relative) {  // through a register, memory or the GOT: unknown code
          touches = true;
          break;
        }
        size_t unused;
        if (!codeAt(target, unused)) {  // the PLT: another library's code
          touches = true;
          break;
        }
        work.push_back(target);
        if (c == ZYDIS_CATEGORY_UNCOND_BR) break;
      }
      at = next;
    }
  }
  const Footprint f = touches ? Footprint{} : Footprint{false, written};
  memo_[entry] = f;
  return f;
}

Footprint RoutineFootprint::of(const std::string& routine) const {
  auto it = functions_.find(routine);
  return it == functions_.end() ? Footprint{} : walk(it->second);
}

}  // namespace atomx::instrument
