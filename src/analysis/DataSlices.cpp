#include "analysis/DataSlices.h"

#include "analysis/TracePlan.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <map>
#include <optional>

#include "support/Hex.h"

namespace atomx::analysis {

namespace {

constexpr uint16_t kAll = 0xffff;

// What one instruction does, as the address-needed analysis sees it.
struct Step {
  uint16_t writes = 0;   // general registers it may write (a call: the caller-saved ones too)
  uint16_t address = 0;  // base and index registers of its Computed operands
  bool recordsAll = false;  // a setjmp-like call: every needed register is recorded after it
  uint16_t recordAlways = 0;  // recorded after it whether needed or not (a repe/repne's %rcx: its count)
  uint16_t needs = 0;  // needed before it for the procedure it jumps to: %rsp, which that one carries in
};

bool isStringOp(const ZydisDecodedInstruction& insn) { return insn.meta.category == ZYDIS_CATEGORY_STRINGOP; }

bool callsSetjmp(const ir::Program& program, const x86::Insn& in) {
  if (in.flow != x86::Flow::Call) return false;
  if (auto plt = program.pltNames.find(in.target); plt != program.pltNames.end()) return isSetjmp(plt->second);
  const ir::Procedure* callee = program.procAt(in.target);
  return callee && callee->start == in.target && isSetjmp(callee->name);
}

// A call to vfork (or getcontext, savectx): it returns twice, the second
// time in the parent after the child, which shared its memory, has run.
bool callsVfork(const ir::Program& program, const x86::Insn& in) {
  if (in.flow != x86::Flow::Call) return false;
  auto plt = program.pltNames.find(in.target);
  if (plt == program.pltNames.end()) return false;
  for (const char* name : {"vfork@plt", "__vfork@plt", "getcontext@plt", "savectx@plt"})
    if (plt->second == name) return true;
  return false;
}

// Whether instruction i ends a block the trace plan marks RESUMED (a call
// to a setjmp-like function the plan found).
bool resumesAfter(const ir::Procedure& proc, const ProcTrace* trace, size_t i) {
  if (!trace || trace->resumes.empty()) return false;
  const int64_t b = proc.blockIndexAt(proc.insns[i].address);
  if (b < 0 || !trace->resumes[size_t(b)]) return false;
  const ir::Block& blk = proc.blocks[size_t(b)];
  return blk.firstInsn + blk.insnCount - 1 == i;
}

// Runs `flow(b)` over the blocks in order, storing each result in
// out[b], until none changes (a forward data flow's fixed point).
template <class T, class F>
void toFixedPoint(std::vector<T>& out, F flow) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < out.size(); ++b) {
      const T v = flow(b);
      if (!(v == out[b])) out[b] = v, changed = true;
    }
  }
}

// A load into a 32- or 64-bit general register whose value is its first
// 1, 2 or 4 bytes extended (InsnSlice::valueBytes).
void narrowValue(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* ops, InsnSlice& s) {
  if (insn.operand_count_visible != 2 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
      ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY)
    return;
  const ZydisRegister dst = ops[0].reg.value;
  const bool r32 = dst >= ZYDIS_REGISTER_EAX && dst <= ZYDIS_REGISTER_R15D;
  const bool r64 = dst >= ZYDIS_REGISTER_RAX && dst <= ZYDIS_REGISTER_R15;
  if (!r32 && !r64) return;
  const unsigned src = ops[1].size / 8;
  using E = InsnSlice::Extend;
  E extend;
  switch (insn.mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
      if (!r32) return;  // 8 bytes: nothing to save
      extend = E::Zero;
      break;
    case ZYDIS_MNEMONIC_MOVZX: extend = E::Zero; break;
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD: extend = r32 ? E::Sign32 : E::Sign64; break;
    default: return;
  }
  if (src != 1 && src != 2 && src != 4) return;
  s.valueReg = int8_t(r32 ? dst - ZYDIS_REGISTER_EAX : dst - ZYDIS_REGISTER_RAX);
  s.valueBytes = uint8_t(src);
  s.valueExtend = extend;
}

// One procedure decoded: each instruction, its operands, its semantics
// and the emulator's op for it.
struct DecodedProc {
  std::vector<ZydisDecodedInstruction> insn;
  std::vector<ZydisDecodedOperand> operands;
  std::vector<x86::Semantics> sem;
  std::vector<x86::EmuOp> op;
  std::vector<bool> ok;
  const ZydisDecodedOperand* ops(size_t i) const { return &operands[i * ZYDIS_MAX_OPERAND_COUNT]; }
};

