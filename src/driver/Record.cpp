#include "driver/Record.h"

#include <unistd.h>

#include <atomx/trace_format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/TracePlan.h"
#include "driver/Process.h"
#include "driver/ProgramCache.h"
#include "driver/Profiles.h"
#include "driver/Rewrite.h"
#include "driver/ScheduleLog.h"
#include "elf/OutputFile.h"
#include "support/Error.h"
#include "trace/TraceFiles.h"

namespace atomx::driver {

namespace {

struct Instrumented {
  std::string path;        // the instrumented program, in the cache
  uint64_t placement = 0;  // its witness placement's digest
};

Instrumented instrument(const std::string& prog, const analysis::BlockProfile& profile, uint64_t profileHash,
                        const RecordRequest& r) {
  Fnv64 key = ProgramCache::programKey(prog, profileHash);
  if (r.data) key.addWord(0xda7a);
  if (r.data && !analysis::evaluatedPredicates()) key.addWord(0xe7a1);  // ATOMX_TRACE_NO_EVALUATED: another plan
  instrument::ToolSources recorder = instrument::traceRecorder();
  if (!r.withTool.empty()) {
    recorder.instrumentation = r.withTool[0];
    recorder.analysis.insert(recorder.analysis.end(), r.withTool.begin() + 1, r.withTool.end());
    key.addFile(r.withTool[0]);
    for (const std::string& a : r.withArgs) key.add(a);
  }
  for (const std::string& f : recorder.analysis) key.addFile(f);
  const std::string& cacheDir = r.cacheDir;
  const bool quiet = r.quiet, data = r.data;
  const ProgramCache cache(cacheDir);
  Instrumented out{cache.path(prog, "trace", key.h)};
  const std::string placementFile = out.path + ".placement";
  std::ifstream in(placementFile);
  if (access(out.path.c_str(), X_OK) == 0 && in >> std::hex >> out.placement) {
    ProgramCache::touch(out.path);
    return out;
  }
  if (!quiet) std::fprintf(stderr, "atomx: instrumenting %s for tracing into %s\n", prog.c_str(), out.path.c_str());
  instrument::SessionOptions options{prog, out.path, recorder, {}, {}};
  options.toolArgs = r.withArgs;
  options.trace = true;
  options.traceData = data;
  options.profile = profile.empty() ? nullptr : &profile;
  instrument::Session& session = runSession(out.path, options);
  out.placement = session.tracePlacement();
  std::ofstream placement(placementFile);
  placement << std::hex << out.placement << "\n";
  if (!placement.flush()) throw Error(placementFile + ": cannot write");
  cache.keepToSize(out.path);
  return out;
}

void prepareDirectory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw Error(dir + ": cannot create the trace directory");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f == ATOMX_TRACE_MANIFEST || f == ATOMX_TRACE_EVENTS || f == ATOMX_TRACE_PROFILE || f == ATOMX_TRACE_SCHEDULE ||
        (f.rfind("thread.", 0) == 0 && e.path().extension() == ".axt"))
      std::filesystem::remove(e.path(), ec);
  }
}

void writeManifest(const std::string& dir, const std::string& prog, uint64_t placement,
                   const analysis::BlockProfile& profile, uint64_t profileHash, bool data, const std::string& schedule) {
  trace::Manifest m;
  m.version = ATOMX_TRACE_VERSION;
  m.program = prog;
  m.programSize = std::filesystem::file_size(prog);
  m.programHash = trace::fileHash(prog);
  m.placement = placement;
  m.profile = profileHash;
  m.data = data;
  m.schedule = schedule;
  if (profileHash) trace::writeProfile(dir, profile);
  trace::writeManifest(dir, m);
}

// The traced program for someone else to run (a test harness, a workload
// that runs it many times): every process of it that runs with
// ATOMX_TRACE_DIR=DIR adds its threads' streams to this trace.
void handOver(const std::string& cached, const RecordRequest& r) {
  std::ifstream in(cached, std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) throw Error(cached + ": cannot read");
  elf::writeOutputFile(r.instrumentTo, bytes, true);
  if (!r.quiet)
    std::fprintf(stderr, "atomx: %s records into %s when run with %s=%s\n", r.instrumentTo.c_str(), r.dir.c_str(),
                 ATOMX_TRACE_DIR_ENV, std::filesystem::absolute(r.dir).c_str());
}

void report(const std::string& dir, const ScheduleLog* schedule = nullptr) {
  uint64_t bytes = 0, streams = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".axt") ++streams, bytes += e.file_size();
  std::string switches;
  if (schedule) {
    switches = ", " + std::to_string(schedule->records()) + " switch(es) logged";
    if (schedule->lost()) switches += " (" + std::to_string(schedule->lost()) + " lost: the ring buffer was full)";
  }
  std::fprintf(stderr, "atomx: trace in %s: %llu thread stream(s), %llu bytes%s (atomx regen %s)\n", dir.c_str(),
               static_cast<unsigned long long>(streams), static_cast<unsigned long long>(bytes), switches.c_str(),
               dir.c_str());
}

}  // namespace

int recordTrace(const RecordRequest& r) {
  const std::string prog = std::filesystem::absolute(findProgram(r.argv.at(0))).string();
  const analysis::BlockProfile profile = readBlockProfile(r.profileFiles);
  const uint64_t profileHash = profile.empty() ? 0 : trace::profileHash(profile);
  const Instrumented traced = instrument(prog, profile, profileHash, r);
  prepareDirectory(r.dir);
  if (!r.instrumentTo.empty()) {
    writeManifest(r.dir, prog, traced.placement, profile, profileHash, r.data, "");
    handOver(traced.path, r);
    return 0;
  }
  // The switches of every process of the run, where atomx may log them
  // (docs/trace.md, "The privileged schedule log"); else one line says why.
  std::string why = "--no-schedule";
  std::unique_ptr<ScheduleLog> schedule = r.schedule ? ScheduleLog::start(r.dir, why) : nullptr;
  if (!schedule && r.schedule && !r.quiet) std::fprintf(stderr, "atomx: no schedule log: %s\n", why.c_str());
  writeManifest(r.dir, prog, traced.placement, profile, profileHash, r.data, schedule ? ATOMX_TRACE_SCHEDULE_SWITCHES : "");
  setenv(ATOMX_TRACE_DIR_ENV, std::filesystem::absolute(r.dir).c_str(), 1);
  const int status = runChild(traced.path, r.argv);
  unsetenv(ATOMX_TRACE_DIR_ENV);
  if (schedule) schedule->stop();
  if (!r.quiet) report(r.dir, schedule.get());
  return status;
}

}  // namespace atomx::driver
