// atomx: the data references of a block, for tools that simulate memory
// (instrumentation side, C++; tools/cache and tools/cachesim use it).
//
// Two things every such tool needs and neither should write twice:
//
//  - describe(): which memory accesses an instruction makes, in what order
//    and of what kind, in Valgrind cachegrind's model (so that its Dr/Dw
//    counts are an oracle): an operand read and written (add %eax,(%rdi))
//    is ONE read; a locked read-modify-write (lock add, xchg with memory,
//    lock xadd) is TWO reads (Valgrind loads, then compare-and-swaps),
//    except cmpxchg (one); within an instruction reads come before writes;
//    rep string instructions access once per iteration; prefetches, clflush
//    and nops access nothing;
//  - groups(): the block's memory instructions cut into groups, each
//    simulated by ONE call before its first instruction.  The call passes
//    the first member's effective addresses and the values of the registers
//    the later members' addresses use (Group::slots); the analysis side
//    computes those addresses (disp + slot[base] + slot[index] * scale).  An
//    instruction joins a group only if its address registers are unchanged
//    since the group's start, except %rsp moved by known amounts (push and
//    pop; any other write of %rsp, sub/add $n, %rsp included, ends what is
//    known of it); rep string instructions and %rip-, %fs-relative or
//    two-operand members start groups of their own.  Program order is kept.
//
// The site table both tools pass to their analysis side (appendSite) holds,
// per memory instruction, kSiteLongs longs: pc, procedure, two operand words
// in simulation order (kind | size << 8 | source << 24 | rep << 32, or -1;
// source 0 and 1: the call's first and second effective address; 2:
// computed), disp and formula (base slot | index slot << 8 | scale << 16;
// slot 0xff: none).
#pragma once

#include <atomx/atomx.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace atomx::memrefs {

enum Kind : long { kRead = 0, kWrite = 1, kModify = 2, kLockedModify = 3 };
enum Rep : long { kNoRep = 0, kRep = 1, kRepCond = 2 };  // rep; repz/repnz (cmps, scas)
inline constexpr size_t kSiteLongs = 6;
inline constexpr int kSlots = 10;  // registers one group call passes

// How one memory instruction accesses memory, in Valgrind's order.
struct Access {
  std::vector<std::pair<unsigned, long>> ops;  // (Zydis memory operand, Kind)
  long rep = kNoRep;
};

// False for an instruction that accesses no memory.  `tool` names the tool
// in the note printed for an unknown two-operand instruction.
inline bool describe(Inst i, Access& a, const char* tool) {
  const unsigned n = i.memOperandCount();
  const std::string cat = i.category();
  if (n == 0 || i.isCacheControl() || cat == "NOP") return false;
  if (n == 1) {
    long k = i.isLoad() ? (i.isStore() ? kModify : kRead) : i.isStore() ? long(kWrite) : -1;
    if (k < 0) return false;
    if (k == kModify && i.isLocked() && !i.isCompareExchange()) k = kLockedModify;
    a.ops = {{0, k}};
  } else if (cat == "POP") {
    a.ops = {{1, kRead}, {0, kWrite}};  // pop (%rax): read the stack, then store
  } else if (cat == "PUSH" || cat == "CALL") {
    a.ops = {{0, kRead}, {1, kWrite}};  // push (%rax), call *(%rax)
  } else if (cat == "STRINGOP" && i.isStore()) {
    a.ops = {{1, kRead}, {0, kWrite}};  // movs: read (%rsi), write (%rdi)
  } else if (!i.isStore()) {
    a.ops = {{1, kRead}, {0, kRead}};   // cmps: (%rdi), then (%rsi) (Zydis: %rsi first)
  } else {
    // No other two-operand instruction is known in compilers' output.
    std::fprintf(stderr, "%s: note: %s at 0x%lx: guessing operand kinds\n", tool, i.text().c_str(), (long)i.pc());
    a.ops = {{0, kRead}, {1, kWrite}};
  }
  // A repeated cmps or scas stops on its condition too (repe/repne).
  if (cat == "STRINGOP" && i.isRepeated()) a.rep = i.isRepeatedWhile() ? kRepCond : kRep;
  return true;
}

// The one memory operand of a later group member as a formula of the
// registers: disp(base,index,scale) with 64-bit registers and no segment
// base; false for anything else (rip-relative, %fs: or %gs:, a vector
// index, a 32-bit address, an absolute address, implicit operands ...).
inline bool explicitMem(Inst i, int& base, int& index, long& scale, long& disp) {
  const MemoryOperand m = i.memOperand(0);
  if (m.implicit || m.ripRelative || m.segment == MemoryOperand::Segment::FS || m.segment == MemoryOperand::Segment::GS ||
      m.vectorIndex >= 0 || m.addressWidth != 64 || (m.base < 0 && m.index < 0))
    return false;
  base = m.base, index = m.index, scale = m.index < 0 ? 1 : long(m.scale), disp = long(m.disp);
  return true;
}

// One memory instruction of a group.  The first member's addresses are the
// call's effectiveAddress(0) (and (1)); a later member's address is
// disp + slot[base] + slot[index] * scale (formula: base slot | index slot
// << 8 | scale << 16, slot 0xff: none).
struct Member {
  Inst inst;
  Access access;
  long disp = 0, formula = 0;
};
struct Group {
  std::vector<Member> members;
  std::vector<Reg> slots;  // registers whose values before the first member the call passes
  bool rep() const { return members[0].access.rep != kNoRep; }
  // The first member has two memory operands (the call passes both addresses).
  bool two() const { return members[0].access.ops.size() > 1 || members[0].inst.memOperandCount() > 1; }
};