DecodedProc decodeProc(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder) {
  const size_t n = proc.insns.size();
  DecodedProc d;
  d.insn.resize(n);
  d.operands.resize(n * ZYDIS_MAX_OPERAND_COUNT);
  d.sem.resize(n);
  d.op.resize(n);
  d.ok.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const x86::Insn& in = proc.insns[i];
    ZydisDecodedOperand* ops = &d.operands[i * ZYDIS_MAX_OPERAND_COUNT];
    const uint8_t* bytes = program.image->bytesAt(in.address, in.length);
    if (!bytes || !decoder.decodeFull(bytes, in.length, d.insn[i], ops)) continue;
    d.ok[i] = true;
    d.sem[i] = x86::describe(d.insn[i], ops, in.address);
    d.op[i] = x86::compileEmu(d.insn[i], ops, in.address);
  }
  return d;
}

// Where the regenerator does not carry the registers in, the trace plan's
// tags aside (computeDataSlices adds them).
bool entryBlock(const ir::Block& blk) {
  bool intraPred = false;
  for (const ir::PredEdge& p : blk.preds) intraPred |= ir::isIntraprocedural(p.kind);
  return blk.isEntry || blk.isLandingPad || blk.isExternalEntry || (!intraPred && blk.isAddressTaken);
}

// ---- Evaluated predicates (DataSlices.h) ----

struct InsnView {
  const ZydisDecodedInstruction* insn;
  const ZydisDecodedOperand* ops;
  const x86::Semantics* sem;
};

// Block b's evaluable predicate: the jcc ending it (two distinct
// successors, both in the procedure), and the last instruction before it
// that may write a flag its condition reads, which must set them all and
// be a flag setter the emulator computes.  insn: UINT32_MAX when none.
struct FlagSetter {
  uint32_t insn = UINT32_MAX;
  x86::FlagOp op;
  uint8_t condition = x86::kNoCondition;
};

// view(i): instruction i decoded, or nullopt when it cannot be.
template <class View>
FlagSetter flagSetter(const ir::Procedure& proc, uint32_t b, View view) {
  const ir::Block& blk = proc.blocks[b];
  const uint32_t j = blk.firstInsn + blk.insnCount - 1;
  if (proc.insns[j].flow != x86::Flow::CondBranch || !blk.outs.empty()) return {};
  bool two = false;
  for (const ir::Edge& e : blk.succs) two |= e.to != blk.succs.front().to;
  if (!two) return {};
  const std::optional<InsnView> jcc = view(j);
  if (!jcc || jcc->sem->condition == x86::kNoCondition) return {};
  const uint8_t cc = jcc->sem->condition;  // (a view may reuse its buffers for the next instruction)
  const uint8_t reads = x86::emu::conditionFlags(cc);
  for (uint32_t i = j; i-- > blk.firstInsn;) {
    const std::optional<InsnView> in = view(i);
    if (!in) return {};
    if (!(in->sem->flags.anyWritten() & reads)) continue;
    const x86::FlagOp op = x86::compileFlags(*in->insn, in->ops);
    if ((x86::flagsSet(op) & reads) != reads || (in->sem->flags.set & reads) != reads) return {};
    return {i, op, cc};
  }
  return {};
}

}  // namespace

std::vector<bool> evaluableBranches(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder,
                                    const std::vector<bool>& which) {
  std::vector<bool> r(proc.blocks.size(), false);
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  x86::Semantics sem;
  for (uint32_t b = 0; b < proc.blocks.size() && b < which.size(); ++b) {
    if (!which[b]) continue;
    r[b] = flagSetter(proc, b, [&](uint32_t i) -> std::optional<InsnView> {
             const x86::Insn& in = proc.insns[i];
             const uint8_t* bytes = program.image->bytesAt(in.address, in.length);
             if (!bytes || !decoder.decodeFull(bytes, in.length, insn, ops)) return std::nullopt;
             sem = x86::describe(insn, ops, in.address);
             return InsnView{&insn, ops, &sem};
           }).insn != UINT32_MAX;
  }
  return r;
}

