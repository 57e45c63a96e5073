#include "MeltCommand.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

#include "driver/ProgressLine.h"
#include "driver/Record.h"
#include "melt/Melt.h"
#include "melt/Report.h"
#include "support/Error.h"
#include "support/Directories.h"

namespace atomx::cli {

namespace {

constexpr const char* kUsage =
    "atomx melt TRACE [--method seed|exact|both] [--threshold N|auto] [--top K] [--max-length N]\n"
    "                 [--identity address|text] [--chunks K] [--threads N] [--seed-budget BYTES]\n"
    "                 [--json FILE] [--html FILE] [--program FILE] [-q]";

constexpr const char* kHelp = R"(
Mine the instruction sequences that make up most of a traced run (atomx trace
-o TRACE -- PROG ARGS), from every thread's regenerated instruction sequence.
A thread's end and every call to code outside the trace (a shared library, a
call through a pointer) cut the sequence: no sequence spans a cut.
docs/melting.md explains the methods and the report.

  --method seed|exact|both   (both) seed: Wang and Chiu's melting: drop every
        instruction executed fewer than the threshold times, count the chunks
        that are left, and take each distinct chunk's period when it repeats
        (cyclic) or the chunk itself.  exact: every sequence of whole blocks of
        at most --max-length instructions, ranked by length x non-overlapping
        occurrences (counted left to right in each thread); a sequence that
        occurs once, a power of a shorter one, or one explained by a sequence
        r ranked above it (it lies in r read cyclically, and at least half of
        its occurrences can be r's) is skipped
  --threshold N|auto  (auto) the seed's threshold, in executions; auto takes
        the knee of the sorted cumulative coverage curve, the point farthest
        from its chord (where executions fall below the average instruction's)
  --top K             (10) sequences per method
  --max-length N      (64) the exact method's longest sequence, instructions
  --identity address|text  (address) an instruction is its address, or its
        disassembly decoded at address 0 (the same instruction wherever it is)
  --chunks K          (10) distinct chunks listed
  --seed-budget BYTES (67108864) chunk contents the seed's method keeps while
        counting; the top chunks not kept are fetched by melting once more
  --threads N         (2) threads mining the exact method's candidates beside
        the one reading the trace, each a share of them (split by their first
        block); 0: mine in the reading thread.  The answer is the same
  -q                  no progress line (one is shown on a terminal, per pass)
  --program FILE      read FILE as the traced program instead of the path the
        trace names (a saved copy of it); it must have the recorded size and hash
  --json FILE         the report as JSON too ("-": only JSON, on stdout); each
        sequence has pcs (hex addresses in order), occurrences, length, coverage
  --html FILE         the report as a page too: the histogram and the
        cumulative coverage curve with the knee (SVG), the coverage table, and
        each method's sequences with their instructions
The text report: the coverage table, the histogram, the threshold and why,
the chunks, and each method's sequences with occurrences, length, length x
occurrences, share of all executed instructions, procedures, and per
instruction its address, rank, procedure, source line and disassembly.
Exits 1 if a thread could not be regenerated to its end (mined as far as it goes).
)";

// A usage error: one line, exit 2 (the usage itself is in --help).
[[noreturn]] void bad(const std::string& message) {
  std::fprintf(stderr, "atomx: %s (see atomx melt --help)\n", message.c_str());
  std::exit(2);
}

uint64_t number(const std::string& option, const std::string& v, uint64_t min) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end || errno || n < min)
    bad(option + " needs a whole number of at least " + std::to_string(min) + ", not '" + v + "'");
  return n;
}

struct MeltArgs {
  std::string dir, json, html;
  bool quiet = false;
  melt::Options o;
  size_t coverageRows = 15;
  bool help = false;
};

