// atomx/cachesim.hpp: the simulator against a plain model of the same
// cache (a list of lines per set, most recent first), reference by
// reference, for every policy, write-allocate or not, direct-mapped to
// fully associative, with references that straddle two lines or are wider
// than one, with the tables for inline hit tests (tools/cachesim) and
// without (tools/cache); and the configuration format's statement() read
// back by its parser (the cache tool hands its level from the rewrite to
// the analysis side as a statement).
#include <atomx/cachesim.hpp>

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

}  // namespace
