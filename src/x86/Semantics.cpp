#include "x86/Semantics.h"

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::x86 {

RegSet RegSet::of(ZydisRegister r) {
  if (r == ZYDIS_REGISTER_NONE) return {};
  const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
  if (full >= ZYDIS_REGISTER_RAX && full <= ZYDIS_REGISTER_R15) return gpr(unsigned(full - ZYDIS_REGISTER_RAX));
  if (full >= ZYDIS_REGISTER_ZMM0 && full <= ZYDIS_REGISTER_ZMM31) return vector(unsigned(full - ZYDIS_REGISTER_ZMM0));
  return {};
}

bool Semantics::loads() const {
  for (unsigned k = 0; k < memCount; ++k)
    if (mem[k].read) return true;
  return false;
}

bool Semantics::stores() const {
  for (unsigned k = 0; k < memCount; ++k)
    if (mem[k].write) return true;
  return false;
}

namespace {

// Zydis' flag bits (EFLAGS positions) as flag:: bits.
uint8_t flagBits(uint32_t zydis) {
  uint8_t m = 0;
  if (zydis & ZYDIS_CPUFLAG_CF) m |= flag::CF;
  if (zydis & ZYDIS_CPUFLAG_PF) m |= flag::PF;
  if (zydis & ZYDIS_CPUFLAG_AF) m |= flag::AF;
  if (zydis & ZYDIS_CPUFLAG_ZF) m |= flag::ZF;
  if (zydis & ZYDIS_CPUFLAG_SF) m |= flag::SF;
  if (zydis & ZYDIS_CPUFLAG_OF) m |= flag::OF;
  if (zydis & ZYDIS_CPUFLAG_DF) m |= flag::DF;
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

bool isRepeated(const ZydisDecodedInstruction& insn) {
  return insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE);
}

FlagEffect flagEffect(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops) {
  FlagEffect e;
  const ZydisAccessedFlags* f = insn.cpu_flags;
  if (!f) return e;
  e.read = flagBits(f->tested);
  e.set = flagBits(f->modified | f->set_0 | f->set_1);
  e.undefined = uint8_t(flagBits(f->undefined) & ~e.set);
  const bool repeated = isRepeated(insn);
  // syscall: the kernel restores RFLAGS on the way back (sysret from %r11).
  if (repeated || insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL ||
      (isShiftOrRotate(insn.mnemonic) && !shiftCountNonZero(insn, ops))) {
    e.maybe = e.set | e.undefined;
    e.set = e.undefined = 0;
  }
  return e;
}

// Categories of instructions that work on general registers, flags and
// memory only.  Anything else (SSE, AVX, X87_ALU, MMX, XSAVE ...) counts as
// touching the vector state.
bool generalPurpose(ZydisInstructionCategory c) {
  switch (c) {
    case ZYDIS_CATEGORY_BINARY: case ZYDIS_CATEGORY_LOGICAL: case ZYDIS_CATEGORY_DATAXFER:
    case ZYDIS_CATEGORY_COND_BR: case ZYDIS_CATEGORY_UNCOND_BR: case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_RET: case ZYDIS_CATEGORY_PUSH: case ZYDIS_CATEGORY_POP:
    case ZYDIS_CATEGORY_CMOV: case ZYDIS_CATEGORY_SETCC: case ZYDIS_CATEGORY_SHIFT:
    case ZYDIS_CATEGORY_ROTATE: case ZYDIS_CATEGORY_BITBYTE: case ZYDIS_CATEGORY_NOP:
    case ZYDIS_CATEGORY_WIDENOP: case ZYDIS_CATEGORY_STRINGOP: case ZYDIS_CATEGORY_FLAGOP:
    case ZYDIS_CATEGORY_CONVERT: case ZYDIS_CATEGORY_SEMAPHORE: case ZYDIS_CATEGORY_MISC:
    case ZYDIS_CATEGORY_BMI1: case ZYDIS_CATEGORY_BMI2: case ZYDIS_CATEGORY_CET:
    case ZYDIS_CATEGORY_INTERRUPT: case ZYDIS_CATEGORY_SYSCALL:
      return true;
    default:
      return false;
  }
}

bool vectorStateRegister(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_X87: case ZYDIS_REGCLASS_MMX: case ZYDIS_REGCLASS_XMM: case ZYDIS_REGCLASS_YMM:
    case ZYDIS_REGCLASS_ZMM: case ZYDIS_REGCLASS_MASK: case ZYDIS_REGCLASS_TMM:
      return true;
    default:
      return r == ZYDIS_REGISTER_MXCSR || r == ZYDIS_REGISTER_X87CONTROL || r == ZYDIS_REGISTER_X87STATUS ||
             r == ZYDIS_REGISTER_X87TAG;
  }
}

int8_t hardwareNumber(ZydisRegister r) {
  const RegSet s = RegSet::of(r);
  if (s.empty() || s.gprs() == 0) return MemOperand::kNone;
  return int8_t(__builtin_ctz(s.gprs()));
}

Segment segmentOf(ZydisRegister r) {
  switch (r) {
    case ZYDIS_REGISTER_ES: return Segment::ES;
    case ZYDIS_REGISTER_CS: return Segment::CS;
    case ZYDIS_REGISTER_SS: return Segment::SS;
    case ZYDIS_REGISTER_DS: return Segment::DS;
    case ZYDIS_REGISTER_FS: return Segment::FS;
    case ZYDIS_REGISTER_GS: return Segment::GS;
    default: return Segment::None;
  }
}

// Whether a memory operand accesses memory (lea's and a nop's do not).
bool accessesMemory(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand& op) {
  if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) return false;
  if (insn.mnemonic == ZYDIS_MNEMONIC_LEA || insn.mnemonic == ZYDIS_MNEMONIC_NOP) return false;
  return op.mem.type != ZYDIS_MEMOP_TYPE_AGEN && op.mem.type != ZYDIS_MEMOP_TYPE_MIB;
}

