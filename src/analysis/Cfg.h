// Basic blocks and CFG edges of each decoded procedure.
//
// A block ends at every control transfer, calls included (so block counts
// stay exact when a callee does not return: exit, longjmp, exceptions), and
// starts at every branch target, jump-table target, landing pad and address
// that something outside the procedure refers to.
#pragma once

#include <vector>

#include "analysis/CodeReferences.h"
#include "ir/Program.h"

namespace atomx::analysis {

void buildCfgs(ir::Program& program, const std::vector<LandingPad>& landingPads);

// Every target of the jump tables the indirect jump at `jumpAddress` may
// dispatch through (those whose dispatch jumps are unknown or include it),
// inside the procedure or not (a table of gcc's may send cases to the
// procedure's .cold part); the CFG's JumpTable edges are the ones inside.
std::vector<uint64_t> dispatchTargets(const ir::Procedure& proc, uint64_t jumpAddress);

// Whether a call to `callee` (a procedure or "name@plt") never returns.
bool isNoReturnCallee(const std::string& callee);

}  // namespace atomx::analysis
