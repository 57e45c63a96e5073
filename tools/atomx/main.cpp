// atomx: the command-line front end.
//
//   atomx PROG [INST.c ANAL.c... | -T NAME] -o OUT [options] [-- TOOL ARGS]
//   atomx run -T NAME [TOOL ARGS] -- PROG [ARGS]
//   atomx dump PROG [--proc NAME]
//   atomx trace [-q] [--instrument OUT] -o TRACE -- PROG [ARGS]
//   atomx regen TRACE [--blocks | --counts | --summary | --untraced] [--cachegrind-out F] [--binary F]
//   atomx melt TRACE [--method seed|exact|both] ... (MeltCommand.cpp)
//   atomx ease-report EASE.json... [-o DIR] (EaseReport.cpp)
//   atomx end [DUMP | DIR]... (EndCommand.cpp)
//
// Every error is one line on stderr and a non-zero exit status.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <filesystem>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <atomx/trace.hpp>
#include <runtime/abi.h>
#include <atomx/trace_format.h>
#include <nlohmann/json.hpp>

#include "analysis/Dump.h"
#include "elf/ElfImage.h"
#include "elf/OutputFile.h"
#include "instrument/Session.h"
#include "instrument/ToolBuild.h"
#include "rewrite/Report.h"
#include "rewrite/Rewriter.h"
#include "support/Error.h"
#include "support/Fnv.h"
#include "support/Hex.h"
#include "support/SearchPath.h"
#include "trace/TraceFiles.h"
#include "EaseReport.h"
#include "EndCommand.h"
#include "HugePages.h"
#include "MeltCommand.h"
#include "RegenOutputs.h"

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
      --cache-dir DIR    keep instrumented programs in DIR instead
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
  atomx trace [-q] [--cache-dir DIR] [--instrument OUT] [--profile JSON]... -o TRACE -- PROG [ARGS...]
      Record an abstract-execution trace: instrument PROG (cached as with
      run) so that it writes a few witness bytes on a minimal set of CFG
      edges, run it with ARGS (its output stays its own; -q silences atomx's
      line), and write TRACE/: a manifest tying the trace to PROG's bytes,
      and one stream per thread.  Exits with PROG's status.  docs/trace.md.
      --instrument OUT   do not run PROG: write the instrumented program to
                         OUT and TRACE's manifest; every process of OUT run
                         with ATOMX_TRACE_DIR=TRACE adds its streams to TRACE
                         (and, without it, runs with the stores discarded)
      --profile JSON     weigh the witness placement with the block counts of
                         an earlier run of PROG (dyninst.json or prof.json of
                         `atomx run -T dyninst|prof`; several are summed):
                         witnesses go where the program ran least
  atomx regen TRACE [--blocks | --counts | --summary | --untraced | --events]
                    [--cachegrind-out FILE] [--binary FILE]
      Regenerate the exact instruction trace of every thread from TRACE and
      the program file alone: one line per executed instruction (`TID PC`,
      PC in hex, original addresses), or per block with --blocks (`TID START
      COUNT PROCEDURE`); a call to code outside the trace (shared libraries)
      is a line `TID call NAME`.  --counts prints `PC N` instead: how often
      each instruction ran, over every thread, by address.
      --cachegrind-out FILE  Ir per function and source line, in cachegrind's
                         format (cg_annotate FILE)
      --binary FILE      the instruction stream as binary records ("-":
                         stdout; include/atomx/trace_format.h, AtomxRegen*)
      With either and no text option, no text is printed.  The totals line
      goes to stderr (stdout with --summary, which prints nothing else, or
      when only files are written).  Exits 1 if a thread could not be
      regenerated to its end (the reason is on stderr).  --untraced lists
      the procedures whose instructions the trace does not hold (`NAME START
      END WHY`): calls to them are outside calls.  --events prints the
      processes' and threads' events in order (`US PID TID EVENT [ARG]`, US
      microseconds since the first): process, thread, stream, thread-end,
      fork, forked, exec, exec-failed, exit, killed (docs/trace.md).
  atomx melt TRACE [--method seed|exact|both] [--threshold N|auto] [--top K]
                   [--max-length N] [--identity address|text] [--json FILE]
      The instruction sequences that make up most of the traced run: the
      coverage table and histogram, Wang and Chiu's melting at a threshold,
      and an exact top-K by length x non-overlapping occurrences
      (atomx melt --help; docs/melting.md).  `atomx run -T melt [OPTIONS]
      -- PROG [ARGS]` traces PROG into a temporary directory and mines it,
      the report on stderr.
  atomx ease-report EASE.json... [-o DIR] [--top N]
      Merge the ease.json files of several runs or programs (atomx run -T
      ease) into one report: DIR/ease.out, ease.json, ease.html (DIR: .).
  atomx dump PROG [--proc NAME]
      Print procedures, basic blocks, instructions (original addresses), CFG
      edges, jump tables, and what could not be analysed.
  atomx --help | --version

