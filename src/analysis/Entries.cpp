#include "analysis/Entries.h"

#include <elf.h>

namespace atomx::analysis {

std::vector<uint64_t> earlyCode(const elf::ElfImage& image) {
  std::vector<uint64_t> early;
  for (const elf::Relocation& r : image.dynamicRelocations())
    if (r.type == R_X86_64_IRELATIVE) early.push_back(uint64_t(r.addend));
  for (const elf::Symbol& s : image.symbols())
    if (s.type == STT_GNU_IFUNC) early.push_back(s.value);
  for (const elf::Symbol& s : image.dynamicSymbols())
    if (s.type == STT_GNU_IFUNC && s.shndx != SHN_UNDEF) early.push_back(s.value);
  if (const elf::Section* pre = image.sectionByName(".preinit_array")) {
    const std::span<const uint8_t> words = image.sectionBytes(*pre);
    for (uint64_t off = 0; off + 8 <= words.size(); off += 8) {
      uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v |= uint64_t(words[off + i]) << (8 * i);
      for (const elf::Relocation& r : image.dynamicRelocations())
        if (r.place == pre->addr + off && r.type == R_X86_64_RELATIVE) v = uint64_t(r.addend);
      early.push_back(v);
    }
  }
  return early;
}

std::vector<bool> enteredFromOutside(const ir::Program& program, const std::vector<bool>& inside) {
  std::vector<bool> entered(program.procs.size(), false);
  auto isInside = [&](const ir::Procedure& p) { return p.id < inside.size() && inside[p.id]; };
  const uint64_t entryPoint = program.image ? program.image->entry() : 0;
  for (const ir::Procedure& p : program.procs)
    if (isInside(p)) entered[p.id] = p.addressTaken || p.start == entryPoint;
  auto enter = [&](uint64_t target) {
    const ir::Procedure* q = program.procAt(target);
    if (q && q->start == target && isInside(*q)) entered[q->id] = true;
  };
  if (program.image)
    for (uint64_t a : earlyCode(*program.image)) enter(a);
  for (const ir::Procedure& p : program.procs) {
    if (isInside(p)) continue;
    for (const x86::Insn& in : p.insns)
      if (in.isDirectBranch()) enter(in.target);
  }
  return entered;
}

}  // namespace atomx::analysis
