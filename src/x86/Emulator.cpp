#include "x86/Emulator.h"

namespace atomx::x86 {

namespace {

// A general register operand: its hardware number and width in bytes;
// false for anything else, high-byte registers (ah ch dh bh) included.
bool gprOperand(const ZydisDecodedOperand& op, uint8_t& hw, uint8_t& bytes) {
  if (op.type != ZYDIS_OPERAND_TYPE_REGISTER) return false;
  const ZydisRegister r = op.reg.value;
  if (r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_CH || r == ZYDIS_REGISTER_DH || r == ZYDIS_REGISTER_BH)
    return false;
  const ZydisRegisterClass c = ZydisRegisterGetClass(r);
  if (c != ZYDIS_REGCLASS_GPR8 && c != ZYDIS_REGCLASS_GPR16 && c != ZYDIS_REGCLASS_GPR32 && c != ZYDIS_REGCLASS_GPR64)
    return false;
  const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
  hw = uint8_t(full - ZYDIS_REGISTER_RAX);
  bytes = uint8_t(ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, r) / 8);
  return true;
}

// lea's base or index register (none: -1); false for one that is not general.
bool addressRegister(ZydisRegister reg, int8_t& out) {
  if (reg == ZYDIS_REGISTER_NONE) return true;
  ZydisDecodedOperand r{};
  r.type = ZYDIS_OPERAND_TYPE_REGISTER;
  r.reg.value = reg;
  uint8_t hw = 0, w = 0;
  if (!gprOperand(r, hw, w)) return false;
  out = int8_t(hw);
  return true;
}

bool immediate(const ZydisDecodedOperand& op, int64_t& v) {
  if (op.type != ZYDIS_OPERAND_TYPE_IMMEDIATE) return false;
  v = op.imm.is_signed ? op.imm.value.s : int64_t(op.imm.value.u);
  return true;
}

// A register destination and a register or immediate source (mov, add ...).
EmuOp binary(EmuKind kind, const ZydisDecodedOperand* ops) {
  EmuOp op;
  uint8_t width = 0, srcHw = 0, srcWidth = 0;
  if (!gprOperand(ops[0], op.dst, width)) return {};
  op.width = width;
  if (gprOperand(ops[1], srcHw, srcWidth)) {
    if (srcWidth != width) return {};
    op.src = int8_t(srcHw);
  } else if (!immediate(ops[1], op.imm)) {
    return {};
  }
  op.kind = kind;
  return op;
}

EmuOp unary(EmuKind kind, const ZydisDecodedOperand* ops) {
  EmuOp op;
  if (!gprOperand(ops[0], op.dst, op.width)) return {};
  op.kind = kind;
  return op;
}

EmuOp stack(int64_t step) {
  EmuOp op;
  op.kind = EmuKind::StackAdd;
  op.dst = 4;
  op.imm = step;
  return op;
}

}  // namespace

