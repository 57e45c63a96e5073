#include "analysis/FlagsLiveness.h"

#include "analysis/Cfg.h"
#include "x86/Semantics.h"

namespace atomx::analysis {

Transfer<uint8_t> FlagsLiveness::effect(uint32_t index) const {
  const x86::Insn& in = proc_.insns[index];
  // A callee may change every flag, and the ABI lets no flag reach it.
  if (in.flow == x86::Flow::Call || in.flow == x86::Flow::IndirectCall) return {0, kAllStatusFlags};
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  const uint8_t* bytes = program_.image->bytesAt(in.address, in.length);
  if (!bytes || !decoder_.decodeFull(bytes, in.length, insn, ops) || !insn.cpu_flags)
    return {kAllStatusFlags, 0};  // unknown: reads everything, writes nothing
  // Written for sure: set or left undefined (x86/Semantics.h); a flag an
  // instruction may leave alone (rep, a shift by %cl, syscall) stays live.
  const x86::FlagEffect f = x86::describe(insn, ops, in.address).flags;
  return {uint8_t(f.read & kAllStatusFlags), uint8_t(f.alwaysWritten() & kAllStatusFlags)};
}

uint8_t FlagsLiveness::leaving(uint64_t target) const {
  if (program_.pltNames.count(target)) return 0;
  const ir::Procedure* p = program_.procAt(target);
  if (p && p->start == target && p->name.find(".cold") == std::string::npos) return 0;
  return kAllStatusFlags;
}

uint8_t FlagsLiveness::at(uint64_t target) const {
  const int64_t i = proc_.insnIndexAt(target);
  return i >= 0 ? before_[size_t(i)] : leaving(target);
}

FlagsLiveness::FlagsLiveness(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder)
    : program_(program), proc_(proc), decoder_(decoder) {
  std::vector<Transfer<uint8_t>> transfer(proc.insns.size());
  for (uint32_t i = 0; i < proc.insns.size(); ++i) transfer[i] = effect(i);
  // What a block's last instruction leaves live: its successors' needs, and
  // the rule for control leaving the procedure.
  auto liveOut = [&](const ir::Block& b, uint8_t out, bool fallThroughEdge) {
    const x86::Insn& last = proc.insns[b.firstInsn + b.insnCount - 1];
    switch (last.flow) {
      case x86::Flow::Return:
      case x86::Flow::Stop:
        break;
      case x86::Flow::IndirectJump:  // a table's targets are edges; anything else is a tail call
        // A table's target outside the procedure (a case in its .cold part)
        // is an exit as a direct branch there is.
        for (uint64_t target : dispatchTargets(proc, last.address))
          if (!proc.contains(target)) out |= leaving(target);
        break;
      case x86::Flow::Jump:
      case x86::Flow::CondBranch:
        if (!proc.contains(last.target)) out |= leaving(last.target);
        if (last.flow == x86::Flow::CondBranch && !fallThroughEdge) out |= kAllStatusFlags;
        break;
      case x86::Flow::Call:
      case x86::Flow::IndirectCall:
        break;  // the call writes every flag
      case x86::Flow::Sequential:
        if (!fallThroughEdge) out |= kAllStatusFlags;
        break;
    }
    return out;
  };
  before_ = liveBefore(proc, transfer, liveOut);
  // Unreachable code (no block): everything live.
  for (uint8_t& f : before_) f &= kAllStatusFlags;
}

}  // namespace atomx::analysis
