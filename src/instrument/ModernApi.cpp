// The typed C++ API (<atomx/atomx.hpp>) over the Engine.
#include <atomx/atomx.hpp>

#include <cstring>

#include "instrument/Engine.h"
#include "instrument/ToolBuild.h"
#include "support/Error.h"

namespace atomx {

using instrument::Engine;

namespace {

const ir::Procedure& procOf(const detail::InstData* d) { return *d->block->proc->proc; }
const x86::Insn& insnOf(const detail::InstData* d) { return procOf(d).insns[d->index]; }
const ir::Block& blockOf(const detail::BlockData* d) { return d->proc->proc->blocks[d->block]; }

const char* kindOf(const detail::InstData*) { return "Inst"; }
const char* kindOf(const detail::BlockData*) { return "Block"; }
const char* kindOf(const detail::ProcData*) { return "Proc"; }
const char* kindOf(const detail::EdgeData*) { return "Edge"; }

// A member function called on a null handle (a default-constructed Inst,
// Block::next() past the last ...): the call, and where in the tool it was
// made ("Inst::pc() called on a null Inst, in the tool: Instrument at
// tool.cpp:12").  `caller`: the member function's return address.
template <class D>
void requireHandle(const D* d, const char* what, const void* caller) {
  if (d) return;
  const std::string where = instrument::toolSourceAt(uintptr_t(caller) - 1);
  throw Error(std::string(kindOf(d)) + "::" + what + "() called on a null " + kindOf(d) +
              (where.empty() ? "" : ", in the tool: " + where));
}
// In every member function that reads its handle (the return address is
// the tool's call, so it must be taken there).
#define REQUIRE_HANDLE(d, what) requireHandle(d, what, __builtin_return_address(0))

}  // namespace

// --- Handle arithmetic (the public ranges see incomplete types) ----------

namespace detail {
const ProcData* advance(const ProcData* d, ptrdiff_t n) { return d + n; }
const BlockData* advance(const BlockData* d, ptrdiff_t n) { return d + n; }
const InstData* advance(const InstData* d, ptrdiff_t n) { return d + n; }
const EdgeData* advance(const EdgeData* d, ptrdiff_t n) { return d + n; }
ptrdiff_t distance(const ProcData* a, const ProcData* b) { return b - a; }
ptrdiff_t distance(const BlockData* a, const BlockData* b) { return b - a; }
ptrdiff_t distance(const InstData* a, const InstData* b) { return b - a; }
ptrdiff_t distance(const EdgeData* a, const EdgeData* b) { return b - a; }
}  // namespace detail

// --- Inst ---------------------------------------------------------------

uint64_t Inst::pc() const { REQUIRE_HANDLE(d_, "pc"); return insnOf(d_).address; }
unsigned Inst::size() const { REQUIRE_HANDLE(d_, "size"); return insnOf(d_).length; }

std::string Inst::text() const {
  REQUIRE_HANDLE(d_, "text");
  const x86::Insn& in = insnOf(d_);
  const Engine& e = Engine::current();
  return e.decoder().format(e.program().image->bytesAt(in.address, in.length), in.length, in.address);
}

std::string Inst::mnemonic() const {
  REQUIRE_HANDLE(d_, "mnemonic");
  return ZydisMnemonicGetString(ZydisMnemonic(insnOf(d_).mnemonic));
}

InstClass Inst::kind() const {
  REQUIRE_HANDLE(d_, "kind");
  switch (insnOf(d_).flow) {
    case x86::Flow::Sequential: return InstClass::Other;
    case x86::Flow::CondBranch: return InstClass::CondBranch;
    case x86::Flow::Jump: return InstClass::Jump;
    case x86::Flow::IndirectJump: return InstClass::IndirectJump;
    case x86::Flow::Call: return InstClass::Call;
    case x86::Flow::IndirectCall: return InstClass::IndirectCall;
    case x86::Flow::Return: return InstClass::Return;
    case x86::Flow::Stop: return InstClass::Stop;
  }
  return InstClass::Other;
}

namespace {
x86::Semantics semanticsOf(const detail::InstData* d) { return Engine::current().semantics(procOf(d), d->index); }
}  // namespace

unsigned Inst::memOperandCount() const { REQUIRE_HANDLE(d_, "memOperandCount"); return semanticsOf(d_).memCount; }
bool Inst::isLoad() const { REQUIRE_HANDLE(d_, "isLoad"); return semanticsOf(d_).loads(); }
bool Inst::isStore() const { REQUIRE_HANDLE(d_, "isStore"); return semanticsOf(d_).stores(); }

unsigned Inst::accessSize(unsigned operand) const {
  REQUIRE_HANDLE(d_, "accessSize");
  const x86::Semantics sem = semanticsOf(d_);
  if (operand >= sem.memCount) throw Error("accessSize: the instruction at " + std::to_string(pc()) + " has no memory operand " + std::to_string(operand));
  return sem.mem[operand].size;
}

bool Inst::hasTarget() const { REQUIRE_HANDLE(d_, "hasTarget"); return insnOf(d_).isDirectBranch(); }
uint64_t Inst::target() const { REQUIRE_HANDLE(d_, "target"); return insnOf(d_).isDirectBranch() ? insnOf(d_).target : 0; }
std::string Inst::calleeName() const {
  REQUIRE_HANDLE(d_, "calleeName");
  const x86::Insn& in = insnOf(d_);
  const ir::Program& program = Engine::current().program();
  auto strip = [](const std::string& plt) { return plt.substr(0, plt.rfind("@plt")); };
  if (in.flow == x86::Flow::Call || in.flow == x86::Flow::Jump) {
    if (auto it = program.pltNames.find(in.target); it != program.pltNames.end()) return strip(it->second);
    const ir::Procedure* p = program.procAt(in.target);
    return p && p->start == in.target ? p->name : "";
  }
  if ((in.flow == x86::Flow::IndirectCall || in.flow == x86::Flow::IndirectJump) && in.isRipRelative())
    if (auto it = program.gotNames.find(in.target); it != program.gotNames.end()) return it->second;
  return "";
}

std::string Inst::category() const {
  REQUIRE_HANDLE(d_, "category");
  const char* name = ZydisCategoryGetString(Engine::current().described(procOf(d_), d_->index).decoded.insn.meta.category);
  return name ? name : "";
}

static_assert(int(MemoryOperand::Segment::GS) == int(x86::Segment::GS) && kCF == x86::flag::CF && kOF == x86::flag::OF &&
              kZF == x86::flag::ZF);
namespace {
MemoryOperand memoryOperand(const x86::MemOperand& m) {
  MemoryOperand r;
  r.base = m.base, r.index = m.index, r.scale = m.scale, r.disp = m.disp;
  r.segment = MemoryOperand::Segment(int(m.segment));
  r.size = m.size, r.read = m.read, r.write = m.write, r.implicit = m.implicit;
  r.ripRelative = m.ripRelative, r.target = m.target;
  r.addressWidth = m.addressWidth, r.vectorIndex = m.vectorIndex;
  return r;
}
}  // namespace

MemoryOperand Inst::memOperand(unsigned operand) const {
  REQUIRE_HANDLE(d_, "memOperand");
  const x86::Semantics sem = semanticsOf(d_);
  if (operand >= sem.memCount)
    throw Error("memOperand(" + std::to_string(operand) + ") of an instruction with " + std::to_string(sem.memCount) +
                " memory operand(s)");
  return memoryOperand(sem.mem[operand]);
}

static_assert(int(Operand::Kind::Target) == int(x86::OperandKind::Target) &&
              int(Operand::RegKind::Other) == int(x86::RegKind::Other) && int(Operand::Type::Other) == int(x86::ElementType::Other));
unsigned Inst::operandCount() const {
  REQUIRE_HANDLE(d_, "operandCount");
  return Engine::current().described(procOf(d_), d_->index, true).operandCount;
}

Operand Inst::operand(unsigned k) const {
  REQUIRE_HANDLE(d_, "operand");
  const Engine::Described& d = Engine::current().described(procOf(d_), d_->index, true);
  if (k >= d.operandCount)
    throw Error("operand(" + std::to_string(k) + ") of an instruction with " + std::to_string(d.operandCount) + " operand(s)");
  const x86::OperandInfo& o = d.operands[k];
  Operand r;
  r.kind = Operand::Kind(int(o.kind));
  r.regKind = Operand::RegKind(int(o.regKind));
  r.reg = o.reg, r.regBits = o.regBits, r.bits = o.bits;
  r.type = Operand::Type(int(o.type));
  r.elementBits = o.elementBits, r.elements = o.elements;
  r.read = o.read, r.write = o.write, r.implicit = o.implicit, r.hidden = o.hidden;
  r.memIndex = o.memIndex;
  if (o.kind == x86::OperandKind::Memory || o.kind == x86::OperandKind::Address) r.mem = memoryOperand(o.mem);
  return r;
}

unsigned Inst::flagsRead() const { REQUIRE_HANDLE(d_, "flagsRead"); return semanticsOf(d_).flags.read & x86::flag::kStatus; }
unsigned Inst::flagsWritten() const {
  REQUIRE_HANDLE(d_, "flagsWritten");
  return semanticsOf(d_).flags.anyWritten() & x86::flag::kStatus;
}
bool Inst::isScalarVector() const { REQUIRE_HANDLE(d_, "isScalarVector"); return semanticsOf(d_).scalarVector; }
bool Inst::isRepeated() const { REQUIRE_HANDLE(d_, "isRepeated"); return semanticsOf(d_).repeated; }
bool Inst::isLocked() const { REQUIRE_HANDLE(d_, "isLocked"); return semanticsOf(d_).locked; }
bool Inst::isRepeatedWhile() const { REQUIRE_HANDLE(d_, "isRepeatedWhile"); return semanticsOf(d_).repeatedWhile; }
bool Inst::isRepeatedWhileNotEqual() const {
  REQUIRE_HANDLE(d_, "isRepeatedWhileNotEqual");
  return semanticsOf(d_).repeatedWhileNotEqual;
}
bool Inst::isCompareExchange() const {
  REQUIRE_HANDLE(d_, "isCompareExchange");
  return semanticsOf(d_).compareExchange;
}
bool Inst::isCacheControl() const { REQUIRE_HANDLE(d_, "isCacheControl"); return semanticsOf(d_).cacheControl; }
unsigned Inst::flagsMaybeWritten() const {
  REQUIRE_HANDLE(d_, "flagsMaybeWritten");
  return semanticsOf(d_).flags.maybe & x86::flag::kStatus;
}
unsigned Inst::flagsLiveAfter() const {
  REQUIRE_HANDLE(d_, "flagsLiveAfter");
  const ir::Procedure& proc = procOf(d_);
  const analysis::FlagsLiveness& live = Engine::current().flagsLiveness(proc);
  const x86::Insn& in = insnOf(d_);
  switch (in.flow) {
    case x86::Flow::Return:
    case x86::Flow::Stop:
      return 0;
    case x86::Flow::Jump:
      return live.at(in.target);
    case x86::Flow::CondBranch:
      return live.after(d_->index) | live.at(in.target);
    case x86::Flow::IndirectJump: {  // a jump table's targets; anything else is a tail call
      unsigned flags = 0;
      for (const detail::EdgeData* e = d_->block->firstEdge; e != d_->block->endEdge; ++e)
        flags |= live.before(e->to->firstInst->index);
      return flags;
    }
    default:  // falls through; a call, once it returns
      return live.after(d_->index);
  }
}

int Inst::condition() const {
  REQUIRE_HANDLE(d_, "condition");
  const uint8_t c = semanticsOf(d_).condition;
  return c == x86::kNoCondition ? -1 : int(c);
}

// The API's RegSet is x86::RegSet's layout, with kFlagsBit for the status flags.
static_assert(x86::RegSet::gpr(15).bits == regBit(Reg(15)) && x86::RegSet::vector(31).bits == vectorRegBit(31) &&
              (x86::RegSet::gpr(15).bits << 1) == kFlagsBit);
uint64_t Inst::regsRead() const {
  REQUIRE_HANDLE(d_, "regsRead");
  const x86::Semantics sem = semanticsOf(d_);
  return sem.read.bits | ((sem.flags.read & x86::flag::kStatus) ? kFlagsBit : 0);
}

uint64_t Inst::regsWritten() const {
  REQUIRE_HANDLE(d_, "regsWritten");
  const x86::Semantics sem = semanticsOf(d_);
  return sem.written.bits | ((sem.flags.anyWritten() & x86::flag::kStatus) ? kFlagsBit : 0);
}

Inst::SourceLine Inst::sourceLine() const {
  REQUIRE_HANDLE(d_, "sourceLine");
  const debuginfo::SourceLine l = Engine::current().lineTable().lookup(insnOf(d_).address);
  return l.file ? SourceLine{*l.file, l.line} : SourceLine{};
}

size_t Inst::id() const { REQUIRE_HANDLE(d_, "id"); return size_t(d_ - Engine::current().insts().data()); }
Inst Inst::next() const { REQUIRE_HANDLE(d_, "next"); return Inst(d_ + 1 == d_->block->endInst ? nullptr : d_ + 1); }
Inst Inst::prev() const { REQUIRE_HANDLE(d_, "prev"); return Inst(d_ == d_->block->firstInst ? nullptr : d_ - 1); }
Block Inst::block() const { REQUIRE_HANDLE(d_, "block"); return Block(d_->block); }
Proc Inst::proc() const { REQUIRE_HANDLE(d_, "proc"); return Proc(d_->block->proc); }

// --- Block ----------------------------------------------------------------

uint64_t Block::pc() const { REQUIRE_HANDLE(d_, "pc"); return blockOf(d_).start; }
uint64_t Block::endPc() const { REQUIRE_HANDLE(d_, "endPc"); return blockOf(d_).end; }
Range<Inst, detail::InstData> Block::insts() const { REQUIRE_HANDLE(d_, "insts"); return {d_->firstInst, d_->endInst}; }
Inst Block::first() const { REQUIRE_HANDLE(d_, "first"); return Inst(d_->firstInst); }
Inst Block::last() const { REQUIRE_HANDLE(d_, "last"); return Inst(d_->endInst - 1); }
Range<Edge, detail::EdgeData> Block::succs() const { REQUIRE_HANDLE(d_, "succs"); return {d_->firstEdge, d_->endEdge}; }
Block Block::next() const { REQUIRE_HANDLE(d_, "next"); return Block(d_ + 1 == d_->proc->endBlock ? nullptr : d_ + 1); }
Proc Block::proc() const { REQUIRE_HANDLE(d_, "proc"); return Proc(d_->proc); }

// --- Edge -----------------------------------------------------------------

Block Edge::from() const { REQUIRE_HANDLE(d_, "from"); return Block(d_->from); }
Block Edge::to() const { REQUIRE_HANDLE(d_, "to"); return Block(d_->to); }
EdgeKind Edge::kind() const {
  REQUIRE_HANDLE(d_, "kind");
  switch (d_->kind) {
    case ir::EdgeKind::FallThrough: return EdgeKind::FallThrough;
    case ir::EdgeKind::Taken: return EdgeKind::Taken;
    case ir::EdgeKind::JumpTable: return EdgeKind::JumpTable;
    default: break;  // edge handles are intra-procedural only (Engine): unreachable
  }
  return EdgeKind::FallThrough;
}

// --- Proc / Program -------------------------------------------------------

std::string_view Proc::name() const { REQUIRE_HANDLE(d_, "name"); return d_->proc->name; }
uint64_t Proc::pc() const { REQUIRE_HANDLE(d_, "pc"); return d_->proc->start; }
uint64_t Proc::endPc() const { REQUIRE_HANDLE(d_, "endPc"); return d_->proc->end; }
Range<Block, detail::BlockData> Proc::blocks() const { REQUIRE_HANDLE(d_, "blocks"); return {d_->firstBlock, d_->endBlock}; }
Block Proc::entry() const { REQUIRE_HANDLE(d_, "entry"); return Block(d_->firstBlock); }

Proc Proc::next() const {
  REQUIRE_HANDLE(d_, "next");
  const auto& procs = Engine::current().procs();
  return Proc(d_ + 1 == procs.data() + procs.size() ? nullptr : d_ + 1);
}

Range<Proc, detail::ProcData> Program::procs() const {
  const auto& procs = Engine::current().procs();
  return {procs.data(), procs.data() + procs.size()};
}
std::string_view Program::path() const { return Engine::current().inputPath(); }
Proc Program::procAt(uint64_t pc) const { return Proc(Engine::current().procAt(pc)); }
Program program() { return Program(); }
void embedFacts(FactsDetail detail) { Engine::current().wantFacts(detail == FactsDetail::Operands); }
size_t Block::id() const { REQUIRE_HANDLE(d_, "id"); return size_t(d_ - Engine::current().blocks().data()); }
size_t Proc::id() const { REQUIRE_HANDLE(d_, "id"); return size_t(d_ - Engine::current().procs().data()); }

// --- Arguments and routines -------------------------------------------------

Arg::Arg(const char* text) : kind_(Kind::String), elementSize_(1) {
  if (!text) throw Error("a null string argument");
  bytes_.assign(text, std::strlen(text) + 1);
}

Arg::Arg(const void* data, size_t elementSize, size_t count) : kind_(Kind::Array), elementSize_(unsigned(elementSize)) {
  if (!data && count) throw Error("a null array argument");
  if (count == 0) throw Error("an empty array argument");
  bytes_.assign(static_cast<const char*>(data), elementSize * count);
}

Routine::Routine(std::string_view prototype) : id_(Engine::current().declare(prototype)) {}
Routine Routine::named(std::string_view name) {
  Routine r;
  r.id_ = Engine::current().routineId(name);
  return r;
}

std::string_view Routine::name() const { return Engine::current().routine(id_).name; }

void Routine::add(Point point, const void* where, std::vector<Arg> args) const {
  Engine::current().add(id_, point, where, std::move(args));
}

void Routine::addUnless(Point point, const void* where, std::vector<MruTest> tests, std::vector<Arg> args) const {
  Engine::current().addUnless(id_, point, where, std::move(tests), std::move(args));
}

MruDescriptor::MruDescriptor() : words_(Engine::current().addMruDescriptor()) {}

Counters::Counters(size_t count) : id_(Engine::current().addCounters(count)) {}
size_t Counters::size() const { return size_t(Engine::current().counterArrays().at(id_)); }
void Counters::reserve(size_t count) const { Engine::current().reserveCounters(id_, count); }

void Counters::add(Point point, const void* where, size_t k) const {
  Engine::current().addIncrement(id_, k, point, where);
}

void Counters::predict(Edge e, size_t state, size_t miss, bool taken) const {
  Engine::current().addPrediction(id_, state, miss, e.handle(), taken);
}

void Counters::count(Block b, size_t k) const { Engine::current().addCount(id_, k, Point::BlockBefore, b.handle()); }
void Counters::count(Edge e, size_t k) const { Engine::current().addCount(id_, k, Point::Edge, e.handle()); }

void Counters::incrementIf(Inst i, AddressTest test, size_t k) const {
  Engine::current().addIncrement(id_, k, Point::InstBefore, i.handle(), &test);
}

}  // namespace atomx
