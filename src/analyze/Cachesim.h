// `atomx cachesim TRACE --config FILE | --sweep FILE`: the one cache
// simulator (<atomx/cachesim.hpp>) run as a trace analyser over the
// regenerated instruction and data stream, with the online tool's
// configuration format and outputs (<atomx/cachesim_report.hpp>); the
// offline side of docs/cachesim.md ("The offline simulator and sweeps").
//
// Per BlockRun the block's instruction fetches exactly as the online tool
// makes them (cachesim::blockFetches, at the run-time address: pc + the
// thread's load bias), then its data references in order (a Modify as one
// read, a locked Modify as two, Valgrind's model), then, per LibraryCall,
// its modelled references counted apart (the "libc" rows).  First levels,
// and every level before the first shared one, are each thread's own, as
// online; a shared level (Level::shared) sees the threads' references one
// thread after another, in stream order (thread 0's whole stream, then
// thread 1's, ...): the first shard simulates it as it goes, the others
// keep the references that reach it and the merge replays them in order.
#pragma once

#include <atomx/analyzer.hpp>
#include <atomx/cachesim.hpp>
#include <atomx/cachesim_report.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace atomx::analyze {

// perPc's key: a pc of the trace's program K (BlockRun::program), K in
// the bits above the 48 of a user-space address.
inline uint64_t pcKey(size_t program, uint64_t pc) { return uint64_t(program) << 48 | pc; }
inline size_t keyProgram(uint64_t key) { return size_t(key >> 48); }
inline uint64_t keyPc(uint64_t key) { return key & ((uint64_t(1) << 48) - 1); }

// One configuration's counts after the merge: per original pc of each
// program (pcKey: its procedure's symbol and its events), per libc
// function, the switches.
struct CachesimCounts {
  cachesim::report::Events ev{0, 0};
  std::unordered_map<uint64_t, std::pair<const char*, cachesim::report::Row>> perPc;
  std::vector<cachesim::report::Row> libc;  // per libc::kFunctions entry
  uint64_t switches = 0;
  // --merged with the schedule log: per CPU (Consumer::slice), the sum of
  // the program's rows simulated on it (libc's apart, as in the total).
  std::map<int, cachesim::report::Row> perCpu;
};

// The analyser: several hierarchies over one regeneration.  Test hooks
// (must-fail twins of the tests, read when it is made):
// ATOMX_TEST_CACHESIM_FETCH=first-line fetches an instruction that
// straddles two lines in its first line only; ATOMX_TEST_CACHESIM_DATA=
// locked-once counts a locked read-modify-write as one read.
class CachesimAnalyzer : public trace::Analyzer {
 public:
  // `libc` false: library calls' modelled references are ignored (the
  // online tool's --libc none).
  explicit CachesimAnalyzer(std::vector<cachesim::Hierarchy> hierarchies, bool libc = true);
  ~CachesimAnalyzer() override;
  const char* name() const override { return "cachesim"; }
  std::unique_ptr<trace::Consumer> shard(const trace::Shard& shard) override;
  void merge(std::vector<std::unique_ptr<trace::Consumer>>& shards) override;
  // After the merge: per hierarchy, in the order given.
  const std::vector<CachesimCounts>& counts() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// One configuration's outputs, as bytes: its section of the text report,
// its object of the JSON document's "configurations", its cachegrind file.
struct CachesimOutput {
  std::string text, json, cg;
};

struct CachesimRun {
  std::string configFile;  // the configuration (--config) or sweep (--sweep) file
  bool sweep = false;      // spread (configuration x thread) work over the jobs
  unsigned jobs = 0;       // 0: every core
  std::string command;     // the cachegrind files' cmd: line
  bool libc = true;        // simulate library calls' modelled references (--libc model)
  // --merged: one hierarchy fed every thread's references in the trace's
  // merged order (TraceReader::analyzeMerged; docs/trace.md, "Ordering
  // threads and processes"): the private levels (those before the first
  // shared one) one set per CPU the schedule log says the references ran
  // on (Consumer::slice), the shared levels one for all; a trace without
  // the log says no CPU: one set of private levels, as on one CPU.
  bool merged = false;
};

// What every process of a run computes: configurations `which` (indices
// into config.hierarchies) over the trace, their outputs in that order.
// Without `sweep` they share one regeneration; with it they are split
// into groups that run at once, each regenerating the trace, so that
// (group x thread) work keeps `jobs` cores busy.  `threads`: the trace's
// (Summary.threads); returns whether every thread was regenerated to its
// end.
bool simulateConfigurations(const trace::TraceReader& trace, const cachesim::Config& config,
                            const std::vector<size_t>& which, const CachesimRun& run, trace::Progress* progress,
                            std::vector<CachesimOutput>& outputs, uint64_t& threads);

// The results of every configuration, in the file's order: the text report
// to `textTo` ("-": stdout), the JSON document to `jsonTo` ("": none), the
// cachegrind files: without sweep, `cgTo` for the first configuration and
// STEM.NAME.cg for the others (as the online cachesim.cg); with it,
// PREFIX.NAME.cg for each.  Throws atomx::Error when a file cannot be written.
struct CachesimFiles {
  std::string textTo = "-", jsonTo, cgTo;
};
void writeCachesim(const trace::TraceReader& trace, const cachesim::Config& config, const CachesimRun& run,
                   uint64_t threads, const std::vector<CachesimOutput>& outputs, const CachesimFiles& files);

// How the configurations are spread over processes (MPI ranks): this one is
// `rank` of `size`; `gather` hands rank 0 every configuration's outputs in
// the file's order (given this process's, for configurations rank, rank +
// size, ...), and the others an empty list; `agree` gives every process
// the logical and of a flag.  One process: rank 0 of 1.
struct CachesimProcesses {
  int rank = 0, size = 1;
  std::function<std::vector<CachesimOutput>(const std::vector<CachesimOutput>& mine, size_t total)> gather;
  std::function<bool(bool)> agree;
};

// `atomx cachesim`: reads the configuration file (a bad one: atomx::Error,
// one line), opens the trace, simulates this process's share, and rank 0
// writes.  Returns the exit status (1: a thread could not be regenerated
// to its end).
int runCachesim(const std::string& traceDir, const std::string& programFile, const CachesimRun& run,
                const CachesimFiles& files, const CachesimProcesses& processes, trace::Progress* progress);

}  // namespace atomx::analyze
