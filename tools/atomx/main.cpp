// atomx: the command-line front end.
//
//   atomx PROG [INST.c ANAL.c... | -T NAME] -o OUT [options] [-- TOOL ARGS]
//   atomx run -T NAME [TOOL ARGS] -- PROG [ARGS]
//   atomx dump PROG [--proc NAME]
//   atomx dump --slices PROG [--proc NAME] [-v | --table] [--profile JSON]
//   atomx trace [-q] [--data] [--instrument OUT] -o TRACE -- PROG [ARGS]
//   atomx regen TRACE [--blocks | --counts | --summary | --untraced] [--cachegrind-out F] [--binary F] [-j N]
//   atomx analyze TRACE --tool NAME[=FILE],... [-j N]   (src/analyze/Analyzers.h)
//   atomx melt TRACE [--method seed|exact|both] ... (MeltCommand.cpp)
//   atomx ease-report EASE.json... [-o DIR], --diff A B (EaseReport.cpp)
//   atomx end [DUMP | DIR]... (EndCommand.cpp)
//
// Every error is one line on stderr and a non-zero exit status.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <atomx/analyzer.hpp>
#include <atomx/trace.hpp>

#include "analysis/Dump.h"
#include "analyze/Analyzers.h"
#include "driver/Caches.h"
#include "driver/ProgramCache.h"
#include "driver/Profiles.h"
#include "driver/ProgressLine.h"
#include "driver/Record.h"
#include "driver/Rewrite.h"
#include "driver/Run.h"
#include "driver/ScheduleLog.h"
#include "elf/ElfImage.h"
#include "support/Error.h"
#include "trace/Switches.h"
#include "EaseReport.h"
#include "EndCommand.h"
#include "HugePages.h"
#include "CachesimCommand.h"
#include "MeltCommand.h"