MemOperand memOperand(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand& op, uint64_t address) {
  MemOperand m;
  m.size = uint16_t(op.size / 8);
  m.addressWidth = uint8_t(insn.address_width);
  m.read = op.actions & ZYDIS_OPERAND_ACTION_MASK_READ;
  m.write = op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
  m.implicit = op.visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT;
  m.segment = segmentOf(op.mem.segment);
  m.disp = op.mem.disp.value;
  if (op.mem.base == ZYDIS_REGISTER_RIP || op.mem.base == ZYDIS_REGISTER_EIP) {
    m.ripRelative = true;
    m.target = address + insn.length + uint64_t(op.mem.disp.value);
    return m;
  }
  m.base = hardwareNumber(op.mem.base);
  m.index = hardwareNumber(op.mem.index);
  if (const RegSet v = RegSet::of(op.mem.index); !v.empty() && v.gprs() == 0)
    m.vectorIndex = int8_t(__builtin_ctzll(v.bits) - 32);
  m.scale = m.hasIndex() ? op.mem.scale : 0;
  // push, call, pushf and enter put the value below %rsp (Zydis: disp 0).
  if (op.visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && op.mem.base == ZYDIS_REGISTER_RSP && m.write)
    m.disp -= m.size;
  return m;
}

// The condition code (0..15, as in jcc's opcode) of a jcc, setcc, cmovcc or
// fcmovcc (which tests b, e, be, u and their negations: cc 2..7, 10, 11).
uint8_t conditionOf(ZydisMnemonic m) {
  constexpr ZydisMnemonic none = ZYDIS_MNEMONIC_INVALID;
  if (m == none) return kNoCondition;
  static constexpr ZydisMnemonic kFamilies[4][16] = {
      {ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JNB, ZYDIS_MNEMONIC_JZ,
       ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS,
       ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_JNP, ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE,
       ZYDIS_MNEMONIC_JNLE},
      {ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB, ZYDIS_MNEMONIC_SETNB, ZYDIS_MNEMONIC_SETZ,
       ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE, ZYDIS_MNEMONIC_SETS,
       ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_SETP, ZYDIS_MNEMONIC_SETNP, ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL,
       ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_SETNLE},
      {ZYDIS_MNEMONIC_CMOVO, ZYDIS_MNEMONIC_CMOVNO, ZYDIS_MNEMONIC_CMOVB, ZYDIS_MNEMONIC_CMOVNB,
       ZYDIS_MNEMONIC_CMOVZ, ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE, ZYDIS_MNEMONIC_CMOVNBE,
       ZYDIS_MNEMONIC_CMOVS, ZYDIS_MNEMONIC_CMOVNS, ZYDIS_MNEMONIC_CMOVP, ZYDIS_MNEMONIC_CMOVNP,
       ZYDIS_MNEMONIC_CMOVL, ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE, ZYDIS_MNEMONIC_CMOVNLE},
      {none, none, ZYDIS_MNEMONIC_FCMOVB, ZYDIS_MNEMONIC_FCMOVNB, ZYDIS_MNEMONIC_FCMOVE, ZYDIS_MNEMONIC_FCMOVNE,
       ZYDIS_MNEMONIC_FCMOVBE, ZYDIS_MNEMONIC_FCMOVNBE, none, none, ZYDIS_MNEMONIC_FCMOVU, ZYDIS_MNEMONIC_FCMOVNU,
       none, none, none, none}};
  for (const auto& family : kFamilies)
    for (uint8_t cc = 0; cc < 16; ++cc)
      if (family[cc] == m) return cc;
  return kNoCondition;
}

