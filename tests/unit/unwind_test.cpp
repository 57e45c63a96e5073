// Tests of src/unwind: parsing .eh_frame / .gcc_except_table and rebuilding
// them for moved code.
//
// Real inputs are small C++ programs compiled with the system compilers at
// test time (PIE and non-PIE gcc, -O0, clang, C++14 with exception
// specifications), read with a minimal <elf.h> helper; odd corners gas and
// gcc never produce (code alignment factor 4, version 3 CIEs, set_loc,
// explicit LPStart, udata4 call sites, landing pads in other procedures) are
// covered by hand-assembled sections.  One test moves a function of this
// test binary at run time (a nop before every instruction) and throws
// through the moved copy with the real libgcc unwinder.
#include <Zydis/Zydis.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "support/Error.h"
#include "unwind/EhFrame.h"

namespace u = atomx::unwind;

namespace {

// ---------------------------------------------------------------------------
// Helpers: files, commands, a minimal ELF reader.

// A private temporary directory, removed at exit.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atomx_unwind_XXXXXX";
    if (const char* d = mkdtemp(tmpl)) path = d;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

const std::string& tempDir() {
  static TempDir dir;
  if (dir.path.empty()) throw std::runtime_error("mkdtemp failed");
  return dir.path;
}

// Runs a shell command; returns its exit status, its stdout in *out.
int runCommand(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    if (out) out->append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool haveCommand(const std::string& name) {
  return runCommand("command -v " + name + " >/dev/null 2>&1") == 0;
}

struct ElfFile {
  std::vector<uint8_t> bytes;
  struct Section {
    std::string name;
    uint32_t type = 0;
    uint64_t addr = 0, offset = 0, size = 0, link = 0;
  };
  std::vector<Section> sections;
  struct Symbol {
    std::string name;
    uint64_t value = 0, size = 0;
    unsigned type = 0;
  };
  std::vector<Symbol> symbols;

  static ElfFile load(const std::string& path) {
    ElfFile f;
    std::ifstream in(path, std::ios::binary);
    f.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (f.bytes.size() < sizeof(Elf64_Ehdr)) throw std::runtime_error("not an ELF file: " + path);
    Elf64_Ehdr eh;
    std::memcpy(&eh, f.bytes.data(), sizeof eh);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
      throw std::runtime_error("not an ELF64 file: " + path);
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    for (unsigned i = 0; i < eh.e_shnum; ++i)
      std::memcpy(&sh[i], f.bytes.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr));
    const char* names = reinterpret_cast<const char*>(f.bytes.data() + sh[eh.e_shstrndx].sh_offset);
    for (const Elf64_Shdr& s : sh)
      f.sections.push_back({names + s.sh_name, s.sh_type, s.sh_addr, s.sh_offset, s.sh_size, s.sh_link});
    for (const Section& s : f.sections) {
      if (s.type != SHT_SYMTAB) continue;
      const char* str = reinterpret_cast<const char*>(f.bytes.data() + f.sections[s.link].offset);
      for (uint64_t off = s.offset; off + sizeof(Elf64_Sym) <= s.offset + s.size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, f.bytes.data() + off, sizeof sym);
        f.symbols.push_back({str + sym.st_name, sym.st_value, sym.st_size, unsigned(ELF64_ST_TYPE(sym.st_info))});
      }
    }
    return f;
  }
  const Section* section(const std::string& name) const {
    for (const Section& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  }
  u::ByteView view(const std::string& name) const {
    const Section* s = section(name);
    if (!s) return {nullptr, 0, 0};
    return {bytes.data() + s->offset, s->size, s->addr};
  }
  const Symbol* symbol(const std::string& name) const {
    for (const Symbol& s : symbols)
      if (s.name == name) return &s;
    return nullptr;
  }
  std::vector<u::RelocAt> relocs(const std::string& name) const {
    std::vector<u::RelocAt> out;
    const Section* s = section(name);
    if (!s) return out;
    for (uint64_t off = s->offset; off + sizeof(Elf64_Rela) <= s->offset + s->size; off += sizeof(Elf64_Rela)) {
      Elf64_Rela r;
      std::memcpy(&r, bytes.data() + off, sizeof r);
      out.push_back({r.r_offset, uint32_t(ELF64_R_TYPE(r.r_info))});
    }
    return out;
  }
};

const char* kProgram = R"SRC(
#include <cstdio>
#include <stdexcept>
#include <vector>
struct Guard { int* c; ~Guard() { ++*c; } };
int counter;
extern "C" __attribute__((noinline)) void thrower(int x) {
  if (x == 1) throw 42;
  if (x == 2) throw std::runtime_error("boom");
  if (x == 3) throw 3.5;
}
extern "C" __attribute__((noinline)) int catcher(int x) {
  Guard g{&counter};
  try { thrower(x); }
  catch (int v) { return v; }
  catch (const std::exception& e) { return -1; }
  catch (...) { return -2; }
  return 0;
}
extern "C" __attribute__((noinline)) int cleanup_only(int x) {
  Guard g{&counter};
  std::vector<int> v(x + 1, 3);
  thrower(x);
  return int(v.size());
}
extern "C" __attribute__((noinline)) int nested(int x) {
  try {
    try { thrower(x); } catch (int) { Guard g{&counter}; thrower(x + 1); }
  } catch (const std::runtime_error&) { return 1; }
  return 0;
}
extern "C" __attribute__((noinline)) int big_frame(int x) {
  volatile char buf[70000];
  buf[x] = 1;
  thrower(x);
  return buf[x];
}
#ifdef WITH_SPEC
extern "C" __attribute__((noinline)) void spec(int x) throw(int, std::runtime_error) { thrower(x); }
#endif
int main(int argc, char**) {
  int r = catcher(argc) + cleanup_only(argc - 1) + nested(argc) + big_frame(argc);
#ifdef WITH_SPEC
  spec(0);
#endif
  std::printf("%d %d\n", r, counter);
  return 0;
}
)SRC";

const std::vector<std::string> kProgramFunctions = {"thrower", "catcher", "cleanup_only", "nested", "big_frame", "main"};

struct Variant {
  const char* name;
  const char* compiler;
  const char* flags;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

const Variant kVariants[] = {
    {"gcc_pie_O2", "g++", "-O2"},
    {"gcc_nopie_O2", "g++", "-O2 -no-pie -fno-pic"},
    {"gcc_O0", "g++", "-O0"},
    {"gcc_cxx14_spec", "g++", "-O2 -std=c++14 -Wno-deprecated -DWITH_SPEC"},
    {"clang_pie_O2", "clang++", "-O2"},
};

// Compiles kProgram for a variant once; returns the binary's path or "".
std::string compiled(const Variant& v) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(v.name);
  if (it != cache.end()) return it->second;
  std::string& path = cache[v.name];
  if (!haveCommand(v.compiler)) return path;
  std::string src = tempDir() + "/prog.cpp";
  if (!std::filesystem::exists(src)) std::ofstream(src) << kProgram;
  std::string out = tempDir() + "/prog_" + v.name;
  std::string cmd = std::string(v.compiler) + " " + v.flags + " -Wl,--emit-relocs -o " + out + " " + src + " 2>&1";
  std::string log;
  if (runCommand(cmd, &log) != 0) {
    ADD_FAILURE() << "compiling failed: " << cmd << "\n" << log;
    return path;
  }
  path = out;
  return path;
}

// FDEs as readelf lists them: section offset -> [pc_begin, pc_end).
std::map<uint64_t, std::pair<uint64_t, uint64_t>> readelfFdes(const std::string& path, std::set<uint64_t>* cies) {
  std::string text;
  runCommand("readelf --debug-dump=frames " + path + " 2>/dev/null", &text);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> fdes;
  std::istringstream in(text);
  std::string line;
  std::regex fde(R"(^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  std::regex cie(R"(^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, fde))
      fdes[std::stoull(m[1], nullptr, 16)] = {std::stoull(m[2], nullptr, 16), std::stoull(m[3], nullptr, 16)};
    else if (std::regex_search(line, m, cie))
      cies->insert(std::stoull(m[1], nullptr, 16));
  }
  return fdes;
}

const u::Fde* fdeAt(const u::EhFrameInfo& info, uint64_t pcBegin) {
  const u::Fde* f = u::findFde(info, pcBegin);
  return f && f->pcBegin == pcBegin ? f : nullptr;
}

std::map<uint64_t, uint64_t> typeTargets(const u::Fde& f) {
  std::map<uint64_t, uint64_t> m;
  for (const u::TypeEntry& e : f.lsdaInfo.typeEntries) m[e.index] = e.target;
  return m;
}

