// Running the program a command names, as a shell would.
#pragma once

#include <string>
#include <vector>

namespace atomx::driver {

// PROG as execvp would find it (a name without '/' on $PATH); throws
// atomx::Error when there is none.
std::string findProgram(const std::string& prog);

// Runs `exe` with `argv` (argv[0] included) and waits for it, as a shell
// does: ^C and ^\ are for the program, atomx waits; SIGTERM, SIGHUP,
// SIGUSR1, SIGUSR2 and SIGALRM sent to atomx alone are passed on to the
// program, and atomx goes on waiting.  Its status as a shell reports it
// (128+N if signal N killed it).
int runChild(const std::string& exe, const std::vector<std::string>& argv);

// While it lives, atomx waits for `child` as a shell does (runChild): ^C
// and ^\ are ignored by atomx, and SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and
// SIGALRM sent to atomx are passed on to `child`.  The workload supervisor
// (Workload.h) waits for its command the same way.
class ForwardedSignals {
 public:
  explicit ForwardedSignals(int child);
  ~ForwardedSignals();
  ForwardedSignals(const ForwardedSignals&) = delete;
  ForwardedSignals& operator=(const ForwardedSignals&) = delete;
};

// A wait status as a shell reports it (128+N if signal N killed it).
int shellStatus(int waitStatus);

}  // namespace atomx::driver
