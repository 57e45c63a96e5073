#include "instrument/Facts.h"

#include "analysis/MemoryCauses.h"
#include "analysis/ProgramModel.h"
#include "debuginfo/StackVariables.h"
#include "support/Error.h"

#include <atomx/facts.h>

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

namespace atomx::instrument {

namespace {

// NUL-terminated strings, each once, by offset.
struct Strings {
  std::vector<uint8_t> bytes;
  std::unordered_map<std::string, uint32_t> at;
  uint32_t add(const std::string& s) {
    auto [it, fresh] = at.emplace(s, uint32_t(bytes.size()));
    if (fresh) bytes.insert(bytes.end(), s.c_str(), s.c_str() + s.size() + 1);
    return it->second;
  }
};

// The blob's enums are atomx.hpp's values.
static_assert(ATOMX_OPERAND_TARGET == int(Operand::Kind::Target) && ATOMX_REGKIND_OTHER == int(Operand::RegKind::Other) &&
              ATOMX_TYPE_OTHER == int(Operand::Type::Other) && ATOMX_SEGMENT_GS == int(MemoryOperand::Segment::GS) &&
              ATOMX_FLAGS_BIT == kFlagsBit &&
              ATOMX_INST_STOP == int(InstClass::Stop) && ATOMX_INST_COND_BRANCH == int(InstClass::CondBranch) && ATOMX_VECTOR_BIT(3) == vectorRegBit(3) && ATOMX_OF == kOF);
static_assert(sizeof(AtomxFactsHeader) == 32 && sizeof(AtomxFactsInst) == 72 && sizeof(AtomxFactsOperand) == 32,
              "the blob's records have no padding");

uint8_t accessBits(bool read, bool write, bool implicit, bool hidden = false) {
  return uint8_t((read ? ATOMX_OPERAND_READ : 0) | (write ? ATOMX_OPERAND_WRITE : 0) |
                 (implicit ? ATOMX_OPERAND_IMPLICIT : 0) | (hidden ? ATOMX_OPERAND_HIDDEN : 0));
}

AtomxFactsOperand operandFacts(const Operand& o) {
  AtomxFactsOperand r{};
  r.kind = uint8_t(o.kind), r.regKind = uint8_t(o.regKind), r.type = uint8_t(o.type);
  r.access = accessBits(o.read, o.write, o.implicit, o.hidden);
  r.reg = int8_t(o.reg), r.memIndex = int8_t(o.memIndex);
  r.regBits = uint16_t(o.regBits), r.bits = uint16_t(o.bits), r.elementBits = uint8_t(o.elementBits);
  r.elements = uint8_t(o.elements);
  if (o.reg != r.reg || o.memIndex != r.memIndex || o.elementBits != r.elementBits || o.elements != r.elements)
    throw InternalError("an operand that does not fit the facts' record");
  const MemoryOperand& m = o.mem;
  r.base = int8_t(m.base), r.index = int8_t(m.index), r.scale = uint8_t(m.scale), r.segment = uint8_t(m.segment);
  r.size = uint16_t(m.size), r.memAccess = accessBits(m.read, m.write, m.implicit);
  r.ripRelative = m.ripRelative;
  r.dispLow = uint32_t(uint64_t(m.disp)), r.dispHigh = uint32_t(uint64_t(m.disp) >> 32);
  return r;
}

static_assert(ATOMX_CAUSE_POINTER == int(analysis::MemCause::Pointer) && ATOMX_CAUSE_SAVE_RESTORE == int(analysis::MemCause::SaveRestore));

// The memory operands' causes (analysis::MemoryCauses): the CFI of the
// program's .eh_frame and its stack variables' places (DWARF).
class Causes {
 public:
  explicit Causes(const Engine& engine)
      : eh_(analysis::sectionView(*engine.program().image, ".eh_frame")),
        info_(parse(eh_, analysis::sectionView(*engine.program().image, ".gcc_except_table"))),
        causes_(info_, eh_, slots(engine.inputPath())) {}

  uint8_t of(const Inst& i, const Operand& o) {
    if (o.kind != Operand::Kind::Memory) return ATOMX_CAUSE_NONE;
    using Op = analysis::MemRef::Op;
    analysis::MemRef m;
    const std::string mn = i.mnemonic();
    m.pc = i.pc(), m.instSize = unsigned(i.size());
    m.op = i.kind() == InstClass::Call || i.kind() == InstClass::IndirectCall ? Op::Call
         : i.kind() == InstClass::Return ? Op::Return
         : mn == "push" ? Op::Push : mn == "pop" ? Op::Pop : mn == "leave" ? Op::Leave : mn == "mov" ? Op::Move : Op::Other;
    if (m.op == Op::Push || m.op == Op::Pop || m.op == Op::Move)
      for (unsigned k = 0; k < i.operandCount(); ++k) {
        const Operand r = i.operand(k);
        if (r.kind == Operand::Kind::Register && !r.hidden && r.regKind == Operand::RegKind::General && r.regBits == 64) {
          m.reg = r.reg;
          break;
        }
      }
    const MemoryOperand& a = o.mem;
    m.base = a.base, m.index = a.index, m.disp = a.disp, m.size = a.size;
    m.fsOrGs = a.segment == MemoryOperand::Segment::FS || a.segment == MemoryOperand::Segment::GS;
    m.ripRelative = a.ripRelative, m.implicit = a.implicit || o.hidden, m.read = a.read, m.write = a.write;
    return uint8_t(causes_.classify(m));
  }

