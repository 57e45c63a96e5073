/* ProgramBefore/ProgramAfter: each appends a marker to order.log. */
#include <atomx/atom.h>

void Instrument(int argc, char **argv) {
  AddCallProto("Mark(char*)");
  AddCallProgram(ProgramBefore, "Mark", "ProgramBefore");
  AddCallProgram(ProgramAfter, "Mark", "ProgramAfter");
}