environment:
  ATOMX_THREADS=N     threads for the analysis and the layout (default: the
                      cores, at most 8; 1: none).  The output is the same.
  ATOMX_HUGE_PAGES=0  do not start atomx again with a huge-page heap
                      (glibc.malloc.hugetlb; done where the kernel leaves
                      huge pages to madvise; what atomx runs sees the
                      environment atomx was given).
)";

[[noreturn]] void usageError(const std::string& message) {
  std::fprintf(stderr, "atomx: %s (see atomx --help)\n", message.c_str());
  std::exit(2);
}

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable) {
  atomx::elf::writeOutputFile(path, bytes, executable);
}

// The rewritten program: what atomx did not change is copied from the input,
// in the kernel, while the rewrite runs.
void writeRewritten(const std::string& path, atomx::instrument::Session& session) {
  atomx::elf::OutputFile output(path, true, session.inputPath());
  const atomx::elf::PatchedFile file = session.run();
  session.phases().time("writeFile", [&] { output.finish(file); });
}

int runDump(int argc, char** argv) {
  std::string prog, only;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--proc" && i + 1 < argc) only = argv[++i];
    else if (a == "--proc") usageError("--proc needs a procedure name");
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a);
    else if (prog.empty()) prog = a;
    else usageError("more than one program given");
  }
  if (prog.empty()) usageError("dump needs a program");
  atomx::elf::ElfImage image = atomx::elf::ElfImage::load(prog);
  atomx::analysis::dumpProgram(*atomx::analysis::analyzeProgram(image), std::cout, only);
  return 0;
}

// The block counts of the dyninst or prof tool's JSON files (their
// "blocks": [{"pc": "0x...", "count": N}, ...]), summed over the files;
// none without files.
atomx::analysis::BlockProfile readBlockProfile(const std::vector<std::string>& files) {
  atomx::analysis::BlockProfile profile;
  if (files.empty()) return profile;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) throw atomx::Error(path + ": cannot read the profile");
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      const std::string tool = j.value("tool", "");
      if ((tool != "dyninst" && tool != "prof") || !j.contains("blocks"))
        throw atomx::Error(path + ": not the JSON of the dyninst or prof tool (no \"blocks\")");
      for (const nlohmann::json& b : j.at("blocks"))
        if (const uint64_t n = b.at("count").get<uint64_t>())
          profile[std::stoull(b.at("pc").get<std::string>(), nullptr, 16)] += n;
    } catch (const nlohmann::json::exception& e) {
      throw atomx::Error(path + ": not the JSON of the dyninst or prof tool (" + e.what() + ")");
    } catch (const std::logic_error&) {
      throw atomx::Error(path + ": a block's pc is not a hex address");
    }
  }
  if (profile.empty()) throw atomx::Error("the profile counts no executed block");
  return profile;
}