bool isLoopFamily(ZydisMnemonic m) {
  return m == ZYDIS_MNEMONIC_LOOP || m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE ||
         m == ZYDIS_MNEMONIC_JRCXZ || m == ZYDIS_MNEMONIC_JECXZ || m == ZYDIS_MNEMONIC_JCXZ;
}

// An SSE/AVX instruction that works on one element of a vector register
// rather than on all of them.  Zydis gives a scalar floating-point
// operation's xmm and memory operands one element (addsd: one Float64;
// vaddsd: its last source), and describes the integer element moves (movd,
// movq) as whole vectors.
bool scalarVector(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, RegSet touched) {
  if ((touched.bits >> 32) == 0) return false;  // no xmm/ymm/zmm register (MMX's movq is not one)
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_MOVD: case ZYDIS_MNEMONIC_MOVQ: case ZYDIS_MNEMONIC_VMOVD: case ZYDIS_MNEMONIC_VMOVQ:
      return true;
    default:
      break;
  }
  for (unsigned i = 0; i < insn.operand_count_visible; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    const bool vector = op.type == ZYDIS_OPERAND_TYPE_MEMORY ||
                        (op.type == ZYDIS_OPERAND_TYPE_REGISTER && (RegSet::of(op.reg.value).bits >> 32) != 0);
    const bool floating = op.element_type == ZYDIS_ELEMENT_TYPE_FLOAT16 || op.element_type == ZYDIS_ELEMENT_TYPE_FLOAT32 ||
                          op.element_type == ZYDIS_ELEMENT_TYPE_FLOAT64;
    if (vector && floating && op.element_count == 1) return true;
  }
  return false;
}

// What Zydis' operand list leaves out.
void addUnlisted(const ZydisDecodedInstruction& insn, Semantics& s) {
  auto gprs = [](std::initializer_list<unsigned> hws) {
    RegSet r;
    for (unsigned hw : hws) r |= RegSet::gpr(hw);
    return r;
  };
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_SYSCALL:  // the number and arguments in, the result in %rax (Zydis lists rcx, r11)
      s.read |= gprs({0, 7, 6, 2, 10, 8, 9});
      s.written |= RegSet::gpr(0);
      s.killed |= RegSet::gpr(0);
      break;
    // cmps and scas step %rsi/%rdi by DF, as movs does, but Zydis lists
    // them as read only (ZYDIS_MNEMONIC_CMPSD is also SSE's compare).
    case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW: case ZYDIS_MNEMONIC_CMPSD: case ZYDIS_MNEMONIC_CMPSQ:
      if (insn.meta.category == ZYDIS_CATEGORY_STRINGOP) s.written |= gprs({6, 7});
      break;
    case ZYDIS_MNEMONIC_SCASB: case ZYDIS_MNEMONIC_SCASW: case ZYDIS_MNEMONIC_SCASD: case ZYDIS_MNEMONIC_SCASQ:
      s.written |= RegSet::gpr(7);
      break;
    case ZYDIS_MNEMONIC_VZEROUPPER:
    case ZYDIS_MNEMONIC_VZEROALL:  // no operands listed; the upper halves (or all) of ymm0..15
      for (unsigned n = 0; n < 16; ++n) s.written |= RegSet::vector(n);
      break;
    default:
      break;
  }
}

