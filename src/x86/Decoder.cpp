#include "x86/Decoder.h"

#include <cstring>

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

namespace {

RawFields fromZydis(const ZydisDecodedInstruction& insn) {
  RawFields r;
  r.length = insn.length;
  r.mnemonic = insn.mnemonic;
  r.opcode = insn.opcode;
  r.mapDefault = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
  r.hasModrm = insn.raw.modrm.offset != 0;  // ModRM never comes first
  r.mod = insn.raw.modrm.mod, r.reg = insn.raw.modrm.reg, r.rm = insn.raw.modrm.rm;
  r.hasSib = insn.raw.sib.offset != 0;
  r.dispSize = insn.raw.disp.size, r.disp = insn.raw.disp.value, r.dispOffset = insn.raw.disp.offset;
  r.relative = (insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && insn.raw.imm[0].is_relative;
  r.rel = insn.raw.imm[0].value.s, r.relOffset = insn.raw.imm[0].offset, r.relSize = insn.raw.imm[0].size;
  return r;
}

int32_t signed32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);  // x86 is little-endian, like the code it decodes
  return v;
}

}  // namespace

// The instructions compilers emit most (moves, lea, arithmetic, compares,
// pushes and pops, branches, calls, returns, nops, movzx/movsx, cmov,
// setcc) with at most an operand-size prefix and a REX prefix, decoded from
// a table; anything else (other prefixes, VEX/EVEX, SSE, rarer opcodes) is
// left to Zydis (false).  Where it answers it answers exactly what Zydis
// does: tests/unit/decoder_test.cpp holds it to Zydis over real programs'
// code and random bytes.
bool Decoder::decodeCommon(const uint8_t* bytes, size_t avail, RawFields& r) {
  using M = ZydisMnemonic;
  static constexpr M kAlu[8] = {ZYDIS_MNEMONIC_ADD, ZYDIS_MNEMONIC_OR,  ZYDIS_MNEMONIC_ADC, ZYDIS_MNEMONIC_SBB,
                                ZYDIS_MNEMONIC_AND, ZYDIS_MNEMONIC_SUB, ZYDIS_MNEMONIC_XOR, ZYDIS_MNEMONIC_CMP};
  static constexpr M kJcc[16] = {ZYDIS_MNEMONIC_JO,  ZYDIS_MNEMONIC_JNO,  ZYDIS_MNEMONIC_JB,  ZYDIS_MNEMONIC_JNB,
                                 ZYDIS_MNEMONIC_JZ,  ZYDIS_MNEMONIC_JNZ,  ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE,
                                 ZYDIS_MNEMONIC_JS,  ZYDIS_MNEMONIC_JNS,  ZYDIS_MNEMONIC_JP,  ZYDIS_MNEMONIC_JNP,
                                 ZYDIS_MNEMONIC_JL,  ZYDIS_MNEMONIC_JNL,  ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNLE};
  static constexpr M kCmov[16] = {
      ZYDIS_MNEMONIC_CMOVO, ZYDIS_MNEMONIC_CMOVNO, ZYDIS_MNEMONIC_CMOVB,  ZYDIS_MNEMONIC_CMOVNB,
      ZYDIS_MNEMONIC_CMOVZ, ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE, ZYDIS_MNEMONIC_CMOVNBE,
      ZYDIS_MNEMONIC_CMOVS, ZYDIS_MNEMONIC_CMOVNS, ZYDIS_MNEMONIC_CMOVP,  ZYDIS_MNEMONIC_CMOVNP,
      ZYDIS_MNEMONIC_CMOVL, ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE, ZYDIS_MNEMONIC_CMOVNLE};
  static constexpr M kSet[16] = {ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB,  ZYDIS_MNEMONIC_SETNB,
                                 ZYDIS_MNEMONIC_SETZ, ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE,
                                 ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_SETP,  ZYDIS_MNEMONIC_SETNP,
                                 ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_SETNLE};
  static constexpr M kShift[8] = {ZYDIS_MNEMONIC_ROL, ZYDIS_MNEMONIC_ROR, ZYDIS_MNEMONIC_RCL,     ZYDIS_MNEMONIC_RCR,
                                  ZYDIS_MNEMONIC_SHL, ZYDIS_MNEMONIC_SHR, ZYDIS_MNEMONIC_INVALID, ZYDIS_MNEMONIC_SAR};
  static constexpr M kGroup3[8] = {ZYDIS_MNEMONIC_TEST, ZYDIS_MNEMONIC_INVALID, ZYDIS_MNEMONIC_NOT, ZYDIS_MNEMONIC_NEG,
                                   ZYDIS_MNEMONIC_MUL,  ZYDIS_MNEMONIC_IMUL,    ZYDIS_MNEMONIC_DIV, ZYDIS_MNEMONIC_IDIV};

  size_t at = 0;
  bool opsize = false;
  uint8_t rex = 0;
  if (at < avail && bytes[at] == 0x66) opsize = true, ++at;
  if (at < avail && (bytes[at] & 0xf0) == 0x40) rex = bytes[at++];
  if (at >= avail) return false;
  const bool rexW = rex & 8;
  const uint8_t op = bytes[at++];
  // Immediate: 0 none, 1, 2, 4, 8 bytes, or 'z' (2 with 66, else 4).
  constexpr int Z = -1;
  int imm = 0;
  bool modrm = false, branch = false, noPrefixes = false;
  M m = ZYDIS_MNEMONIC_INVALID;
  bool map0f = false;
  if (op < 0x40 && (op & 7) < 6) {
    m = kAlu[op >> 3];
    modrm = (op & 7) < 4;
    imm = (op & 7) == 4 ? 1 : (op & 7) == 5 ? Z : 0;
  } else if (op == 0x0f) {
    if (opsize || at >= avail) return false;  // with 66 the map is SSE's
    map0f = true;
    const uint8_t op2 = bytes[at++];
    if (op2 >= 0x80 && op2 <= 0x8f) m = kJcc[op2 & 15], imm = 4, branch = true;
    else if (op2 >= 0x40 && op2 <= 0x4f) m = kCmov[op2 & 15], modrm = true;
    else if (op2 >= 0x90 && op2 <= 0x9f) m = kSet[op2 & 15], modrm = true;
    else if (op2 == 0xb6 || op2 == 0xb7) m = ZYDIS_MNEMONIC_MOVZX, modrm = true;
    else if (op2 == 0xbe || op2 == 0xbf) m = ZYDIS_MNEMONIC_MOVSX, modrm = true;
    else if (op2 == 0xaf) m = ZYDIS_MNEMONIC_IMUL, modrm = true;
    else if (op2 == 0x1f) m = ZYDIS_MNEMONIC_NOP, modrm = true;  // /0 only, checked below
    else if (op2 == 0x0b) m = ZYDIS_MNEMONIC_UD2, noPrefixes = true;
    else return false;
    r.opcode = op2;
  } else if (op >= 0x50 && op <= 0x5f) {
    m = op < 0x58 ? ZYDIS_MNEMONIC_PUSH : ZYDIS_MNEMONIC_POP;
  } else if (op >= 0x70 && op <= 0x7f) {
    m = kJcc[op & 15], imm = 1, branch = true;
  } else if (op >= 0xb0 && op <= 0xb7) {
    m = ZYDIS_MNEMONIC_MOV, imm = 1;
  } else if (op >= 0xb8 && op <= 0xbf) {
    m = ZYDIS_MNEMONIC_MOV, imm = rexW ? 8 : Z;
  } else {
    switch (op) {
      case 0x63: m = ZYDIS_MNEMONIC_MOVSXD, modrm = true; break;
      case 0x68: m = ZYDIS_MNEMONIC_PUSH, imm = Z; break;
      case 0x6a: m = ZYDIS_MNEMONIC_PUSH, imm = 1; break;
      case 0x69: m = ZYDIS_MNEMONIC_IMUL, modrm = true, imm = Z; break;
      case 0x6b: m = ZYDIS_MNEMONIC_IMUL, modrm = true, imm = 1; break;
      case 0x80: case 0x83: modrm = true, imm = 1; break;  // group 1: by ModRM.reg
      case 0x81: modrm = true, imm = Z; break;
      case 0x84: case 0x85: m = ZYDIS_MNEMONIC_TEST, modrm = true; break;
      case 0x86: case 0x87: m = ZYDIS_MNEMONIC_XCHG, modrm = true; break;
      case 0x88: case 0x89: case 0x8a: case 0x8b: m = ZYDIS_MNEMONIC_MOV, modrm = true; break;
      case 0x8d: m = ZYDIS_MNEMONIC_LEA, modrm = true; break;
      case 0x90: if (rex) return false; m = ZYDIS_MNEMONIC_NOP; break;  // REX.B makes it xchg
      case 0xa8: m = ZYDIS_MNEMONIC_TEST, imm = 1; break;
      case 0xa9: m = ZYDIS_MNEMONIC_TEST, imm = Z; break;
      case 0xc0: case 0xd0: case 0xd2: modrm = true, imm = op == 0xc0 ? 1 : 0; break;  // group 2
      case 0xc1: case 0xd1: case 0xd3: modrm = true, imm = op == 0xc1 ? 1 : 0; break;
      case 0xc3: m = ZYDIS_MNEMONIC_RET, noPrefixes = true; break;
      case 0xc6: m = ZYDIS_MNEMONIC_MOV, modrm = true, imm = 1; break;  // /0 only
      case 0xc7: m = ZYDIS_MNEMONIC_MOV, modrm = true, imm = Z; break;  // /0 only
      case 0xcc: m = ZYDIS_MNEMONIC_INT3, noPrefixes = true; break;
      case 0xe8: m = ZYDIS_MNEMONIC_CALL, imm = 4, branch = true; break;
      case 0xe9: m = ZYDIS_MNEMONIC_JMP, imm = 4, branch = true; break;
      case 0xeb: m = ZYDIS_MNEMONIC_JMP, imm = 1, branch = true; break;
      case 0xf6: case 0xf7: modrm = true; break;  // group 3: by ModRM.reg
      case 0xfe: case 0xff: modrm = true; break;  // groups 4 and 5
      default: return false;
    }
  }
  if (!map0f) r.opcode = op;
  if ((branch || noPrefixes) && (opsize || rex)) return false;  // operand size of a branch: Zydis's business
  r.mapDefault = !map0f;
  if (modrm) {
    if (at >= avail) return false;
    const uint8_t b = bytes[at];
    r.hasModrm = true;
    r.mod = b >> 6, r.reg = (b >> 3) & 7, r.rm = b & 7;
    ++at;
    if (!map0f) {
      switch (op) {
        case 0x80: case 0x81: case 0x83: m = kAlu[r.reg]; break;
        case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3: m = kShift[r.reg]; break;
        case 0xc6: case 0xc7: if (r.reg != 0) return false; break;
        case 0xf6: case 0xf7:
          m = kGroup3[r.reg];
          if (r.reg == 0) imm = op == 0xf6 ? 1 : Z;
          break;
        case 0xfe: m = r.reg == 0 ? ZYDIS_MNEMONIC_INC : r.reg == 1 ? ZYDIS_MNEMONIC_DEC : ZYDIS_MNEMONIC_INVALID; break;
        case 0xff:
          if (r.reg == 2 || r.reg == 4) {
            if (opsize) return false;  // a 16-bit target: Zydis's business
            m = r.reg == 2 ? ZYDIS_MNEMONIC_CALL : ZYDIS_MNEMONIC_JMP;
          } else {
            m = r.reg == 0 ? ZYDIS_MNEMONIC_INC : r.reg == 1 ? ZYDIS_MNEMONIC_DEC : ZYDIS_MNEMONIC_INVALID;
          }
          break;
        case 0x8d: if (r.mod == 3) return false; break;
        default: break;
      }
    } else if (r.opcode == 0x1f && r.reg != 0) {
      return false;
    }
    if (m == ZYDIS_MNEMONIC_INVALID) return false;
    if (r.mod != 3 && r.rm == 4) {
      if (at >= avail) return false;
      r.hasSib = true;
      const uint8_t base = bytes[at++] & 7;
      if (r.mod == 0 && base == 5) r.dispSize = 32;
    }
    if (r.mod == 1) r.dispSize = 8;
    else if (r.mod == 2 || (r.mod == 0 && r.rm == 5)) r.dispSize = 32;
    if (r.dispSize) {
      const size_t n = r.dispSize / 8;
      if (at + n > avail) return false;
      r.dispOffset = uint8_t(at);
      r.disp = n == 1 ? int8_t(bytes[at]) : signed32(bytes + at);
      at += n;
    }
  }
  if (imm == Z) imm = opsize && !rexW ? 2 : 4;  // REX.W wins over 66
  if (imm) {
    if (at + size_t(imm) > avail) return false;
    if (branch) {
      r.relative = true;
      r.relOffset = uint8_t(at);
      r.relSize = uint8_t(imm * 8);
      r.rel = imm == 1 ? int8_t(bytes[at]) : signed32(bytes + at);
    }
    at += size_t(imm);
  }
  if (at > 15) return false;
  r.length = uint8_t(at);
  r.mnemonic = m;
  return true;
}