// Rewrites `prog` into `out`, with `tool` when it names one.
void rewriteProgram(const std::string& prog, const std::string& out, const atomx::instrument::ToolSources& tool,
                    const std::vector<std::string>& toolArgs, const atomx::rewrite::RewriteOptions& options,
                    std::optional<atomx::instrument::CounterMode> counters, const atomx::analysis::BlockProfile& profile,
                    const std::string& reportPath, bool quiet,
                    atomx::instrument::SessionOptions::DeferEnd deferEnd = atomx::instrument::SessionOptions::DeferEnd::No) {
  // The session lives until the process exits: freeing a large program's IR
  // one block at a time costs more than the rest of the rewrite's
  // bookkeeping (compilers skip it for the same reason).
  atomx::instrument::SessionOptions sessionOptions{prog, out, tool, toolArgs, options};
  sessionOptions.counters = counters;
  sessionOptions.profile = profile.empty() ? nullptr : &profile;
  sessionOptions.deferEnd = deferEnd;
  auto& session = *new atomx::instrument::Session(sessionOptions);
  writeRewritten(out, session);
  if (!quiet)
    for (const std::string& line : session.summary()) std::fprintf(stderr, "atomx: %s\n", line.c_str());
  if (!reportPath.empty()) {
    std::ofstream r(reportPath);
    if (!r) throw atomx::Error(reportPath + ": cannot create report file");
    atomx::rewrite::writeJsonReport(session.rewriter(), prog, out, r);
  }
  if (!quiet) atomx::rewrite::printSummary(session.rewriter(), prog, std::cerr);
}

// --counters MODE's value; "auto" is none (atomx chooses).
std::optional<atomx::instrument::CounterMode> counterModeOption(const std::string& mode) {
  using atomx::instrument::CounterMode;
  if (mode == "plain") return CounterMode::Plain;
  if (mode == "atomic") return CounterMode::Atomic;
  if (mode == "per-thread") return CounterMode::PerThread;
  if (mode == "auto") return std::nullopt;
  usageError("--counters needs plain, atomic, per-thread or auto, not '" + mode + "'");
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
    else if (a == "--counters" && i + 1 < argc) counters = counterModeOption(argv[++i]), countersGiven = true;
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
  const atomx::analysis::BlockProfile profile = readBlockProfile(profileFiles);
  rewriteProgram(prog, out, tool, toolArgs, options, counters, profile, reportPath, quiet,
                 deferEnd ? atomx::instrument::SessionOptions::DeferEnd::Required : atomx::instrument::SessionOptions::DeferEnd::No);
  return 0;
}

// --- atomx run ---------------------------------------------------------

// PROG as execvp would find it.
std::string findProgram(const std::string& prog) {
  const std::string found = atomx::searchPath(prog);
  if (found.empty())
    throw atomx::Error(prog + (prog.find('/') != std::string::npos ? ": not an executable file" : ": not found on PATH"));
  return found;
}

std::string defaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/atomx/run";
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw atomx::Error("no cache directory: set HOME, XDG_CACHE_HOME or --cache-dir");
  return std::string(home) + "/.cache/atomx/run";
}

// Where the cache (--cache-dir, else defaultCacheDir(); created) keeps PROG
// instrumented with `label`, under the key of everything that decides it.
std::string cachedPath(std::string cacheDir, const std::string& prog, const std::string& label, uint64_t key) {
  if (cacheDir.empty()) cacheDir = defaultCacheDir();
  std::error_code ec;
  std::filesystem::create_directories(cacheDir, ec);
  if (ec) throw atomx::Error(cacheDir + ": cannot create the cache directory: " + ec.message());
  return cacheDir + "/" + std::filesystem::path(prog).filename().string() + "." + label + "." + atomx::hex16(key);
}

// The summaries a shipped tool's processes wrote in the working directory
// during the run: NAME.out, NAME.out.PID.
void printSummaries(const std::string& tool, time_t since) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(".", ec)) {
    const std::string f = e.path().filename().string();
    const std::string base = tool + ".out";
    const bool ours = f == base || (f.rfind(base + ".", 0) == 0 && f.size() > base.size() + 1 &&
                                    f.find_first_not_of("0123456789", base.size() + 1) == std::string::npos);
    struct stat st;
    if (ours && stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= since) files.push_back(f);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::fprintf(stderr, "==atomx== %s\n", f.c_str());
    std::string line;
    while (std::getline(in, line)) std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// The regular files of the working directory: name -> (modification time
// in nanoseconds, size).
std::map<std::string, std::pair<int64_t, int64_t>> workingFiles() {
  std::map<std::string, std::pair<int64_t, int64_t>> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(".", ec)) {
    struct stat st;
    const std::string f = e.path().filename().string();
    if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      files[f] = {int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, int64_t(st.st_size)};
  }
  return files;
}

