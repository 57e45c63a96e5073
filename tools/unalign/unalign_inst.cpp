// unalign: unaligned memory accesses, per instruction (ATOM's "unalign").
// Every instruction that accesses memory is counted inline (atomx::Counters,
// no call): its executions, and per operand, conditionally, the executions
// whose address is unaligned and those whose access crosses a 64-byte line;
// only rep-prefixed string instructions, which access nothing when %rcx is
// 0, get a call with %rcx and the addresses.  Access sizes and names are
// static and go to the analysis side once, in a table, at program start.  What counts as an
// access and as unaligned is defined in README.md; in short: an access of
// S bytes is unaligned when its address is not a multiple of the largest
// power of two <= S; implicit stack slots of push/pop/call/ret/leave/enter
// are left out unless --stack; gathers/scatters and accesses over 64 bytes
// (fxsave, xsave ...) are left out; a string instruction is one access per
// operand per execution (a rep-prefixed one: none when %rcx is 0).
// Options: --stack, --top N (rows in unalign.out, default 15).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <string>
#include <vector>

using namespace atomx;

namespace {
bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Instructions whose last memory operand is the implicit stack slot.
bool touchesStack(Inst i) {
  const std::string m = i.mnemonic();
  return i.isCall() || i.isReturn() || startsWith(m, "push") || startsWith(m, "pop") || m == "leave" || m == "enter";
}

bool isString(const std::string& m) {
  for (const char* p : {"movs", "stos", "lods", "cmps", "scas", "ins", "outs"})
    if (startsWith(m, p) && m.size() == std::string(p).size() + 1) return true;  // movsb ... movsq
  return false;
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  long top = 15;
  bool stack = false;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--stack") {
      stack = true;
    } else if (a == "--top") {
      top = optionNumber("unalign", a, k + 1 < argc ? argv[++k] : nullptr);
    } else {
      throw Error("unalign: unknown option '" + a + "' (options: --stack, --top N)");
    }
  }
  Routine init("UnalignInit(long, long[], int[], int[], char[], long, const char*)");
  const Counters executions, unaligned, split;  // per site; per site and operand (2 * site + k)
  Routine oneRep("AccessRep1(long, REGV, VALUE)");
  Routine twoRep("AccessRep2(long, REGV, VALUE, VALUE)");
  Routine fini("UnalignFini(long*, long*, long*)");

  std::vector<long> pcs;
  std::vector<int> sizes;    // two per site: operand sizes, 0 when absent
  std::vector<int> strings;  // per site: procedure name, then instruction text, offsets in `blob`
  std::vector<char> blob;
  auto add = [&](const std::string& s) {
    const int at = int(blob.size());
    blob.insert(blob.end(), s.begin(), s.end());
    blob.push_back('\0');
    return at;
  };
  for (Proc p : program().procs()) {
    const int procName = add(std::string(p.name()));
    for (Block b : p.blocks())
      for (Inst i : b.insts()) {
        unsigned n = i.memOperandCount();
        if (n && !stack && touchesStack(i)) --n;  // the implicit stack slot is the last one
        const std::string m = i.mnemonic(), text = i.text();
        if (!n || m.find("gather") != std::string::npos || m.find("scatter") != std::string::npos ||
            text.find("%gs:") != std::string::npos)
          continue;
        std::vector<unsigned> ops;
        for (unsigned k = 0; k < n; ++k)
          if (unsigned s = i.accessSize(k); s > 0 && s <= 64) ops.push_back(k);
        if (ops.empty()) continue;
        if (ops.size() > 2) ops.resize(2);  // no x86 instruction has three data memory operands
        const long site = long(pcs.size());
        const bool rep = isString(m) && startsWith(text, "rep");
        if (rep && ops.size() == 1) {
          oneRep.before(i, site, reg(Reg::rcx), effectiveAddress(ops[0]));
        } else if (rep) {
          twoRep.before(i, site, reg(Reg::rcx), effectiveAddress(ops[0]), effectiveAddress(ops[1]));
        } else {
          executions.increment(i, size_t(site));
          for (size_t k = 0; k < ops.size(); ++k) {
            const unsigned size = i.accessSize(ops[k]);
            if (size < 2) continue;  // a byte is never unaligned, never split
            unsigned alignment = 1;  // the largest power of two <= size
            while (alignment * 2 <= size) alignment *= 2;
            unaligned.incrementIf(i, misaligned(ops[k], alignment), 2 * size_t(site) + k);
            split.incrementIf(i, crossesLine(ops[k], size, 64), 2 * size_t(site) + k);
          }
        }
        pcs.push_back(long(i.pc()));
        sizes.push_back(int(i.accessSize(ops[0])));
        sizes.push_back(ops.size() > 1 ? int(i.accessSize(ops[1])) : 0);
        strings.push_back(procName);
        strings.push_back(add(text));
      }
  }
  const long n = long(pcs.size());
  if (pcs.empty()) pcs.push_back(0), sizes = {0, 0}, strings = {0, 0};  // arrays are never empty
  if (blob.empty()) blob.push_back('\0');
  init.atProgramStart(n, pcs, sizes, strings, blob, top, std::string(program().path()));
  executions.reserve(size_t(n)), unaligned.reserve(2 * size_t(n)), split.reserve(2 * size_t(n));
  fini.atProgramEnd(executions, unaligned, split);
}