namespace {

constexpr const char* kUsage = R"(usage:
  atomx PROG INST.c ANAL.c [ANAL2.c ...] -o OUT [options] [-- TOOL ARGS...]
      Instrument PROG as ATOM did: compile INST (the instrumentation routines,
      .c or .cpp) into a plugin and run its Instrument(argc, argv), compile the
      ANAL files (the analysis routines) into a shared object, and write OUT:
      PROG with the requested calls, which loads the analysis routines by
      itself when it starts (nothing else is needed beside it).  TOOL ARGS
      (after --, or any further argument that is not a source file, object
      or library) reach Instrument as argv[1...].  Headers: <atomx/atom.h>
      (ATOM's C API) and <atomx/atomx.hpp> (typed C++), both documented in
      their comments; docs/instrumenting.md teaches writing a tool.
      --cflags "FLAGS"   compile the tool's files with these too
      --ldflags "FLAGS"  link the analysis object with these too
      X.o X.a X.so -lNAME -LDIR   more for the analysis object's link
      A built tool is kept ($XDG_CACHE_HOME/atomx/tools, else
      ~/.cache/atomx/tools; ATOMX_TOOL_CACHE=DIR or off) and reused while
      every file it was built from (sources, headers, libraries, compilers)
      is unchanged; --report's tool_build says "built" or "reused".
  atomx PROG -T NAME -o OUT [options] [-- TOOL ARGS...]
      The same with a tool shipped with atomx (share/atomx/tools/NAME/, its
      README.md documents its options and output); shipped tools are listed
      at the end.
  atomx run -T NAME [TOOL ARGS...] -- PROG [ARGS...]
  atomx run INST.c ANAL.c... [TOOL ARGS...] -- PROG [ARGS...]
      Instrument PROG (found on PATH like a shell does) into a cache
      ($XDG_CACHE_HOME/atomx/run, else ~/.cache/atomx/run; reused while PROG,
      the tool and atomx are unchanged), run it with ARGS, then print the
      summary each process of a shipped tool wrote (NAME.out, NAME.out.PID)
      to stderr; with a tool of your own, the files written in the working
      directory during the run (by the tool or the program), and the text of
      each short one.  Exits with PROG's status (128+N if signal N killed it).
      ^C and ^\ go to PROG; SIGTERM, SIGHUP, SIGUSR1/2 and SIGALRM sent to
      atomx alone are passed on to PROG, and atomx waits for it.
      --cache-dir DIR    keep instrumented programs in DIR instead
      --output-dir DIR   the tool's files go to DIR (made if need be) instead
                         of the working directory, as Valgrind's --log-file:
                         %p is the process id (a directory per process),
                         %q{VAR} the environment variable VAR, %% a %; the
                         same as running PROG with ATOMX_OUTPUT_DIR=DIR
      --counters MODE    how the tool's inline counters are incremented (below)
      --profile JSON     place the tool's counters by an earlier run (below)
      --end-in-process   run the tool's end in each process as it exits; by
                         default a shipped tool whose analysis runs only at
                         the end (dyninst, ease, pipe, prof) defers it: the
                         processes only count, and each end runs after PROG
                         exits, where its process ended, from the dumps they
                         left in a directory of the run (atomx end)
      --defer-end        defer the end (a tool of your own too: if its end
                         reads only its arguments, counters and the facts),
                         and refuse a tool that calls analysis code sooner
      -q                 print neither atomx's lines nor the summaries
  atomx PROG -o OUT [--poison-original] [--pad-instructions N] [--report FILE] [-q]
      Rewrite PROG, moving every procedure atomx can prove safe into new code,
      and write the result to OUT.  PROG must be an x86-64 ELF executable
      linked with -Wl,--emit-relocs.  With no tool, OUT behaves exactly like
      PROG (the "null tool").
      --poison-original  fill the old bytes of moved procedures with int3, so a
                         missed code reference crashes instead of running old code
      --pad-instructions N  insert N nops (0..64) before every moved instruction:
                         a check that branches, unwind tables and exception
                         call sites still work when code is inserted
      --report FILE      write a JSON report: counts, seconds per phase, and
                         every procedure left in place with the reason
      -q                 print nothing on success
      --counters MODE    (with a tool) how inline counters are incremented:
                         plain (`inc`), atomic (`lock inc`), per-thread (each
                         thread its own copy through %gs, added up at exit) or
                         auto (the default: plain where PROG cannot start
                         threads, per-thread where it can, atomic where it
                         also uses %gs); the summary line says which and why
      --atomic-counters  the same as --counters atomic
      --profile JSON     (with a tool; repeatable, counts summed) an earlier
                         run's block counts, the dyninst or prof tool's JSON
                         for the same PROG: the counters behind exact counts
                         (Counters::count) go where that run ran least; the
                         counts stay exact on any input
      --defer-end        (with a tool whose analysis code runs only at PROG's
                         end: dyninst, ease, prof, pipe; branch where no
                         branch leaves its procedure; refused for another)
                         OUT loads no analysis code: each process writes its
                         counters to atomx-end.PID in its working directory
                         (or in $ATOMX_END_DIR) at exit, and `atomx end` later
                         writes what the tool would have written then, where
                         it would have.  A process costs little more than its
                         counting (no second libc, no report at its exit)
  atomx end [-q] [-j N] [--keep] [DUMP | DIR]...
      Run the deferred ends: for each atomx-end.PID (in DIR, default the
      working directory), the program that wrote it runs again in the
      directory its process ended in, reads the counters back and runs only
      the tool's end, which writes its outputs as the process would have;
      the dump is then removed.
  atomx trace [-q] [-f] [--data] [--no-schedule] [--cache-dir DIR] [--instrument OUT] [--profile JSON]... -o TRACE -- PROG [ARGS...]
      Record an abstract-execution trace: instrument PROG (cached as with
      run) so that it writes a few witness bytes on a minimal set of CFG
      edges, run it with ARGS (its output stays its own; -q silences atomx's
      line), and write TRACE/: a manifest tying the trace to PROG's bytes,
      and one stream per thread.  Exits with PROG's status.  docs/trace.md.
      A whole workload (-f, and whenever atomx cannot instrument PROG
      itself: sh -c 'a | b | c', make -j2): every process PROG starts
      (posix_spawn, system(), vfork+exec too) whose program atomx can
      instrument (linked with relocations, as run needs) is instrumented on
      first use with the same options and runs in place of the original;
      the others (sh, make, stripped programs) run as they are and appear
      in the event log as untraced processes with their command lines
      (regen --untraced).  atomx follows the processes with ptrace and a
      seccomp filter that stops only exec: the programs see their
      instrumented copy as /proc/self/exe and AT_EXECFN, cannot be traced
      by gdb or strace themselves, and run with no_new_privs (setuid bits do
      nothing); each signal they take costs a round trip through atomx (a
      timer every few microseconds starves them: trace such a program alone,
      without -f).  Under strace -f or gdb, atomx cannot follow them: PROG
      alone is traced, as said on stderr (docs/trace.md, "Tracing a whole
      workload").
      -f, --follow       trace the whole workload even though atomx can
                         instrument PROG (PROG runs other programs)
      As root (or with CAP_BPF and CAP_PERFMON) it also logs every context
      switch of the run's threads, TRACE/schedule (regen --switches); else
      one line says why not.  --no-schedule: without it (its eBPF programs
      take some 70 ms to load).
      --data             record data too: the few register values from which
                         every data address of PROG's own code is computed
                         again (docs/trace.md, "Data addresses"); regen then
                         gives each instruction's memory references
      --with FILE        (repeated: INST.c, then ANAL.c...) a tool of your own
                         runs in the same run, its calls beside the trace's
                         stores; --with-arg ARG passes it an argument (how
                         the tests compare a trace with a naive tracer's
                         record of the very same run)
      --instrument OUT   do not run PROG: write the instrumented program to
                         OUT and TRACE's manifest; every process of OUT run
                         with ATOMX_TRACE_DIR=TRACE adds its streams to TRACE
                         (and, without it, runs with the stores discarded)
      --profile JSON     weigh the witness placement with the block counts of
                         an earlier run of PROG (dyninst.json or prof.json of
                         `atomx run -T dyninst|prof`; several are summed):
                         witnesses go where the program ran least
  atomx regen TRACE [--blocks | --counts | --summary | --untraced | --events | --switches]
                    [--cachegrind-out FILE] [--binary FILE] [-j N] [--program FILE] [-q]
                    [--merge [--process PID]... [--thread TID]... [--cpu N]... [--cpus]]
      Regenerate the exact instruction trace of every thread from TRACE and
      the program file alone: one line per executed instruction (`TID PC`,
      PC in hex, original addresses), or per block with --blocks (`TID START
      COUNT PROCEDURE`); a call to code outside the trace (shared libraries)
      is a line `TID call NAME`.  A trace recorded with --data adds each
      instruction's memory references after its line, ` R|W|M ADDR SIZE`
      (read, write, read-modify-write; ADDR hex, run-time), and after a
      call into libc's memory and string functions ` L NAME` and its
      modelled ranges, ` LR|LW ADDR SIZE` (docs/trace.md).  --counts prints
      `PC N` instead: how often each instruction ran, over every thread, by
      address; in a workload's trace per program, each further program's
      lines after a line `program K PATH` (K as in the manifest).
      --cachegrind-out FILE  Ir per function and source line, in cachegrind's
                         format (cg_annotate FILE); a trace with data adds
                         Dr and Dw (Valgrind's counts: a read-modify-write
                         one read, a locked one two); a workload's trace
                         writes a file per program, as cachegrind
                         --trace-children=yes does per process: FILE for
                         the first, FILE.K for program K (2, 3, ...)
      --binary FILE      the instruction stream as binary records ("-":
                         stdout; include/atomx/trace_format.h, AtomxRegen*),
                         with DATA and LIBRARY records in a trace with data;
                         with --merge a SLICE record (thread, CPU) before
                         each slice's records
      -j N               regenerate up to N threads' streams at once (default:
                         1 for a text or binary trace, else the cores, at
                         most 8); the output is the same for every N
      --program FILE     read FILE as the traced program instead of the path
                         the trace names (a saved copy, after the original
                         was rebuilt); it must have the recorded size and hash
      -q                 no progress line (one is shown on a terminal)
      With either and no text option, no text is printed.  The totals line
      goes to stderr (stdout with --summary, which prints nothing else, or
      when only files are written).  Exits 1 if a thread could not be
      regenerated to its end, or left no stream that the event log knows
      (a thread of a killed process that had not filled a buffer: the
      totals line ends `streamless-threads N`); the reason is on stderr.
      --merge            every thread of every process in one sequence, in an
                         order that keeps each thread's and the trace's
                         schedule (docs/trace.md, "Ordering threads and
                         processes"): the same lines, interleaved (a TID is
                         unique in the run; regen --events gives its PID);
                         --process and --thread select (each may repeat);
                         exits 1 if a thread's order is known only in part
                         (named on stderr); --cpus adds a line `cpu N`
                         before each slice (a thread's run between two
                         cuts of the schedule): the CPU it ran on, from
                         the privileged schedule log (-1: unknown, a
                         trace without the log); --cpu N keeps only the
                         slices that ran on CPU N (may repeat)
      --untraced lists the procedures whose instructions the trace does not
      hold (`NAME START END WHY`): calls to them are outside calls; in a
      workload's trace each further program's under a line `program K
      PATH`, then each process whose program was not traced (`process PID
      PATH ARGV...`).
      --events prints the processes' and threads' events in order (`US PID
      TID EVENT [ARG]`, US microseconds since the first): process, thread,
      stream, thread-end, fork, forked, exec, exec-failed, exit, killed;
      in a workload's, program K PATH and untraced PATH ARGV (docs/trace.md).
      --switches lists the privileged schedule log's context switches (a
      trace recorded as root; docs/trace.md), in time order, each placed in
      its thread's path: `NS CPU TID out|in OTHER INDEX PC FLAGS` (NS the
      event log's clock; OTHER the thread that took or left the CPU, 0 none
      of the trace; INDEX the thread's own instructions before the switch, PC
      the original instruction it stopped at, `-` when unknown; FLAGS
      preempted, untraced, inserted, pending, register, exiting, ambiguous
      (a data trace's loop of evaluated predicates: the iteration is not
      known), unreported (switches the kernel did not report came before it
      on its CPU: the runs around it are not known exactly), or `-`).
  atomx analyze TRACE --tool NAME[=FILE][,NAME[=FILE]...] [-j N] [--merge] [--program FILE] [-q]
      Run trace analysers over one regeneration of TRACE: each keeps its
      state per thread's stream (a shard), the shards run on up to N cores
      (default as for regen), and each analyser merges its shards and writes
      its output (to FILE, default stdout) in stream order: the output is
      the same for every N (a progress line on a terminal, unless -q).
      docs/architecture.md, "The analyser slot",
      says how to write one.  --merge: one shard of every thread, in the
      trace's merged order (as regen --merge; an analyser that reports per
      shard, as threads does, reports that one, and a block the schedule
      cuts counts as two runs).  Exits 1 if a thread could
      not be regenerated to its end (or, with --merge, ordered).  The
      analysers:
