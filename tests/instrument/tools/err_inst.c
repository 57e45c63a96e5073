/* Deliberate mistakes at loop_sum's first instruction (xor %eax,%eax),
 * selected by the tool argument. */
#include <atomx/atom.h>
#include <string.h>

void Instrument(int argc, char **argv) {
  Proc *p = GetFirstProc();
  while (p && strcmp(ProcName(p), "loop_sum")) p = GetNextProc(p);
  Inst *first = GetFirstInst(GetFirstBlock(p));
  const char *kind = argc > 1 ? argv[1] : "";
  if (!strcmp(kind, "argcount")) {
    AddCallProto("Probe(int, long)");
    AddCallInst(first, InstBefore, "Probe", 1);
  } else if (!strcmp(kind, "brcond")) {
    AddCallProto("Probe(VALUE)");
    AddCallInst(first, InstBefore, "Probe", BrCondValue);
  } else if (!strcmp(kind, "effaddr")) {
    AddCallProto("Probe(VALUE)");
    AddCallInst(first, InstBefore, "Probe", EffAddrValue);
  } else if (!strcmp(kind, "crash")) {  /* the tool's own bug */
    volatile int *nowhere = 0;
    *nowhere = 1;
  } else if (!strcmp(kind, "wrongtype")) {  /* an int where the prototype says char* */
    AddCallProto("Probe(char*)");
    AddCallInst(first, InstBefore, "Probe", 42);
  } else if (!strcmp(kind, "wrongarray")) {  /* an int where the prototype says long[] */
    AddCallProto("Probe(long[4])");
    AddCallInst(first, InstBefore, "Probe", 4096);
  } else if (!strcmp(kind, "rangec")) {  /* 300 for an unsigned char */
    AddCallProto("Probe(unsigned char)");
    AddCallInst(first, InstBefore, "Probe", 300);
  } else if (!strcmp(kind, "cbig")) {  /* a long constant for an int: not its low half */
    AddCallProto("Probe(int)");
    AddCallInst(first, InstBefore, "Probe", 1L << 40);
  } else if (!strcmp(kind, "cone")) {  /* one argument for two */
    AddCallProto("Probe(long, long)");
    AddCallInst(first, InstBefore, "Probe", 1L);
  } else if (!strcmp(kind, "cstring")) {  /* a string for an int */
    AddCallProto("Probe(int)");
    AddCallInst(first, InstBefore, "Probe", "seven");
  } else if (!strcmp(kind, "cfloat")) {  /* a double for an int */
    AddCallProto("Probe(int)");
    AddCallInst(first, InstBefore, "Probe", 3.5);
  } else if (!strcmp(kind, "atomerror")) {  /* the tool stops the rewrite itself */
    AtomError("no procedure named %s here (%d procedures looked at)", "nosuch", 42);
  } else {  /* undefined: fine here, but the analysis file lacks Probe */
    AddCallProto("Probe(long)");
    AddCallInst(first, InstBefore, "Probe", 1L);
  }
}
