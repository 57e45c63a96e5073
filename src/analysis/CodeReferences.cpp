#include "analysis/CodeReferences.h"

#include "support/Hex.h"

namespace atomx::analysis {

bool followsRelocationsOf(const elf::Section& s) {
  return s.isAlloc() && s.name != ".eh_frame" && s.name != ".eh_frame_hdr" && s.name != ".gcc_except_table";
}

namespace {

class ReferenceCollector {
 public:
  ReferenceCollector(ir::Program& program) : program_(program) {}

  // `from()` describes the referrer, for the message if the reference is bad
  // (built only then: this runs for every reference in the program).
  // `takesAddress`: the reference stores or computes the address (anything
  // but a direct branch, a jump-table entry or a landing pad), so code that
  // is not a direct call may reach the procedure's entry through it.
  template <typename Describe>
  void refer(uint64_t target, Describe&& from, ir::Procedure* source = nullptr, bool takesAddress = true) {
    // Most references are a procedure's own branches: no search for those
    // (procAt would find the source itself, unless a later procedure
    // overlaps it there).
    if (source && source->contains(target) &&
        (source->id + 1 >= program_.procs.size() || program_.procs[source->id + 1].start > target)) {
      if (takesAddress && target == source->start) source->addressTaken = true;
      return;
    }
    ir::Procedure* proc = program_.procAt(target);
    if (proc && takesAddress && target == proc->start) proc->addressTaken = true;
    if (!proc || proc == source) return;
    if (!proc->fullyDecoded) return;  // already Unmovable
    if (!proc->isBoundary(target)) {
      proc->markUnmovable(from() + " refers to " + hex(target) + ", inside an instruction");
      return;
    }
    if (target != proc->start && target != proc->end) proc->externalLeaders.push_back(target);
  }

 private:
  ir::Program& program_;
};

}  // namespace

void collectCodeReferences(ir::Program& program, const RelocIndex& relocs,
                           const std::vector<LandingPad>& landingPads) {
  const elf::ElfImage& image = *program.image;
  ReferenceCollector refs(program);

  // Jump-table words are followed by the table analysis, not as plain data.
  std::vector<std::pair<uint64_t, uint64_t>> tableSpans;
  for (const ir::Procedure& proc : program.procs)
    for (const ir::JumpTable& t : proc.jumpTables)
      tableSpans.push_back({t.address, t.address + t.entrySize * t.entryTargets.size()});
  std::sort(tableSpans.begin(), tableSpans.end());
  auto inTable = [&](uint64_t place) {
    auto it = std::upper_bound(tableSpans.begin(), tableSpans.end(), std::make_pair(place, UINT64_MAX));
    return it != tableSpans.begin() && place < std::prev(it)->second;
  };

  // Code: branches and RIP-relative operands that leave their procedure.
  for (ir::Procedure& proc : program.procs) {
    for (const x86::Insn& insn : proc.insns) {
      if (insn.isDirectBranch() || insn.isRipRelative())
        refs.refer(insn.target, [&] { return proc.name + " at " + hex(insn.address); }, &proc, !insn.isDirectBranch());
    }
    for (const ir::JumpTable& t : proc.jumpTables)
      for (uint64_t target : t.entryTargets) refs.refer(target, [&] { return "jump table at " + hex(t.address); }, &proc, false);
  }

  // Static relocations in data (and absolute ones in code).
  for (const elf::Relocation& r : image.staticRelocations()) {
    const elf::Section& applies = image.sections()[r.targetSection];
    if (!followsRelocationsOf(applies)) continue;
    const bool inCode = applies.isExec();
    if (inCode ? !isAbsoluteAddress(r.type) : !(isAbsoluteAddress(r.type) || r.type == R_X86_64_PC32 || r.type == R_X86_64_PC64))
      continue;
    if (!inCode && inTable(r.place)) continue;
    refs.refer(r.symValue + r.addend, [&] { return "relocation at " + hex(r.place); },
               inCode ? program.procAt(r.place) : nullptr);
  }

  // Dynamic relocations and symbols.
  for (const elf::Relocation& r : image.dynamicRelocations())
    if (r.type == R_X86_64_RELATIVE || r.type == R_X86_64_IRELATIVE)
      refs.refer(uint64_t(r.addend), [&] { return "dynamic relocation at " + hex(r.place); });
  for (const elf::Symbol& s : image.dynamicSymbols())
    if (s.shndx != SHN_UNDEF && (s.type == STT_FUNC || s.type == STT_GNU_IFUNC)) refs.refer(s.value, [&] { return "symbol " + s.name; });
  refs.refer(image.entry(), [] { return std::string("the entry point"); });

  for (const LandingPad& lp : landingPads)
    refs.refer(lp.address, [&] { return "the landing pad of the call at " + hex(lp.callSite); }, nullptr, false);

  for (ir::Procedure& proc : program.procs) {
    std::sort(proc.externalLeaders.begin(), proc.externalLeaders.end());
    proc.externalLeaders.erase(std::unique(proc.externalLeaders.begin(), proc.externalLeaders.end()),
                               proc.externalLeaders.end());
  }
}

}  // namespace atomx::analysis