namespace {

// ---- Stack slots as registers (DataSlices.h) ----

// Where %rsp or %rbp points, as an offset from the procedure's entry %rsp.
// Unset: not reached yet; NotFrame (%rbp only): no address in the frame;
// Unknown: into the frame, at an offset not known.
struct FrameVal {
  enum Kind : uint8_t { Unset, NotFrame, Known, Unknown } kind = Unset;
  int64_t off = 0;
  static FrameVal known(int64_t o) { return {Known, o}; }
  static FrameVal unknown() { return {Unknown, 0}; }
  bool frame() const { return kind == Known || kind == Unknown; }
  bool operator==(const FrameVal&) const = default;
};

FrameVal meet(FrameVal a, FrameVal b) {
  if (a.kind == FrameVal::Unset) return b;
  if (b.kind == FrameVal::Unset) return a;
  return a == b ? a : FrameVal::unknown();
}

FrameVal plus(FrameVal a, int64_t d) {
  return a.kind == FrameVal::Known ? FrameVal::known(a.off + d) : FrameVal::unknown();
}

struct Frame {
  FrameVal rsp, rbp;
  bool operator==(const Frame&) const = default;
};

Frame meet(const Frame& a, const Frame& b) { return {meet(a.rsp, b.rsp), meet(a.rbp, b.rbp)}; }

bool isStackOp(ZydisMnemonic m) {
  return m == ZYDIS_MNEMONIC_PUSH || m == ZYDIS_MNEMONIC_POP || m == ZYDIS_MNEMONIC_PUSHFQ ||
         m == ZYDIS_MNEMONIC_POPFQ || m == ZYDIS_MNEMONIC_CALL || m == ZYDIS_MNEMONIC_RET ||
         m == ZYDIS_MNEMONIC_LEAVE;
}

// Where a memory access goes: NotFrame when its address is not made from
// %rsp or a frame %rbp.
FrameVal accessIn(const Frame& f, const x86::MemOperand& m) {
  auto at = [&](int8_t r) { return r == 4 ? f.rsp : r == 5 ? f.rbp : FrameVal{FrameVal::NotFrame}; };
  const bool base = m.hasBase() && at(m.base).frame(), index = m.hasIndex() && at(m.index).frame();
  if (!base && !index) return {FrameVal::NotFrame};
  if (index || !base || m.vectorIndex != x86::MemOperand::kNone || m.addressWidth != 64 || x86::hasSegmentBase(m) ||
      m.hasBitOffset())
    return FrameVal::unknown();
  return plus(at(m.base), m.disp);
}

// The frame after one instruction; `*escapes` set when it puts a frame
// address anywhere but %rsp and %rbp's stack arithmetic (DataSlices.h).
Frame stepFrame(const Frame& f, const ZydisDecodedInstruction& d, const ZydisDecodedOperand* ops,
                const x86::Semantics& sem, const x86::EmuOp& op, bool* escapes) {
  using x86::EmuKind;
  auto frameReg = [&](ZydisRegister r) {
    if (r == ZYDIS_REGISTER_NONE) return false;
    const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    return full == ZYDIS_REGISTER_RSP || (full == ZYDIS_REGISTER_RBP && f.rbp.frame());
  };
  const bool stackOp = isStackOp(d.mnemonic);
  bool readsFrame = false;
  for (unsigned k = 0; k < d.operand_count; ++k) {
    const ZydisDecodedOperand& o = ops[k];
    if (o.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      if (stackOp && o.visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT) continue;  // its own %rsp (leave: %rbp)
      readsFrame |= (o.actions & ZYDIS_OPERAND_ACTION_MASK_READ) && frameReg(o.reg.value);
    } else if (o.type == ZYDIS_OPERAND_TYPE_MEMORY && d.mnemonic == ZYDIS_MNEMONIC_LEA) {
      readsFrame |= frameReg(o.mem.base) || frameReg(o.mem.index);
    }
  }
  Frame n = f;
  const uint16_t w = sem.written.gprs();
  if (w & 16) n.rsp = FrameVal::unknown();
  if (w & 32) n.rbp = readsFrame ? FrameVal::unknown() : FrameVal{FrameVal::NotFrame};
  bool tracked = true;
  if (op.kind == EmuKind::StackAdd) {
    n.rsp = plus(f.rsp, op.imm);
  } else if (op.kind == EmuKind::Leave) {
    n.rsp = plus(f.rbp, 8);
  } else if ((op.kind == EmuKind::Add || op.kind == EmuKind::Sub) && op.dst == 4 && op.width == 8 && op.src < 0) {
    n.rsp = plus(f.rsp, op.kind == EmuKind::Add ? op.imm : -op.imm);
  } else if (op.kind == EmuKind::Mov && op.width == 8 && op.src == 4 && op.dst == 5) {
    n.rbp = f.rsp;
  } else if (op.kind == EmuKind::Mov && op.width == 8 && op.src == 5 && op.dst == 4 && f.rbp.frame()) {
    n.rsp = f.rbp;
  } else if (op.kind == EmuKind::Lea && op.width == 8 && op.addrWidth == 8 && op.index < 0 &&
             (op.dst == 4 || op.dst == 5) && (op.base == 4 || (op.base == 5 && f.rbp.frame()))) {
    (op.dst == 4 ? n.rsp : n.rbp) = plus(op.base == 4 ? f.rsp : f.rbp, op.imm);
  } else {
    tracked = false;
  }
  // What reads a frame address and writes nothing but %rsp, %rbp and the
  // flags keeps it there (and $-16,%rsp; cmp %rsp,%rax).
  const bool contained = (w & ~0x30) == 0 && !sem.stores();
  if (escapes && readsFrame && (stackOp || (!tracked && !contained))) *escapes = true;
  return n;
}

// The frame offsets before and after each instruction, forward to a fixed
// point (the procedure's entry: %rsp at 0, %rbp the caller's; another
// entry site: nothing known), and whether a frame address escapes.
struct FrameScan {
  std::vector<Frame> before, after;
  bool escapes = false;
};

FrameScan scanFrame(const ir::Procedure& proc, const DecodedProc& d, const std::vector<bool>& entrySite) {
  const size_t n = proc.insns.size(), nb = proc.blocks.size();
  FrameScan fs;
  fs.before.resize(n);
  fs.after.resize(n);
  for (size_t i = 0; i < n; ++i)
    if (!d.ok[i]) { fs.escapes = true; return fs; }
  std::vector<Frame> frameOut(nb);
  auto inOf = [&](size_t b) {
    const ir::Block& blk = proc.blocks[b];
    Frame f;
    if (entrySite[b])
      f = blk.isEntry && !blk.isLandingPad ? Frame{FrameVal::known(0), {FrameVal::NotFrame}}
                                           : Frame{FrameVal::unknown(), FrameVal::unknown()};
    for (const ir::PredEdge& p : blk.preds)
      if (ir::isIntraprocedural(p.kind)) f = meet(f, frameOut[p.from]);
    return f;
  };
  auto run = [&](size_t b, bool final) {
    const ir::Block& blk = proc.blocks[b];
    Frame f = inOf(b);
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
      fs.before[i] = f;
      if (f.rsp.kind == FrameVal::Unset) continue;  // not reached (yet): nothing flows
      f = stepFrame(f, d.insn[i], d.ops(i), d.sem[i], d.op[i], final ? &fs.escapes : nullptr);
      fs.after[i] = f;
    }
    return f;
  };
  toFixedPoint(frameOut, [&](size_t b) { return run(b, false); });
  for (size_t b = 0; b < nb; ++b) run(b, true);
  return fs;
}

