#include "analysis/DataSlices.h"

#include <bit>

#include "support/Hex.h"

namespace atomx::analysis {

namespace {

constexpr uint16_t kAll = 0xffff;

// What one instruction does, as the address-needed analysis sees it.
struct Step {
  uint16_t writes = 0;   // general registers it may write (a call: the caller-saved ones too)
  uint16_t address = 0;  // base and index registers of its Computed operands
  bool recordsAll = false;  // a setjmp-like call: every needed register is recorded after it
};

bool isStringOp(const ZydisDecodedInstruction& insn) { return insn.meta.category == ZYDIS_CATEGORY_STRINGOP; }

bool callsSetjmp(const ir::Program& program, const x86::Insn& in) {
  if (in.flow != x86::Flow::Call) return false;
  if (auto plt = program.pltNames.find(in.target); plt != program.pltNames.end()) return isSetjmp(plt->second);
  const ir::Procedure* callee = program.procAt(in.target);
  return callee && callee->start == in.target && isSetjmp(callee->name);
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

// One instruction, backward: of the registers needed after it that it
// writes, which it emulates and which it records; returns what is needed
// before it.
uint16_t transfer(const Step& st, InsnSlice& s, uint16_t after) {
  const uint16_t needOut = after & st.writes;
  const uint16_t computable = st.recordsAll || !s.decoded ? 0 : s.op.outputs();
  s.writes = st.writes;
  s.emulated = needOut & computable;
  s.recordAfter = uint16_t(needOut & ~computable);
  uint16_t before = uint16_t(after & ~st.writes) | st.address;
  if (s.emulated) before |= s.op.inputs();
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
                             const ProcTrace* trace) {
  DataSlices r;
  const size_t n = proc.insns.size();
  r.insns.assign(n, {});
  std::vector<Step> steps(n);
  // A `std` anywhere in the procedure: a string instruction's direction is
  // not known from the path (cld/std pairs around a copy), so its
  // addresses are recorded.  The ABI has DF clear at every call and return.
  std::vector<ZydisDecodedInstruction> decoded(n);
  std::vector<x86::Semantics> sems(n);
  bool setsDirection = false;
  for (size_t i = 0; i < n; ++i) {
    const x86::Insn& in = proc.insns[i];
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const uint8_t* bytes = program.image->bytesAt(in.address, in.length);
    InsnSlice& s = r.insns[i];
    if (!bytes || !decoder.decodeFull(bytes, in.length, decoded[i], ops)) {
      s.decoded = false;
      steps[i].writes = kAll;  // unknown: whatever is needed after it is recorded
      continue;
    }
    sems[i] = x86::describe(decoded[i], ops, in.address);
    s.op = x86::compileEmu(decoded[i], ops, in.address);
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
    for (unsigned k = 0; k < sem.memCount; ++k) {
      const x86::MemOperand& m = sem.mem[k];
      if (m.vectorIndex != x86::MemOperand::kNone || (setsDirection && isStringOp(decoded[i]))) {
        s.source[k] = AddressSource::Recorded;
      } else if (!m.hasBase() && !m.hasIndex() && !x86::hasSegmentBase(m)) {
        s.source[k] = AddressSource::Static;
      } else {
        s.source[k] = AddressSource::Computed;
        if (m.hasBase()) st.address |= uint16_t(1u << unsigned(m.base));
        if (m.hasIndex()) st.address |= uint16_t(1u << unsigned(m.index));
      }
    }
    s.addressRegs = st.address;
  }

  // Entry sites: where the regenerator does not carry the registers in.
  const size_t nb = proc.blocks.size();
  r.entrySite.assign(nb, false);
  r.unreachable.assign(nb, false);
  for (size_t b = 0; b < nb; ++b) {
    const ir::Block& blk = proc.blocks[b];
    bool intraPred = false;
    for (const ir::PredEdge& p : blk.preds) intraPred |= ir::isIntraprocedural(p.kind);
    const bool tagged = trace && b < trace->tagged.size() && trace->tagged[b];
    r.entrySite[b] = blk.isEntry || blk.isLandingPad || blk.isExternalEntry || tagged ||
                     (!intraPred && blk.isAddressTaken);
    // No way in at all (alignment padding after a jump): it never runs.
    r.unreachable[b] = !r.entrySite[b] && !intraPred;
  }

  // Backward to a fixed point: blocks in reverse order converge in a few rounds.
  r.neededIn.assign(nb, 0);
  r.neededOut.assign(nb, 0);
  auto through = [&](size_t b, bool final) {
    const ir::Block& blk = proc.blocks[b];
    uint16_t out = 0;
    for (const ir::Edge& e : blk.succs)
      if (!r.entrySite[e.to]) out |= r.neededIn[e.to];
    uint16_t live = out;
    for (uint32_t i = blk.firstInsn + blk.insnCount; i-- > blk.firstInsn;) {
      InsnSlice& s = r.insns[i];
      live = transfer(steps[i], s, live);
      if (final) s.neededBefore = live;
    }
    r.neededOut[b] = out;
    return live;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      const uint16_t in = through(b, false);
      if (in != r.neededIn[b]) r.neededIn[b] = in, changed = true;
    }
  }
  r.recordAtEntry.assign(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    through(b, true);
    if (r.entrySite[b]) r.recordAtEntry[b] = r.neededIn[b];
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
  const size_t nb = proc.blocks.size();
  std::vector<uint16_t> knownOut(nb, kAll);
  auto knownIn = [&](size_t b) {
    if (slices.entrySite[b]) return slices.recordAtEntry[b];
    uint16_t k = kAll;  // (a block that cannot be reached needs nothing)
    for (const ir::PredEdge& p : proc.blocks[b].preds)
      if (ir::isIntraprocedural(p.kind)) k &= knownOut[p.from];
    return k;
  };
  auto through = [&](size_t b, std::string* why) {
    const ir::Block& blk = proc.blocks[b];
    uint16_t k = knownIn(b);
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
      const InsnSlice& s = slices.insns[i];
      const uint16_t reads = uint16_t(s.addressRegs | (s.emulated ? s.op.inputs() : 0));
      if (why && (reads & ~k) && why->empty())
        *why = "at " + hex(proc.insns[i].address) + " in " + proc.name + ": registers " +
               hex(uint64_t(reads & ~k)) + " needed but not known";
      k = uint16_t((k & ~s.writes) | s.emulated | s.recordAfter);
    }
    return k;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < nb; ++b) {
      const uint16_t k = through(b, nullptr);
      if (k != knownOut[b]) knownOut[b] = k, changed = true;
    }
  }
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
      if (s.emulated) st.emulated++;
    }
    for (int k = 0; k < SliceStats::kOrigins; ++k) st.staticValues[k] += values[k], st.dynamicValues[k] += w * values[k];
    st.staticRefs += refs;
    st.dynamicRefs += w * refs;
  }
  return st;
}

}  // namespace atomx::analysis
