/* Probe(2) at loop_sum's entry each call, Report at the end (libm_anal.c). */
#include <atomx/atom.h>
#include <string.h>

void Instrument(int argc, char **argv) {
  Proc *p = GetFirstProc();
  while (p && strcmp(ProcName(p), "loop_sum")) p = GetNextProc(p);
  AddCallProto("Probe(long)");
  AddCallProto("Report()");
  AddCallProc(p, ProcBefore, "Probe", 2L);
  AddCallProgram(ProgramAfter, "Report");
}