// Whether a procedure called at its start leaves its caller's frame alone:
// every instruction decoded, no frame address escapes, nothing leaves it
// but calls and returns (no tail call: the next procedure would own its
// stack arguments), and every store into its frame is below its entry
// %rsp -- never into its stack arguments, which are the caller's slots.
bool leavesCallerFrame(const ir::Program& program, const ir::Procedure& callee, const x86::Decoder& decoder) {
  for (const ir::Block& blk : callee.blocks)
    for (const ir::OutEdge& o : blk.outs)
      if (o.kind == ir::EdgeKind::TailCall || o.kind == ir::EdgeKind::UnknownIndirect) return false;
  const DecodedProc d = decodeProc(program, callee, decoder);
  std::vector<bool> entrySite(callee.blocks.size());
  for (size_t b = 0; b < callee.blocks.size(); ++b) entrySite[b] = entryBlock(callee.blocks[b]);
  const FrameScan fs = scanFrame(callee, d, entrySite);
  if (fs.escapes) return false;
  for (size_t i = 0; i < callee.insns.size(); ++i)
    for (unsigned m = 0; m < d.sem[i].memCount; ++m) {
      const x86::MemOperand& mem = d.sem[i].mem[m];
      if (!mem.write) continue;
      const FrameVal at = accessIn(fs.before[i], mem);
      if (at.kind == FrameVal::NotFrame) continue;
      if (at.kind != FrameVal::Known || mem.size == 0 || d.sem[i].repeated || at.off + mem.size > 0) return false;
    }
  return true;
}

