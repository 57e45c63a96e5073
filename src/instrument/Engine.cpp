#include "instrument/Engine.h"

#include <algorithm>
#include <atomic>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::instrument {

namespace {

// The engine the public API reaches while a tool's Instrument runs (the API
// takes no context argument, as ATOM's did); set only by Engine::ApiScope.
thread_local Engine* gCurrent = nullptr;

// described()'s last instruction, per thread, and which engine asked.
std::atomic<uint64_t> nextEngineId{1};
struct DescribedCache {
  uint64_t engine = 0;
  Engine::Described described;
};
thread_local DescribedCache tDescribed;

const char* pointName(Point p) {
  switch (p) {
    case Point::InstBefore: return "InstBefore";
    case Point::InstAfter: return "InstAfter";
    case Point::BlockBefore: return "BlockBefore";
    case Point::BlockAfter: return "BlockAfter";
    case Point::ProcBefore: return "ProcBefore";
    case Point::ProcAfter: return "ProcAfter";
    case Point::Edge: return "an edge";
    case Point::ProgramBefore: return "ProgramBefore";
    case Point::ProgramAfter: return "ProgramAfter";
  }
  return "?";
}

const char* argName(Arg::Kind k) {
  switch (k) {
    case Arg::Kind::Constant: return "a constant";
    case Arg::Kind::String: return "a string";
    case Arg::Kind::Array: return "an array";
    case Arg::Kind::PC: return "the PC";
    case Arg::Kind::BranchCondition: return "the branch condition";
    case Arg::Kind::BranchTarget: return "the branch target";
    case Arg::Kind::EffectiveAddress: return "an effective address";
    case Arg::Kind::AccessSize: return "an access size";
    case Arg::Kind::Register: return "a register's value";
    case Arg::Kind::ProcArg: return "a procedure argument";
    case Arg::Kind::ReturnValue: return "the return value";
    case Arg::Kind::ThreadId: return "the thread id";
    case Arg::Kind::Counters: return "a counter array";
  }
  return "?";
}

}  // namespace

bool blockAfterGoesBefore(const x86::Insn& last) {
  return !(last.flow == x86::Flow::Sequential || last.flow == x86::Flow::Call || last.flow == x86::Flow::IndirectCall);
}

namespace {

bool isDynamic(Arg::Kind k) {
  return k != Arg::Kind::Constant && k != Arg::Kind::String && k != Arg::Kind::Array && k != Arg::Kind::Counters;
}

}  // namespace

Engine::Engine(const ir::Program& program, const x86::Decoder& decoder, std::string inputPath)
    : program_(program), decoder_(decoder), inputPath_(std::move(inputPath)), id_(nextEngineId++) {
  // Count first: the handle vectors must never reallocate once pointers into
  // them are handed out.
  size_t nProcs = 0, nBlocks = 0, nInsts = 0, nEdges = 0;
  for (const ir::Procedure& p : program.procs) {
    if (!p.isMovable() || p.blocks.empty()) continue;
    ++nProcs;
    nBlocks += p.blocks.size();
    for (const ir::Block& b : p.blocks) nInsts += b.insnCount, nEdges += b.succs.size();
  }
  procs_.reserve(nProcs);
  blocks_.reserve(nBlocks);
  insts_.reserve(nInsts);
  edges_.reserve(nEdges);
  for (const ir::Procedure& p : program.procs) {
    if (!p.isMovable() || p.blocks.empty()) continue;
    detail::ProcData& pd = procs_.emplace_back();
    pd.proc = &p;
    const size_t firstBlock = blocks_.size();
    for (uint32_t bi = 0; bi < p.blocks.size(); ++bi) {
      const ir::Block& b = p.blocks[bi];
      detail::BlockData& bd = blocks_.emplace_back();
      bd.proc = &pd;
      bd.block = bi;
      bd.firstInst = insts_.data() + insts_.size();
      for (uint32_t i = 0; i < b.insnCount; ++i) insts_.push_back({&bd, b.firstInsn + i});
      bd.endInst = insts_.data() + insts_.size();
    }
    pd.firstBlock = blocks_.data() + firstBlock;
    pd.endBlock = blocks_.data() + blocks_.size();
    for (uint32_t bi = 0; bi < p.blocks.size(); ++bi) {
      detail::BlockData& bd = blocks_[firstBlock + bi];
      bd.firstEdge = edges_.data() + edges_.size();
      for (const ir::Edge& e : p.blocks[bi].succs) edges_.push_back({&bd, &blocks_[firstBlock + e.to], e.kind});
      bd.endEdge = edges_.data() + edges_.size();
    }
  }
}

