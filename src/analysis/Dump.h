// `atomx dump`: the program model as atomx understands it, for tool writers
// (only the model: dumping never rewrites anything).
#pragma once

#include <ostream>
#include <string>

#include "analysis/BlockProfile.h"
#include "analysis/ProgramModel.h"

namespace atomx::analysis {

// Prints every procedure (or only the one named `only`): its blocks,
// instructions at original addresses, CFG edges and jump tables, then the
// list of procedures that stay in place with the reason.
void dumpProgram(const ProgramModel& model, std::ostream& out, const std::string& only = "");

}  // namespace atomx::analysis

namespace atomx::analysis {

struct SliceDumpOptions {
  std::string only;      // one procedure, by name
  bool verbose = false;  // every instruction's classification and sites
  bool table = false;    // the machine-readable table (tests/oracles/slices reads it)
  const BlockProfile* profile = nullptr;  // block counts: values recorded per executed reference
};

// `atomx dump --slices`: per procedure that atomx moves, DataSlices'
// classification of its memory operands and its record sites (a summary
// line; with `verbose` every instruction), and the program's total.
void dumpSlices(const ProgramModel& model, std::ostream& out, const SliceDumpOptions& options);

}  // namespace atomx::analysis
