// ease: condition codes (report 8 of the seed): the names of the status
// flags, and which flag writes no instruction ever reads (a liveness pass
// over each procedure's CFG, on the flags each instruction reads and
// writes: Inst::flagsRead, flagsWritten, flagsMaybeWritten).  Header only
// (included by ease_inst.cpp).
#pragma once

#include <atomx/atomx.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ease {

namespace flags {
inline constexpr uint8_t All = 0x3f;  // atomx::kCF ... kOF
inline const char* const kNames[6] = {"CF", "PF", "AF", "ZF", "SF", "OF"};
}  // namespace flags

// "OF SF ZF"-style name of a set of flags.
inline std::string flagSetName(uint8_t f) {
  std::string out;
  for (int k = 5; k >= 0; --k)
    if (f & (1 << k)) out += (out.empty() ? "" : " ") + std::string(flags::kNames[k]);
  return out.empty() ? "none" : out;
}

// What instruction `i` does to the status flags (kCF ... bits): reads,
// always writes, may write.
struct FlagEffect {
  uint8_t read = 0;
  uint8_t written = 0;
  uint8_t maybe = 0;
};

inline FlagEffect flagEffect(atomx::Inst i) {
  const unsigned maybe = i.flagsMaybeWritten();
  return {uint8_t(i.flagsRead()), uint8_t(i.flagsWritten() & ~maybe), uint8_t(maybe)};
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
