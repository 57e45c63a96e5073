// `atomx trace -- COMMAND`: the whole workload the command starts, traced
// with no preparation (docs/trace.md, "Tracing a whole workload").
//
// A supervisor: the command runs under ptrace (PTRACE_SEIZE, following
// fork, vfork and clone) with a seccomp filter that stops only execve and
// execveat.  At each exec the supervisor resolves the file as the kernel
// would (the caller's working directory, execveat's directory descriptor,
// /proc/self), asks its caller whether atomx traces that program (once per
// file: device, inode, modification time, size) and, when it does, points
// the exec at the instrumented copy (a path written below the caller's red
// zone).  It writes to the trace's event log, when the exec succeeded,
//   NS PID PID program K HOW PATH  process PID runs the manifest's program
//                                K from here on: HOW `exec` (it exec'd it)
//                                or `fork` (a new process, of a process
//                                running it: fork, vfork, posix_spawn)
//   NS PID PID untraced PATH ARGV...  an exec of a program atomx does not
//                                trace (words escaped: escapeWord)
// which is how the regenerator ties each stream to its program
// (trace::streamPrograms).
#pragma once

#include <string>
#include <vector>

namespace atomx::driver {

class WorkloadPrograms {
 public:
  virtual ~WorkloadPrograms() = default;
  // The program at `path` (absolute, links resolved): its number in the
  // trace's manifest (1, 2, ...) and its instrumented copy, or 0 when atomx
  // does not trace it (`why` says why).
  virtual int trace(const std::string& path, std::string& instrumented, std::string& why) = 0;
};

struct WorkloadRun {
  int status = 0;           // the command's, as a shell reports it
  bool supervised = false;  // false: atomx could not ptrace it (it ran as `exe`)
  int untraced = 0;         // execs of programs atomx did not trace
};

// Runs the command `argv` (argv[0] the program as given, `exe` its file)
// with its processes' execs redirected as above, the event log `events`;
// waits for every process of it.  When atomx cannot ptrace its child
// (atomx itself runs under strace -f or gdb), `fallback` runs instead
// (`exe`'s instrumented copy, or `exe` when atomx does not trace it), as
// runChild does, with nothing followed; one line on stderr says so.
WorkloadRun runWorkload(const std::string& exe, const std::string& fallback, const std::vector<std::string>& argv,
                        const std::string& events, WorkloadPrograms& programs);

// A word of an `untraced` line: bytes up to ' ', '\\' and from 0x7f as
// \ooo (octal), so that the words split on spaces.
std::string escapeWord(const std::string& w);

}  // namespace atomx::driver