Engine::~Engine() {
  if (gCurrent == this) gCurrent = nullptr;
}

Engine& Engine::current() {
  if (!gCurrent) throw Error("the instrumentation API is only available while Instrument() runs");
  return *gCurrent;
}

Engine::ApiScope::ApiScope(Engine& engine) : previous_(gCurrent) { gCurrent = &engine; }

Engine::ApiScope::~ApiScope() { gCurrent = previous_; }

const detail::ProcData* Engine::procAt(uint64_t pc) const {
  auto it = std::upper_bound(procs_.begin(), procs_.end(), pc,
                             [](uint64_t a, const detail::ProcData& p) { return a < p.proc->start; });
  if (it == procs_.begin()) return nullptr;
  --it;
  return it->proc->contains(pc) ? &*it : nullptr;
}

uint32_t Engine::declare(std::string_view text) {
  Prototype proto = parsePrototype(text);
  for (uint32_t i = 0; i < routines_.size(); ++i) {
    if (routines_[i].name != proto.name) continue;
    if (routines_[i].text != proto.text)
      throw Error("AddCallProto(\"" + proto.text + "\"): " + proto.name + " was declared before as " +
                  routines_[i].text);
    return i;
  }
  routines_.push_back(std::move(proto));
  return uint32_t(routines_.size() - 1);
}

uint32_t Engine::routineId(std::string_view name) const {
  for (uint32_t i = 0; i < routines_.size(); ++i)
    if (routines_[i].name == name) return i;
  throw Error("'" + std::string(name) + "' has no prototype: declare it with AddCallProto first");
}

const debuginfo::LineTable& Engine::lineTable() const {
  if (!lineTable_) lineTable_ = std::make_unique<debuginfo::LineTable>(inputPath_);
  return *lineTable_;
}

const analysis::FlagsLiveness& Engine::flagsLiveness(const ir::Procedure& proc) const {
  std::unique_ptr<analysis::FlagsLiveness>& live = flagsLiveness_[&proc];
  if (!live) live = std::make_unique<analysis::FlagsLiveness>(program_, proc, decoder_);
  return *live;
}

Engine::Decoded Engine::decode(const ir::Procedure& proc, uint32_t index) const {
  Decoded d;
  const x86::Insn& in = proc.insns[index];
  const uint8_t* bytes = program_.image->bytesAt(in.address, in.length);
  if (!bytes || !decoder_.decodeFull(bytes, in.length, d.insn, d.operands))
    throw InternalError("cannot decode the instruction at " + hex(in.address) + " again");
  return d;
}

x86::Semantics Engine::semantics(const ir::Procedure& proc, uint32_t index) const {
  return described(proc, index).semantics;
}

const Engine::Described& Engine::described(const ir::Procedure& proc, uint32_t index, bool withOperands) const {
  Described& d = tDescribed.described;
  const uint64_t address = proc.insns[index].address;
  if (tDescribed.engine != id_ || d.proc != &proc || d.index != index) {
    tDescribed.engine = id_;
    d.proc = nullptr;  // until it is complete (decode throws on bytes it cannot read)
    d.decoded = decode(proc, index);
    d.semantics = x86::describe(d.decoded.insn, d.decoded.operands, address);
    d.hasOperands = false;
    d.proc = &proc, d.index = index;
  }
  if (withOperands && !d.hasOperands)
    d.operandCount = x86::describeOperands(d.decoded.insn, d.decoded.operands, address, d.operands), d.hasOperands = true;
  return d;
}