// Checks that every advance in a CFA program uses the smallest opcode.
void expectMinimalAdvances(const std::vector<uint8_t>& prog, const std::string& what) {
  size_t i = 0;
  auto uleb = [&] {
    while (i < prog.size() && (prog[i++] & 0x80)) {
    }
  };
  while (i < prog.size()) {
    uint8_t op = prog[i++];
    if ((op & 0xc0) == 0x40) continue;
    if ((op & 0xc0) == 0x80) { uleb(); continue; }
    if ((op & 0xc0) == 0xc0) continue;
    uint64_t d = 0;
    switch (op) {
      case 0x02: d = prog[i]; i += 1; EXPECT_GE(d, 0x40u) << what; break;
      case 0x03: d = prog[i] | prog[i + 1] << 8; i += 2; EXPECT_GT(d, 0xffu) << what; break;
      case 0x04: std::memcpy(&d, &prog[i], 4); i += 4; EXPECT_GT(d, 0xffffu) << what; break;
      case 0x01: ADD_FAILURE() << what << ": set_loc left in a rewritten program"; return;
      case 0x05: case 0x09: case 0x0c: case 0x14: case 0x2f: case 0x11: case 0x12: case 0x15: uleb(); uleb(); break;
      case 0x06: case 0x07: case 0x08: case 0x0d: case 0x0e: case 0x2e: case 0x13: uleb(); break;
      case 0x0f: { size_t s = i; uleb(); uint64_t n = 0; for (size_t k = s, sh = 0; k < i; ++k, sh += 7) n |= uint64_t(prog[k] & 0x7f) << sh; i += n; break; }
      case 0x10: case 0x16: { uleb(); size_t s = i; uleb(); uint64_t n = 0; for (size_t k = s, sh = 0; k < i; ++k, sh += 7) n |= uint64_t(prog[k] & 0x7f) << sh; i += n; break; }
      default: break;  // nop, remember/restore state, ...
    }
  }
}

// Checks a new .eh_frame_hdr against the new .eh_frame.
void expectHdrMatches(const u::UnwindSections& out, uint64_t ehAddr, uint64_t hdrAddr) {
  u::EhFrameHdr hdr = u::parseEhFrameHdr({out.ehFrameHdr.data(), out.ehFrameHdr.size(), hdrAddr});
  ASSERT_EQ(out.ehFrameHdr[0], 1);
  ASSERT_EQ(out.ehFrameHdr[1], 0x1b);
  ASSERT_EQ(out.ehFrameHdr[2], 0x03);
  ASSERT_EQ(out.ehFrameHdr[3], 0x3b);
  EXPECT_EQ(hdr.ehFramePtr, ehAddr);
  u::EhFrameInfo info = u::parseEhFrame({out.ehFrame.data(), out.ehFrame.size(), ehAddr}, {nullptr, 0, 0});
  ASSERT_EQ(hdr.table.size(), info.fdes.size());
  std::map<uint64_t, const u::Fde*> byOffset;
  for (const u::Fde& f : info.fdes) byOffset[f.sectionOffset] = &f;
  for (size_t i = 0; i < hdr.table.size(); ++i) {
    if (i) {
      EXPECT_LE(hdr.table[i - 1].initialLoc, hdr.table[i].initialLoc);
    }
    auto it = byOffset.find(hdr.table[i].fdeAddr - ehAddr);
    ASSERT_NE(it, byOffset.end()) << "hdr entry " << i << " points to no FDE";
    EXPECT_EQ(it->second->pcBegin, hdr.table[i].initialLoc);
    byOffset.erase(it);
  }
  EXPECT_TRUE(byOffset.empty());
}

// ---------------------------------------------------------------------------
// Real programs.

class RealProgram : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (!haveCommand("readelf")) GTEST_SKIP() << "no readelf";
    path_ = compiled(GetParam());
    if (path_.empty()) GTEST_SKIP() << "no " << GetParam().compiler;
    elf_ = ElfFile::load(path_);
    eh_ = elf_.view(".eh_frame");
    get_ = elf_.view(".gcc_except_table");
    hdr_ = elf_.view(".eh_frame_hdr");
    ASSERT_TRUE(eh_.size && get_.size && hdr_.size);
    info_ = u::parseEhFrame(eh_, get_);
  }
  const ElfFile::Symbol& sym(const std::string& name) {
    const ElfFile::Symbol* s = elf_.symbol(name);
    if (!s) throw std::runtime_error("no symbol " + name);
    return *s;
  }
  std::string path_;
  ElfFile elf_;
  u::ByteView eh_, get_, hdr_;
  u::EhFrameInfo info_;
};

TEST_P(RealProgram, ParseMatchesReadelf) {
  std::set<uint64_t> cies;
  auto fdes = readelfFdes(path_, &cies);
  ASSERT_FALSE(fdes.empty());
  std::set<uint64_t> mineCies;
  for (const u::Cie& c : info_.cies) mineCies.insert(c.sectionOffset);
  EXPECT_EQ(mineCies, cies);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> mine;
  for (const u::Fde& f : info_.fdes) mine[f.sectionOffset] = {f.pcBegin, f.pcEnd};
  for (auto it = fdes.begin(); it != fdes.end();)  // readelf lists discarded ones too
    it = it->second.first == 0 ? fdes.erase(it) : std::next(it);
  EXPECT_EQ(mine, fdes);
  for (size_t i = 1; i < info_.fdes.size(); ++i) EXPECT_LE(info_.fdes[i - 1].pcBegin, info_.fdes[i].pcBegin);
}

TEST_P(RealProgram, EveryFunctionHasItsFde) {
  std::vector<std::string> names = kProgramFunctions;
  if (std::string(GetParam().flags).find("WITH_SPEC") != std::string::npos) names.push_back("spec");
  for (const ElfFile::Symbol& s : elf_.symbols)  // gcc's hot/cold split parts
    if (s.type == STT_FUNC && s.size && s.name.find(".cold") != std::string::npos) names.push_back(s.name);
  for (const std::string& n : names) {
    const ElfFile::Symbol& s = sym(n);
    const u::Fde* f = u::findFde(info_, s.value);
    ASSERT_NE(f, nullptr) << n;
    EXPECT_EQ(f->pcBegin, s.value) << n;
    EXPECT_EQ(f->pcEnd, s.value + s.size) << n;
    EXPECT_EQ(f->obstacle, "") << n;
    EXPECT_EQ(u::findFde(info_, s.value + s.size - 1), f) << n;
    EXPECT_EQ(u::unwindObstacle(info_, s.value, s.value + s.size), "") << n;
    if (s.size > 1) {
      EXPECT_NE(u::unwindObstacle(info_, s.value, s.value + s.size - 1), "") << n;
    }
  }
}

TEST_P(RealProgram, CatcherHasCallSitesAndTypes) {
  const ElfFile::Symbol& s = sym("catcher");
  const u::Fde* f = fdeAt(info_, s.value);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(f->lsda, 0u);
  ASSERT_TRUE(f->hasLsdaInfo);
  ASSERT_FALSE(f->callSites.empty());
  // A landing pad lies in catcher itself or in its .cold part.
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {{s.value, s.value + s.size}};
  if (const ElfFile::Symbol* c = elf_.symbol("catcher.cold")) ranges.push_back({c->value, c->value + c->size});
  bool sawCatch = false;
  for (const u::CallSite& cs : f->callSites) {
    EXPECT_GE(cs.start, f->pcBegin);
    EXPECT_LE(cs.end, f->pcEnd);
    if (!cs.landingPad) continue;
    bool inside = false;
    for (auto [b, e] : ranges) inside |= cs.landingPad >= b && cs.landingPad < e;
    EXPECT_TRUE(inside) << std::hex << cs.landingPad;
    for (int64_t filter : cs.filters) sawCatch |= filter > 0;
  }
  EXPECT_TRUE(sawCatch);
  // Three handlers: int, std::exception and catch (...) (a null entry).
  auto types = typeTargets(*f);
  EXPECT_GE(types.size(), 3u);
  int nulls = 0;
  for (auto [idx, target] : types) {
    if (!target) { ++nulls; continue; }
    // A type_info (absolute encoding) or a data slot holding its address
    // (indirect: gcc's DW.ref._ZTI*, clang's unnamed stubs in .data).
    bool named = false;
    for (const ElfFile::Symbol& sy : elf_.symbols) named |= sy.value == target && sy.name.find("_ZTI") != std::string::npos;
    for (const char* sec : {".data", ".data.rel.ro", ".bss", ".got"})
      if (const ElfFile::Section* d = elf_.section(sec)) named |= target >= d->addr && target < d->addr + d->size;
    EXPECT_TRUE(named) << "type entry " << idx << " -> " << std::hex << target;
  }
  EXPECT_EQ(nulls, 1);
}

