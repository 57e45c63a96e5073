#include "melt/Report.h"

#include <atomx/demangle.hpp>
#include <atomx/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "debuginfo/LineTable.h"

namespace atomx::melt {

namespace {

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
  std::string at(uint64_t pc) const { return sourceLine(lines, pc); }
};

// The distinct procedures of a sequence, in the order they first appear.
std::string procedures(const Report& r, const Sequence& q) {
  std::vector<std::string> seen;
  for (const std::string& name : q.procedures) {
    std::string p = demangle(name);
    if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
  }
  std::string out;
  for (const std::string& p : seen) out += (out.empty() ? "" : ", ") + p;
  return out;
}

void printHistogram(std::FILE* f, const Report& r, size_t mark) {
  const size_t m = r.instructions.size();
  if (!m) return;
  const size_t shown = std::min(m, std::max<size_t>(40, mark * 3));
  const size_t per = (shown + 39) / 40;
  const uint64_t top = r.instructions[0].executions;
  std::fprintf(f, "\nhistogram: executions by rank, i1..i%zu of i%zu (one row per %zu rank%s, the row's highest count)\n",
              shown, m, per, per == 1 ? "" : "s");
  for (size_t from = 0; from < shown; from += per) {
    const size_t to = std::min(shown, from + per);
    const uint64_t c = r.instructions[from].executions;
    const int bar = top ? int(50.0 * double(c) / double(top) + 0.5) : 0;
    char label[40];
    if (per == 1) std::snprintf(label, sizeof label, "i%zu", from + 1);
    else std::snprintf(label, sizeof label, "i%zu-i%zu", from + 1, to);
    std::fprintf(f, "  %-13s %-50s %12llu%s\n", label, std::string(size_t(bar), '#').c_str(),
                static_cast<unsigned long long>(c), mark > from && mark <= to ? "  <- threshold" : "");
  }
}

void printSequence(std::FILE* f, const Report& r, const Where& where, size_t n, const Sequence& q, bool seed) {
  std::fprintf(f, "\n  #%zu  occurrences %llu  length %zu  length x occurrences %llu  share %s%s  in %s\n", n,
              static_cast<unsigned long long>(q.occurrences), q.insns.size(),
              static_cast<unsigned long long>(q.coverage()), percent(q.coverage(), r.executed).c_str(),
              seed ? (q.cyclic ? "  cyclic" : "  a whole chunk") : "", procedures(r, q).c_str());
  if (seed) std::fprintf(f, "      from %llu distinct chunk(s)\n", static_cast<unsigned long long>(q.chunks));
  // The static share beside the dynamic one (the seed's "11 of enqueue's 83
  // instructions, 1.51% of the program").
  std::string st;
  for (const StaticShare& x : q.staticShares)
    st += (st.empty() ? "" : ", ") + std::to_string(x.instructions) + " of " + demangle(x.procedure) + "'s " +
          std::to_string(x.procedureSize) + " (" + percent(x.instructions, x.procedureSize) + ")";
  std::fprintf(f, "      static: %s; %llu of the program's %llu instructions (%s)\n", st.c_str(),
              static_cast<unsigned long long>(q.staticInstructions), static_cast<unsigned long long>(r.programInstructions),
              percent(q.staticInstructions, r.programInstructions).c_str());
  // A long chunk is listed by its first instructions (the JSON has them all).
  const size_t shown = q.insns.size() > 48 ? 32 : q.insns.size();
  for (size_t k = 0; k < shown; ++k) {
    const Instruction& i = r.instructions[q.insns[k]];
    std::fprintf(f, "      %-8s i%-6u %-24s %-22s %s\n", hex(q.pcs[k]).c_str(), q.insns[k] + 1,
                demangle(q.procedures[k]).substr(0, 24).c_str(), where.at(q.pcs[k]).c_str(), i.text.c_str());
  }
  if (shown < q.insns.size()) std::fprintf(f, "      ... %zu more (--json lists every pc)\n", q.insns.size() - shown);
}

void printReport(std::FILE* f, const std::string& dir, const Report& r, const Where& where, size_t coverageRows) {
  std::fprintf(f, "atomx melt %s: %s\n", dir.c_str(), r.program.c_str());
  std::fprintf(f, "executed: %llu instructions in %llu thread(s), %llu segment(s) (cut at each thread's end and each outside "
              "call); %zu distinct instructions by %s\n",
              static_cast<unsigned long long>(r.executed), static_cast<unsigned long long>(r.threads),
              static_cast<unsigned long long>(r.segments), r.instructions.size(),
              r.identity == Identity::Address ? "address" : "text");
  if (r.incompleteThreads)
    std::fprintf(f, "warning: %llu thread(s) regenerated only up to a problem (atomx regen says where); mined as far as they go\n",
                static_cast<unsigned long long>(r.incompleteThreads));
  const size_t rows = std::min(coverageRows, r.instructions.size());
  std::fprintf(f, "\ncoverage: the %zu most executed of %zu instructions\n", rows, r.instructions.size());
  std::fprintf(f, "  %-7s %12s %8s %8s  %-8s %-24s %-22s %s\n", "rank", "executions", "share", "cum.", "pc", "procedure",
              "source", "instruction");
  uint64_t cum = 0;
  for (size_t k = 0; k < rows; ++k) {
    const Instruction& i = r.instructions[k];
    cum += i.executions;
    std::fprintf(f, "  i%-6zu %12llu %8s %8s  %-8s %-24s %-22s %s\n", k + 1, static_cast<unsigned long long>(i.executions),
                percent(i.executions, r.executed).c_str(), percent(cum, r.executed).c_str(), hex(i.pc).c_str(),
                demangle(i.procedure).substr(0, 24).c_str(), where.at(i.pc).c_str(), i.text.c_str());
  }
  printHistogram(f, r, r.seedRun ? r.seed.kneeRank : 0);
  if (r.seedRun) {
    const SeedResult& s = r.seed;
    std::fprintf(f, "\nthreshold: %llu executions, ", static_cast<unsigned long long>(s.threshold));
    if (s.automatic)
      std::fprintf(f, "chosen at the knee, i%zu: the point of the sorted cumulative coverage curve (i/m, executions of "
                  "i1..i / all) farthest above its chord from (0,0) to (1,1), where an instruction's executions fall "
                  "below the average, %llu / %zu = %.1f\n",
                  s.kneeRank, static_cast<unsigned long long>(r.executed), r.instructions.size(),
                  r.instructions.empty() ? 0.0 : double(r.executed) / double(r.instructions.size()));
    else
      std::fprintf(f, "given (--threshold): %zu instructions are at or above it\n", s.kneeRank);
    std::fprintf(f, "\nseed method (melting): %llu of %llu executed instructions kept (%s); %llu chunks, %llu distinct, "
                "smallest %llu, largest %llu\n",
                static_cast<unsigned long long>(s.keptInstructions), static_cast<unsigned long long>(r.executed),
                percent(s.keptInstructions, r.executed).c_str(), static_cast<unsigned long long>(s.chunks),
                static_cast<unsigned long long>(s.distinctChunks), static_cast<unsigned long long>(s.smallestChunk),
                static_cast<unsigned long long>(s.largestChunk));
    std::fprintf(f, "  distinct chunks by length x count (cyclic: period <= length / 2):\n");
    std::fprintf(f, "  %10s %8s %8s  %s\n", "count", "length", "period", "first instructions");
    for (const Chunk& c : s.topChunks) {
      std::string first;
      for (size_t k = 0; k < std::min<size_t>(c.insns.size(), 8); ++k) first += "i" + std::to_string(c.insns[k] + 1) + " ";
      if (c.insns.size() > 8) first += "...";
      std::fprintf(f, "  %10llu %8zu %8zu  %s%s\n", static_cast<unsigned long long>(c.count), c.insns.size(), c.period,
                  first.c_str(), 2 * c.period <= c.insns.size() ? "(cyclic)" : "");
    }
    for (size_t k = 0; k < s.topChunks.size() && k < 3; ++k) {
      const Chunk& c = s.topChunks[k];
      std::fprintf(f, "\n  chunk %zu parsed (the seed's Table 2; --json has every chunk's): %zu distinct instructions\n", k + 1,
                  c.intervals.size());
      std::fprintf(f, "  %8s %10s  %-8s %-40s %s\n", "j", "COUNT", "pc", "PS.INS", "PS.INTERVAL");
      for (size_t n = 0; n < c.intervals.size() && n < 16; ++n) {
        const IntervalRow& row = c.intervals[n];
        std::string iv;
        for (size_t d : row.intervals) iv += (iv.empty() ? "" : ", ") + std::to_string(d);
        const Instruction& i = r.instructions[row.insn];
        std::fprintf(f, "  %8zu %10llu  %-8s %-40s %s\n", row.first, static_cast<unsigned long long>(row.count),
                    hex(i.pc).c_str(), i.text.substr(0, 40).c_str(), iv.empty() ? "-" : iv.c_str());
      }
      if (c.intervals.size() > 16) std::fprintf(f, "  ... %zu more\n", c.intervals.size() - 16);
    }
    std::fprintf(f, "\n  sequences: the top %zu of %llu by length x occurrences\n", s.sequences.size(),
                static_cast<unsigned long long>(s.sequencesFound));
    for (size_t k = 0; k < s.sequences.size(); ++k) printSequence(f, r, where, k + 1, s.sequences[k], true);
  }
  if (r.exactRun) {
    const ExactResult& e = r.exact;
    std::fprintf(f, "\nexact method: %llu distinct candidate sequences (whole blocks, at most %u instructions); top %zu by "
                "length x non-overlapping occurrences\n",
                static_cast<unsigned long long>(e.candidates), e.maxLength, e.sequences.size());
    for (size_t k = 0; k < e.sequences.size(); ++k) printSequence(f, r, where, k + 1, e.sequences[k], false);
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
    std::fprintf(f, "\nagreement (the seed's top %zu against the exact top %zu):\n", r.seed.sequences.size(), r.exact.sequences.size());
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
      std::fprintf(f, "  seed #%zu: %s\n", k + 1, what.c_str());
    }
    for (size_t e = 0; e < r.exact.sequences.size(); ++e)
      if (!matched[e]) std::fprintf(f, "  exact #%zu: not in the seed's top\n", e + 1);
  }
}

