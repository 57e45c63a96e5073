#include "driver/Process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "support/Error.h"
#include "support/SearchPath.h"

namespace atomx::driver {

std::string findProgram(const std::string& prog) {
  const std::string found = searchPath(prog);
  if (found.empty())
    throw Error(prog + (prog.find('/') != std::string::npos ? ": not an executable file" : ": not found on PATH"));
  return found;
}

namespace {

// The child runChild waits for: the signals a user or a supervisor sends
// atomx alone (kill PID, a job control system's SIGTERM) go to it, so that
// the program ends as it would have (its tool's report written) and atomx
// waits for it, instead of leaving it running on its own.
volatile sig_atomic_t child = 0;
void forward(int sig) {
  if (child > 0) kill(pid_t(child), sig);
}
constexpr int kForwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM};
struct sigaction previous[std::size(kForwarded)];

}  // namespace

ForwardedSignals::ForwardedSignals(int pid) {
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  child = pid;
  struct sigaction fwd {};
  fwd.sa_handler = forward;
  sigemptyset(&fwd.sa_mask);
  for (size_t k = 0; k < std::size(kForwarded); ++k) sigaction(kForwarded[k], &fwd, &previous[k]);
}

ForwardedSignals::~ForwardedSignals() {
  for (size_t k = 0; k < std::size(kForwarded); ++k) sigaction(kForwarded[k], &previous[k], nullptr);
  child = 0;
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
}

int shellStatus(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int runChild(const std::string& exe, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    execv(exe.c_str(), args.data());
    std::fprintf(stderr, "atomx: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  const ForwardedSignals forwarded(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return shellStatus(status);
}

}  // namespace atomx::driver
