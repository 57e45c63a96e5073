// atomx::cachesim: a cache hierarchy simulator and its configuration format
// (docs/cachesim.md).  Header only, C++20; it knows nothing of
// instrumentation: it is given addresses and sizes and answers how far down
// the hierarchy each reference missed.  tools/cachesim compiles it into its
// analysis object (run-time simulation); an offline simulator over
// regenerated traces can include it as it is.
//
//     Config c = readConfig("my.cache");          // or parseConfig(text, name)
//     for (const Hierarchy& h : c.hierarchies) {
//       std::vector<uint64_t> memory(Simulator::words(h));
//       Simulator s(h, memory.data());
//       unsigned missed = s.data(addr, 8, false);  // 0: an L1 hit; k: missed in the first k levels
//     }
//
// The simulator's state lives in memory the caller gives it (words(h)
// 64-bit words, zeroed), and its reference methods call no library function
// and use no floating point, so they can run in an analysis routine that
// atomx calls without saving the vector state.  Parsing allocates and
// throws ConfigError, whose what() is one line: "FILE:LINE: problem"
// (text that is no file's, parseConfig(text, ""): "problem").
//
// The model is Valgrind cachegrind's (cg_sim.c): each set an array of tags,
// most recently used (LRU) or newest (FIFO) first; a reference of `size`
// bytes that straddles two lines touches both, in order, and counts ONE
// miss if either missed; on a miss the next level is referenced with the
// same address and size.  Writes allocate unless the level says
// write-allocate=no (then a write miss installs nothing there and goes on
// to the next level as a write).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The simulator's classes are hidden: in an analysis object (a shared
// object) a default-visibility inline member that the compiler does not
// inline is called through the PLT, which makes the calling routine heavy
// (<atomx/light.hpp>).
#define ATOMX_CACHESIM_HIDDEN __attribute__((visibility("hidden")))

namespace atomx::cachesim {

inline constexpr int kMaxLevels = 4;  // per path: a first level and up to three outer ones

enum class Policy : uint8_t { Lru, Fifo, Random };
enum class Serves : uint8_t { Instructions, Data, Unified };

struct Level {
  std::string name;  // I1, D1, U1 (first levels); L2, L3, LL (outer, unified)
  Serves serves = Serves::Unified;
  bool first = false;  // a first level (I1, D1, U1)
  uint64_t size = 0;
  uint32_t assoc = 0, line = 0;  // assoc 0 in a file: "full"
  Policy policy = Policy::Lru;
  bool writeAllocate = true;
  // An outer level shared by every thread of the program (Simulator's
  // Shared), as a machine's last level is; else each thread has its own
  // copy.  First levels are each thread's own.  Unwritten (`shared=`), the
  // last level of a configuration is shared when it is an outer one.
  bool shared = false;
  bool sharedGiven = false;
  uint64_t sets() const { return size / (uint64_t(line) * assoc); }
};

// ease's periodic context switch (Davidson & Whalley): every `every` units,
// all levels are flushed (every line invalidated).  Units: instructions
// executed, references (instruction fetches, one per instruction, plus data
// references), or work (a first-level hit costs hitCost, a miss missCost;
// ease used 1 and 10 every 10,000).
enum class SwitchUnit : uint8_t { None, Instructions, References, Work };
struct ContextSwitch {
  SwitchUnit unit = SwitchUnit::None;
  uint64_t every = 0;
  uint64_t hitCost = 1, missCost = 10;
};

// One hierarchy: its levels as written (first levels, then outer levels in
// order, the last outermost).  iPath/dPath: the indices of the levels an
// instruction fetch / a data reference goes through, first level first
// (empty when the hierarchy simulates no instruction / data cache).
struct Hierarchy {
  std::string name;
  std::vector<Level> levels;
  ContextSwitch contextSwitch;
  std::vector<int> iPath, dPath;
};

struct Config {
  std::string source;  // the file name, or "(default)"
  std::vector<Hierarchy> hierarchies;
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string_view::npos ? std::string() : std::string(s.substr(a, b - a + 1));
}

inline std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!w.empty()) out.push_back(w), w.clear();
    } else w += c;
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

