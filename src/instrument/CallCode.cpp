#include "instrument/CallCode.h"

#include <atomx/trace_format.h>

#include <algorithm>

#include <runtime/abi.h>
#include <runtime/trace/stores.h>

#include "support/Error.h"
#include "support/Hex.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

namespace {

using x86::Assembler;
using x86::mem;

constexpr ZydisRegister kFrame = kFrameRegister;  // the saved state is found from here (SaveSet.h)
constexpr ZydisRegister kArgRegs[6] = {ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX,
                                       ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_R8,  ZYDIS_REGISTER_R9};

ZydisRegister to32(ZydisRegister r64) { return ZydisRegister(ZYDIS_REGISTER_EAX + (r64 - ZYDIS_REGISTER_RAX)); }

// Loads the application's value of general register `reg` (any width; the
// value is zero-extended from 32 bits for 32-bit registers) into dst.
void loadAppRegister(Assembler& a, const SavedState& saved, ZydisRegister reg, ZydisRegister dst) {
  const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
  if (full < ZYDIS_REGISTER_RAX || full > ZYDIS_REGISTER_R15)
    throw InternalError(std::string("cannot load register ") + ZydisRegisterGetString(reg));
  const int hw = full - ZYDIS_REGISTER_RAX;
  const bool is32 = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg) == 32;
  if (hw == 4) {
    a.lea(dst, mem(kFrame, saved.appStack));
    if (is32) a.movReg(to32(dst), to32(dst));
  } else if (saved.reg[hw] == SavedState::kLive) {
    if (is32) a.movReg(to32(dst), to32(full));
    else a.movReg(dst, full);
  } else if (is32) {
    a.movLoad(to32(dst), mem(kFrame, saved.reg[hw], 4));
  } else {
    a.movLoad(dst, mem(kFrame, saved.reg[hw]));
  }
}

class Body {
 public:
  Body(const Engine& engine, DataPool& pool, const Site& site, BodyKind kind, Assembler& a, const CodeAddresses& addr)
      : engine_(engine), pool_(pool), site_(site), kind_(kind),
        saved_(savedState(kind)), a_(a), addr_(addr) {
    if (site.proc) {
      decoded_ = engine.decode(*site.proc, site.insn);
      insn_ = &site.proc->insns[site.insn];
      sem_ = x86::describe(decoded_.insn, decoded_.operands, insn_->address);
    }
  }

  void emit() {
    if (kind_.direct) return emitDirect();
    // Temporaries for values that need a call or a syscall to compute: they
    // are computed first, before any argument register is set.
    size_t temps = 0;
    for (const CallRequest* c : site_.calls)
      for (const Arg& arg : c->args) temps += needsCall(arg, insn_);
    const int32_t frameBytes = int32_t((temps * 8 + 15) / 16 * 16);
    a_.push(ZYDIS_REGISTER_RBP);  // aligns the stack to 16 for the calls below
    a_.movReg(ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSP);
    if (frameBytes) a_.subImm(ZYDIS_REGISTER_RSP, frameBytes);
    if (site_.exitHook) a_.callRel32(addr_.programAfter);
    for (const CallRequest* c : site_.calls) emitCall(*c);
    a_.movReg(ZYDIS_REGISTER_RSP, ZYDIS_REGISTER_RBP);
    a_.pop(ZYDIS_REGISTER_RBP);
    a_.ret();
  }

 private:
  // The site called this body itself (allowsDirectBody): save what the
  // routines and the argument code may change (SaveSet.h), skip everything before the runtime
  // is ready (ld.so runs program code before the entry point, when the
  // routine table is still empty), call, restore.
  void emitDirect() {
    if (kind_.saveFlags) {
      a_.pushfq();
      a_.cld();  // the SysV ABI wants DF clear
    }
    const std::vector<ZydisRegister> pushed = directPushes(kind_.saves);
    for (ZydisRegister r : pushed) a_.push(r);
    a_.cmpMemImm(x86::ripAbsolute(addr_.ready), 0);
    // The calls, assembled first for the branch over them (a 6-byte jz).
    std::vector<uint8_t> calls;
    Assembler c(calls, a_.here() + 6);
    {
      Body inner(*this, c);
      c.movReg(kFrame, ZYDIS_REGISTER_RSP);
      c.andImm(ZYDIS_REGISTER_RSP, -16);
      for (const CallRequest* call : site_.calls) inner.emitCall(*call);
      c.movReg(ZYDIS_REGISTER_RSP, kFrame);
    }
    a_.jccRel32(4, a_.here() + 6 + calls.size());  // jz: not ready
    a_.raw(calls);
    for (size_t k = pushed.size(); k-- > 0;) a_.pop(pushed[k]);
    if (kind_.saveFlags) a_.popfq();
    a_.ret();
  }

