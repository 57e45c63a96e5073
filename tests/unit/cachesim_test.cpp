// atomx/cachesim.hpp: the simulator against a plain model of the same
// cache (a list of lines per set, most recent first), reference by
// reference, for every policy, write-allocate or not, direct-mapped to
// fully associative, with references that straddle two lines or are wider
// than one, with the tables for inline hit tests (tools/cachesim) and
// without (tools/cache); and the configuration format's statement() read
// back by its parser (the cache tool hands its level from the rewrite to
// the analysis side as a statement); a last level shared by several
// simulators (threads) against one model fed with all their first-level
// misses in order; and libc's modelled traffic (<atomx/libc_model.hpp>).
#include <atomx/cachesim.hpp>
#include <atomx/libc_model.hpp>

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace cs = atomx::cachesim;

namespace {

// cachegrind's model, written the obvious way (cg_sim.c's, with FIFO and
// random replacement: invalid ways first, then xorshift with the header's
// seed).
class Model {
 public:
  explicit Model(const cs::Level& l) : l_(l), sets_(l.sets()) {}
  // True on a miss.
  bool ref(uint64_t addr, uint32_t size, bool write) {
    if (size > l_.line) size = l_.line;
    if (size == 0) size = 1;
    const uint64_t first = addr / l_.line, last = (addr + size - 1) / l_.line;
    bool miss = false;
    for (uint64_t line = first; line <= last; ++line) miss |= touch(line, !write || l_.writeAllocate);
    return miss;
  }