EmuOp compileEmu(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, uint64_t address) {
  const unsigned n = insn.operand_count_visible;
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_MOV: return n == 2 ? binary(EmuKind::Mov, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_ADD: return n == 2 ? binary(EmuKind::Add, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_SUB: return n == 2 ? binary(EmuKind::Sub, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_AND: return n == 2 ? binary(EmuKind::And, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_OR: return n == 2 ? binary(EmuKind::Or, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_XOR: return n == 2 ? binary(EmuKind::Xor, ops) : EmuOp{};
    case ZYDIS_MNEMONIC_NEG: return unary(EmuKind::Neg, ops);
    case ZYDIS_MNEMONIC_NOT: return unary(EmuKind::Not, ops);
    case ZYDIS_MNEMONIC_INC: return unary(EmuKind::Inc, ops);
    case ZYDIS_MNEMONIC_DEC: return unary(EmuKind::Dec, ops);
    case ZYDIS_MNEMONIC_SHL: case ZYDIS_MNEMONIC_SHR: case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL: case ZYDIS_MNEMONIC_ROR: {
      EmuOp op = unary(insn.mnemonic == ZYDIS_MNEMONIC_SHL   ? EmuKind::Shl
                       : insn.mnemonic == ZYDIS_MNEMONIC_SHR ? EmuKind::Shr
                       : insn.mnemonic == ZYDIS_MNEMONIC_SAR ? EmuKind::Sar
                       : insn.mnemonic == ZYDIS_MNEMONIC_ROL ? EmuKind::Rol
                                                             : EmuKind::Ror,
                       ops);
      if (op.kind == EmuKind::None || insn.operand_count < 2) return {};
      if (ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].reg.value == ZYDIS_REGISTER_CL) {
        op.src = 1;  // by %cl: the count is %rcx's low bits
        return op;
      }
      return immediate(ops[1], op.imm) ? op : EmuOp{};
    }
    case ZYDIS_MNEMONIC_IMUL: {
      if (n == 3) {
        EmuOp op = binary(EmuKind::ImulImm, ops);  // dst and src
        if (op.kind == EmuKind::None || op.src < 0 || !immediate(ops[2], op.imm)) return {};
        return op;
      }
      if (n == 2) {
        EmuOp op = binary(EmuKind::Imul, ops);
        return op.src >= 0 ? op : EmuOp{};
      }
      return {};  // one operand: rdx:rax
    }
    case ZYDIS_MNEMONIC_MOVSX: case ZYDIS_MNEMONIC_MOVSXD: case ZYDIS_MNEMONIC_MOVZX: {
      EmuOp op;
      uint8_t srcHw = 0;
      if (n != 2 || !gprOperand(ops[0], op.dst, op.width) || !gprOperand(ops[1], srcHw, op.srcWidth)) return {};
      op.src = int8_t(srcHw);
      op.kind = insn.mnemonic == ZYDIS_MNEMONIC_MOVZX ? EmuKind::Movzx : EmuKind::Movsx;
      return op;
    }
    case ZYDIS_MNEMONIC_CBW: case ZYDIS_MNEMONIC_CWDE: case ZYDIS_MNEMONIC_CDQE: {
      EmuOp op;
      op.kind = EmuKind::Movsx;
      op.dst = 0;
      op.src = 0;
      op.width = uint8_t(insn.operand_width / 8);
      op.srcWidth = uint8_t(op.width / 2);
      return op;
    }
    case ZYDIS_MNEMONIC_CWD: case ZYDIS_MNEMONIC_CDQ: case ZYDIS_MNEMONIC_CQO: {
      EmuOp op;
      op.kind = EmuKind::SignFill;
      op.dst = 2;
      op.width = uint8_t(insn.operand_width / 8);
      return op;
    }
    case ZYDIS_MNEMONIC_XCHG: {
      EmuOp op = n == 2 ? binary(EmuKind::Xchg, ops) : EmuOp{};
      return op.src >= 0 ? op : EmuOp{};  // with memory: a locked load and store
    }
    case ZYDIS_MNEMONIC_LEA: {
      EmuOp op;
      if (n != 2 || !gprOperand(ops[0], op.dst, op.width) || ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY) return {};
      const auto& m = ops[1].mem;
      if (m.base == ZYDIS_REGISTER_RIP || m.base == ZYDIS_REGISTER_EIP) {
        ZyanU64 target = 0;
        if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&insn, &ops[1], address, &target))) return {};
        op.kind = EmuKind::MovAddress;
        op.imm = int64_t(target);
        return op;
      }
      if (!addressRegister(m.base, op.base) || !addressRegister(m.index, op.index)) return {};
      if (op.index >= 0) op.scale = uint8_t(m.scale ? m.scale : 1);
      op.imm = m.disp.value;
      op.addrWidth = uint8_t(insn.address_width / 8);
      op.kind = EmuKind::Lea;
      return op;
    }
    case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_PUSHFQ: return stack(-int64_t(insn.operand_width / 8));
    case ZYDIS_MNEMONIC_POPFQ: return stack(int64_t(insn.operand_width / 8));
    case ZYDIS_MNEMONIC_POP: {
      // pop %rsp loads %rsp itself: nothing to compute.
      uint8_t hw = 0, w = 0;
      if (gprOperand(ops[0], hw, w) && hw == 4) return {};
      return stack(int64_t(insn.operand_width / 8));
    }
    case ZYDIS_MNEMONIC_CALL: return stack(0);
    case ZYDIS_MNEMONIC_RET: {
      int64_t extra = 0;
      if (n >= 1) immediate(ops[0], extra);
      return stack(8 + extra);
    }
    case ZYDIS_MNEMONIC_LEAVE: {
      EmuOp op;
      op.kind = EmuKind::Leave;
      op.dst = 4;
      return op;
    }
    default: return {};
  }
}

EmuOp compileSlotEmu(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  if (insn.mnemonic != ZYDIS_MNEMONIC_MOV || insn.operand_count_visible != 2) return {};
  EmuOp op;
  uint8_t hw = 0, width = 0;
  if (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {  // a store
    width = uint8_t(ops[0].size / 8);
    if (gprOperand(ops[1], hw, width)) {
      op.src = int8_t(hw);
    } else if (!immediate(ops[1], op.imm)) {
      return {};
    }
    op.kind = EmuKind::SlotStore;
  } else if (ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && gprOperand(ops[0], op.dst, width)) {  // a load
    if (ops[1].size / 8 != width) return {};
    op.kind = EmuKind::SlotLoad;
  } else {
    return {};
  }
  if (width != 4 && width != 8) return {};
  op.width = width;
  return op;
}

FlagOp compileFlags(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  FlagKind kind;
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_CMP: case ZYDIS_MNEMONIC_SUB: kind = FlagKind::Sub; break;
    case ZYDIS_MNEMONIC_TEST: case ZYDIS_MNEMONIC_AND: kind = FlagKind::And; break;
    case ZYDIS_MNEMONIC_ADD: kind = FlagKind::Add; break;
    case ZYDIS_MNEMONIC_INC: kind = FlagKind::Inc; break;
    case ZYDIS_MNEMONIC_DEC: kind = FlagKind::Dec; break;
    default: return {};
  }
  if (insn.attributes & ZYDIS_ATTRIB_HAS_LOCK) return {};
  FlagOp op;
  uint8_t hw = 0, width = 0;
  if (!gprOperand(ops[0], hw, width)) return {};
  op.a = hw;
  op.width = width;
  if (kind == FlagKind::Inc || kind == FlagKind::Dec) {
    if (insn.operand_count_visible != 1) return {};
  } else {
    if (insn.operand_count_visible != 2) return {};
    uint8_t srcHw = 0, srcWidth = 0;
    if (gprOperand(ops[1], srcHw, srcWidth)) {
      if (srcWidth != width) return {};
      op.b = int8_t(srcHw);
    } else if (!immediate(ops[1], op.imm)) {
      return {};
    }
  }
  op.kind = kind;
  return op;
}

bool emulable(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands, const Semantics& s,
              uint64_t address, RegSet outputsNeeded) {
  const uint16_t needed = uint16_t(outputsNeeded.gprs() & s.written.gprs());
  return (needed & ~compileEmu(insn, operands, address).outputs()) == 0;
}

}  // namespace atomx::x86
