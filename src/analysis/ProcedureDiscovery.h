// Finding the procedures of a program and naming its PLT entries.
#pragma once

#include "ir/Program.h"
#include "x86/Decoder.h"

namespace atomx::analysis {

// Fills program.procs from the symbol table: one procedure per function
// symbol in a code section (aliases merged, `foo.cold` parts linked to `foo`).
// A symbol without a size extends to the next symbol or the section's end.
// Procedures whose extents overlap are marked Unmovable.
void discoverProcedures(ir::Program& program);

// Fills program.pltNames by decoding .plt, .plt.sec and .plt.got and matching
// each entry's GOT slot with its dynamic relocation.
void resolvePltNames(ir::Program& program, const x86::Decoder& decoder);

// Whether a code section holds procedures atomx may move (not the PLT and not
// the linker-assembled .init/.fini fragments).
bool isProcedureSection(const elf::Section& section);

}  // namespace atomx::analysis
