// Session: one run of atomx on one program, as a flat list of named phases
// (what `atomx PROG [TOOL] -o OUT` does, for the command line and for any
// other front end):
//
//   load              read the input file (elf::ElfImage)
//   checkRewritable   the policy: refuse what atomx does not rewrite
//   buildTool         compile the tool (before the analysis: a compile
//                     error should not wait for it)
//   analyze           the program model (analysis::analyzeProgram)
//   runInstrument     the tool's Instrument(argc, argv), with this
//                     session's engine as the API's context; for a trace
//                     (SessionOptions::trace), the trace plan's stores
//                     instead (TraceRecorder.h)
//   placeCounts       the increments behind Counters::count (CountPlan.h)
//   promoteCursor     for a trace, the loops that hold the cursor in a
//                     register (TraceRecorder.h, promoteTraceCursor)
//   embedFacts        the facts of the program, if the tool wants them (Facts.h)
//   checkRoutines     every declared routine is defined
//   plan              counters' thread model, sites, inserted code
//   rewrite           rewrite::Rewriter with the instrumentation added
//
// Without a tool the session moves code only (the null tool).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elf/ElfImage.h"
#include "instrument/CountPlan.h"
#include "instrument/Engine.h"
#include "instrument/Instrumenter.h"
#include "instrument/ToolBuild.h"
#include "instrument/TraceRecorder.h"
#include "rewrite/Rewriter.h"

namespace atomx::instrument {

struct SessionOptions {
  std::string input;                   // the program to rewrite
  std::string output;                  // where it goes (its name is embedded for the runtime)
  ToolSources tool;                    // empty: no instrumentation
  std::vector<std::string> toolArgs;   // Instrument's argv[1...]
  rewrite::RewriteOptions rewrite;
  // Record an abstract-execution trace (`atomx trace`): `tool` is then
  // traceRecorder(), and there is no Instrument to run unless `tool` also
  // names an instrumentation file (`atomx trace --with`: a tool of the
  // user's runs in the same run, its analysis files beside the recorder's).
  bool trace = false;
  bool traceData = false;  // and its data (TracePlan::data)
  // An earlier run's block counts (--profile): they weigh the witness
  // placement of a trace and the counter placement behind Counters::count.
  const analysis::BlockProfile* profile = nullptr;
  // How inline counters are incremented; none: atomx chooses (plain where
  // the program starts no threads, else per-thread, else atomic).
  std::optional<CounterMode> counters{};
  // Deferred end (--defer-end, runtime/abi.h): the program loads no analysis
  // code and leaves its counters for `atomx end`.  Only for a tool that
  // calls nothing while the program runs: Required refuses any other tool,
  // IfPossible ends it in the process.
  enum class DeferEnd { No, Required, IfPossible };
  DeferEnd deferEnd = DeferEnd::No;
};

class Session {
 public:
  explicit Session(SessionOptions options);
  ~Session();

  // Runs every phase; returns the output file (elf/OutputFile.h writes it).
  elf::PatchedFile run();

  const rewrite::Rewriter& rewriter() const { return *rewriter_; }
  // The report's phase times, for a front end's own phases (after run()).
  PhaseTimes& phases() { return rewriter_->phases(); }
  // The input file (the output patches a copy of it).
  const std::string& inputPath() const { return options_.input; }
  // One line per fact about the instrumentation ("" without a tool): the
  // routines, calls and sites, and how counters are incremented.
  std::vector<std::string> summary() const;
  // The trace plan's digest (SessionOptions::trace; after run()).
  uint64_t tracePlacement() const { return tracePlacement_; }

 private:
  void load();
  void buildTool();
  void analyze();
  void runInstrument();
  void placeCounts();
  void embedFacts();
  void checkRoutines() const;
  void plan();
  void chooseCounterMode();

  SessionOptions options_;
  std::unique_ptr<elf::ElfImage> image_;
  std::unique_ptr<ToolBuild> build_;
  std::unique_ptr<rewrite::Rewriter> rewriter_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Instrumenter> instrumenter_;
  CounterMode counterMode_ = CounterMode::Plain;
  std::string counterWhy_;  // for the summary line
  uint64_t tracePlacement_ = 0;
  TraceStoreCounts traceStores_;
  CountPlanSummary counts_;
  size_t factsBytes_ = 0;
  bool endDeferred_ = false;
};

}  // namespace atomx::instrument
