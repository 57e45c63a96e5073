// `atomx run`: instrument a program with a tool into the program cache (or
// reuse it), run it, run the deferred ends, and show what the tool wrote.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "instrument/Session.h"

namespace atomx::driver {

struct RunRequest {
  instrument::ToolSources tool;
  std::string shippedName;   // -T NAME; "" for a tool of one's own
  std::string cacheDir;      // "" for the default place
  std::vector<std::string> toolArgs;
  std::string counters = "auto";  // --counters MODE as given: plain, atomic, per-thread, auto
  std::vector<std::string> profileFiles;
  instrument::SessionOptions::DeferEnd deferEnd = instrument::SessionOptions::DeferEnd::No;
  bool quiet = false;
  // --output-dir TEMPLATE: where the tool's files go (%p, %q{VAR}, %%:
  // <atomx/output_dir.h>); "" for the working directory.
  std::string outputDir;
  std::vector<std::string> argv;  // PROG [ARGS], PROG as given
};

// --counters MODE's value: none for "auto" (atomx chooses); throws
// atomx::UsageError for another word.
std::optional<instrument::CounterMode> counterMode(const std::string& mode);

// Runs it; PROG's exit status as a shell reports it (128+N for signal N).
int runWithTool(const RunRequest& request);

}  // namespace atomx::driver
