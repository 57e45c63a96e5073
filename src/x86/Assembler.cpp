#include "x86/Assembler.h"

#include <cstdint>
#include <cstring>

#include "support/Error.h"

namespace atomx::x86 {

namespace {

ZydisEncoderRequest request(ZydisMnemonic mnemonic) {
  ZydisEncoderRequest r;
  std::memset(&r, 0, sizeof r);
  r.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
  r.mnemonic = mnemonic;
  return r;
}

void setReg(ZydisEncoderOperand& op, ZydisRegister reg) {
  op.type = ZYDIS_OPERAND_TYPE_REGISTER;
  op.reg.value = reg;
}

// The memory operand, and its segment override (%fs, %gs) in the request.
void setMem(ZydisEncoderRequest& r, ZydisEncoderOperand& op, const Mem& m) {
  if (m.segment == ZYDIS_REGISTER_FS) r.prefixes |= ZYDIS_ATTRIB_HAS_SEGMENT_FS;
  if (m.segment == ZYDIS_REGISTER_GS) r.prefixes |= ZYDIS_ATTRIB_HAS_SEGMENT_GS;
  op.type = ZYDIS_OPERAND_TYPE_MEMORY;
  op.mem.base = m.base;
  op.mem.index = m.index;
  op.mem.scale = m.index == ZYDIS_REGISTER_NONE ? 0 : m.scale;
  op.mem.displacement = m.disp;
  op.mem.size = m.size;
}

void setImm(ZydisEncoderOperand& op, uint64_t value) {
  op.type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
  op.imm.u = value;
}

}  // namespace

void Assembler::encode(ZydisEncoderRequest& r) {
  uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
  ZyanUSize len = sizeof buf;
  if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&r, buf, &len, here())))
    throw InternalError("cannot encode generated instruction (mnemonic " + std::to_string(int(r.mnemonic)) + ")");
  out_.insert(out_.end(), buf, buf + len);
}

// The two-operand forms, by operand kinds.
void Assembler::regReg(ZydisMnemonic mnemonic, ZydisRegister dst, ZydisRegister src) {
  auto r = request(mnemonic);
  r.operand_count = 2;
  setReg(r.operands[0], dst);
  setReg(r.operands[1], src);
  encode(r);
}

void Assembler::regMem(ZydisMnemonic mnemonic, ZydisRegister dst, const Mem& src) {
  auto r = request(mnemonic);
  r.operand_count = 2;
  setReg(r.operands[0], dst);
  setMem(r, r.operands[1], src);
  encode(r);
}

void Assembler::regImm(ZydisMnemonic mnemonic, ZydisRegister dst, uint64_t value) {
  auto r = request(mnemonic);
  r.operand_count = 2;
  setReg(r.operands[0], dst);
  setImm(r.operands[1], value);
  encode(r);
}

void Assembler::movImm(ZydisRegister dst, uint64_t value) {
  // mov r32, imm32 zero-extends: the shortest form for small unsigned values.
  if (value <= UINT32_MAX && dst >= ZYDIS_REGISTER_RAX && dst <= ZYDIS_REGISTER_R15)
    dst = ZydisRegister(ZYDIS_REGISTER_EAX + (dst - ZYDIS_REGISTER_RAX));
  regImm(ZYDIS_MNEMONIC_MOV, dst, value);
}

void Assembler::movLoad(ZydisRegister dst, const Mem& src) { regMem(ZYDIS_MNEMONIC_MOV, dst, src); }

void Assembler::movStore(const Mem& dst, ZydisRegister src) {
  auto r = request(ZYDIS_MNEMONIC_MOV);
  r.operand_count = 2;
  setMem(r, r.operands[0], dst);
  setReg(r.operands[1], src);
  encode(r);
}

void Assembler::lea(ZydisRegister dst, const Mem& src) {
  Mem m = src;
  m.size = 8;  // Zydis wants an operand size even for an address computation
  regMem(ZYDIS_MNEMONIC_LEA, dst, m);
}