// Finds the procedure's stack slots and decides, per instruction, which
// slot it stores (SlotStore) or reloads while available (SlotLoad), and
// which slots it may write (DataSlices.h).  Leaves r.slots empty when the
// frame escapes.
void findSlots(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder,
               const DecodedProc& d, const std::vector<bool>& returnsTwice, DataSlices& r) {
  const size_t n = proc.insns.size(), nb = proc.blocks.size();
  const FrameScan fs = scanFrame(proc, d, r.entrySite);
  if (fs.escapes) { r.frameEscapes = true; return; }
  const std::vector<Frame>& before = fs.before;
  const std::vector<Frame>& after = fs.after;
  const std::vector<ZydisDecodedInstruction>& decoded = d.insn;
  const std::vector<x86::Semantics>& sems = d.sem;
  auto opsOf = [&](size_t i) { return d.ops(i); };
  std::map<const ir::Procedure*, bool> clean;  // callees: leavesCallerFrame
  auto cleanCall = [&](const x86::Insn& in) {
    if (in.flow != x86::Flow::Call) return false;
    const ir::Procedure* callee = program.procAt(in.target);
    if (!callee || callee->start != in.target) return false;
    auto [it, fresh] = clean.try_emplace(callee, false);
    if (fresh) it->second = leavesCallerFrame(program, *callee, decoder);
    return it->second;
  };

  // Candidate stores and reloads: a slot is an (offset, width) both stored
  // and reloaded, at a negative offset (the procedure's own frame).
  std::vector<x86::EmuOp> slotOp(n);
  std::vector<int64_t> slotAt(n);
  std::vector<std::pair<int64_t, uint8_t>> stored, loaded;
  for (size_t i = 0; i < n; ++i) {
    const x86::EmuOp op = x86::compileSlotEmu(decoded[i], opsOf(i));
    if (op.kind == x86::EmuKind::None || sems[i].memCount != 1) continue;
    const FrameVal at = accessIn(before[i], sems[i].mem[0]);
    if (at.kind != FrameVal::Known || at.off + op.width > 0) continue;
    slotOp[i] = op;
    slotAt[i] = at.off;
    (op.kind == x86::EmuKind::SlotStore ? stored : loaded).push_back({at.off, op.width});
  }
  std::sort(stored.begin(), stored.end());
  std::sort(loaded.begin(), loaded.end());
  for (const auto& l : loaded)
    if (std::binary_search(stored.begin(), stored.end(), l) && r.slots.size() < x86::kSlots &&
        (r.slots.empty() || r.slots.back().offset != l.first || r.slots.back().width != l.second))
      r.slots.push_back({l.first, l.second});
  if (r.slots.empty()) return;
  auto slotOf = [&](size_t i) -> int {
    if (slotOp[i].kind == x86::EmuKind::None) return -1;
    for (size_t k = 0; k < r.slots.size(); ++k)
      if (r.slots[k].offset == slotAt[i] && r.slots[k].width == slotOp[i].width) return int(k);
    return -1;
  };
  const uint64_t all = r.slots.size() == 64 ? ~uint64_t(0) : (uint64_t(1) << r.slots.size()) - 1;
  auto overlapping = [&](int64_t lo, int64_t hi) {
    uint64_t m = 0;
    for (size_t k = 0; k < r.slots.size(); ++k)
      if (r.slots[k].offset < hi && lo < r.slots[k].offset + r.slots[k].width) m |= uint64_t(1) << k;
    return m;
  };
  // The frame's bytes the procedure ever writes, wherever it runs: a call
  // has stack arguments only if the 8 bytes at its %rsp are among them.
  std::vector<std::pair<int64_t, int64_t>> written;
  bool writesAnywhere = false;
  for (size_t i = 0; i < n; ++i)
    for (unsigned m = 0; m < sems[i].memCount; ++m) {
      if (!sems[i].mem[m].write || before[i].rsp.kind == FrameVal::Unset) continue;
      const FrameVal at = accessIn(before[i], sems[i].mem[m]);
      if (at.kind == FrameVal::Known && sems[i].mem[m].size && !sems[i].repeated)
        written.push_back({at.off, at.off + sems[i].mem[m].size});
      else if (at.kind != FrameVal::NotFrame)
        writesAnywhere = true;
    }
  auto argumentsAt = [&](int64_t rsp) {
    if (writesAnywhere) return true;
    for (const auto& [lo, hi] : written)
      if (lo < rsp + 8 && rsp < hi) return true;
    return false;
  };
  // What each instruction may write, and which slot it stores.
  std::vector<uint64_t> gen(n);
  std::vector<int> slotIndex(n);
  for (size_t i = 0; i < n; ++i) {
    InsnSlice& s = r.insns[i];
    const x86::Semantics& sem = sems[i];
    const int k = slotIndex[i] = slotOf(i);
    const bool store = k >= 0 && slotOp[i].kind == x86::EmuKind::SlotStore;
    uint64_t kill = 0;
    // A call: the callee's frame is below %rsp; above it, the callee may
    // write its stack arguments only (DataSlices.h).
    // A call that returns twice (setjmp, vfork) returns again with the
    // frame as something the path does not show left it: all lost.
    if (s.call)
      kill = before[i].rsp.kind == FrameVal::Known && !returnsTwice[i] &&
                     (cleanCall(proc.insns[i]) || !argumentsAt(before[i].rsp.off))
                 ? overlapping(INT64_MIN / 2, before[i].rsp.off)
                 : all;
    for (unsigned m = 0; m < sem.memCount; ++m) {
      if (!sem.mem[m].write) continue;
      const FrameVal at = accessIn(before[i], sem.mem[m]);
      if (at.kind == FrameVal::NotFrame) continue;
      if (at.kind != FrameVal::Known || sem.mem[m].size == 0 || sem.repeated) kill = all;
      else kill |= overlapping(at.off, at.off + sem.mem[m].size);
    }
    if (after[i].rsp.kind != FrameVal::Known) kill = all;
    else kill |= overlapping(INT64_MIN / 2, after[i].rsp.off - 128);
    if (before[i].rsp.kind == FrameVal::Unset) kill = 0;  // no way here from an entry site: never runs
    gen[i] = store ? uint64_t(1) << k : 0;
    if (store) kill &= ~gen[i];
    s.slotWrites = kill | gen[i];
    if (store) s.op = slotOp[i], s.op.slot = uint8_t(k);
  }
  // Available slots, forward to the greatest fixed point: none at an
  // entry site, else what every intra-procedural predecessor has.
  std::vector<uint64_t> availOut(nb, all);
  auto availIn = [&](size_t b) {
    if (r.entrySite[b]) return uint64_t(0);
    uint64_t a = all;
    for (const ir::PredEdge& p : proc.blocks[b].preds)
      if (ir::isIntraprocedural(p.kind)) a &= availOut[p.from];
    return a;
  };
  auto flow = [&](size_t b, bool final) {
    const ir::Block& blk = proc.blocks[b];
    uint64_t a = availIn(b);
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
      const int k = slotIndex[i];
      if (final && k >= 0 && slotOp[i].kind == x86::EmuKind::SlotLoad && (a >> k & 1))
        r.insns[i].op = slotOp[i], r.insns[i].op.slot = uint8_t(k);
      a = (a & ~r.insns[i].slotWrites) | gen[i];
    }
    return a;
  };
  toFixedPoint(availOut, [&](size_t b) { return flow(b, false); });
  for (size_t b = 0; b < nb; ++b) flow(b, true);
}

