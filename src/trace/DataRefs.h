// The data half of the regenerator (Regenerate.cpp walks the path): an
// instruction's data references, computed from the register values the
// walk knows (analysis/DataSlices.h says which it can know, and the trace
// records the rest), in the order include/atomx/trace.hpp's DataRef gives.
#pragma once

#include <atomx/trace.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/DataSlices.h"
#include "x86/EmulatorCore.h"

namespace atomx::trace {

// Where the walk is in a thread: its registers (and stack slots, and the
// program's load bias, regs.loadBias) and its %fs base.
struct DataState {
  x86::RegisterFile regs;
  uint64_t fsBase = 0;
};

// Which of the registers the walk knows before instruction `in` an
// interrupted context's (a signal mark's, a switch's in the schedule log)
// must equal there to be this visit of it: those needed before it
// (InsnSlice::neededBefore), less %rcx, %rsi and %rdi of a rep string
// instruction, which an interruption midway has moved on (the kernel
// resumes the instruction with them).  In a loop of evaluated predicates,
// which records nothing per iteration, they tell its iterations apart.
uint16_t comparableRegisters(const analysis::InsnSlice& in);
// Whether `context`'s registers in `mask` equal the walk's.
bool sameRegisters(const uint64_t* walk, const uint64_t* context, uint16_t mask);

// Appends the references of instruction `i` (an index into the
// procedure's instructions) to `out`, each with DataRef::insn `at`, from
// the registers before it; a `rep` instruction's `iterations` times (1 for
// any other).  Null, or why they cannot be computed (an address the trace
// does not hold).
const char* appendReferences(const analysis::DataSlices& slices, uint32_t i, const DataState& state,
                             uint64_t iterations, uint32_t at, std::vector<DataRef>& out);

}  // namespace atomx::trace