void Assembler::movReg(ZydisRegister dst, ZydisRegister src) { regReg(ZYDIS_MNEMONIC_MOV, dst, src); }
void Assembler::movzxByte(ZydisRegister dst32, ZydisRegister src8) { regReg(ZYDIS_MNEMONIC_MOVZX, dst32, src8); }
void Assembler::addReg(ZydisRegister dst, ZydisRegister src) { regReg(ZYDIS_MNEMONIC_ADD, dst, src); }
void Assembler::andReg(ZydisRegister dst, ZydisRegister src) { regReg(ZYDIS_MNEMONIC_AND, dst, src); }
void Assembler::addLoad(ZydisRegister dst, const Mem& src) { regMem(ZYDIS_MNEMONIC_ADD, dst, src); }
void Assembler::subReg(ZydisRegister dst, ZydisRegister src) { regReg(ZYDIS_MNEMONIC_SUB, dst, src); }
void Assembler::subLoad(ZydisRegister dst, const Mem& src) { regMem(ZYDIS_MNEMONIC_SUB, dst, src); }
void Assembler::andLoad(ZydisRegister dst, const Mem& src) { regMem(ZYDIS_MNEMONIC_AND, dst, src); }
void Assembler::testReg(ZydisRegister a, ZydisRegister b) { regReg(ZYDIS_MNEMONIC_TEST, a, b); }
void Assembler::subImm(ZydisRegister dst, int32_t value) { regImm(ZYDIS_MNEMONIC_SUB, dst, uint64_t(int64_t(value))); }
void Assembler::sarImm(ZydisRegister dst, uint8_t count) { regImm(ZYDIS_MNEMONIC_SAR, dst, count); }
void Assembler::movsx(ZydisRegister dst64, ZydisRegister src) {
  regReg(ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, src) == 32 ? ZYDIS_MNEMONIC_MOVSXD : ZYDIS_MNEMONIC_MOVSX, dst64, src);
}
void Assembler::andImm(ZydisRegister dst, int32_t value) { regImm(ZYDIS_MNEMONIC_AND, dst, uint64_t(int64_t(value))); }
void Assembler::cmpImm(ZydisRegister dst, int32_t value) { regImm(ZYDIS_MNEMONIC_CMP, dst, uint64_t(int64_t(value))); }

void Assembler::push(ZydisRegister reg) {
  auto r = request(ZYDIS_MNEMONIC_PUSH);
  r.operand_count = 1;
  setReg(r.operands[0], reg);
  encode(r);
}

void Assembler::pushMem(const Mem& src) {
  auto r = request(ZYDIS_MNEMONIC_PUSH);
  r.operand_count = 1;
  setMem(r, r.operands[0], src);
  encode(r);
}

void Assembler::pop(ZydisRegister reg) {
  auto r = request(ZYDIS_MNEMONIC_POP);
  r.operand_count = 1;
  setReg(r.operands[0], reg);
  encode(r);
}

void Assembler::popfq() { raw({0x9d}); }

void Assembler::setcc(uint8_t cc, ZydisRegister dst8) {
  static const ZydisMnemonic kSet[16] = {
      ZYDIS_MNEMONIC_SETO,  ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB,  ZYDIS_MNEMONIC_SETNB,
      ZYDIS_MNEMONIC_SETZ,  ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE,
      ZYDIS_MNEMONIC_SETS,  ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_SETP,  ZYDIS_MNEMONIC_SETNP,
      ZYDIS_MNEMONIC_SETL,  ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_SETNLE};
  auto r = request(kSet[cc & 15]);
  r.operand_count = 1;
  setReg(r.operands[0], dst8);
  encode(r);
}

void Assembler::callRel32(uint64_t target) {
  auto r = request(ZYDIS_MNEMONIC_CALL);
  r.operand_count = 1;
  r.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
  r.branch_width = ZYDIS_BRANCH_WIDTH_32;
  setImm(r.operands[0], target);
  encode(r);
}

void Assembler::callMem(const Mem& target) {
  auto r = request(ZYDIS_MNEMONIC_CALL);
  r.operand_count = 1;
  setMem(r, r.operands[0], target);
  encode(r);
}

void Assembler::cmpMemImm(const Mem& m, int8_t value) {
  auto r = request(ZYDIS_MNEMONIC_CMP);
  r.operand_count = 2;
  setMem(r, r.operands[0], m);
  setImm(r.operands[1], uint64_t(int64_t(value)));
  encode(r);
}

