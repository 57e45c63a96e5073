#include "driver/Record.h"

#include <unistd.h>

#include <atomx/trace_format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/ProgramModel.h"
#include "analysis/TracePlan.h"
#include "driver/Process.h"
#include "driver/ProgramCache.h"
#include "driver/Profiles.h"
#include "driver/Rewrite.h"
#include "driver/ScheduleLog.h"
#include "driver/Workload.h"
#include "elf/ElfImage.h"
#include "elf/OutputFile.h"
#include "support/Error.h"
#include "trace/ScheduleFile.h"
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

trace::ProgramFile programFile(const std::string& prog, uint64_t placement) {
  return {prog, std::filesystem::file_size(prog), trace::fileHash(prog), placement};
}

void writeManifest(const std::string& dir, const std::vector<trace::ProgramFile>& programs,
                   const analysis::BlockProfile& profile, uint64_t profileHash, bool data,
                   const std::string& schedule) {
  trace::Manifest m;
  m.version = ATOMX_TRACE_VERSION;
  m.program = programs.at(0).path;
  m.programSize = programs[0].size;
  m.programHash = programs[0].hash;
  m.placement = programs[0].placement;
  m.others.assign(programs.begin() + 1, programs.end());
  m.profile = profileHash;
  m.data = data;
  m.schedule = schedule;
  if (profileHash) trace::writeProfile(dir, profile);
  trace::writeManifest(dir, m);
}

// What atomx cannot instrument (analysis::fileObstacle, the policy `atomx
// run` enforces), said as one reason; "" for a program it can.
std::string obstacle(const std::string& prog) {
  try {
    return analysis::fileObstacle(elf::ElfImage::load(prog));
  } catch (const Error& e) {
    return e.what();
  }
}

// The programs of a workload (Workload.h): each one instrumented on first
// use with the same tool and options, and added to the manifest (the
// named program first, with the profile, when atomx traces it).
class TracedPrograms : public WorkloadPrograms {
 public:
  TracedPrograms(const RecordRequest& r, const analysis::BlockProfile& profile, uint64_t profileHash)
      : r_(r), profile_(profile), profileHash_(profileHash) {}
  void addFirst(const std::string& prog, const Instrumented& traced) {
    programs_.push_back(programFile(prog, traced.placement));
    copies_.push_back(traced.path);
    canonical_.push_back(std::filesystem::weakly_canonical(prog).string());
    namedFirst_ = true;
  }
  const std::vector<trace::ProgramFile>& programs() const { return programs_; }
  // The manifest's `schedule` (ATOMX_TRACE_KEY_SCHEDULE), kept when a
  // program is added.
  void setSchedule(const std::string& schedule) { schedule_ = schedule; }
  const std::string& schedule() const { return schedule_; }

  int trace(const std::string& path, std::string& instrumented, std::string& why) override {
    for (size_t k = 0; k < programs_.size(); ++k)
      if (canonical_[k] == path) return instrumented = copies_[k], int(k) + 1;
    if (!(why = obstacle(path)).empty()) {
      if (!r_.quiet) std::fprintf(stderr, "atomx: %s runs untraced: %s\n", path.c_str(), why.c_str());
      return 0;
    }
    Instrumented traced;
    try {
      traced = instrument(path, {}, 0, r_);
    } catch (const Error& e) {
      why = e.what();
      std::fprintf(stderr, "atomx: %s runs untraced: %s\n", path.c_str(), why.c_str());
      return 0;
    }
    programs_.push_back(programFile(path, traced.placement));
    copies_.push_back(instrumented = traced.path);
    canonical_.push_back(path);
    // (The profile weighed the named program only, when it is the first.)
    writeManifest(r_.dir, programs_, profile_, namedFirst_ ? profileHash_ : 0, r_.data, schedule_);
    return int(programs_.size());
  }

 private:
  const RecordRequest& r_;
  const analysis::BlockProfile& profile_;
  uint64_t profileHash_;
  bool namedFirst_ = false;  // the first program is the named one
  std::string schedule_;
  std::vector<trace::ProgramFile> programs_;
  std::vector<std::string> copies_;     // their instrumented files
  std::vector<std::string> canonical_;  // their paths, links resolved
};

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

