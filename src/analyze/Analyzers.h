// The trace analysers shipped with atomx (include/atomx/analyzer.hpp):
// what `atomx regen` writes and `atomx analyze --tool NAME` runs.  Each
// keeps its state per shard (a thread's stream), merges the shards in
// stream order and writes its output there, so its bytes do not depend on
// how many jobs ran (tests/trace, analyze.jobs_identical).
//
//   text        one line per executed instruction: `TID PC` (hex, original
//               addresses); `TID call NAME` for a call outside the trace,
//               `TID signal|sigreturn SIGNO PC` for a handler's start/end
//   blocks      one line per executed block: `TID START COUNT PROCEDURE`
//               (`... continued` for the rest of a block a signal cut)
//   counts      `PC N` lines, by address: executions per instruction, over
//               every thread; per program (a workload's further programs
//               each after a line `program K PATH`)
//   cachegrind  Ir per function and source line, in cachegrind's format
//               (cg_annotate FILE), C++ names demangled as cachegrind does;
//               a file per program (FILE, then FILE.K for program K)
//   binary      the instruction stream as binary records
//               (include/atomx/trace_format.h, AtomxRegen*)
//   procs       instructions per procedure, most first, with shares
//   threads     per thread: blocks, instructions, outside calls, signals,
//               and where its regeneration stopped if it did
//   summary     the totals line `atomx regen --summary` prints
//   problems    a line on stderr for each thread regenerated only up to a
//               problem (regen and analyze always run it)
#pragma once

#include <atomx/analyzer.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace atomx::analyze {

struct AnalyzerInfo {
  const char* name;
  const char* what;  // one line for --help
};
// Every shipped analyser, in the order --help lists them.
const std::vector<AnalyzerInfo>& analyzers();

// The analysers a list names: "NAME[=FILE],NAME[=FILE],..." (FILE: where
// its output goes, default stdout).  `programs` names the trace's programs
// (TraceReader::programs: the counts' `program K PATH` lines, each
// cachegrind file's source lines and cmd: line, `PROGRAM (HOW)`), `how`
// what made the output ("atomx regen DIR"); `data`: the trace has data
// (TraceReader::hasData: the cachegrind file has Dr and Dw too).  Throws
// atomx::Error naming an unknown analyser or a bad list.
std::vector<std::unique_ptr<trace::Analyzer>> makeAnalyzers(const std::string& list, const std::vector<std::string>& programs,
                                                            const std::string& how, bool data = false);

// The list's (name, destination) pairs, checked (known names, each once,
// at most one trace output on stdout) without making anything; throws
// atomx::UsageError.
std::vector<std::pair<std::string, std::string>> parseAnalyzerList(const std::string& list);

// One analyser by name, its output to `to` ("-": stdout).
std::unique_ptr<trace::Analyzer> makeAnalyzer(const std::string& name, const std::string& to,
                                              const std::vector<std::string>& programs, const std::string& how,
                                              bool data = false);

// The text analyser's trace with a line `cpu N` before each slice of a
// merged stream (Consumer::slice: a run of one thread between two cuts of
// the schedule, on CPU N; -1: unknown): `atomx regen TRACE --merge --cpus`.
std::unique_ptr<trace::Analyzer> makeCpuTextAnalyzer(const std::string& to);

// The totals line (`threads N blocks N instructions N ...`).
std::string summaryLine(const trace::Summary& s);

// The program whose counts a block of program `program` (BlockRun::program)
// goes to: its own.  ATOMX_TEST_COUNTS_ONE_PROGRAM=1 (the must-fail twin
// of trace.workload.counts and trace.workload.cachesim): the first, as
// before counts were kept per program.
size_t countedProgram(size_t program);

}  // namespace atomx::analyze
