// The decision which procedures move: a procedure moves only when every way
// into it and every address inside it that anything refers to is understood.
#pragma once

#include <functional>
#include <string>

#include "analysis/RelocIndex.h"
#include "ir/Program.h"

namespace atomx::analysis {

// Returns why the unwind information forbids moving a procedure, or "".
// Called for several procedures at once, from several threads.
using UnwindCheck = std::function<std::string(const ir::Procedure&)>;

// Marks each procedure Movable or Unmovable (with a reason), then propagates:
// a procedure that stays put and reaches another one in a way that cannot be
// patched (a rel8 branch, falling off its end) keeps that one in place too.
void decideMovability(ir::Program& program, const RelocIndex& relocs, const UnwindCheck& unwindCheck);

}  // namespace atomx::analysis