inline bool pow2(uint64_t n) { return n && !(n & (n - 1)); }

// "32768", "32K", "32KB", "8M", "1G": bytes (units: K, M, G allowed).
inline bool number(const std::string& v, uint64_t& out, bool units) {
  if (v.empty() || v[0] < '0' || v[0] > '9') return false;
  size_t k = 0;
  uint64_t n = 0;
  for (; k < v.size() && v[k] >= '0' && v[k] <= '9'; ++k) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + uint64_t(v[k] - '0');
  }
  std::string unit = v.substr(k);
  if (units && (unit == "K" || unit == "k" || unit == "KB" || unit == "kB" || unit == "KiB")) n <<= 10, unit.clear();
  else if (units && (unit == "M" || unit == "MB" || unit == "MiB")) n <<= 20, unit.clear();
  else if (units && (unit == "G" || unit == "GB" || unit == "GiB")) n <<= 30, unit.clear();
  out = n;
  return unit.empty();
}

class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  // From a file: "FILE:LINE: problem"; from no file (the name ""): the problem alone.
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(file_.empty() ? what : file_ + ":" + std::to_string(line_) + ": " + what);
  }

  Config parse(std::string_view text) {
    Config c;
    c.source = file_;
    size_t at = 0;
    while (at <= text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string_view::npos) nl = text.size();
      ++line_;
      std::string_view l = text.substr(at, nl - at);
      l = l.substr(0, l.find('#'));
      statement(c, words(l));
      at = nl + 1;
    }
    finish(c);
    if (c.hierarchies.empty()) {
      line_ = 0;
      throw ConfigError((file_.empty() ? "" : file_ + ": ") +
                        "no cache level (write e.g. 'D1 size=32K assoc=8 line=64', docs/cachesim.md)");
    }
    return c;
  }

 private:
  void statement(Config& c, const std::vector<std::string>& w) {
    if (w.empty()) return;
    const std::string& head = w[0];
    if (head == "config") {
      if (w.size() > 2) fail("'config' takes one name, e.g. 'config small'");
      finish(c);
      startNew(c, w.size() > 1 ? w[1] : "");
      return;
    }
    if (head.rfind("--", 0) == 0) {  // cachegrind's --I1=size,assoc,line ...
      for (const std::string& o : w) cachegrindOption(c, o);
      return;
    }
    if (head == "context-switch") {
      contextSwitch(current(c), w);
      return;
    }
    if (head == "I1" || head == "D1" || head == "U1" || head == "L2" || head == "L3" || head == "LL") {
      Level l;
      l.name = head;
      l.first = head[1] == '1';
      l.serves = head == "I1" ? Serves::Instructions : head == "D1" ? Serves::Data : Serves::Unified;
      bool full = false;
      for (size_t k = 1; k < w.size(); ++k) {
        const size_t eq = w[k].find('=');
        if (eq == std::string::npos) fail("expected key=value after " + head + ", not '" + w[k] + "'");
        const std::string key = w[k].substr(0, eq), v = w[k].substr(eq + 1);
        uint64_t n = 0;
        if (key == "size") {
          if (!number(v, n, true) || !n) fail("size: '" + v + "' is not a size in bytes (32768, 32K, 8M)");
          l.size = n;
        } else if (key == "assoc") {
          if (v == "full") full = true;
          else if (!number(v, n, false) || !n || n > 1024) fail("assoc: '" + v + "' (a number of ways from 1 to 1024, or full)");
          else l.assoc = uint32_t(n), full = false;  // a key written twice: the later counts
        } else if (key == "line") {
          if (!number(v, n, true) || !pow2(n) || n > 4096) fail("line: '" + v + "' is not a power of two up to 4096");
          l.line = uint32_t(n);
        } else if (key == "policy") {
          if (v == "lru") l.policy = Policy::Lru;
          else if (v == "fifo") l.policy = Policy::Fifo;
          else if (v == "random") l.policy = Policy::Random;
          else fail("policy: '" + v + "' (lru, fifo or random)");
        } else if (key == "write-allocate") {
          if (v == "yes") l.writeAllocate = true;
          else if (v == "no") l.writeAllocate = false;
          else fail("write-allocate: '" + v + "' (yes or no)");
        } else if (key == "shared") {
          if (v != "yes" && v != "no") fail("shared: '" + v + "' (yes: one level for all threads; no: one per thread)");
          if (l.first && v == "yes") fail(head + ": shared=yes: a first level is each thread's own (only L2, L3 and LL can be shared)");
          l.shared = v == "yes", l.sharedGiven = true;
        } else fail("unknown key '" + key + "' (size, assoc, line, policy, write-allocate, shared)");
      }
      if (!l.size || !l.line || (!l.assoc && !full)) fail(head + " needs size=, assoc= and line=");
      if (full) l.assoc = uint32_t(l.size / l.line);
      addLevel(current(c), l);
      return;
    }
    fail("unknown statement '" + head + "' (config, I1, D1, U1, L2, L3, LL, context-switch, --I1=, --D1=, --LL=)");
  }

  void cachegrindOption(Config& c, const std::string& o) {
    const size_t eq = o.find('=');
    const std::string key = o.substr(0, eq);
    if ((key != "--I1" && key != "--D1" && key != "--LL") || eq == std::string::npos)
      fail("unknown option '" + o + "' (cachegrind's --I1=, --D1=, --LL=size,assoc,line)");
    const std::vector<std::string> parts = [&] {
      std::vector<std::string> p(1);
      for (char ch : o.substr(eq + 1)) {
        if (ch == ',') p.emplace_back();
        else p.back().push_back(ch);
      }
      return p;
    }();
    uint64_t n[3];
    if (parts.size() != 3 || !number(parts[0], n[0], false) || !number(parts[1], n[1], false) ||
        !number(parts[2], n[2], false) || !n[0] || !n[1] || !n[2] || n[1] > 1024 || !pow2(n[2]) || n[2] > 4096)
      fail(o + ": expected " + key + "=size,assoc,line_size in bytes, e.g. " + key + "=32768,8,64");
    Level l;
    l.name = key.substr(2);
    l.first = l.name != "LL";
    l.serves = l.name == "I1" ? Serves::Instructions : l.name == "D1" ? Serves::Data : Serves::Unified;
    l.size = n[0], l.assoc = uint32_t(n[1]), l.line = uint32_t(n[2]);
    Hierarchy& h = current(c);
    for (Level& old : h.levels)  // a later option replaces an earlier one, as on cachegrind's command line
      if (old.name == l.name) {
        check(l);
        old = l;
        return;
      }
    addLevel(h, l);
  }

  void contextSwitch(Hierarchy& h, const std::vector<std::string>& w) {
    ContextSwitch s;
    uint64_t n = 0;
    for (size_t k = 1; k < w.size(); ++k) {
      const size_t eq = w[k].find('=');
      const std::string key = w[k].substr(0, eq), v = eq == std::string::npos ? "" : w[k].substr(eq + 1);
      if (key == "every" && number(v, n, false) && n) s.every = n;
      else if (key == "unit" && v == "instructions") s.unit = SwitchUnit::Instructions;
      else if (key == "unit" && v == "references") s.unit = SwitchUnit::References;
      else if (key == "unit" && v == "work") s.unit = SwitchUnit::Work;
      else if (key == "hit" && number(v, n, false)) s.hitCost = n;
      else if (key == "miss" && number(v, n, false)) s.missCost = n;
      else fail("context-switch: bad '" + w[k] + "' (every=N unit=instructions|references|work [hit=1 miss=10])");
    }
    if (!s.every || s.unit == SwitchUnit::None) fail("context-switch needs every=N and unit=instructions|references|work");
    h.contextSwitch = s;
  }

  Hierarchy& current(Config& c) {
    if (!open_) startNew(c, "");
    return c.hierarchies.back();
  }
  void startNew(Config& c, const std::string& name) {
    Hierarchy h;
    h.name = name.empty() ? std::to_string(c.hierarchies.size() + 1) : name;
    for (const Hierarchy& o : c.hierarchies)
      if (o.name == h.name) fail("a second configuration named '" + h.name + "'");
    c.hierarchies.push_back(h);
    open_ = true;
    startLine_ = line_;
  }

  void check(const Level& l) const {
    const std::string n = l.name;
    if (l.size % l.line) fail(n + ": size " + std::to_string(l.size) + " is not a multiple of the line size " + std::to_string(l.line));
    if ((l.size / l.line) % l.assoc || !pow2(l.sets()))
      fail(n + ": size / (line * assoc) = " + std::to_string(l.size) + " / (" + std::to_string(l.line) + " * " +
           std::to_string(l.assoc) + ") is not a power-of-two number of sets");
  }

  void addLevel(Hierarchy& h, const Level& l) {
    check(l);
    for (const Level& o : h.levels) {
      if (o.name == l.name) fail("a second " + l.name + " in configuration '" + h.name + "'");
      if (l.first && !o.first) fail(l.name + " after the outer level " + o.name + ": first levels (I1, D1, U1) come first");
      if (o.name == "LL") fail(l.name + " after LL: LL is the last level");
      if ((l.name == "U1" && o.first) || (o.name == "U1" && l.first))
        fail("U1 (a unified first level) with " + (l.name == "U1" ? o.name : l.name) + ": use U1, or I1 and D1");
    }
    h.levels.push_back(l);
  }

  // Closes the configuration being read: its paths.
  void finish(Config& c) {
    if (!open_) return;
    open_ = false;
    Hierarchy& h = c.hierarchies.back();
    const int saved = line_;
    line_ = startLine_ ? startLine_ : 1;
    if (h.levels.empty()) fail("configuration '" + h.name + "' has no cache level");
    if (!h.levels[0].first) fail("configuration '" + h.name + "' has no first level (I1, D1 or U1)");
    for (int k = 0; k < int(h.levels.size()); ++k) {
      const Level& l = h.levels[size_t(k)];
      if (l.serves != Serves::Data) (l.first || !h.iPath.empty() ? h.iPath.push_back(k) : void());
      if (l.serves != Serves::Instructions) (l.first || !h.dPath.empty() ? h.dPath.push_back(k) : void());
    }
    Level& last = h.levels.back();
    if (!last.first && !last.sharedGiven) last.shared = true;  // the machine's way: the last level shared
    if (h.contextSwitch.unit == SwitchUnit::Instructions && h.iPath.empty())
      fail("context-switch unit=instructions in configuration '" + h.name + "', which simulates no instruction cache");
    line_ = saved;
  }

  std::string file_;
  int line_ = 0, startLine_ = 0;
  bool open_ = false;
};

}  // namespace detail

