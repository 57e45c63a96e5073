#include "driver/Rewrite.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "elf/OutputFile.h"
#include "rewrite/Report.h"
#include "support/Error.h"

namespace atomx::driver {

void writeRewritten(const std::string& path, instrument::Session& session) {
  elf::OutputFile output(path, true, session.inputPath());
  const elf::PatchedFile file = session.run();
  session.phases().time("writeFile", [&] { output.finish(file); });
}

instrument::Session& runSession(const std::string& out, const instrument::SessionOptions& options) {
  auto session = std::make_unique<instrument::Session>(options);
  writeRewritten(out, *session);  // a failure frees the session: its tool's build directory goes
  // On success the session lives until the process exits: freeing a large
  // program's IR one block at a time costs more than the rest of the
  // rewrite's bookkeeping (compilers skip it for the same reason).
  return *session.release();
}

void rewriteProgram(const RewriteRequest& r) {
  instrument::SessionOptions options{r.prog, r.out, r.tool, r.toolArgs, r.options};
  options.counters = r.counters;
  options.profile = r.profile.empty() ? nullptr : &r.profile;
  options.deferEnd = r.deferEnd;
  instrument::Session& session = runSession(r.out, options);
  if (!r.quiet)
    for (const std::string& line : session.summary()) std::fprintf(stderr, "atomx: %s\n", line.c_str());
  if (!r.reportPath.empty()) {
    std::ofstream report(r.reportPath);
    if (!report) throw Error(r.reportPath + ": cannot create report file");
    rewrite::writeJsonReport(session.rewriter(), r.prog, r.out, report);
  }
  if (!r.quiet) rewrite::printSummary(session.rewriter(), r.prog, std::cerr);
}

}  // namespace atomx::driver
