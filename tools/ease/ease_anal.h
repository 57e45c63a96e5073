// ease, analysis side: shared by the analysis files (ease_anal.cpp, the
// reports; ease_anal_cg.cpp, ease.cg).  What was counted is in atomx's
// embedded facts (<atomx/facts.h>), by block and instruction id.
#pragma once

#include <cstdio>

namespace ease {

// ease.cg: Ir, Dr, Dw, Bc per source file, function and line, in
// cachegrind's format (cg_annotate reads it), from each block's count.
void writeCachegrind(FILE* out, const long* blockCounts);

}  // namespace ease
