#include "instrument/SaveSet.h"

#include <algorithm>
#include <cstddef>
#include <memory>

#include <runtime/abi.h>

#include "analysis/FlagsLiveness.h"
#include "analysis/RegisterLiveness.h"
#include "support/Error.h"

namespace atomx::instrument {

namespace {

constexpr x86::RegSet bit(ZydisRegister r) { return x86::RegSet::gpr(unsigned(r - ZYDIS_REGISTER_RAX)); }
constexpr x86::RegSet kCallerSaved = bit(ZYDIS_REGISTER_RAX) | bit(ZYDIS_REGISTER_RCX) | bit(ZYDIS_REGISTER_RDX) |
                                     bit(ZYDIS_REGISTER_RSI) | bit(ZYDIS_REGISTER_RDI) | bit(ZYDIS_REGISTER_R8) |
                                     bit(ZYDIS_REGISTER_R9) | bit(ZYDIS_REGISTER_R10) | bit(ZYDIS_REGISTER_R11);
constexpr ZydisRegister kArgRegs[6] = {ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX,
                                       ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_R8,  ZYDIS_REGISTER_R9};
// The scratch registers of the argument code (CallBody.cpp's
// effectiveAddress and branchCondition).
constexpr x86::RegSet kArgumentScratch = bit(ZYDIS_REGISTER_RAX) | bit(ZYDIS_REGISTER_R10) | bit(ZYDIS_REGISTER_R11);

// A direct body pushes the registers of BodyKind::saves in this order (RFLAGS,
// when saved, before them); the frame register, pushed last, keeps the frame
// (and the unaligned %rsp) across the calls.  The rest stay live.
constexpr ZydisRegister kDirectOrder[10] = {ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX,
                                            ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_R8,
                                            ZYDIS_REGISTER_R9,  ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
                                            kFrameRegister};

// Behind a dispatcher (runtime/stub/enter.S): everything, as AtomxFrame.
constexpr SavedState kDispatcherState = {
    {offsetof(AtomxFrame, rax), offsetof(AtomxFrame, rcx), offsetof(AtomxFrame, rdx), offsetof(AtomxFrame, rbx),
     SavedState::kLive,         offsetof(AtomxFrame, rbp), offsetof(AtomxFrame, rsi), offsetof(AtomxFrame, rdi),
     offsetof(AtomxFrame, r8),  offsetof(AtomxFrame, r9),  offsetof(AtomxFrame, r10), offsetof(AtomxFrame, r11),
     offsetof(AtomxFrame, r12), offsetof(AtomxFrame, r13), offsetof(AtomxFrame, r14), offsetof(AtomxFrame, r15)},
    offsetof(AtomxFrame, rflags),
    kAtomxFrameAppStack};

SavedState directState(const BodyKind& kind) {
  SavedState s{};
  for (int32_t& r : s.reg) r = SavedState::kLive;
  const std::vector<ZydisRegister> pushed = directPushes(kind.saves);
  const int32_t n = int32_t(pushed.size());
  for (int32_t k = 0; k < n; ++k) s.reg[pushed[size_t(k)] - ZYDIS_REGISTER_RAX] = 8 * (n - 1 - k);
  s.rflags = kind.saveFlags ? 8 * n : SavedState::kLive;
  // Above the pushes: the return address into the site code, then the red zone it stepped over.
  s.appStack = 8 * n + (kind.saveFlags ? 8 : 0) + 8 + 128;
  return s;
}

}  // namespace

bool needsCall(const Arg& a, const x86::Insn* insn) {
  if (a.kind() == Arg::Kind::ThreadId) return true;
  return a.kind() == Arg::Kind::BranchTarget && !(insn && insn->isDirectBranch());
}

bool allowsDirectBody(const Site& site) {
  if (!site.proc || site.exitHook || site.calls.empty()) return false;
  const x86::Insn& insn = site.proc->insns[site.insn];
  for (const CallRequest* c : site.calls)
    for (const Arg& arg : c->args)
      if (needsCall(arg, &insn)) return false;
  return true;
}

x86::RegSet directBodySaves(const Site& site, x86::RegSet routinesWrite) {
  x86::RegSet saves = (routinesWrite & kCallerSaved) | bit(kFrameRegister);
  for (const CallRequest* c : site.calls) {
    for (size_t k = 0; k < c->args.size() && k < 6; ++k) saves |= bit(kArgRegs[k]);
    if (c->args.size() > 6) saves |= bit(ZYDIS_REGISTER_RAX);  // stack arguments go through rax
    for (const Arg& arg : c->args)
      switch (arg.kind()) {
        case Arg::Kind::Constant: case Arg::Kind::String: case Arg::Kind::Array: case Arg::Kind::PC:
        case Arg::Kind::Counters: case Arg::Kind::AccessSize: case Arg::Kind::Register: case Arg::Kind::ProcArg:
        case Arg::Kind::ReturnValue:
          break;  // straight into the argument register
        default:  // effectiveAddress, branchCondition (and anything new): their scratch registers
          saves |= kArgumentScratch;
      }
  }
  return saves;
}

std::vector<ZydisRegister> directPushes(x86::RegSet saves) {
  std::vector<ZydisRegister> regs;
  for (ZydisRegister r : kDirectOrder)
    if (!(saves & bit(r)).empty()) regs.push_back(r);
  return regs;
}

SavedState savedState(const BodyKind& kind) { return kind.direct ? directState(kind) : kDispatcherState; }

CallSaves chooseCallSaves(const Site& site, const std::vector<Footprint>& footprints) {
  CallSaves s;
  bool light = !site.exitHook;
  x86::RegSet written;
  for (const CallRequest* c : site.calls) {
    light = light && !footprints[c->routine].vectorState;
    written |= footprints[c->routine].registers;
  }
  const bool noFlags = !site.exitHook && site.proc && site.liveFlags == 0 && site.directionClear;
  static constexpr uint32_t kSlot[2][2] = {{kAtomxSlotEnter, kAtomxSlotEnterNoFlags},
                                           {kAtomxSlotEnterLight, kAtomxSlotEnterLightNoFlags}};
  s.enterSlot = kSlot[light][noFlags];
  s.light = light;
  s.noFlags = noFlags;
  if (light && allowsDirectBody(site)) s.body = BodyKind{true, !noFlags, directBodySaves(site, written)};
  return s;
}

struct SiteLiveness::PerProcedure {
  analysis::FlagsLiveness flags;
  bool directionClear;
  std::unique_ptr<analysis::RegisterLiveness> registers;  // on first demand, and with it
  std::vector<uint16_t> reserved;  // per instruction: promoted counters' registers (Engine::reservations)
};

SiteLiveness::SiteLiveness(const Engine& engine) : engine_(engine) {}
SiteLiveness::~SiteLiveness() = default;

SiteLiveness::PerProcedure& SiteLiveness::of(const ir::Procedure& proc) {
  if (procs_.size() <= proc.id) procs_.resize(proc.id + 1);
  std::unique_ptr<PerProcedure>& p = procs_[proc.id];
  if (!p) {
    const bool setsDirection = std::any_of(proc.insns.begin(), proc.insns.end(),
                                           [](const x86::Insn& in) { return in.mnemonic == ZYDIS_MNEMONIC_STD; });
    p.reset(new PerProcedure{analysis::FlagsLiveness(engine_.program(), proc, engine_.decoder()), !setsDirection,
                             nullptr, {}});
  }
  return *p;
}

uint8_t SiteLiveness::flags(const Site& s) {
  if (!s.proc) return analysis::kAllStatusFlags;
  const analysis::FlagsLiveness& live = of(*s.proc).flags;
  if (s.edgeTarget) return live.at(s.edgeTarget);
  return s.afterInsn ? live.after(s.insn) : live.before(s.insn);
}

bool SiteLiveness::directionClear(const Site& s) { return s.proc && of(*s.proc).directionClear; }

x86::RegSet SiteLiveness::deadRegisters(const Site& s) {
  if (!s.proc) return {};
  PerProcedure& p = of(*s.proc);
  if (!p.registers) {
    p.registers = std::make_unique<analysis::RegisterLiveness>(engine_.program(), *s.proc, engine_.decoder());
    p.reserved.assign(s.proc->insns.size(), 0);
    for (const RegisterReservation& r : engine_.reservations())
      if (r.proc == s.proc)
        for (auto [first, count] : r.insns)
          for (uint32_t i = first; i < first + count; ++i) p.reserved[i] |= r.regs.gprs();
  }
  x86::RegSet live = s.edgeTarget ? p.registers->at(s.edgeTarget)
                     : s.afterInsn ? p.registers->after(s.insn)
                                   : p.registers->before(s.insn);
  // A promoted counter's register, in its loop and where it is zeroed or
  // flushed, is the counter's.
  live |= x86::RegSet{p.reserved[s.insn]};
  // An induction variable that a loop's entry or exit reads is the program's.
  using Acc = IncrementRequest::Accumulate;
  for (const IncrementRequest* inc : s.increments) {
    if (inc->accumulate != Acc::None || inc->held) live |= x86::RegSet::gpr(inc->reg);
    if (inc->accumulate == Acc::Mark || inc->accumulate == Acc::Measure) live |= x86::RegSet::gpr(inc->variable);
  }
  return x86::RegSet{uint64_t(uint16_t(~live.gprs()))};
}

void markLiveFlags(const Engine& engine, std::vector<Site>& sites) {
  SiteLiveness liveness(engine);
  for (Site& s : sites) {
    if (!s.proc) continue;
    s.liveFlags = liveness.flags(s);
    s.directionClear = liveness.directionClear(s);
    const bool predicts = std::any_of(s.increments.begin(), s.increments.end(), [](const IncrementRequest* inc) {
      return inc->predict != IncrementRequest::Predict::None && !inc->held;  // a held one has its register
    });
    if (s.stores.empty() && !predicts && !s.threadCheck && !s.unless) continue;
    const x86::RegSet dead = liveness.deadRegisters(s);
    if (s.unless) s.dead = dead;
    if (!s.stores.empty()) s.storeScratch = storeScratch(dead);
    if (predicts) s.predictScratch = predictionScratch(dead);
    if (s.threadCheck) s.checkScratch = predictionScratch(dead);
  }
}

UnlessSaves reserveForUnless(uint8_t liveFlags, x86::RegSet dead, x86::RegSet addressRegs) {
  UnlessSaves r;
  const bool keep = (liveFlags & x86::flag::kStatus) != 0;  // the tests write every status flag
  r.keepArith = liveFlags & (x86::flag::kStatus & ~x86::flag::OF);
  r.keepOverflow = liveFlags & x86::flag::OF;
  dead &= ~addressRegs;
  x86::RegSet taken = addressRegs;
  taken |= x86::RegSet::gpr(4);                    // never %rsp
  if (keep) taken |= x86::RegSet::gpr(0);          // %rax holds the flags
  auto choose = [&] {
    static constexpr unsigned kOrder[] = {0, 1, 2, 6, 7, 8, 9, 10, 11, 3, 5, 12, 13, 14, 15};
    for (int pass = 0; pass < 2; ++pass)           // dead ones first
      for (unsigned hw : kOrder)
        if (!taken.has(hw) && (pass == 1 || dead.has(hw))) {
          taken |= x86::RegSet::gpr(hw);
          if (!dead.has(hw)) r.pushed.push_back(x86::reg64(hw));
          return x86::reg64(hw);
        }
    throw InternalError("no scratch register for an inline test");
  };
  r.address = choose(), r.table = choose(), r.offset = choose();
  if (keep && !dead.has(0)) r.appRax = choose();
  r.redZone = !r.pushed.empty();
  r.below = r.redZone ? 128 + 8 * int32_t(r.pushed.size()) : 0;
  return r;
}

ZydisRegister storeScratch(x86::RegSet dead) {
  // A base register whose (reg) and disp8(reg) forms need no SIB byte: not
  // rsp or r12.  The callee-saved ones last: they are the least often dead.
  static constexpr unsigned kOrder[] = {0, 1, 2, 6, 7, 8, 9, 10, 11, 3, 5, 13, 14, 15};
  for (unsigned hw : kOrder)
    if (dead.has(hw)) return x86::reg64(hw);
  return ZYDIS_REGISTER_NONE;
}

ZydisRegister predictionScratch(x86::RegSet dead) {
  static constexpr unsigned kOrder[] = {1, 2, 6, 7, 8, 9, 10, 11, 3, 5, 12, 13, 14, 15};
  for (unsigned hw : kOrder)
    if (dead.has(hw)) return x86::reg64(hw);
  return ZYDIS_REGISTER_NONE;
}

IncrementSaves reserveForIncrements(uint8_t liveFlags, x86::RegSet addressRegs, size_t tests, bool writesCarry) {
  IncrementSaves r;
  x86::RegSet used = addressRegs;
  for (size_t k = 0; k < tests; ++k) {
    ZydisRegister chosen = ZYDIS_REGISTER_NONE;
    for (unsigned hw = 1; hw < 16 && chosen == ZYDIS_REGISTER_NONE; ++hw)  // never rax (lahf) or rsp
      if (hw != 4 && !used.has(hw)) {
        used |= x86::RegSet::gpr(hw);
        chosen = x86::reg64(hw);
      }
    if (chosen == ZYDIS_REGISTER_NONE) throw InternalError("no scratch register for a counter's address");
    r.scratch.push_back(chosen);
  }
  // A test writes CF too; a bare inc leaves it alone.
  r.keepFlags = uint8_t(r.scratch.empty() && !writesCarry ? liveFlags & ~x86::flag::CF : liveFlags);
  r.keepArith = r.keepFlags & (x86::flag::kStatus & ~x86::flag::OF);
  r.keepOverflow = r.keepFlags & x86::flag::OF;
  r.redZone = r.keepFlags || !r.scratch.empty();
  r.below = (r.redZone ? 128 : 0) + 8 * int32_t(r.scratch.size() + (r.keepFlags ? 1 : 0));
  return r;
}

}  // namespace atomx::instrument
