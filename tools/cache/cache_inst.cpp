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

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace atomx;

namespace {
enum Kind : long { kRead = 0, kWrite = 1, kModify = 2, kLockedModify = 3 };
enum Rep : long { kNoRep = 0, kRep = 1, kRepCond = 2 };  // rep; repz/repnz (cmps, scas)

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

bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// How one memory instruction accesses memory, in Valgrind's order.
struct Access {
  std::vector<std::pair<unsigned, long>> ops;  // (Zydis memory operand, Kind)
  long rep = kNoRep;
};

bool describe(Inst i, Access& a) {
  const unsigned n = i.memOperandCount();
  const std::string m = i.mnemonic(), text = i.text(), cat = i.category();
  if (n == 0 || startsWith(m, "prefetch") || startsWith(m, "clflush") || m == "clwb" || cat == "NOP") return false;
  if (n == 1) {
    long k = i.isLoad() ? (i.isStore() ? kModify : kRead) : i.isStore() ? long(kWrite) : -1;
    if (k < 0) return false;
    const bool locked = startsWith(text, "lock ") || (startsWith(m, "xchg") && k == kModify);
    if (k == kModify && locked && !startsWith(m, "cmpxchg")) k = kLockedModify;
    a.ops = {{0, k}};
  } else if (cat == "POP") {
    a.ops = {{1, kRead}, {0, kWrite}};  // pop (%rax): read the stack, then store
  } else if (cat == "PUSH" || cat == "CALL") {
    a.ops = {{0, kRead}, {1, kWrite}};  // push (%rax), call *(%rax)
  } else if (startsWith(m, "movs") && cat == "STRINGOP") {
    a.ops = {{1, kRead}, {0, kWrite}};  // read (%rsi), write (%rdi)
  } else if (!i.isStore()) {
    a.ops = {{1, kRead}, {0, kRead}};   // cmps: (%rdi), then (%rsi) (Zydis: %rsi first)
  } else {
    // No other two-operand instruction is known in compilers' output.
    std::fprintf(stderr, "cache: note: %s at 0x%lx: guessing operand kinds\n", text.c_str(), (long)i.pc());
    a.ops = {{0, kRead}, {1, kWrite}};
  }
  if (cat == "STRINGOP") {
    if (startsWith(text, "repz") || startsWith(text, "repe") || startsWith(text, "repnz") || startsWith(text, "repne"))
      a.rep = (startsWith(m, "cmps") || startsWith(m, "scas")) ? kRepCond : kRep;
    else if (startsWith(text, "rep")) a.rep = kRep;
  }
  return true;
}

// A general register by its 64-bit AT&T name ("%rax"), else -1.
int regNumber(const std::string& r) {
  static const char* names[] = {"%rax", "%rcx", "%rdx", "%rbx", "%rsp", "%rbp", "%rsi", "%rdi",
                                "%r8",  "%r9",  "%r10", "%r11", "%r12", "%r13", "%r14", "%r15"};
  for (int k = 0; k < 16; ++k)
    if (r == names[k]) return k;
  return -1;
}

// The one explicit memory operand of an AT&T text, disp(base,index,scale),
// with 64-bit registers and no segment; false for anything else (rip-relative,
// %fs:, vector index, implicit operands, two operands ...).
bool parseMem(const std::string& t, int& base, int& index, long& scale, long& disp) {
  const size_t open = t.find('(');
  if (t.find(':') != std::string::npos || open == std::string::npos || t.find('(', open + 1) != std::string::npos) return false;
  const size_t close = t.find(')', open);
  size_t d = open;
  while (d > 0 && (std::isalnum((unsigned char)t[d - 1]) || t[d - 1] == '-')) --d;
  if (d == 0 || (t[d - 1] != ' ' && t[d - 1] != ',')) return false;
  const std::string ds = t.substr(d, open - d);
  char* end = nullptr;
  disp = ds.empty() ? 0 : std::strtol(ds.c_str(), &end, 0);
  if (!ds.empty() && *end) return false;
  std::string in;
  for (char ch : t.substr(open + 1, close - open - 1))
    if (ch != ' ') in += ch;
  std::vector<std::string> parts(1);
  for (char ch : in) {
    if (ch == ',') parts.emplace_back();
    else parts.back().push_back(ch);
  }
  base = parts[0].empty() ? -1 : regNumber(parts[0]);
  if (!parts[0].empty() && base < 0) return false;
  index = -1, scale = 1;
  if (parts.size() > 1 && (index = regNumber(parts[1])) < 0) return false;
  if (parts.size() > 2) scale = std::strtol(parts[2].c_str(), nullptr, 10);
  return parts.size() <= 3 && (scale == 1 || scale == 2 || scale == 4 || scale == 8);
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

  // Per site, kSiteLongs longs: pc, procedure, two operands (in simulation
  // order: kind | size << 8 | source << 24 | rep << 32, or -1; source 0 and
  // 1: the call's ea0/ea1; 2: computed from registers the group call passes:
  // disp + slot[base] + slot[index] * scale, then disp and the slots
  // (base | index << 8 | scale << 16, slot 0xff: none).
  constexpr size_t kSiteLongs = 6;
  constexpr int kSlots = 10;
  std::vector<long> sites;
  std::string procs;  // procedure names, '\n' after each
  long nproc = 0;
  auto addSite = [&](Inst i, const Access& a, long source, long disp, long formula) {
    sites.push_back(long(i.pc()));
    sites.push_back(nproc);
    for (size_t k = 0; k < 2; ++k)
      sites.push_back(k < a.ops.size() ? a.ops[k].second | long(i.accessSize(a.ops[k].first)) << 8 |
                                             (source == 2 ? 2 : long(a.ops[k].first)) << 24 | (k == 0 ? a.rep << 32 : 0)
                                       : -1);
    sites.push_back(disp);
    sites.push_back(formula);
    return long(sites.size() / kSiteLongs - 1);
  };
  const uint64_t rspBit = regBit(Reg::rsp);
  for (Proc p : program().procs()) {
    for (Block b : p.blocks()) {
      std::vector<Inst> insts;
      for (Inst i : b.insts()) insts.push_back(i);
      for (size_t k = 0; k < insts.size();) {
        Inst s = insts[k];
        Access a;
        if (!describe(s, a)) { ++k; continue; }
        const bool two = a.ops.size() > 1 || s.memOperandCount() > 1;
        if (a.rep != kNoRep) {  // its own calls: the count is known only at run time
          const long site = addSite(s, a, 0, 0, 0);
          repBefore.before(s, site, effectiveAddress(0), effectiveAddress(two ? 1 : 0), reg(Reg::rcx));
          if (a.rep == kRepCond) repAfter.after(s, site, reg(Reg::rcx));
          ++k;
          continue;
        }
        // A group: s, then the memory instructions after it in the block whose
        // addresses are registers (unchanged since s, or %rsp moved by a known
        // amount) plus constants, computed by the analysis from the registers'
        // values before s: one call for all of them.
        const long first = addSite(s, a, 0, 0, 0);
        long count = 1;
        std::vector<Reg> slots;
        uint64_t written = 0;
        long rspDelta = 0;
        bool rspKnown = true;
        auto slotOf = [&](int r) {
          for (size_t q = 0; q < slots.size(); ++q)
            if (int(slots[q]) == r) return int(q);
          slots.push_back(Reg(r));
          return int(slots.size() - 1);
        };
        auto effects = [&](Inst i) {  // what i does to the registers
          const uint64_t w = i.regsWritten();
          written |= w & ~rspBit;
          if (!(w & rspBit)) return;
          const std::string cat = i.category(), t = i.text(), m = i.mnemonic();
          long imm = 0;
          if (cat == "PUSH") rspDelta -= 8;
          else if (cat == "POP") rspDelta += 8;
          else if ((m == "sub" || m == "add") && std::sscanf(t.c_str(), "%*s $%li, %%rsp", &imm) == 1 &&
                   t.size() > 5 && t.compare(t.size() - 5, 5, "%rsp") == 0)
            rspDelta += m == "sub" ? -imm : imm;
          else rspKnown = false;
        };
        effects(s);
        size_t j = k + 1;
        for (; merge && j < insts.size(); effects(insts[j]), ++j) {
          Inst i = insts[j];
          Access ai;
          if (!describe(i, ai)) continue;
          if (ai.rep != kNoRep || i.memOperandCount() != 1) break;
          const std::string cat = i.category();
          int base = -1, index = -1;
          long scale = 1, disp = 0;
          if (parseMem(i.text(), base, index, scale, disp)) {
            if (base == 4) disp += rspDelta;
          } else if ((cat == "PUSH" || cat == "CALL") && i.text().find('(') == std::string::npos) {
            base = 4, disp = rspDelta - 8;  // push %reg, call: the new top of the stack
          } else if ((cat == "POP" || cat == "RET") && i.text().find('(') == std::string::npos) {
            base = 4, disp = rspDelta;
          } else break;
          auto usable = [&](int r) { return r < 0 || (r == 4 ? rspKnown : !(written & regBit(Reg(r)))); };
          if (!usable(base) || !usable(index)) break;
          const size_t before = slots.size();
          const long bs = base < 0 ? 0xff : slotOf(base), is = index < 0 ? 0xff : slotOf(index);
          if (slots.size() > size_t(kSlots)) { slots.resize(before); break; }
          const long site = addSite(i, ai, 2, disp, bs | is << 8 | scale << 16);
          if (verify) check.before(i, site, effectiveAddress(0));
          ++count;
        }
        if (count == 1) {
          if (two) ref2.before(s, first, effectiveAddress(0), effectiveAddress(1));
          else ref1.before(s, first, effectiveAddress(0));
        } else {
          std::vector<Arg> args = {Arg(first), Arg(count), effectiveAddress(0), effectiveAddress(two ? 1 : 0)};
          for (int q = 0; q < kSlots; ++q) args.push_back(reg(q < int(slots.size()) ? slots[q] : Reg::rax));
          group.add(Point::InstBefore, s.handle(), args);
        }
        k = j;
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
