#include "analysis/MemoryCauses.h"

#include <algorithm>

namespace atomx::analysis {

namespace {

constexpr int kDwarfRsp = 7, kDwarfRbp = 6;
// Hardware register number -> DWARF's x86-64 number.
constexpr int kDwarfOf[16] = {0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15};
constexpr int kHwRsp = 4, kHwRbp = 5;

bool calleeSaved(int hw) { return hw == 3 || hw == 5 || (hw >= 12 && hw <= 15); }

struct Bytes {
  const uint8_t* p;
  size_t n, at = 0;
  bool more() const { return at < n; }
  uint8_t u8() { return at < n ? p[at++] : 0; }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; at < n; shift += 7) {
      const uint8_t b = p[at++];
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  int64_t sleb() {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (at < n) {
      b = p[at++];
      if (shift < 64) v |= int64_t(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (shift < 64 && (b & 0x40)) v |= -(int64_t(1) << shift);
    return v;
  }
};

// Applies the CFA instructions in `b` (no advances: decodeCfaProgram folded
// them) to `row`; false at an opcode it does not know.
bool apply(Bytes b, CfiRow& row, const CfiRow& initial, std::vector<CfiRow>& stack, int64_t dataAlign) {
  auto save = [&](uint64_t reg, int64_t off) {
    if (reg < 17) row.saved[reg] = true, row.savedAt[reg] = off;
  };
  auto unsave = [&](uint64_t reg) {
    if (reg < 17) row.saved[reg] = false;
  };
  while (b.more()) {
    const uint8_t op = b.u8();
    switch (op & 0xc0) {
      case 0x40: continue;  // advance (none here)
      case 0x80: save(op & 0x3f, int64_t(b.uleb()) * dataAlign); continue;
      case 0xc0: {
        const unsigned r = op & 0x3f;
        if (r < 17) row.saved[r] = initial.saved[r], row.savedAt[r] = initial.savedAt[r];
        continue;
      }
      default: break;
    }
    switch (op) {
      case 0x00: break;
      case 0x05: { const uint64_t r = b.uleb(); save(r, int64_t(b.uleb()) * dataAlign); break; }
      case 0x06: {
        const uint64_t r = b.uleb();
        if (r < 17) row.saved[r] = initial.saved[r], row.savedAt[r] = initial.savedAt[r];
        break;
      }
      case 0x07: case 0x08: unsave(b.uleb()); break;
      case 0x09: unsave(b.uleb()), b.uleb(); break;
      case 0x0a: stack.push_back(row); break;
      case 0x0b:
        if (!stack.empty()) row = stack.back(), stack.pop_back();
        break;
      case 0x0c: row.cfaReg = int(b.uleb()), row.cfaOffset = int64_t(b.uleb()), row.cfaKnown = true; break;
      case 0x0d: row.cfaReg = int(b.uleb()); break;
      case 0x0e: row.cfaOffset = int64_t(b.uleb()); break;
      case 0x0f: { const uint64_t n = b.uleb(); b.at += n; row.cfaKnown = false; break; }
      case 0x10: case 0x16: { unsave(b.uleb()); const uint64_t n = b.uleb(); b.at += n; break; }
      case 0x11: { const uint64_t r = b.uleb(); save(r, b.sleb() * dataAlign); break; }
      case 0x12: row.cfaReg = int(b.uleb()), row.cfaOffset = b.sleb() * dataAlign, row.cfaKnown = true; break;
      case 0x13: row.cfaOffset = b.sleb() * dataAlign; break;
      case 0x14: unsave(b.uleb()), b.uleb(); break;
      case 0x15: unsave(b.uleb()), b.sleb(); break;
      case 0x2e: b.uleb(); break;
      case 0x2f: { const uint64_t r = b.uleb(); save(r, -int64_t(b.uleb()) * dataAlign); break; }
      default: return false;
    }
  }
  return true;
}

}  // namespace

const char* causeName(MemCause c) {
  switch (c) {
    case MemCause::SaveRestore: return "save/restore";
    case MemCause::CallLinkage: return "call linkage";
    case MemCause::StackVariable: return "stack variable";
    case MemCause::Spill: return "spill/temporary";
    case MemCause::Global: return "global";
    case MemCause::Pointer: return "through a pointer";
    case MemCause::None: break;
  }
  return "none";
}

MemoryCauses::MemoryCauses(const unwind::EhFrameInfo& info, unwind::ByteView ehFrame, std::vector<StackSlot> slots)
    : info_(info), eh_(ehFrame), slots_(std::move(slots)) {}

const MemoryCauses::FdeRows* MemoryCauses::rowsOf(uint64_t pc) {
  const unwind::Fde* fde = unwind::findFde(info_, pc);
  if (!fde || fde->cie >= info_.cies.size()) return nullptr;
  auto [it, fresh] = rows_.try_emplace(fde);
  FdeRows& out = it->second;
  if (!fresh) return out.rows.empty() ? nullptr : &out;
  const unwind::Cie& cie = info_.cies[fde->cie];
  CfiRow initial;
  std::vector<CfiRow> stack;
  if (cie.instructionsOffset + cie.instructionsSize > eh_.size ||
      !apply({eh_.data + cie.instructionsOffset, cie.instructionsSize}, initial, initial, stack, cie.dataAlign))
    return nullptr;
  std::vector<unwind::CfaOp> ops;
  try {
    ops = unwind::decodeCfaProgram(info_, *fde, eh_);
  } catch (...) {
    return nullptr;  // an FDE atomx cannot read: no CFI facts there
  }
  CfiRow row = initial;
  out.rows.emplace_back(fde->pcBegin, row);
  for (const unwind::CfaOp& op : ops) {
    if (!apply({op.bytes.data(), op.bytes.size()}, row, initial, stack, cie.dataAlign)) {
      out.rows.clear();
      return nullptr;
    }
    if (out.rows.back().first == op.loc) out.rows.back().second = row;
    else out.rows.emplace_back(op.loc, row);
    if (row.cfaKnown && row.cfaReg == kDwarfRbp) out.framePointer = true;
  }
  return &out;
}

std::optional<CfiRow> MemoryCauses::cfiAt(uint64_t pc) {
  const FdeRows* r = rowsOf(pc);
  if (!r) return std::nullopt;
  auto it = std::upper_bound(r->rows.begin(), r->rows.end(), pc, [](uint64_t x, const auto& e) { return x < e.first; });
  if (it == r->rows.begin()) return std::nullopt;
  return std::prev(it)->second;
}

bool MemoryCauses::holdsVariable(uint64_t pc, int reg, int64_t disp, unsigned size, const CfiRow& row) const {
  // The reference's bytes, from the CFA when the CFA rule names its base register.
  const int dreg = kDwarfOf[reg];
  const bool toCfa = row.cfaKnown && row.cfaReg == dreg;
  const int64_t cfaLo = disp - row.cfaOffset;
  auto it = std::upper_bound(slots_.begin(), slots_.end(), pc, [](uint64_t x, const StackSlot& s) { return x < s.lo; });
  for (auto s = slots_.begin(); s != it; ++s) {
    if (pc >= s->hi) continue;
    int64_t lo;
    if (s->base == StackSlot::Base::Cfa) {
      if (!toCfa) continue;
      lo = s->offset;
    } else {
      const int sreg = s->base == StackSlot::Base::Rsp ? kDwarfRsp : kDwarfRbp;
      if (sreg != dreg) continue;  // another register's offset: not comparable
      lo = s->offset - (toCfa ? row.cfaOffset : 0);
    }
    const int64_t at = toCfa ? cfaLo : disp;
    if (at < lo + int64_t(s->size) && lo < at + int64_t(size)) return true;
  }
  return false;
}

MemCause MemoryCauses::classify(const MemRef& m) {
  using Op = MemRef::Op;
  if ((m.op == Op::Call && m.implicit && m.write) || (m.op == Op::Return && m.implicit) || (m.op == Op::Leave && m.implicit))
    return MemCause::CallLinkage;
  if (m.fsOrGs || m.ripRelative || m.base < 0) return MemCause::Global;
  const bool stackBased = m.base == kHwRsp || m.base == kHwRbp;
  if (!stackBased) return MemCause::Pointer;
  const std::optional<CfiRow> row = cfiAt(m.pc);
  const FdeRows* rows = row ? rowsOf(m.pc) : nullptr;
  // %rbp is the frame pointer only while the CFA is computed from it.
  if (m.base == kHwRbp && !(row && row->cfaKnown && row->cfaReg == kDwarfRbp)) return MemCause::Pointer;
  // Saves and restores the CFI marks.
  if (row && row->cfaKnown && calleeSaved(m.reg) && m.index < 0 && kDwarfOf[m.base] == row->cfaReg &&
      (m.op == Op::Push || m.op == Op::Pop || m.op == Op::Move)) {
    const int r = kDwarfOf[m.reg];
    const int64_t at = m.disp - row->cfaOffset;  // from the CFA
    bool save = false;
    if (m.write && !m.read && (m.op == Op::Push || m.op == Op::Move)) {
      const std::optional<CfiRow> next = cfiAt(m.pc + m.instSize);
      save = next && next->saved[r] && next->savedAt[r] == at;
    } else if (m.read && !m.write && (m.op == Op::Pop || m.op == Op::Move)) {
      save = row->saved[r] && row->savedAt[r] == at;
    }
    if (save) return m.reg == kHwRbp && rows && rows->framePointer ? MemCause::CallLinkage : MemCause::SaveRestore;
  }
  return holdsVariable(m.pc, m.base, m.disp, m.size, row ? *row : CfiRow{}) ? MemCause::StackVariable : MemCause::Spill;
}

}  // namespace atomx::analysis
