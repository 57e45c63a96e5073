// Too few arguments for the prototype, at loop_sum's first instruction.
// (The C API cannot check this: its AddCall* functions are variadic.)
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Routine probe("Probe(int, long)");
  for (Proc p = *program().procs().begin(); p; p = p.next())
    if (p.name() == "loop_sum") probe.before(p.entry().first(), 1);
}
