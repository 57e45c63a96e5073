#include "debuginfo/LineTable.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

namespace atomx::debuginfo {

namespace {
constexpr uint32_t kEndOfSequence = UINT32_MAX;
}

LineTable::LineTable(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  if (!dwarf) {
    close(fd);
    return;
  }
  std::unordered_map<std::string, uint32_t> fileIndex;
  Dwarf_Off offset = 0, next;
  size_t headerSize;
  while (dwarf_nextcu(dwarf, offset, &next, &headerSize, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    Dwarf_Lines* lines;
    size_t count;
    const size_t unitStart = rows_.size();
    if (dwarf_offdie(dwarf, offset + headerSize, &cu) && dwarf_getsrclines(&cu, &lines, &count) == 0) {
      // The unit's code: a row's line holds only there (below, lookup).
      Dwarf_Addr base, start, stop;
      for (ptrdiff_t r = 0; (r = dwarf_ranges(&cu, r, &base, &start, &stop)) > 0;)
        if (stop > start) code_.push_back({start, stop});
      // A relative name (a source named relative to where the compiler ran)
      // is joined to the unit's compilation directory, as Valgrind does, so
      // that tools reading the name from elsewhere find the file.
      Dwarf_Attribute attr;
      const char* compDir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr));
      for (size_t i = 0; i < count; ++i) {
        Dwarf_Line* l = dwarf_onesrcline(lines, i);
        Dwarf_Addr addr;
        int lineNo = 0;
        bool end = false;
        if (dwarf_lineaddr(l, &addr) != 0) continue;
        dwarf_lineno(l, &lineNo);
        dwarf_lineendsequence(l, &end);
        uint32_t file = kEndOfSequence;
        if (!end) {
          const char* name = dwarf_linesrc(l, nullptr, nullptr);
          std::string full = name ? name : "";
          if (!full.empty() && full[0] != '/' && compDir && compDir[0] == '/')
            full = (std::filesystem::path(compDir) / full).lexically_normal().string();
          auto [it, added] = fileIndex.emplace(full, uint32_t(files_.size()));
          if (added) files_.push_back(it->first);
          file = it->second;
        }
        rows_.push_back({addr, file, uint32_t(lineNo)});
      }
      dropTrailingRows(unitStart);
    }
    offset = next;
  }
  dwarf_end(dwarf);
  close(fd);
  // Within one address, the last row of a line program wins (later rows
  // refine earlier ones); an end of sequence sorts before a row that starts
  // the next sequence at the same address.
  std::sort(code_.begin(), code_.end());
  std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
    if (a.address != b.address) return a.address < b.address;
    return a.file == kEndOfSequence && b.file != kEndOfSequence;
  });
  // Test hook: read as Valgrind 3.19 does, which keeps a row's file for
  // the rows after it at other addresses with the same line number (the
  // prof oracle, tests/tools/prof/tooltest.py, must then fail).
  if (std::getenv("ATOMX_TEST_LINES_AS_VALGRIND"))
    for (size_t i = 1; i < rows_.size(); ++i) {
      Row& r = rows_[i];
      const Row& before = rows_[i - 1];
      if (r.file != kEndOfSequence && before.file != kEndOfSequence && before.line == r.line) r.file = before.file;
    }
}

// A sequence may end with a row at its end address (gcc: muparser's
// basic_string.h:795 row at 0x389f0, where its sequence ends): it covers no
// code.  libdw sorts a unit's rows by address with an end of sequence
// before the other rows at its address, and keeps no sequence per row, so
// that row sorts after its own end, among the rows of a sequence that
// starts there (the function f0 at 0x389f0, muParserTest.h:59), and last
// when its sequence comes later in the line program: the last row at the
// address, it gave f0 its line (the prof oracle: "f0, basic_string.h:795:
// Ir: tool 60, callgrind 0").  Such a row repeats its sequence's row before
// it (every one in the corpus's 18 -O2 builds does, read in program order
// with readelf), so where the rows after an end end with rows that repeat
// the file and line of the row before the end, and another row there does
// not, those last rows are dropped.  Where every row there repeats it, the
// rows stay: whichever holds, the line is the same (tls_threads at -O0:
// two functions of tuple:233 back to back).
void LineTable::dropTrailingRows(size_t from) {
  for (size_t e = from + 1; e < rows_.size(); ++e) {
    const Row& end = rows_[e];
    if (end.file != kEndOfSequence) continue;
    const Row& before = rows_[e - 1];
    if (before.file == kEndOfSequence || before.address >= end.address) continue;
    size_t last = e + 1;  // rows after the end at its address: [e + 1, last)
    while (last < rows_.size() && rows_[last].address == end.address && rows_[last].file != kEndOfSequence) ++last;
    auto repeats = [&](const Row& r) { return r.file == before.file && r.line == before.line; };
    size_t keep = last;
    while (keep > e + 1 && repeats(rows_[keep - 1])) --keep;
    if (keep == last || keep == e + 1) continue;  // the last row differs, or every row repeats
    rows_.erase(rows_.begin() + std::ptrdiff_t(keep), rows_.begin() + std::ptrdiff_t(last));
  }
}

SourceLine LineTable::lookup(uint64_t address) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), address, [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return {};
  --it;
  if (it->file == kEndOfSequence || it->line == 0) return {};
  // Outside every unit's code no row holds, whatever its sequence says: gcc
  // ends pbzip2's main with a row at its sequence's end address (0x4b57
  // line 795, the end also at 0x4b57), which libdw sorts after the end, so
  // it reached to the next row and gave _start (crt1.o, no DWARF) main's
  // last line.  (A unit without ranges leaves the rows as they are.)
  if (!code_.empty()) {
    auto c = std::upper_bound(code_.begin(), code_.end(), std::pair<uint64_t, uint64_t>(address, UINT64_MAX));
    if (c == code_.begin() || address >= std::prev(c)->second) return {};
  }
  return {&files_[it->file], it->line};
}

}  // namespace atomx::debuginfo