ANALYZERS
  atomx melt TRACE [--method seed|exact|both] [--threshold N|auto] [--top K]
                   [--max-length N] [--identity address|text] [--json FILE]
      The instruction sequences that make up most of the traced run: the
      coverage table and histogram, Wang and Chiu's melting at a threshold,
      and an exact top-K by length x non-overlapping occurrences
      (atomx melt --help; docs/melting.md).  `atomx run -T melt [OPTIONS]
      -- PROG [ARGS]` traces PROG into a temporary directory and mines it,
      the report on stderr.
  atomx cachesim TRACE (--config FILE | --sweep FILE) [--cachegrind-out FILE|PREFIX]
                       [--json FILE] [--libc model|none] [-o FILE] [-j N] [--program FILE] [-q]
      Simulate caches over the regenerated trace with atomx run -T cachesim's
      simulator and configuration format: misses per level in total, per
      procedure and per source line, as text, JSON and cachegrind files.
      --sweep spreads (configuration x thread) work over -j cores and, under
      mpirun, over the ranks; the results are the same bytes for every -j
      and rank count (atomx cachesim --help; docs/cachesim.md).
  atomx ease-report EASE.json... [-o DIR] [--top N]
      Merge the ease.json files of several runs or programs (atomx run -T
      ease) into one report: DIR/ease.out, ease.json, ease.html (DIR: .).
  atomx ease-report --diff A.json B.json [-o DIR] [--top N]
      What changed from build A to build B, per report and per procedure:
      DIR/ease-diff.out, ease-diff.json (both static or both dynamic).
  atomx cache [--cache-dir DIR] [--clean | --trim SIZE] [-q]
      What atomx keeps between runs: the instrumented programs of run and
      trace ($XDG_CACHE_HOME/atomx/run, else ~/.cache/atomx/run; --cache-dir
      DIR) with their sizes and last use, and the built tools
      ($XDG_CACHE_HOME/atomx/tools or ~/.cache/atomx/tools).  --clean removes
      both; --trim SIZE (K, M or G) removes the least recently used programs
      until they take at most SIZE.  After each new entry, run and trace trim
      the programs to ATOMX_CACHE_MAX (default 1G; 0: no limit).
  atomx dump PROG [--proc NAME]
      Print procedures, basic blocks, instructions (original addresses), CFG
      edges, jump tables, and what could not be analysed.
  atomx dump --slices PROG [--proc NAME] [-v | --table] [--profile JSON]...
      Which data addresses a trace's regenerator can compute (docs/trace.md,
      "Data addresses by slicing"): per procedure atomx moves, its memory
      operands by address source (static, computed, recorded), the sites
      where register values would be recorded (at block entry, after an
      instruction), the registers recorded and the instructions emulated,
      and the values recorded per memory reference (dynamic too with the
      block counts of a dyninst or prof --profile); then the total, and the
      values by where they are recorded (at entry, after calls, after loads,
      after other instructions, recorded addresses).  -v:
      every instruction; --table: the machine-readable form the slices
      oracle reads (tests/oracles/slices).
  atomx --help | --version

