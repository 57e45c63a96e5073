// `atomx end [PATH...]`: the deferred ends (runtime/abi.h, "Deferred end")
// of the processes of a program rewritten with --defer-end.  Each process
// left atomx-end.PID, its counters, in its working directory; for each, the
// program that wrote it runs again there in replay mode, which writes the
// tool's outputs exactly as the process would have at its exit, and the
// dump is removed.
#pragma once

#include <string>
#include <vector>

namespace atomx::cli {

// argv[1] is "end".  Returns the exit status; throws atomx::Error.
int runEnd(int argc, char** argv);

// The dumps in `dir` (not below it).
std::vector<std::string> findEndDumps(const std::string& dir);

// Replays `dumps`, up to `jobs` at a time; removes each one that replayed
// (unless `keep`).  The number that failed (each said why on stderr).
size_t replayEndDumps(const std::vector<std::string>& dumps, unsigned jobs, bool keep, bool quiet);

}  // namespace atomx::cli
