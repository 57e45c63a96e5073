// ease: condition codes (report 8 of the seed).  Which status flags an
// instruction reads and writes, by mnemonic, and which flag writes no
// instruction ever reads (a liveness pass over each procedure's CFG).
//
// The public API says only whether an instruction reads or writes the
// status flags at all (kFlagsBit in Inst::regsRead/regsWritten); which
// ones comes from the table below (Intel's SDM, appendix A "EFLAGS cross
// reference"), and an instruction the table does not know counts as
// reading, or writing, all six.  Header only (included by ease_inst.cpp).
#pragma once

#include <atomx/atomx.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ease {

namespace flags {
inline constexpr uint8_t CF = 1, PF = 2, AF = 4, ZF = 8, SF = 16, OF = 32, All = 0x3f;
inline const char* const kNames[6] = {"CF", "PF", "AF", "ZF", "SF", "OF"};
}  // namespace flags

// "OSZAPC"-style name of a set of flags.
inline std::string flagSetName(uint8_t f) {
  std::string out;
  for (int k = 5; k >= 0; --k)
    if (f & (1 << k)) out += (out.empty() ? "" : " ") + std::string(flags::kNames[k]);
  return out.empty() ? "none" : out;
}

// The condition a jcc, setcc, cmovcc or fcmovcc tests, in Zydis' names
// ("z", "nz", "l", "nbe" ...), or "" for other instructions.
inline std::string conditionOf(const std::string& m) {
  static const char* const kConds[] = {"o", "no", "b", "nb", "z", "nz", "be", "nbe",
                                       "s", "ns", "p", "np", "l", "nl", "le", "nle"};
  for (const char* prefix : {"j", "set", "cmov", "fcmov"}) {
    const std::string p = prefix;
    if (m.rfind(p, 0) != 0) continue;
    const std::string c = m.substr(p.size());
    for (const char* k : kConds)
      if (c == k) return c;
    if (p == "fcmov" && (c == "e" || c == "ne" || c == "u" || c == "nu")) return c;
  }
  return "";
}

// The flags a condition tests.
inline uint8_t conditionFlags(const std::string& c) {
  using namespace flags;
  const std::string k = c.size() > 1 && c[0] == 'n' ? c.substr(1) : c;  // a condition and its negation
  if (k == "o") return OF;
  if (k == "b") return CF;
  if (k == "z" || k == "e") return ZF;
  if (k == "be") return CF | ZF;
  if (k == "s") return SF;
  if (k == "p" || k == "u") return PF;
  if (k == "l") return SF | OF;
  if (k == "le") return ZF | SF | OF;
  return All;
}

struct FlagEffect {
  uint8_t read = 0;
  uint8_t written = 0;  // always written (set, cleared or left undefined)
  uint8_t maybe = 0;    // may be written (a shift by %cl, a rep string instruction)
};

// What instruction `i` does to the status flags.
inline FlagEffect flagEffect(atomx::Inst i) {
  using namespace flags;
  FlagEffect e;
  const std::string m = i.mnemonic();
  const bool reads = i.regsRead() & atomx::kFlagsBit, writes = i.regsWritten() & atomx::kFlagsBit;
  if (!reads && !writes) return e;
  const std::string cond = conditionOf(m);
  static const std::map<std::string, FlagEffect> kTable = {
      {"adc", {CF, All, 0}}, {"sbb", {CF, All, 0}}, {"adcx", {CF, CF, 0}}, {"adox", {OF, OF, 0}},
      {"inc", {0, All & ~CF, 0}}, {"dec", {0, All & ~CF, 0}},
      {"rcl", {CF, 0, CF | OF}}, {"rcr", {CF, 0, CF | OF}},
      {"clc", {0, CF, 0}}, {"stc", {0, CF, 0}}, {"cmc", {CF, CF, 0}},
      {"sahf", {0, All & ~OF, 0}}, {"lahf", {All & ~OF, 0, 0}}, {"pushfq", {All, 0, 0}}, {"pushf", {All, 0, 0}},
      {"popfq", {0, All, 0}}, {"popf", {0, All, 0}},
      {"loope", {ZF, 0, 0}}, {"loopne", {ZF, 0, 0}},
      {"bt", {0, All & ~ZF, 0}}, {"bts", {0, All & ~ZF, 0}}, {"btr", {0, All & ~ZF, 0}}, {"btc", {0, All & ~ZF, 0}},
      {"cmpxchg", {0, All, 0}}, {"cmpxchg8b", {0, ZF, 0}}, {"cmpxchg16b", {0, ZF, 0}},
  };
  if (auto it = kTable.find(m); it != kTable.end()) {
    e = it->second;
  } else if (!cond.empty()) {
    e.read = conditionFlags(cond);
  } else if (m == "shl" || m == "sal" || m == "shr" || m == "sar" || m == "shld" || m == "shrd") {
    // By an immediate: written (unless the count is 0, which compilers do not
    // emit); by %cl: maybe.
    (i.text().find("%cl") != std::string::npos ? e.maybe : e.written) = All;
  } else if (m == "rol" || m == "ror") {
    (i.text().find("%cl") != std::string::npos ? e.maybe : e.written) = CF | OF;
  } else {
    // Everything else that touches the flags writes all six (add, sub, cmp,
    // neg, and, or, xor, test, mul, imul, div, bsf, popcnt, ucomisd ...),
    // reads all six if it reads any.
    e.written = writes ? All : 0;
    e.read = reads ? All : 0;
  }
  if (i.text().rfind("rep", 0) == 0) e.maybe |= e.written, e.written = 0;  // zero iterations write nothing
  return e;
}

