// Counts calls of the procedures named on the command line (ProcBefore),
// per procedure and per kernel thread id; the names reach ProgramAfter as
// one string, the procedures' addresses as an array (std::vector).
#include <atomx/atomx.hpp>
#include <string>
#include <vector>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  Routine hit("Hit(long, VALUE)");
  Routine report("Report(char*, long[], long)");
  std::string names;
  std::vector<long> pcs;
  for (int k = 1; k < argc; ++k) {
    for (Proc p = *program().procs().begin(); p; p = p.next())
      if (p.name() == argv[k]) {
        hit.before(p, long(pcs.size()), threadId());
        pcs.push_back(long(p.pc()));
      }
    names += std::string(argv[k]) + " ";
  }
  report.atProgramEnd(names, pcs, long(pcs.size()));
}
