// syscall: every system call of the process -- the program's, its shared
// libraries' and ld.so's, from ProgramBefore to ProgramAfter -- with counts,
// errors and time per system call, like `strace -c -f`.  The system calls
// are caught at run time by <atomx/syscalls.h> (Linux Syscall User
// Dispatch), so the instrumentation is only the program start and end
// calls.  Options: --top N (rows in syscall.out, default 25).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long top = 25;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") {
      top = optionNumber("syscall", a, k + 1 < argc ? argv[++k] : nullptr);
    } else {
      throw Error("syscall: unknown option '" + a + "' (options: --top N)");
    }
  }
  Routine start("SyscallStart(long, const char*)");
  Routine end("SyscallEnd()");
  start.atProgramStart(top, std::string(program().path()));
  end.atProgramEnd();
}