// What a user's own tool (or the program) wrote in the working directory
// during the run: where its output went, and a short text file's lines.
void printWrittenFiles(const std::string& tool, const std::map<std::string, std::pair<int64_t, int64_t>>& before) {
  std::vector<std::pair<std::string, int64_t>> written;
  for (const auto& [f, stamp] : workingFiles()) {
    const auto it = before.find(f);
    if (it == before.end() || it->second != stamp) written.push_back({f, stamp.second});
  }
  if (written.empty()) {
    std::fprintf(stderr, "==atomx== %s: no file in the working directory was written during the run\n", tool.c_str());
    return;
  }
  std::string list;
  for (size_t k = 0; k < written.size() && k < 10; ++k)
    list += (k ? ", " : "") + written[k].first + " (" + std::to_string(written[k].second) + " bytes)";
  if (written.size() > 10) list += ", and " + std::to_string(written.size() - 10) + " more";
  std::fprintf(stderr, "==atomx== %s: written in the working directory during the run (by the tool or the program): %s\n",
               tool.c_str(), list.c_str());
  for (const auto& [f, size] : written) {  // a short text file is shown, as a shipped tool's summary is
    if (size == 0 || size > 2048) continue;
    std::ifstream in(f, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find('\0') != std::string::npos || std::count(text.begin(), text.end(), '\n') > 20) continue;
    std::fprintf(stderr, "==atomx== %s\n%s%s", f.c_str(), text.c_str(), text.back() == '\n' ? "" : "\n");
  }
}