TEST(UnwindRealProgram, ExceptionSpecification) {
  const Variant& v = kVariants[3];
  std::string path = compiled(v);
  if (path.empty()) GTEST_SKIP() << "no " << v.compiler;
  ElfFile elf = ElfFile::load(path);
  u::EhFrameInfo info = u::parseEhFrame(elf.view(".eh_frame"), elf.view(".gcc_except_table"));
  const u::Fde* f = fdeAt(info, elf.symbol("spec")->value);
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->hasLsdaInfo);
  bool negative = false;
  for (const u::CallSite& cs : f->callSites)
    for (int64_t filter : cs.filters) negative |= filter < 0;
  EXPECT_TRUE(negative);
  EXPECT_EQ(typeTargets(*f).size(), 2u);
}

TEST_P(RealProgram, IdentityRebuildIsByteIdentical) {
  u::Translate none = [](uint64_t) { return std::optional<uint64_t>(); };
  u::UnwindLayout plan = u::planUnwind(info_, eh_, get_, {}, none);
  u::UnwindSections out = u::buildUnwind(info_, eh_, get_, elf_.relocs(".rela.gcc_except_table"), {}, none,
                                         eh_.addr, hdr_.addr, 0x7000000);
  EXPECT_EQ(plan.ehFrameSize, out.ehFrame.size());
  EXPECT_EQ(plan.ehFrameHdrSize, out.ehFrameHdr.size());
  EXPECT_EQ(plan.lsdaSize, 0u);
  EXPECT_TRUE(out.lsda.empty());
  ASSERT_EQ(info_.droppedFdes, 0u);
  EXPECT_TRUE(out.ehFrame == std::vector<uint8_t>(eh_.data, eh_.data + eh_.size));
  EXPECT_TRUE(out.ehFrameHdr == std::vector<uint8_t>(hdr_.data, hdr_.data + hdr_.size));
}

TEST_P(RealProgram, RelocatedRebuildDecodesToSameRows) {
  u::Translate none = [](uint64_t) { return std::optional<uint64_t>(); };
  const uint64_t ehAddr = eh_.addr + 0x1000000, hdrAddr = 0x2000004;
  u::UnwindSections out = u::buildUnwind(info_, eh_, get_, {}, {}, none, ehAddr, hdrAddr, 0x3000000);
  u::ByteView neh{out.ehFrame.data(), out.ehFrame.size(), ehAddr};
  u::EhFrameInfo n = u::parseEhFrame(neh, get_);
  ASSERT_EQ(n.fdes.size(), info_.fdes.size());
  ASSERT_EQ(n.cies.size(), info_.cies.size());
  for (size_t i = 0; i < n.cies.size(); ++i) {
    EXPECT_EQ(n.cies[i].personality, info_.cies[i].personality);
    EXPECT_EQ(n.cies[i].augmentation, info_.cies[i].augmentation);
  }
  for (size_t i = 0; i < n.fdes.size(); ++i) {
    const u::Fde &a = info_.fdes[i], &b = n.fdes[i];
    EXPECT_EQ(a.pcBegin, b.pcBegin);
    EXPECT_EQ(a.pcEnd, b.pcEnd);
    EXPECT_EQ(a.lsda, b.lsda);
    EXPECT_EQ(a.callSites.size(), b.callSites.size());
    auto ra = u::decodeCfaProgram(info_, a, eh_), rb = u::decodeCfaProgram(n, b, neh);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t k = 0; k < ra.size(); ++k) {
      EXPECT_EQ(ra[k].loc, rb[k].loc);
      EXPECT_EQ(ra[k].bytes, rb[k].bytes);
    }
  }
  expectHdrMatches(out, ehAddr, hdrAddr);
}

// Moves every FDE of .text to newBase + factor * (old - text start) and checks
// that CFA rows, call sites, landing pads and type entries land exactly at
// the translated places.
void checkStretch(const ElfFile& elf, const u::EhFrameInfo& info, u::ByteView eh, u::ByteView get, uint64_t factor) {
  const ElfFile::Section* text = elf.section(".text");
  ASSERT_NE(text, nullptr);
  const uint64_t ts = text->addr, te = text->addr + text->size, newBase = 0x40000000;
  auto map = [&](uint64_t a) { return newBase + factor * (a - ts); };
  auto inText = [&](uint64_t a) { return a >= ts && a <= te; };
  std::vector<u::MovedRange> moved;
  for (const u::Fde& f : info.fdes)
    if (f.pcBegin >= ts && f.pcEnd <= te) moved.push_back({f.pcBegin, f.pcEnd, map(f.pcBegin), map(f.pcEnd)});
  ASSERT_GE(moved.size(), 6u);
  u::Translate tr = [&](uint64_t a) { return inText(a) ? std::optional<uint64_t>(map(a)) : std::nullopt; };
  auto mapped = [&](uint64_t a) { return a >= ts && a < te ? map(a) : a; };

  const uint64_t ehAddr = 0x50000000, hdrAddr = 0x50800000, lsdaAddr = 0x50900000;
  u::UnwindLayout plan = u::planUnwind(info, eh, get, moved, tr);
  const std::vector<u::RelocAt> relocs = elf.relocs(".rela.gcc_except_table");
  // Without and with the --emit-relocs relocations of .gcc_except_table.
  for (bool useRelocs : {false, true}) {
  SCOPED_TRACE(useRelocs ? "with relocations" : "without relocations");
  u::UnwindSections out = u::buildUnwind(info, eh, get, useRelocs ? relocs : std::vector<u::RelocAt>{}, moved, tr,
                                         ehAddr, hdrAddr, lsdaAddr);
  EXPECT_EQ(plan.ehFrameSize, out.ehFrame.size());
  EXPECT_EQ(plan.ehFrameHdrSize, out.ehFrameHdr.size());
  EXPECT_EQ(plan.lsdaSize, out.lsda.size());

  u::ByteView neh{out.ehFrame.data(), out.ehFrame.size(), ehAddr};
  u::ByteView nls{out.lsda.data(), out.lsda.size(), lsdaAddr};
  u::EhFrameInfo n = u::parseEhFrame(neh, nls);
  ASSERT_EQ(n.fdes.size(), info.fdes.size());
  for (size_t i = 0; i < n.cies.size(); ++i) EXPECT_EQ(n.cies[i].personality, info.cies[i].personality);
  size_t movedSeen = 0, lsdaSeen = 0, relocWords = 0;
  for (const u::Fde& o : info.fdes) {
    bool isMoved = o.pcBegin >= ts && o.pcEnd <= te;
    uint64_t begin = isMoved ? map(o.pcBegin) : o.pcBegin;
    const u::Fde* nf = fdeAt(n, begin);
    ASSERT_NE(nf, nullptr) << std::hex << o.pcBegin;
    EXPECT_EQ(nf->pcEnd, isMoved ? map(o.pcEnd) : o.pcEnd);
    auto ro = u::decodeCfaProgram(info, o, eh), rn = u::decodeCfaProgram(n, *nf, neh);
    ASSERT_EQ(ro.size(), rn.size()) << std::hex << o.pcBegin;
    for (size_t k = 0; k < ro.size(); ++k) {
      EXPECT_EQ(rn[k].loc, isMoved ? map(ro[k].loc) : ro[k].loc);
      EXPECT_EQ(rn[k].bytes, ro[k].bytes);
    }
    if (isMoved) {
      ++movedSeen;
      expectMinimalAdvances(std::vector<uint8_t>(out.ehFrame.begin() + nf->instructionsOffset,
                                                 out.ehFrame.begin() + nf->instructionsOffset + nf->instructionsSize),
                            "FDE at " + std::to_string(o.pcBegin));
    }
    if (!o.lsda) {
      EXPECT_EQ(nf->lsda, 0u);
      continue;
    }
    if (!isMoved) {
      EXPECT_EQ(nf->lsda, o.lsda);
      continue;
    }
    ++lsdaSeen;
    ASSERT_TRUE(nf->hasLsdaInfo) << nf->obstacle;
    EXPECT_EQ(nf->lsdaInfo.ttypeEncoding, o.lsdaInfo.ttypeEncoding);
    EXPECT_EQ(nf->lsdaInfo.callSiteEncoding, o.lsdaInfo.callSiteEncoding);
    if (nf->lsdaInfo.ttypeEncoding != u::pe::omit) {  // TTBase keeps its alignment
      EXPECT_EQ((lsdaAddr + nf->lsdaInfo.ttBase) % 8, (get.addr + o.lsdaInfo.ttBase) % 8);
    }
    ASSERT_EQ(nf->callSites.size(), o.callSites.size());
    for (size_t k = 0; k < o.callSites.size(); ++k) {
      const u::CallSite &a = o.callSites[k], &b = nf->callSites[k];
      EXPECT_EQ(b.start, map(a.start));
      EXPECT_EQ(b.end, map(a.end));
      EXPECT_EQ(b.landingPad, a.landingPad ? mapped(a.landingPad) : 0);
      EXPECT_EQ(b.action, a.action);
      EXPECT_EQ(b.filters, a.filters);
    }
    EXPECT_EQ(typeTargets(*nf), typeTargets(o));
    // Every pc-relative word a relocation marks in the copied block (also
    // type entries no action reaches) still points to the same place.
    if (!useRelocs) continue;
    const uint64_t oldBlock = o.lsdaInfo.callSiteTableOffset + o.lsdaInfo.callSiteTableSize;
    const uint64_t newBlock = nf->lsdaInfo.callSiteTableOffset + nf->lsdaInfo.callSiteTableSize;
    for (const u::RelocAt& r : relocs) {
      if (r.type != R_X86_64_PC32 || r.addr < get.addr + oldBlock || r.addr + 4 > get.addr + o.lsdaInfo.tailEnd) continue;
      const uint64_t off = r.addr - get.addr;
      int32_t ow, nw;
      std::memcpy(&ow, get.data + off, 4);
      std::memcpy(&nw, out.lsda.data() + newBlock + (off - oldBlock), 4);
      EXPECT_EQ(r.addr + int64_t(ow), lsdaAddr + newBlock + (off - oldBlock) + int64_t(nw));
      ++relocWords;
    }
  }
  EXPECT_EQ(movedSeen, moved.size());
  EXPECT_GE(lsdaSeen, 3u);
  if (useRelocs && std::any_of(relocs.begin(), relocs.end(), [](const u::RelocAt& r) { return r.type == R_X86_64_PC32; })) {
    EXPECT_GT(relocWords, 0u);
  }
  expectHdrMatches(out, ehAddr, hdrAddr);
  }
}