inline Config parseConfig(std::string_view text, const std::string& fileName) {
  return detail::Parser(fileName).parse(text);
}

inline Config readConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot read the cache configuration file");
  std::stringstream s;
  s << in.rdbuf();
  return parseConfig(s.str(), path);
}

// The hierarchy when no file is named: cachegrind's usual one on today's
// x86-64 machines (Valgrind picks the host's; these are its fallback sizes).
inline constexpr const char* kDefaultConfig =
    "config default\n"
    "I1 size=32K assoc=8 line=64\n"
    "D1 size=32K assoc=8 line=64\n"
    "LL size=8M assoc=16 line=64\n";
inline Config defaultConfig() {
  Config c = parseConfig(kDefaultConfig, "(default)");
  return c;
}

// One level's state: sets of tags (line number + 1; 0: invalid), most
// recent (LRU) or newest (FIFO) first.  A first level that keeps a table
// of its sets for the inline hit test (Simulator::mruTable) has it in one
// of two forms:
//  - beside the tags (`mru`): the word at byte set << lineBits holds the
//    address of the set's most recent line, kNoLine when the set is empty,
//    and every other word of the table kNoLine;
//  - as the tags themselves (`inTable`: LRU, two ways or more, all of a
//    set's ways within its line-sized slot): way k of a set is the word k
//    of its slot, a line's address (kNoLine: invalid).  The inline test
//    may then settle a hit on the second most recent line itself, swapping
//    the slot's first two words (atomx.hpp, MruDescriptor), which is
//    exactly the simulator's own move to the front of that way.
struct ATOMX_CACHESIM_HIDDEN Cache {
  uint64_t* tags = nullptr;
  uint64_t setMask = 0;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  uint32_t lineBits = 0, assoc = 1;
  uint32_t stride = 1;  // words from one set to the next
  Policy policy = Policy::Lru;
  bool writeAllocate = true;
  bool inTable = false;

