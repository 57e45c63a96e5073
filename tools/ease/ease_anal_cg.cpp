// ease.cg: the costs of report 1 (Ir), of memory references (Dr, Dw, as
// cachegrind counts them: a read-modify-write is one Dr) and of conditional
// branches (Bc), per source file, function and line, in cachegrind's file
// format, so that `cg_annotate ease.cg` shows them beside the source.
#include "ease_anal.h"

#include <array>
#include <map>
#include <string>
#include <utility>

namespace ease {

void writeCachegrind(FILE* out, const long* blockCounts) {
  using Cost = std::array<long, 4>;
  std::map<std::pair<std::string, std::string>, std::map<int, Cost>> costs;  // (file, function) -> line -> cost
  Cost total{};
  for (long b = 0; b < in.nBlocks; ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    const std::string fn = in.names + in.procName[in.blockProc[b]];
    for (int r = in.lineStart[b]; r < in.lineStart[b + 1]; ++r) {
      const int* rec = in.lineRec + 5 * r;
      const std::string file = in.names + in.lineInfo[2 * rec[0]];
      Cost& c = costs[{file, fn}][in.lineInfo[2 * rec[0] + 1]];
      for (int e = 0; e < 4; ++e) c[size_t(e)] += n * rec[1 + e], total[size_t(e)] += n * rec[1 + e];
    }
  }
  std::fprintf(out, "desc: atomx -T ease: a rep-prefixed instruction counts once per execution\n");
  std::fprintf(out, "cmd: %s\nevents: Ir Dr Dw Bc\n", in.program);
  std::string lastFile;
  for (const auto& [where, lines] : costs) {
    if (where.first != lastFile) std::fprintf(out, "fl=%s\n", where.first.c_str()), lastFile = where.first;
    std::fprintf(out, "fn=%s\n", where.second.c_str());
    for (const auto& [line, c] : lines) std::fprintf(out, "%d %ld %ld %ld %ld\n", line, c[0], c[1], c[2], c[3]);
  }
  std::fprintf(out, "summary: %ld %ld %ld %ld\n", total[0], total[1], total[2], total[3]);
}

}  // namespace ease