TEST_P(RealProgram, MovedAndStretchedTimes2) { checkStretch(elf_, info_, eh_, get_, 2); }
TEST_P(RealProgram, MovedAndStretchedTimes300) { checkStretch(elf_, info_, eh_, get_, 300); }

TEST_P(RealProgram, PartialOverlapAndMissingTranslationThrow) {
  const ElfFile::Symbol& s = sym("catcher");
  u::Translate tr = [](uint64_t a) { return std::optional<uint64_t>(a + 0x100000); };
  std::vector<u::MovedRange> partial = {{s.value, s.value + s.size - 1, s.value + 0x100000, s.value + s.size - 1 + 0x100000}};
  EXPECT_THROW(u::planUnwind(info_, eh_, get_, partial, tr), atomx::UnsupportedError);
  std::vector<u::MovedRange> whole = {{s.value, s.value + s.size, s.value + 0x100000, s.value + s.size + 0x100000}};
  EXPECT_NO_THROW(u::planUnwind(info_, eh_, get_, whole, tr));
  u::Translate holes = [&](uint64_t a) {
    return a == s.value + 1 || a == s.value + 4 ? std::nullopt : std::optional<uint64_t>(a + 0x100000);
  };
  try {
    u::planUnwind(info_, eh_, get_, whole, holes);
    ADD_FAILURE() << "no exception";
  } catch (const atomx::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("FDE at .eh_frame offset"), std::string::npos) << e.what();
  }
}

TEST_P(RealProgram, MutatedInputsNeverCrash) {
  std::mt19937_64 rng(1234);
  std::vector<uint8_t> ehb(eh_.data, eh_.data + eh_.size), getb(get_.data, get_.data + get_.size);
  const ElfFile::Section* text = elf_.section(".text");
  const uint64_t ts = text->addr, te = ts + text->size;
  u::Translate tr = [&](uint64_t a) { return a >= ts && a <= te ? std::optional<uint64_t>(0x40000000 + 3 * (a - ts)) : std::nullopt; };
  int parsed = 0, built = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::vector<uint8_t> e = ehb, g = getb;
    std::vector<uint8_t>& t = (iter % 3 == 2) ? g : e;
    int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = uint8_t(rng()); break;
        case 1: t[at] ^= uint8_t(1u << (rng() % 8)); break;
        case 2: t[at] = (rng() % 2) ? 0xff : 0x00; break;
      }
    }
    if (iter % 7 == 0) t.resize(rng() % t.size());
    try {
      u::EhFrameInfo info = u::parseEhFrame({e.data(), e.size(), eh_.addr}, {g.data(), g.size(), get_.addr});
      ++parsed;
      for (const u::Fde& f : info.fdes) {
        u::findFde(info, f.pcBegin);
        u::unwindObstacle(info, f.pcBegin, f.pcEnd);
      }
      std::vector<u::MovedRange> moved;
      for (const u::Fde& f : info.fdes)
        if (f.pcBegin >= ts && f.pcEnd <= te && (moved.empty() || f.pcBegin >= moved.back().oldEnd))
          moved.push_back({f.pcBegin, f.pcEnd, *tr(f.pcBegin), *tr(f.pcEnd)});
      u::buildUnwind(info, {e.data(), e.size(), eh_.addr}, {g.data(), g.size(), get_.addr}, {}, moved, tr,
                     0x50000000, 0x50800000, 0x50900000);
      ++built;
    } catch (const atomx::InputError&) {
    } catch (const atomx::UnsupportedError&) {
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "unexpected exception: " << ex.what();
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(built, 0);
}

