#include "analysis/ProcedureDiscovery.h"

#include <algorithm>
#include <unordered_map>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::analysis {

bool isProcedureSection(const elf::Section& s) {
  if (!s.isAlloc() || !s.isExec() || s.type != SHT_PROGBITS) return false;
  if (s.name.rfind(".plt", 0) == 0) return false;
  if (s.name == ".init" || s.name == ".fini") return false;
  return true;
}

void discoverProcedures(ir::Program& program) {
  const elf::ElfImage& image = *program.image;
  if (image.symtabIndex() == 0)
    throw InputError(image.name() + ": no symbol table (.symtab); atomx needs an unstripped, --emit-relocs link");

  struct Candidate {
    const elf::Symbol* sym;
    uint32_t section;
  };
  std::vector<Candidate> candidates;
  // Every symbol that marks a place in code bounds the extent of a sizeless one.
  std::vector<uint64_t> boundaries;
  for (const elf::Symbol& sym : image.symbols()) {
    if (sym.shndx == SHN_UNDEF || sym.shndx >= image.sections().size()) continue;
    const elf::Section& sec = image.sections()[sym.shndx];
    if (!isProcedureSection(sec) || !sec.contains(sym.value)) continue;
    if (sym.type == STT_FUNC || sym.type == STT_GNU_IFUNC) {
      candidates.push_back({&sym, sym.shndx});
      boundaries.push_back(sym.value);
    }
  }
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());

  // Merge aliases: one procedure per start address; the sized, global name wins.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.sym->value != b.sym->value) return a.sym->value < b.sym->value;
    if ((a.sym->size != 0) != (b.sym->size != 0)) return a.sym->size != 0;
    if ((a.sym->bind == STB_GLOBAL) != (b.sym->bind == STB_GLOBAL)) return a.sym->bind == STB_GLOBAL;
    return a.sym->name < b.sym->name;
  });
  for (size_t i = 0; i < candidates.size();) {
    const elf::Symbol& sym = *candidates[i].sym;
    const elf::Section& sec = image.sections()[candidates[i].section];
    ir::Procedure proc;
    proc.name = sym.name;
    proc.start = sym.value;
    proc.section = candidates[i].section;
    uint64_t size = sym.size;
    size_t j = i + 1;
    for (; j < candidates.size() && candidates[j].sym->value == sym.value; ++j) {
      proc.aliases.push_back(candidates[j].sym->name);
      size = std::max(size, candidates[j].sym->size);
    }
    const uint64_t sectionEnd = sec.addr + sec.size;
    if (size == 0) {
      auto next = std::upper_bound(boundaries.begin(), boundaries.end(), proc.start);
      proc.end = next == boundaries.end() ? sectionEnd : std::min(*next, sectionEnd);
      proc.sizeInferred = true;
    } else {
      proc.end = proc.start + size;
    }
    if (proc.end > sectionEnd) {
      proc.end = sectionEnd;
      proc.markUnmovable("symbol extends past the end of section " + sec.name);
    }
    program.procs.push_back(std::move(proc));
    i = j;
  }

  std::unordered_map<std::string, uint32_t> byName;
  for (uint32_t i = 0; i < program.procs.size(); ++i) {
    ir::Procedure& p = program.procs[i];
    p.id = i;
    byName.emplace(p.name, i);
    if (i + 1 < program.procs.size() && program.procs[i + 1].start < p.end) {
      ir::Procedure& next = program.procs[i + 1];
      if (p.sizeInferred) {
        p.end = next.start;
      } else {
        p.markUnmovable("overlaps " + next.name);
        next.markUnmovable("overlaps " + p.name);
      }
    }
  }
  // gcc splits unlikely code into `foo.cold` (also `foo.cold.N`).
  for (ir::Procedure& p : program.procs) {
    auto pos = p.name.find(".cold");
    if (pos == std::string::npos || pos == 0) continue;
    if (auto it = byName.find(p.name.substr(0, pos)); it != byName.end()) p.hotPart = int32_t(it->second);
  }
  program.indexProcedures();
}

void resolvePltNames(ir::Program& program, const x86::Decoder& decoder) {
  const elf::ElfImage& image = *program.image;
  std::unordered_map<uint64_t, std::string> slotNames;
  for (const elf::Relocation& r : image.dynamicRelocations())
    if ((r.type == R_X86_64_JUMP_SLOT || r.type == R_X86_64_GLOB_DAT) && !r.symName.empty())
      slotNames[r.place] = r.symName;
  program.gotNames.insert(slotNames.begin(), slotNames.end());

  for (const elf::Section& s : image.sections()) {
    if (!s.isExec() || s.name.rfind(".plt", 0) != 0 || s.type != SHT_PROGBITS) continue;
    auto bytes = image.sectionBytes(s);
    const uint64_t entrySize = s.entsize ? s.entsize : 16;
    uint64_t off = 0;
    while (off < bytes.size()) {
      x86::Insn insn;
      if (!decoder.decode(bytes.data() + off, bytes.size() - off, s.addr + off, insn)) {
        ++off;
        continue;
      }
      if (insn.flow == x86::Flow::IndirectJump && insn.isRipRelative()) {
        if (auto it = slotNames.find(insn.target); it != slotNames.end()) {
          const uint64_t entry = s.addr + (off / entrySize) * entrySize;
          program.pltNames.emplace(entry, it->second + "@plt");
        }
      }
      off += insn.length;
    }
  }
}

}  // namespace atomx::analysis