// Semantics::stepReg/stepBy.
void constantStep(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, Semantics& s) {
  if (insn.operand_count_visible < 1 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
      ZydisRegisterGetClass(ops[0].reg.value) != ZYDIS_REGCLASS_GPR64 || ops[0].reg.value == ZYDIS_REGISTER_RSP)
    return;
  const ZydisRegister r = ops[0].reg.value;
  int64_t by = 0;
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_INC: by = insn.operand_count_visible == 1 ? 1 : 0; break;
    case ZYDIS_MNEMONIC_DEC: by = insn.operand_count_visible == 1 ? -1 : 0; break;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
      if (insn.operand_count_visible == 2 && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
        by = insn.mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
      break;
    case ZYDIS_MNEMONIC_LEA:
      if (insn.operand_count_visible == 2 && ops[1].mem.base == r && ops[1].mem.index == ZYDIS_REGISTER_NONE &&
          ops[1].mem.segment != ZYDIS_REGISTER_FS && ops[1].mem.segment != ZYDIS_REGISTER_GS &&
          insn.address_width == 64 && ops[1].mem.disp.has_displacement)
        by = ops[1].mem.disp.value;
      break;
    default:
      break;
  }
  if (by == 0 || by < INT32_MIN || by > INT32_MAX) return;
  if (s.written.gprs() != RegSet::of(r).gprs()) return;  // nothing else written
  s.stepReg = int8_t(r - ZYDIS_REGISTER_RAX);  // a 64-bit register: reg64's inverse
  s.stepBy = int32_t(by);
}

bool stringCompare(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW: case ZYDIS_MNEMONIC_CMPSD: case ZYDIS_MNEMONIC_CMPSQ:
    case ZYDIS_MNEMONIC_SCASB: case ZYDIS_MNEMONIC_SCASW: case ZYDIS_MNEMONIC_SCASD: case ZYDIS_MNEMONIC_SCASQ:
      return true;
    default:
      return false;
  }
}

bool cacheControl(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_PREFETCH: case ZYDIS_MNEMONIC_PREFETCHNTA: case ZYDIS_MNEMONIC_PREFETCHT0:
    case ZYDIS_MNEMONIC_PREFETCHT1: case ZYDIS_MNEMONIC_PREFETCHT2: case ZYDIS_MNEMONIC_PREFETCHW:
    case ZYDIS_MNEMONIC_PREFETCHWT1: case ZYDIS_MNEMONIC_CLFLUSH: case ZYDIS_MNEMONIC_CLFLUSHOPT:
    case ZYDIS_MNEMONIC_CLWB:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool entersKernel(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSENTER:
    case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1: case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INTO:
      return true;
    default:
      return false;
  }
}

bool hasLegacyPrefix(const uint8_t* bytes, size_t length, uint8_t p) {
  for (size_t k = 0; k < length; ++k) {
    const uint8_t b = bytes[k];
    if (b == p) return true;
    const bool legacy = b == prefix::kLock || b == prefix::kRepne || b == prefix::kRep || b == prefix::kES ||
                        b == prefix::kCS || b == prefix::kSS || b == prefix::kDS || b == prefix::kFS ||
                        b == prefix::kGS || b == prefix::kOperandSize || b == prefix::kAddressSize;
    if (!legacy) return false;
  }
  return false;
}