INSTANTIATE_TEST_SUITE_P(Unwind, RealProgram, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------
// Hand-assembled sections.

struct Bytes {
  std::vector<uint8_t> v;
  size_t size() const { return v.size(); }
  Bytes& u8(uint64_t x) { v.push_back(uint8_t(x)); return *this; }
  Bytes& fixed(uint64_t x, int n) { for (int i = 0; i < n; ++i) v.push_back(uint8_t(x >> (8 * i))); return *this; }
  Bytes& u16(uint64_t x) { return fixed(x, 2); }
  Bytes& u32(uint64_t x) { return fixed(x, 4); }
  Bytes& u64(uint64_t x) { return fixed(x, 8); }
  Bytes& uleb(uint64_t x) {
    do { uint8_t b = x & 0x7f; x >>= 7; v.push_back(x ? b | 0x80 : b); } while (x);
    return *this;
  }
  Bytes& sleb(int64_t x) {
    for (;;) {
      uint8_t b = x & 0x7f;
      x >>= 7;
      bool done = (x == 0 && !(b & 0x40)) || (x == -1 && (b & 0x40));
      v.push_back(done ? b : b | 0x80);
      if (done) return *this;
    }
  }
  Bytes& str(const char* s) { while (*s) v.push_back(uint8_t(*s++)); v.push_back(0); return *this; }
  Bytes& raw(std::initializer_list<uint8_t> l) { v.insert(v.end(), l); return *this; }
  void patch32(size_t at, uint64_t x) { for (int i = 0; i < 4; ++i) v[at + i] = uint8_t(x >> (8 * i)); }
  // Starts an entry (length placeholder); returns its offset.
  size_t begin() { size_t at = v.size(); u32(0); return at; }
  void end(size_t at) {
    while ((v.size() - at) % 8) v.push_back(0);
    patch32(at, v.size() - at - 4);
  }
};

// Synthetic program:
//   procedure A [0x1000, 0x1100): CIE0 (version 3, "zPLRSB", code alignment
//     4, personality udata8, LSDA udata4, FDE pointers udata8); CFA program
//     with every kind of advance and many opcodes; LSDA with an explicit
//     LPStart (0xff0), udata4 call sites, udata4 type table and an exception
//     specification; one landing pad lies in procedure B.
//   procedure B [0x2000, 0x2100): CIE1 (version 1, "zR", pcrel sdata4).
//   procedure E [0x4000, 0x4100): CIE2 (version 1, "zPLR" like gcc PIE:
//     personality 0x9b, LSDA 0x1b), LSDA with omitted LPStart, uleb call
//     sites, 0x9b type table; one landing pad lies in procedure G.
//   procedure G [0x5000, 0x5100): no FDE.
//   a zero word in the middle, an FDE with pc_begin 0, a zero-length FDE at 0x3000.
struct Synthetic {
  static constexpr uint64_t kEh = 0x10000, kGet = 0x20000;
  Bytes eh, get;
  size_t cie0 = 0, fdeA = 0, lsdaA = 0, lsdaE = 0;
  size_t aCiePtr = 0, lpEnc = 0, csEnc = 0, ttOffAt = 0;

  Synthetic() {
    buildLsdaA();
    buildLsdaE();
    // CIE0
    cie0 = eh.begin();
    eh.u32(0).u8(3).str("zPLRSB").uleb(4).sleb(-4).uleb(16);
    eh.uleb(1 + 8 + 1 + 1).u8(0x04).u64(0x123456).u8(0x03).u8(0x04);
    eh.raw({0x0c, 7, 8, 0x90, 1});
    eh.end(cie0);
    // FDE A
    fdeA = eh.begin();
    aCiePtr = eh.size();
    eh.u32(eh.size() - cie0).u64(0x1000).u64(0x100).uleb(4).u32(kGet + lsdaA);
    eh.raw({0x41, 0x0e, 16});                   // 0x1004: def_cfa_offset 16
    eh.raw({0x02, 0x10, 0x2e, 8});              // 0x1044: GNU_args_size 8
    eh.u8(0x01).u64(0x1080).u8(0x0a);           // set_loc 0x1080: remember_state
    eh.raw({0x03, 2, 0, 0x0f, 2, 0x77, 0x00});  // 0x1088: def_cfa_expression breg7 0
    eh.raw({0x04, 1, 0, 0, 0});                 // 0x108c:
    eh.raw({0x16, 3, 1, 0x9c, 0x10, 6, 2, 0x70, 0x08, 0x2f, 5, 2, 0x11, 3, 0x7e, 0x0b, 0x14, 1, 2, 0x15, 1, 0x7f,
            0x12, 7, 0x7e, 0x13, 4, 0x09, 1, 2, 0x07, 1, 0x08, 2, 0x06, 3, 0xc3, 0x05, 1, 2, 0x0d, 6, 0x2d});
    eh.raw({0x5c, 0x0e, 8});                    // 0x10fc: def_cfa_offset 8
    eh.end(fdeA);
    eh.u32(0);  // a zero word in the middle
    // CIE1 and FDE B
    size_t cie1 = eh.begin();
    eh.u32(0).u8(1).str("zR").uleb(1).sleb(-8).u8(16).uleb(1).u8(0x1b).raw({0x0c, 7, 8, 0x90, 1});
    eh.end(cie1);
    size_t fdeB = eh.begin();
    eh.u32(eh.size() - cie1);
    eh.u32(0x2000 - (kEh + eh.size())).u32(0x100).uleb(0).raw({0x50, 0x0e, 16, 0x02, 0x50, 0x0e, 8});
    eh.end(fdeB);
    // FDE with pc_begin 0 (discarded code) and a zero-length FDE
    size_t fdeC = eh.begin();
    eh.u32(eh.size() - cie1).u32(0).u32(0x40).uleb(0).raw({0x41, 0x0e, 16});
    eh.end(fdeC);
    size_t fdeD = eh.begin();
    eh.u32(eh.size() - cie1);
    eh.u32(0x3000 - (kEh + eh.size())).u32(0).uleb(0);
    eh.end(fdeD);
    // CIE2 and FDE E
    size_t cie2 = eh.begin();
    eh.u32(0).u8(1).str("zPLR").uleb(1).sleb(-8).u8(16).uleb(7).u8(0x9b);
    eh.u32(0x30200 - (kEh + eh.size()));
    eh.u8(0x1b).u8(0x1b).raw({0x0c, 7, 8, 0x90, 1});
    eh.end(cie2);
    size_t fdeE = eh.begin();
    eh.u32(eh.size() - cie2);
    eh.u32(0x4000 - (kEh + eh.size())).u32(0x100).uleb(4);
    eh.u32(kGet + lsdaE - (kEh + eh.size()));
    eh.raw({0x44, 0x0e, 16, 0x7c, 0x0e, 8});
    eh.end(fdeE);
    eh.u32(0);  // terminator
  }

  void buildLsdaA() {
    lsdaA = get.size();
    lpEnc = get.size();
    get.u8(0x00).u64(0xff0);  // explicit LPStart, absptr
    get.u8(0x03);             // TType udata4
    ttOffAt = get.size();
    get.uleb(0);  // patched below (one byte)
    size_t afterTtOff = get.size();
    csEnc = get.size();
    get.u8(0x03);  // call sites udata4
    Bytes cs;
    cs.u32(0x10).u32(0x20).u32(0x1050 - 0xff0).uleb(1);  // [0x1010,0x1030) -> 0x1050, filters {1}
    cs.u32(0x40).u32(0x08).u32(0).uleb(5);                // [0x1040,0x1048) no pad, filters {-1}
    cs.u32(0x50).u32(0x10).u32(0x2010 - 0xff0).uleb(3);  // [0x1050,0x1060) -> B, filters {2, 1}
    get.uleb(cs.size());
    get.v.insert(get.v.end(), cs.v.begin(), cs.v.end());
    // action table: rec0 {1, 0}; rec1 {2, -> rec0}; rec2 {-1, 0}
    get.sleb(1).sleb(0).sleb(2).sleb(-3).sleb(-1).sleb(0);
    while ((kGet + get.size()) % 4) get.u8(0);
    get.u32(0x30000);  // index 2
    get.u32(0);        // index 1: catch (...)
    size_t ttBase = get.size();
    get.uleb(2).uleb(1).uleb(0);  // exception specification at TTBase + 0
    get.v[ttOffAt] = uint8_t(ttBase - afterTtOff);
  }

  void buildLsdaE() {
    while (get.size() % 4) get.u8(0);
    lsdaE = get.size();
    get.u8(0xff).u8(0x9b);
    size_t ttOffAt2 = get.size();
    get.uleb(0);
    size_t after = get.size();
    Bytes cs;
    cs.uleb(0x10).uleb(0x8).uleb(0x5010 - 0x4000).uleb(1);  // [0x4010,0x4018) -> G, filters {1}
    cs.uleb(0x20).uleb(0x8).uleb(0x60).uleb(0);             // [0x4020,0x4028) -> 0x4060 cleanup
    get.u8(0x01).uleb(cs.size());
    get.v.insert(get.v.end(), cs.v.begin(), cs.v.end());
    get.sleb(1).sleb(0);
    while ((kGet + get.size()) % 4) get.u8(0);
    get.u32(uint32_t(0x30100 - (kGet + get.size())));  // index 1, pc-relative
    get.v[ttOffAt2] = uint8_t(get.size() - after);
  }

  u::ByteView ehView() const { return {eh.v.data(), eh.size(), kEh}; }
  u::ByteView getView() const { return {get.v.data(), get.size(), kGet}; }
};

TEST(UnwindSynthetic, Parse) {
  Synthetic s;
  u::EhFrameInfo info = u::parseEhFrame(s.ehView(), s.getView());
  ASSERT_EQ(info.cies.size(), 3u);
  EXPECT_EQ(info.droppedFdes, 1u);
  ASSERT_EQ(info.fdes.size(), 4u);
  const u::Cie& c0 = info.cies[0];
  EXPECT_EQ(c0.version, 3);
  EXPECT_EQ(c0.augmentation, "zPLRSB");
  EXPECT_EQ(c0.codeAlign, 4u);
  EXPECT_EQ(c0.dataAlign, -4);
  EXPECT_EQ(c0.personality, 0x123456u);
  EXPECT_TRUE(c0.signalFrame);
  EXPECT_EQ(info.cies[2].personality, 0x30200u);
  const u::Fde* a = u::findFde(info, 0x10ff);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pcBegin, 0x1000u);
  EXPECT_EQ(a->obstacle, "");
  EXPECT_TRUE(a->hasSetLoc);
  EXPECT_EQ(a->lsda, Synthetic::kGet);
  ASSERT_EQ(a->callSites.size(), 3u);
  EXPECT_EQ(a->callSites[0].start, 0x1010u);
  EXPECT_EQ(a->callSites[0].end, 0x1030u);
  EXPECT_EQ(a->callSites[0].landingPad, 0x1050u);
  EXPECT_EQ(a->callSites[0].filters, std::vector<int64_t>{1});
  EXPECT_EQ(a->callSites[1].landingPad, 0u);
  EXPECT_EQ(a->callSites[1].filters, std::vector<int64_t>{-1});
  EXPECT_EQ(a->callSites[2].landingPad, 0x2010u);
  EXPECT_EQ(a->callSites[2].filters, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(typeTargets(*a), (std::map<uint64_t, uint64_t>{{1, 0}, {2, 0x30000}}));
  auto ops = u::decodeCfaProgram(info, *a, s.ehView());
  std::vector<uint64_t> locs;
  for (const u::CfaOp& op : ops) locs.push_back(op.loc);
  ASSERT_GE(locs.size(), 6u);
  EXPECT_EQ(locs[0], 0x1004u);
  EXPECT_EQ(locs[1], 0x1044u);
  EXPECT_EQ(locs[2], 0x1080u);
  EXPECT_EQ(locs[3], 0x1088u);
  EXPECT_EQ(locs[4], 0x108cu);
  EXPECT_EQ(locs.back(), 0x10fcu);
  EXPECT_EQ(u::findFde(info, 0x3000), nullptr);  // zero-length: covers nothing
  EXPECT_EQ(std::count_if(info.fdes.begin(), info.fdes.end(), [](const u::Fde& f) { return f.pcBegin == 0x3000 && f.pcEnd == 0x3000; }), 1);
  const u::Fde* e = fdeAt(info, 0x4000);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->callSites.size(), 2u);
  EXPECT_EQ(e->callSites[0].landingPad, 0x5010u);
  EXPECT_EQ(e->callSites[1].landingPad, 0x4060u);
  EXPECT_EQ(typeTargets(*e), (std::map<uint64_t, uint64_t>{{1, 0x30100}}));
  EXPECT_EQ(u::findFde(info, 0x1100), nullptr);
  EXPECT_EQ(u::findFde(info, 0xfff), nullptr);
  EXPECT_EQ(u::unwindObstacle(info, 0x1000, 0x1100), "");
  EXPECT_NE(u::unwindObstacle(info, 0x1000, 0x10f0), "");
  EXPECT_NE(u::unwindObstacle(info, 0x1010, 0x1200), "");
  EXPECT_EQ(u::unwindObstacle(info, 0x5000, 0x5100), "");
}