void report(const std::string& dir, const WorkloadRun& run, size_t programs, const ScheduleLog* schedule) {
  uint64_t bytes = 0, streams = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".axt") ++streams, bytes += e.file_size();
  std::string switches;
  if (schedule) {
    switches = ", " + std::to_string(schedule->records()) + " switch(es) logged";
    if (schedule->lost()) switches += " (" + std::to_string(schedule->lost()) + " lost: the ring buffer was full)";
    if (const trace::ScheduleChain* c = schedule->chain(); c && c->missing())
      switches += ", switches missing before " + std::to_string(c->missing()) +
                  " of them (the kernel did not report them; the first on CPU " + std::to_string(c->firstCpu()) +
                  " before " + std::to_string(c->firstNs()) + " ns: atomx regen --switches)";
  }
  if (programs == 0) {  // (no manifest: `atomx regen` has nothing to read)
    std::fprintf(stderr, "atomx: no program of the workload could be traced (%d untraced exec(s): %s/%s)\n", run.untraced,
                 dir.c_str(), ATOMX_TRACE_EVENTS);
    return;
  }
  std::string workload;
  if (run.supervised && (programs > 1 || run.untraced))
    workload = " of " + std::to_string(programs) + " program(s), " + std::to_string(run.untraced) +
               " untraced exec(s) (atomx regen " + dir + " --untraced)";
  std::fprintf(stderr, "atomx: trace in %s: %llu thread stream(s)%s, %llu bytes%s (atomx regen %s)\n", dir.c_str(),
               static_cast<unsigned long long>(streams), workload.c_str(), static_cast<unsigned long long>(bytes),
               switches.c_str(),
               dir.c_str());
}

}  // namespace

int recordTrace(const RecordRequest& r) {
  const std::string prog = std::filesystem::absolute(findProgram(r.argv.at(0))).string();
  const analysis::BlockProfile profile = readBlockProfile(r.profileFiles);
  const uint64_t profileHash = profile.empty() ? 0 : trace::profileHash(profile);
  // A command whose program atomx cannot instrument (sh -c ..., make) is
  // traced through the programs it runs; with --instrument OUT, PROG must be
  // one (instrument says why not).
  const bool named = !r.instrumentTo.empty() || obstacle(prog).empty();
  TracedPrograms programs(r, profile, profileHash);
  std::string copy;  // the named program's instrumented file
  if (named) {
    const Instrumented traced = instrument(prog, profile, profileHash, r);
    programs.addFirst(prog, traced);
    copy = traced.path;
  }
  prepareDirectory(r.dir);
  if (!r.instrumentTo.empty()) {
    writeManifest(r.dir, programs.programs(), profile, profileHash, r.data, ATOMX_TRACE_SCHEDULE_SYNC_POINTS);
    handOver(copy, r);
    return 0;
  }
  // The switches of every process of the run, where atomx may log them
  // (docs/trace.md, "The privileged schedule log"); else one line says why.
  std::string why = "--no-schedule";
  std::unique_ptr<ScheduleLog> schedule = r.schedule ? ScheduleLog::start(r.dir, why) : nullptr;
  if (!schedule && r.schedule && !r.quiet) std::fprintf(stderr, "atomx: no schedule log: %s\n", why.c_str());
  // (The recorder always marks the sync points; the log adds the switches.)
  programs.setSchedule(schedule ? ATOMX_TRACE_SCHEDULE_SYNC_POINTS " " ATOMX_TRACE_SCHEDULE_SWITCHES
                                : ATOMX_TRACE_SCHEDULE_SYNC_POINTS);
  if (named) writeManifest(r.dir, programs.programs(), profile, profileHash, r.data, programs.schedule());
  setenv(ATOMX_TRACE_DIR_ENV, std::filesystem::absolute(r.dir).c_str(), 1);
  // The program alone, as before workloads, or the whole workload followed.
  const WorkloadRun run = named && !r.follow ? WorkloadRun{runChild(copy, r.argv), false, 0}
                                             : runWorkload(prog, named ? copy : prog, r.argv,
                                                           r.dir + "/" + ATOMX_TRACE_EVENTS, programs);
  unsetenv(ATOMX_TRACE_DIR_ENV);
  if (schedule) schedule->stop();
  if (!r.quiet) report(r.dir, run, programs.programs().size(), schedule.get());
  return run.status;
}

}  // namespace atomx::driver