  // The same body, assembling into `a`.
  Body(const Body& other, Assembler& a)
      : engine_(other.engine_), pool_(other.pool_), site_(other.site_), kind_(other.kind_), saved_(other.saved_),
        a_(a), addr_(other.addr_), decoded_(other.decoded_), sem_(other.sem_), insn_(other.insn_) {}

  // A PC argument gives the original address of what the call was added
  // to (an instruction, a block's or procedure's first instruction); for
  // ProcAfter the exit it runs at; on an edge, where the stub sits.
  uint64_t pcOf(const CallRequest& c) const {
    if (c.point != Point::Edge)
      if (const detail::InstData* d = engine_.contextInst(c.point, c.where))
        return d->block->proc->proc->insns[d->index].address;
    return site_.pc;
  }

  void emitCall(const CallRequest& c) {
    call_ = &c;
    std::vector<int32_t> tempSlot(c.args.size(), 0);
    for (size_t k = 0; k < c.args.size(); ++k) {
      if (!needsCall(c.args[k], insn_)) continue;
      computeWithCall(c.args[k]);
      nextTemp_ += 8;
      tempSlot[k] = -nextTemp_;
      a_.movStore(mem(ZYDIS_REGISTER_RBP, tempSlot[k]), ZYDIS_REGISTER_RAX);
    }
    // Stack arguments (7th and later), pushed last to first, the stack kept
    // 16-byte aligned at the call.
    const size_t n = c.args.size();
    const size_t onStack = n > 6 ? n - 6 : 0;
    if (onStack % 2) a_.subImm(ZYDIS_REGISTER_RSP, 8);
    for (size_t k = n; k-- > 6;) {
      compute(c.args[k], tempSlot[k], ZYDIS_REGISTER_RAX);
      a_.push(ZYDIS_REGISTER_RAX);
    }
    for (size_t k = 0; k < n && k < 6; ++k) compute(c.args[k], tempSlot[k], kArgRegs[k]);
    a_.callMem(x86::ripAbsolute(addr_.routineTable + 8 * c.routine));
    if (onStack) a_.subImm(ZYDIS_REGISTER_RSP, -int32_t((onStack + onStack % 2) * 8));
    nextTemp_ = 0;
  }

