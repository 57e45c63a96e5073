// ease.cg: the costs of report 1 (Ir), of memory references (Dr, Dw, as
// cachegrind counts them: a read-modify-write is one Dr) and of conditional
// branches (Bc), per source file, function and line, in cachegrind's file
// format (<atomx/cachegrind.hpp>), so that `cg_annotate ease.cg` shows them
// beside the source.
#include "ease_anal.h"

#include "ease_facts.h"

#include <atomx/cachegrind.hpp>

#include <array>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ease {

void writeCachegrind(FILE* out, const long* blockCounts, const RunCosts& run) {
  using Cost = std::array<uint64_t, 4>;
  // (file, function) -> line -> cost; by the facts' strings, each kept once
  // (so a pointer is its text), put in order of their text at the end.
  using Where = std::pair<const char*, const char*>;
  std::unordered_map<uint64_t, Cost> lines;  // (index of where << 32 | line) -> cost
  std::vector<Where> wheres;
  std::map<Where, uint32_t> whereIds;
  size_t next = 0;
  for (long b = 0; b < AtomxBlockCount(); ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    const AtomxBlockFacts& block = *AtomxBlock(b);
    const char* fn = AtomxProc(block.proc)->name;
    for (uint32_t k = block.firstInst; k < block.firstInst + block.instCount; ++k) {
      const AtomxInstNames i = AtomxInstNamesOf(k);
      const Events& e = run.at(next++);
      auto [w, fresh] = whereIds.try_emplace({*i.file ? i.file : "???", fn}, uint32_t(wheres.size()));
      if (fresh) wheres.push_back(w->first);
      Cost& line = lines[uint64_t(w->second) << 32 | i.line];
      const long c[4] = {n * e.ir, n * e.dr, n * e.dw, n * e.bc};
      for (size_t x = 0; x < 4; ++x) line[x] += uint64_t(c[x]);
    }
  }
  atomx::cachegrind::CostTable costs(4);
  for (const auto& [key, c] : lines) {
    const Where& w = wheres[key >> 32];
    costs.add(w.first, w.second, unsigned(key), c.data());
  }
  atomx::cachegrind::Writer cg(out, {"atomx -T ease: a rep-prefixed instruction counts once per execution"},
                               AtomxProgramFile(), {"Ir", "Dr", "Dw", "Bc"});
  costs.write(cg);
  cg.summary(costs.totals());
}

}  // namespace ease
