// The deferred ends' replay (`atomx end`, `atomx run` with a deferred end):
// each dump a process of a program rewritten with --defer-end left
// (include/atomx/end_format.h) is handed back to the program that wrote
// it, which runs in replay mode in the directory the process ended in and
// writes the tool's outputs exactly as the process would have at its exit.
// Up to `jobs` replays run at once; the dump is removed when its replay
// succeeds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace atomx::driver {

// The dumps (atomx-end.PID) in `dir`, not below it, by name.
std::vector<std::string> findEndDumps(const std::string& dir);

// Replays `dumps`, up to `jobs` at a time; removes each one that replayed
// (unless `keep`).  Progress on a terminal unless `quiet`.  Returns the
// number that failed (each said why on stderr; its dump is kept).
size_t replayEndDumps(const std::vector<std::string>& dumps, unsigned jobs, bool keep, bool quiet);

}  // namespace atomx::driver