environment:
  ATOMX_THREADS=N     threads for the analysis and the layout (default: the
                      cores, at most 8; 1: none).  The output is the same.
  ATOMX_CACHE_MAX=SIZE  the most the instrumented-program cache keeps (K, M
                      or G; default 1G; 0: no limit): least recently used go
  ATOMX_HUGE_PAGES=0  do not start atomx again with a huge-page heap
                      (glibc.malloc.hugetlb; done where the kernel leaves
                      huge pages to madvise; what atomx runs sees the
                      environment atomx was given).
)";

// The usage text with the list of shipped trace analysers in its place.
std::string usageText() {
  std::string usage = kUsage, list;
  for (const atomx::analyze::AnalyzerInfo& a : atomx::analyze::analyzers()) {
    char line[256];
    std::snprintf(line, sizeof line, "        %-10s %s\n", a.name, a.what);
    list += line;
  }
  const size_t at = usage.find("ANALYZERS\n");
  return usage.replace(at, 10, list);
}

// The part of the usage text about one command: from the line that starts
// with `head` to the next command's.
void helpSection(const std::string& head) {
  const std::string usage = usageText();
  size_t from = usage.find("\n" + head);
  if (from == std::string::npos) return void(std::fputs(usage.c_str(), stdout));
  ++from;
  size_t to = from;
  while ((to = usage.find("\n  atomx ", to + 1)) != std::string::npos && usage.compare(to + 1, head.size(), head) == 0) {
  }
  const size_t env = usage.find("\nenvironment:", from);
  to = std::min(to == std::string::npos ? usage.size() : to + 1, env == std::string::npos ? usage.size() : env + 1);
  std::fwrite(usage.data() + from, 1, to - from, stdout);
}

[[noreturn]] void usageError(const std::string& message) {
  std::fprintf(stderr, "atomx: %s (see atomx --help)\n", message.c_str());
  std::exit(2);
}

int runDump(int argc, char** argv) {
  std::string prog, only;
  bool slices = false, verbose = false, table = false;
  std::vector<std::string> profiles;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--proc" && i + 1 < argc) only = argv[++i];
    else if (a == "--proc") usageError("--proc needs a procedure name");
    else if (a == "--slices") slices = true;
    else if (a == "-v") verbose = true;
    else if (a == "--table") table = true;
    else if (a == "--profile" && i + 1 < argc) profiles.push_back(argv[++i]);
    else if (a == "--profile") usageError("--profile needs a file");
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a);
    else if (prog.empty()) prog = a;
    else usageError("more than one program given");
  }
  if (prog.empty()) usageError("dump needs a program");
  if (!slices && (verbose || table || !profiles.empty())) usageError("-v, --table and --profile go with --slices");
  atomx::elf::ElfImage image = atomx::elf::ElfImage::load(prog);
  const auto model = atomx::analysis::analyzeProgram(image);
  if (!only.empty() && std::none_of(model->program.procs.begin(), model->program.procs.end(),
                                    [&](const atomx::ir::Procedure& p) { return p.name == only; })) {
    std::fprintf(stderr, "atomx: dump: %s has no procedure named '%s' (atomx dump %s lists them all)\n", prog.c_str(),
                 only.c_str(), prog.c_str());
    return 1;
  }
  if (slices) {
    const atomx::analysis::BlockProfile profile =
        profiles.empty() ? atomx::analysis::BlockProfile() : atomx::driver::readBlockProfile(profiles);
    atomx::analysis::SliceDumpOptions o{only, verbose, table, profiles.empty() ? nullptr : &profile};
    atomx::analysis::dumpSlices(*model, std::cout, o);
    return 0;
  }
  atomx::analysis::dumpProgram(*model, std::cout, only);
  return 0;
}

// The options that build a tool: --cflags FLAGS, --ldflags FLAGS, and the
// link inputs of its analysis object (NAME.o, NAME.a, NAME.so, -lNAME,
// -LDIR).  True when argv[i] was one (i moved past its value).
bool buildOption(atomx::instrument::ToolSources& tool, int argc, char** argv, int& i) {
  const std::string a = argv[i];
  if (a == "--cflags" || a == "--ldflags") {
    if (i + 1 >= argc) usageError(a + " needs a value (several flags in one argument: --cflags \"-O3 -DN=4\")");
    std::vector<std::string> words = atomx::instrument::splitFlags(argv[++i]);
    std::vector<std::string>& to = a == "--cflags" ? tool.cflags : tool.libraries;
    to.insert(to.end(), words.begin(), words.end());
    return true;
  }
  if (!atomx::instrument::isLinkInput(a)) return false;
  tool.libraries.push_back(a);
  return true;
}

