// One counter both counted (Counters::count) and incremented, at
// loop_sum's first block: refused, as the two would overwrite each other.
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Counters c;
  Routine report("Report(long*)");
  for (Proc p = *program().procs().begin(); p; p = p.next())
    if (p.name() == "loop_sum") c.count(p.entry(), 0), c.increment(p.entry(), 0);
  report.atProgramEnd(c);
}
