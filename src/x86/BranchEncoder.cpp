#include "x86/BranchEncoder.h"

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::x86 {

namespace {

bool fitsIn8(int64_t v) { return v >= -128 && v <= 127; }
bool fitsIn32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

void put32(std::vector<uint8_t>& out, int64_t v) {
  uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(v));
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(u >> (8 * i)));
}

// Loop-family instructions (loop, loope, loopne, jrcxz, jecxz) only have a
// rel8 form; their long form is a three-instruction sequence:
//   loop  +2 ; jmp +5 ; jmp rel32 target
bool isJecxz(const Insn& insn) { return insn.mnemonic == ZYDIS_MNEMONIC_JECXZ; }
uint8_t loopOpcode(const Insn& insn) {
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_LOOPNE: return 0xe0;
    case ZYDIS_MNEMONIC_LOOPE: return 0xe1;
    case ZYDIS_MNEMONIC_LOOP: return 0xe2;
    default: return 0xe3;  // jrcxz / jecxz
  }
}

}  // namespace

unsigned branchSize(const Insn& insn, BranchForm form) {
  const bool isShort = form == BranchForm::Short;
  if (insn.flow == Flow::Call) return 5;
  if (insn.flow == Flow::Jump) return isShort ? 2 : 5;
  if (insn.flow == Flow::CondBranch) {
    if (insn.isLoopFamily()) return (isJecxz(insn) ? 1 : 0) + (isShort ? 2 : 9);
    return isShort ? 2 : 6;
  }
  throw InternalError("branchSize: not a direct branch at " + hex(insn.address));
}

bool branchReaches(const Insn& insn, BranchForm form, uint64_t at, uint64_t target) {
  const unsigned size = branchSize(insn, form);
  const int64_t delta = int64_t(target - (at + size));
  if (form == BranchForm::Short && insn.flow != Flow::Call) return fitsIn8(delta);
  return fitsIn32(delta);
}

void encodeBranch(const Insn& insn, BranchForm form, uint64_t at, uint64_t target, std::vector<uint8_t>& out) {
  const unsigned size = branchSize(insn, form);
  const int64_t delta = int64_t(target - (at + size));
  if (!branchReaches(insn, form, at, target))
    throw InternalError("branch at " + hex(insn.address) + " cannot reach " + hex(target));
  const bool isShort = form == BranchForm::Short && insn.flow != Flow::Call;
  switch (insn.flow) {
    case Flow::Call:
      out.push_back(0xe8);
      put32(out, delta);
      return;
    case Flow::Jump:
      if (isShort) {
        out.push_back(0xeb);
        out.push_back(uint8_t(delta));
      } else {
        out.push_back(0xe9);
        put32(out, delta);
      }
      return;
    case Flow::CondBranch:
      if (insn.isLoopFamily()) {
        if (isJecxz(insn)) out.push_back(0x67);
        out.push_back(loopOpcode(insn));
        if (isShort) {
          out.push_back(uint8_t(delta));
        } else {
          out.push_back(0x02);  // taken: over the next jmp, to the long jump
          out.push_back(0xeb);  // not taken: skip the long jump
          out.push_back(0x05);
          out.push_back(0xe9);
          put32(out, delta);
        }
        return;
      }
      if (isShort) {
        out.push_back(uint8_t(0x70 | insn.condCode));
        out.push_back(uint8_t(delta));
      } else {
        out.push_back(0x0f);
        out.push_back(uint8_t(0x80 | insn.condCode));
        put32(out, delta);
      }
      return;
    default:
      throw InternalError("encodeBranch: not a direct branch at " + hex(insn.address));
  }
}

void encodeJump32(uint64_t at, uint64_t target, std::vector<uint8_t>& out) {
  const int64_t delta = int64_t(target - (at + 5));
  if (!fitsIn32(delta)) throw InternalError("jmp at " + hex(at) + " cannot reach " + hex(target));
  out.push_back(0xe9);
  put32(out, delta);
}

}  // namespace atomx::x86
