#include "analysis/Movability.h"

#include "support/Hex.h"
#include "support/Parallel.h"

namespace atomx::analysis {

namespace {

// Every relocation inside the procedure's code must patch a field atomx knows
// how to rewrite: a branch displacement or RIP-relative disp32 (PC-relative
// types, re-derived from the decoded instruction), or some field of the
// instruction for absolute addresses (translated in place).
std::string checkCodeRelocations(const ir::Procedure& proc, const RelocIndex& relocs) {
  auto [lo, hi] = relocs.in(proc.start, proc.end);
  // Both in address order: one walk finds each relocation's instruction.
  size_t next = 0;  // the first instruction after the relocation's place
  for (auto it = lo; it != hi; ++it) {
    const elf::Relocation& r = **it;
    while (next < proc.insns.size() && proc.insns[next].address <= r.place) ++next;
    if (next == 0) return "relocation at " + hex(r.place) + " precedes the code";
    const x86::Insn& insn = proc.insns[next - 1];
    const uint64_t offset = r.place - insn.address;
    const unsigned width = relocationWidth(r.type);
    if (offset == 0 || offset + width > insn.length)
      return "relocation at " + hex(r.place) + " does not fit the instruction at " + hex(insn.address);
    if (isPcRelative(r.type) && offset != insn.relOffset && offset != insn.dispOffset)
      return "PC-relative relocation at " + hex(r.place) + " is not a branch or RIP-relative field";
  }
  return "";
}

// GNU C's `goto *(&&base + offset)` with offsets that are label differences
// (`&&l1 - &&l0`): the assembler folds the differences into constants, so no
// relocation marks them and they break as soon as code between the labels
// changes size.  The sign: an indirect jump that no jump table explains in a
// procedure that takes the address of its own code.
std::string checkComputedJumps(const ir::Procedure& proc, const RelocIndex& relocs) {
  if (!proc.jumpTables.empty()) return "";
  bool indirectJump = false;
  uint64_t ownLabel = 0;
  for (const x86::Insn& insn : proc.insns) {
    if (insn.flow == x86::Flow::IndirectJump) indirectJump = true;
    if (insn.isRipRelative() && insn.flow == x86::Flow::Sequential && proc.contains(insn.target))
      ownLabel = insn.address;
  }
  // Non-PIE code takes the address as an absolute immediate.
  auto [lo, hi] = relocs.in(proc.start, proc.end);
  for (auto it = lo; it != hi; ++it)
    if (isAbsoluteAddress((*it)->type) && proc.contains((*it)->symValue + (*it)->addend)) ownLabel = (*it)->place;
  if (indirectJump && ownLabel)
    return "computes jump targets from the address of its own code at " + hex(ownLabel) +
           " (label differences atomx cannot see)";
  return "";
}

}  // namespace

void decideMovability(ir::Program& program, const RelocIndex& relocs, const UnwindCheck& unwindCheck) {
  // Each procedure's own obstacles (every core); then what staying in place
  // does to its neighbours (in order).
  parallelFor(program.procs.size(), [&](size_t i) {
    ir::Procedure& proc = program.procs[i];
    if (proc.state == ir::ProcState::Unmovable) return;
    if (!proc.fullyDecoded || proc.insns.empty()) {
      proc.markUnmovable("not decoded");
      return;
    }
    if (std::string why = checkCodeRelocations(proc, relocs); !why.empty()) {
      proc.markUnmovable(why);
      return;
    }
    if (std::string why = checkComputedJumps(proc, relocs); !why.empty()) {
      proc.markUnmovable(why);
      return;
    }
    if (std::string why = unwindCheck(proc); !why.empty()) {
      proc.markUnmovable(why);
      return;
    }
    proc.state = ir::ProcState::Movable;
  });

  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Procedure& proc : program.procs) {
      if (proc.isMovable() || proc.insns.empty()) continue;
      for (const x86::Insn& insn : proc.insns) {
        if (!insn.isDirectBranch() || insn.relSize != 1) continue;
        ir::Procedure* target = program.procAt(insn.target);
        if (target && target != &proc && target->isMovable()) {
          target->markUnmovable("entered by a short branch from " + proc.name + ", which stays in place");
          changed = true;
        }
      }
      const x86::Insn& last = proc.insns.back();
      if (proc.fullyDecoded && last.fallsThrough() && last.end() == proc.end) {
        ir::Procedure* next = program.procAt(proc.end);
        if (next && next->isMovable() && next->start == proc.end) {
          next->markUnmovable("reached by falling off the end of " + proc.name + ", which stays in place");
          changed = true;
        }
      }
    }
  }
}

}  // namespace atomx::analysis
