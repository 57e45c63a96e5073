// `atomx PROG [TOOL] -o OUT`: one rewrite to a file, with its summary lines
// and report, for the command line and the program cache alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/BlockProfile.h"
#include "instrument/Session.h"

namespace atomx::driver {

struct RewriteRequest {
  std::string prog, out;
  instrument::ToolSources tool;  // empty: the null tool
  std::vector<std::string> toolArgs;
  rewrite::RewriteOptions options;
  std::optional<instrument::CounterMode> counters;
  analysis::BlockProfile profile;     // empty: none
  std::string reportPath;             // --report FILE ("": none)
  bool quiet = false;                 // no summary lines
  instrument::SessionOptions::DeferEnd deferEnd = instrument::SessionOptions::DeferEnd::No;
};

// Rewrites; prints the summary lines on stderr unless quiet.
void rewriteProgram(const RewriteRequest& request);

// A session of `options` run and written to `out` (writeRewritten).  It
// lives until the process exits; when it fails it is freed, and with it
// the temporary directory its tool was built in.
instrument::Session& runSession(const std::string& out, const instrument::SessionOptions& options);

// Runs `session` and writes what it makes to `path`: what atomx did not
// change is copied from the input, in the kernel, while the rewrite runs.
void writeRewritten(const std::string& path, instrument::Session& session);

}  // namespace atomx::driver
