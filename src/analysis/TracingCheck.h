// Whether a choice of witness edges solves the tracing problem for a
// procedure (Mazieres & Smith, section 2.2.2): written from the definitions,
// sharing no code with the placement (Witnesses.h), so that it can judge it.
//
// A witness is the value an instrumented edge writes.  witness(p, q), for an
// edge p -> q, is {its value} when it is instrumented; otherwise every value
// that can be the next one written after it: the values of the instrumented
// edges at the end of a witness-free path from q, and ANY when such a path
// reaches something else that writes to the stream (a block that calls: the
// callee writes; a block ending in an indirect jump through a table: its
// target is recorded) or leaves the procedure (the caller writes next).  The
// edges are read from the IR here: a procedure's intra-procedural edges, and
// one edge to its virtual exit per edge that leaves it.
//
// The placement solves the tracing problem when, for every predicate (a
// block with two or more distinct successors, other than an indirect jump
// through a table, whose target is recorded):
//   - no witness(p, q) holds ANY, and
//   - the witness sets of its successors are pairwise disjoint;
// and no witness-free cycle holds a predicate (its iterations could not be
// counted).  An evaluated predicate (`evaluated`, per block: the regenerator
// computes its successor from registers; analysis::checkSlices proves them
// known) is no predicate here: the look-ahead goes on through both its
// edges, and a witness-free cycle through it alone is counted by its
// condition.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

// instrumented: (from block, to node) -> witness value; the exit node is
// blocks.size().  Returns one line per problem, none when it is solved.
std::vector<std::string> tracingProblems(const ir::Procedure& proc,
                                         const std::map<std::pair<uint32_t, uint32_t>, uint32_t>& instrumented,
                                         const std::vector<bool>& evaluated = {});

}  // namespace atomx::analysis
