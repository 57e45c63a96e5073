#include "driver/Run.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <atomx/end_format.h>
#include <atomx/output_dir.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include "driver/EndReplay.h"
#include "driver/Process.h"
#include "driver/ProgramCache.h"
#include "driver/Profiles.h"
#include "driver/Rewrite.h"
#include "instrument/Instrumenter.h"
#include "support/Error.h"
#include "support/Directories.h"
#include "trace/TraceFiles.h"

namespace atomx::driver {

namespace {

// The directories the run's outputs went to: the working directory, or
// those --output-dir's template names (every process id for %p).
std::vector<std::string> outputDirs(const std::string& tmpl) {
  if (tmpl.empty()) return {"."};
  char pattern[4096];
  const char* bad = nullptr;
  int hasPid = 0;
  if (atomx_expand_output_dir(tmpl.c_str(), "*", pattern, sizeof pattern, &bad, &hasPid) <= 0) return {};
  std::vector<std::string> dirs;
  glob_t g;
  if (glob(pattern, GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t k = 0; k < g.gl_pathc; ++k) dirs.push_back(g.gl_pathv[k]);
  globfree(&g);
  return dirs;
}

// A file of directory `dir` as a person reads it: "f" in the working directory.
std::string shown(const std::string& dir, const std::string& f) { return dir == "." ? f : dir + "/" + f; }

// The summaries a shipped tool's processes wrote during the run: NAME.out,
// NAME.out.PID; and, with --output-dir, every file of the tool's that went there.
void printSummaries(const std::string& tool, time_t since, const std::string& tmpl) {
  for (const std::string& dir : outputDirs(tmpl)) {
    std::vector<std::string> files, all;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string f = e.path().filename().string();
      const std::string base = tool + ".out";
      const bool ours = f == base || (f.rfind(base + ".", 0) == 0 && f.size() > base.size() + 1 &&
                                      f.find_first_not_of("0123456789", base.size() + 1) == std::string::npos);
      struct stat st;
      if (stat(shown(dir, f).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < since) continue;
      if (ours) files.push_back(f);
      if (f.rfind(tool + ".", 0) == 0) all.push_back(f);
    }
    std::sort(files.begin(), files.end());
    std::sort(all.begin(), all.end());
    for (const std::string& f : files) {
      std::ifstream in(shown(dir, f));
      std::fprintf(stderr, "==atomx== %s\n", shown(dir, f).c_str());
      std::string line;
      while (std::getline(in, line)) std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (!tmpl.empty() && !all.empty()) {
      std::string list;
      for (const std::string& f : all) list += (list.empty() ? "" : ", ") + f;
      std::fprintf(stderr, "==atomx== %s: wrote in %s: %s\n", tool.c_str(), dir.c_str(), list.c_str());
    }
  }
}

// The regular files of the output directories: name (as shown) ->
// (modification time in nanoseconds, size).
std::map<std::string, std::pair<int64_t, int64_t>> writtenFiles(const std::string& tmpl) {
  std::map<std::string, std::pair<int64_t, int64_t>> files;
  for (const std::string& dir : outputDirs(tmpl)) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      struct stat st;
      const std::string f = shown(dir, e.path().filename().string());
      if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        files[f] = {int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, int64_t(st.st_size)};
    }
  }
  return files;
}

// What a user's own tool (or the program) wrote in the working directory
// (or --output-dir's) during the run: where its output went, and a short
// text file's lines.
void printWrittenFiles(const std::string& tool, const std::map<std::string, std::pair<int64_t, int64_t>>& before,
                       const std::string& tmpl) {
  const std::string where = tmpl.empty() ? "the working directory" : "'" + tmpl + "'";
  std::vector<std::pair<std::string, int64_t>> written;
  for (const auto& [f, stamp] : writtenFiles(tmpl)) {
    const auto it = before.find(f);
    if (it == before.end() || it->second != stamp) written.push_back({f, stamp.second});
  }
  if (written.empty()) {
    std::fprintf(stderr, "==atomx== %s: no file in %s was written during the run\n", tool.c_str(), where.c_str());
    return;
  }
  std::string list;
  for (size_t k = 0; k < written.size() && k < 10; ++k)
    list += (k ? ", " : "") + written[k].first + " (" + std::to_string(written[k].second) + " bytes)";
  if (written.size() > 10) list += ", and " + std::to_string(written.size() - 10) + " more";
  std::fprintf(stderr, "==atomx== %s: written in %s during the run (by the tool or the program): %s\n",
               tool.c_str(), where.c_str(), list.c_str());
  for (const auto& [f, size] : written) {  // a short text file is shown, as a shipped tool's summary is
    if (size == 0 || size > 2048) continue;
    std::ifstream in(f, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find('\0') != std::string::npos || std::count(text.begin(), text.end(), '\n') > 20) continue;
    std::fprintf(stderr, "==atomx== %s\n%s%s", f.c_str(), text.c_str(), text.back() == '\n' ? "" : "\n");
  }
}

// --output-dir's template, checked as the runtime will expand it.
void checkOutputDir(const std::string& tmpl) {
  char out[4096];
  const char* bad = nullptr;
  int hasPid = 0;
  switch (atomx_expand_output_dir(tmpl.c_str(), "1", out, sizeof out, &bad, &hasPid)) {
    case -1:
      throw UsageError("--output-dir '" + tmpl + "': unknown '" + std::string(bad, std::min<size_t>(2, std::strlen(bad))) +
                       "' (known: %p the process id, %q{VAR} an environment variable, %% a %)");
    case -2:
      throw UsageError("--output-dir '" + tmpl + "': " + std::string(bad, std::strchr(bad, '}') + 1) +
                       ": the environment variable is not set");
    case -3: throw UsageError("--output-dir '" + tmpl + "': too long");
    case 0: throw UsageError("--output-dir needs a directory");
  }
}

}  // namespace

std::optional<instrument::CounterMode> counterMode(const std::string& mode) {
  using instrument::CounterMode;
  if (mode == "plain") return CounterMode::Plain;
  if (mode == "atomic") return CounterMode::Atomic;
  if (mode == "per-thread") return CounterMode::PerThread;
  if (mode == "auto") return std::nullopt;
  throw UsageError("--counters needs plain, atomic, per-thread or auto, not '" + mode + "'");
}

int runWithTool(const RunRequest& r) {
  if (!r.outputDir.empty()) checkOutputDir(r.outputDir);  // before any work: a usage error
  const std::string prog = findProgram(r.argv.at(0));

  const analysis::BlockProfile profile = readBlockProfile(r.profileFiles);
  const ProgramCache cache(r.cacheDir);
  Fnv64 key = ProgramCache::programKey(prog, profile.empty() ? 0 : trace::profileHash(profile));
  key.add(r.tool.instrumentation);
  key.addFile(r.tool.instrumentation);
  for (const std::string& f : r.tool.analysis) {
    key.add(f);
    key.addFile(f);
  }
  for (const std::string& a : r.toolArgs) key.add(a);
  const std::optional<instrument::CounterMode> counters = counterMode(r.counters);
  key.add("counters " + r.counters);
  key.add("end " + std::to_string(int(r.deferEnd)));
  for (const std::string& f : r.tool.cflags) key.add("cflag " + f);
  for (const std::string& f : r.tool.libraries) {
    key.add("link " + f);
    if (f[0] != '-') key.addFile(f);
  }
  const std::string toolName = r.shippedName.empty() ? std::filesystem::path(r.tool.instrumentation).stem().string() : r.shippedName;
  // The files the tool is built from, headers included, count through the
  // tool build cache's list of them (ToolCache.h): known once it is built.
  auto keyWithInputs = [&](std::optional<uint64_t> inputs) {
    Fnv64 k = key;
    k.addWord(inputs.value_or(0));
    return cache.path(prog, toolName, k.h);
  };
  const std::optional<uint64_t> inputs = instrument::ToolBuild::cachedInputs(r.tool);
  std::string cached = keyWithInputs(inputs);
  if (!inputs || access(cached.c_str(), X_OK) != 0) {
    // Said once it is done, so that a tool that refuses its options (its
    // Instrument fails) makes one line, the tool's; while it runs, a line on
    // a terminal that the result replaces.
    const bool terminal = !r.quiet && isatty(STDERR_FILENO);
    if (terminal) std::fprintf(stderr, "atomx: instrumenting %s with %s ...", prog.c_str(), toolName.c_str()), std::fflush(stderr);
    struct ClearLine {
      bool on;
      ~ClearLine() {
        if (on) std::fprintf(stderr, "\r\033[K"), std::fflush(stderr);
      }
    } clear{terminal};
    const auto began = std::chrono::steady_clock::now();
    RewriteRequest rewrite;
    rewrite.prog = prog;
    rewrite.out = cached;
    rewrite.tool = r.tool;
    rewrite.toolArgs = r.toolArgs;
    rewrite.counters = counters;
    rewrite.profile = profile;
    rewrite.quiet = true;
    rewrite.deferEnd = r.deferEnd;
    rewriteProgram(rewrite);
    // Built now: filed under what it was built from (without a tool cache,
    // under nothing, and never reused).
    if (const std::optional<uint64_t> built = instrument::ToolBuild::cachedInputs(r.tool); built != inputs) {
      const std::string filed = keyWithInputs(built);
      // Another atomx that built the same program at the same time may have
      // filed it first (its rename took ours): then theirs is the one.
      if (rename(cached.c_str(), filed.c_str()) == 0 || (errno == ENOENT && access(filed.c_str(), X_OK) == 0))
        cached = filed;
    }
    cache.keepToSize(cached);
    if (terminal) std::fprintf(stderr, "\r\033[K"), clear.on = false;
    if (!r.quiet)
      std::fprintf(stderr, "atomx: instrumented %s with %s into %s (%.1f s)\n", prog.c_str(), toolName.c_str(), cached.c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  } else {
    ProgramCache::touch(cached);
  }

  if (!r.outputDir.empty())  // the program's processes, and the deferred ends
    setenv("ATOMX_OUTPUT_DIR", r.outputDir.c_str(), 1);
  const time_t start = time(nullptr);
  const auto before = r.shippedName.empty() && !r.quiet ? writtenFiles(r.outputDir) : std::map<std::string, std::pair<int64_t, int64_t>>{};
  // Deferred ends: every process leaves its dump in a directory of this run
  // (ATOMX_END_DIR), and each end runs where its process ended.
  std::string dumpDir;
  // (Only when the file defers its end: the variable is not the
  // program's, and a program that reads its environment would see it.)
  if (r.deferEnd != instrument::SessionOptions::DeferEnd::No && instrument::defersEnd(cached)) {
    dumpDir = makeTempDir("atomx-end-");
    setenv(ATOMX_END_DIR_ENV, dumpDir.c_str(), 1);
  }
  const int status = runChild(cached, r.argv);
  if (!dumpDir.empty()) {
    unsetenv(ATOMX_END_DIR_ENV);
    const std::vector<std::string> dumps = findEndDumps(dumpDir);
    const size_t failed = replayEndDumps(dumps, std::max(1u, std::thread::hardware_concurrency()), false, r.quiet);
    if (!r.quiet && !dumps.empty())
      std::fprintf(stderr, "atomx: end deferred: %zu process(es) ended%s\n", dumps.size() - failed,
                   failed ? (", " + std::to_string(failed) + " failed: their dumps are kept in " + dumpDir).c_str() : "");
    if (!failed) std::filesystem::remove_all(dumpDir);
  }
  if (!r.quiet && !r.shippedName.empty()) printSummaries(r.shippedName, start, r.outputDir);
  if (!r.quiet && r.shippedName.empty()) printWrittenFiles(toolName, before, r.outputDir);
  return status;
}

}  // namespace atomx::driver