inline std::vector<atomx::Inst> instsOf(atomx::Block b) {
  std::vector<atomx::Inst> v;
  for (atomx::Inst i : b.insts()) v.push_back(i);
  return v;
}

// For each instruction of a procedure (in block order, instruction order),
// whether it writes flags that nothing ever reads: every flag it writes is
// written again, on every path, before any instruction reads it.  Control
// leaving the procedure: through a return, a call (the callee may not read
// the flags, and returns them clobbered) or a jump to another procedure's
// entry no flag is live (the ABI); through anything else all are.
class FlagsDeadness {
 public:
  explicit FlagsDeadness(atomx::Proc p) {
    std::vector<atomx::Block> blocks;
    std::map<uint64_t, size_t> index;
    for (atomx::Block b : p.blocks()) index[b.pc()] = blocks.size(), blocks.push_back(b);
    std::vector<uint8_t> liveIn(blocks.size(), 0);
    auto liveOut = [&](atomx::Block b) -> uint8_t {
      const atomx::Inst last = b.last();
      if (last.isReturn() || last.kind() == atomx::InstClass::Stop) return 0;
      uint8_t live = 0;
      bool any = false;
      for (atomx::Edge e : b.succs()) {
        any = true;
        auto it = index.find(e.to().pc());
        live |= it == index.end() ? flags::All : liveIn[it->second];
      }
      if (last.isCall()) return live;  // its fall-through (the call itself kills below)
      if (!any) {
        if (last.hasTarget()) {
          const atomx::Proc to = atomx::program().procAt(last.target());
          return to && to.pc() == last.target() ? 0 : flags::All;
        }
        return flags::All;
      }
      return live;
    };
    auto transfer = [&](atomx::Inst i, uint8_t live) -> uint8_t {
      if (i.isCall()) return 0;
      const FlagEffect f = flagEffect(i);
      return uint8_t((live & ~f.written) | f.read);
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t k = blocks.size(); k-- > 0;) {
        uint8_t live = liveOut(blocks[k]);
        const std::vector<atomx::Inst> insts = instsOf(blocks[k]);
        for (size_t n = insts.size(); n-- > 0;) live = transfer(insts[n], live);
        if (live != liveIn[k]) liveIn[k] = live, changed = true;
      }
    }
    for (atomx::Block b : blocks) {
      const std::vector<atomx::Inst> insts = instsOf(b);
      std::vector<bool> dead(insts.size());
      uint8_t live = liveOut(b);
      for (size_t n = insts.size(); n-- > 0;) {
        const FlagEffect f = flagEffect(insts[n]);
        dead[n] = (f.written | f.maybe) && !insts[n].isCall() && ((f.written | f.maybe) & live) == 0;
        live = transfer(insts[n], live);
      }
      for (size_t n = 0; n < insts.size(); ++n) dead_[insts[n].pc()] = dead[n];
    }
  }
  bool dead(atomx::Inst i) const {
    auto it = dead_.find(i.pc());
    return it != dead_.end() && it->second;
  }

 private:
  std::map<uint64_t, bool> dead_;
};

}  // namespace ease
