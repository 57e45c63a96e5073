// The ATOM paper's cache tool: simulate a data cache on every memory access
// of the program's own code (README.md).  Rewrite time: parse the geometry,
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

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace atomx;
using namespace atomx::memrefs;

namespace {
struct Config {
  long size = 8192, assoc = 1, line = 32, policy = 0, writeAllocate = 1, top = 10;
};

[[noreturn]] void fail(const std::string& msg) { throw Error("cache: " + msg); }

long number(const std::string& key, const std::string& v, bool units) {
  size_t end = 0;
  long n = 0;
  try { n = std::stol(v, &end, 0); } catch (...) { fail(key + ": not a number: '" + v + "'"); }
  std::string unit = v.substr(end);
  if (units && (unit == "K" || unit == "k" || unit == "KB" || unit == "kB")) n <<= 10, unit.clear();
  if (units && (unit == "M" || unit == "m" || unit == "MB")) n <<= 20, unit.clear();
  if (!unit.empty()) fail(key + ": bad value '" + v + "'" + (units ? " (a number of bytes, K or M suffix)" : ""));
  if (n <= 0) fail(key + ": must be positive: '" + v + "'");
  return n;
}

void set(Config& c, const std::string& key, const std::string& v) {
  if (key == "size") c.size = number(key, v, true);
  else if (key == "line") c.line = number(key, v, true);
  else if (key == "assoc") c.assoc = (v == "full") ? 0 : number(key, v, false);
  else if (key == "top") c.top = number(key, v, false);
  else if (key == "policy") {
    if (v == "lru") c.policy = 0;
    else if (v == "fifo") c.policy = 1;
    else if (v == "random") c.policy = 2;
    else fail("policy: '" + v + "' (lru, fifo or random)");
  } else if (key == "write-allocate" || key == "write_allocate") {
    if (v == "yes" || v == "1") c.writeAllocate = 1;
    else if (v == "no" || v == "0") c.writeAllocate = 0;
    else fail(key + ": '" + v + "' (yes or no)");
  } else fail("unknown option '" + key + "' (size, assoc, line, policy, write-allocate, top, config)");
}

// A config file: key = value lines (the option names), '#' comments.
void readConfig(Config& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read config file '" + path + "'");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    if (trim(line).empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) fail(path + ":" + std::to_string(n) + ": expected key = value");
    set(c, trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
}

bool pow2(long n) { return n > 0 && (n & (n - 1)) == 0; }

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) fail("unexpected argument '" + a + "' (options: --size 8K --assoc 1 --line 32 --policy lru ...)");
    a = a.substr(2);
    if (a == "no-write-allocate") { c.writeAllocate = 0; continue; }
    std::string v;
    if (size_t eq = a.find('='); eq != std::string::npos) v = a.substr(eq + 1), a = a.substr(0, eq);
    else if (i + 1 < argc) v = argv[++i];
    else fail("--" + a + " needs a value");
    if (a == "config") readConfig(c, v);
    else set(c, a, v);
  }
  if (!pow2(c.line)) fail("line size " + std::to_string(c.line) + " is not a power of two");
  if (c.size % c.line) fail("size " + std::to_string(c.size) + " is not a multiple of the line size " + std::to_string(c.line));
  if (c.assoc == 0) c.assoc = c.size / c.line;  // fully associative
  if ((c.size / c.line) % c.assoc || !pow2(c.size / c.line / c.assoc))
    fail("size / (line * assoc) = " + std::to_string(c.size) + " / (" + std::to_string(c.line) + " * " +
         std::to_string(c.assoc) + ") is not a power-of-two number of sets");
  return c;
}

}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  bool merge = true, verify = false;
  std::vector<char*> args;
  for (int k = 0; k < argc; ++k) {  // the options only this side needs
    if (k > 0 && std::string(argv[k]) == "--no-merge") merge = false;
    else if (k > 0 && std::string(argv[k]) == "--verify-merge") verify = true;
    else args.push_back(argv[k]);
  }
  const Config c = parse(int(args.size()), args.data());
  Routine init("CacheInit(long[], long[], char*)");
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
  init.atProgramStart(std::vector<long>{c.size, c.assoc, c.line, c.policy, c.writeAllocate, c.top, nsites, nproc,
                                        long(verify)},
                      sites, procs);
  report.atProgramEnd();
}
