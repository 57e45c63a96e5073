/* A syntax error: atomx must show the compiler's message and fail. */
#include <atomx/atom.h>

void Instrument(int argc, char **argv) {
  AddCallProto("Probe(long)")
}
