// Linear-sweep disassembly of every procedure.
#pragma once

#include "ir/Program.h"
#include "x86/Decoder.h"

namespace atomx::analysis {

// Decodes each procedure from its start to its end.  A procedure whose bytes
// do not decode into whole instructions ending exactly at its end is marked
// Unmovable (its instructions up to the failure are kept for `atomx dump`).
void disassemble(ir::Program& program, const x86::Decoder& decoder);

}  // namespace atomx::analysis