struct SyntheticRebuild {
  u::EhFrameInfo info;
  u::UnwindSections out;
  u::EhFrameInfo n;
  static constexpr uint64_t kEh = 0x60000, kHdr = 0x61000, kLsda = 0x62000;
  SyntheticRebuild(const Synthetic& s, const std::vector<u::MovedRange>& moved, const u::Translate& tr) {
    info = u::parseEhFrame(s.ehView(), s.getView());
    u::UnwindLayout plan = u::planUnwind(info, s.ehView(), s.getView(), moved, tr);
    out = u::buildUnwind(info, s.ehView(), s.getView(), {}, moved, tr, kEh, kHdr, kLsda);
    EXPECT_EQ(plan.ehFrameSize, out.ehFrame.size());
    EXPECT_EQ(plan.ehFrameHdrSize, out.ehFrameHdr.size());
    EXPECT_EQ(plan.lsdaSize, out.lsda.size());
    n = u::parseEhFrame(neh(), {out.lsda.data(), out.lsda.size(), kLsda});
    expectHdrMatches(out, kEh, kHdr);
  }
  u::ByteView neh() const { return {out.ehFrame.data(), out.ehFrame.size(), kEh}; }
};

TEST(UnwindSynthetic, MoveProcedureA) {
  Synthetic s;
  auto mapA = [](uint64_t x) { return 0x50000 + 2 * (x - 0x1000); };
  u::Translate tr = [&](uint64_t x) { return x >= 0x1000 && x <= 0x1100 ? std::optional<uint64_t>(mapA(x)) : std::nullopt; };
  SyntheticRebuild r(s, {{0x1000, 0x1100, 0x50000, 0x50200}}, tr);
  ASSERT_EQ(r.n.fdes.size(), 4u);
  const u::Fde* a = fdeAt(r.n, 0x50000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pcEnd, 0x50200u);
  EXPECT_FALSE(a->hasSetLoc);
  EXPECT_EQ(r.n.cies[a->cie].personality, 0x123456u);
  auto ro = u::decodeCfaProgram(r.info, *fdeAt(r.info, 0x1000), Synthetic().ehView());
  auto rn = u::decodeCfaProgram(r.n, *a, r.neh());
  ASSERT_EQ(ro.size(), rn.size());
  for (size_t k = 0; k < ro.size(); ++k) {
    EXPECT_EQ(rn[k].loc, mapA(ro[k].loc));
    EXPECT_EQ(rn[k].bytes, ro[k].bytes);
  }
  ASSERT_TRUE(a->hasLsdaInfo) << a->obstacle;
  EXPECT_EQ(a->lsdaInfo.lpStartEncoding, 0x00);
  EXPECT_EQ(a->lsdaInfo.lpStart, 0xff0u);  // not in moved code: unchanged
  EXPECT_EQ(a->lsdaInfo.callSiteEncoding, 0x03);
  ASSERT_EQ(a->callSites.size(), 3u);
  EXPECT_EQ(a->callSites[0].start, mapA(0x1010));
  EXPECT_EQ(a->callSites[0].end, mapA(0x1030));
  EXPECT_EQ(a->callSites[0].landingPad, mapA(0x1050));
  EXPECT_EQ(a->callSites[1].landingPad, 0u);
  EXPECT_EQ(a->callSites[2].landingPad, 0x2010u);  // B stays
  EXPECT_EQ(a->callSites[2].filters, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a->callSites[1].filters, std::vector<int64_t>{-1});
  EXPECT_EQ(typeTargets(*a), (std::map<uint64_t, uint64_t>{{1, 0}, {2, 0x30000}}));
  // B, D and E unchanged; E keeps its old LSDA.
  EXPECT_NE(fdeAt(r.n, 0x2000), nullptr);
  EXPECT_EQ(std::count_if(r.n.fdes.begin(), r.n.fdes.end(), [](const u::Fde& f) { return f.pcBegin == 0x3000; }), 1);
  ASSERT_NE(fdeAt(r.n, 0x4000), nullptr);
  EXPECT_EQ(fdeAt(r.n, 0x4000)->lsda, Synthetic::kGet + s.lsdaE);
}

TEST(UnwindSynthetic, MovingBRewritesTheLsdaOfUnmovedA) {
  Synthetic s;
  auto mapB = [](uint64_t x) { return 0x70000 + 3 * (x - 0x2000); };
  u::Translate tr = [&](uint64_t x) { return x >= 0x2000 && x <= 0x2100 ? std::optional<uint64_t>(mapB(x)) : std::nullopt; };
  SyntheticRebuild r(s, {{0x2000, 0x2100, 0x70000, 0x70300}}, tr);
  const u::Fde* a = fdeAt(r.n, 0x1000);
  ASSERT_NE(a, nullptr);
  EXPECT_GE(a->lsda, SyntheticRebuild::kLsda);  // a new LSDA
  ASSERT_TRUE(a->hasLsdaInfo);
  ASSERT_EQ(a->callSites.size(), 3u);
  EXPECT_EQ(a->callSites[0].start, 0x1010u);
  EXPECT_EQ(a->callSites[0].landingPad, 0x1050u);
  EXPECT_EQ(a->callSites[2].landingPad, mapB(0x2010));
  const u::Fde* b = fdeAt(r.n, 0x70000);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->pcEnd, 0x70300u);
  auto rn = u::decodeCfaProgram(r.n, *b, r.neh());
  ASSERT_EQ(rn.size(), 2u);
  EXPECT_EQ(rn[0].loc, mapB(0x2010));
  EXPECT_EQ(rn[1].loc, mapB(0x2060));
}

TEST(UnwindSynthetic, LandingPadBelowNewStartGetsExplicitLpStart) {
  Synthetic s;
  auto mapE = [](uint64_t x) { return 0x90000 + (x - 0x4000) + (x > 0x4000 ? 0x10 : 0); };
  u::Translate tr = [&](uint64_t x) { return x >= 0x4000 && x <= 0x4100 ? std::optional<uint64_t>(mapE(x)) : std::nullopt; };
  SyntheticRebuild r(s, {{0x4000, 0x4100, 0x90000, mapE(0x4100)}}, tr);
  const u::Fde* e = fdeAt(r.n, 0x90000);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->hasLsdaInfo);
  EXPECT_EQ(e->lsdaInfo.lpStartEncoding, 0x1b);
  ASSERT_EQ(e->callSites.size(), 2u);
  EXPECT_EQ(e->callSites[0].start, mapE(0x4010));
  EXPECT_EQ(e->callSites[0].end, mapE(0x4018));
  EXPECT_EQ(e->callSites[0].landingPad, 0x5010u);  // G was not moved
  EXPECT_EQ(e->callSites[1].landingPad, mapE(0x4060));
  EXPECT_EQ(typeTargets(*e), (std::map<uint64_t, uint64_t>{{1, 0x30100}}));  // pc-relative entry adjusted
  EXPECT_EQ(r.n.cies[e->cie].personality, 0x30200u);
}

