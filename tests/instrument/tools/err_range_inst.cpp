// A constant too wide for its parameter, at loop_sum's first instruction:
// Probe(int) given 1L<<40|5 (C would silently keep the low 32 bits).
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Routine probe("Probe(int)");
  for (Proc p = *program().procs().begin(); p; p = p.next())
    if (p.name() == "loop_sum") probe.before(p.entry().first(), 1L << 40 | 5);
}
