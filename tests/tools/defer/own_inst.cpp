// A tool of a user's own whose analysis runs at the program's end alone
// (tests/tools/defer_end_check.py --own-tool): every block's count, exact
// (Counters::count), summed at the end by own_anal.c.
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Counters blocks;
  long n = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) blocks.count(b, size_t(n++));
  blocks.reserve(size_t(n) + 1);
  Routine("OwnFini(long, long*)").atProgramEnd(n, blocks);
}
