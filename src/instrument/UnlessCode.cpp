// The code of a Routine::beforeUnless site (CallCode.h, emitUnless): its
// cache-line tests inline, the call part only when one fails.
#include "instrument/CallCode.h"

#include <algorithm>

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

using x86::Assembler;

// Routine::beforeUnless: the tests inline, then the call part only when
// one fails (atomx.hpp, MruDescriptor and MruTest):
//
//     [lea -128(%rsp),%rsp; push the scratch registers that are live]
//     [mov %rax,S; lahf; seto %al]                 only where a status flag is live
//     per test: A = the address (its parts from the program's registers)
//               T = d[1] + %fs:(d[0])               once per descriptor
//               U = A & d[2]; A = (A + size - 1) & d[3]
//               cmp A, (T,U); jne second_k
//               next_k:
//     restore; jmp done
//     per test: second_k: cmp A, 8(T,U); jne fail  the set's second most recent line:
//               xchg A, (T,U); mov A, 8(T,U)        it becomes the most recent
//               jmp next_k
//     fail: restore; the call part
//     done:
void emitUnless(const Engine& engine, const Site& site, const CodeAddresses& addresses, uint64_t enter, uint64_t body,
                Assembler& a) {
  const std::vector<MruTest>& tests = *site.unless;
  x86::Semantics sem{};
  uint64_t blockPc = 0;
  const bool inst = site.calls[0]->point == Point::InstBefore;
  if (inst) sem = engine.semantics(*site.proc, site.insn);
  uint32_t blockSize = 0;
  if (!inst) {
    const ir::Block& blk = site.proc->blocks[static_cast<const detail::BlockData*>(site.calls[0]->where)->block];
    blockPc = blk.start;
    blockSize = uint32_t(blk.end - blk.start);
  }
  // The address each test checks, as a memory operand of the program's registers.
  std::vector<x86::MemOperand> ops(tests.size());
  x86::RegSet addressRegs;
  for (size_t k = 0; k < tests.size(); ++k) {
    const MruTest& t = tests[k];
    x86::MemOperand& m = ops[k];
    if (t.address == MruTest::Address::Operand) m = sem.mem[t.operand];
    else if (t.address == MruTest::Address::Parts) {
      m.base = int8_t(t.base), m.index = int8_t(t.index), m.scale = uint8_t(t.index >= 0 ? t.scale : 0), m.disp = t.disp;
    }
    if (t.address != MruTest::Address::Block && !m.ripRelative) {
      if (m.hasBase()) addressRegs |= x86::RegSet::gpr(unsigned(m.base));
      if (m.hasIndex()) addressRegs |= x86::RegSet::gpr(unsigned(m.index));
      if (m.hasBitOffset()) addressRegs |= x86::RegSet::gpr(unsigned(m.bitOffset));
    }
  }
  const UnlessSaves saves = reserveForUnless(site.liveFlags, site.dead, addressRegs);
  const ZydisRegister A = saves.address, T = saves.table, U = saves.offset;
  auto word = [&](const MruTest& t, int k) { return x86::ripAbsolute(addresses.counters.at(t.descriptor) + 8 * uint64_t(k)); };

  auto restore = [&](Assembler& r) {
    if (saves.keepOverflow) r.restoreOfFromAl();
    if (saves.keepArith) r.sahf();
    if (saves.appRax != ZYDIS_REGISTER_NONE) r.movReg(ZYDIS_REGISTER_RAX, saves.appRax);
    for (size_t k = saves.pushed.size(); k-- > 0;) r.pop(saves.pushed[k]);
    if (saves.redZone) r.stepBackOverRedZone();
  };
  // The slot of the address's set: its first word, and its second, which a
  // test that misses the first tries: a hit on the second most recent line
  // of the set, which the swap makes the most recent (the analysis keeps
  // that word kNoLine where it has no such line).
  const x86::Mem first{T, U, 1, 0, 8}, second{T, U, 1, 8, 8};
  auto swap = [&](Assembler& c) { c.xchgMemReg(first, A), c.movStore(second, A); };
  // Test k's code up to its cmp (sizes fixed: rip-relative words are disp32).
  uint32_t tableOf = UINT32_MAX;
  auto test = [&](Assembler& c, size_t k) {
    const MruTest& t = tests[k];
    if (t.address == MruTest::Address::Block) {
      c.movImm(A, blockPc + uint64_t(t.disp));
      c.addLoad(A, word(t, 4));
    } else {
      const x86::MemOperand& m = ops[k];
      const ZydisRegister base = m.hasBase() ? saves.app(unsigned(m.base)) : ZYDIS_REGISTER_NONE;
      const ZydisRegister index = m.hasIndex() ? saves.app(unsigned(m.index)) : ZYDIS_REGISTER_NONE;
      x86::emitLinearAddress(c, m, A, base, index, saves.below);
      if (m.hasBitOffset()) {  // a bit test's word: its offset through U, computed from A below
        c.movReg(U, saves.app(unsigned(m.bitOffset)));
        x86::emitBitOffset(c, m, A, U);
      }
      x86::emitSegmentBase(c, m, A, site.pc);
    }
    if (tableOf != t.descriptor) {
      c.movLoad(T, word(t, 0));
      x86::Mem tls = x86::mem(T);
      tls.segment = ZYDIS_REGISTER_FS;
      c.movLoad(T, tls);
      c.addLoad(T, word(t, 1));
      tableOf = t.descriptor;
    }
    c.movReg(U, A);
    c.andLoad(U, word(t, 2));
    const uint32_t size = t.address != MruTest::Address::Block ? t.size
                          : t.size                             ? t.size
                                                               : std::max<uint32_t>(blockSize - uint32_t(t.disp), 1);
    c.lea(A, x86::mem(A, int64_t(size) - 1));
    c.andLoad(A, word(t, 3));
    c.cmpMemReg(first, A);
  };
  // Sizes first (every form has a fixed size), for the jumps to `fail`.
  std::vector<uint32_t> sizes(tests.size());
  for (size_t k = 0; k < tests.size(); ++k) {
    std::vector<uint8_t> scratch;
    Assembler c(scratch, 0);
    test(c, k);
    sizes[k] = uint32_t(scratch.size());
  }
  uint32_t secondSize = 0, swapSize = 0;
  {
    std::vector<uint8_t> scratch;
    Assembler c(scratch, 0);
    c.cmpMemReg(second, A);
    secondSize = uint32_t(scratch.size());
    swap(c);
    swapSize = uint32_t(scratch.size()) - secondSize;
  }
  tableOf = UINT32_MAX;
  std::vector<uint8_t> restoreBytes;
  {
    Assembler r(restoreBytes, 0);
    restore(r);
  }
  // The layout: the tests in line, each falling through when the slot's
  // first word holds the line (the common case, as fast as a one-word
  // test); its second word tried out of line, after the jump over the
  // call part:
  //     test k; jne second_k; next_k: ...   restore; jmp done
  //     second_k: cmp A,8(T,U); jne fail; xchg A,(T,U); mov A,8(T,U); jmp next_k
  //     fail: restore; the call part         done:
  // Every jump short when all reach, else every one long.
  const size_t n = tests.size();
  const uint32_t restoreSize = uint32_t(restoreBytes.size());
  // Offsets from the first test, for jumps of `jcc` and `jmp` bytes (2 and
  // 2, or 6 and 5).
  struct Layout {
    uint32_t jcc, jmp;
    std::vector<uint64_t> next;  // after test k's jne: next_k
    uint64_t main = 0, seconds = 0, each = 0, fail = 0, done = 0;
    uint64_t second(size_t k) const { return seconds + k * each; }
  };
  auto layOut = [&](uint32_t jcc, uint32_t jmp) {
    Layout l{jcc, jmp, std::vector<uint64_t>(n)};
    for (size_t k = 0; k < n; ++k) l.main += sizes[k] + jcc, l.next[k] = l.main;
    l.seconds = l.main + restoreSize + jmp, l.each = secondSize + jcc + swapSize + jmp;
    l.fail = l.seconds + n * l.each, l.done = l.fail + restoreSize + kSiteSize;
    return l;
  };
  auto fits = [&](const Layout& l) {
    auto reaches = [](uint64_t from, uint64_t to) { return int64_t(to - from) >= -128 && int64_t(to - from) <= 127; };
    bool ok = reaches(l.seconds, l.done);
    for (size_t k = 0; k < n; ++k)
      ok = ok && reaches(l.next[k], l.second(k)) && reaches(l.second(k) + secondSize + l.jcc, l.fail) &&
           reaches(l.second(k) + l.each, l.next[k]);
    return ok;
  };
  const bool near = fits(layOut(2, 2));
  const Layout l = near ? layOut(2, 2) : layOut(6, 5);
  auto jcc = [&](uint8_t cc, uint64_t target) {
    if (near) a.raw({uint8_t(0x70 + cc), uint8_t(int8_t(int64_t(target) - int64_t(a.here() + 2)))});
    else a.jccRel32(cc, target);
  };
  auto jmp = [&](uint64_t target) {
    if (near) a.raw({0xeb, uint8_t(int8_t(int64_t(target) - int64_t(a.here() + 2)))});
    else a.jmpRel32(target);
  };
  if (saves.redZone) a.stepOverRedZone();
  for (ZydisRegister r : saves.pushed) a.push(r);
  if (saves.appRax != ZYDIS_REGISTER_NONE) a.movReg(saves.appRax, ZYDIS_REGISTER_RAX);
  if (saves.keepArith || saves.keepOverflow) {
    a.lahf();
    if (saves.keepOverflow) a.setoAl();
  }
  const uint64_t start = a.here();
  for (size_t k = 0; k < n; ++k) {
    test(a, k);
    jcc(5, start + l.second(k));  // jne second_k
  }
  restore(a);
  jmp(start + l.done);
  for (size_t k = 0; k < n; ++k) {  // second_k
    a.cmpMemReg(second, A);
    jcc(5, start + l.fail);
    swap(a);
    jmp(start + l.next[k]);
  }
  if (a.here() != start + l.fail) throw InternalError("beforeUnless: the laid-out tests and their code differ");
  restore(a);  // fail:
  emitCallPart(enter, body, a);
  if (a.here() != start + l.done) throw InternalError("beforeUnless: the call part is not where the tests jump over it to");
}


uint32_t unlessCodeSize(const Engine& engine, const Site& site) {
  std::vector<uint8_t> scratch;
  Assembler a(scratch, 0);
  CodeAddresses none;
  none.counters.assign(engine.counterArrays().size(), 0);
  emitUnless(engine, site, none, 0, 0, a);
  return uint32_t(scratch.size());
}

}  // namespace atomx::instrument
