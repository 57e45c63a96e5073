// The ATOM paper's branch-counting tool (its Figures 2 and 3) in atomx's
// typed C++ API: for every conditional branch, how often it was taken and
// not taken.  Thread-safe (see branch_anal.cpp); output in btaken.out.
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Routine open("OpenFile(long)");
  Routine condBranch("CondBranch(long, VALUE)");
  Routine print("PrintBranch(long, long)");
  Routine close("CloseFile()");

  long n = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks())
      if (Inst i = b.last(); i.isCondBranch()) {
        condBranch.before(i, n, branchCondition());
        print.atProgramEnd(n, i.pc());
        ++n;
      }
  open.atProgramStart(n);
  close.atProgramEnd();
}