int runRewrite(int argc, char** argv) {
  std::string prog, out, reportPath;
  atomx::instrument::ToolSources tool;
  std::vector<std::string> toolArgs;
  bool quiet = false, shipped = false, countersGiven = false, deferEnd = false;
  atomx::rewrite::RewriteOptions options;
  std::optional<atomx::instrument::CounterMode> counters;
  std::vector<std::string> profileFiles;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) out = argv[++i];
    else if (a == "--profile" && i + 1 < argc) profileFiles.push_back(argv[++i]);
    else if (a == "--profile") usageError("--profile needs the JSON of the dyninst or prof tool");
    else if (a == "--poison-original") options.poisonOriginal = true;
    else if (a == "--defer-end") deferEnd = true;
    else if (a == "--atomic-counters") counters = atomx::instrument::CounterMode::Atomic, countersGiven = true;
    else if (a == "--counters" && i + 1 < argc) counters = atomx::driver::counterMode(argv[++i]), countersGiven = true;
    else if (a == "--counters") usageError("--counters needs plain, atomic, per-thread or auto");
    else if (a == "--report" && i + 1 < argc) reportPath = argv[++i];
    else if (a == "--pad-instructions" && i + 1 < argc) {
      const std::string n = argv[++i];
      if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) > 64)
        usageError("--pad-instructions needs a number from 0 to 64");
      options.padInstructions = uint32_t(std::stoi(n));
    }
    else if (a == "--pad-instructions") usageError("--pad-instructions needs a number from 0 to 64");
    else if (a == "-o" || a == "--report") usageError(a + " needs a file name");
    else if (a == "-q") quiet = true;
    else if (a == "-T" && i + 1 < argc) {
      if (!tool.instrumentation.empty()) usageError("-T and tool source files do not combine");
      tool = atomx::instrument::shippedTool(argv[++i]);
      shipped = true;
    }
    else if (a == "-T") usageError("-T needs a tool name");
    else if (a == "--") {
      toolArgs.insert(toolArgs.end(), argv + i + 1, argv + argc);
      break;
    }
    else if ((!prog.empty() || a.rfind("--", 0) == 0) && buildOption(tool, argc, argv, i)) continue;  // PROG comes first
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a);
    else if (atomx::instrument::isSourceFile(a) && toolArgs.empty()) {
      if (shipped) usageError("-T and tool source files do not combine");
      if (tool.instrumentation.empty()) tool.instrumentation = a;
      else tool.analysis.push_back(a);
    }
    else if (prog.empty()) prog = a;
    else if (!tool.instrumentation.empty()) toolArgs.push_back(a);
    else usageError("unexpected argument " + a);
  }
  if (prog.empty()) usageError("no program given");
  if (out.empty()) usageError("no output file given (-o OUT)");
  if (!tool.instrumentation.empty() && tool.analysis.empty())
    usageError("an instrumentation file needs analysis files too: atomx PROG INST.c ANAL.c -o OUT");
  if (!tool.instrumentation.empty() && options.padInstructions)
    usageError("--pad-instructions is a check mode of the plain rewrite; it does not combine with a tool");
  if (tool.instrumentation.empty() && !toolArgs.empty()) usageError("tool arguments given, but no tool");
  if (tool.instrumentation.empty() && (!tool.cflags.empty() || !tool.libraries.empty()))
    usageError("--cflags, --ldflags, objects and libraries are for a tool's analysis object, but no tool is given");

  if (tool.instrumentation.empty() && countersGiven) usageError("--counters is about a tool's counters, but no tool is given");
  if (tool.instrumentation.empty() && !profileFiles.empty())
    usageError("--profile places a tool's counters, but no tool is given");
  if (tool.instrumentation.empty() && deferEnd) usageError("--defer-end is about a tool's end, but no tool is given");
  atomx::driver::RewriteRequest request;
  request.prog = prog;
  request.out = out;
  request.tool = tool;
  request.toolArgs = toolArgs;
  request.options = options;
  request.counters = counters;
  request.profile = atomx::driver::readBlockProfile(profileFiles);
  request.reportPath = reportPath;
  request.quiet = quiet;
  if (deferEnd) request.deferEnd = atomx::instrument::SessionOptions::DeferEnd::Required;
  atomx::driver::rewriteProgram(request);
  return 0;
}

// --- atomx run ---------------------------------------------------------

int runRun(int argc, char** argv) {
  atomx::instrument::ToolSources tool;
  std::string shippedName, cacheDir, outputDir;
  std::vector<std::string> toolArgs;
  bool quiet = false;
  // The end of a shipped tool that calls nothing while the program runs is
  // deferred unless --end-in-process; --defer-end insists (an error for
  // other tools).  A tool of your own is deferred only with --defer-end: its
  // end might read what a replay cannot give it (the program's memory, the
  // process's resource usage).
  using DeferEnd = atomx::instrument::SessionOptions::DeferEnd;
  std::optional<DeferEnd> endChoice;
  std::string countersName = "auto";
  std::vector<std::string> profileFiles;
  int i = 2;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "-T" && i + 1 < argc) {
      if (!tool.instrumentation.empty()) usageError("-T and tool source files do not combine");
      shippedName = argv[++i];
      tool = atomx::instrument::shippedTool(shippedName);
    }
    else if (a == "-T") usageError("-T needs a tool name");
    else if (a == "--cache-dir" && i + 1 < argc) cacheDir = argv[++i];
    else if (a == "--cache-dir") usageError("--cache-dir needs a directory");
    else if (a == "--output-dir" && i + 1 < argc && toolArgs.empty()) outputDir = argv[++i];
    else if (a == "--output-dir" && toolArgs.empty()) usageError("--output-dir needs a directory (%p: the process id)");
    else if (a == "--counters" && i + 1 < argc && toolArgs.empty()) countersName = argv[++i];
    else if (a == "--counters" && toolArgs.empty()) usageError("--counters needs plain, atomic, per-thread or auto");
    else if (a == "--profile" && i + 1 < argc && toolArgs.empty()) profileFiles.push_back(argv[++i]);
    else if (a == "--profile" && toolArgs.empty()) usageError("--profile needs the JSON of the dyninst or prof tool");
    else if (a == "-q") quiet = true;
    else if (a == "--defer-end" && toolArgs.empty()) endChoice = DeferEnd::Required;
    else if (a == "--end-in-process" && toolArgs.empty()) endChoice = DeferEnd::No;
    else if (toolArgs.empty() && buildOption(tool, argc, argv, i)) continue;
    else if (atomx::instrument::isSourceFile(a) && toolArgs.empty() && shippedName.empty()) {
      if (tool.instrumentation.empty()) tool.instrumentation = a;
      else tool.analysis.push_back(a);
    }
    else if (tool.instrumentation.empty()) usageError("run needs a tool first (-T NAME, or INST.c ANAL.c) before " + a);
    else toolArgs.push_back(a);
  }
  if (tool.instrumentation.empty()) usageError("run needs a tool: atomx run -T NAME -- PROG [ARGS]");
  if (tool.analysis.empty()) usageError("an instrumentation file needs analysis files too: atomx run INST.c ANAL.c -- PROG");
  if (i + 1 >= argc) usageError("run needs a program after --: atomx run -T NAME -- PROG [ARGS]");
  atomx::driver::RunRequest request;
  request.tool = tool;
  request.shippedName = shippedName;
  request.cacheDir = cacheDir;
  request.toolArgs = toolArgs;
  request.counters = countersName;
  request.profileFiles = profileFiles;
  request.deferEnd = endChoice.value_or(shippedName.empty() ? DeferEnd::No : DeferEnd::IfPossible);
  request.quiet = quiet;
  request.outputDir = outputDir;
  request.argv.assign(argv + i + 1, argv + argc);
  return atomx::driver::runWithTool(request);
}