  // The line touched last: present, and the most recent of its set.  Not
  // kept in a table the inline test reorders (UINT64_MAX then).
  uint64_t last = UINT64_MAX;
  uint64_t* mru = nullptr;  // the first level's table (either form); null: none
  static constexpr uint64_t kNoLine = 1;  // no line's address (lines are 8 bytes or more)
  uint64_t invalid() const { return inTable ? kNoLine : 0; }
  uint64_t tagOf(uint64_t line) const { return inTable ? line << lineBits : line + 1; }
  void noteFront(const uint64_t* set, uint64_t line) {
    if (mru && !inTable) mru[(line & setMask) << (lineBits - 3)] = set[0] ? (set[0] - 1) << lineBits : kNoLine;
  }
  void noteLast(uint64_t line) {
    if (!inTable) last = line;
  }

  // One line: true on a miss.  `fill`: install it on a miss.  (The
  // reference methods are always inlined: an analysis object is position-independent, and a call to an
  // out-of-line copy goes through the PLT, which makes the calling
  // analysis routine heavy, docs/instrumenting.md.)
  [[gnu::always_inline]] bool touch(uint64_t line, bool fill) {
    if (line == last) return false;  // a hit that changes nothing, under every policy
    const uint64_t tag = tagOf(line);
    uint64_t* set = &tags[(line & setMask) * stride];
    if (set[0] == tag) return noteLast(line), false;
    for (uint32_t i = 1; i < assoc; ++i)
      if (set[i] == tag) {
        if (policy == Policy::Lru) moveToFront(set, i, tag), noteFront(set, line);
        noteLast(line);
        return false;
      }
    if (!fill) return true;
    noteLast(line);
    uint32_t victim = assoc - 1;  // LRU: the least recent; FIFO: the oldest; invalid ways go first
    if (policy == Policy::Random && set[victim] != invalid()) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      victim = uint32_t(rng % assoc);
    }
    moveToFront(set, victim, tag);
    noteFront(set, line);
    return true;
  }
  // set[0..i-1] move up one way, `tag` goes first (no memmove: a library call).
  static void moveToFront(uint64_t* set, uint32_t i, uint64_t tag) {
    uint64_t carry = tag;
    for (uint32_t k = 0; k <= i; ++k) {
      const uint64_t t = set[k];
      set[k] = carry;
      carry = t;
    }
  }
  // A reference: every line it covers (at most two: cachegrind clamps a
  // wider one to the line), one miss if any missed.
  [[gnu::always_inline]] bool ref(uint64_t addr, uint32_t size, bool write) {
    const bool fill = !write || writeAllocate;
    if (size > (1u << lineBits)) size = 1u << lineBits;  // clamped to a line (fxsave & co.), as the cache tool does
    const uint64_t first = addr >> lineBits;
    const uint64_t last = (addr + (size ? size : 1) - 1) >> lineBits;
    bool miss = touch(first, fill);
    if (last != first) miss |= touch(first + 1, fill);
    return miss;
  }
  // Every line invalidated (`words`: the table's, Simulator::mruWords).
  void flush(uint64_t words) {
    if (!inTable)
      for (uint64_t k = 0; k <= setMask; ++k)
        for (uint32_t w = 0; w < assoc; ++w) {
          uint64_t* t = &tags[k * stride + w];
          asm("" : "+r"(t));  // no loop the compiler turns into a call of libc's memset
          *t = 0;
        }
    last = UINT64_MAX;
    clearMru(words);
  }
  void clearMru(uint64_t words) {
    if (mru)
      for (uint64_t k = 0; k < words; ++k) mru[k] = kNoLine;
  }
};