const detail::InstData* Engine::contextInst(Point point, const void* where) const {
  switch (point) {
    case Point::InstBefore:
    case Point::InstAfter: return static_cast<const detail::InstData*>(where);
    case Point::BlockBefore: return static_cast<const detail::BlockData*>(where)->firstInst;
    case Point::BlockAfter: return static_cast<const detail::BlockData*>(where)->endInst - 1;
    case Point::ProcBefore: return static_cast<const detail::ProcData*>(where)->firstBlock->firstInst;
    default: return nullptr;
  }
}

std::string Engine::describe(Point point, const void* where) const {
  uint64_t pc = 0;
  if (const detail::InstData* i = contextInst(point, where)) pc = i->block->proc->proc->insns[i->index].address;
  else if (point == Point::ProcAfter) pc = static_cast<const detail::ProcData*>(where)->proc->start;
  else if (point == Point::Edge) {
    auto* e = static_cast<const detail::EdgeData*>(where);
    const ir::Procedure& p = *e->from->proc->proc;
    return std::string(pointName(point)) + " " + hex(p.blocks[e->from->block].start) + " -> " +
           hex(p.blocks[e->to->block].start) + " (" + program_.describe(p.blocks[e->to->block].start) + ")";
  } else return pointName(point);
  return std::string(pointName(point)) + " " + hex(pc) + " (" + program_.describe(pc) + ")";
}