Semantics describe(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, uint64_t address) {
  Semantics s;
  s.vectorState = !generalPurpose(insn.meta.category);
  for (unsigned i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      if (op.actions & ZYDIS_OPERAND_ACTION_MASK_READ) s.read |= RegSet::of(op.reg.value);
      if (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) s.written |= RegSet::of(op.reg.value);
      const ZydisRegisterClass cls = ZydisRegisterGetClass(op.reg.value);
      if ((op.actions & ZYDIS_OPERAND_ACTION_WRITE) && (cls == ZYDIS_REGCLASS_GPR64 || cls == ZYDIS_REGCLASS_GPR32))
        s.killed |= RegSet::of(op.reg.value);
      s.vectorState |= vectorStateRegister(op.reg.value);
    } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
      s.read |= RegSet::of(op.mem.base) | RegSet::of(op.mem.index);
      if (accessesMemory(insn, op) && s.memCount < kMaxMemOperands) s.mem[s.memCount++] = memOperand(insn, op, address);
    }
  }
  addUnlisted(insn, s);
  // A bit test with a register bit offset accesses the word that holds the bit.
  if ((insn.mnemonic == ZYDIS_MNEMONIC_BT || insn.mnemonic == ZYDIS_MNEMONIC_BTS || insn.mnemonic == ZYDIS_MNEMONIC_BTR ||
       insn.mnemonic == ZYDIS_MNEMONIC_BTC) &&
      s.memCount == 1 && insn.operand_count_visible == 2 && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
      ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
    const RegSet r = RegSet::of(ops[1].reg.value);
    for (unsigned hw = 0; hw < 16; ++hw)
      if (r.has(hw)) s.mem[0].bitOffset = int8_t(hw);
  }
  s.dependsOn = s.read;
  if ((insn.mnemonic == ZYDIS_MNEMONIC_XOR || insn.mnemonic == ZYDIS_MNEMONIC_SUB) && insn.operand_count_visible == 2 &&
      ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
      ops[0].reg.value == ops[1].reg.value && RegSet::of(ops[0].reg.value) == (s.killed & RegSet::of(ops[0].reg.value)))
    s.dependsOn = RegSet{};  // 32/64-bit: a whole register zeroed, whatever it held
  s.flags = flagEffect(insn, ops);
  s.condition = conditionOf(insn.mnemonic);
  s.loopFamily = isLoopFamily(insn.mnemonic);
  s.repeated = isRepeated(insn);
  s.repeatedWhile = s.repeated && insn.meta.category == ZYDIS_CATEGORY_STRINGOP && stringCompare(insn.mnemonic);
  s.repeatedWhileNotEqual = s.repeatedWhile && (insn.attributes & ZYDIS_ATTRIB_HAS_REPNE);
  s.compareExchange = insn.mnemonic == ZYDIS_MNEMONIC_CMPXCHG || insn.mnemonic == ZYDIS_MNEMONIC_CMPXCHG8B ||
                      insn.mnemonic == ZYDIS_MNEMONIC_CMPXCHG16B;
  s.cacheControl = cacheControl(insn.mnemonic);
  s.locked = (insn.attributes & ZYDIS_ATTRIB_HAS_LOCK) || (insn.mnemonic == ZYDIS_MNEMONIC_XCHG && s.memCount > 0);
  s.scalarVector = scalarVector(insn, ops, s.read | s.written);
  constantStep(insn, ops, s);
  return s;
}

namespace {

OperandInfo registerOperand(ZydisRegister r) {
  OperandInfo o;
  o.regBits = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, r);
  const RegSet set = RegSet::of(r);
  auto number = [&](ZydisRegister first) { return int8_t(r - first); };
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8: case ZYDIS_REGCLASS_GPR16: case ZYDIS_REGCLASS_GPR32: case ZYDIS_REGCLASS_GPR64:
      o.regKind = RegKind::General, o.reg = int8_t(__builtin_ctz(set.gprs()));
      break;
    case ZYDIS_REGCLASS_XMM: case ZYDIS_REGCLASS_YMM: case ZYDIS_REGCLASS_ZMM:
      o.regKind = RegKind::Vector, o.reg = int8_t(__builtin_ctzll(set.bits) - 32);
      break;
    case ZYDIS_REGCLASS_X87: o.regKind = RegKind::X87, o.reg = number(ZYDIS_REGISTER_ST0); break;
    case ZYDIS_REGCLASS_MMX: o.regKind = RegKind::MMX, o.reg = number(ZYDIS_REGISTER_MM0); break;
    case ZYDIS_REGCLASS_MASK: o.regKind = RegKind::Mask, o.reg = number(ZYDIS_REGISTER_K0); break;
    case ZYDIS_REGCLASS_FLAGS: o.regKind = RegKind::Flags; break;
    default: o.regKind = RegKind::Other; break;
  }
  return o;
}

ElementType elementType(ZydisElementType t) {
  switch (t) {
    case ZYDIS_ELEMENT_TYPE_INVALID: return ElementType::None;
    case ZYDIS_ELEMENT_TYPE_INT: return ElementType::Int;
    case ZYDIS_ELEMENT_TYPE_UINT: return ElementType::UInt;
    case ZYDIS_ELEMENT_TYPE_FLOAT16: return ElementType::Float16;
    case ZYDIS_ELEMENT_TYPE_FLOAT32: return ElementType::Float32;
    case ZYDIS_ELEMENT_TYPE_FLOAT64: return ElementType::Float64;
    case ZYDIS_ELEMENT_TYPE_FLOAT80: return ElementType::Float80;
    case ZYDIS_ELEMENT_TYPE_LONGBCD: return ElementType::BCD;
    default: return ElementType::Other;  // a structure (fxsave's area), an AVX-512 comparison predicate
  }
}

}  // namespace

