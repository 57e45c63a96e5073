// debuginfo::LineTable against the linker's view of code without DWARF:
// `_start` (crt1.o, built without debug information) must have no source
// line in any corpus program ($ATOMX_CORPUS_DIR/bin, default
// ~/.cache/atomx-corpus/bin; skipped without it).  pbzip2's main ends with a
// line row at its sequence's end address; kept, it gave _start main's last
// line (basic_string.h:795: the prof oracle's "_start, basic_string.h:795:
// Ir: tool 143, callgrind 0", --full oracles-b).
//
// And every function's first instruction against llvm-symbolizer (LLVM's
// own DWARF reader; binutils' addr2line is no oracle here: where gcc's rows
// change files at one line number it keeps the first row's file, as
// Valgrind does, lzip's LZ_encoder::reset encoder.cc:281 for encoder.h:281):
// muparser's f0 starts where another sequence of its
// unit ends with a row at its end address; libdw sorts that row after f0's
// rows, and it gave f0 basic_string.h:795 instead of muParserTest.h:59
// (--full oracles-b, prof on muparser).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "debuginfo/LineTable.h"
#include "elf/ElfImage.h"

namespace atomx {
namespace {

std::filesystem::path corpusBin() {
  const char* dir = std::getenv("ATOMX_CORPUS_DIR");
  const char* home = std::getenv("HOME");
  return std::filesystem::path(dir ? dir : std::string(home ? home : "") + "/.cache/atomx-corpus") / "bin";
}

// "file:line" as the comparison sees it: the file's base name, or "" for no line.
std::string place(const std::string& file, unsigned line) {
  if (file.empty() || line == 0) return "";
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
}

TEST(LineTable, StartHasNoLineInCorpus) {
  const std::filesystem::path bin = corpusBin();
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

TEST(LineTable, FunctionStartsAsLlvmSymbolizerInCorpus) {
  const std::filesystem::path bin = corpusBin();
  if (!std::filesystem::is_directory(bin)) GTEST_SKIP() << "no corpus: " << bin;
  int checked = 0, programs = 0;
  for (const char* name : {"muparser-gcc-O2", "gzip-gcc-O2", "lua-gcc-O2", "lzip-gcc-O2", "pbzip2-gcc-O2"}) {
    const std::string path = (bin / name).string();
    if (!std::filesystem::exists(path)) continue;
    ++programs;
    const elf::ElfImage image = elf::ElfImage::load(path);
    const debuginfo::LineTable lines(path);
    std::map<uint64_t, std::string> starts;  // function start -> a name
    for (const elf::Symbol& s : image.symbols())
      if (s.type == STT_FUNC && s.value != 0 && s.size != 0) starts.emplace(s.value, s.name);
    const std::string list = testing::TempDir() + "line_table_addrs";
    {
      FILE* f = std::fopen(list.c_str(), "w");
      ASSERT_NE(f, nullptr);
      for (const auto& [a, n] : starts) std::fprintf(f, "0x%llx\n", (unsigned long long)a);
      std::fclose(f);
    }
    FILE* p = popen(("llvm-symbolizer --no-inlines --output-style=GNU --functions=none --obj='" + path + "' < '" + list + "'").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    for (const auto& [a, n] : starts) {
      ASSERT_NE(std::fgets(buf, sizeof buf, p), nullptr) << path << ": llvm-symbolizer stopped";
      std::string text(buf);
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      if (auto d = text.find(" (discriminator"); d != std::string::npos) text.resize(d);
      const auto colon = text.rfind(':');
      const std::string file = text.substr(0, colon);
      const std::string lineText = text.substr(colon + 1);
      const unsigned want = file == "??" || lineText == "?" ? 0 : unsigned(std::strtoul(lineText.c_str(), nullptr, 10));
      const debuginfo::SourceLine got = lines.lookup(a);
      EXPECT_EQ(place(got.file ? *got.file : "", got.line), place(file == "??" ? "" : file, want))
          << path << ": " << n << " at 0x" << std::hex << a;
      ++checked;
    }
    EXPECT_EQ(pclose(p), 0) << path;
  }
  if (programs == 0) GTEST_SKIP() << "no corpus program in " << bin;
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace atomx