// The JSON of one sequence.
void sequenceJson(JsonWriter& j, const Report& r, const Sequence& q, bool seed) {
  j.beginObject();
  j.key("pcs").beginArray();
  for (uint64_t pc : q.pcs) j.value(hex(pc));
  j.endArray();
  j.key("ranks").beginArray();
  for (uint32_t i : q.insns) j.value(i + 1);
  j.endArray();
  j.key("occurrences").value(q.occurrences);
  j.key("length").value(q.insns.size());
  j.key("coverage").value(q.coverage());
  j.key("share").value(r.executed ? double(q.coverage()) / double(r.executed) : 0.0);
  j.key("procedures").value(procedures(r, q));
  if (seed) {
    j.key("cyclic").value(q.cyclic);
    j.key("chunks").value(q.chunks);
  }
  // The static share: distinct addresses of the sequence per procedure,
  // against the procedure's instructions and the program's.
  j.key("static").beginObject().key("instructions").value(q.staticInstructions);
  j.key("program_share").value(r.programInstructions ? double(q.staticInstructions) / double(r.programInstructions) : 0.0);
  j.key("procedures").beginArray();
  for (const StaticShare& x : q.staticShares)
    j.beginObject().key("name").value(x.procedure).key("instructions").value(x.instructions).key("of").value(x.procedureSize).endObject();
  j.endArray().endObject();
  j.endObject();
}

}  // namespace

