// ease, analysis side: shared by the analysis files (ease_anal.cpp, the
// reports; ease_anal_cg.cpp, ease.cg).  What was counted is in atomx's
// embedded facts (<atomx/facts.h>), by block and instruction id.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "ease_facts.h"

namespace ease {

// What one execution of each instruction that ran costs (Ir, Dr, Dw, Bc),
// block by block in block order, of the blocks whose count is not 0:
// worked out once, from the instructions' shapes (ease_anal.cpp), and read
// by every writer in the same order.
struct RunCosts {
  std::vector<uint32_t> inst;   // per instruction that ran: its shape
  std::vector<Events> shapes;  // per shape: one execution's costs
  const Events& at(size_t k) const { return shapes.at(inst.at(k)); }
};

// ease.cg: Ir, Dr, Dw, Bc per source file, function and line, in
// cachegrind's format (cg_annotate reads it), from each block's count.
void writeCachegrind(FILE* out, const long* blockCounts, const RunCosts& run);

}  // namespace ease
