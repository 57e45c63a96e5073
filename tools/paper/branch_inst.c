/* The ATOM paper's branch-counting tool, instrumentation routines (Figure 2).
 * Typos fixed: the header and Instrument's return type. */
#include <atomx/atom.h>

void
Instrument(int iargc, char **iargv)
{
  Proc *p;
  Block *b;
  Inst *inst;
  int nbranch = 0;

  AddCallProto("OpenFile(int)");
  AddCallProto("CondBranch(int, VALUE)");
  AddCallProto("PrintBranch(int, long)");
  AddCallProto("CloseFile()");

  for(p=GetFirstProc(); p!=NULL;p=GetNextProc(p)){
    for(b=GetFirstBlock(p);b!=NULL;b=GetNextBlock(b)){
      inst = GetLastInst(b);
      if(IsInstType(inst, InstTypeCondBr)){
        AddCallInst(inst, InstBefore, "CondBranch",
                    nbranch,BrCondValue);
        AddCallProgram(ProgramAfter, "PrintBranch",
                        nbranch, InstPC(inst));
        nbranch++;
      }
    }
  }

  AddCallProgram(ProgramBefore, "OpenFile", nbranch);
  AddCallProgram(ProgramAfter, "CloseFile");
}
