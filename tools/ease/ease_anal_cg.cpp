// ease.cg: the costs of report 1 (Ir), of memory references (Dr, Dw, as
// cachegrind counts them: a read-modify-write is one Dr) and of conditional
// branches (Bc), per source file, function and line, in cachegrind's file
// format, so that `cg_annotate ease.cg` shows them beside the source.
#include "ease_anal.h"

#include "ease_facts.h"

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ease {

void writeCachegrind(FILE* out, const long* blockCounts, const RunCosts& run) {
  using Cost = std::array<long, 4>;
  // (file, function) -> line -> cost; by the facts' strings, each kept once
  // (so a pointer is its text), put in order of their text at the end.
  using Where = std::pair<const char*, const char*>;
  std::unordered_map<uint64_t, Cost> lines;  // (index of where << 32 | line) -> cost
  std::vector<Where> wheres;
  std::map<Where, uint32_t> whereIds;
  Cost total{};
  size_t next = 0;
  for (long b = 0; b < AtomxBlockCount(); ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    const AtomxBlockFacts& block = *AtomxBlock(b);
    const char* fn = AtomxProc(block.proc)->name;
    for (uint32_t k = block.firstInst; k < block.firstInst + block.instCount; ++k) {
      const AtomxInstNames i = AtomxInstNamesOf(k);
      const Events& e = run.at(next++);
      const Cost c = {n * e.ir, n * e.dr, n * e.dw, n * e.bc};
      auto [w, fresh] = whereIds.try_emplace({*i.file ? i.file : "???", fn}, uint32_t(wheres.size()));
      if (fresh) wheres.push_back(w->first);
      Cost& line = lines[uint64_t(w->second) << 32 | i.line];
      for (size_t x = 0; x < 4; ++x) line[x] += c[x], total[x] += c[x];
    }
  }
  std::map<std::pair<std::string, std::string>, std::map<unsigned, Cost>> costs;  // in cg_annotate's order
  for (const auto& [key, c] : lines) {
    const Where& w = wheres[key >> 32];
    costs[{w.first, w.second}][unsigned(key)] = c;
  }
  std::fprintf(out, "desc: atomx -T ease: a rep-prefixed instruction counts once per execution\n");
  std::fprintf(out, "cmd: %s\nevents: Ir Dr Dw Bc\n", AtomxProgramFile());
  std::string lastFile;
  for (const auto& [where, lines] : costs) {
    if (where.first != lastFile) std::fprintf(out, "fl=%s\n", where.first.c_str()), lastFile = where.first;
    std::fprintf(out, "fn=%s\n", where.second.c_str());
    for (const auto& [line, c] : lines) std::fprintf(out, "%u %ld %ld %ld %ld\n", line, c[0], c[1], c[2], c[3]);
  }
  std::fprintf(out, "summary: %ld %ld %ld %ld\n", total[0], total[1], total[2], total[3]);
}

}  // namespace ease