  // Values computed through a call or a syscall (into rax).
  void computeWithCall(const Arg& arg) {
    if (arg.kind() == Arg::Kind::ThreadId) {
      a_.movImm(ZYDIS_REGISTER_RAX, 186);  // SYS_gettid
      a_.syscall();
      return;
    }
    // An indirect branch target or a return address: a new code address,
    // mapped back to the original by the runtime.
    if (insn_->flow == x86::Flow::Return) {
      a_.movLoad(ZYDIS_REGISTER_RDI, mem(kFrame, saved_.appStack));
    } else {
      const ZydisDecodedOperand& op = decoded_.operands[0];
      if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) {
        loadAppRegister(a_, saved_, op.reg.value, ZYDIS_REGISTER_RDI);
      } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
        effectiveAddress(0, ZYDIS_REGISTER_RDI);
        a_.movLoad(ZYDIS_REGISTER_RDI, mem(ZYDIS_REGISTER_RDI, 0));
      } else {
        throw InternalError("branch target of " + hex(insn_->address));
      }
    }
    a_.callRel32(addr_.originalAddress);
  }

  void compute(const Arg& arg, int32_t tempSlot, ZydisRegister dst) {
    switch (arg.kind()) {
      case Arg::Kind::Constant: return a_.movImm(dst, uint64_t(arg.value()));
      case Arg::Kind::String:
      case Arg::Kind::Array: return a_.lea(dst, x86::ripAbsolute(addr_.dataPool + pool_.add(arg.bytes())));
      case Arg::Kind::PC: return a_.movImm(dst, pcOf(*call_));
      case Arg::Kind::ThreadId: return a_.movLoad(dst, mem(ZYDIS_REGISTER_RBP, tempSlot));
      case Arg::Kind::BranchTarget:
        if (insn_->isDirectBranch()) return a_.movImm(dst, insn_->target);
        return a_.movLoad(dst, mem(ZYDIS_REGISTER_RBP, tempSlot));
      case Arg::Kind::BranchCondition: return branchCondition(dst);
      case Arg::Kind::EffectiveAddress: return effectiveAddress(unsigned(arg.value()), dst);
      case Arg::Kind::AccessSize: return a_.movImm(dst, memOperand(unsigned(arg.value())).size);
      case Arg::Kind::Register:
        return loadAppRegister(a_, saved_, ZydisRegister(ZYDIS_REGISTER_RAX + arg.value()), dst);
      case Arg::Kind::ProcArg: {
        if (arg.value() < 6) return loadAppRegister(a_, saved_, kArgRegs[arg.value()], dst);
        // On entry the return address is at (%rsp); stack arguments follow.
        return a_.movLoad(dst, mem(kFrame, saved_.appStack + 8 + 8 * (arg.value() - 6)));
      }
      case Arg::Kind::ReturnValue: return loadAppRegister(a_, saved_, ZYDIS_REGISTER_RAX, dst);
      case Arg::Kind::Counters: return a_.lea(dst, x86::ripAbsolute(addr_.counters.at(size_t(arg.value()))));
    }
  }

  // 1 if the conditional branch will be taken, else 0, from the saved flags
  // and %rcx.  Scratch: rax, r10, r11 (never argument registers).
  void branchCondition(ZydisRegister dst) {
    const ZydisMnemonic m = decoded_.insn.mnemonic;
    const bool ecx = decoded_.insn.address_width == 32;
    auto loadRcx = [&](ZydisRegister r) {
      loadAppRegister(a_, saved_, ecx ? ZYDIS_REGISTER_ECX : ZYDIS_REGISTER_RCX, r);
    };
    auto appFlags = [&] {
      if (saved_.rflags == SavedState::kLive) throw InternalError("a branch condition without the saved flags");
      a_.pushMem(mem(kFrame, saved_.rflags));
      a_.popfq();
      a_.cld();  // the program's DF may be set; the routine wants it clear
    };
    if (m == ZYDIS_MNEMONIC_JRCXZ || m == ZYDIS_MNEMONIC_JECXZ) {
      loadAppRegister(a_, saved_, m == ZYDIS_MNEMONIC_JECXZ ? ZYDIS_REGISTER_ECX : ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RAX);
      a_.testReg(ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RAX);
      a_.setcc(4, ZYDIS_REGISTER_AL);  // z
    } else if (m == ZYDIS_MNEMONIC_LOOP || m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE) {
      // Taken when the decremented counter is not zero (and, for loope and
      // loopne, ZF says so).
      loadRcx(ZYDIS_REGISTER_R10);
      if (ecx) a_.subImm(ZYDIS_REGISTER_R10D, 1);
      else a_.subImm(ZYDIS_REGISTER_R10, 1);
      a_.setcc(5, ZYDIS_REGISTER_AL);  // nz
      if (m != ZYDIS_MNEMONIC_LOOP) {
        a_.movzxByte(ZYDIS_REGISTER_R10D, ZYDIS_REGISTER_AL);
        appFlags();
        a_.setcc(m == ZYDIS_MNEMONIC_LOOPE ? 4 : 5, ZYDIS_REGISTER_AL);
        a_.movzxByte(ZYDIS_REGISTER_EAX, ZYDIS_REGISTER_AL);
        a_.andReg(ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_R10);
        if (dst != ZYDIS_REGISTER_RAX) a_.movReg(dst, ZYDIS_REGISTER_RAX);
        return;
      }
    } else {
      appFlags();
      a_.setcc(insn_->condCode, ZYDIS_REGISTER_AL);
    }
    a_.movzxByte(to32(dst), ZYDIS_REGISTER_AL);
  }

  const x86::MemOperand& memOperand(unsigned n) const {
    if (n >= sem_.memCount) throw InternalError("no memory operand " + std::to_string(n) + " at " + hex(insn_->address));
    return sem_.mem[n];
  }

  // The address memory operand n accesses, as the program sees it: its
  // base and index loaded into r10 and r11 first.
  void effectiveAddress(unsigned n, ZydisRegister dst) {
    const x86::MemOperand& m = memOperand(n);
    if (m.hasBase()) loadAppRegister(a_, saved_, m.baseRegister(), ZYDIS_REGISTER_R10);
    if (m.hasIndex()) loadAppRegister(a_, saved_, m.indexRegister(), ZYDIS_REGISTER_R11);
    x86::emitLinearAddress(a_, m, dst, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11);
    x86::emitSegmentBase(a_, m, dst, insn_->address);
  }

  const Engine& engine_;
  DataPool& pool_;
  const Site& site_;
  const BodyKind kind_;
  const SavedState saved_;
  Assembler& a_;
  const CodeAddresses& addr_;
  Engine::Decoded decoded_{};
  x86::Semantics sem_{};
  const x86::Insn* insn_ = nullptr;
  int32_t nextTemp_ = 0;
  const CallRequest* call_ = nullptr;
};

}  // namespace

