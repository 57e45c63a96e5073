#include "rewrite/ReferenceFixer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "analysis/CodeReferences.h"
#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::rewrite {

uint64_t ReferenceFixer::read(uint64_t vaddr, unsigned width) const {
  auto off = image_.fileOffsetOf(vaddr, width);
  if (!off) throw InternalError("read outside the file at " + hex(vaddr));
  uint64_t v = 0;
  file_.read(*off, &v, width);
  return v;
}

void ReferenceFixer::write(uint64_t vaddr, uint64_t value, unsigned width) {
  auto off = image_.fileOffsetOf(vaddr, width);
  if (!off) throw InternalError("write outside the file at " + hex(vaddr));
  file_.write(*off, &value, width);
}

FixupStats ReferenceFixer::run(uint16_t newTextSection) {
  fixDataRelocations();
  fixJumpTables();
  fixDynamicRelocations();
  fixGotSlots();
  fixUnmovedCode();
  fixSymbols(newTextSection);
  fixEntryPoints();
  return stats_;
}

void ReferenceFixer::fixDataRelocations() {
  std::set<uint64_t> relativeTableWords;
  std::map<uint64_t, const ir::Procedure*> absoluteTableWords;  // word -> the procedure whose table it is
  for (const ir::Procedure& proc : program_.procs)
    for (const ir::JumpTable& t : proc.jumpTables)
      for (size_t i = 0; i < t.entryTargets.size(); ++i) {
        if (t.relative) relativeTableWords.insert(t.address + 4 * i);
        else absoluteTableWords[t.address + 8 * i] = &proc;
      }

  for (const elf::Relocation& r : image_.staticRelocations()) {
    const elf::Section& applies = image_.sections()[r.targetSection];
    if (!analysis::followsRelocationsOf(applies) || applies.isExec() || !applies.hasFileBytes()) continue;
    const uint64_t target = r.symValue + r.addend;
    auto table = absoluteTableWords.find(r.place);
    auto moved = table != absoluteTableWords.end() ? layout_.translateTableEntry(*table->second, target)
                                                   : layout_.translate(target);
    if (!moved) continue;
    const unsigned width = analysis::relocationWidth(r.type);
    if (!inFile(r.place, width)) continue;
    const bool absolute = analysis::isAbsoluteAddress(r.type);
    if (!absolute && ((r.type != R_X86_64_PC32 && r.type != R_X86_64_PC64) || relativeTableWords.count(r.place)))
      continue;
    // In PIE files an absolute word may hold 0 (the dynamic relocation
    // carries the value); a word holding something else was redirected by
    // the linker.
    const uint64_t stored = read(r.place, width);
    if (!analysis::fieldRefersTo(r.type, r.place, stored, target) && !(absolute && image_.isPie() && stored == 0))
      continue;
    write(r.place, analysis::relocatedField(r, *moved), width);
    stats_.dataPointers++;
  }
}

void ReferenceFixer::fixJumpTables() {
  for (const ir::Procedure& proc : program_.procs) {
    for (const ir::JumpTable& t : proc.jumpTables) {
      if (!t.relative) continue;  // absolute words are data relocations
      for (size_t i = 0; i < t.entryTargets.size(); ++i) {
        auto moved = layout_.translateTableEntry(proc, t.entryTargets[i]);
        if (!moved) continue;
        const int64_t value = int64_t(*moved - t.base);
        if (value < INT32_MIN || value > INT32_MAX)
          throw UnsupportedError("jump table at " + hex(t.address) + " cannot reach the new code");
        write(t.address + 4 * i, uint64_t(value), 4);
        stats_.jumpTableEntries++;
      }
    }
  }
}

void ReferenceFixer::fixDynamicRelocations() {
  for (const elf::Relocation& r : image_.dynamicRelocations()) {
    if (r.type != R_X86_64_RELATIVE && r.type != R_X86_64_IRELATIVE) continue;
    auto moved = layout_.translate(uint64_t(r.addend));
    if (!moved) continue;
    Elf64_Rela rela;
    file_.read(r.entryOffset, &rela, sizeof rela);
    rela.r_addend = int64_t(*moved);
    file_.write(r.entryOffset, &rela, sizeof rela);
    // The linker may also have stored the value in place.
    if (inFile(r.place, 8) && read(r.place, 8) == uint64_t(r.addend)) write(r.place, *moved, 8);
    stats_.dynamicRelocations++;
  }
}

