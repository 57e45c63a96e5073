// Analysis routines of the prof tool (prof_inst.cpp).  The program counts
// its basic blocks exactly (atomx::Counters::count, exact in every thread).
// At the end, block counts times what each block holds (atomx's embedded
// facts: its instructions and their source lines) give the instructions
// executed per procedure and per source line: prof.out, prof.json and a
// callgrind file (events: Ir) for callgrind_annotate and KCachegrind.
#include <atomx/cachegrind.hpp>
#include <atomx/facts.h>
#include <atomx/report.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {
struct Line { int proc, file, line; };
struct Entry { int block, line, insts; };

const uint64_t* counts;  // per block id: exact counts
long nproc, nblock, nline, top;
std::vector<std::string> fileNames;
std::vector<Line> lines;      // per (procedure, file, line), grouped by procedure
std::vector<Entry> entries;   // per (block, line): the block's instructions of that line
std::string callgrindPath, programPath;

// A procedure's name as people read it, demangled once, when a report
// first names it.
const std::string& procName(long p) {
  static std::vector<std::string> names(static_cast<size_t>(AtomxProcCount()));
  static std::vector<bool> done(static_cast<size_t>(AtomxProcCount()));
  if (!done[size_t(p)]) names[size_t(p)] = atomx::demangle(AtomxProc(p)->name), done[size_t(p)] = true;
  return names[size_t(p)];
}

// The tallies, from the facts: lines in the order the program's
// instructions first show them, procedure by procedure, of the blocks that
// ran (a short process of a big program reads little at its end).  Files
// by the string's address (the facts keep each distinct string once); a
// line's key within its procedure is (file, line).
void readFacts() {
  nproc = AtomxProcCount(), nblock = AtomxBlockCount();
  std::unordered_map<const char*, int> fileIds;
  std::unordered_map<uint64_t, int> lineIds;  // (file << 32 | line) -> line index, per procedure
  for (long p = 0; p < nproc; ++p) {
    lineIds.clear();
    const AtomxProcFacts* pf = AtomxProc(p);
    for (uint32_t b = pf->firstBlock; b < pf->firstBlock + pf->blockCount; ++b) {
      if (!counts[b]) continue;
      const AtomxBlockFacts* bf = AtomxBlock(b);
      std::map<int, int> perLine;  // line index -> instructions in this block
      for (uint32_t i = bf->firstInst; i < bf->firstInst + bf->instCount; ++i) {
        const AtomxInstNames x = AtomxInstNamesOf(i);
        auto [f, newFile] = fileIds.try_emplace(x.file, int(fileIds.size()));
        if (newFile) fileNames.push_back(*x.file ? x.file : "???");
        auto [l, newLine] = lineIds.try_emplace(uint64_t(f->second) << 32 | x.line, int(lines.size()));
        if (newLine) lines.push_back({int(p), f->second, int(x.line)});
        ++perLine[l->second];
      }
      for (auto [line, k] : perLine) entries.push_back({int(b), line, k});
    }
  }
  nline = long(lines.size());
  programPath = AtomxProgramFile();
}

// 1234567 -> "1,234,567": counts are read by people first.
double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; }

// Which file a procedure's callgrind cost lines start from (fl=): the one
// most of its executed instructions come from (inlined code aside).
std::vector<int> mainFiles(const std::vector<uint64_t>& lineCount) {
  std::vector<int> best(size_t(nproc), -1);
  std::vector<uint64_t> bestCount(size_t(nproc), 0);
  for (const Line& L : lines)
    if (best[size_t(L.proc)] < 0) best[size_t(L.proc)] = L.file;
  // Sum per (procedure, file) over the lines, which are grouped by procedure.
  for (long l = 0; l < nline;) {
    const int p = lines[l].proc;
    std::vector<std::pair<int, uint64_t>> byFile;
    for (; l < nline && lines[l].proc == p; ++l) {
      auto it = std::find_if(byFile.begin(), byFile.end(), [&](auto& e) { return e.first == lines[l].file; });
      if (it == byFile.end()) byFile.emplace_back(lines[l].file, lineCount[size_t(l)]);
      else it->second += lineCount[size_t(l)];
    }
    for (auto& [f, c] : byFile)
      if (c > bestCount[size_t(p)]) bestCount[size_t(p)] = c, best[size_t(p)] = f;
  }
  return best;
}

void writeCallgrind(const std::vector<uint64_t>& procCount, const std::vector<uint64_t>& lineCount, uint64_t total) {
  FILE* f = atomx::openToolOutput(callgrindPath.c_str());
  if (!f) return;
  atomx::cachegrind::CallgrindWriter cg(f, "atomx prof", int(AtomxProcessId()), programPath, {"Ir"}, &total);
  cg.object("ob", 1, programPath);
  std::vector<int> main = mainFiles(lineCount);
  auto file = [&](const char* key, int id) { cg.file(key, size_t(id) + 1, fileNames[size_t(id)]); };
  for (long l = 0; l < nline;) {
    const int p = lines[l].proc;
    long end = l;
    while (end < nline && lines[end].proc == p) ++end;
    if (procCount[size_t(p)]) {
      std::vector<long> order;
      for (long k = l; k < end; ++k)
        if (lineCount[size_t(k)]) order.push_back(k);
      std::sort(order.begin(), order.end(), [&](long a, long b) {
        auto key = [&](long k) { return std::make_tuple(lines[k].file != main[size_t(p)], lines[k].file, lines[k].line); };
        return key(a) < key(b);
      });
      file("fl", main[size_t(p)]);
      cg.function("fn", size_t(p) + 1, procName(p));
      int current = main[size_t(p)];
      for (long k : order) {
        if (lines[k].file != current) file(lines[k].file == main[size_t(p)] ? "fe" : "fi", current = lines[k].file);
        cg.cost(lines[k].line, &lineCount[size_t(k)]);
      }
      cg.endFunction();
    }
    l = end;
  }
  cg.totals(&total);
  std::fclose(f);
}
}  // namespace