uint64_t DataPool::add(const std::string& bytes) {
  auto [it, fresh] = offsets_.emplace(bytes, 0);
  if (fresh) {
    while (bytes_.size() % 8) bytes_.push_back(0);
    it->second = bytes_.size();
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  return it->second;
}

namespace {

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

// Increments, and around them what keeps the live status flags: nothing
// when none is live (the usual case at a block's start), otherwise %rax
// saved below the red zone and the flags kept in it (Assembler::lahf).
// A conditional increment computes its address into a scratch register
// (one the address does not use) before the flags are saved, while every
// register still holds the program's value, then tests it.
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
    c.isStatic = c.op.ripRelative && !x86::hasSegmentBase(c.op);
    if (c.op.hasBase()) used |= x86::RegSet::gpr(unsigned(c.op.base));
    if (c.op.hasIndex()) used |= x86::RegSet::gpr(unsigned(c.op.index));
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

void emitCallPart(uint64_t enter, uint64_t body, Assembler& a) {
  a.stepOverRedZone();
  a.callRel32(enter);
  const int64_t rel = int64_t(body) - int64_t(a.here() + 7);
  if (rel < INT32_MIN || rel > INT32_MAX) throw InternalError("body out of reach of its site");
  const uint32_t r = uint32_t(int32_t(rel));
  a.raw({0x0f, 0x1f, 0x80, uint8_t(r), uint8_t(r >> 8), uint8_t(r >> 16), uint8_t(r >> 24)});  // nopl body(%rax)
  a.stepBackOverRedZone();
}

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

}  // namespace

void emitStores(const Site& site, std::vector<uint8_t>& out) {
  if (site.stores.empty()) return;
  std::vector<uint8_t> bytes;
  for (const StoreRequest* st : site.stores) bytes.insert(bytes.end(), st->bytes.begin(), st->bytes.end());
  if (bytes.empty()) return;
  if (bytes.size() > ATOMX_STORES_MAX_BYTES) throw InternalError("too many trace bytes at one site");
  const bool saved = site.storeScratch == ZYDIS_REGISTER_NONE;
  const ZydisRegister r = saved ? ZYDIS_REGISTER_RAX : site.storeScratch;
  const unsigned hw = unsigned(r - ZYDIS_REGISTER_RAX);
  Assembler a(out, 0);
  if (saved) {
    a.stepOverRedZone();
    a.push(r);
  }
  // The forms: runtime/trace/stores.h.
  uint8_t form[ATOMX_STORES_MAX_FORM];
  auto put = [&](unsigned n) { out.insert(out.end(), form, form + n); };
  put(atomx_stores_cursor_move(form, hw, 0));
  // Pieces of 4, 2 and 1 bytes, emitted from the last.
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // offset, size
  for (uint32_t off = 0; off < bytes.size();) {
    const uint32_t n = atomx_stores_piece(uint32_t(bytes.size()) - off);
    pieces.push_back({off, n});
    off += n;
  }
  for (size_t k = pieces.size(); k-- > 0;) {
    const auto [off, n] = pieces[k];
    put(atomx_stores_store(form, hw, off, &bytes[off], n));
  }
  put(atomx_stores_advance(form, hw, unsigned(bytes.size())));
  put(atomx_stores_cursor_move(form, hw, 1));
  if (saved) {
    a.pop(r);
    a.stepBackOverRedZone();
  }
}

uint32_t storeCodeSize(const Site& site) {
  std::vector<uint8_t> scratch;
  emitStores(site, scratch);
  return uint32_t(scratch.size());
}

uint32_t unlessCodeSize(const Engine& engine, const Site& site) {
  std::vector<uint8_t> scratch;
  Assembler a(scratch, 0);
  CodeAddresses none;
  none.counters.assign(engine.counterArrays().size(), 0);
  emitUnless(engine, site, none, 0, 0, a);
  return uint32_t(scratch.size());
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

void emitSite(const Engine& engine, const Site& site, CounterMode mode, uint64_t at, uint64_t enter, uint64_t body,
              const CodeAddresses& addresses, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  Assembler a(out, at);
  if (site.unless) {
    emitUnless(engine, site, addresses, enter, body, a);
  } else {
    emitIncrements(engine, site, mode, addresses, a);
    emitStores(site, out);
    if (site.needsCall()) emitCallPart(enter, body, a);
  }
  if (out.size() - start != site.codeSize) throw InternalError("site code has the wrong size");
}

void BodyWriter::emit(const Site& site, BodyKind kind, uint64_t at, const CodeAddresses& addresses,
                      std::vector<uint8_t>& out) const {
  Assembler a(out, at);
  Body(engine_, pool_, site, kind, a, addresses).emit();
}

}  // namespace atomx::instrument