bool Decoder::decode(const uint8_t* bytes, size_t avail, uint64_t address, Insn& out) const {
  // No operand decoding: everything the rewriter needs is in the raw fields.
  // Branch displacements are relative immediates, and in 64-bit mode ModRM
  // mod=00 rm=101 always means RIP + disp32.
  RawFields raw;
  if (!useCommon_ || !decodeCommon(bytes, avail, raw)) {
    ZydisDecodedInstruction insn;
    ZydisDecoderContext context;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&fastDecoder_, &context, bytes, avail, &insn))) return false;
    raw = fromZydis(insn);
  }

  out = Insn{};
  out.address = address;
  out.length = raw.length;
  out.mnemonic = static_cast<uint16_t>(raw.mnemonic);

  const uint64_t end = address + raw.length;
  if (raw.hasModrm && raw.mod == 0 && raw.rm == 5 && raw.dispSize == 32 && !raw.hasSib) {
    out.target = end + raw.disp;
    out.dispOffset = raw.dispOffset;
  }
  if (raw.relative) {
    out.target = end + raw.rel;
    out.relOffset = raw.relOffset;
    out.relSize = raw.relSize / 8;
  }
  const bool direct = out.relOffset != 0;
  const ZydisMnemonic m = raw.mnemonic;
  // FF /3 and FF /5 are far call/jmp through memory: never in movable code.
  const bool farIndirect = raw.opcode == 0xff && raw.mapDefault && (raw.reg == 3 || raw.reg == 5);

  if (isConditionalJump(m) || isLoopFamily(m)) {
    out.flow = Flow::CondBranch;
    out.condCode = isLoopFamily(m) ? 0xff : (raw.opcode & 0x0f);
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