// --- atomx trace / atomx regen -----------------------------------------

int runTrace(int argc, char** argv) {
  std::string dir, cacheDir, instrumentTo;
  std::vector<std::string> profileFiles;
  bool quiet = false, data = false, follow = false, schedule = true;
  std::vector<std::string> withTool, withArgs;
  int i = 2;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      helpSection("  atomx trace ");
      std::puts(atomx::driver::scheduleLogBuiltIn()
                    ? "\nSchedule log: built in (as root: docs/trace.md, \"The privileged schedule log\")"
                    : "\nSchedule log: not built in (no libbpf, clang or bpftool at build time: docs/DEPENDENCIES.md)");
      return 0;
    }
    if (a == "--data") {
      data = true;
      continue;
    }
    if (a == "-f" || a == "--follow") {
      follow = true;
      continue;
    }
    if (a == "--no-schedule") {
      schedule = false;
      continue;
    }
    if (a == "--with" || a == "--with-arg") {
      if (i + 1 >= argc) usageError(a + " needs a file" + (a == "--with" ? "" : " (an argument)"));
      (a == "--with" ? withTool : withArgs).push_back(argv[++i]);
      continue;
    }
    if (a == "-o" && i + 1 < argc) dir = argv[++i];
    else if (a == "-o") usageError("-o needs a directory");
    else if (a == "--instrument" && i + 1 < argc) instrumentTo = argv[++i];
    else if (a == "--instrument") usageError("--instrument needs an output file");
    else if (a == "--profile" && i + 1 < argc) profileFiles.push_back(argv[++i]);
    else if (a == "--profile") usageError("--profile needs the JSON of the dyninst or prof tool");
    else if (a == "--cache-dir" && i + 1 < argc) cacheDir = argv[++i];
    else if (a == "--cache-dir") usageError("--cache-dir needs a directory");
    else if (a == "-q") quiet = true;
    else usageError("unknown option " + a + " (atomx trace [-q] [-f] [--data] [--no-schedule] [--instrument OUT] [--profile JSON] -o DIR -- PROG [ARGS])");
  }
  if (dir.empty()) usageError("trace needs an output directory: atomx trace -o DIR -- PROG [ARGS]");
  if (i + 1 >= argc) usageError("trace needs a program after --: atomx trace -o DIR -- PROG [ARGS]");
  if (!instrumentTo.empty() && i + 2 < argc) usageError("--instrument does not run PROG: give no ARGS");
  atomx::driver::RecordRequest request;
  request.dir = dir;
  request.cacheDir = cacheDir;
  request.instrumentTo = instrumentTo;
  request.profileFiles = profileFiles;
  request.quiet = quiet;
  request.data = data;
  request.follow = follow;
  if (!instrumentTo.empty() && follow) usageError("--instrument runs nothing: no --follow");
  request.schedule = schedule;
  if (withTool.size() == 1) usageError("--with needs an instrumentation file and at least one analysis file");
  request.withTool = withTool;
  request.withArgs = withArgs;
  request.argv.assign(argv + i + 1, argv + argc);
  return atomx::driver::recordTrace(request);
}

// -j N or -jN: the shards (threads' streams) regenerated at once.  True
// when argv[i] was one (i moved past its value).
bool jobsArgument(int argc, char** argv, int& i, std::optional<unsigned>& jobs) {
  const std::string a = argv[i];
  if (a.rfind("-j", 0) != 0) return false;
  if (a == "-j" && i + 1 >= argc) usageError("-j needs a number of jobs");
  const std::string v = a == "-j" ? argv[++i] : a.substr(2);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < 1 || n > 256) usageError("-j needs a number of jobs from 1 to 256, not '" + v + "'");
  jobs = unsigned(n);
  return true;
}

// Runs `analyzers` over the trace in `dir`; by default on every core unless
// one of them writes a trace as it goes (text, blocks, binary: their shards
// would be set aside in temporary files to keep the order).
atomx::trace::Summary analyzeTrace(const atomx::trace::TraceReader& trace,
                                   const std::vector<std::unique_ptr<atomx::trace::Analyzer>>& analyzers,
                                   std::optional<unsigned> jobs, const char* what, bool quiet) {
  std::vector<atomx::trace::Analyzer*> all;
  bool streams = false;
  for (const auto& a : analyzers) {
    all.push_back(a.get());
    const std::string n = a->name();
    streams |= n == "text" || n == "blocks" || n == "binary";
  }
  // No progress line between the lines of a trace printed on the terminal.
  atomx::driver::ProgressLine line(what, quiet || (streams && isatty(1)));
  return trace.analyze(all, jobs.value_or(streams ? 1 : 0), line.progress());
}