// One instruction, backward: of the registers and slots (bits 16 + k)
// needed after it that it writes, which it emulates and which it records;
// returns what is needed before it.  A slot is never needed after an
// instruction that may write it without storing it: a reload is a SlotLoad
// only where the slot is available.
uint64_t slotBit(const InsnSlice& s) { return uint64_t(1) << (16 + s.op.slot); }

uint64_t transfer(const Step& st, InsnSlice& s, uint64_t after) {
  const uint64_t writes = st.writes | s.slotWrites << 16;
  const uint64_t needOut = after & writes;
  uint64_t computable = st.recordsAll || !s.decoded ? 0 : s.op.outputs();
  if (s.op.kind == x86::EmuKind::SlotStore) computable |= slotBit(s);
  s.writes = st.writes;
  s.emulated = uint16_t(needOut & computable);
  s.storesSlot = (needOut & computable) >> 16 != 0;
  s.recordAfter = uint16_t(needOut & ~computable) | st.recordAlways;
  uint64_t before = (after & ~writes) | st.address | st.needs;
  if (needOut & computable) before |= s.op.inputs() | (s.op.kind == x86::EmuKind::SlotLoad ? slotBit(s) : 0);
  return before;
}

}  // namespace

const char* addressSourceName(AddressSource s) {
  switch (s) {
    case AddressSource::Static: return "static";
    case AddressSource::Computed: return "computed";
    case AddressSource::Recorded: return "recorded";
  }
  return "?";
}

