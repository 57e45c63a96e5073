#include "MeltCommand.h"

#include <cxxabi.h>
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

#include <nlohmann/json.hpp>

#include "MeltHtml.h"
#include "debuginfo/LineTable.h"
#include "melt/Melt.h"
#include "support/Error.h"

namespace atomx::cli {

namespace {

constexpr const char* kUsage =
    "atomx melt TRACE [--method seed|exact|both] [--threshold N|auto] [--top K] [--max-length N]\n"
    "                 [--identity address|text] [--chunks K] [--threads N] [--seed-budget BYTES]\n"
    "                 [--json FILE] [--html FILE]";

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

[[noreturn]] void bad(const std::string& message) {
  std::fprintf(stderr, "atomx: %s (%s)\n", message.c_str(), kUsage);
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

std::string demangled(const std::string& name) {
  if (name.compare(0, 2, "_Z") != 0) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

std::string percent(uint64_t part, uint64_t whole) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return b;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

struct Where {
  const debuginfo::LineTable& lines;
  std::string at(uint64_t pc) const {
    const debuginfo::SourceLine l = lines.lookup(pc);
    if (!l.file) return "?";
    const size_t slash = l.file->rfind('/');
    return (slash == std::string::npos ? *l.file : l.file->substr(slash + 1)) + ":" + std::to_string(l.line);
  }
};

// The distinct procedures of a sequence, in the order they first appear.
std::string procedures(const melt::Report& r, const melt::Sequence& q) {
  std::vector<std::string> seen;
  for (const std::string& name : q.procedures) {
    std::string p = demangled(name);
    if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
  }
  std::string out;
  for (const std::string& p : seen) out += (out.empty() ? "" : ", ") + p;
  return out;
}

void printHistogram(const melt::Report& r, size_t mark) {
  const size_t m = r.instructions.size();
  if (!m) return;
  const size_t shown = std::min(m, std::max<size_t>(40, mark * 3));
  const size_t per = (shown + 39) / 40;
  const uint64_t top = r.instructions[0].executions;
  std::printf("\nhistogram: executions by rank, i1..i%zu of i%zu (one row per %zu rank%s, the row's highest count)\n",
              shown, m, per, per == 1 ? "" : "s");
  for (size_t from = 0; from < shown; from += per) {
    const size_t to = std::min(shown, from + per);
    const uint64_t c = r.instructions[from].executions;
    const int bar = top ? int(50.0 * double(c) / double(top) + 0.5) : 0;
    char label[40];
    if (per == 1) std::snprintf(label, sizeof label, "i%zu", from + 1);
    else std::snprintf(label, sizeof label, "i%zu-i%zu", from + 1, to);
    std::printf("  %-13s %-50s %12llu%s\n", label, std::string(size_t(bar), '#').c_str(),
                static_cast<unsigned long long>(c), mark > from && mark <= to ? "  <- threshold" : "");
  }
}

void printSequence(const melt::Report& r, const Where& where, size_t n, const melt::Sequence& q, bool seed) {
  std::printf("\n  #%zu  occurrences %llu  length %zu  length x occurrences %llu  share %s%s  in %s\n", n,
              static_cast<unsigned long long>(q.occurrences), q.insns.size(),
              static_cast<unsigned long long>(q.coverage()), percent(q.coverage(), r.executed).c_str(),
              seed ? (q.cyclic ? "  cyclic" : "  a whole chunk") : "", procedures(r, q).c_str());
  if (seed) std::printf("      from %llu distinct chunk(s)\n", static_cast<unsigned long long>(q.chunks));
  // A long chunk is listed by its first instructions (the JSON has them all).
  const size_t shown = q.insns.size() > 48 ? 32 : q.insns.size();
  for (size_t k = 0; k < shown; ++k) {
    const melt::Instruction& i = r.instructions[q.insns[k]];
    std::printf("      %-8s i%-6u %-24s %-22s %s\n", hex(q.pcs[k]).c_str(), q.insns[k] + 1,
                demangled(q.procedures[k]).substr(0, 24).c_str(), where.at(q.pcs[k]).c_str(), i.text.c_str());
  }
  if (shown < q.insns.size()) std::printf("      ... %zu more (--json lists every pc)\n", q.insns.size() - shown);
}

void printReport(const std::string& dir, const melt::Report& r, const Where& where, size_t coverageRows) {
  std::printf("atomx melt %s: %s\n", dir.c_str(), r.program.c_str());
  std::printf("executed: %llu instructions in %llu thread(s), %llu segment(s) (cut at each thread's end and each outside "
              "call); %zu distinct instructions by %s\n",
              static_cast<unsigned long long>(r.executed), static_cast<unsigned long long>(r.threads),
              static_cast<unsigned long long>(r.segments), r.instructions.size(),
              r.identity == melt::Identity::Address ? "address" : "text");
  if (r.incompleteThreads)
    std::printf("warning: %llu thread(s) regenerated only up to a problem (atomx regen says where); mined as far as they go\n",
                static_cast<unsigned long long>(r.incompleteThreads));
  const size_t rows = std::min(coverageRows, r.instructions.size());
  std::printf("\ncoverage: the %zu most executed of %zu instructions\n", rows, r.instructions.size());
  std::printf("  %-7s %12s %8s %8s  %-8s %-24s %-22s %s\n", "rank", "executions", "share", "cum.", "pc", "procedure",
              "source", "instruction");
  uint64_t cum = 0;
  for (size_t k = 0; k < rows; ++k) {
    const melt::Instruction& i = r.instructions[k];
    cum += i.executions;
    std::printf("  i%-6zu %12llu %8s %8s  %-8s %-24s %-22s %s\n", k + 1, static_cast<unsigned long long>(i.executions),
                percent(i.executions, r.executed).c_str(), percent(cum, r.executed).c_str(), hex(i.pc).c_str(),
                demangled(i.procedure).substr(0, 24).c_str(), where.at(i.pc).c_str(), i.text.c_str());
  }
  printHistogram(r, r.seedRun ? r.seed.kneeRank : 0);
  if (r.seedRun) {
    const melt::SeedResult& s = r.seed;
    std::printf("\nthreshold: %llu executions, ", static_cast<unsigned long long>(s.threshold));
    if (s.automatic)
      std::printf("chosen at the knee, i%zu: the point of the sorted cumulative coverage curve (i/m, executions of "
                  "i1..i / all) farthest above its chord from (0,0) to (1,1), where an instruction's executions fall "
                  "below the average, %llu / %zu = %.1f\n",
                  s.kneeRank, static_cast<unsigned long long>(r.executed), r.instructions.size(),
                  r.instructions.empty() ? 0.0 : double(r.executed) / double(r.instructions.size()));
    else
      std::printf("given (--threshold): %zu instructions are at or above it\n", s.kneeRank);
    std::printf("\nseed method (melting): %llu of %llu executed instructions kept (%s); %llu chunks, %llu distinct, "
                "smallest %llu, largest %llu\n",
                static_cast<unsigned long long>(s.keptInstructions), static_cast<unsigned long long>(r.executed),
                percent(s.keptInstructions, r.executed).c_str(), static_cast<unsigned long long>(s.chunks),
                static_cast<unsigned long long>(s.distinctChunks), static_cast<unsigned long long>(s.smallestChunk),
                static_cast<unsigned long long>(s.largestChunk));
    std::printf("  distinct chunks by length x count (cyclic: period <= length / 2):\n");
    std::printf("  %10s %8s %8s  %s\n", "count", "length", "period", "first instructions");
    for (const melt::Chunk& c : s.topChunks) {
      std::string first;
      for (size_t k = 0; k < std::min<size_t>(c.insns.size(), 8); ++k) first += "i" + std::to_string(c.insns[k] + 1) + " ";
      if (c.insns.size() > 8) first += "...";
      std::printf("  %10llu %8zu %8zu  %s%s\n", static_cast<unsigned long long>(c.count), c.insns.size(), c.period,
                  first.c_str(), 2 * c.period <= c.insns.size() ? "(cyclic)" : "");
    }
    std::printf("\n  sequences: the top %zu of %llu by length x occurrences\n", s.sequences.size(),
                static_cast<unsigned long long>(s.sequencesFound));
    for (size_t k = 0; k < s.sequences.size(); ++k) printSequence(r, where, k + 1, s.sequences[k], true);
  }
  if (r.exactRun) {
    const melt::ExactResult& e = r.exact;
    std::printf("\nexact method: %llu distinct candidate sequences (whole blocks, at most %u instructions); top %zu by "
                "length x non-overlapping occurrences\n",
                static_cast<unsigned long long>(e.candidates), e.maxLength, e.sequences.size());
    for (size_t k = 0; k < e.sequences.size(); ++k) printSequence(r, where, k + 1, e.sequences[k], false);
  }
  if (r.seedRun && r.exactRun) {
    // Where the two agree: the same instructions in the same order, or the
    // same cycle entered elsewhere (a rotation).
    auto relation = [](const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
      if (a == b) return 2;
      if (a.size() != b.size() || a.empty()) return 0;
      for (size_t k = 1; k < a.size(); ++k)
        if (std::equal(a.begin() + long(k), a.end(), b.begin()) && std::equal(a.begin(), a.begin() + long(k), b.end() - long(k)))
          return 1;
      return 0;
    };
    std::printf("\nagreement (the seed's top %zu against the exact top %zu):\n", r.seed.sequences.size(), r.exact.sequences.size());
    std::vector<bool> matched(r.exact.sequences.size());
    for (size_t k = 0; k < r.seed.sequences.size(); ++k) {
      std::string what = "not in the exact top";
      for (size_t e = 0; e < r.exact.sequences.size(); ++e)
        if (int rel = relation(r.seed.sequences[k].pcs, r.exact.sequences[e].pcs)) {
          matched[e] = true;
          what = (rel == 2 ? "the same as exact #" : "the same cycle, rotated, as exact #") + std::to_string(e + 1) + " (" +
                 std::to_string(r.seed.sequences[k].occurrences) + " against " +
                 std::to_string(r.exact.sequences[e].occurrences) + " occurrences)";
          break;
        }
      std::printf("  seed #%zu: %s\n", k + 1, what.c_str());
    }
    for (size_t e = 0; e < r.exact.sequences.size(); ++e)
      if (!matched[e]) std::printf("  exact #%zu: not in the seed's top\n", e + 1);
  }
}

nlohmann::json sequenceJson(const melt::Report& r, const melt::Sequence& q, bool seed) {
  nlohmann::json pcs = nlohmann::json::array(), ranks = nlohmann::json::array();
  for (size_t k = 0; k < q.insns.size(); ++k) {
    pcs.push_back(hex(q.pcs[k]));
    ranks.push_back(q.insns[k] + 1);
  }
  nlohmann::json j = {{"pcs", pcs},
                      {"ranks", ranks},
                      {"occurrences", q.occurrences},
                      {"length", q.insns.size()},
                      {"coverage", q.coverage()},
                      {"share", r.executed ? double(q.coverage()) / double(r.executed) : 0.0},
                      {"procedures", procedures(r, q)}};
  if (seed) {
    j["cyclic"] = q.cyclic;
    j["chunks"] = q.chunks;
  }
  return j;
}

nlohmann::json reportJson(const std::string& dir, const melt::Report& r, const Where& where) {
  nlohmann::json insns = nlohmann::json::array();
  for (const melt::Instruction& i : r.instructions)
    insns.push_back({{"pc", hex(i.pc)}, {"executions", i.executions}, {"procedure", demangled(i.procedure)},
                     {"source", where.at(i.pc)}, {"text", i.text}});
  nlohmann::json j = {{"trace", dir},
                      {"program", r.program},
                      {"identity", r.identity == melt::Identity::Address ? "address" : "text"},
                      {"executed", r.executed},
                      {"threads", r.threads},
                      {"segments", r.segments},
                      {"incomplete_threads", r.incompleteThreads},
                      {"instructions", insns}};
  if (r.seedRun) {
    const melt::SeedResult& s = r.seed;
    nlohmann::json chunks = nlohmann::json::array(), seqs = nlohmann::json::array();
    for (const melt::Chunk& c : s.topChunks) {
      nlohmann::json pcs = nlohmann::json::array();
      for (uint32_t i : c.insns) pcs.push_back(hex(r.instructions[i].pc));
      chunks.push_back({{"count", c.count}, {"length", c.insns.size()}, {"period", c.period}, {"pcs", pcs}});
    }
    for (const melt::Sequence& q : s.sequences) seqs.push_back(sequenceJson(r, q, true));
    j["seed"] = {{"threshold", s.threshold},        {"automatic", s.automatic},
                 {"knee_rank", s.kneeRank},         {"kept", s.keptInstructions},
                 {"chunks", s.chunks},              {"distinct_chunks", s.distinctChunks},
                 {"smallest_chunk", s.smallestChunk}, {"largest_chunk", s.largestChunk},
                 {"top_chunks", chunks},            {"sequences_found", s.sequencesFound},
                 {"sequences", seqs}};
  }
  if (r.exactRun) {
    nlohmann::json seqs = nlohmann::json::array();
    for (const melt::Sequence& q : r.exact.sequences) seqs.push_back(sequenceJson(r, q, false));
    j["exact"] = {{"max_length", r.exact.maxLength}, {"candidates", r.exact.candidates}, {"sequences", seqs}};
  }
  return j;
}

}  // namespace

namespace {

struct MeltArgs {
  std::string dir, json, html;
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
         a == "--chunks" || a == "--threads" || a == "--json" || a == "--html" || a == "--seed-budget"))
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
  const melt::Report r = melt::mine(m.dir, m.o);
  const debuginfo::LineTable lines(r.program);
  const Where where{lines};
  if (m.json != "-") printReport(m.dir, r, where, m.coverageRows);
  if (!m.json.empty()) {
    const std::string text = reportJson(m.dir, r, where).dump(1) + "\n";
    if (m.json == "-") std::fputs(text.c_str(), stdout);
    else {
      std::ofstream out(m.json);
      if (!(out << text) || !out.flush()) throw Error(m.json + ": cannot write");
    }
  }
  if (!m.html.empty())
    writeMeltHtml(m.html, m.dir, r, [&](uint64_t pc) { return where.at(pc); }, demangled);
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
  const char* tmpdir = std::getenv("TMPDIR");
  std::string scratch = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/atomx-melt-XXXXXX";
  if (!mkdtemp(scratch.data())) throw Error(scratch + ": cannot create a temporary directory");
  m.dir = scratch + "/trace";
  // The trace, by this same atomx: `atomx trace -q -o DIR -- PROG ARGS`.
  std::vector<std::string> args{"atomx", "trace", "-q", "-o", m.dir, "--"};
  args.insert(args.end(), argv + dash + 1, argv + argc);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execv("/proc/self/exe", cargs.data());
    std::_Exit(127);
  }
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int rc = pid < 0 ? 1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{scratch};
  if (!std::filesystem::exists(m.dir + "/manifest")) throw Error("the program was not traced (atomx trace exited " + std::to_string(rc) + ")");
  // The program's output was its own; the report goes where atomx run's summaries go.
  dup2(2, 1);
  const int mined = mineAndReport(m);
  return rc ? rc : mined;
}

}  // namespace atomx::cli
