// `atomx dump`: the program as atomx understands it, for tool writers.
#pragma once

#include <ostream>
#include <string>

#include "rewrite/Rewriter.h"

namespace atomx::rewrite {

// Prints every procedure (or only the one named `only`): its blocks,
// instructions at original addresses, CFG edges and jump tables, then the
// list of procedures that stay in place with the reason.
void dumpProgram(const Rewriter& rewriter, std::ostream& out, const std::string& only = "");

}  // namespace atomx::rewrite
