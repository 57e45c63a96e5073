/* Enter and Leave, with the stack pointer, at every procedure's ProcBefore
 * and ProcAfter; Done at the end (frames_anal.cpp: atomx::FrameTracker). */
#include <atomx/atom.h>

void Instrument(int argc, char **argv) {
  AddCallProto("Enter(char*, REGV)");
  AddCallProto("Leave(char*, REGV)");
  AddCallProto("Done()");
  for (Proc *p = GetFirstProc(); p; p = GetNextProc(p)) {
    AddCallProc(p, ProcBefore, "Enter", ProcName(p), RegRSP);
    AddCallProc(p, ProcAfter, "Leave", ProcName(p), RegRSP);
  }
  AddCallProgram(ProgramAfter, "Done");
}