// Runs `exe` with argv [first, last) and waits; PROG's status as a shell
// reports it (128+N if signal N killed it).
int runChild(const std::string& exe, char** first, char** last) {
  std::vector<char*> args(first, last);
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw atomx::Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    execv(exe.c_str(), args.data());
    std::fprintf(stderr, "atomx: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  // Like a shell: ^C and ^\ are for the program; atomx waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int runRun(int argc, char** argv) {
  atomx::instrument::ToolSources tool;
  std::string shippedName, cacheDir;
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
  const DeferEnd deferEnd = endChoice.value_or(shippedName.empty() ? DeferEnd::No : DeferEnd::IfPossible);
  const std::string progAsGiven = argv[i + 1];
  const std::string prog = findProgram(progAsGiven);

  atomx::Fnv64 key;
  key.addFile(prog);
  key.addFile("/proc/self/exe");  // atomx and its runtime
  key.add(tool.instrumentation);
  key.addFile(tool.instrumentation);
  for (const std::string& f : tool.analysis) {
    key.add(f);
    key.addFile(f);
  }
  for (const std::string& a : toolArgs) key.add(a);
  const std::optional<atomx::instrument::CounterMode> counters = counterModeOption(countersName);
  key.add("counters " + countersName);
  key.add("end " + std::to_string(int(deferEnd)));
  const atomx::analysis::BlockProfile profile = readBlockProfile(profileFiles);
  key.addWord(profile.empty() ? 0 : atomx::trace::profileHash(profile));
  for (const std::string& f : tool.cflags) key.add("cflag " + f);
  for (const std::string& f : tool.libraries) {
    key.add("link " + f);
    if (f[0] != '-') key.addFile(f);
  }
  const std::string toolName = shippedName.empty() ? std::filesystem::path(tool.instrumentation).stem().string() : shippedName;
  // The files the tool is built from, headers included, count through the
  // tool build cache's list of them (ToolCache.h): known once it is built.
  auto keyWithInputs = [&](std::optional<uint64_t> inputs) {
    atomx::Fnv64 k = key;
    k.addWord(inputs.value_or(0));
    return cachedPath(cacheDir, prog, toolName, k.h);
  };
  const std::optional<uint64_t> inputs = atomx::instrument::ToolBuild::cachedInputs(tool);
  std::string cached = keyWithInputs(inputs);
  if (!inputs || access(cached.c_str(), X_OK) != 0) {
    if (!quiet) std::fprintf(stderr, "atomx: instrumenting %s with %s into %s\n", prog.c_str(), toolName.c_str(), cached.c_str());
    rewriteProgram(prog, cached, tool, toolArgs, atomx::rewrite::RewriteOptions{}, counters, profile, "", true, deferEnd);
    // Built now: filed under what it was built from (without a tool cache,
    // under nothing, and never reused).
    if (const std::optional<uint64_t> built = atomx::instrument::ToolBuild::cachedInputs(tool); built != inputs) {
      const std::string filed = keyWithInputs(built);
      if (rename(cached.c_str(), filed.c_str()) == 0) cached = filed;
    }
  }

  const time_t start = time(nullptr);
  const auto before = shippedName.empty() && !quiet ? workingFiles() : std::map<std::string, std::pair<int64_t, int64_t>>{};
  // Deferred ends: every process leaves its dump in a directory of this run
  // (ATOMX_END_DIR), and each end runs where its process ended.
  std::string dumpDir;
  if (deferEnd != DeferEnd::No) {
    std::string pattern = (std::filesystem::temp_directory_path() / "atomx-end-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw atomx::Error(std::string("cannot create a directory for the dumps: ") + std::strerror(errno));
    dumpDir = pattern;
    setenv(ATOMX_END_DIR_ENV, dumpDir.c_str(), 1);
  }
  const int status = runChild(cached, argv + i + 1, argv + argc);
  if (!dumpDir.empty()) {
    unsetenv(ATOMX_END_DIR_ENV);
    const std::vector<std::string> dumps = atomx::cli::findEndDumps(dumpDir);
    const size_t failed = atomx::cli::replayEndDumps(dumps, std::max(1u, std::thread::hardware_concurrency()), false, quiet);
    if (!quiet && !dumps.empty())
      std::fprintf(stderr, "atomx: end deferred: %zu process(es) ended%s\n", dumps.size() - failed,
                   failed ? (", " + std::to_string(failed) + " failed: their dumps are kept in " + dumpDir).c_str() : "");
    if (!failed) std::filesystem::remove_all(dumpDir);
  }
  if (!quiet && !shippedName.empty()) printSummaries(shippedName, start);
  if (!quiet && shippedName.empty()) printWrittenFiles(toolName, before);
  return status;
}

// --- atomx trace / atomx regen -----------------------------------------

int runTrace(int argc, char** argv) {
  std::string dir, cacheDir, instrumentTo;
  std::vector<std::string> profileFiles;
  bool quiet = false;
  int i = 2;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "-o" && i + 1 < argc) dir = argv[++i];
    else if (a == "-o") usageError("-o needs a directory");
    else if (a == "--instrument" && i + 1 < argc) instrumentTo = argv[++i];
    else if (a == "--instrument") usageError("--instrument needs an output file");
    else if (a == "--profile" && i + 1 < argc) profileFiles.push_back(argv[++i]);
    else if (a == "--profile") usageError("--profile needs the JSON of the dyninst or prof tool");
    else if (a == "--cache-dir" && i + 1 < argc) cacheDir = argv[++i];
    else if (a == "--cache-dir") usageError("--cache-dir needs a directory");
    else if (a == "-q") quiet = true;
    else usageError("unknown option " + a + " (atomx trace [-q] [--instrument OUT] [--profile JSON] -o DIR -- PROG [ARGS])");
  }
  if (dir.empty()) usageError("trace needs an output directory: atomx trace -o DIR -- PROG [ARGS]");
  if (i + 1 >= argc) usageError("trace needs a program after --: atomx trace -o DIR -- PROG [ARGS]");
  if (!instrumentTo.empty() && i + 2 < argc) usageError("--instrument does not run PROG: give no ARGS");
  const std::string prog = std::filesystem::absolute(findProgram(argv[i + 1])).string();
  const atomx::analysis::BlockProfile profile = readBlockProfile(profileFiles);
  const uint64_t profileHash = profile.empty() ? 0 : atomx::trace::profileHash(profile);

  atomx::Fnv64 key;
  key.addFile(prog);
  key.addWord(profileHash);
  key.addFile("/proc/self/exe");
  const atomx::instrument::ToolSources recorder = atomx::instrument::traceRecorder();
  for (const std::string& f : recorder.analysis) key.addFile(f);
  const std::string cached = cachedPath(cacheDir, prog, "trace", key.h);
  const std::string placementFile = cached + ".placement";
  uint64_t placement = 0;
  {
    std::ifstream in(placementFile);
    if (!(access(cached.c_str(), X_OK) == 0 && in >> std::hex >> placement)) {
      if (!quiet) std::fprintf(stderr, "atomx: instrumenting %s for tracing into %s\n", prog.c_str(), cached.c_str());
      atomx::instrument::SessionOptions options{prog, cached, recorder, {}, {}};
      options.trace = true;
      options.profile = profile.empty() ? nullptr : &profile;
      auto& session = *new atomx::instrument::Session(options);
      writeRewritten(cached, session);
      placement = session.tracePlacement();
      std::ofstream out(placementFile);
      out << std::hex << placement << "\n";
      if (!out.flush()) throw atomx::Error(placementFile + ": cannot write");
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw atomx::Error(dir + ": cannot create the trace directory");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f == ATOMX_TRACE_MANIFEST || f == ATOMX_TRACE_EVENTS || f == ATOMX_TRACE_PROFILE || (f.rfind("thread.", 0) == 0 && e.path().extension() == ".axt"))
      std::filesystem::remove(e.path(), ec);
  }
  atomx::trace::Manifest m;
  m.version = ATOMX_TRACE_VERSION;
  m.program = prog;
  m.programSize = std::filesystem::file_size(prog);
  m.programHash = atomx::trace::fileHash(prog);
  m.placement = placement;
  m.profile = profileHash;
  if (profileHash) atomx::trace::writeProfile(dir, profile);
  atomx::trace::writeManifest(dir, m);

  if (!instrumentTo.empty()) {
    // The traced program for someone else to run (a test harness, a
    // workload that runs it many times): every process of it that runs with
    // ATOMX_TRACE_DIR=DIR adds its threads' streams to this trace.
    std::ifstream in(cached, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) throw atomx::Error(cached + ": cannot read");
    writeFile(instrumentTo, bytes, true);
    if (!quiet)
      std::fprintf(stderr, "atomx: %s records into %s when run with %s=%s\n", instrumentTo.c_str(), dir.c_str(),
                   ATOMX_TRACE_DIR_ENV, std::filesystem::absolute(dir).c_str());
    return 0;
  }
  setenv(ATOMX_TRACE_DIR_ENV, std::filesystem::absolute(dir).c_str(), 1);
  const int status = runChild(cached, argv + i + 1, argv + argc);
  if (!quiet) {
    uint64_t bytes = 0, streams = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".axt") ++streams, bytes += e.file_size();
    std::fprintf(stderr, "atomx: trace in %s: %llu thread stream(s), %llu bytes (atomx regen %s)\n", dir.c_str(),
                 static_cast<unsigned long long>(streams), static_cast<unsigned long long>(bytes), dir.c_str());
  }
  return status;
}