void Assembler::cmpMemReg(const Mem& m, ZydisRegister reg) {
  auto r = request(ZYDIS_MNEMONIC_CMP);
  r.operand_count = 2;
  setMem(r, r.operands[0], m);
  setReg(r.operands[1], reg);
  encode(r);
}

void Assembler::jccRel32(uint8_t cc, uint64_t target) {
  const int64_t rel = int64_t(target - (here() + 6));
  if (rel < INT32_MIN || rel > INT32_MAX) throw InternalError("conditional branch target out of reach");
  const uint32_t r = uint32_t(int32_t(rel));
  raw({0x0f, uint8_t(0x80 | (cc & 15)), uint8_t(r), uint8_t(r >> 8), uint8_t(r >> 16), uint8_t(r >> 24)});
}

void Assembler::jmpRel32(uint64_t target) {
  auto r = request(ZYDIS_MNEMONIC_JMP);
  r.operand_count = 1;
  r.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
  r.branch_width = ZYDIS_BRANCH_WIDTH_32;
  setImm(r.operands[0], target);
  encode(r);
}

void Assembler::ret() { raw({0xc3}); }
void Assembler::syscall() { raw({0x0f, 0x05}); }

// `MNEMONIC %fs:0, dst`.
void Assembler::fsSelf(ZydisMnemonic mnemonic, ZydisRegister dst) {
  auto r = request(mnemonic);
  r.operand_count = 2;
  r.prefixes = ZYDIS_ATTRIB_HAS_SEGMENT_FS;
  setReg(r.operands[0], dst);
  // An absolute [0] (no base): a disp32 with a SIB byte, not RIP-relative.
  r.operands[1].type = ZYDIS_OPERAND_TYPE_MEMORY;
  r.operands[1].mem.size = 8;
  r.operands[1].mem.displacement = 0;
  encode(r);
}

void Assembler::loadFsSelf(ZydisRegister dst) { fsSelf(ZYDIS_MNEMONIC_MOV, dst); }
void Assembler::addFsSelf(ZydisRegister dst) { fsSelf(ZYDIS_MNEMONIC_ADD, dst); }

void Assembler::adcMemImm(const Mem& m, int8_t value, bool lock) {
  auto r = request(ZYDIS_MNEMONIC_ADC);
  if (lock) r.prefixes = ZYDIS_ATTRIB_HAS_LOCK;
  r.operand_count = 2;
  setMem(r, r.operands[0], m);
  setImm(r.operands[1], uint64_t(int64_t(value)));
  encode(r);
}

void Assembler::adcImm(ZydisRegister dst, int32_t value) { regImm(ZYDIS_MNEMONIC_ADC, dst, uint64_t(int64_t(value))); }
void Assembler::xorImm(ZydisRegister dst, int32_t value) { regImm(ZYDIS_MNEMONIC_XOR, dst, uint64_t(int64_t(value))); }

void Assembler::addMemReg(const Mem& m, ZydisRegister src, bool lock) { memReg(ZYDIS_MNEMONIC_ADD, m, src, lock); }
void Assembler::subMemReg(const Mem& m, ZydisRegister src, bool lock) { memReg(ZYDIS_MNEMONIC_SUB, m, src, lock); }
void Assembler::xchgMemReg(const Mem& m, ZydisRegister reg) { memReg(ZYDIS_MNEMONIC_XCHG, m, reg, false); }

void Assembler::memReg(ZydisMnemonic mnemonic, const Mem& m, ZydisRegister src, bool lock) {
  auto r = request(mnemonic);
  if (lock) r.prefixes = ZYDIS_ATTRIB_HAS_LOCK;
  r.operand_count = 2;
  setMem(r, r.operands[0], m);
  setReg(r.operands[1], src);
  encode(r);
}

void Assembler::incMem(const Mem& m, bool lock) {
  auto r = request(ZYDIS_MNEMONIC_INC);
  if (lock) r.prefixes = ZYDIS_ATTRIB_HAS_LOCK;
  r.operand_count = 1;
  setMem(r, r.operands[0], m);
  encode(r);
}

}  // namespace atomx::x86
