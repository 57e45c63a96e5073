// LineTable: original address -> source file and line, from the program's
// DWARF .debug_line, read with elfutils' libdw (docs/DEPENDENCIES.md).
// Built once, on first use, from every compilation unit's line program, so
// it works without .debug_aranges (clang does not emit them by default).
// File names are absolute when the compilation directory is known: a name
// the line program gives relative to it is joined to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace atomx::debuginfo {

struct SourceLine {
  const std::string* file = nullptr;  // null when unknown
  unsigned line = 0;
};

class LineTable {
 public:
  // Reads `path`'s line tables; a file without DWARF gives an empty table.
  explicit LineTable(const std::string& path);
  SourceLine lookup(uint64_t address) const;
  bool empty() const { return rows_.empty(); }

 private:
  struct Row {
    uint64_t address;
    uint32_t file;  // index in files_; UINT32_MAX ends a sequence
    uint32_t line;
  };
  void dropTrailingRows(size_t from);  // of the unit whose rows start at `from`
  std::vector<Row> rows_;  // sorted by address
  std::vector<std::pair<uint64_t, uint64_t>> code_;  // the units' address ranges, sorted
  std::vector<std::string> files_;
};

}  // namespace atomx::debuginfo