TEST(UnwindSynthetic, AdvanceNotMultipleOfCodeAlignmentThrows) {
  Synthetic s;
  u::EhFrameInfo info = u::parseEhFrame(s.ehView(), s.getView());
  u::Translate odd = [](uint64_t x) { return std::optional<uint64_t>(0x50000 + (x - 0x1000) + (x > 0x1000 ? 1 : 0)); };
  EXPECT_THROW(u::planUnwind(info, s.ehView(), s.getView(), {{0x1000, 0x1100, 0x50000, 0x50101}}, odd),
               atomx::UnsupportedError);
  u::Translate none = [](uint64_t) { return std::optional<uint64_t>(); };
  EXPECT_THROW(u::planUnwind(info, s.ehView(), s.getView(), {{0x1000, 0x1100, 0x50000, 0x50100}}, none),
               atomx::UnsupportedError);
  // Two moved procedures spanned by one FDE.
  u::Translate id = [](uint64_t x) { return std::optional<uint64_t>(x); };
  EXPECT_THROW(u::planUnwind(info, s.ehView(), s.getView(), {{0x1000, 0x1080, 0x1000, 0x1080}, {0x1080, 0x1100, 0x1080, 0x1100}}, id),
               atomx::UnsupportedError);
}

TEST(UnwindSynthetic, MisalignedAddressesAreAnInternalError) {
  Synthetic s;
  u::EhFrameInfo info = u::parseEhFrame(s.ehView(), s.getView());
  u::Translate none = [](uint64_t) { return std::optional<uint64_t>(); };
  EXPECT_THROW(u::buildUnwind(info, s.ehView(), s.getView(), {}, {}, none, 0x60004, 0x61000, 0x62000), atomx::InternalError);
  EXPECT_THROW(u::buildUnwind(info, s.ehView(), s.getView(), {}, {}, none, 0x60000, 0x61000, 0x62004), atomx::InternalError);
}

template <typename Fn>
void expectInputError(Fn mutate, const char* what) {
  Synthetic s;
  mutate(s);
  try {
    u::parseEhFrame(s.ehView(), s.getView());
    ADD_FAILURE() << what << ": no exception";
  } catch (const atomx::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong exception " << e.what();
  }
}

TEST(UnwindSynthetic, MalformedInputsThrowInputError) {
  expectInputError([](Synthetic& s) { s.eh.patch32(s.fdeA, 0x7fff0000); }, "length past the end");
  expectInputError([](Synthetic& s) { s.eh.v.resize(s.fdeA + 10); }, "truncated entry");
  expectInputError([](Synthetic& s) { s.eh.v.resize(s.fdeA + 2); s.eh.v[s.fdeA] = 1; }, "truncated length");
  expectInputError([](Synthetic& s) { s.eh.patch32(s.aCiePtr, s.aCiePtr - s.cie0 - 8); }, "bad CIE pointer");
  expectInputError([](Synthetic& s) { s.eh.patch32(s.aCiePtr, s.aCiePtr + 100); }, "CIE pointer before the section");
  expectInputError([](Synthetic& s) { s.eh.v[s.cie0 + 8] = 2; }, "bad CIE version");
  expectInputError([](Synthetic& s) { s.eh.v[s.cie0 + 8 + 1 + 7 + 3 + 1 + 1 + 8 + 1] = 0x07; }, "bad FDE encoding");
  expectInputError([](Synthetic& s) { s.get.v[s.csEnc] = 0x0e; }, "bad call-site encoding");
  expectInputError([](Synthetic& s) { s.get.v[s.ttOffAt] = 1; }, "TType base inside the call-site table");
  expectInputError([](Synthetic& s) { s.get.v[s.lpEnc] = 0x08; }, "bad LPStart encoding");
  expectInputError([](Synthetic& s) { s.get.v.resize(s.csEnc + 5); }, "truncated call-site table");
}

TEST(UnwindSynthetic, UnsupportedInputsThrowUnsupportedError) {
  {
    Synthetic s;
    s.eh.patch32(s.fdeA, 0xffffffff);
    EXPECT_THROW(u::parseEhFrame(s.ehView(), s.getView()), atomx::UnsupportedError);
  }
  {
    Synthetic s;
    s.eh.v[s.cie0 + 8 + 1 + 5] = 'X';  // "zPLRSX"
    EXPECT_THROW(u::parseEhFrame(s.ehView(), s.getView()), atomx::UnsupportedError);
  }
  {
    Synthetic s;  // textrel FDE encoding
    s.eh.v[s.cie0 + 8 + 1 + 7 + 3 + 1 + 1 + 8 + 1] = 0x24;
    EXPECT_THROW(u::parseEhFrame(s.ehView(), s.getView()), atomx::UnsupportedError);
  }
  {
    Synthetic s;  // LSDA outside .gcc_except_table: parses, but A can't move
    u::EhFrameInfo info = u::parseEhFrame(s.ehView(), {nullptr, 0, 0});
    EXPECT_NE(u::unwindObstacle(info, 0x1000, 0x1100), "");
    u::Translate id = [](uint64_t x) { return std::optional<uint64_t>(x); };
    EXPECT_THROW(u::planUnwind(info, s.ehView(), {nullptr, 0, 0}, {{0x1000, 0x1100, 0x1000, 0x1100}}, id),
                 atomx::UnsupportedError);
    EXPECT_NO_THROW(u::planUnwind(info, s.ehView(), {nullptr, 0, 0}, {{0x2000, 0x2100, 0x2000, 0x2100}}, id));
  }
}

// ---------------------------------------------------------------------------
// Run time: move a function of this binary, throw through the moved copy.

extern "C" {
void __register_frame(void*);
void __deregister_frame(void*);
int atomx_unwind_guard_count = 0;
}

struct RtGuard {
  ~RtGuard() { ++atomx_unwind_guard_count; }
};

extern "C" __attribute__((noinline, noclone, used)) void atomx_unwind_thrower(int x) {
  if (x == 1) throw 42;
  if (x == 2) throw std::runtime_error("boom");
  if (x == 3) throw 3.5;
  asm volatile("");
}

extern "C" __attribute__((noinline, noclone, used)) int atomx_unwind_victim(int x) {
  RtGuard g;
  int r = 7;
  try {
    atomx_unwind_thrower(x);
  } catch (int v) {
    r = v + 1000;
  } catch (const std::runtime_error&) {
    r = -5;
  }
  return r;
}

// The same without hot/cold splitting (landing pads and handlers all in
// the moved code) and with values live in callee-saved registers across the
// call, so the CFA program has pushes and pops.
#if defined(__GNUC__) && !defined(__clang__)
#define ATOMX_NO_PARTITION __attribute__((optimize("no-reorder-blocks-and-partition")))
#else
#define ATOMX_NO_PARTITION
#endif
extern "C" __attribute__((noinline, noclone, used)) ATOMX_NO_PARTITION int atomx_unwind_victim2(int x) {
  RtGuard g;
  int r = 7;
  int a = x * 3, b = x + 11;
  asm volatile("" : "+r"(a), "+r"(b));
  try {
    atomx_unwind_thrower(x);
  } catch (int v) {
    r = v + 1000 + a - 3 * x;
  } catch (const std::runtime_error&) {
    r = -5 + b - x - 11;
  }
  asm volatile("" : "+r"(a), "+r"(b));
  return r + (a - 3 * x) + (b - x - 11);
}

struct MainImage {
  uint64_t bias = 0, end = 0;
};

int mainImageCallback(dl_phdr_info* i, size_t, void* data) {
  auto* m = static_cast<MainImage*>(data);
  m->bias = i->dlpi_addr;
  for (int k = 0; k < i->dlpi_phnum; ++k)
    if (i->dlpi_phdr[k].p_type == PT_LOAD)
      m->end = std::max<uint64_t>(m->end, i->dlpi_addr + i->dlpi_phdr[k].p_vaddr + i->dlpi_phdr[k].p_memsz);
  return 1;  // the main program comes first
}

