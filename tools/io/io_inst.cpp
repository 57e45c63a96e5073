// io: input/output per file descriptor -- calls, bytes, time and errors of
// the read and write families (read, write, pread64, pwrite64, readv,
// writev, preadv(2), pwritev(2), recvfrom, sendto, recvmsg, sendmsg,
// sendfile, splice, tee, copy_file_range), whether the program makes them
// or its libraries do, with the file each descriptor named.  The calls are
// caught at run time by <atomx/syscalls.h> (Syscall User Dispatch), so the
// instrumentation is only the program start and end calls.
// Options: --top N (rows in io.out, default 20).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long top = 20;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--top") {
      top = optionNumber("io", a, k + 1 < argc ? argv[++k] : nullptr);
    } else {
      throw Error("io: unknown option '" + a + "' (options: --top N)");
    }
  }
  Routine start("IoStart(long, const char*)");
  Routine end("IoEnd()");
  start.atProgramStart(top, std::string(program().path()));
  end.atProgramEnd();
}
