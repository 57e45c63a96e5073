#include "debuginfo/LineTable.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
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
    if (dwarf_offdie(dwarf, offset + headerSize, &cu) && dwarf_getsrclines(&cu, &lines, &count) == 0) {
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
        // libdw sorts a unit's rows by address, an end of sequence before a
        // row at the same address, so a row at its own sequence's end
        // address (covering no byte: gcc ends pbzip2's main with 0x4b47
        // line 795, 0x4b57 line 795, end 0x4b57) comes after the end and
        // would give its line to the code up to the unit's next row
        // (_start, which has none).  It repeats the row before the end;
        // a row that starts another sequence there would not, in practice.
        const size_t n = rows_.size();
        if (!end && n >= 2 && rows_[n - 1].file == kEndOfSequence && rows_[n - 1].address == addr &&
            rows_[n - 2].file == file && rows_[n - 2].line == uint32_t(lineNo))
          continue;
        rows_.push_back({addr, file, uint32_t(lineNo)});
      }
    }
    offset = next;
  }
  dwarf_end(dwarf);
  close(fd);
  // Within one address, the last row of a line program wins (later rows
  // refine earlier ones); an end of sequence sorts before a row that starts
  // the next sequence at the same address.
  std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
    if (a.address != b.address) return a.address < b.address;
    return a.file == kEndOfSequence && b.file != kEndOfSequence;
  });
}

SourceLine LineTable::lookup(uint64_t address) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), address, [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return {};
  --it;
  if (it->file == kEndOfSequence || it->line == 0) return {};
  return {&files_[it->file], it->line};
}

}  // namespace atomx::debuginfo