// Runs in a forked child: returns "" on success or what went wrong.
std::string moveVictimAndThrow(int (*original)(int)) {
  MainImage img;
  dl_iterate_phdr(mainImageCallback, &img);
  ElfFile self = ElfFile::load("/proc/self/exe");
  auto live = [&](const char* name) -> u::ByteView {
    const ElfFile::Section* s = self.section(name);
    if (!s) return {nullptr, 0, 0};
    return {reinterpret_cast<const uint8_t*>(img.bias + s->addr), s->size, img.bias + s->addr};
  };
  u::ByteView eh = live(".eh_frame"), get = live(".gcc_except_table");
  if (!eh.size || !get.size) return "no .eh_frame/.gcc_except_table in the test binary";
  u::EhFrameInfo info = u::parseEhFrame(eh, get);
  const uint64_t start = reinterpret_cast<uint64_t>(original);
  const u::Fde* fde = u::findFde(info, start);
  if (!fde || fde->pcBegin != start) return "no FDE starting at the victim";
  if (!fde->lsda) return "victim has no LSDA";
  const uint64_t end = fde->pcEnd;

  // Decode; a 1-byte nop goes before every instruction, rel8 branches grow to rel32.
  struct Insn {
    uint64_t old;
    std::vector<uint8_t> bytes;
    int relOff = -1, relSize = 0;  // relative immediate
    int dispOff = -1;              // RIP-relative disp32
    size_t newLen = 0;
    uint64_t newAt = 0;  // of the nop
  };
  std::vector<Insn> insns;
  ZydisDecoder dec;
  ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  for (uint64_t a = start; a < end;) {
    ZydisDecodedInstruction zi;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, reinterpret_cast<const void*>(a), end - a, &zi)))
      return "can't decode the victim at " + std::to_string(a - start);
    Insn in;
    in.old = a;
    in.bytes.assign(reinterpret_cast<const uint8_t*>(a), reinterpret_cast<const uint8_t*>(a) + zi.length);
    in.newLen = zi.length;
    for (int k = 0; k < 2; ++k)
      if (zi.raw.imm[k].is_relative) {
        in.relOff = zi.raw.imm[k].offset;
        in.relSize = zi.raw.imm[k].size / 8;
      }
    if ((zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) && zi.raw.modrm.mod == 0 && zi.raw.modrm.rm == 5)
      in.dispOff = zi.raw.disp.offset;
    if (in.relOff >= 0 && in.relSize == 1) {
      uint8_t op = in.bytes[in.relOff - 1];
      if (op == 0xeb) in.newLen = in.relOff - 1 + 5;
      else if (op >= 0x70 && op <= 0x7f) in.newLen = in.relOff - 1 + 6;
      else return "unexpected rel8 instruction in the victim";
    } else if (in.relOff >= 0 && in.relSize != 4) {
      return "unexpected relative operand size";
    }
    insns.push_back(std::move(in));
    a += zi.length;
  }
  size_t codeSize = 0;
  for (Insn& in : insns) codeSize += 1 + in.newLen;

  // Map a region near the program (rel32 and sdata4 reach).
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto none = [](uint64_t) { return std::optional<uint64_t>(); };
  u::UnwindLayout guess = u::planUnwind(info, eh, get, {}, none);
  const size_t regionSize = (codeSize + guess.ehFrameSize + guess.ehFrameHdrSize + guess.lsdaSize + 64 * 1024 + page) & ~(page - 1);
  uint8_t* region = nullptr;
  for (uint64_t hint = (img.end + (64 << 20)) & ~uint64_t(0xfffff); hint < img.end + (1ull << 30); hint += 16 << 20) {
    void* p = mmap(reinterpret_cast<void*>(hint), regionSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) continue;
    if (p != reinterpret_cast<void*>(hint)) {  // old kernels ignore the flag
      munmap(p, regionSize);
      continue;
    }
    region = static_cast<uint8_t*>(p);
    break;
  }
  if (!region) return "can't map memory near the program";
  const uint64_t newStart = reinterpret_cast<uint64_t>(region);
  std::map<uint64_t, uint64_t> newAt;
  uint64_t cur = newStart;
  for (Insn& in : insns) {
    in.newAt = cur;
    newAt[in.old] = cur;
    cur += 1 + in.newLen;
  }
  const uint64_t newEnd = cur;
  newAt[end] = newEnd;
  auto mapTarget = [&](uint64_t t) -> uint64_t {
    if (t < start || t >= end) return t;
    auto it = newAt.find(t);
    return it == newAt.end() ? 0 : it->second;
  };
  std::vector<uint8_t> code;
  for (const Insn& in : insns) {
    code.push_back(0x90);
    const uint64_t oldNext = in.old + in.bytes.size(), newNext = in.newAt + 1 + in.newLen;
    std::vector<uint8_t> b = in.bytes;
    if (in.relOff >= 0) {
      int64_t rel = in.relSize == 1 ? int8_t(b[in.relOff]) : int32_t(b[in.relOff] | b[in.relOff + 1] << 8 | b[in.relOff + 2] << 16 | uint32_t(b[in.relOff + 3]) << 24);
      uint64_t target = mapTarget(oldNext + rel);
      if (!target) return "branch into the middle of an instruction";
      if (in.relSize == 1) {
        uint8_t op = b[in.relOff - 1];
        b.resize(in.relOff - 1);
        if (op == 0xeb) b.push_back(0xe9);
        else { b.push_back(0x0f); b.push_back(uint8_t(0x80 + (op - 0x70))); }
        b.resize(b.size() + 4);
      }
      int64_t d = int64_t(target - newNext);
      if (d != int32_t(d)) return "branch out of rel32 range";
      size_t at = b.size() - 4;
      for (int k = 0; k < 4; ++k) b[at + k] = uint8_t(uint64_t(d) >> (8 * k));
    }
    if (in.dispOff >= 0) {
      int32_t disp;
      std::memcpy(&disp, &b[in.dispOff], 4);
      int64_t d = int64_t(oldNext + disp - newNext);
      if (d != int32_t(d)) return "RIP-relative operand out of range";
      int32_t nd = int32_t(d);
      std::memcpy(&b[in.dispOff], &nd, 4);
    }
    code.insert(code.end(), b.begin(), b.end());
  }
  if (code.size() != codeSize) return "code size mismatch";

  u::Translate tr = [&](uint64_t old) -> std::optional<uint64_t> {
    auto it = newAt.find(old);
    if (it == newAt.end()) return std::nullopt;
    return it->second;
  };
  std::vector<u::MovedRange> moved = {{start, end, newStart, newEnd}};
  u::UnwindLayout plan = u::planUnwind(info, eh, get, moved, tr);
  auto up = [](uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); };
  const uint64_t ehAddr = up(newEnd, 8), hdrAddr = up(ehAddr + plan.ehFrameSize, 4), lsdaAddr = up(hdrAddr + plan.ehFrameHdrSize, 8);
  if (lsdaAddr + plan.lsdaSize > newStart + regionSize) return "region too small";
  u::UnwindSections out = u::buildUnwind(info, eh, get, {}, moved, tr, ehAddr, hdrAddr, lsdaAddr);
  if (out.ehFrame.size() != plan.ehFrameSize || out.lsda.size() != plan.lsdaSize) return "plan/build size mismatch";
  std::memcpy(region, code.data(), code.size());
  std::memcpy(reinterpret_cast<void*>(ehAddr), out.ehFrame.data(), out.ehFrame.size());
  std::memcpy(reinterpret_cast<void*>(hdrAddr), out.ehFrameHdr.data(), out.ehFrameHdr.size());
  std::memcpy(reinterpret_cast<void*>(lsdaAddr), out.lsda.data(), out.lsda.size());
  if (mprotect(region, regionSize, PROT_READ | PROT_EXEC) != 0) return "mprotect failed";
  __register_frame(reinterpret_cast<void*>(ehAddr));

  auto victim = reinterpret_cast<int (*)(int)>(newStart);
  std::string err;
  atomx_unwind_guard_count = 0;
  if (int r = victim(0); r != 7) err += "victim(0) = " + std::to_string(r) + "; ";
  if (int r = victim(1); r != 1042) err += "victim(1) = " + std::to_string(r) + "; ";
  if (int r = victim(2); r != -5) err += "victim(2) = " + std::to_string(r) + "; ";
  try {
    victim(3);
    err += "victim(3) returned; ";
  } catch (double d) {
    if (d != 3.5) err += "victim(3) threw " + std::to_string(d) + "; ";
  }
  if (atomx_unwind_guard_count != 4) err += "guard ran " + std::to_string(atomx_unwind_guard_count) + " times; ";
  __deregister_frame(reinterpret_cast<void*>(ehAddr));
  return err;
}

void throwThroughMovedCopy(int (*original)(int)) {
  // The original works.
  EXPECT_EQ(original(0), 7);
  EXPECT_EQ(original(1), 1042);
  EXPECT_EQ(original(2), -5);
  EXPECT_THROW(original(3), double);
  // The moved copy, in a child process: a broken unwind table kills it.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::string err;
    try {
      err = moveVictimAndThrow(original);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    if (write(fds[1], err.data(), err.size()) < 0) _exit(3);
    _exit(err.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, size_t(n));
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << "child died with signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0) << " " << msg;
  EXPECT_EQ(WEXITSTATUS(st), 0) << msg;
  EXPECT_EQ(msg, "");
}

TEST(UnwindRuntime, ThrowThroughMovedCodeWithColdPartLeftBehind) { throwThroughMovedCopy(atomx_unwind_victim); }
TEST(UnwindRuntime, ThrowThroughMovedCodeWithSavedRegisters) { throwThroughMovedCopy(atomx_unwind_victim2); }

}  // namespace