void Engine::check(const Prototype& proto, Point point, const void* where, const std::vector<Arg>& args) const {
  const std::string site = proto.name + " at " + describe(point, where);
  if (args.size() != proto.params.size())
    throw Error(site + ": " + std::to_string(args.size()) + " argument(s) given, but the prototype " + proto.text +
                " has " + std::to_string(proto.params.size()));
  const detail::InstData* ctx = contextInst(point, where);
  const ir::Procedure* proc = ctx ? ctx->block->proc->proc : nullptr;
  const x86::Insn* insn = ctx ? &proc->insns[ctx->index] : nullptr;
  const bool programPoint = point == Point::ProgramBefore || point == Point::ProgramAfter;
  // After an instruction its operands may have changed: values that describe
  // an instruction are only available before it (BlockAfter is placed
  // before a block's final branch, see blockAfterGoesBefore).
  const bool beforeInsn = point == Point::InstBefore || (point == Point::BlockAfter && insn && blockAfterGoesBefore(*insn));
  if (point == Point::InstAfter && insn) {
    if (insn->flow == x86::Flow::Return || insn->flow == x86::Flow::IndirectJump || insn->flow == x86::Flow::Stop)
      throw Error(site + ": control never comes back after this instruction; use InstBefore");
  }
  for (size_t k = 0; k < args.size(); ++k) {
    const Arg& a = args[k];
    const Param& p = proto.params[k];
    const std::string what = site + ": argument " + std::to_string(k + 1) + " (" + p.text + ") is " + argName(a.kind());
    // Does the kind of value fit the parameter's type?
    switch (p.kind) {
      case Param::Kind::Integer:
      case Param::Kind::Value:
        if (a.kind() == Arg::Kind::String || a.kind() == Arg::Kind::Array || a.kind() == Arg::Kind::Counters)
          throw Error(what + ", which needs a pointer or array parameter");
        // A constant must fit the parameter's width, read as a signed or an
        // unsigned number (-1 for an unsigned int is UINT_MAX, as in C);
        // the C API passes an int for a narrower parameter, so 300 reaches
        // here for an unsigned char as it was written.
        if (p.kind == Param::Kind::Integer && a.kind() == Arg::Kind::Constant && p.size < 8) {
          const int64_t lo = -(int64_t(1) << (8 * p.size - 1)), hi = (int64_t(1) << (8 * p.size)) - 1;
          if (a.value() < lo || a.value() > hi)
            throw Error(what + " " + std::to_string(a.value()) + ", which does not fit in its " +
                        std::to_string(p.size) + " byte" + (p.size > 1 ? "s" : "") + " (" + std::to_string(lo) +
                        ".." + std::to_string(hi) + ")");
        }
        break;
      case Param::Kind::RegV:
        if (a.kind() != Arg::Kind::Register) throw Error(what + ", but REGV takes a register number");
        break;
      case Param::Kind::Pointer:
        if (a.kind() == Arg::Kind::Constant && a.value() != 0)
          throw Error(what + ": a pointer of the instrumentation process means nothing at run time; pass a string, "
                             "an array, or a run-time value");
        if (a.kind() == Arg::Kind::String && !p.isString) throw Error(what + ", which needs a char* parameter");
        if (a.kind() == Arg::Kind::Counters && p.isString) throw Error(what + ", which needs a long* parameter");
        if (a.kind() == Arg::Kind::Counters && (a.value() < 0 || size_t(a.value()) >= counterArrays_.size()))
          throw Error(what + " that this tool never made");
        break;
      case Param::Kind::Array:
        if (a.kind() == Arg::Kind::String) {
          if (p.size != 1) throw Error(what + ", which needs a char[] parameter");
        } else if (a.kind() == Arg::Kind::Counters) {
          if (p.size != 8) throw Error(what + ", which needs a long[] parameter");
        } else if (a.kind() != Arg::Kind::Array) {
          throw Error(what + ", but the parameter is an array");
        } else if (a.elementSize() != p.size) {
          throw Error(what + " of " + std::to_string(a.elementSize()) + "-byte elements, but the parameter's are " +
                      std::to_string(p.size) + " bytes");
        } else if (p.arrayLength && a.bytes().size() / a.elementSize() != p.arrayLength) {
          throw Error(what + " of " + std::to_string(a.bytes().size() / a.elementSize()) + " elements, but the parameter has " +
                      std::to_string(p.arrayLength));
        }
        break;
    }
    // Can the value be computed at this point?
    if (programPoint && isDynamic(a.kind()) && a.kind() != Arg::Kind::ThreadId)
      throw Error(what + ", which does not exist at " + pointName(point) + " (only constants, strings, arrays and the thread id)");
    switch (a.kind()) {
      case Arg::Kind::BranchCondition:
        if (!insn || !beforeInsn || insn->flow != x86::Flow::CondBranch)
          throw Error(what + ", but the point is not before a conditional branch");
        break;
      case Arg::Kind::BranchTarget:
        if (!insn || !beforeInsn || insn->flow == x86::Flow::Sequential || insn->flow == x86::Flow::Stop)
          throw Error(what + ", but the point is not before a branch, call or return");
        break;
      case Arg::Kind::EffectiveAddress:
      case Arg::Kind::AccessSize: {
        if (!insn || point != Point::InstBefore) throw Error(what + ", which is only available at InstBefore");
        const size_t n = semantics(*proc, ctx->index).memCount;
        if (a.value() < 0 || size_t(a.value()) >= n)
          throw Error(what + " of memory operand " + std::to_string(a.value()) + ", but the instruction has " +
                      std::to_string(n) + " memory operand(s)");
        break;
      }
      case Arg::Kind::Register:
        if (a.value() < 0 || a.value() > 15) throw Error(what + ": register number " + std::to_string(a.value()) + " is not 0..15");
        break;
      case Arg::Kind::ProcArg:
        if (point != Point::ProcBefore) throw Error(what + ", which is only available at ProcBefore");
        if (a.value() < 0 || a.value() > 63) throw Error(what + ": argument number out of range");
        break;
      case Arg::Kind::ReturnValue:
        if (point != Point::ProcAfter) throw Error(what + ", which is only available at ProcAfter");
        break;
      case Arg::Kind::PC:
      case Arg::Kind::Counters:
      case Arg::Kind::ThreadId:
      case Arg::Kind::Constant:
      case Arg::Kind::String:
      case Arg::Kind::Array: break;
    }
  }
}

void Engine::add(uint32_t routine, Point point, const void* where, std::vector<Arg> args) {
  const Prototype& proto = routines_.at(routine);
  const bool programPoint = point == Point::ProgramBefore || point == Point::ProgramAfter;
  if (!programPoint && !where) throw Error(proto.name + ": a call at " + pointName(point) + " needs a place (got null)");
  check(proto, point, where, args);
  calls_.push_back({routine, point, where, std::move(args), uint32_t(calls_.size()), {}});
}

