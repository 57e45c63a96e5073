// The body of a site's calls (CallCode.h, BodyWriter): dispatched or
// direct, the arguments computed from the saved state, each routine called
// through the routine table; and the pool of the strings and arrays those
// arguments pass.
#include "instrument/CallCode.h"

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
    if (m.hasBitOffset()) {  // a bit test's word: its offset register through r10, free again
      loadAppRegister(a_, saved_, x86::reg64(unsigned(m.bitOffset)), ZYDIS_REGISTER_R10);
      x86::emitBitOffset(a_, m, dst, ZYDIS_REGISTER_R10);
    }
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

void BodyWriter::emit(const Site& site, BodyKind kind, uint64_t at, const CodeAddresses& addresses,
                      std::vector<uint8_t>& out) const {
  Assembler a(out, at);
  Body(engine_, pool_, site, kind, a, addresses).emit();
}

}  // namespace atomx::instrument
