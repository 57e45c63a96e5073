#include "analysis/FlagsLiveness.h"

namespace atomx::analysis {

namespace {

// Zydis' flag bits (EFLAGS positions) as our 6-bit mask.
uint8_t statusFlags(uint32_t zydis) {
  uint8_t m = 0;
  if (zydis & ZYDIS_CPUFLAG_CF) m |= 1;
  if (zydis & ZYDIS_CPUFLAG_PF) m |= 2;
  if (zydis & ZYDIS_CPUFLAG_AF) m |= 4;
  if (zydis & ZYDIS_CPUFLAG_ZF) m |= 8;
  if (zydis & ZYDIS_CPUFLAG_SF) m |= 16;
  if (zydis & ZYDIS_CPUFLAG_OF) m |= 32;
  return m;
}

bool isShiftOrRotate(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_SHL: case ZYDIS_MNEMONIC_SHR: case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL: case ZYDIS_MNEMONIC_ROR: case ZYDIS_MNEMONIC_RCL: case ZYDIS_MNEMONIC_RCR:
    case ZYDIS_MNEMONIC_SHLD: case ZYDIS_MNEMONIC_SHRD: return true;
    default: return false;
  }
}

// A shift or rotate changes no flag when its (masked) count is 0: it
// writes the flags for sure only with a non-zero immediate count.
bool shiftCountNonZero(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  const unsigned mask = insn.operand_width == 64 ? 0x3f : 0x1f;
  for (int i = insn.operand_count - 1; i >= 0; --i) {
    if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) return (ops[i].imm.value.u & mask) != 0;
    if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[i].reg.value == ZYDIS_REGISTER_CL) return false;
  }
  return false;
}

}  // namespace

FlagsLiveness::Effect FlagsLiveness::effect(uint32_t index) const {
  const x86::Insn& in = proc_.insns[index];
  // A callee may change every flag, and the ABI lets no flag reach it.
  if (in.flow == x86::Flow::Call || in.flow == x86::Flow::IndirectCall) return {0, kAllStatusFlags};
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  const uint8_t* bytes = program_.image->bytesAt(in.address, in.length);
  if (!bytes || !decoder_.decodeFull(bytes, in.length, insn, ops) || !insn.cpu_flags)
    return {kAllStatusFlags, 0};  // unknown: reads everything, writes nothing
  Effect e;
  e.reads = statusFlags(insn.cpu_flags->tested);
  e.writes = statusFlags(insn.cpu_flags->modified | insn.cpu_flags->set_0 | insn.cpu_flags->set_1 |
                         insn.cpu_flags->undefined);
  const bool repeated = insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE);
  // syscall: the kernel restores RFLAGS on the way back (sysret from %r11).
  if (repeated || insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL ||
      (isShiftOrRotate(insn.mnemonic) && !shiftCountNonZero(insn, ops)))
    e.writes = 0;
  return e;
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
    : program_(program), proc_(proc), decoder_(decoder), before_(proc.insns.size(), kAllStatusFlags) {
  std::vector<Effect> effects(proc.insns.size());
  for (uint32_t i = 0; i < proc.insns.size(); ++i) effects[i] = effect(i);
  const size_t n = proc.blocks.size();
  std::vector<uint8_t> liveIn(n, 0);
  // What a block's last instruction leaves live: its successors' needs, and
  // the rule for control leaving the procedure.
  auto liveOut = [&](const ir::Block& b) {
    const x86::Insn& last = proc.insns[b.firstInsn + b.insnCount - 1];
    uint8_t out = 0;
    bool fallThroughEdge = false;
    for (const ir::Edge& e : b.succs) {
      out |= liveIn[e.to];
      fallThroughEdge |= e.kind == ir::EdgeKind::FallThrough;
    }
    switch (last.flow) {
      case x86::Flow::Return:
      case x86::Flow::Stop:
      case x86::Flow::IndirectJump:  // a table's targets are edges; anything else is a tail call
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
  // Backward data flow to a fixed point; blocks in reverse address order
  // converge in a few rounds.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = n; k-- > 0;) {
      const ir::Block& b = proc.blocks[k];
      uint8_t live = liveOut(b);
      for (uint32_t i = b.firstInsn + b.insnCount; i-- > b.firstInsn;)
        live = uint8_t((live & ~effects[i].writes) | effects[i].reads);
      if (live != liveIn[k]) liveIn[k] = live, changed = true;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const ir::Block& b = proc.blocks[k];
    uint8_t live = liveOut(b);
    for (uint32_t i = b.firstInsn + b.insnCount; i-- > b.firstInsn;) {
      live = uint8_t((live & ~effects[i].writes) | effects[i].reads);
      before_[i] = live;
    }
  }
}

}  // namespace atomx::analysis