void Engine::addUnless(uint32_t routine, Point point, const void* where, std::vector<MruTest> tests,
                       std::vector<Arg> args) {
  const Prototype& proto = routines_.at(routine);
  if (point != Point::InstBefore && point != Point::BlockBefore)
    throw Error(proto.name + ": a call unless a test passes goes before an instruction or a block, not at " +
                pointName(point));
  if (!where) throw Error(proto.name + ": a call at " + std::string(pointName(point)) + " needs a place (got null)");
  const std::string site = proto.name + " at " + describe(point, where);
  if (tests.empty()) throw Error(site + ": beforeUnless with no test");
  for (const MruTest& t : tests) checkMruTest(t, point, where, site);
  check(proto, point, where, args);
  calls_.push_back({routine, point, where, std::move(args), uint32_t(calls_.size()), std::move(tests)});
}

void Engine::checkMruTest(const MruTest& t, Point point, const void* where, const std::string& site) const {
  if (t.descriptor >= counterArrays_.size() || counterArrays_[t.descriptor] < MruDescriptor::kWords)
    throw Error(site + ": an MruTest whose descriptor this tool never made");
  if (point == Point::BlockBefore) {
    if (t.address != MruTest::Address::Block) throw Error(site + ": a block's test is mruHitBlock");
    auto* b = static_cast<const detail::BlockData*>(where);
    const ir::Block& blk = b->proc->proc->blocks[b->block];
    const uint64_t bytes = blk.end - blk.start;
    if (t.disp < 0 || uint64_t(t.disp) + t.size > bytes || (t.size == 0 && uint64_t(t.disp) >= bytes))
      throw Error(site + ": bytes " + std::to_string(t.disp) + " to " + std::to_string(t.disp + t.size) +
                  " of a block of " + std::to_string(bytes));
    return;
  }
  if (t.address == MruTest::Address::Block) throw Error(site + ": mruHitBlock is a block's test");
  if (t.size < 1 || t.size > 4096) throw Error(site + ": a reference of " + std::to_string(t.size) + " bytes (1 to 4096)");
  auto* inst = static_cast<const detail::InstData*>(where);
  const x86::Semantics sem = semantics(*inst->block->proc->proc, inst->index);
  if (sem.repeated) throw Error(site + ": a rep-prefixed instruction may access nothing, or many times");
  if (t.address == MruTest::Address::Parts) {
    if (t.base < -1 || t.base > 15 || t.index < -1 || t.index > 15 || t.index == int(Reg::rsp))
      throw Error(site + ": an MruTest's registers are general registers 0..15 (not %rsp as index) or -1");
    if (t.scale != 1 && t.scale != 2 && t.scale != 4 && t.scale != 8) throw Error(site + ": scale 1, 2, 4 or 8");
    if (t.disp < INT32_MIN || t.disp > INT32_MAX) throw Error(site + ": a displacement beyond 32 bits");
    return;
  }
  if (t.operand >= sem.memCount)
    throw Error(site + ": memory operand " + std::to_string(t.operand) + ", but the instruction has " +
                std::to_string(sem.memCount));
  if (sem.mem[t.operand].segment == x86::Segment::GS) throw Error(site + ": a %gs-relative address atomx cannot compute");
}

void Engine::addFirst(uint32_t routine, Point point, std::vector<Arg> args) {
  check(routines_.at(routine), point, nullptr, args);
  calls_.insert(calls_.begin() + ptrdiff_t(firstCalls_++), {routine, point, nullptr, std::move(args), 0, {}});
  for (uint32_t k = 0; k < calls_.size(); ++k) calls_[k].order = k;
}

uint32_t Engine::addCounters(uint64_t count) {
  if (count > kMaxCounters) throw Error("Counters: " + std::to_string(count) + " counters are more than atomx places (2^28)");
  counterArrays_.push_back(count);
  return uint32_t(counterArrays_.size() - 1);
}

void Engine::reserveCounters(uint32_t counters, uint64_t count) {
  if (counters >= counterArrays_.size()) throw Error("Counters::reserve on an array this tool never made");
  if (count > kMaxCounters) throw Error("Counters: " + std::to_string(count) + " counters are more than atomx places (2^28)");
  counterArrays_[counters] = std::max(counterArrays_[counters], count);
}

