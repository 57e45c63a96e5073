// A site's inline counter code (CallCode.h, emitIncrements): the
// per-thread check, increments, conditional increments, predictions and
// the updates of counters kept in registers, with what keeps the live
// flags around them.
#include "instrument/CallCode.h"

#include <algorithm>

#include <runtime/abi.h>

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

namespace {

using x86::Assembler;

// One conditional increment's address computation (Counters::incrementIf).
struct AddressCheck {
  const IncrementRequest* inc;
  x86::MemOperand op;
  uint64_t address;        // the instruction's
  bool isStatic;           // RIP-relative without a segment: op.target, known now (data does not move)
  ZydisRegister scratch = ZYDIS_REGISTER_NONE;
};

// Whether (address mod modulus) > above for an address known now.  The load
// bias of a PIE is page aligned, and a modulus is at most a page.
bool staticTest(const AddressTest& t, uint64_t address) { return (address & (t.modulus - 1)) > t.above; }

// A 2-bit saturating-counter predictor's update (Counters::predict) with
// the state s in register `r` and the flags free: miss += (s >= 2) !=
// taken; s moves one step toward the outcome, within 0..3.  No branch.
void emitHeldPrediction(Assembler& a, const x86::Mem& miss, ZydisRegister r, bool taken, bool atomic) {
  a.cmpImm(r, 2);                // CF = s < 2: predicted not taken
  if (!taken) a.raw({0xf5});     // cmc: CF = predicted taken
  a.adcMemImm(miss, 0, atomic);  // miss += CF (a branch over an inc is slower: it mispredicts as often)
  if (taken) {
    a.cmpImm(r, 3);              // CF = s < 3
    a.adcImm(r, 0);              // s + CF
  } else {
    a.cmpImm(r, 1);              // CF = s < 1
    a.adcImm(r, -1);             // s - 1 + CF
  }
}

// A state as its counter holds it, s XOR 1 (a zeroed counter is state 1,
// weakly not taken), into register `r` as s, and back.  Both write the flags.
void loadState(Assembler& a, ZydisRegister r, const x86::Mem& state) {
  a.movLoad(r, state);
  a.xorImm(r, 1);
}
void storeState(Assembler& a, const x86::Mem& state, ZydisRegister r) {
  a.xorImm(r, 1);
  a.movStore(state, r);
}

// The same update with the state in memory, `r` free.
void emitPrediction(Assembler& a, const x86::Mem& state, const x86::Mem& miss, ZydisRegister r, bool taken,
                    bool atomic) {
  loadState(a, r, state);
  emitHeldPrediction(a, miss, r, taken, atomic);
  storeState(a, state, r);
}

// CounterMode::PerThread: the thread's own counters before anything else
// at an entry outside code may call (runtime/abi.h).  The inline test
// writes the flags, so it needs them dead, and a register.
void emitThreadCheck(const Site& site, const CodeAddresses& addresses, Assembler& a) {
  if (!site.threadCheck) return;
  if (site.checkScratch != ZYDIS_REGISTER_NONE && (site.liveFlags & x86::flag::kStatus) == 0) {
    const ZydisRegister r32 = ZydisRegister(ZYDIS_REGISTER_EAX + (site.checkScratch - ZYDIS_REGISTER_RAX));
    a.movLoad(r32, x86::segmentOffset(ZYDIS_REGISTER_FS, ATOMX_GLIBC_TID_OFFSET, 4));
    a.cmpMemReg(x86::segmentOffset(ZYDIS_REGISTER_FS, ATOMX_COUNTERS_OWNER_OFFSET, 4), r32);
    std::vector<uint8_t> call;
    x86::Assembler c(call, 0);
    c.stepOverRedZone();
    c.callRel32(0);
    c.stepBackOverRedZone();
    a.jccShort(4, uint8_t(call.size()));  // je: over the call (fixed sizes)
  }
  a.stepOverRedZone();
  a.callRel32(addresses.threadCounters);
  a.stepBackOverRedZone();
}

// Where counter `index` of array `array` is incremented.
x86::Mem counterAt(const CodeAddresses& addresses, CounterMode mode, uint32_t array, uint64_t index) {
  const uint64_t address = addresses.counters.at(array) + 8 * index;
  if (mode != CounterMode::PerThread) return x86::ripAbsolute(address);
  return x86::segmentOffset(ZYDIS_REGISTER_GS, int32_t(address - addresses.countersBase));
}

}  // namespace

