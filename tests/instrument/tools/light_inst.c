/* Before every instruction of the procedures named in the arguments: a
 * call to Touch(pc) (light_anal*.c decide what it does). */
#include <atomx/atom.h>
#include <string.h>

void Instrument(int argc, char **argv) {
  AddCallProto("Touch(long)");
  AddCallProto("Done()");
  for (Proc *p = GetFirstProc(); p; p = GetNextProc(p)) {
    int wanted = 0;
    for (int k = 1; k < argc; ++k) wanted |= strcmp(ProcName(p), argv[k]) == 0;
    if (!wanted) continue;
    for (Block *b = GetFirstBlock(p); b; b = GetNextBlock(b))
      for (Inst *i = GetFirstInst(b); i; i = GetNextInst(i)) AddCallInst(i, InstBefore, "Touch", InstPC(i));
  }
  AddCallProgram(ProgramAfter, "Done");
}
