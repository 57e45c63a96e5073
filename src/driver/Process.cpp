#include "driver/Process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "support/Error.h"
#include "support/SearchPath.h"

namespace atomx::driver {

std::string findProgram(const std::string& prog) {
  const std::string found = searchPath(prog);
  if (found.empty())
    throw Error(prog + (prog.find('/') != std::string::npos ? ": not an executable file" : ": not found on PATH"));
  return found;
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
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace atomx::driver
