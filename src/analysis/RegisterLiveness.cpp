#include "analysis/RegisterLiveness.h"

#include "analysis/Cfg.h"
#include "analysis/Liveness.h"

namespace atomx::analysis {

namespace {

// rdi rsi rdx rcx r8 r9, rax (the number of vector arguments of a varargs
// call), r10 (a static chain), and rsp.
constexpr uint16_t kCallReads = (1u << 7) | (1u << 6) | (1u << 2) | (1u << 1) | (1u << 8) | (1u << 9) | (1u << 0) |
                                (1u << 10) | (1u << 4);
// The caller-saved registers that return no value: rcx rsi rdi r8-r11.
constexpr uint16_t kCallerSavedScratch = (1u << 1) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10) |
                                         (1u << 11);

}  // namespace

RegisterLiveness::RegisterLiveness(const ir::Program& program, const ir::Procedure& proc,
                                   const x86::Decoder& decoder)
    : proc_(proc) {
  std::vector<Transfer<uint16_t>> transfer(proc.insns.size());
  touched_.assign(proc.insns.size(), kAllGprs);
  written_.assign(proc.insns.size(), kAllGprs);
  bool hasLandingPads = false;
  for (const ir::Block& b : proc.blocks) hasLandingPads |= b.isLandingPad;
  uint16_t clobbered = 0;  // every general register some instruction writes, in part or whole
  for (uint32_t i = 0; i < proc.insns.size(); ++i) {
    const x86::Insn& in = proc.insns[i];
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const uint8_t* bytes = program.image->bytesAt(in.address, in.length);
    if (!bytes || !decoder.decodeFull(bytes, in.length, insn, ops)) {
      transfer[i] = {kAllGprs, 0};  // unknown: reads everything, overwrites nothing
      continue;
    }
    const x86::Semantics s = x86::describe(insn, ops, in.address);
    transfer[i] = {s.dependsOn.gprs(), s.killed.gprs()};
    clobbered |= s.written.gprs();
    touched_[i] = uint16_t(s.read.gprs() | s.written.gprs());
    written_[i] = s.written.gprs();
    if (s.stepReg >= 0) {
      if (steps_.empty()) steps_.resize(proc.insns.size());
      steps_[i] = {s.stepReg, s.stepBy};
    }
    if (in.flow == x86::Flow::Call || in.flow == x86::Flow::IndirectCall) {
      // A call that throws lands on a landing pad with the callee-saved
      // registers as they were at the call: in a procedure that has landing
      // pads, every call keeps every register live.
      transfer[i].reads |= hasLandingPads ? kAllGprs : kCallReads;
      transfer[i].kills = 0;  // the callee may give back what it was given (-fipa-ra; see the header)
    }
  }
  // What a block's last instruction leaves live: its successors' needs; and
  // everything where control leaves the procedure (the CFG's edges to the
  // virtual exit: returns, tail calls, calls that never return, stops,
  // indirect jumps no table explains).
  // At a return, a caller-saved register that returns no value and that
  // the procedure writes somewhere is dead: no caller keeps a value there
  // across the call (-fipa-ra counts every register the callee writes).
  const uint16_t liveAtReturn = kAllGprs & ~(clobbered & kCallerSavedScratch);
  auto liveOut = [&](const ir::Block& b, uint16_t out, bool fallThroughEdge) {
    for (const ir::OutEdge& o : b.outs)
      if (ir::leadsToExit(o.kind)) return o.kind == ir::EdgeKind::Return && b.outs.size() == 1 ? liveAtReturn : kAllGprs;
    const x86::Insn& last = proc.insns[b.firstInsn + b.insnCount - 1];
    const bool fallsThrough = last.flow != x86::Flow::Jump && last.flow != x86::Flow::IndirectJump &&
                              last.flow != x86::Flow::Return && last.flow != x86::Flow::Stop;
    if (fallsThrough && !fallThroughEdge) return kAllGprs;  // should not happen: the CFG gives an out edge
    if (last.flow == x86::Flow::IndirectJump) {
      if (b.succs.empty()) return kAllGprs;
      for (uint64_t target : dispatchTargets(proc, last.address))  // a case in the .cold part: control leaves
        if (!proc.contains(target)) return kAllGprs;
    }
    return out;
  };
  before_ = liveBefore(proc, transfer, liveOut);
}

x86::RegSet RegisterLiveness::at(uint64_t target) const {
  const int64_t i = proc_.insnIndexAt(target);
  return x86::RegSet{i >= 0 ? before_[size_t(i)] : kAllGprs};
}

}  // namespace atomx::analysis