DataSlices computeDataSlices(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder,
                             const ProcTrace* trace, const std::vector<bool>& evaluate) {
  DataSlices r;
  const size_t n = proc.insns.size();
  r.insns.assign(n, {});
  std::vector<Step> steps(n);
  // A `std` anywhere in the procedure: a string instruction's direction is
  // not known from the path (cld/std pairs around a copy), so its
  // addresses are recorded.  The ABI has DF clear at every call and return.
  const DecodedProc d = decodeProc(program, proc, decoder);
  const std::vector<ZydisDecodedInstruction>& decoded = d.insn;
  const std::vector<x86::Semantics>& sems = d.sem;
  bool setsDirection = false;
  for (size_t i = 0; i < n; ++i) {
    InsnSlice& s = r.insns[i];
    if (!d.ok[i]) {
      s.decoded = false;
      steps[i].writes = kAll;  // unknown: whatever is needed after it is recorded
      continue;
    }
    s.op = d.op[i];
    setsDirection |= decoded[i].mnemonic == ZYDIS_MNEMONIC_STD;
  }
  for (size_t i = 0; i < n; ++i) {
    InsnSlice& s = r.insns[i];
    if (!s.decoded) continue;
    const x86::Semantics& sem = sems[i];
    const x86::Insn& in = proc.insns[i];
    Step& st = steps[i];
    st.writes = sem.written.gprs();
    if (in.flow == x86::Flow::Call || in.flow == x86::Flow::IndirectCall) {
      s.call = true;
      st.writes |= kCallerSaved | (1u << 4);  // %rsp: the op says the caller sees it unchanged
      st.recordsAll = callsSetjmp(program, in) || resumesAfter(proc, trace, i);
      if (st.recordsAll) st.writes = kAll;
    }
    s.memCount = sem.memCount;
    s.load = sem.loads();
    s.firstMem = uint32_t(r.mems.size());
    r.mems.insert(r.mems.end(), sem.mem, sem.mem + sem.memCount);
    narrowValue(decoded[i], d.ops(i), s);
    s.repeated = sem.repeated;
    s.repeatedWhile = sem.repeatedWhile;
    s.locked = sem.locked && !sem.compareExchange;
    s.cacheControl = sem.cacheControl;
    // A rep string instruction's iteration count: %rcx before it, and for
    // repe/repne, which may stop early, %rcx after it too.
    if (sem.repeated) st.address |= 1u << 1;
    if (sem.repeatedWhile) st.recordAlways |= 1u << 1;
    // A jump out of the procedure (a tail call, a jump table's or a
    // pointer's target elsewhere): the procedure it reaches carries %rsp
    // in (carriedIn), so it must be known here.  A call's push needs it
    // anyway.
    if ((in.flow == x86::Flow::Jump && !proc.contains(in.target)) || in.flow == x86::Flow::IndirectJump)
      st.needs |= 1u << 4;
    for (unsigned k = 0; k < sem.memCount; ++k) {
      const x86::MemOperand& m = sem.mem[k];
      if (m.vectorIndex != x86::MemOperand::kNone || (setsDirection && isStringOp(decoded[i]))) {
        s.source[k] = AddressSource::Recorded;
      } else if (!m.hasBase() && !m.hasIndex() && !x86::hasSegmentBase(m) && !m.hasBitOffset()) {
        s.source[k] = AddressSource::Static;
      } else {
        s.source[k] = AddressSource::Computed;
        if (m.hasBase()) st.address |= uint16_t(1u << unsigned(m.base));
        if (m.hasIndex()) st.address |= uint16_t(1u << unsigned(m.index));
        if (m.hasBitOffset()) st.address |= uint16_t(1u << unsigned(m.bitOffset));  // a bit test's word
      }
    }
    s.addressRegs = st.address;
  }

  // Evaluated predicates: their flag setters' registers are needed before them.
  const size_t nb = proc.blocks.size();
  r.evaluated.assign(nb, x86::kNoCondition);
  for (uint32_t b = 0; b < nb && b < evaluate.size(); ++b) {
    if (!evaluate[b]) continue;
    const FlagSetter f = flagSetter(proc, b, [&](uint32_t i) {
      return d.ok[i] ? std::optional<InsnView>({&decoded[i], d.ops(i), &sems[i]}) : std::nullopt;
    });
    if (f.insn == UINT32_MAX) continue;
    r.evaluated[b] = f.condition;
    r.insns[f.insn].flagOp = f.op;
    r.insns[f.insn].conditionRegs = f.op.inputs();
    steps[f.insn].needs |= f.op.inputs();
  }

  // Entry sites: where the regenerator does not carry the registers in.
  r.entrySite.assign(nb, false);
  r.unreachable.assign(nb, false);
  for (size_t b = 0; b < nb; ++b) {
    const ir::Block& blk = proc.blocks[b];
    bool intraPred = false;
    for (const ir::PredEdge& p : blk.preds) intraPred |= ir::isIntraprocedural(p.kind);
    const bool tagged = trace && b < trace->tagged.size() && trace->tagged[b];
    r.entrySite[b] = entryBlock(blk) || tagged;
    // No way in at all (alignment padding after a jump): it never runs.
    r.unreachable[b] = !r.entrySite[b] && !intraPred;
  }

  // The entry of a procedure only traced code enters (by a call or a jump,
  // never through its address, never from outside): %rsp comes from the
  // caller, which knows it (its call pushes through it, its jump needs it).
  r.carriedIn.assign(nb, 0);
  if (trace && trace->traced && !trace->enterable)
    for (size_t b = 0; b < nb; ++b)
      if (proc.blocks[b].isEntry && !proc.blocks[b].isLandingPad && !(b < trace->tagged.size() && trace->tagged[b]))
        r.carriedIn[b] = 1u << 4;

  std::vector<bool> returnsTwice(n);
  for (size_t i = 0; i < n; ++i) returnsTwice[i] = steps[i].recordsAll || callsVfork(program, proc.insns[i]);
  findSlots(program, proc, decoder, d, returnsTwice, r);

  // Backward to a fixed point: blocks in reverse order converge in a few
  // rounds.  Registers in bits 0-15, slots in bits 16 + k.
  std::vector<uint64_t> neededIn(nb, 0);
  r.neededIn.assign(nb, 0);
  r.neededOut.assign(nb, 0);
  auto through = [&](size_t b, bool final) {
    const ir::Block& blk = proc.blocks[b];
    uint64_t out = 0;
    for (const ir::Edge& e : blk.succs)
      out |= r.entrySite[e.to] ? r.carriedIn[e.to] : neededIn[e.to];  // (an entry's loop: what it carries in)
    uint64_t live = out;
    for (uint32_t i = blk.firstInsn + blk.insnCount; i-- > blk.firstInsn;) {
      InsnSlice& s = r.insns[i];
      live = transfer(steps[i], s, live);
      if (final) s.neededBefore = uint16_t(live);
    }
    r.neededOut[b] = uint16_t(out);
    return live;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      const uint64_t in = through(b, false);
      if (in != neededIn[b]) neededIn[b] = in, changed = true;
    }
  }
  r.recordAtEntry.assign(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    through(b, true);
    r.neededIn[b] = uint16_t(neededIn[b]);
    if (r.entrySite[b]) r.recordAtEntry[b] = uint16_t(neededIn[b]) & ~r.carriedIn[b];  // (a slot is never needed there)
  }
  return r;
}

