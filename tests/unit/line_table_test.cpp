// debuginfo::LineTable against the linker's view of code without DWARF:
// `_start` (crt1.o, built without debug information) must have no source
// line in any corpus program ($ATOMX_CORPUS_DIR/bin, default
// ~/.cache/atomx-corpus/bin; skipped without it).  pbzip2's main ends with a
// line row at its sequence's end address; kept, it gave _start main's last
// line (basic_string.h:795: the prof oracle's "_start, basic_string.h:795:
// Ir: tool 143, callgrind 0", --full oracles-b).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "debuginfo/LineTable.h"
#include "elf/ElfImage.h"

namespace atomx {
namespace {

TEST(LineTable, StartHasNoLineInCorpus) {
  const char* dir = std::getenv("ATOMX_CORPUS_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path bin = std::filesystem::path(dir ? dir : std::string(home ? home : "") + "/.cache/atomx-corpus") / "bin";
  if (!std::filesystem::is_directory(bin)) GTEST_SKIP() << "no corpus: " << bin;
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(bin)) {
    const std::string path = e.path().string();
    const elf::ElfImage image = elf::ElfImage::load(path);
    const debuginfo::LineTable lines(path);
    if (lines.empty()) continue;
    for (const elf::Symbol& s : image.symbols()) {
      if (s.name != "_start" || s.value == 0) continue;
      const debuginfo::SourceLine l = lines.lookup(s.value);
      EXPECT_EQ(l.file, nullptr) << path << ": _start at 0x" << std::hex << s.value << " given "
                                 << (l.file ? *l.file : "") << ":" << std::dec << l.line;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace atomx