// The memory instructions of `b` in groups (one each without `merge`).
inline std::vector<Group> groups(Block b, bool merge, const char* tool) {
  std::vector<Inst> insts;
  for (Inst i : b.insts()) insts.push_back(i);
  std::vector<Group> out;
  const uint64_t rspBit = regBit(Reg::rsp);
  for (size_t k = 0; k < insts.size();) {
    Inst s = insts[k];
    Access a;
    if (!describe(s, a, tool)) { ++k; continue; }
    Group g;
    g.members.push_back({s, a});
    if (a.rep != kNoRep) {  // its own calls: the count is known only at run time
      out.push_back(std::move(g));
      ++k;
      continue;
    }
    uint64_t written = 0;
    long rspDelta = 0;
    bool rspKnown = true;
    auto slotOf = [&](int r) {
      for (size_t q = 0; q < g.slots.size(); ++q)
        if (int(g.slots[q]) == r) return int(q);
      g.slots.push_back(Reg(r));
      return int(g.slots.size() - 1);
    };
    auto effects = [&](Inst i) {  // what i does to the registers
      const uint64_t w = i.regsWritten();
      written |= w & ~rspBit;
      if (!(w & rspBit)) return;
      const std::string cat = i.category();
      if (cat == "PUSH") rspDelta -= 8;
      else if (cat == "POP") rspDelta += 8;
      else rspKnown = false;
    };
    effects(s);
    size_t j = k + 1;
    for (; merge && j < insts.size(); effects(insts[j]), ++j) {
      Inst i = insts[j];
      Access ai;
      if (!describe(i, ai, tool)) continue;
      if (ai.rep != kNoRep || i.memOperandCount() != 1) break;
      const std::string cat = i.category();
      int base = -1, index = -1;
      long scale = 1, disp = 0;
      const bool implicit = i.memOperand(0).implicit;
      if (explicitMem(i, base, index, scale, disp)) {
        if (base == 4) disp += rspDelta;
      } else if ((cat == "PUSH" || cat == "CALL") && implicit) {
        base = 4, disp = rspDelta - 8;  // push %reg, call: the new top of the stack
      } else if ((cat == "POP" || cat == "RET") && implicit) {
        base = 4, disp = rspDelta;
      } else break;
      auto usable = [&](int r) { return r < 0 || (r == 4 ? rspKnown : !(written & regBit(Reg(r)))); };
      if (!usable(base) || !usable(index)) break;
      const size_t before = g.slots.size();
      const long bs = base < 0 ? 0xff : slotOf(base), is = index < 0 ? 0xff : slotOf(index);
      if (g.slots.size() > size_t(kSlots)) { g.slots.resize(before); break; }
      g.members.push_back({i, ai, disp, bs | is << 8 | scale << 16});
    }
    out.push_back(std::move(g));
    k = j;
  }
  return out;
}

// Appends member m (the first of its group or not) of procedure `proc` to a
// site table (kSiteLongs longs, above); returns its site number.
inline long appendSite(std::vector<long>& sites, const Member& m, long proc, bool first) {
  sites.push_back(long(m.inst.pc()));
  sites.push_back(proc);
  const Access& a = m.access;
  for (size_t k = 0; k < 2; ++k)
    sites.push_back(k < a.ops.size() ? a.ops[k].second | long(m.inst.accessSize(a.ops[k].first)) << 8 |
                                           (first ? long(a.ops[k].first) : 2L) << 24 | (k == 0 ? a.rep << 32 : 0)
                                     : -1);
  sites.push_back(first ? 0 : m.disp);
  sites.push_back(first ? 0 : m.formula);
  return long(sites.size() / kSiteLongs - 1);
}

// A group's references as MruTests against descriptor d (atomx.hpp): the
// first member's operands as the instruction computes them, the later
// members' from the registers before the first (their formulas); a
// locked read-modify-write's two reads are one test.  Every reference of
// the group hits the most recent line of its set when all pass.
inline std::vector<MruTest> mruTests(const Group& g, const MruDescriptor& d) {
  std::vector<MruTest> tests;
  auto size = [](unsigned n) { return uint32_t(n < 1 ? 1 : n > 4096 ? 4096 : n); };
  const Member& f = g.members[0];
  for (const auto& [operand, kind] : f.access.ops) tests.push_back(mruHit(d, operand, size(f.inst.accessSize(operand))));
  for (size_t m = 1; m < g.members.size(); ++m) {
    const Member& x = g.members[m];
    const long b = x.formula & 0xff, i = (x.formula >> 8) & 0xff;
    tests.push_back(mruHitAt(d, b == 0xff ? -1 : int(g.slots[size_t(b)]), i == 0xff ? -1 : int(g.slots[size_t(i)]),
                             unsigned(x.formula >> 16), x.disp, size(x.inst.accessSize(x.access.ops[0].first))));
  }
  return tests;
}

// The group call's arguments after its first two: the slots' registers,
// kSlots of them (unused ones %rax).
inline std::vector<Arg> slotArgs(const Group& g) {
  std::vector<Arg> args;
  for (int q = 0; q < kSlots; ++q) args.push_back(reg(q < int(g.slots.size()) ? g.slots[q] : Reg::rax));
  return args;
}

}  // namespace atomx::memrefs