std::string checkSlices(const ir::Procedure& proc, const DataSlices& slices) {
  // Forward, from the result alone: the registers known at each point.  An
  // entry site knows what it records; any other block what every
  // intra-procedural predecessor knows at its end (the greatest solution,
  // from "all" down to a fixed point).  An instruction makes what it may
  // write unknown, then known again what it emulates and records; what it
  // reads for its Computed addresses and its emulation must be known.
  // Slots (bits 16 + k) the same way: known where stored, unknown where
  // anything may write them, unknown at every entry site.
  const size_t nb = proc.blocks.size();
  constexpr uint64_t kAll64 = ~uint64_t(0);
  std::vector<uint64_t> knownOut(nb, kAll64);
  auto knownIn = [&](size_t b) {
    if (slices.entrySite[b]) return uint64_t(slices.recordAtEntry[b] | slices.carriedIn[b]);
    uint64_t k = kAll64;  // (a block that cannot be reached needs nothing)
    for (const ir::PredEdge& p : proc.blocks[b].preds)
      if (ir::isIntraprocedural(p.kind)) k &= knownOut[p.from];
    return k;
  };
  auto through = [&](size_t b, std::string* why) {
    const ir::Block& blk = proc.blocks[b];
    uint64_t k = knownIn(b);
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
      const InsnSlice& s = slices.insns[i];
      const uint64_t slot = uint64_t(1) << (16 + s.op.slot);
      const bool emulates = s.emulated || s.storesSlot;
      const uint64_t reads =
          s.addressRegs | s.conditionRegs | (emulates ? s.op.inputs() | (s.op.kind == x86::EmuKind::SlotLoad ? slot : 0) : 0);
      if (why && (reads & ~k) && why->empty())
        *why = "at " + hex(proc.insns[i].address) + " in " + proc.name + ": registers " +
               hex(uint64_t(uint16_t(reads & ~k))) + " slots " + hex((reads & ~k) >> 16) + " needed but not known";
      k = (k & ~(uint64_t(s.writes) | s.slotWrites << 16)) | s.emulated | s.recordAfter | (s.storesSlot ? slot : 0);
    }
    return k;
  };
  toFixedPoint(knownOut, [&](size_t b) { return through(b, nullptr); });
  std::string why;
  for (size_t b = 0; b < nb && why.empty(); ++b) through(b, &why);
  return why;
}

void SliceStats::add(const SliceStats& o) {
  for (int k = 0; k < 3; ++k) operands[k] += o.operands[k];
  entrySites += o.entrySites;
  afterSites += o.afterSites;
  registersRecorded += o.registersRecorded;
  emulated += o.emulated;
  for (int k = 0; k < kOrigins; ++k) staticValues[k] += o.staticValues[k], dynamicValues[k] += o.dynamicValues[k];
  staticRefs += o.staticRefs;
  dynamicRefs += o.dynamicRefs;
}

SliceStats sliceStats(const ir::Procedure& proc, const DataSlices& slices, const BlockProfile* profile) {
  SliceStats st;
  const std::vector<double> counts = profile ? blockCounts(proc, *profile) : std::vector<double>();
  for (size_t b = 0; b < proc.blocks.size(); ++b) {
    if (slices.unreachable[b]) continue;
    const ir::Block& blk = proc.blocks[b];
    const double w = profile ? counts[b] : 0;
    double values[SliceStats::kOrigins] = {double(std::popcount(slices.recordAtEntry[b]))}, refs = 0;
    if (slices.recordAtEntry[b]) st.entrySites++, st.registersRecorded += std::popcount(slices.recordAtEntry[b]);
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
      const InsnSlice& s = slices.insns[i];
      for (unsigned k = 0; k < s.memCount; ++k) {
        st.operands[unsigned(s.source[k])]++;
        refs += 1;
        if (s.source[k] == AddressSource::Recorded) values[SliceStats::Address] += 1;
      }
      if (s.recordAfter) st.afterSites++, st.registersRecorded += std::popcount(s.recordAfter);
      values[s.call ? SliceStats::AfterCall : s.load ? SliceStats::AfterLoad : SliceStats::AfterOther] +=
          std::popcount(s.recordAfter);
      if (s.emulated || s.storesSlot) st.emulated++;
    }
    for (int k = 0; k < SliceStats::kOrigins; ++k) st.staticValues[k] += values[k], st.dynamicValues[k] += w * values[k];
    st.staticRefs += refs;
    st.dynamicRefs += w * refs;
  }
  return st;
}

bool recordsData(const ir::Procedure& proc, const DataSlices& slices, uint32_t b) {
  if (slices.recordAtEntry[b]) return true;
  const ir::Block& blk = proc.blocks[b];
  for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
    const InsnSlice& in = slices.insns[i];
    if (in.recordAfter) return true;
    for (uint8_t m = 0; m < in.memCount; ++m)
      if (in.source[m] == AddressSource::Recorded) return true;
  }
  return false;
}

}  // namespace atomx::analysis