// A level's simulator state, not yet placed in memory.  `tables`: keep the
// first level's most-recent-line table (Simulator::mruTable).
ATOMX_CACHESIM_HIDDEN inline Cache makeCache(const Level& l, bool tables, bool inTable) {
  Cache c;
  c.assoc = l.assoc;
  c.setMask = l.sets() - 1;
  c.lineBits = uint32_t(__builtin_ctzll(l.line));
  c.policy = l.policy;
  c.writeAllocate = l.writeAllocate;
  c.inTable = tables && inTable;
  c.stride = c.inTable ? uint32_t(l.line / 8) : l.assoc;
  return c;
}

// The outer levels every thread shares (Level::shared), as a machine's last
// level is: their state, in memory the caller gives (words(h) zeroed
// words), and a lock that a thread takes only when one of its references
// reaches them (after a first-level miss).  The lock calls nothing: it
// spins, and yields the processor (a raw system call) when the holder
// does not let go soon.  A thread that already holds it (a signal handler
// whose references interrupted its own thread's) goes on without it.
class ATOMX_CACHESIM_HIDDEN Shared {
 public:
  static size_t words(const Hierarchy& h) {
    size_t n = 0;
    for (const Level& l : h.levels) n += l.shared ? size_t(l.sets()) * l.assoc : 0;
    return n;
  }
  Shared(const Hierarchy& h, uint64_t* memory) {
    for (size_t k = 0; k < h.levels.size(); ++k)
      if (h.levels[k].shared) {
        caches[k] = makeCache(h.levels[k], false, false);
        caches[k].tags = memory, memory += size_t(h.levels[k].sets()) * h.levels[k].assoc;
      }
  }
  // True when this call took the lock (false: the thread held it already).
  bool lock() {
    uint64_t self;
    asm("mov %%fs:0, %0" : "=r"(self));
    if (__atomic_load_n(&owner_, __ATOMIC_RELAXED) == self) return false;
    for (unsigned spins = 0;; ++spins) {
      uint64_t none = 0;
      if (!__atomic_load_n(&owner_, __ATOMIC_RELAXED) &&
          __atomic_compare_exchange_n(&owner_, &none, self, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return true;
      if (spins % 1024 == 1023) {
        long r;
        asm volatile("syscall" : "=a"(r) : "a"(24L) : "rcx", "r11", "memory");  // sched_yield
      } else asm volatile("pause");
    }
  }
  void unlock() { __atomic_store_n(&owner_, 0, __ATOMIC_RELEASE); }
  // In a child process after fork: the thread that held it is not there.
  void forget() { owner_ = 0; }

  Cache caches[kMaxLevels * 2];

 private:
  uint64_t owner_ = 0;  // the holder's thread pointer (%fs:0); 0: free
};

// A hierarchy's state over caller memory (words(h, tables) zeroed 64-bit
// words), and, for a simulator of one thread among several, its Shared
// levels (words(h, tables, true) then leaves those out).
class ATOMX_CACHESIM_HIDDEN Simulator {
 public:
  // Whether a first level can keep a most-recent-line table (Cache::mru):
  // lines of 8 bytes or more (an entry per line-sized slot) and two sets
  // or more (the inline test's straddle check needs them).  Its words: a
  // slot per set, and one more, so that the test's second word of the last
  // set is in it.
  static bool mruTable(const Level& l) { return l.first && l.line >= 8 && l.sets() >= 2; }
  static size_t mruWords(const Level& l) { return mruTable(l) ? size_t(l.sets()) * l.line / 8 + 1 : 0; }
  // Whether that table holds the level's tags (Cache::inTable): LRU, two
  // ways or more, a set's ways within its slot.
  static bool tagsInTable(const Level& l) {
    return mruTable(l) && l.policy == Policy::Lru && l.assoc >= 2 && uint64_t(l.assoc) * 8 <= l.line;
  }
  static size_t tagWords(const Level& l) { return tagsInTable(l) ? 0 : size_t(l.sets()) * l.assoc; }
  // `tables`: keep those tables, for a caller that tests hits inline
  // (tools/cachesim).  Without them (tools/cache) a level's state is its
  // tags alone, and no fill or flush writes a table.  The simulation is
  // the same either way.  `sharing`: the shared levels' state is elsewhere.
  static size_t words(const Hierarchy& h, bool tables = true, bool sharing = false) {
    size_t n = 0;
    for (const Level& l : h.levels)
      if (!(sharing && l.shared)) n += tables ? tagWords(l) + mruWords(l) : size_t(l.sets()) * l.assoc;
    return n;
  }
  Simulator() = default;
  // `shared`: the levels h marks shared are those (null: every level is
  // this simulator's own, whatever h says: one thread, or an offline trace).
  Simulator(const Hierarchy& h, uint64_t* memory, bool tables = true, Shared* shared = nullptr) {
    nlevels_ = int(h.levels.size());
    shared_ = shared;
    for (int k = 0; k < nlevels_; ++k) {
      const Level& l = h.levels[size_t(k)];
      caches_[k] = makeCache(l, tables, tagsInTable(l));
      isShared_[k] = shared && l.shared;
      tagWords_[k] = isShared_[k] ? 0 : tables ? tagWords(l) : size_t(l.sets()) * l.assoc;
      mruWords_[k] = isShared_[k] || !tables ? 0 : mruWords(l);
    }
    place(memory);
    ni_ = int(h.iPath.size()), nd_ = int(h.dPath.size());
    for (int k = 0; k < ni_; ++k) i_[k] = h.iPath[size_t(k)];
    for (int k = 0; k < nd_; ++k) d_[k] = h.dPath[size_t(k)];
    switch_ = h.contextSwitch;
  }
  // The state moves to other memory (words() zeroed words): a trivially
  // copied Simulator is then a second, empty hierarchy of the same shape
  // (sharing the same Shared levels).
  void place(uint64_t* memory) {
    for (int k = 0; k < nlevels_; ++k) {
      at_[k] = isShared_[k] ? &shared_->caches[k] : &caches_[k];
      if (!memory || isShared_[k]) {  // a shape only (no state yet), or state elsewhere
        caches_[k].tags = caches_[k].mru = nullptr;
        continue;
      }
      Cache& c = caches_[k];
      c.tags = memory, memory += tagWords_[k];
      c.mru = mruWords_[k] ? memory : nullptr, memory += mruWords_[k];
      if (c.inTable) c.tags = c.mru;
      c.clearMru(mruWords_[k]);
    }
  }
  // Level k's most-recent-line table (null when it keeps none).
  const uint64_t* mru(int k) const { return caches_[k].mru; }
  int instructionLevels() const { return ni_; }  // 0: no instruction cache simulated
  int dataLevels() const { return nd_; }
  // The first-level line size of the instruction path, as a shift.
  uint32_t instructionLineBits() const { return ni_ ? caches_[i_[0]].lineBits : 0; }
  // The first-level line size of the data path, in bytes (0: none).
  uint32_t dataLine() const { return nd_ ? 1u << caches_[d_[0]].lineBits : 0; }

  // One reference: how many levels of its path missed (0: a first-level hit).
  [[gnu::always_inline]] unsigned fetch(uint64_t addr, uint32_t size) {
    return hitsLast(caches_[i_[0]], addr, size) ? 0 : walk(i_, ni_, addr, size, false);
  }
  [[gnu::always_inline]] unsigned data(uint64_t addr, uint32_t size, bool write) {
    return hitsLast(caches_[d_[0]], addr, size) ? 0 : walk(d_, nd_, addr, size, write);
  }

  // The periodic context switch: call after each reference (or group of
  // instruction fetches) with the instructions, references and first-level
  // misses it made; true if the hierarchy was flushed.
  bool tick(uint64_t instructions, uint64_t references, uint64_t firstMisses) {
    // (ifs, not a switch: a jump table is an indirect jump, which makes an
    // analysis routine heavy)
    if (switch_.unit == SwitchUnit::None) return false;
    if (switch_.unit == SwitchUnit::Instructions) units_ += instructions;
    else if (switch_.unit == SwitchUnit::References) units_ += references;
    else units_ += (references - firstMisses) * switch_.hitCost + firstMisses * switch_.missCost;
    if (units_ < switch_.every) return false;
    units_ %= switch_.every;
    flush();
    ++switches_;
    return true;
  }
  bool switching() const { return switch_.unit != SwitchUnit::None; }
  uint64_t switches() const { return switches_; }
  // Every level flushed, the shared ones too (under their lock).
  void flush() {
    const bool mine = shared_ && shared_->lock();
    for (int k = 0; k < nlevels_; ++k) at_[k]->flush(mruWords_[k]);
    if (mine) shared_->unlock();
  }

 private:
  // Within the line the first level referenced last: a hit that changes
  // nothing there, and nothing reaches the levels beyond.
  static bool hitsLast(const Cache& c, uint64_t addr, uint32_t size) {
    return (addr >> c.lineBits) == c.last && ((addr + (size ? size - 1 : 0)) >> c.lineBits) == c.last;
  }
  [[gnu::always_inline]] unsigned walk(const int* path, int n, uint64_t addr, uint32_t size, bool write) {
    unsigned missed = 0;
    bool locked = false, mine = false;
    for (int k = 0; k < n; ++k) {
      if (isShared_[path[k]] && !locked) locked = true, mine = shared_->lock();
      if (!at_[path[k]]->ref(addr, size, write)) break;
      ++missed;
    }
    if (mine) shared_->unlock();
    return missed;
  }

  Cache caches_[kMaxLevels * 2];
  Cache* at_[kMaxLevels * 2] = {};  // each level's state: caches_[k], or the Shared one
  bool isShared_[kMaxLevels * 2] = {};
  Shared* shared_ = nullptr;
  uint64_t tagWords_[kMaxLevels * 2] = {};
  uint64_t mruWords_[kMaxLevels * 2] = {};
  int i_[kMaxLevels * 2] = {}, d_[kMaxLevels * 2] = {};
  int nlevels_ = 0, ni_ = 0, nd_ = 0;
  ContextSwitch switch_;
  uint64_t units_ = 0, switches_ = 0;
};

// The instruction fetches a first level of 2^lineBits-byte lines must see
// for one execution of a block (docs/cachesim.md, "What is simulated"):
// its instructions in order, except one whose bytes lie entirely in the
// line the previous instruction ended in (a sure hit that changes
// nothing).  `insn(k)` gives instruction k's run-time address and size as
// a pair; `emit(addr, size, k)` is called per fetch.  The online tool
// (tools/cachesim) lists these per block at start-up; the offline one
// (atomx cachesim, src/analyze/Cachesim.cpp) per block it meets.
template <class Insn, class Emit>
inline void blockFetches(size_t count, uint32_t lineBits, Insn&& insn, Emit&& emit) {
  uint64_t lastLine = UINT64_MAX;
  for (size_t k = 0; k < count; ++k) {
    const auto [addr, size] = insn(k);
    const uint64_t first = uint64_t(addr) >> lineBits, last = (uint64_t(addr) + uint64_t(size) - 1) >> lineBits;
    if (first == lastLine && last == lastLine) continue;
    emit(uint64_t(addr), uint32_t(size), k);
    lastLine = last;
  }
}

// The level as a statement of the format, which parses back to it:
// "D1 size=8192 assoc=1 line=32 policy=lru write-allocate=yes" (a single
// set of more than one way: assoc=full).  For a tool that takes a level
// from its own options or a file and hands it on as text.
inline std::string statement(const Level& l) {
  const char* policies[] = {"lru", "fifo", "random"};
  return l.name + " size=" + std::to_string(l.size) +
         " assoc=" + (l.sets() == 1 && l.assoc > 1 ? std::string("full") : std::to_string(l.assoc)) +
         " line=" + std::to_string(l.line) + " policy=" + policies[int(l.policy)] +
         " write-allocate=" + (l.writeAllocate ? "yes" : "no") + (l.first ? "" : l.shared ? " shared=yes" : " shared=no");
}

// "32 KB, 64 B lines, 8-way, lru" for reports.
inline std::string describe(const Level& l) {
  auto bytes = [](uint64_t n) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MB";
    if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KB";
    return std::to_string(n) + " B";
  };
  const char* policies[] = {"lru", "fifo", "random"};
  std::string ways = l.assoc == 1 ? "direct-mapped" : l.sets() == 1 ? "fully associative" : std::to_string(l.assoc) + "-way";
  return bytes(l.size) + ", " + std::to_string(l.line) + " B lines, " + ways + ", " + policies[int(l.policy)] +
         (l.writeAllocate ? "" : ", no-write-allocate") + (l.shared ? ", shared by all threads" : "");
}

}  // namespace atomx::cachesim
