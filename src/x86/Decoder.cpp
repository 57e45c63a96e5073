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
  // decode() needs only lengths, mnemonics and raw fields: minimal mode is
  // several times faster.  decodeFull()/format() use a complete decoder.
  fastDecoder_ = decoder_;
  ZydisDecoderEnableMode(&fastDecoder_, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
  ZydisFormatterInit(&formatter_, ZYDIS_FORMATTER_STYLE_ATT);
}

bool Decoder::decodeFull(const uint8_t* bytes, size_t avail, ZydisDecodedInstruction& insn,
                         ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT]) const {
  return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder_, bytes, avail, &insn, operands));
}

namespace {

bool isConditionalJump(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JL: case ZYDIS_MNEMONIC_JLE:
    case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_JNLE:
    case ZYDIS_MNEMONIC_JNO: case ZYDIS_MNEMONIC_JNP: case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ:
    case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JS: case ZYDIS_MNEMONIC_JZ:
      return true;
    default:
      return false;
  }
}

bool isLoopFamily(ZydisMnemonic m) {
  return m == ZYDIS_MNEMONIC_LOOP || m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE ||
         m == ZYDIS_MNEMONIC_JRCXZ || m == ZYDIS_MNEMONIC_JECXZ || m == ZYDIS_MNEMONIC_JCXZ;
}

}  // namespace

bool Decoder::decode(const uint8_t* bytes, size_t avail, uint64_t address, Insn& out) const {
  // No operand decoding: everything the rewriter needs is in the raw fields.
  // Branch displacements are relative immediates, and in 64-bit mode ModRM
  // mod=00 rm=101 always means RIP + disp32.
  ZydisDecodedInstruction insn;
  ZydisDecoderContext context;
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&fastDecoder_, &context, bytes, avail, &insn))) return false;

  out = Insn{};
  out.address = address;
  out.length = insn.length;
  out.mnemonic = static_cast<uint16_t>(insn.mnemonic);

  const uint64_t end = address + insn.length;
  const bool hasModrm = insn.raw.modrm.offset != 0;  // ModRM never comes first
  if (hasModrm && insn.raw.modrm.mod == 0 && insn.raw.modrm.rm == 5 && insn.raw.disp.size == 32 &&
      insn.raw.sib.offset == 0) {
    out.target = end + insn.raw.disp.value;
    out.dispOffset = insn.raw.disp.offset;
  }
  if ((insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && insn.raw.imm[0].is_relative) {
    out.target = end + insn.raw.imm[0].value.s;
    out.relOffset = insn.raw.imm[0].offset;
    out.relSize = insn.raw.imm[0].size / 8;
  }
  const bool direct = out.relOffset != 0;
  const ZydisMnemonic m = insn.mnemonic;
  // FF /3 and FF /5 are far call/jmp through memory: never in movable code.
  const bool farIndirect = insn.opcode == 0xff && insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
                           (insn.raw.modrm.reg == 3 || insn.raw.modrm.reg == 5);

  if (isConditionalJump(m) || isLoopFamily(m)) {
    out.flow = Flow::CondBranch;
    out.condCode = isLoopFamily(m) ? 0xff : (insn.opcode & 0x0f);
    return direct;
  }
  switch (m) {
    case ZYDIS_MNEMONIC_JMP:
      if (farIndirect) return false;
      out.flow = direct ? Flow::Jump : Flow::IndirectJump;
      return true;
    case ZYDIS_MNEMONIC_CALL:
      if (farIndirect) return false;
      out.flow = direct ? Flow::Call : Flow::IndirectCall;
      return true;
    case ZYDIS_MNEMONIC_RET:
      out.flow = Flow::Return;
      return true;
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_HLT:
    case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
      out.flow = Flow::Stop;
      return !direct;
    default:
      out.flow = Flow::Sequential;
      // XBEGIN has a relative abort target; it is rare enough that we refuse it.
      return !direct;
  }
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