unsigned describeOperands(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, uint64_t address,
                          OperandInfo out[ZYDIS_MAX_OPERAND_COUNT]) {
  unsigned memCount = 0;
  for (unsigned i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    OperandInfo o;
    switch (op.type) {
      case ZYDIS_OPERAND_TYPE_REGISTER:
        o = registerOperand(op.reg.value);
        break;
      case ZYDIS_OPERAND_TYPE_MEMORY:
        o.mem = memOperand(insn, op, address);
        if (accessesMemory(insn, op)) {
          o.kind = OperandKind::Memory;
          o.memIndex = memCount < kMaxMemOperands ? int8_t(memCount) : -1;
          ++memCount;
        } else {
          o.kind = OperandKind::Address;
          o.mem.size = 0, o.mem.read = o.mem.write = false;
        }
        break;
      default:  // an immediate, or a far pointer
        o.kind = op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative ? OperandKind::Target
                                                                                : OperandKind::Immediate;
        break;
    }
    o.bits = o.kind == OperandKind::Address ? 0 : op.size;
    o.type = elementType(op.element_type);
    o.elementBits = op.element_size;
    o.elements = op.element_count;
    o.read = op.actions & ZYDIS_OPERAND_ACTION_MASK_READ;
    o.write = op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
    o.implicit = op.visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT;
    // An AVX-512 write mask qualifies the destination: the text writes it as
    // a decorator ({%k1}; none for k0, no masking), not as an operand.
    o.hidden = op.visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN || op.encoding == ZYDIS_OPERAND_ENCODING_MASK;
    out[i] = o;
  }
  return insn.operand_count;
}

uint64_t evaluate(const MemOperand& m, const RegisterValues& values) {
  uint64_t address = m.target;
  if (!m.ripRelative) {
    address = uint64_t(m.disp);
    if (m.hasBase()) address += values.gpr[m.base];
    if (m.hasIndex()) address += values.gpr[m.index] * m.scale;
    if (m.addressWidth == 32) address = uint32_t(address);
  }
  if (m.hasBitOffset()) address += uint64_t(bitOffsetBytes(m, values.gpr[m.bitOffset]));
  if (m.segment == Segment::FS) address += values.fsBase;
  if (m.segment == Segment::GS) address += values.gsBase;
  return address;
}

void emitBitOffset(Assembler& a, const MemOperand& m, ZydisRegister dst, ZydisRegister offset) {
  if (!m.hasBitOffset()) return;
  const unsigned hw = unsigned(offset - ZYDIS_REGISTER_RAX);
  if (m.size == 2) a.movsx(offset, reg16(hw));
  if (m.size == 4) a.movsx(offset, reg32(hw));
  a.sarImm(offset, 3);
  a.andImm(offset, -int32_t(m.size));
  a.addReg(dst, offset);
}

void emitLinearAddress(Assembler& a, const MemOperand& m, ZydisRegister dst, ZydisRegister base,
                       ZydisRegister index, int64_t baseBias) {
  if (m.ripRelative) {
    // Data did not move: the original target, at run time, via RIP.
    a.lea(dst, ripAbsolute(m.target));
    return;
  }
  Mem x;
  x.base = m.hasBase() ? base : ZYDIS_REGISTER_NONE;
  x.index = m.hasIndex() ? index : ZYDIS_REGISTER_NONE;
  x.scale = m.scale;
  x.disp = m.disp + (m.base == 4 ? baseBias : 0);
  if (!m.hasBase() && !m.hasIndex()) a.movImm(dst, uint64_t(x.disp));
  else a.lea(dst, x);
  if (m.addressWidth == 32) {
    const ZydisRegister d32 = ZydisRegister(ZYDIS_REGISTER_EAX + (dst - ZYDIS_REGISTER_RAX));
    a.movReg(d32, d32);
  }
}

void emitSegmentBase(Assembler& a, const MemOperand& m, ZydisRegister dst, uint64_t insnAddress) {
  if (m.segment == Segment::GS)
    throw Error("the %gs-relative access at " + hex(insnAddress) + " has no effective address atomx can compute");
  if (m.segment == Segment::FS) a.addFsSelf(dst);
}

}  // namespace atomx::x86
