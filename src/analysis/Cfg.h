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

// Whether a call to `callee` (a procedure or "name@plt") never returns.
bool isNoReturnCallee(const std::string& callee);

}  // namespace atomx::analysis