void Engine::checkCounter(const char* api, uint32_t counters, uint64_t index, Point point, const void* where) {
  if (counters >= counterArrays_.size()) throw Error(std::string(api) + " on an array this tool never made");
  if (!where) throw Error(std::string(api) + " at a null place");
  if (index >= kMaxCounters)
    throw Error(std::string(api) + " at " + describe(point, where) + ": counter " + std::to_string(index) +
                " is past the 2^28 atomx places");
  counterArrays_[counters] = std::max(counterArrays_[counters], index + 1);
}

void Engine::addIncrement(uint32_t counters, uint64_t index, Point point, const void* where, const AddressTest* test) {
  checkCounter("Counters::increment", counters, index, point, where);
  if (test) checkAddressTest(*test, static_cast<const detail::InstData*>(where));
  increments_.push_back({counters, index, point, where, test != nullptr, test ? *test : AddressTest{}});
}

void Engine::addAccumulate(IncrementRequest::Accumulate what, unsigned reg, uint32_t counters, uint64_t index,
                           Point point, const void* where, const uint64_t* spill, const uint32_t* spillArray,
                           unsigned variable) {
  using Acc = IncrementRequest::Accumulate;
  if (reg == 0 || reg == 4 || reg > 15) throw InternalError("a promoted counter in %rax, %rsp or no register");
  if ((what == Acc::Mark || what == Acc::Measure) && (variable == 4 || variable > 15 || variable == reg))
    throw InternalError("an induction variable in %rsp or in its counter's register");
  if (what == Acc::Flush || what == Acc::Measure) checkCounter("Counters::count", counters, index, point, where);
  IncrementRequest r;
  r.counters = counters, r.index = index, r.point = point, r.where = where;
  r.accumulate = what, r.reg = uint8_t(reg), r.variable = uint8_t(variable);
  if (spill) r.spilled = true, r.spill = *spill, r.spillCounters = spillArray ? *spillArray : counters;
  increments_.push_back(r);
}

void Engine::holdPrediction(size_t k, unsigned reg) {
  IncrementRequest& r = increments_.at(k);
  if (r.predict == IncrementRequest::Predict::None || reg == 0 || reg == 4 || reg > 15)
    throw InternalError("a prediction held in %rax, %rsp or no register, or no prediction");
  r.held = true, r.reg = uint8_t(reg);
}

void Engine::addPrediction(uint32_t counters, uint64_t state, uint64_t miss, const void* edge, bool taken) {
  // Checked as two increments at the edge (the array grows to hold both);
  // the second becomes the prediction.
  addIncrement(counters, miss, Point::Edge, edge);
  addIncrement(counters, state, Point::Edge, edge);
  increments_.erase(increments_.end() - 2);
  IncrementRequest& r = increments_.back();
  r.predict = taken ? IncrementRequest::Predict::Taken : IncrementRequest::Predict::NotTaken;
  r.miss = miss;
}

void Engine::addCount(uint32_t counters, uint64_t index, Point point, const void* where) {
  checkCounter("Counters::count", counters, index, point, where);
  counts_.push_back({counters, index, point, where});
}

void Engine::checkAddressTest(const AddressTest& t, const detail::InstData* inst) const {
  const std::string site = "Counters::incrementIf at " + describe(Point::InstBefore, inst);
  if (t.modulus < 2 || t.modulus > 4096 || (t.modulus & (t.modulus - 1)))
    throw Error(site + ": the modulus " + std::to_string(t.modulus) + " is not a power of two from 2 to 4096");
  if (t.above >= t.modulus)
    throw Error(site + ": " + std::to_string(t.above) + " is not below the modulus " + std::to_string(t.modulus));
  const x86::Semantics sem = semantics(*inst->block->proc->proc, inst->index);
  if (t.operand >= sem.memCount)
    throw Error(site + ": memory operand " + std::to_string(t.operand) + ", but the instruction has " +
                std::to_string(sem.memCount));
  if (sem.repeated)
    throw Error(site + ": a rep-prefixed instruction may access nothing; use a call with reg(Reg::rcx)");
  if (sem.mem[t.operand].segment == x86::Segment::GS)
    throw Error(site + ": a %gs-relative address atomx cannot compute");
}

}  // namespace atomx::instrument