std::string sourceLine(const debuginfo::LineTable& lines, uint64_t pc) {
  const debuginfo::SourceLine l = lines.lookup(pc);
  if (!l.file) return "?";
  const size_t slash = l.file->rfind('/');
  return (slash == std::string::npos ? *l.file : l.file->substr(slash + 1)) + ":" + std::to_string(l.line);
}

void writeText(std::FILE* f, const std::string& dir, const Report& r, size_t coverageRows) {
  const debuginfo::LineTable lines(r.program);
  printReport(f, dir, r, Where{lines}, coverageRows);
}

void writeJson(std::FILE* f, const std::string& dir, const Report& r) {
  const debuginfo::LineTable lines(r.program);
  const Where where{lines};
  // Laid out one member to a line, as people read it too.
  JsonWriter j(f, JsonStyle{1, false});
  j.beginObject();
  j.key("trace").value(dir);
  j.key("program").value(r.program);
  j.key("identity").value(r.identity == Identity::Address ? "address" : "text");
  j.key("executed").value(r.executed);
  j.key("threads").value(r.threads);
  j.key("segments").value(r.segments);
  j.key("incomplete_threads").value(r.incompleteThreads);
  j.key("instructions").beginArray();
  for (const Instruction& i : r.instructions) {
    j.beginObject();
    j.key("pc").value(hex(i.pc));
    j.key("executions").value(i.executions);
    j.key("procedure").value(demangle(i.procedure));
    j.key("source").value(where.at(i.pc));
    j.key("text").value(i.text);
    j.endObject();
  }
  j.endArray();
  if (r.seedRun) {
    const SeedResult& s = r.seed;
    j.key("seed").beginObject();
    j.key("threshold").value(s.threshold);
    j.key("automatic").value(s.automatic);
    j.key("knee_rank").value(s.kneeRank);
    j.key("kept").value(s.keptInstructions);
    j.key("chunks").value(s.chunks);
    j.key("distinct_chunks").value(s.distinctChunks);
    j.key("smallest_chunk").value(s.smallestChunk);
    j.key("largest_chunk").value(s.largestChunk);
    j.key("top_chunks").beginArray();
    for (const Chunk& c : s.topChunks) {
      j.beginObject();
      j.key("count").value(c.count);
      j.key("length").value(c.insns.size());
      j.key("period").value(c.period);
      j.key("pcs").beginArray();
      for (uint32_t i : c.insns) j.value(hex(r.instructions[i].pc));
      j.endArray();
      // The seed's parse (its Table 2): per distinct instruction, its first
      // position j, COUNT and PS.INTERVAL.
      j.key("intervals").beginArray();
      for (const IntervalRow& row : c.intervals) {
        j.beginObject().key("j").value(row.first).key("count").value(row.count);
        j.key("pc").value(hex(r.instructions[row.insn].pc)).key("intervals").beginArray();
        for (size_t d : row.intervals) j.value(d);
        j.endArray().endObject();
      }
      j.endArray();
      j.endObject();
    }
    j.endArray();
    j.key("sequences_found").value(s.sequencesFound);
    j.key("program_instructions").value(r.programInstructions);
    j.key("sequences").beginArray();
    for (const Sequence& q : s.sequences) sequenceJson(j, r, q, true);
    j.endArray();
    j.endObject();
  }
  if (r.exactRun) {
    j.key("exact").beginObject();
    j.key("max_length").value(r.exact.maxLength);
    j.key("candidates").value(r.exact.candidates);
    j.key("sequences").beginArray();
    for (const Sequence& q : r.exact.sequences) sequenceJson(j, r, q, false);
    j.endArray();
    j.endObject();
  }
  j.endObject();
}

}  // namespace atomx::melt
