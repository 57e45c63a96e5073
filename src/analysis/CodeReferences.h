// Every place that refers to code from outside a procedure's own branches:
// other procedures' branches and RIP-relative operands, relocations in data
// and code, dynamic relocations, exported symbols, the entry point and the
// unwinder's landing pads.  Each reference becomes a block leader of the
// procedure it points into; a reference that does not land on an instruction
// boundary makes that procedure Unmovable, because atomx could not say where
// the reference must point after the move.
#pragma once

#include <vector>

#include "analysis/RelocIndex.h"
#include "ir/Program.h"

namespace atomx::analysis {

struct LandingPad {
  uint64_t address;
  uint64_t callSite;  // an address of a call that lands there (for messages)
};

void collectCodeReferences(ir::Program& program, const RelocIndex& relocs,
                           const std::vector<LandingPad>& landingPads);

// Whether a section's relocations describe references atomx must follow
// (allocated, and not unwind tables, which atomx rebuilds itself).
bool followsRelocationsOf(const elf::Section& section);

}  // namespace atomx::analysis
