#include "instrument/Session.h"

#include <runtime/abi.h>

#include <set>

#include "analysis/Threads.h"
#include "instrument/Facts.h"
#include "support/Error.h"

namespace atomx::instrument {

Session::Session(SessionOptions options) : options_(std::move(options)) {}

// The tool's plugin stays loaded for the life of the process (its code may
// have registered anything); the build directory goes with the session.
Session::~Session() = default;

elf::PatchedFile Session::run() {
  load();
  rewrite::checkRewritable(*image_);
  if (!options_.tool.instrumentation.empty() || options_.trace) {
    // Each phase's time goes to the report (rewrite analyze times itself).
    PhaseTimes& phases = rewriter_->phases();
    phases.time("buildTool", [&] { buildTool(); });
    analyze();
    phases.time("runInstrument", [&] { runInstrument(); });
    phases.time("placeCounts", [&] { placeCounts(); });
    if (options_.trace) phases.time("promoteCursor", [&] { traceStores_.cursorLoops = promoteTraceCursor(*engine_); });
    phases.time("embedFacts", [&] { embedFacts(); });
    phases.time("checkRoutines", [&] { checkRoutines(); });
    phases.time("plan", [&] { plan(); });
    build_.reset();  // the temporary build directory goes now; the plugin stays loaded
  }
  return rewriter_->rewrite();
}

void Session::load() {
  const auto start = PhaseTimes::Clock::now();
  image_ = std::make_unique<elf::ElfImage>(elf::ElfImage::load(options_.input));
  rewriter_ = std::make_unique<rewrite::Rewriter>(*image_, options_.rewrite);
  rewriter_->phases().add("load", start, PhaseTimes::Clock::now());
}

void Session::buildTool() {
  build_ = std::make_unique<ToolBuild>(options_.tool);
  rewriter_->note("tool_build", build_->reused() ? "reused" : "built");
}

void Session::analyze() {
  rewriter_->analyze();
  rewriter_->phases().time("makeEngine", [&] {
    engine_ = std::make_unique<Engine>(rewriter_->program(), rewriter_->decoder(), options_.input);
  });
}

void Session::runInstrument() {
  if (options_.trace) {
    const analysis::TracePlan plan =
        analysis::planTrace(rewriter_->program(), options_.profile, options_.traceData ? &rewriter_->decoder() : nullptr);
    tracePlacement_ = plan.digest;
    traceStores_ = addTraceStores(*engine_, plan);
    if (options_.tool.instrumentation.empty()) return;  // else a tool of its own too (`atomx trace --with`)
  }
  const Engine::ApiScope scope(*engine_);
  build_->runInstrument(options_.toolArgs);
}

void Session::placeCounts() {
  chooseCounterMode();
  counts_ = instrument::placeCounts(*engine_, options_.profile, counterMode_ != CounterMode::Atomic);
}

void Session::embedFacts() { factsBytes_ = instrument::embedFacts(*engine_); }

void Session::checkRoutines() const {
  const std::set<std::string> defined = build_->analysisFunctions();
  for (const Prototype& p : engine_->routines())
    if (!defined.count(p.name))
      throw Error(p.name + " is declared by " + options_.tool.instrumentation + " but no analysis file defines it" +
                  " (in C++, declare it extern \"C\")");
}

void Session::plan() {
  instrumenter_ = std::make_unique<Instrumenter>(*engine_, build_->analysisObject(), options_.output, counterMode_);
  if (options_.deferEnd != SessionOptions::DeferEnd::No) {
    // ProgramBefore code too could make analysis code run during the run
    // (a signal handler, Syscall User Dispatch): it must run in the process
    // (atomx's own calls, the facts' init, only read what atomx embedded).
    const size_t n = instrumenter_->callSitesInCode();
    size_t before = 0;
    for (size_t k = engine_->atomxCalls(); k < engine_->calls().size(); ++k)
      before += engine_->calls()[k].point == Point::ProgramBefore;
    if ((n || before) && options_.deferEnd == SessionOptions::DeferEnd::Required)
      throw Error("--defer-end: the tool calls analysis routines " +
                  (n ? "while the program runs (at " + std::to_string(n) + " place(s))"
                     : "when the program starts (" + std::to_string(before) + " ProgramBefore call(s))") +
                  "; only a tool whose analysis code runs at the program's end alone can run it later");
    if (!n && !before) instrumenter_->deferEnd(), endDeferred_ = true;
  }
  rewriter_->setAdditions(instrumenter_.get());
}

// Plain increments where the program cannot run its code in two threads;
// otherwise each thread counts on its own (%gs), unless the program uses
// %gs itself: then increments are locked.
void Session::chooseCounterMode() {
  if (options_.counters) {
    counterMode_ = *options_.counters;
    counterWhy_ = std::string("--counters ") + counterModeName(counterMode_);
    return;
  }
  const std::string threads = analysis::threadEvidence(*image_);
  if (threads.empty()) {
    counterMode_ = CounterMode::Plain;
    counterWhy_ = "the program starts no threads";
  } else if (const std::string gs = analysis::gsEvidence(rewriter_->program()); !gs.empty()) {
    counterMode_ = CounterMode::Atomic;
    counterWhy_ = threads + "; per-thread counters need %gs, and " + gs;
  } else {
    counterMode_ = CounterMode::PerThread;
    counterWhy_ = threads;
  }
}

std::vector<std::string> Session::summary() const {
  if (!instrumenter_) return {};
  const std::string& out = options_.output;
  std::vector<std::string> lines;
  lines.push_back(out + ": " + std::to_string(engine_->routines().size()) + " analysis routine(s), " +
                  std::to_string(engine_->calls().size()) + " call(s) at " +
                  std::to_string(instrumenter_->siteCount()) + " site(s), " +
                  std::to_string(instrumenter_->lightSiteCount()) + " without vector state, " +
                  std::to_string(instrumenter_->noFlagsSiteCount()) + " without flags, " +
                  std::to_string(instrumenter_->directSiteCount()) + " direct");
  if (options_.trace)
    lines.push_back(out + ": trace stores: " + std::to_string(traceStores_.witnesses) + " witness(es), " +
                    std::to_string(traceStores_.entries) + " entry tag(s), " + std::to_string(traceStores_.returns) +
                     " return tag(s), " + std::to_string(traceStores_.blockTags) + " block tag(s), " +
                    std::to_string(traceStores_.tableTargets) + " jump-table target(s), " +
                    std::to_string(traceStores_.cursorLoops) + " loop(s) with the cursor in a register");
  if (factsBytes_)
    lines.push_back(out + ": the program's facts embedded for the analysis code (" + std::to_string(factsBytes_) +
                    " bytes)");
  if (counts_.requests)
    lines.push_back(out + ": " + std::to_string(counts_.requests) + " exact count(s) in " + std::to_string(counts_.procs) +
                    " procedure(s) from " + std::to_string(counts_.counters) + " counter(s) (a counter per block: " +
                    std::to_string(counts_.blocks) + ")" +
                    (counts_.promoted ? ", " + std::to_string(counts_.promoted) + " of them in a register through a loop" +
                                            (counts_.spilled ? " (" + std::to_string(counts_.spilled) + " saved around it)"
                                                             : std::string()) +
                                            (counts_.inductions ? ", " + std::to_string(counts_.inductions) +
                                                                      " given by an induction variable"
                                                                : std::string())
                                      : std::string()) +
                    (options_.profile ? ", placed by a profile in which " + std::to_string(counts_.profiledProcs) +
                                            " of them ran" : std::string()) +
                    (counts_.unknown ? ", " + std::to_string(counts_.unknown) +
                                           " not known (-1: jump tables that share targets)" : std::string()));
  if (counts_.heldStates)
    lines.push_back(out + ": " + std::to_string(counts_.heldStates) +
                    " prediction state(s) in a register through a loop" +
                    (counts_.spilledStates ? " (" + std::to_string(counts_.spilledStates) + " saved around it)" : ""));
  if (instrumenter_->incrementCount())
    lines.push_back(out + ": " + std::to_string(instrumenter_->incrementCount()) + " inline counter increment(s), " +
                    counterModeName(counterMode_) +
                    (counterMode_ == CounterMode::PerThread ? " through %gs" : "") + " (" + counterWhy_ + ")");
  if (endDeferred_)
    lines.push_back(out + ": end deferred: each process loads no analysis code and leaves its counts in " ATOMX_END_PREFIX
                          "PID; `atomx end` then writes its results");
  return lines;
}

}  // namespace atomx::instrument
