/* query_inst.cpp's report through ATOM's C API (the parity of the two APIs:
 * itest.py queries_c checks the files are the same): one line per
 * instruction of the procedures named in the tool arguments (after the
 * output file). */
#include <atomx/atom.h>
#include <stdio.h>
#include <string.h>

void Instrument(int argc, char **argv) {
  if (argc < 2) AtomError("usage: query_inst OUT PROC...");
  FILE *out = fopen(argv[1], "w");
  if (!out) AtomError("cannot write %s", argv[1]);
  for (Proc *p = GetFirstProc(); p; p = GetNextProc(p)) {
    int named = 0;
    for (int k = 2; k < argc; k++) named |= !strcmp(ProcName(p), argv[k]);
    if (!named) continue;
    for (Block *b = GetFirstBlock(p); b; b = GetNextBlock(b))
      for (Inst *i = GetFirstInst(b); i; i = GetNextInst(i)) {
        const char *callee = InstCalleeName(i);
        char mem[128];
        int n = snprintf(mem, sizeof mem, "%d:", InstMemOperandCount(i));
        for (int k = 0; k < InstMemOperandCount(i); k++) n += snprintf(mem + n, sizeof mem - (size_t)n, "%s%d", k ? "," : "", InstAccessSize(i, k));
        fprintf(out, "%lx\t%s\t%s\t%lx\t%lx\t%s:%d\t%s\t%s\t%lx\n", (unsigned long)InstPC(i), *callee ? callee : "-",
                InstCategory(i), InstRegsRead(i), InstRegsWritten(i), InstSourceFile(i), InstSourceLine(i), mem,
                InstMnemonic(i), (unsigned long)InstTarget(i));
      }
  }
  fclose(out);
}