MeltArgs parse(const std::vector<std::string>& args) {
  MeltArgs m;
  melt::Options& o = m.o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool hasValue = i + 1 < args.size();
    if (a == "--help" || a == "-h") {
      m.help = true;
      return m;
    }
    if (a.size() > 2 && a[0] == '-' && !hasValue &&
        (a == "--method" || a == "--threshold" || a == "--top" || a == "--max-length" || a == "--identity" ||
         a == "--chunks" || a == "--threads" || a == "--json" || a == "--html" || a == "--seed-budget" ||
         a == "--program"))
      bad(a + " needs a value");
    if (a == "--method") {
      const std::string& v = args[++i];
      if (v == "seed") o.seed = true, o.exact = false;
      else if (v == "exact") o.seed = false, o.exact = true;
      else if (v == "both") o.seed = o.exact = true;
      else bad("--method is seed, exact or both, not '" + v + "'");
    } else if (a == "--threshold") {
      const std::string& v = args[++i];
      o.threshold = v == "auto" ? 0 : number(a, v, 1);
    } else if (a == "--top") {
      o.top = number(a, args[++i], 1);
      m.coverageRows = std::max<size_t>(15, o.top);
    } else if (a == "--max-length") {
      const uint64_t n = number(a, args[++i], 1);
      if (n > 4096) bad("--max-length is at most 4096 instructions");
      o.maxLength = unsigned(n);
    } else if (a == "--identity") {
      const std::string& v = args[++i];
      if (v == "address") o.identity = melt::Identity::Address;
      else if (v == "text") o.identity = melt::Identity::Text;
      else bad("--identity is address or text, not '" + v + "'");
    } else if (a == "--chunks") {
      o.topChunks = number(a, args[++i], 0);
    } else if (a == "--threads") {
      const uint64_t n = number(a, args[++i], 0);
      if (n > 64) bad("--threads is at most 64");
      o.threads = unsigned(n);
    } else if (a == "--seed-budget") {
      o.seedBudget = number(a, args[++i], 0);
    } else if (a == "-q") {
      m.quiet = true;
    } else if (a == "--program") {
      o.program = args[++i];
    } else if (a == "--json") {
      m.json = args[++i];
    } else if (a == "--html") {
      m.html = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      bad("unknown option " + a);
    } else if (m.dir.empty()) {
      m.dir = a;
    } else {
      bad("more than one trace directory given");
    }
  }
  if (o.threshold && !o.seed) bad("--threshold is the seed method's: not with --method exact");
  return m;
}

int mineAndReport(const MeltArgs& m) {
  melt::Report r;
  {
    driver::ProgressLine line("melt", m.quiet);
    melt::Options o = m.o;
    o.progress = line.progress();
    r = melt::mine(m.dir, o);
  }
  if (m.json != "-") melt::writeText(stdout, m.dir, r, m.coverageRows);
  if (m.json == "-") melt::writeJson(stdout, m.dir, r);
  else if (!m.json.empty()) {
    std::FILE* f = std::fopen(m.json.c_str(), "w");
    if (!f) throw Error(m.json + ": cannot write: " + std::strerror(errno));
    melt::writeJson(f, m.dir, r);
    if (std::fclose(f) != 0) throw Error(m.json + ": cannot write");
  }
  if (!m.html.empty()) melt::writeHtml(m.html, m.dir, r);
  std::fflush(stdout);
  return r.incompleteThreads ? 1 : 0;
}

}  // namespace

int runMelt(int argc, char** argv) {
  const MeltArgs m = parse(std::vector<std::string>(argv + 2, argv + argc));
  if (m.help) {
    std::printf("usage: %s\n%s", kUsage, kHelp);
    return 0;
  }
  if (m.dir.empty()) bad("melt needs a trace directory");
  return mineAndReport(m);
}

int runMeltOnRun(int argc, char** argv) {
  // atomx run -T melt [MELT OPTIONS] -- PROG [ARGS]
  int dash = 4;
  while (dash < argc && std::strcmp(argv[dash], "--") != 0) ++dash;
  if (dash + 1 >= argc) bad("run -T melt needs a program after --: atomx run -T melt [OPTIONS] -- PROG [ARGS]");
  MeltArgs m = parse(std::vector<std::string>(argv + 4, argv + dash));
  if (m.help) {
    std::printf("usage: atomx run -T melt [OPTIONS] -- PROG [ARGS]: trace PROG ARGS into a temporary\n"
                "directory, then mine it as atomx melt TRACE [OPTIONS] does; the report goes to stderr.\n%s", kHelp);
    return 0;
  }
  if (!m.dir.empty()) bad("run -T melt traces the program itself: give no trace directory");
  if (m.json == "-") bad("run -T melt: --json - would mix the report with the program's output: give a file");
  const std::string scratch = makeTempDir("atomx-melt-");
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{scratch};
  m.dir = scratch + "/trace";
  driver::RecordRequest record;
  record.dir = m.dir;
  record.quiet = true;
  record.argv.assign(argv + dash + 1, argv + argc);
  const int rc = driver::recordTrace(record);
  if (!std::filesystem::exists(m.dir + "/manifest")) throw Error("the program was not traced (it exited " + std::to_string(rc) + ")");
  // The program's output was its own; the report goes where atomx run's summaries go.
  dup2(2, 1);
  const int mined = mineAndReport(m);
  return rc ? rc : mined;
}

}  // namespace atomx::cli
