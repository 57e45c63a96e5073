// `atomx dump`: the program model as atomx understands it, for tool writers
// (only the model: dumping never rewrites anything).
#pragma once

#include <ostream>
#include <string>

#include "analysis/ProgramModel.h"

namespace atomx::analysis {

// Prints every procedure (or only the one named `only`): its blocks,
// instructions at original addresses, CFG edges and jump tables, then the
// list of procedures that stay in place with the reason.
void dumpProgram(const ProgramModel& model, std::ostream& out, const std::string& only = "");

}  // namespace atomx::analysis