// --merge: the analysers over every selected thread in the schedule's order;
// the threads it orders only in part are named on stderr.
atomx::trace::Summary mergedTrace(const atomx::trace::TraceReader& trace,
                                  const std::vector<std::unique_ptr<atomx::trace::Analyzer>>& analyzers,
                                  const atomx::trace::TraceReader::Selection& select) {
  std::vector<atomx::trace::Analyzer*> all;
  for (const auto& a : analyzers) all.push_back(a.get());
  const atomx::trace::Summary s = trace.analyzeMerged(all, select);
  for (const std::string& p : s.scheduleProblems) std::fprintf(stderr, "atomx regen --merge: %s\n", p.c_str());
  for (const std::string& w : s.scheduleWarnings) std::fprintf(stderr, "atomx regen --merge: warning: %s\n", w.c_str());
  return s;
}

// --process PID, --thread TID.
int idArgument(const std::string& option, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < 1 || n > INT32_MAX) usageError(option + " needs a process or thread id, not '" + v + "'");
  return int(n);
}

constexpr const char* kRegenUsage =
    "atomx regen TRACE [--blocks | --counts | --summary | --untraced | --events | --switches] [--cachegrind-out FILE] [--binary FILE] [-j N] "
    "[--program FILE] [--merge [--process PID] [--thread TID] [--cpu N] [--cpus]]";

int runRegen(int argc, char** argv) {
  std::string dir, cachegrindOut, binaryOut, program;
  bool blocks = false, summaryOnly = false, untraced = false, counts = false, events = false, switches = false, quiet = false;
  bool merge = false, cpus = false;
  atomx::trace::TraceReader::Selection select;
  std::optional<unsigned> jobs;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") return helpSection("  atomx regen "), 0;
    if (a == "--merge") merge = true;
    else if (a == "--cpus") cpus = true;
    else if (a == "--cpu" && i + 1 < argc) {
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || n < -1 || n > 65535) usageError(std::string("--cpu needs a CPU number, not '") + argv[i] + "'");
      select.cpus.push_back(int(n));
    } else if (a == "--cpu") usageError("--cpu needs a CPU number");
    else if ((a == "--process" || a == "--thread") && i + 1 < argc)
      (a == "--process" ? select.processes : select.threads).push_back(idArgument(a, argv[++i]));
    else if (a == "--process" || a == "--thread") usageError(a + " needs an id");
    else if (a == "--blocks") blocks = true;
    else if (a == "-q") quiet = true;
    else if (a == "--summary") summaryOnly = true;
    else if (a == "--untraced") untraced = true;
    else if (a == "--counts") counts = true;
    else if (a == "--events") events = true;
    else if (a == "--switches") switches = true;
    else if (a == "--program" && i + 1 < argc) program = argv[++i];
    else if (a == "--program") usageError("--program needs the traced program's file");
    else if (a == "--cachegrind-out" && i + 1 < argc) cachegrindOut = argv[++i];
    else if (a == "--binary" && i + 1 < argc) binaryOut = argv[++i];
    else if (a == "--cachegrind-out" || a == "--binary") usageError(a + " needs a file");
    else if (jobsArgument(argc, argv, i, jobs)) continue;
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a + " (" + kRegenUsage + ")");
    else if (dir.empty()) dir = a;
    else usageError("more than one trace directory given");
  }
  if (dir.empty()) usageError(std::string("regen needs a trace directory (") + kRegenUsage + ")");
  if ((untraced || events || switches) &&
      (untraced + events + switches + blocks + summaryOnly + counts > 1 || !cachegrindOut.empty() || !binaryOut.empty()))
    usageError(std::string(untraced ? "--untraced" : events ? "--events" : "--switches") + " combines with no other output");
  if (switches) {
    const atomx::trace::TraceReader trace(dir, program);
    for (const atomx::trace::SwitchPoint& p : atomx::trace::switchPoints(trace)) std::printf("%s\n", atomx::trace::switchLine(p).c_str());
    return 0;
  }
  if (events) {
    const std::vector<atomx::trace::Event> log = atomx::trace::events(dir);
    if (log.empty()) throw atomx::Error(dir + ": the trace has no event log");
    for (const atomx::trace::Event& e : log)
      std::printf("%llu %d %d %s%s%s\n", static_cast<unsigned long long>((e.ns - log.front().ns) / 1000), e.pid, e.thread,
                  e.kind.c_str(), e.detail.empty() ? "" : " ", e.detail.c_str());
    return 0;
  }
  if (untraced) {
    // The first program's procedures as a trace of one program lists them;
    // a workload's further programs each under a `program K PATH` line;
    // then the processes whose programs were not traced.
    int shown = 1;
    for (const atomx::trace::UntracedProcedure& p : atomx::trace::untracedProcedures(dir, program)) {
      if (p.programIndex != shown) std::printf("program %d %s\n", shown = p.programIndex, p.programFile.c_str());
      std::printf("%s %llx %llx %s\n", p.name.c_str(), static_cast<unsigned long long>(p.start),
                  static_cast<unsigned long long>(p.end), p.why.c_str());
    }
    for (const atomx::trace::UntracedProcess& p : atomx::trace::untracedProcesses(dir)) {
      std::printf("process %d", p.pid);
      for (const std::string& w : p.words) std::printf(" %s", w.c_str());
      std::printf("\n");
    }
    return 0;
  }
  if (int(blocks) + int(summaryOnly) + int(counts) > 1) usageError("--blocks, --counts and --summary do not combine");
  if (binaryOut == "-" && (blocks || counts)) usageError("--binary - and text on stdout do not combine");
  // The text trace is the output when no other is asked for.
  const bool text = blocks || (!summaryOnly && !counts && cachegrindOut.empty() && binaryOut.empty());
  std::string list = "problems";
  if (cpus && (!merge || !text || blocks)) usageError("--cpus adds lines to --merge's text trace (not --blocks)");
  if (text && !cpus) list += blocks ? ",blocks" : ",text";
  if (!binaryOut.empty()) list += ",binary=" + binaryOut;
  if (counts) list += ",counts";
  if (!cachegrindOut.empty()) list += ",cachegrind=" + cachegrindOut;
  const atomx::trace::TraceReader trace(dir, program);
  auto analyzers = atomx::analyze::makeAnalyzers(list, trace.programs(), "atomx regen " + dir,
                                                 trace.hasData());
  if (cpus) analyzers.push_back(atomx::analyze::makeCpuTextAnalyzer("-"));
  if (!merge && !(select.processes.empty() && select.threads.empty() && select.cpus.empty()))
    usageError("--process, --thread and --cpu select in --merge");
  const atomx::trace::Summary s = merge ? mergedTrace(trace, analyzers, select) : analyzeTrace(trace, analyzers, jobs, "regen", quiet);
  std::fflush(stdout);
  std::fprintf(summaryOnly || (binaryOut != "-" && !text && !counts) ? stdout : stderr, "%s\n",
               atomx::analyze::summaryLine(s).c_str());
  return s.incompleteThreads || !s.scheduleProblems.empty() ? 1 : 0;
}

