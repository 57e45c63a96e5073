// The naive tracer: a call before every basic block, with the block's
// original address -- the obvious way to record a block trace, and the
// oracle `atomx regen --blocks` is checked against (tests/trace).
#include <atomx/atomx.hpp>

extern "C" void Instrument(int, char**) {
  atomx::Routine visit("NaiveBlock(long)");
  for (atomx::Proc p : atomx::program().procs())
    for (atomx::Block b : p.blocks()) visit.before(b, int64_t(b.pc()));
}
