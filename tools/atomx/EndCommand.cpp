// `atomx end`: replays deferred ends (EndCommand.h).  The dump's format is
// the runtime's (runtime/abi.h); this side reads only its header and the
// executable's path, and leaves the counters to the replay.
#include "EndCommand.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomx/error.hpp>
#include <runtime/abi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace atomx::cli {

namespace {

const char* const kUsage = "usage: atomx end [-q] [-j N] [--keep] [DUMP | DIR]...";

const char* const kHelp =
    "Runs the end of each process of a program rewritten with --defer-end: such a\n"
    "process loads no analysis code and leaves its counters in atomx-end.PID in its\n"
    "working directory (or in $ATOMX_END_DIR).  For each DUMP (or each atomx-end.*\n"
    "in DIR; default: the working directory) the program that wrote it runs again in\n"
    "the directory the process ended in, reads the counters back and runs only the\n"
    "tool's end: the outputs are what the process would have written at its exit,\n"
    "where it would have.  The dump is then removed.\n"
    "  -j N     replay N dumps at a time (default: one per processor)\n"
    "  --keep   do not remove the dumps\n"
    "  -q       print nothing but errors\n"
    "Exit status: 0, or 1 if a dump could not be replayed (it is kept).\n";

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

int runEnd(int argc, char** argv) {
  bool quiet = false, keep = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> paths;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n%s", kUsage, kHelp);
      return 0;
    }
    if (a == "-q") quiet = true;
    else if (a == "--keep") keep = true;
    else if (a == "-j" && i + 1 < argc) {
      const std::string n = argv[++i];
      if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) == 0)
        throw Error(std::string("-j needs a number from 1 to 999 (") + kUsage + ")");
      jobs = unsigned(std::stoi(n));
    }
    else if (a == "-j") throw Error(std::string("-j needs a number (") + kUsage + ")");
    else if (!a.empty() && a[0] == '-') throw Error("unknown option " + a + " (" + kUsage + ")");
    else paths.push_back(a);
  }
  if (paths.empty()) paths.push_back(".");
  std::vector<std::string> dumps;
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) throw Error(p + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) {
      const std::vector<std::string> found = findEndDumps(p);
      dumps.insert(dumps.end(), found.begin(), found.end());
    } else {
      dumps.push_back(p);
    }
  }
  if (dumps.empty()) {
    if (!quiet) std::fprintf(stderr, "atomx: end: no atomx-end.PID dump in %s\n", paths.size() == 1 ? paths[0].c_str() : "those directories");
    return 0;
  }
  const size_t failed = replayEndDumps(dumps, jobs, keep, quiet);
  if (!quiet)
    std::fprintf(stderr, "atomx: end: %zu process(es) replayed%s\n", dumps.size() - failed,
                 failed ? (", " + std::to_string(failed) + " failed (their dumps are kept)").c_str() : "");
  return failed ? 1 : 0;
}

}  // namespace atomx::cli
