// `atomx end`: its arguments; the replay is driver::replayEndDumps
// (src/driver/EndReplay.h).
#include "EndCommand.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomx/error.hpp>

#include "driver/EndReplay.h"
#include "support/Error.h"

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

}  // namespace

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
        throw UsageError(std::string("-j needs a number from 1 to 999 (") + kUsage + ")");
      jobs = unsigned(std::stoi(n));
    }
    else if (a == "-j") throw UsageError(std::string("-j needs a number (") + kUsage + ")");
    else if (!a.empty() && a[0] == '-') throw UsageError("unknown option " + a + " (" + kUsage + ")");
    else paths.push_back(a);
  }
  if (paths.empty()) paths.push_back(".");
  std::vector<std::string> dumps;
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) throw Error(p + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) {
      const std::vector<std::string> found = driver::findEndDumps(p);
      dumps.insert(dumps.end(), found.begin(), found.end());
    } else {
      dumps.push_back(p);
    }
  }
  if (dumps.empty()) {
    if (!quiet) std::fprintf(stderr, "atomx: end: no atomx-end.PID dump in %s\n", paths.size() == 1 ? paths[0].c_str() : "those directories");
    return 0;
  }
  const size_t failed = driver::replayEndDumps(dumps, jobs, keep, quiet);
  if (!quiet)
    std::fprintf(stderr, "atomx: end: %zu process(es) replayed%s\n", dumps.size() - failed,
                 failed ? (", " + std::to_string(failed) + " failed (their dumps are kept)").c_str() : "");
  return failed ? 1 : 0;
}

}  // namespace atomx::cli