// Hands every event to each of several outputs.
class Tee : public atomx::trace::Consumer {
 public:
  explicit Tee(std::vector<atomx::trace::Consumer*> to) : to_(std::move(to)) {}
  void threadBegin(int t) override {
    for (auto* c : to_) c->threadBegin(t);
  }
  void block(const atomx::trace::BlockRun& b) override {
    for (auto* c : to_) c->block(b);
  }
  void outsideCall(int t, uint64_t site, const std::string& name) override {
    for (auto* c : to_) c->outsideCall(t, site, name);
  }
  void signal(const atomx::trace::SignalEvent& e) override {
    for (auto* c : to_) c->signal(e);
  }
  void threadEnd(int t, const std::string& problem) override {
    for (auto* c : to_) c->threadEnd(t, problem);
  }

 private:
  std::vector<atomx::trace::Consumer*> to_;
};

int runRegen(int argc, char** argv) {
  std::string dir, cachegrindOut, binaryOut;
  bool blocks = false, summaryOnly = false, untraced = false, counts = false, events = false;
  const char* usage =
      " (atomx regen DIR [--blocks | --counts | --summary | --untraced | --events] [--cachegrind-out FILE] [--binary FILE])";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--blocks") blocks = true;
    else if (a == "--summary") summaryOnly = true;
    else if (a == "--untraced") untraced = true;
    else if (a == "--counts") counts = true;
    else if (a == "--events") events = true;
    else if (a == "--cachegrind-out" && i + 1 < argc) cachegrindOut = argv[++i];
    else if (a == "--binary" && i + 1 < argc) binaryOut = argv[++i];
    else if (a == "--cachegrind-out" || a == "--binary") usageError(a + " needs a file");
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a + usage);
    else if (dir.empty()) dir = a;
    else usageError("more than one trace directory given");
  }
  if (dir.empty()) usageError("regen needs a trace directory: atomx regen DIR");
  if ((untraced || events) && (untraced + events + blocks + summaryOnly + counts > 1 || !cachegrindOut.empty() || !binaryOut.empty()))
    usageError(std::string(untraced ? "--untraced" : "--events") + " combines with no other output");
  if (events) {
    const std::vector<atomx::trace::Event> log = atomx::trace::events(dir);
    if (log.empty()) throw atomx::Error(dir + ": the trace has no event log");
    for (const atomx::trace::Event& e : log)
      std::printf("%llu %d %d %s%s%s\n", static_cast<unsigned long long>((e.ns - log.front().ns) / 1000), e.pid, e.thread,
                  e.kind.c_str(), e.detail.empty() ? "" : " ", e.detail.c_str());
    return 0;
  }
  if (untraced) {
    for (const atomx::trace::UntracedProcedure& p : atomx::trace::untracedProcedures(dir))
      std::printf("%s %llx %llx %s\n", p.name.c_str(), static_cast<unsigned long long>(p.start),
                  static_cast<unsigned long long>(p.end), p.why.c_str());
    return 0;
  }
  if (int(blocks) + int(summaryOnly) + int(counts) > 1) usageError("--blocks, --counts and --summary do not combine");
  if (binaryOut == "-" && (blocks || counts)) usageError("--binary - and text on stdout do not combine");
  // The text trace is the output when no other is asked for.
  const bool text = blocks || (!summaryOnly && !counts && cachegrindOut.empty() && binaryOut.empty());
  std::unique_ptr<atomx::cli::TextOut> textOut;
  std::unique_ptr<atomx::cli::BinaryOut> binary;
  atomx::cli::CountOut perPc;
  atomx::cli::ProblemsOut problems;
  std::vector<atomx::trace::Consumer*> outs{&problems};
  if (text) outs.push_back((textOut = std::make_unique<atomx::cli::TextOut>(blocks)).get());
  if (!binaryOut.empty()) outs.push_back((binary = std::make_unique<atomx::cli::BinaryOut>(binaryOut)).get());
  if (counts || !cachegrindOut.empty()) outs.push_back(&perPc);
  Tee tee(outs);
  const atomx::trace::Summary s = atomx::trace::regenerate(dir, tee);
  if (counts) perPc.print(stdout);
  if (binary) binary->close();
  if (!cachegrindOut.empty()) {
    const atomx::trace::Manifest m = atomx::trace::readManifest(dir);
    perPc.writeCachegrind(cachegrindOut, m.program, m.program + " (atomx regen " + dir + ")");
  }
  std::fflush(stdout);
  std::fprintf(summaryOnly || (binaryOut != "-" && !text && !counts) ? stdout : stderr,
               "threads %llu blocks %llu instructions %llu outside-calls %llu stream-bytes %llu incomplete-threads %llu"
               " witnesses %llu table-targets %llu\n",
               static_cast<unsigned long long>(s.threads), static_cast<unsigned long long>(s.blocks),
               static_cast<unsigned long long>(s.instructions), static_cast<unsigned long long>(s.outsideCalls),
               static_cast<unsigned long long>(s.streamBytes), static_cast<unsigned long long>(s.incompleteThreads),
               static_cast<unsigned long long>(s.witnesses), static_cast<unsigned long long>(s.tableTargets));
  return s.incompleteThreads ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    std::fputs(kUsage, stdout);
    std::puts("\nshipped tools (atomx -T NAME; share/atomx/tools/NAME/README.md):");
    for (const atomx::instrument::ShippedTool& t : atomx::instrument::shippedTools())
      std::printf("  %-9s %s\n", t.name.c_str(), t.summary.c_str());
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
    if (first == "melt") return atomx::cli::runMelt(argc, argv);
    if (first == "ease-report") return atomx::cli::runEaseReport(argc, argv);
    if (first == "end") return atomx::cli::runEnd(argc, argv);
    return runRewrite(argc, argv);
  } catch (const atomx::InternalError& e) {
    std::fprintf(stderr, "atomx: internal error: %s\n", e.what());
    return 3;
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
