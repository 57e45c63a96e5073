/* The trace tool: for every procedure named on the command line, writes
 * (through trace_anal.c) one line per event to trace.out:
 *   E name a0..a7   ProcBefore with ProcArgValue(0..7)
 *   L name ret      ProcAfter with ReturnValue
 *   I pc            InstBefore every instruction (PCValue)
 *   BB pc / BA pc   BlockBefore / BlockAfter (the block's InstPC)
 *   C pc taken      InstBefore a conditional branch (BrCondValue)
 *   T pc target     InstBefore a branch, call or return (BrTargetValue)
 *   X pc            InstAfter a call
 *   G from to       on each CFG edge (AddCallEdge)
 * and, at ProgramAfter, the constants of Consts().  The argument -noedges
 * leaves out the edge calls. */
#include <atomx/atom.h>
#include <string.h>

static int wanted(Proc *p, int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!strcmp(ProcName(p), argv[i])) return 1;
  return 0;
}

void Instrument(int argc, char **argv) {
  int edges = 1;
  for (int i = 1; i < argc; ++i) edges &= strcmp(argv[i], "-noedges") != 0;
  AddCallProto("Enter(char*, VALUE, VALUE, VALUE, VALUE, VALUE, VALUE, VALUE, VALUE)");
  AddCallProto("Leave(char*, VALUE)");
  AddCallProto("Ev(char*, VALUE)");
  AddCallProto("Ev2(char*, long, VALUE)");
  AddCallProto("Edge(long, long)");
  AddCallProto("Consts(int, long, long, char*, long[], int)");
  for (Proc *p = GetFirstProc(); p; p = GetNextProc(p)) {
    if (!wanted(p, argc, argv)) continue;
    const char *name = ProcName(p);
    AddCallProc(p, ProcBefore, "Enter", name, ProcArgValue(0), ProcArgValue(1), ProcArgValue(2), ProcArgValue(3),
                ProcArgValue(4), ProcArgValue(5), ProcArgValue(6), ProcArgValue(7));
    AddCallProc(p, ProcAfter, "Leave", name, ReturnValue);
    for (Block *b = GetFirstBlock(p); b; b = GetNextBlock(b)) {
      AddCallBlock(b, BlockBefore, "Ev2", "BB", BlockPC(b), PCValue);
      AddCallBlock(b, BlockAfter, "Ev2", "BA", BlockPC(b), PCValue);
      for (Edge *e = edges ? GetFirstSucc(b) : NULL; e; e = GetNextSucc(e))
        AddCallEdge(e, "Edge", BlockPC(EdgeFrom(e)), BlockPC(EdgeTo(e)));
      for (Inst *i = GetFirstInst(b); i; i = GetNextInst(i)) {
        AddCallInst(i, InstBefore, "Ev", "I", PCValue);
        if (IsInstType(i, InstTypeCondBr)) AddCallInst(i, InstBefore, "Ev2", "C", InstPC(i), BrCondValue);
        if (IsInstType(i, InstTypeBranch)) AddCallInst(i, InstBefore, "Ev2", "T", InstPC(i), BrTargetValue);
        if (IsInstType(i, InstTypeCall)) AddCallInst(i, InstAfter, "Ev", "X", PCValue);
      }
    }
  }
  long arr[3] = {-1, 0x123456789aL, -0x7fffffffffffffffL};
  AddCallProgram(ProgramAfter, "Consts", -5, -123456789012L, 0x7fffffffffffffffL, "a \"string\"\n", 3, arr, 42);
}
