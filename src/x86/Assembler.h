// Assembler: the few x86-64 instruction forms atomx generates, encoded by
// Zydis' encoder.  Every form has a size that does not depend on where it is
// placed (RIP-relative operands and branches always use 32-bit fields), so a
// caller can size code once and emit it later at its final address.
#pragma once

#include <Zydis/Zydis.h>

#include <cstdint>
#include <vector>

namespace atomx::x86 {

// A memory operand: [segment: base + index*scale + disp].  base == RIP
// means an absolute target address (`disp` is that address; encoded
// RIP-relative); no base and no index, an absolute disp32 (with a segment:
// an offset from the segment's base).
struct Mem {
  ZydisRegister base = ZYDIS_REGISTER_NONE;
  ZydisRegister index = ZYDIS_REGISTER_NONE;
  uint8_t scale = 0;
  int64_t disp = 0;
  uint16_t size = 8;  // bytes accessed
  ZydisRegister segment = ZYDIS_REGISTER_NONE;  // FS or GS: a segment override
};
inline Mem mem(ZydisRegister base, int64_t disp = 0, uint16_t size = 8) { return {base, ZYDIS_REGISTER_NONE, 0, disp, size}; }
inline Mem ripAbsolute(uint64_t address, uint16_t size = 8) { return {ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, int64_t(address), size}; }
// %fs:offset / %gs:offset (a disp32 with a SIB byte: 4 bytes more than the
// plain register form, always the same size).
inline Mem segmentOffset(ZydisRegister segment, int32_t offset, uint16_t size = 8) {
  return {ZYDIS_REGISTER_NONE, ZYDIS_REGISTER_NONE, 0, offset, size, segment};
}

class Assembler {
 public:
  // `address`: where the first byte will be (matters only for RIP-relative
  // operands and branches).
  Assembler(std::vector<uint8_t>& out, uint64_t address) : out_(out), origin_(address), start_(out.size()) {}

  uint64_t here() const { return origin_ + (out_.size() - start_); }

  void movImm(ZydisRegister dst, uint64_t value);  // shortest form for the value
  void movLoad(ZydisRegister dst, const Mem& src);
  void movStore(const Mem& dst, ZydisRegister src);
  void lea(ZydisRegister dst, const Mem& src);
  void movReg(ZydisRegister dst, ZydisRegister src);
  void movzxByte(ZydisRegister dst32, ZydisRegister src8);
  void addReg(ZydisRegister dst, ZydisRegister src);
  void subReg(ZydisRegister dst, ZydisRegister src);  // sub %src, dst
  void subImm(ZydisRegister dst, int32_t value);
  void sarImm(ZydisRegister dst, uint8_t count);          // sar $count, dst
  void movsx(ZydisRegister dst64, ZydisRegister src);     // movsx (16-bit src) or movsxd (32-bit src)
  void andImm(ZydisRegister dst, int32_t value);
  void cmpImm(ZydisRegister dst, int32_t value);
  void andReg(ZydisRegister dst, ZydisRegister src);
  void addLoad(ZydisRegister dst, const Mem& src);  // add m, dst
  void subLoad(ZydisRegister dst, const Mem& src);  // sub m, dst
  void andLoad(ZydisRegister dst, const Mem& src);  // and m, dst
  void testReg(ZydisRegister a, ZydisRegister b);
  void push(ZydisRegister reg);
  void pushMem(const Mem& src);
  void pop(ZydisRegister reg);
  void popfq();
  void pushfq() { raw({0x9c}); }
  void cld() { raw({0xfc}); }
  void cmpMemImm(const Mem& m, int8_t value);  // cmp $value, m (m.size bytes)
  void cmpMemReg(const Mem& m, ZydisRegister reg);  // cmp %reg, m (flags of m - reg)
  // `[lock] incq m`: a 64-bit counter, atomically with `lock`.
  void incMem(const Mem& m, bool lock);
  void addMemReg(const Mem& m, ZydisRegister src, bool lock);  // add %src, m
  void subMemReg(const Mem& m, ZydisRegister src, bool lock);  // sub %src, m
  void xchgMemReg(const Mem& m, ZydisRegister reg);  // xchg %reg, m (locked, as every xchg with memory)
  void adcMemImm(const Mem& m, int8_t value, bool lock);  // adc $value, m (m.size bytes)
  void adcImm(ZydisRegister dst, int32_t value);
  void xorImm(ZydisRegister dst, int32_t value);
  // The status flags without pushf/popf (which is slow): lahf/sahf move
  // SF ZF AF PF CF through %ah, `seto %al` keeps OF and `add $0x7f,%al`
  // puts it back (it overflows exactly when %al is 1; sahf then restores
  // the rest).
  // Around inserted code: step %rsp over the program's 128-byte red zone
  // and back, without touching the flags (lea, fixed 5- and 8-byte forms:
  // the site code's size depends on them).
  void stepOverRedZone() { raw({0x48, 0x8d, 0x64, 0x24, 0x80}); }                        // lea -0x80(%rsp),%rsp
  void stepBackOverRedZone() { raw({0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00}); }  // lea 0x80(%rsp),%rsp
  void lahf() { raw({0x9f}); }
  void sahf() { raw({0x9e}); }
  void setoAl() { raw({0x0f, 0x90, 0xc0}); }
  void restoreOfFromAl() { raw({0x04, 0x7f}); }
  void setcc(uint8_t conditionCode, ZydisRegister dst8);
  void callRel32(uint64_t target);
  void callMem(const Mem& target);
  void jmpRel32(uint64_t target);
  void jccRel32(uint8_t conditionCode, uint64_t target);  // always the 6-byte form
  void ret();
  void syscall();
  // `mov %fs:0, dst`: the thread pointer's self word (glibc's TCB).
  void loadFsSelf(ZydisRegister dst);
  // `add %fs:0, dst`: adds the thread pointer.
  void addFsSelf(ZydisRegister dst);
  // A short conditional jump (condition code 0..15) over the next `skip` bytes.
  void jccShort(uint8_t conditionCode, uint8_t skip) { raw({uint8_t(0x70 + conditionCode), skip}); }
  void raw(std::initializer_list<uint8_t> bytes) { out_.insert(out_.end(), bytes); }
  void raw(const std::vector<uint8_t>& bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }

 private:
  void encode(ZydisEncoderRequest& request);
  void regReg(ZydisMnemonic mnemonic, ZydisRegister dst, ZydisRegister src);
  void regMem(ZydisMnemonic mnemonic, ZydisRegister dst, const Mem& src);
  void regImm(ZydisMnemonic mnemonic, ZydisRegister dst, uint64_t value);
  void memReg(ZydisMnemonic mnemonic, const Mem& m, ZydisRegister src, bool lock);
  void fsSelf(ZydisMnemonic mnemonic, ZydisRegister dst);

  std::vector<uint8_t>& out_;
  uint64_t origin_;
  size_t start_;
};

}  // namespace atomx::x86
