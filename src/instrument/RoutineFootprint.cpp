#include "instrument/RoutineFootprint.h"

#include "support/Error.h"
#include "x86/Semantics.h"

#include <elf.h>

#include <set>

namespace atomx::instrument {

using x86::RegSet;

RoutineFootprint::RoutineFootprint(const std::vector<uint8_t>& object, const x86::Decoder& decoder)
    : decoder_(decoder) {
  // A file that cannot be read leaves every routine heavy: when unsure, save.
  try {
    image_ = std::make_unique<elf::ElfImage>(elf::ElfImage::fromBytes(object, "the analysis object"));
  } catch (const Error&) {
    return;
  }
  for (const elf::Section& s : image_->sections())
    if (s.type == SHT_PROGBITS && s.isExec() && s.name.rfind(".plt", 0) != 0) code_.push_back(&s);
  for (const auto* table : {&image_->dynamicSymbols(), &image_->symbols()})
    for (const elf::Symbol& sym : *table)
      if (sym.type == STT_FUNC && sym.shndx != SHN_UNDEF) functions_.emplace(sym.name, sym.value);
}

RoutineFootprint::~RoutineFootprint() = default;

const uint8_t* RoutineFootprint::codeAt(uint64_t address, size_t& avail) const {
  for (const elf::Section* s : code_)
    if (s->contains(address)) {
      avail = size_t(s->addr + s->size - address);
      return image_->sectionBytes(*s).data() + (address - s->addr);
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
