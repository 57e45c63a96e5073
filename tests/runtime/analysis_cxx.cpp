// The C++ part of the test analysis object: a global object whose destructor
// must run after the ProgramAfter calls (atomx_analysis_finish runs it), and
// iostream output that must be flushed at the end.
#include <iostream>
#include <string>

extern "C" void LogEvent(const char *what);

namespace {

struct AnalysisGlobal {
  std::string name = "static-dtor";
  ~AnalysisGlobal() {
    LogEvent(name.c_str());
    std::cout << "analysis cout from a static destructor\n";
  }
} gAnalysisGlobal;

}  // namespace