 private:
  static unwind::EhFrameInfo parse(unwind::ByteView eh, unwind::ByteView except) {
    try {
      return unwind::parseEhFrame(eh, except);
    } catch (const std::exception&) {
      return {};  // no CFI facts: no saves, and no CFA for the variables
    }
  }
  static std::vector<analysis::StackSlot> slots(const std::string& path) {
    std::vector<analysis::StackSlot> out;
    for (const debuginfo::StackVariable& v : debuginfo::readStackVariables(path))
      out.push_back({v.lo, v.hi, analysis::StackSlot::Base(int(v.base)), v.offset, v.size});
    return out;
  }
  unwind::ByteView eh_;
  unwind::EhFrameInfo info_;
  analysis::MemoryCauses causes_;
};
static_assert(int(debuginfo::StackVariable::Base::Rbp) == int(analysis::StackSlot::Base::Rbp));

template <class T> void put(std::vector<uint8_t>& out, const T& record) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&record);
  out.insert(out.end(), p, p + sizeof record);
}

}  // namespace

std::vector<uint8_t> factsBlob(Engine& engine) {
  const Engine::ApiScope scope(engine);  // the facts are what the public API says
  Strings strings;
  std::unique_ptr<Causes> causes;
  if (engine.factOperandsWanted()) causes = std::make_unique<Causes>(engine);
  std::vector<uint8_t> procs, blocks, insts, operands;
  AtomxFactsHeader h{ATOMX_FACTS_MAGIC, ATOMX_FACTS_VERSION, 0, 0, 0, 0, strings.add(std::string(program().path())), 0};
  for (Proc p : program().procs()) {
    const uint32_t firstBlock = h.blocks;
    for (Block b : p.blocks()) {
      const uint32_t firstInst = h.insts;
      for (Inst i : b.insts()) {
        AtomxFactsInst r{};
        r.pc = i.pc(), r.regsRead = i.regsRead(), r.regsWritten = i.regsWritten();
        r.block = h.blocks;
        r.size = uint8_t(i.size()), r.kind = uint8_t(i.kind()), r.memOperands = uint8_t(i.memOperandCount());
        r.access = uint8_t((i.isLoad() ? 1 : 0) | (i.isStore() ? 2 : 0));
        r.accessSize = uint16_t(r.memOperands ? i.accessSize(0) : 0);
        r.mnemonic = strings.add(i.mnemonic()), r.category = strings.add(i.category());
        const Inst::SourceLine line = i.sourceLine();
        r.file = strings.add(line.file), r.line = line.line;
        r.flagsRead = uint8_t(i.flagsRead()), r.flagsWritten = uint8_t(i.flagsWritten());
        r.flagsMaybeWritten = uint8_t(i.flagsMaybeWritten()), r.flagsLiveAfter = uint8_t(i.flagsLiveAfter());
        r.condition = int8_t(i.condition());
        r.traits = uint8_t((i.isScalarVector() ? ATOMX_SCALAR_VECTOR : 0) | (i.isRepeated() ? ATOMX_REPEATED : 0) |
                           (i.isLocked() ? ATOMX_LOCKED : 0) | (i.isRepeatedWhile() ? ATOMX_REPEATED_WHILE : 0) |
                           (i.isRepeatedWhileNotEqual() ? ATOMX_REPEATED_WHILE_NE : 0));
        r.target = i.hasTarget() ? i.target() : 0;
        if (engine.factOperandsWanted()) {
          r.firstOperand = h.operands, r.operandCount = uint16_t(i.operandCount());
          for (unsigned k = 0; k < r.operandCount; ++k) {
            const Operand o = i.operand(k);
            AtomxFactsOperand f = operandFacts(o);
            f.cause = causes->of(i, o);
            put(operands, f);
          }
          h.operands += r.operandCount;
        }
        put(insts, r);
        ++h.insts;
      }
      const Inst last = b.last();
      put(blocks, AtomxFactsBlock{b.pc(), b.endPc(), h.procs, firstInst, h.insts - firstInst,
                                  uint8_t(last ? last.kind() : InstClass::Other), uint8_t(last ? last.size() : 0), 0});
      ++h.blocks;
    }
    put(procs, AtomxFactsProc{p.pc(), p.endPc(), strings.add(std::string(p.name())), firstBlock, h.blocks - firstBlock, 0});
    ++h.procs;
  }
  std::vector<uint8_t> blob;
  put(blob, h);
  for (const auto* part : {&procs, &blocks, &insts, &operands, &strings.bytes}) blob.insert(blob.end(), part->begin(), part->end());
  return blob;
}

size_t embedFacts(Engine& engine) {
  if (!engine.factsWanted()) return 0;
  const std::vector<uint8_t> blob = factsBlob(engine);
  const uint32_t init = engine.declare("atomx_facts_init(char[], long)");
  engine.addFirst(init, Point::ProgramBefore, {Arg(blob.data(), 1, blob.size()), int64_t(blob.size())});
  return blob.size();
}

}  // namespace atomx::instrument