void ReferenceFixer::fixGotSlots() {
  // A GOT slot that holds a moved function's address (non-PIE links fill it
  // statically; PIE links also have a RELATIVE relocation, fixed above).
  for (const elf::Relocation& r : image_.staticRelocations()) {
    if (r.type != R_X86_64_GOTPCREL && r.type != R_X86_64_GOTPCRELX && r.type != R_X86_64_REX_GOTPCRELX) continue;
    const ir::Procedure* user = program_.procAt(r.place);
    if (!user) continue;
    auto insn = std::upper_bound(user->insns.begin(), user->insns.end(), r.place,
                                 [](uint64_t p, const x86::Insn& i) { return p < i.address; });
    if (insn == user->insns.begin()) continue;
    --insn;
    if (r.place >= insn->end() || !insn->isRipRelative()) continue;
    const uint64_t slot = insn->target;
    const elf::Section* gotSection = image_.sectionAt(slot);
    if (!gotSection || gotSection->name.rfind(".got", 0) != 0 || !inFile(slot, 8)) continue;
    auto moved = layout_.translate(r.symValue);
    if (!moved || read(slot, 8) != r.symValue) continue;
    write(slot, *moved, 8);
    stats_.gotSlots++;
  }
}

void ReferenceFixer::fixUnmovedCode() {
  for (const ir::Procedure& proc : program_.procs) {
    if (proc.isMovable() || !proc.fullyDecoded) continue;
    for (const x86::Insn& insn : proc.insns) {
      if (insn.isDirectBranch() || insn.isRipRelative()) {
        auto moved = layout_.translate(insn.target);
        if (!moved) continue;
        const unsigned offset = insn.isDirectBranch() ? insn.relOffset : insn.dispOffset;
        const unsigned width = insn.isDirectBranch() ? insn.relSize : 4;
        const int64_t value = int64_t(*moved - insn.end());
        if (width != 4 || value < INT32_MIN || value > INT32_MAX)
          throw InternalError(proc.name + " at " + hex(insn.address) + " cannot be patched to reach moved code");
        write(insn.address + offset, uint64_t(value), 4);
        stats_.unmovedCodePatches++;
      }
    }
    auto [lo, hi] = relocs_.in(proc.start, proc.end);
    for (auto it = lo; it != hi; ++it) {
      const elf::Relocation& r = **it;
      if (!analysis::isAbsoluteAddress(r.type)) continue;
      const unsigned width = analysis::relocationWidth(r.type);
      if (!analysis::fieldRefersTo(r.type, r.place, read(r.place, width), r.symValue + r.addend)) continue;
      auto moved = layout_.translate(r.symValue + r.addend);
      if (!moved) continue;
      write(r.place, analysis::relocatedField(r, *moved), width);
      stats_.unmovedCodePatches++;
    }
  }
}

void ReferenceFixer::fixSymbols(uint16_t newTextSection) {
  for (uint32_t tableIndex : {image_.symtabIndex(), image_.dynsymIndex()}) {
    if (tableIndex == 0) continue;
    const elf::Section& table = image_.sections()[tableIndex];
    const auto& symbols = tableIndex == image_.symtabIndex() ? image_.symbols() : image_.dynamicSymbols();
    for (const elf::Symbol& sym : symbols) {
      if (sym.shndx == SHN_UNDEF || sym.shndx >= SHN_LORESERVE) continue;
      const ir::Procedure* proc = program_.procAt(sym.value);
      if (!proc || !proc->isMovable()) continue;
      auto moved = layout_.translate(sym.value);
      if (!moved) continue;
      Elf64_Sym raw;
      const uint64_t off = table.offset + uint64_t(sym.index) * sizeof(Elf64_Sym);
      file_.read(off, &raw, sizeof raw);
      raw.st_value = *moved;
      if (sym.value == proc->start && sym.size == proc->size()) {
        const layout::MovedProc* m = layout_.movedProc(proc->id);
        raw.st_size = m->newEnd - m->newStart;
      }
      raw.st_shndx = newTextSection;
      file_.write(off, &raw, sizeof raw);
      stats_.symbols++;
    }
  }
}

void ReferenceFixer::fixEntryPoints() {
  Elf64_Ehdr ehdr;
  file_.read(0, &ehdr, sizeof ehdr);
  ehdr.e_entry = layout_.relocated(ehdr.e_entry);
  file_.write(0, &ehdr, sizeof ehdr);

  for (const elf::Section& s : image_.sections()) {
    if (s.type != SHT_DYNAMIC) continue;
    for (uint64_t off = s.offset; off + sizeof(Elf64_Dyn) <= s.offset + s.size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn dyn;
      file_.read(off, &dyn, sizeof dyn);
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_INIT || dyn.d_tag == DT_FINI) {
        dyn.d_un.d_ptr = layout_.relocated(dyn.d_un.d_ptr);
        file_.write(off, &dyn, sizeof dyn);
      }
    }
  }
}

}  // namespace atomx::rewrite