// Increments, and around them what keeps the live status flags: nothing
// when none is live (the usual case at a block's start), otherwise %rax
// saved below the red zone and the flags kept in it (Assembler::lahf).
// A conditional increment computes its address into a scratch register
// (one the address does not use) before the flags are saved, while every
// register still holds the program's value, then tests it.
void emitIncrements(const Engine& engine, const Site& site, CounterMode mode, const CodeAddresses& addresses,
                    Assembler& a) {
  emitThreadCheck(site, addresses, a);
  if (site.increments.empty()) return;
  const bool atomic = mode == CounterMode::Atomic;
  std::vector<AddressCheck> checks;
  x86::RegSet used;  // registers the dynamic addresses read
  for (const IncrementRequest* inc : site.increments) {
    if (!inc->conditional) continue;
    auto* d = static_cast<const detail::InstData*>(inc->where);
    const ir::Procedure& proc = *d->block->proc->proc;
    const x86::Semantics sem = engine.semantics(proc, d->index);
    if (inc->test.operand >= sem.memCount) throw InternalError("a counter's test of a missing memory operand");
    AddressCheck c{inc, sem.mem[inc->test.operand], proc.insns[d->index].address, false};
    c.isStatic = c.op.ripRelative && !x86::hasSegmentBase(c.op) && !c.op.hasBitOffset();
    if (c.op.hasBase()) used |= x86::RegSet::gpr(unsigned(c.op.base));
    if (c.op.hasIndex()) used |= x86::RegSet::gpr(unsigned(c.op.index));
    if (c.op.hasBitOffset()) used |= x86::RegSet::gpr(unsigned(c.op.bitOffset));
    checks.push_back(c);
  }
  // Predictions with the state in memory (not `held`): those need a register.
  const size_t predictions = size_t(std::count_if(site.increments.begin(), site.increments.end(), [](const IncrementRequest* inc) {
    return inc->predict != IncrementRequest::Predict::None && !inc->held;
  }));
  const size_t tests = size_t(std::count_if(checks.begin(), checks.end(), [](const AddressCheck& c) { return !c.isStatic; }));
  // A promoted counter's or held state's register (IncrementRequest::
  // Accumulate, held) is no scratch register here, nor an induction
  // variable that is read; zeroing, stepping and marking write no flag;
  // flushing, measuring, loading and storing a state (XOR 1) and
  // predicting write them all.
  using Acc = IncrementRequest::Accumulate;
  bool writesFlags = false, writesCarry = predictions > 0;
  for (const IncrementRequest* inc : site.increments) {
    if (inc->accumulate != Acc::None || inc->held) used |= x86::RegSet::gpr(inc->reg);
    if (inc->accumulate == Acc::Mark || inc->accumulate == Acc::Measure) used |= x86::RegSet::gpr(inc->variable);
    const bool carry = inc->accumulate == Acc::Flush || inc->accumulate == Acc::Load || inc->accumulate == Acc::Store ||
                       inc->accumulate == Acc::Measure || inc->held;
    writesFlags |= inc->accumulate == Acc::None || carry;
    writesCarry |= carry;
  }
  // A prediction needs a register (a dead one where there is one) and
  // writes CF, as a test does.
  const bool savedState = predictions && site.predictScratch == ZYDIS_REGISTER_NONE;
  if (predictions && !savedState) used |= x86::RegSet::gpr(unsigned(site.predictScratch - ZYDIS_REGISTER_RAX));
  const IncrementSaves saves = reserveForIncrements(writesFlags ? site.liveFlags : 0, used, tests + (savedState ? 1 : 0),
                                                    writesCarry);
  const ZydisRegister stateReg = !predictions ? ZYDIS_REGISTER_NONE : savedState ? saves.scratch.back() : site.predictScratch;
  const std::vector<ZydisRegister>& scratch = saves.scratch;
  size_t next = 0;
  for (AddressCheck& c : checks)
    if (!c.isStatic) c.scratch = scratch[next++];
  const bool keep = saves.keepFlags, arith = saves.keepArith, overflow = saves.keepOverflow;
  if (saves.redZone) a.stepOverRedZone();
  for (ZydisRegister r : scratch) a.push(r);
  if (keep) a.push(ZYDIS_REGISTER_RAX);
  const int32_t below = saves.below;  // to the program's %rsp
  for (const AddressCheck& c : checks) {
    if (c.isStatic) continue;
    // The registers still hold the program's values; %rsp moved by `below`.
    const ZydisRegister base = c.op.hasBase() ? x86::reg64(unsigned(c.op.base)) : ZYDIS_REGISTER_NONE;
    const ZydisRegister index = c.op.hasIndex() ? x86::reg64(unsigned(c.op.index)) : ZYDIS_REGISTER_NONE;
    x86::emitLinearAddress(a, c.op, c.scratch, base, index, below);
    if (c.op.hasBitOffset()) {
      // A bit test's word: the flags are not saved yet, so around its
      // arithmetic, below the red zone, with a register of its own (the
      // offset register holds the program's value: no scratch is one).
      const ZydisRegister t = c.scratch == ZYDIS_REGISTER_RAX ? ZYDIS_REGISTER_RCX : ZYDIS_REGISTER_RAX;
      a.stepOverRedZone();
      a.pushfq();
      a.push(t);
      a.movReg(t, x86::reg64(unsigned(c.op.bitOffset)));
      x86::emitBitOffset(a, c.op, c.scratch, t);
      a.pop(t);
      a.popfq();
      a.stepBackOverRedZone();
    }
  }
  if (arith) a.lahf();
  if (overflow) a.setoAl();
  for (const IncrementRequest* inc : site.increments) {
    const ZydisRegister accumulator = x86::reg64(inc->reg);
    switch (inc->accumulate) {
      case Acc::None: break;
      case Acc::Zero:
        if (inc->spilled) a.movStore(counterAt(addresses, mode, inc->spillCounters, inc->spill), accumulator);
        a.movImm(accumulator, 0);  // mov $0, %r32: no flags
        continue;
      case Acc::Step: a.lea(accumulator, x86::mem(accumulator, 1)); continue;  // lea 1(%r), %r: no flags
      case Acc::Flush:
        a.addMemReg(counterAt(addresses, mode, inc->counters, inc->index), accumulator, atomic);
        if (inc->spilled) a.movLoad(accumulator, counterAt(addresses, mode, inc->spillCounters, inc->spill));
        continue;
      case Acc::Load:
        if (inc->spilled) a.movStore(counterAt(addresses, mode, inc->spillCounters, inc->spill), accumulator);
        loadState(a, accumulator, counterAt(addresses, mode, inc->counters, inc->index));
        continue;
      case Acc::Store:
        storeState(a, counterAt(addresses, mode, inc->counters, inc->index), accumulator);
        if (inc->spilled) a.movLoad(accumulator, counterAt(addresses, mode, inc->spillCounters, inc->spill));
        continue;
      case Acc::Mark:
      case Acc::Measure: {
        // The variable as the program left it: where %rax holds the flags
        // (lahf), its value is the one pushed last.
        const bool saved = keep && inc->variable == 0;
        const ZydisRegister variable = x86::reg64(inc->variable);
        if (inc->accumulate == Acc::Mark) {
          if (inc->spilled) a.movStore(counterAt(addresses, mode, inc->spillCounters, inc->spill), accumulator);
          if (saved) a.movLoad(accumulator, x86::mem(ZYDIS_REGISTER_RSP, 0));
          else a.movReg(accumulator, variable);
          continue;
        }
        if (saved) a.subLoad(accumulator, x86::mem(ZYDIS_REGISTER_RSP, 0));
        else a.subReg(accumulator, variable);  // at entry - now: -(steps x step)
        a.subMemReg(counterAt(addresses, mode, inc->counters, inc->index), accumulator, atomic);
        if (inc->spilled) a.movLoad(accumulator, counterAt(addresses, mode, inc->spillCounters, inc->spill));
        continue;
      }
    }
    const x86::Mem counter = counterAt(addresses, mode, inc->counters, inc->index);
    if (inc->held) {
      emitHeldPrediction(a, counterAt(addresses, mode, inc->counters, inc->miss), accumulator,
                         inc->predict == IncrementRequest::Predict::Taken, atomic);
      continue;
    }
    if (inc->predict != IncrementRequest::Predict::None) {
      emitPrediction(a, counter, counterAt(addresses, mode, inc->counters, inc->miss), stateReg,
                     inc->predict == IncrementRequest::Predict::Taken, atomic);
      continue;
    }
    if (!inc->conditional) {
      a.incMem(counter, atomic);
      continue;
    }
    const AddressCheck& c = *std::find_if(checks.begin(), checks.end(), [&](const AddressCheck& k) { return k.inc == inc; });
    if (c.isStatic) {
      if (staticTest(inc->test, c.op.target)) a.incMem(counter, atomic);
      continue;
    }
    x86::emitSegmentBase(a, c.op, c.scratch, c.address);  // after the flags are kept
    const ZydisRegister r32 = ZydisRegister(ZYDIS_REGISTER_EAX + (c.scratch - ZYDIS_REGISTER_RAX));
    a.andImm(r32, int32_t(inc->test.modulus - 1));
    a.cmpImm(r32, int32_t(inc->test.above));
    std::vector<uint8_t> incBytes;
    x86::Assembler(incBytes, 0).incMem(counter, atomic);  // its size: fixed (disp32)
    a.jccShort(6, uint8_t(incBytes.size()));  // jbe: not above, skip the increment
    a.incMem(counter, atomic);
  }
  if (overflow) a.restoreOfFromAl();
  if (arith) a.sahf();
  if (keep) a.pop(ZYDIS_REGISTER_RAX);
  for (size_t k = scratch.size(); k-- > 0;) a.pop(scratch[k]);
  if (saves.redZone) a.stepBackOverRedZone();
}

uint32_t incrementCodeSize(const Engine& engine, const Site& site, CounterMode mode) {
  // Sized by emitting: the forms have fixed sizes (rip-relative disp32).
  std::vector<uint8_t> scratch;
  Assembler a(scratch, 0);
  CodeAddresses none;
  for (const IncrementRequest* inc : site.increments)
    none.counters.resize(std::max<size_t>({none.counters.size(), inc->counters + 1, inc->spillCounters + 1}), 0);
  emitIncrements(engine, site, mode, none, a);
  return uint32_t(scratch.size());
}

}  // namespace atomx::instrument