extern "C" {

void ProfFinish(const uint64_t* blockCounts, const char* callgrind, long topN) {
  counts = blockCounts, callgrindPath = callgrind, top = topN;
  readFacts();
  std::vector<uint64_t> procCount(static_cast<size_t>(nproc)), lineCount(static_cast<size_t>(nline));
  uint64_t total = 0;
  for (long b = 0; b < nblock; ++b) {
    if (!counts[b]) continue;  // its record is not read
    const uint64_t n = counts[b] * uint64_t(AtomxBlock(b)->instCount);
    procCount[AtomxBlock(b)->proc] += n;
    total += n;
  }
  for (const Entry& e : entries) lineCount[size_t(e.line)] += counts[e.block] * uint64_t(e.insts);

  std::vector<long> procOrder, lineOrder;
  for (long p = 0; p < nproc; ++p)
    if (procCount[size_t(p)]) procOrder.push_back(p);
  for (long l = 0; l < nline; ++l)
    if (lineCount[size_t(l)]) lineOrder.push_back(l);
  std::stable_sort(procOrder.begin(), procOrder.end(), [&](long a, long b) { return procCount[size_t(a)] > procCount[size_t(b)]; });
  std::stable_sort(lineOrder.begin(), lineOrder.end(), [&](long a, long b) { return lineCount[size_t(a)] > lineCount[size_t(b)]; });
  auto where = [&](long l) {
    const Line& L = lines[l];
    std::string f = fileNames[size_t(L.file)];
    if (size_t s = f.rfind('/'); s != std::string::npos) f = f.substr(s + 1);
    return f + ":" + std::to_string(L.line);
  };

  if (FILE* out = atomx::openToolOutput("prof.out")) {
    std::fprintf(out, "prof: %s instructions executed in %zu procedures (of %ld), %zu source lines\n",
                 atomx::groupDigits(total).c_str(), procOrder.size(), nproc, lineOrder.size());
    std::fprintf(out, "\n%16s %6s %6s  %s\n", "instructions", "%", "cum%", "procedure");
    uint64_t cum = 0;
    for (size_t k = 0; k < procOrder.size() && long(k) < top; ++k) {
      const uint64_t c = procCount[size_t(procOrder[k])];
      cum += c;
      std::fprintf(out, "%16s %5.1f%% %5.1f%%  %s\n", atomx::groupDigits(c).c_str(), pct(c, total), pct(cum, total),
                   procName(procOrder[k]).c_str());
    }
    const bool noLines = fileNames.size() == 1 && fileNames[0] == "???";
    if (noLines) std::fprintf(out, "\nno source lines: the program has no DWARF line table (build it with -g)\n");
    else std::fprintf(out, "\n%16s %6s  %-28s %s\n", "instructions", "%", "line", "procedure");
    for (size_t k = 0; !noLines && k < lineOrder.size() && long(k) < top / 2 + 5; ++k) {
      const long l = lineOrder[k];
      std::fprintf(out, "%16s %5.1f%%  %-28s %s\n", atomx::groupDigits(lineCount[size_t(l)]).c_str(), pct(lineCount[size_t(l)], total),
                   where(l).c_str(), procName(lines[l].proc).c_str());
    }
    if (!callgrindPath.empty())
      std::fprintf(out, "\nall of it: prof.json; by line: callgrind_annotate %s\n", AtomxOutputPath(callgrindPath.c_str()));
    std::fclose(out);
  }

  if (FILE* js = atomx::openToolOutput("prof.json")) {
    atomx::JsonWriter j(js);
    j.beginObject();
    j.key("tool").value("prof");
    j.key("program").value(programPath);
    j.key("instructions").value((unsigned long long)total);
    j.key("procedures").beginArray();
    for (long p : procOrder)
      j.beginObject().key("name").value(procName(p)).key("pc").hex(AtomxProc(p)->pc)
          .key("instructions").value((unsigned long long)procCount[size_t(p)]).endObject();
    j.endArray();
    j.key("lines").beginArray();
    for (long l : lineOrder)
      j.beginObject().key("file").value(fileNames[size_t(lines[l].file)]).key("line").value(lines[l].line)
          .key("procedure").value(procName(lines[l].proc)).key("procedure_pc").hex(AtomxProc(lines[l].proc)->pc)
          .key("instructions").value((unsigned long long)lineCount[size_t(l)]).endObject();
    j.endArray();
    // Executed blocks: enough to recompute everything above per instruction.
    j.key("blocks").beginArray();
    for (long b = 0; b < nblock; ++b)
      if (uint64_t c = counts[b])
        j.beginObject().key("pc").hex(AtomxBlock(b)->pc).key("end").hex(AtomxBlock(b)->endPc)
            .key("count").value((unsigned long long)c)
            .key("instructions").value(long(AtomxBlock(b)->instCount)).endObject();
    j.endArray();
    j.endObject();
    std::fclose(js);
  }
  if (!callgrindPath.empty()) writeCallgrind(procCount, lineCount, total);
}
}
