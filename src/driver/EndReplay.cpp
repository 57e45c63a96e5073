// The dump's format is the runtime's (include/atomx/end_format.h); this
// side reads only its header and the executable's path, and leaves the
// counters to the replay.
#include "driver/EndReplay.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomx/end_format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace atomx::driver {

namespace {

bool isDumpName(const std::string& name) {
  const std::string prefix = ATOMX_END_PREFIX;
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

// The executable a dump names, or an error.
std::string executableOf(const std::string& dump, std::string& error) {
  std::ifstream in(dump, std::ios::binary);
  AtomxEndDump h;
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h) || std::memcmp(h.magic, ATOMX_END_MAGIC, 8) != 0) {
    error = dump + ": not a deferred end's dump (atomx-end.PID)";
    return "";
  }
  std::string exe(h.pathBytes < 4096 ? h.pathBytes : 0, '\0');
  if (exe.empty() || !in.read(exe.data(), std::streamsize(exe.size()))) {
    error = dump + ": truncated";
    return "";
  }
  if (access(exe.c_str(), X_OK) != 0) {
    error = dump + ": the program that wrote it, " + exe + ", is gone (" + std::strerror(errno) + ")";
    return "";
  }
  return exe;
}

// Starts the replay of one dump; -1 (and `error`) if it cannot start.
pid_t start(const std::string& dump, std::string& error) {
  const std::string exe = executableOf(dump, error);
  if (exe.empty()) return -1;
  // Absolute: the replay starts by entering the directory the process ended in.
  const std::string path = std::filesystem::absolute(dump).string();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork failed: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    setenv(ATOMX_END_REPLAY_ENV, path.c_str(), 1);
    unsetenv(ATOMX_END_DIR_ENV);
    char* args[] = {const_cast<char*>(exe.c_str()), nullptr};
    execv(exe.c_str(), args);
    std::fprintf(stderr, "atomx: end: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  return pid;
}

}  // namespace

std::vector<std::string> findEndDumps(const std::string& dir) {
  std::vector<std::string> dumps;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    struct stat st;
    if (!isDumpName(name) || stat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    dumps.push_back(dir == "." ? name : e.path().string());
  }
  std::sort(dumps.begin(), dumps.end());
  return dumps;
}

size_t replayEndDumps(const std::vector<std::string>& dumps, unsigned jobs, bool keep, bool quiet) {
  std::map<pid_t, std::string> running;
  size_t next = 0, done = 0, failed = 0;
  const bool progress = !quiet && dumps.size() >= 20 && isatty(2);
  auto finishOne = [&] {
    int status = 0;
    pid_t pid;
    while ((pid = wait(&status)) < 0 && errno == EINTR) {
    }
    const auto it = running.find(pid);
    if (pid < 0 || it == running.end()) return;
    const std::string dump = it->second;
    running.erase(it);
    ++done;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      if (!keep) std::remove(dump.c_str());
    } else {
      ++failed;
      std::fprintf(stderr, "atomx: end: %s: the replay %s %d; the dump is kept\n", dump.c_str(),
                   WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    if (progress) std::fprintf(stderr, "\ratomx: end: %zu/%zu", done, dumps.size());
  };
  while (next < dumps.size() || !running.empty()) {
    if (next < dumps.size() && running.size() < std::max(1u, jobs)) {
      std::string error;
      const pid_t pid = start(dumps[next], error);
      if (pid < 0) {
        ++failed, ++done;
        std::fprintf(stderr, "atomx: end: %s; the dump is kept\n", error.c_str());
      } else {
        running[pid] = dumps[next];
      }
      ++next;
      continue;
    }
    finishOne();
  }
  if (progress) std::fputc('\n', stderr);
  return failed;
}

}  // namespace atomx::driver
