// The ATOM paper's cache tool: simulate a data cache on every memory access
// of the program's own code (README.md).  Rewrite time: read the cache (a D1
// level of the one configuration format, <atomx/cachesim.hpp>),
// describe each memory instruction once in a static table (pc, procedure,
// per-operand kind and size), and add ONE call per memory instruction that
// passes only its site number and effective addresses (cache_anal.cpp).
//
// Accesses follow Valgrind cachegrind's model, so its D1 counts are an
// oracle: an operand that is read and written (add %eax,(%rdi)) is ONE read;
// a locked read-modify-write (lock add, xchg with memory, lock xadd) is TWO
// reads (Valgrind loads, then compare-and-swaps), except cmpxchg (one);
// within an instruction reads come before writes; rep string instructions
// access once per iteration; prefetches access nothing.
#include <atomx/atomx.hpp>
#include <atomx/memrefs.hpp>

#include <atomx/cachesim.hpp>

#include <string>
#include <vector>

using namespace atomx;
using namespace atomx::memrefs;

namespace cs = atomx::cachesim;

namespace {
[[noreturn]] void fail(const std::string& msg) { throw Error("cache: " + msg); }

// The cache, in the one configuration format (<atomx/cachesim.hpp>,
// docs/cachesim.md): the options --size, --assoc, --line, --policy and
// --write-allocate are that format's D1 keys, written after the paper's
// default level in the order given (a later key counts); --config FILE
// reads a file of that format, whose one D1 level replaces everything
// before it.  The format's parser checks the values and the geometry.
struct Options {
  std::string level = "D1 size=8K assoc=1 line=32";  // the paper's: 8 KB, direct-mapped
  long top = 10;
};

void key(Options& o, const std::string& k, const std::string& v) {
  if (v.empty() || v.find_first_of(" \t\r\n#") != std::string::npos) fail("--" + k + ": bad value '" + v + "'");
  o.level += " " + k + "=" + v;
}

// A file of the format holding the cache tool's one cache.
void configFile(Options& o, const std::string& path) {
  cs::Config c;
  try {
    c = cs::readConfig(path);
  } catch (const cs::ConfigError& e) {
    fail(e.what());
  }
  const cs::Hierarchy& h = c.hierarchies[0];
  if (c.hierarchies.size() != 1 || h.levels.size() != 1 || h.levels[0].name != "D1" ||
      h.contextSwitch.unit != cs::SwitchUnit::None)
    fail(path + ": the cache tool simulates one data cache: a file with one D1 level and nothing else "
         "(e.g. 'D1 size=8K assoc=1 line=32'; -T cachesim simulates the rest)");
  o.level = cs::statement(h.levels[0]);
}

// The options, and the level they make (a statement of the format).
std::string parse(const std::vector<std::string>& args, Options& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0) fail("unexpected argument '" + a + "' (options: --size 8K --assoc 1 --line 32 --policy lru ...)");
    a = a.substr(2);
    if (a == "no-write-allocate") { key(o, "write-allocate", "no"); continue; }
    std::string v;
    if (size_t eq = a.find('='); eq != std::string::npos) v = a.substr(eq + 1), a = a.substr(0, eq);
    else if (i + 1 < args.size()) v = args[++i];
    else fail("--" + a + " needs a value");
    if (a == "config") configFile(o, v);
    else if (a == "top") o.top = optionNumber("cache", "--top", v.c_str(), 1);
    else if (a == "size" || a == "assoc" || a == "line" || a == "policy" || a == "write-allocate") key(o, a, v);
    else fail("unknown option '" + a + "' (size, assoc, line, policy, write-allocate, no-write-allocate, top, config)");
  }
  try {
    return cs::statement(cs::parseConfig(o.level, "").hierarchies[0].levels[0]);
  } catch (const cs::ConfigError& e) {
    fail(e.what());
  }
}

}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  bool merge = true, verify = false;
  std::vector<std::string> args;
  for (int k = 1; k < argc; ++k) {  // the options only this side needs
    if (std::string(argv[k]) == "--no-merge") merge = false;
    else if (std::string(argv[k]) == "--verify-merge") verify = true;
    else args.push_back(argv[k]);
  }
  Options o;
  const std::string level = parse(args, o);
  Routine init("CacheInit(long[], char*, long[], char*)");
  Routine ref1("CacheRef1(long, VALUE)");
  Routine ref2("CacheRef2(long, VALUE, VALUE)");
  Routine group("CacheGroup(long, long, VALUE, VALUE, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV)");
  Routine check("CacheVerify(long, VALUE)");
  Routine repBefore("CacheRepBefore(long, VALUE, VALUE, REGV)");
  Routine repAfter("CacheRepAfter(long, REGV)");
  Routine report("CacheReport()");

  // The site table (<atomx/memrefs.hpp>): kSiteLongs longs per memory
  // instruction, the members of a group one after the other.
  std::vector<long> sites;
  std::string procs;  // procedure names, '\n' after each
  long nproc = 0;
  for (Proc p : program().procs()) {
    for (Block b : p.blocks())
      for (const Group& g : groups(b, merge, "cache")) {
        Inst s = g.members[0].inst;
        const long first = appendSite(sites, g.members[0], nproc, true);
        const bool two = g.two();
        if (g.rep()) {  // its own calls: the count is known only at run time
          repBefore.before(s, first, effectiveAddress(0), effectiveAddress(two ? 1 : 0), reg(Reg::rcx));
          if (g.members[0].access.rep == kRepCond) repAfter.after(s, first, reg(Reg::rcx));
          continue;
        }
        for (size_t m = 1; m < g.members.size(); ++m) {
          const long site = appendSite(sites, g.members[m], nproc, false);
          if (verify) check.before(g.members[m].inst, site, effectiveAddress(0));
        }
        if (g.members.size() == 1) {
          if (two) ref2.before(s, first, effectiveAddress(0), effectiveAddress(1));
          else ref1.before(s, first, effectiveAddress(0));
        } else {
          std::vector<Arg> args = {Arg(first), Arg(long(g.members.size())), effectiveAddress(0),
                                   effectiveAddress(two ? 1 : 0)};
          for (Arg& a : slotArgs(g)) args.push_back(a);
          group.add(Point::InstBefore, s.handle(), args);
        }
      }
    procs += std::string(p.name()) + "\n";
    ++nproc;
  }
  const long nsites = long(sites.size() / kSiteLongs);
  sites.resize(sites.size() + kSiteLongs, 0);  // never an empty array
  init.atProgramStart(std::vector<long>{o.top, nsites, nproc, long(verify)}, level, sites, procs);
  report.atProgramEnd();
}
