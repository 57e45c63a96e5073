#include "x86/Decoder.h"

namespace atomx::x86 {

const char* flowName(Flow flow) {
  switch (flow) {
    case Flow::Sequential: return "seq";
    case Flow::CondBranch: return "cond";
    case Flow::Jump: return "jump";
    case Flow::IndirectJump: return "ijump";
    case Flow::Call: return "call";
    case Flow::IndirectCall: return "icall";
    case Flow::Return: return "ret";
    case Flow::Stop: return "stop";
  }
  return "?";
}

Decoder::Decoder() {
  ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  ZydisFormatterInit(&formatter_, ZYDIS_FORMATTER_STYLE_ATT);
}

bool Decoder::decodeFull(const uint8_t* bytes, size_t avail, ZydisDecodedInstruction& insn,
                         ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT]) const {
  return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder_, bytes, avail, &insn, operands));
}

bool Decoder::decode(const uint8_t* bytes, size_t avail, uint64_t address, Insn& out) const {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!decodeFull(bytes, avail, insn, ops)) return false;

  out = Insn{};
  out.address = address;
  out.length = insn.length;
  out.mnemonic = static_cast<uint16_t>(insn.mnemonic);

  // Far transfers (ljmp/lcall/lret with a selector) never appear in user code
  // the rewriter can move; report them as invalid so their procedure stays put.
  if (insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR || insn.meta.category == ZYDIS_CATEGORY_CALL) {
    for (unsigned i = 0; i < insn.operand_count_visible; ++i)
      if (ops[i].type == ZYDIS_OPERAND_TYPE_POINTER) return false;
    if (insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) return false;
  }

  const bool relative = insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE;
  for (unsigned i = 0; i < insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.base == ZYDIS_REGISTER_RIP) {
      ZyanU64 abs = 0;
      ZydisCalcAbsoluteAddress(&insn, &op, address, &abs);
      out.target = abs;
      out.dispOffset = insn.raw.disp.offset;
    }
    if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative && relative) {
      ZyanU64 abs = 0;
      ZydisCalcAbsoluteAddress(&insn, &op, address, &abs);
      out.target = abs;
      out.relOffset = insn.raw.imm[0].offset;
      out.relSize = insn.raw.imm[0].size / 8;
    }
  }

  const bool direct = out.relOffset != 0;
  switch (insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
      out.flow = Flow::CondBranch;
      if (insn.mnemonic == ZYDIS_MNEMONIC_LOOP || insn.mnemonic == ZYDIS_MNEMONIC_LOOPE ||
          insn.mnemonic == ZYDIS_MNEMONIC_LOOPNE || insn.mnemonic == ZYDIS_MNEMONIC_JRCXZ ||
          insn.mnemonic == ZYDIS_MNEMONIC_JECXZ || insn.mnemonic == ZYDIS_MNEMONIC_JCXZ)
        out.condCode = 0xff;
      else
        out.condCode = insn.opcode & 0x0f;
      if (!direct) return false;
      break;
    case ZYDIS_CATEGORY_UNCOND_BR:
      out.flow = direct ? Flow::Jump : Flow::IndirectJump;
      break;
    case ZYDIS_CATEGORY_CALL:
      out.flow = direct ? Flow::Call : Flow::IndirectCall;
      break;
    case ZYDIS_CATEGORY_RET:
      out.flow = Flow::Return;
      break;
    default:
      if (insn.mnemonic == ZYDIS_MNEMONIC_UD0 || insn.mnemonic == ZYDIS_MNEMONIC_UD1 ||
          insn.mnemonic == ZYDIS_MNEMONIC_UD2 || insn.mnemonic == ZYDIS_MNEMONIC_HLT)
        out.flow = Flow::Stop;
      else
        out.flow = Flow::Sequential;
  }
  // XBEGIN has a relative abort target; moving it is supported like a jcc
  // would be, but it is rare enough that we refuse it for now.
  if (direct && out.flow == Flow::Sequential) return false;
  return true;
}

std::string Decoder::format(const uint8_t* bytes, size_t avail, uint64_t address) const {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!decodeFull(bytes, avail, insn, ops)) return "(bad)";
  char buf[256];
  if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&formatter_, &insn, ops, insn.operand_count_visible, buf,
                                                    sizeof buf, address, nullptr)))
    return "(unformattable)";
  return buf;
}

}  // namespace atomx::x86
