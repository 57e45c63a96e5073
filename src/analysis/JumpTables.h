// Jump tables: found from the relocations --emit-relocs keeps.
//
// A PIC table (PIE code) is a run of R_X86_64_PC32 words in read-only data
// whose values are `target - base`; its base is the address a `lea
// base(%rip)` in the dispatching procedure loads.  An absolute table (non-PIE
// code) is a run of R_X86_64_64 words, its base an R_X86_64_32S displacement
// in the dispatching instruction.  A table ends at its first word that has no
// such relocation, whose target falls outside the procedure (or its .cold
// part), or where another table's base begins.
#pragma once

#include "analysis/RelocIndex.h"
#include "ir/Program.h"

namespace atomx::analysis {

void findJumpTables(ir::Program& program, const RelocIndex& relocs);

}  // namespace atomx::analysis