 private:
  bool touch(uint64_t line, bool fill) {
    std::vector<uint64_t>& set = sets_[line % sets_.size()];
    for (size_t i = 0; i < set.size(); ++i)
      if (set[i] == line) {
        if (l_.policy == cs::Policy::Lru) set.erase(set.begin() + long(i)), set.insert(set.begin(), line);
        return false;
      }
    if (!fill) return true;
    if (set.size() == l_.assoc) {
      size_t victim = l_.assoc - 1;
      if (l_.policy == cs::Policy::Random) {
        rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;
        victim = size_t(rng_ % l_.assoc);
      }
      set.erase(set.begin() + long(victim));
    }
    set.insert(set.begin(), line);
    return true;
  }
  cs::Level l_;
  std::vector<std::vector<uint64_t>> sets_;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
};

cs::Hierarchy oneLevel(const std::string& statement) { return cs::parseConfig(statement, "").hierarchies[0]; }

// Random references within `span` bytes, most within 8 lines of the last
// one (hits in every way), some anywhere (misses), of 1 to 16 bytes and now
// and then wider than a line.
void compare(const std::string& statement, bool tables, uint64_t span, int steps) {
  SCOPED_TRACE(statement + (tables ? "" : ", no tables"));
  const cs::Hierarchy h = oneLevel(statement);
  std::vector<uint64_t> memory(cs::Simulator::words(h, tables));
  cs::Simulator sim(h, memory.data(), tables);
  Model model(h.levels[0]);
  const uint64_t line = h.levels[0].line;
  std::mt19937_64 rng(42);
  uint64_t addr = 0x10000;
  uint64_t misses = 0;
  for (int k = 0; k < steps; ++k) {
    addr = rng() % 4 ? addr + rng() % (16 * line) - 8 * line : 0x10000 + rng() % span;
    const uint32_t size = rng() % 50 ? uint32_t(1 + rng() % 16) : 512;
    const bool write = rng() % 3 == 0;
    const bool want = model.ref(addr, size, write);
    ASSERT_EQ(sim.data(addr, size, write) != 0, want) << "reference " << k << " at 0x" << std::hex << addr << std::dec
                                                      << ", " << size << " bytes" << (write ? ", a write" : "");
    misses += want;
  }
  EXPECT_GT(misses, uint64_t(steps / 50));  // the references did miss, and hit
  EXPECT_LT(misses, uint64_t(steps - steps / 10));
}

TEST(CacheSim, OneLevelEqualsAPlainModel) {
  for (const char* policy : {"lru", "fifo", "random"})
    for (const char* allocate : {"yes", "no"})
      for (const char* geometry : {"size=8K assoc=1 line=32",     // the cache tool's default
                                   "size=2K assoc=2 line=16",     // the table beside the tags
                                   "size=4K assoc=8 line=64",     // LRU: the tags in the table
                                   "size=1K assoc=full line=32",  // one set: no table
                                   "size=256 assoc=4 line=4"})    // lines under 8 bytes: no table
        for (bool tables : {true, false})  // cachesim's simulator (inline hit tests) and the cache tool's
          compare(std::string("D1 ") + geometry + " policy=" + policy + " write-allocate=" + allocate, tables, 16384,
                  100000);
}

TEST(CacheSim, StatementReadsBack) {
  for (const char* text : {"D1 size=8K assoc=1 line=32", "D1 size=16K assoc=2 line=64 policy=fifo write-allocate=no",
                           "U1 size=64K assoc=full line=32 policy=random", "D1 size=4096 assoc=1 line=4096"}) {
    const cs::Level l = oneLevel(text).levels[0];
    const std::string s = cs::statement(l);
    const cs::Level back = oneLevel(s).levels[0];
    EXPECT_EQ(back.name, l.name) << s;
    EXPECT_EQ(back.size, l.size) << s;
    EXPECT_EQ(back.assoc, l.assoc) << s;
    EXPECT_EQ(back.line, l.line) << s;
    EXPECT_EQ(back.policy, l.policy) << s;
    EXPECT_EQ(back.writeAllocate, l.writeAllocate) << s;
  }
  // 2048 ways: more than a number may say, so "full".
  EXPECT_EQ(cs::statement(oneLevel("D1 size=64K assoc=full line=32").levels[0]),
            "D1 size=65536 assoc=full line=32 policy=lru write-allocate=yes");
}

TEST(CacheSim, LaterKeyCounts) {
  EXPECT_EQ(oneLevel("D1 size=8K assoc=1 line=32 assoc=2 size=16K").levels[0].sets(), 256u);
  EXPECT_EQ(oneLevel("D1 size=8K assoc=full line=32 assoc=4").levels[0].assoc, 4u);
  EXPECT_EQ(oneLevel("D1 size=8K assoc=4 line=32 assoc=full").levels[0].assoc, 256u);
}

TEST(CacheSim, MessagesNameTheFileOnlyWhenThereIsOne) {
  auto message = [](const std::string& text, const std::string& file) {
    try {
      cs::parseConfig(text, file);
    } catch (const cs::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message("\nD1 size=8K assoc=3 line=32", "my.cache"),
            "my.cache:2: D1: size / (line * assoc) = 8192 / (32 * 3) is not a power-of-two number of sets");
  EXPECT_EQ(message("D1 size=8K assoc=3 line=32", ""),
            "D1: size / (line * assoc) = 8192 / (32 * 3) is not a power-of-two number of sets");
  EXPECT_EQ(message("D1 size=8Q assoc=1 line=32", ""), "size: '8Q' is not a size in bytes (32768, 32K, 8M)");
  EXPECT_EQ(message("# nothing", ""), "no cache level (write e.g. 'D1 size=32K assoc=8 line=64', docs/cachesim.md)");
}

TEST(CacheSim, TheLastLevelIsSharedUnlessSaid) {
  const cs::Hierarchy h = cs::parseConfig("I1 size=32K assoc=8 line=64\nD1 size=32K assoc=8 line=64\n"
                                          "L2 size=1M assoc=16 line=64\nLL size=8M assoc=16 line=64\n", "").hierarchies[0];
  EXPECT_FALSE(h.levels[0].shared);
  EXPECT_FALSE(h.levels[1].shared);
  EXPECT_FALSE(h.levels[2].shared);  // L2: each core's (thread's) own, as on today's machines
  EXPECT_TRUE(h.levels[3].shared);
  EXPECT_FALSE(cs::parseConfig("D1 size=8K assoc=1 line=32\nLL size=1M assoc=8 line=64 shared=no", "").hierarchies[0].levels[1].shared);
  EXPECT_TRUE(cs::parseConfig("D1 size=8K assoc=1 line=32\nL2 size=1M assoc=8 line=64 shared=yes\nLL size=8M assoc=8 line=64",
                              "").hierarchies[0].levels[1].shared);
  EXPECT_TRUE(cs::parseConfig("--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64", "").hierarchies[0].levels[2].shared);
  EXPECT_FALSE(oneLevel("U1 size=8K assoc=1 line=32").levels[0].shared);  // a first level alone: nothing to share
  try {
    cs::parseConfig("D1 size=8K assoc=1 line=32 shared=yes", "");
    ADD_FAILURE() << "a shared first level was accepted";
  } catch (const cs::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "D1: shared=yes: a first level is each thread's own (only L2, L3 and LL can be shared)");
  }
  // statement() writes it, and it reads back.
  for (const char* text : {"LL size=1M assoc=8 line=64 shared=no", "LL size=1M assoc=8 line=64"}) {
    const cs::Level l = cs::parseConfig(std::string("D1 size=8K assoc=1 line=32\n") + text, "").hierarchies[0].levels[1];
    const cs::Level back = cs::parseConfig("D1 size=8K assoc=1 line=32\n" + cs::statement(l), "").hierarchies[0].levels[1];
    EXPECT_EQ(back.shared, l.shared) << cs::statement(l);
  }
}

// Two simulators (threads) with their own D1s and one LL: the LL sees
// both threads' D1 misses in the order they happen, as one plain model of
// it does; without the Shared levels each has its own LL.
TEST(CacheSim, ASharedLevelIsOneForAllSimulators) {
  const cs::Hierarchy h = cs::parseConfig("D1 size=1K assoc=2 line=32\nLL size=8K assoc=4 line=32 policy=random", "").hierarchies[0];
  ASSERT_TRUE(h.levels[1].shared);
  std::vector<uint64_t> common(cs::Shared::words(h));
  cs::Shared shared(h, common.data());
  std::vector<uint64_t> ma(cs::Simulator::words(h, true, true)), mb(ma.size());
  cs::Simulator a(h, ma.data(), true, &shared), b(h, mb.data(), true, &shared);
  Model d1a(h.levels[0]), d1b(h.levels[0]), ll(h.levels[1]);
  std::mt19937_64 rng(7);
  uint64_t llHits = 0;
  for (int k = 0; k < 200000; ++k) {
    const bool first = rng() % 2;
    const uint64_t addr = 0x40000 + rng() % 12288;
    const uint32_t size = uint32_t(1 + rng() % 8);
    const bool write = rng() % 4 == 0;
    Model& d1 = first ? d1a : d1b;
    unsigned want = d1.ref(addr, size, write) ? 1 : 0;
    if (want) want += ll.ref(addr, size, write) ? 1 : 0;
    llHits += want == 1;
    ASSERT_EQ((first ? a : b).data(addr, size, write), want) << "reference " << k;
  }
  EXPECT_GT(llHits, 1000u);
  // A line thread a brought in is in the LL for thread b; not in b's own LL.
  std::vector<uint64_t> mc(cs::Simulator::words(h)), md(mc.size()), me(ma.size());
  cs::Simulator c(h, mc.data()), d(h, md.data());
  cs::Simulator e(h, me.data(), true, &shared);
  EXPECT_EQ(c.data(0x900000, 8, false), 2u);
  EXPECT_EQ(d.data(0x900000, 8, false), 2u);
  EXPECT_EQ(a.data(0x900000, 8, false), 2u);
  EXPECT_EQ(e.data(0x900000, 8, false), 1u);
}

TEST(LibcModel, ExtentsFollowTheArguments) {
  namespace libc = atomx::libc;
  ASSERT_NE(libc::find("__memcpy_chk"), nullptr);
  EXPECT_EQ(libc::find("__memcpy_chk")->kind, libc::Kind::Copy);
  EXPECT_EQ(libc::find("printf"), nullptr);
  libc::Extent e = libc::extent(libc::Kind::Copy, 0x1000, 0x2000, 100);
  EXPECT_EQ(e.from, 0x2000u);
  EXPECT_EQ(e.to, 0x1000u);
  EXPECT_EQ(e.read, 100u);
  EXPECT_EQ(e.written, 100u);
  e = libc::extent(libc::Kind::Bcopy, 0x1000, 0x2000, 7);
  EXPECT_EQ(e.from, 0x1000u);
  EXPECT_EQ(e.to, 0x2000u);
  e = libc::extent(libc::Kind::Zero, 0x1000, 64, 0);
  EXPECT_EQ(e.written, 64u);
  EXPECT_EQ(e.read, 0u);
  // calloc: zeroed below glibc's mmap threshold only, and only what it returned.
  EXPECT_EQ(libc::extent(libc::Kind::Calloc, 10, 100, 0, 0x5000).written, 1000u);
  EXPECT_EQ(libc::extent(libc::Kind::Calloc, 10, 100, 0, 0x5000).to, 0x5000u);
  EXPECT_EQ(libc::extent(libc::Kind::Calloc, 1024, 1024, 0, 0x5000).written, 0u);
  EXPECT_EQ(libc::extent(libc::Kind::Calloc, 10, 100, 0, 0).written, 0u);
  // Strings: up to and including the NUL, or the first difference.
  const char s[] = "hello", t[] = "help!";
  const auto p = [](const char* x) { return uint64_t(reinterpret_cast<uintptr_t>(x)); };
  EXPECT_EQ(libc::extent(libc::Kind::Strlen, p(s), 0, 0).read, 6u);
  EXPECT_EQ(libc::extent(libc::Kind::Strnlen, p(s), 3, 0).read, 3u);
  EXPECT_EQ(libc::extent(libc::Kind::Strcpy, 0x9000, p(s), 0).written, 6u);
  e = libc::extent(libc::Kind::Strcmp, p(s), p(t), 0);
  EXPECT_EQ(e.read, 4u);  // 'l' against 'p': the fourth byte
  EXPECT_TRUE(e.two);
  EXPECT_EQ(libc::extent(libc::Kind::Strcmp, p(s), p(s), 0).read, 6u);
  EXPECT_EQ(libc::extent(libc::Kind::Strncmp, p(s), p(s), 2).read, 2u);
  EXPECT_EQ(libc::extent(libc::Kind::Memcmp, p(s), p(t), 6).read, 4u);
  EXPECT_EQ(libc::extent(libc::Kind::Memcmp, p(s), p(s), 6).read, 6u);
}

TEST(LibcModel, ReferencesCoverEachRangeOnceInOrder) {
  namespace libc = atomx::libc;
  libc::Extent e = libc::extent(libc::Kind::Copy, 0x2003, 0x1000, 70);
  std::vector<std::string> got;
  libc::references(e, 32, [&](uint64_t a, uint32_t n, bool w) {
    got.push_back((w ? "W " : "R ") + std::to_string(a) + "+" + std::to_string(n));
  });
  const std::vector<std::string> want = {"R 4096+32", "W 8195+32", "R 4128+32", "W 8227+32", "R 4160+6", "W 8259+6"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(libc::readPieces(e, 32), 3u);
  EXPECT_EQ(libc::writePieces(e, 32), 3u);
  const char s[] = "abc", t[] = "abd";
  e = libc::extent(libc::Kind::Strcmp, uint64_t(reinterpret_cast<uintptr_t>(s)), uint64_t(reinterpret_cast<uintptr_t>(t)), 0);
  uint64_t reads = 0, bytes = 0;
  libc::references(e, 2, [&](uint64_t, uint32_t n, bool w) { reads += !w, bytes += n; });
  EXPECT_EQ(reads, 4u);  // 2 pieces of each string
  EXPECT_EQ(bytes, 6u);
  EXPECT_EQ(libc::readPieces(e, 2), 4u);
}

}  // namespace