constexpr const char* kAnalyzeUsage = "atomx analyze TRACE --tool NAME[=FILE][,NAME[=FILE]...] [-j N] [--merge] [--program FILE]";

int runAnalyze(int argc, char** argv) {
  std::string dir, list, program;
  std::optional<unsigned> jobs;
  bool quiet = false, merge = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") return helpSection("  atomx analyze "), 0;
    if (a == "-q") quiet = true;
    else if (a == "--merge") merge = true;
    else if ((a == "--tool" || a == "-t") && i + 1 < argc) list += (list.empty() ? "" : ",") + std::string(argv[++i]);
    else if (a.rfind("--tool=", 0) == 0) list += (list.empty() ? "" : ",") + a.substr(7);
    else if (a == "--tool" || a == "-t") usageError(a + " needs analyser names (atomx analyze --help lists them)");
    else if (a == "--program" && i + 1 < argc) program = argv[++i];
    else if (a == "--program") usageError("--program needs the traced program's file");
    else if (jobsArgument(argc, argv, i, jobs)) continue;
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a + " (" + kAnalyzeUsage + ")");
    else if (dir.empty()) dir = a;
    else usageError("more than one trace directory given");
  }
  if (dir.empty()) usageError(std::string("analyze needs a trace directory (") + kAnalyzeUsage + ")");
  if (list.empty()) usageError(std::string("analyze needs --tool NAME (") + kAnalyzeUsage + "; atomx analyze --help lists them)");
  atomx::analyze::parseAnalyzerList("problems," + list);  // a bad list before the trace is read
  const atomx::trace::TraceReader trace(dir, program);
  const auto analyzers =
      atomx::analyze::makeAnalyzers("problems," + list, trace.programs(), "atomx analyze " + dir,
                                    trace.hasData());
  const atomx::trace::Summary s = merge ? mergedTrace(trace, analyzers, {}) : analyzeTrace(trace, analyzers, jobs, "analyze", quiet);
  return s.incompleteThreads || !s.scheduleProblems.empty() ? 1 : 0;
}

int runCache(int argc, char** argv) {
  std::string cacheDir;
  bool clean = false, quiet = false;
  std::optional<uint64_t> trimTo;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return helpSection("  atomx cache "), 0;
    if (a == "--cache-dir" && i + 1 < argc) cacheDir = argv[++i];
    else if (a == "--clean") clean = true;
    else if (a == "--trim" && i + 1 < argc) trimTo = atomx::driver::parseSize(argv[++i]);
    else if (a == "-q") quiet = true;
    else if (a == "--cache-dir" || a == "--trim") usageError(a + " needs a value");
    else usageError("unknown option " + a + " (atomx cache [--cache-dir DIR] [--clean | --trim SIZE] [-q])");
  }
  if (clean && trimTo) usageError("--clean and --trim do not combine");
  if (clean || trimTo) atomx::driver::cleanCaches(cacheDir, trimTo, quiet);
  else atomx::driver::listCaches(cacheDir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usageText().c_str(), stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    std::fputs(usageText().c_str(), stdout);
    std::puts("\nshipped tools (atomx -T NAME; share/atomx/tools/NAME/README.md):");
    for (const atomx::instrument::ShippedTool& t : atomx::instrument::shippedTools())
      std::printf("  %-9s %s\n", t.name.c_str(), t.summary.c_str());
    std::printf("  %-9s %s\n", "melt",
                "(atomx run -T melt only) trace the program and mine the instruction sequences that make up most of "
                "the run (atomx melt --help)");
    return 0;
  }
  if (first == "--version") {
    std::puts("atomx 0.1");
    return 0;
  }
  atomx::cli::startWithHugePageHeap(argv);
  try {
    if (first == "dump") return runDump(argc, argv);
    if (first == "run" && argc > 3 && std::strcmp(argv[2], "-T") == 0 && std::strcmp(argv[3], "melt") == 0)
      return atomx::cli::runMeltOnRun(argc, argv);
    if (first == "run") return runRun(argc, argv);
    if (first == "trace") return runTrace(argc, argv);
    if (first == "regen") return runRegen(argc, argv);
    if (first == "analyze") return runAnalyze(argc, argv);
    if (first == "cache") return runCache(argc, argv);
    if (first == "melt") return atomx::cli::runMelt(argc, argv);
    if (first == "cachesim") return atomx::cli::runCachesim(argc, argv);
    if (first == "ease-report") return atomx::cli::runEaseReport(argc, argv);
    if (first == "end") return atomx::cli::runEnd(argc, argv);
    return runRewrite(argc, argv);
  } catch (const atomx::InternalError& e) {
    std::fprintf(stderr, "atomx: internal error: %s\n", e.what());
    return 3;
  } catch (const atomx::UsageError& e) {
    usageError(e.what());
  } catch (const atomx::Error& e) {
    std::fprintf(stderr, "atomx: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "atomx: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Not an atomx::Error: a bug in atomx, but still one line, not an abort.
    std::fprintf(stderr, "atomx: internal error: %s\n", e.what());
    return 3;
  }
}
