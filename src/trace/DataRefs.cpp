#include "trace/DataRefs.h"

#include <cstdlib>

namespace atomx::trace {

namespace {

// The operand's address in iteration `j` of the instruction (a string
// instruction's operands step by their size; the direction flag is clear:
// DataSlices records the addresses of a procedure that sets it).
uint64_t addressOf(const x86::MemOperand& m, analysis::AddressSource source, const DataState& s, uint64_t j) {
  if (source == analysis::AddressSource::Static) return m.ripRelative ? m.target + s.regs.loadBias : uint64_t(m.disp);
  uint64_t a = m.ripRelative ? m.target + s.regs.loadBias : uint64_t(m.disp) + j * m.size;
  if (m.hasBase()) a += s.regs.gpr[unsigned(m.base)];
  if (m.hasIndex()) a += s.regs.gpr[unsigned(m.index)] * m.scale;
  if (m.addressWidth == 32) a = uint32_t(a);
  // For the bit-test oracle's self-test only (tests/trace/bit_offsets.py):
  // ATOMX_TEST_REGEN_NO_BIT_OFFSET=1 gives a bit test's operand address, not
  // its word's (what atomx did before).
  static const bool noBitOffset = std::getenv("ATOMX_TEST_REGEN_NO_BIT_OFFSET") != nullptr;
  if (m.hasBitOffset() && !noBitOffset) a += uint64_t(x86::bitOffsetBytes(m, s.regs.gpr[unsigned(m.bitOffset)]));  // a bit test's word
  if (m.segment == x86::Segment::FS) a += s.fsBase;
  return a;
}

}  // namespace

uint16_t comparableRegisters(const analysis::InsnSlice& in) {
  const uint16_t moved = in.repeated ? (1u << 1 | 1u << 6 | 1u << 7) : 0;
  return in.neededBefore & ~moved;
}

bool sameRegisters(const uint64_t* walk, const uint64_t* context, uint16_t mask) {
  for (unsigned r = 0; mask; ++r, mask >>= 1)
    if ((mask & 1) && walk[r] != context[r]) return false;
  return true;
}

const char* appendReferences(const analysis::DataSlices& slices, uint32_t i, const DataState& state,
                             uint64_t iterations, uint32_t at, std::vector<DataRef>& out) {
  const analysis::InsnSlice& in = slices.insns[i];
  if (in.cacheControl || !in.memCount) return nullptr;
  const x86::MemOperand* mems = slices.mems.data() + in.firstMem;
  if (in.memCount == 1 && iterations == 1 && in.source[0] != analysis::AddressSource::Recorded &&
      mems[0].segment != x86::Segment::GS) {  // the common case, as the loops below would do it
    const x86::MemOperand& m = mems[0];
    const uint8_t kind = m.read ? (m.write ? kModify : kRead) : kWrite;
    out.push_back({addressOf(m, in.source[0], state, 0), at, m.size, kind, in.locked && m.read && m.write});
    return nullptr;
  }
  for (unsigned k = 0; k < in.memCount; ++k) {
    if (in.source[k] == analysis::AddressSource::Recorded) return "an address the trace does not hold (a gather, or a string instruction where the direction flag may be set)";
    if (mems[k].segment == x86::Segment::GS) return "a %gs-relative address (the trace holds no %gs base)";
  }
  for (uint64_t j = 0; j < iterations; ++j)
    for (int pass = 0; pass < 2; ++pass)  // reads (and read-modify-writes) first, then writes
      for (unsigned k = 0; k < in.memCount; ++k) {
        const x86::MemOperand& m = mems[k];
        if ((pass == 0) != m.read) continue;
        const uint8_t kind = m.read ? (m.write ? kModify : kRead) : kWrite;
        out.push_back({addressOf(m, in.source[k], state, j), at, m.size, kind, in.locked && m.read && m.write});
      }
  return nullptr;
}

}  // namespace atomx::trace
