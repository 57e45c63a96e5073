// Test-only tool: marks, in an strace log, where the syscall and io tools'
// window begins (ProgramBefore) and ends (ProgramAfter), with a system call
// that nothing else makes: faccessat on a path that names the point.  Run
// under strace, the instrumented program thus shows exactly the calls the
// tools must report, atomx's own runtime calls in that window included.
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Routine("MarkBegin()").atProgramStart();
  Routine("MarkEnd()").atProgramEnd();
}
