#include "analysis/Dump.h"

#include <cstdio>

#include "analysis/DataSlices.h"
#include "analysis/TracePlan.h"
#include "analysis/Dominators.h"
#include "analysis/Loops.h"
#include "support/Hex.h"

namespace atomx::analysis {

namespace {

const char* kindName(const elf::ElfImage& image) {
  switch (image.kind()) {
    case elf::ElfImage::Kind::Executable: return "non-PIE";
    case elf::ElfImage::Kind::PieExecutable: return "PIE";
    case elf::ElfImage::Kind::SharedObject: return "shared object";
    case elf::ElfImage::Kind::StaticPie: return "static PIE";
    case elf::ElfImage::Kind::StaticExecutable: return "static";
  }
  return "?";
}

}  // namespace

void dumpProgram(const ProgramModel& model, std::ostream& out, const std::string& only) {
  const ir::Program& program = model.program;
  const elf::ElfImage& image = model.image;
  const x86::Decoder& decoder = model.decoder;
  uint64_t movable = 0, codeBytes = 0, movableBytes = 0;
  for (const ir::Procedure& p : program.procs) {
    codeBytes += p.size();
    if (p.isMovable()) movable++, movableBytes += p.size();
  }
  out << "program " << image.name() << " (" << kindName(image) << "): " << program.procs.size() << " procedures, "
      << movable << " movable; " << codeBytes << " code bytes, " << movableBytes << " movable\n";
  for (const ir::Procedure& p : program.procs) {
    if (!only.empty() && p.name != only) continue;
    out << "\nproc " << p.name << " " << hex(p.start) << ".." << hex(p.end) << " size " << p.size() << " "
        << ir::procStateName(p.state);
    if (p.sizeInferred) out << " size-inferred";
    if (p.hotPart >= 0) out << " cold-part-of " << program.procs[p.hotPart].name;
    for (const std::string& a : p.aliases) out << " alias " << a;
    out << "\n";
    if (!p.reason.empty()) out << "  stays: " << p.reason << "\n";
    const uint8_t* bytes = image.bytesAt(p.start, p.size());
    const analysis::Graph graph = analysis::procedureGraph(p);
    const analysis::DomTree dom = analysis::dominators(graph, 0);
    const analysis::LoopForest loops = analysis::naturalLoops(graph, dom);
    for (size_t bi = 0; bi < p.blocks.size(); ++bi) {
      const ir::Block& b = p.blocks[bi];
      out << "  block " << bi << " " << hex(b.start) << ".." << hex(b.end);
      if (b.isEntry) out << " entry";
      if (b.isLandingPad) out << " landing-pad";
      if (b.isAddressTaken) out << " address-taken";
      out << " preds [";
      for (size_t i = 0; i < b.preds.size(); ++i)
        out << (i ? " " : "") << b.preds[i].from << ":" << ir::edgeKindName(b.preds[i].kind);
      out << "] succs [";
      for (size_t i = 0; i < b.succs.size(); ++i)
        out << (i ? " " : "") << b.succs[i].to << ":" << ir::edgeKindName(b.succs[i].kind);
      // Edges leaving the procedure: "call:0x1040", "tail:?", "return".
      for (size_t i = 0; i < b.outs.size(); ++i) {
        const ir::OutEdge& e = b.outs[i];
        out << (i || !b.succs.empty() ? " " : "") << ir::edgeKindName(e.kind);
        if (e.kind == ir::EdgeKind::Call || e.kind == ir::EdgeKind::TailCall || e.kind == ir::EdgeKind::Exit)
          out << ":" << (e.target ? hex(e.target) : "?");
      }
      out << "]";
      // The immediate dominator ("idom -": the entry, or a block the entry
      // does not reach) and the number of natural loops around the block.
      if (bi != 0 && dom.reachable(uint32_t(bi))) out << " idom " << dom.idom[bi];
      else out << " idom -";
      if (loops.depth[bi]) out << " loop-depth " << loops.depth[bi];
      out << "\n";
      for (uint32_t i = b.firstInsn; i < b.firstInsn + b.insnCount; ++i) {
        const x86::Insn& insn = p.insns[i];
        out << "    " << hex(insn.address) << "  " << decoder.format(bytes + (insn.address - p.start), insn.length, insn.address);
        if (insn.isDirectBranch() || insn.isRipRelative()) {
          std::string name = program.describe(insn.target);
          if (!name.empty()) out << "  <" << name << ">";
        }
        out << "\n";
      }
    }
    if (!p.exitPreds.empty()) {
      out << "  exit preds [";
      for (size_t i = 0; i < p.exitPreds.size(); ++i)
        out << (i ? " " : "") << p.exitPreds[i].from << ":" << ir::edgeKindName(p.exitPreds[i].kind);
      out << "]\n";
    }
    for (const analysis::Loop& l : loops.loops) {
      out << "  loop header " << l.header << " depth " << l.depth << " body [";
      for (size_t i = 0; i < l.body.size(); ++i) out << (i ? " " : "") << l.body[i];
      out << "] preheader ";
      if (l.preheader == analysis::kNoNode) out << "-";
      else out << l.preheader;
      out << " exits [";
      for (size_t i = 0; i < l.exits.size(); ++i) {
        out << (i ? " " : "") << l.exits[i].first << "->";
        if (l.exits[i].second == p.exitNode()) out << "exit";
        else out << l.exits[i].second;
      }
      out << "]\n";
    }
    if (p.blocks.empty() && !p.insns.empty()) out << "  (" << p.insns.size() << " instructions, no CFG)\n";
    for (const ir::JumpTable& t : p.jumpTables) {
      out << "  jump-table " << hex(t.address) << (t.relative ? " relative" : " absolute") << " entries "
          << t.entryTargets.size() << ":";
      for (uint64_t target : t.entryTargets) out << " " << hex(target);
      out << "\n    dispatched by";
      if (t.dispatchJumps.empty()) out << " any indirect jump of the procedure";
      for (uint64_t jump : t.dispatchJumps) out << " " << hex(jump);
      out << "\n";
    }
  }
  if (!only.empty()) return;
  out << "\nunmovable:\n";
  for (const ir::Procedure& p : program.procs)
    if (!p.isMovable()) out << "  " << p.name << " " << hex(p.start) << " size " << p.size() << ": " << p.reason << "\n";
}

}  // namespace atomx::analysis

namespace atomx::analysis {

namespace {

std::string regNames(uint16_t mask) {
  static const char* const kNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                         "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
  std::string s;
  for (unsigned r = 0; r < 16; ++r)
    if (mask & (1u << r)) {
      if (!s.empty()) s += ",";
      s += kNames[r];
    }
  return s.empty() ? "-" : s;
}

std::string ratio(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", b > 0 ? a / b : 0.0);
  return buf;
}

void summary(std::ostream& out, const std::string& what, const SliceStats& st, bool dynamic) {
  out << what << ": operands static " << st.operands[0] << " computed " << st.operands[1] << " recorded "
      << st.operands[2] << "; record sites " << st.sites() << " (entry " << st.entrySites << ", after "
      << st.afterSites << "); registers recorded " << st.registersRecorded << "; emulated " << st.emulated
      << "; values per reference " << ratio(SliceStats::sum(st.staticValues), st.staticRefs) << " static";
  if (dynamic) out << ", " << ratio(SliceStats::sum(st.dynamicValues), st.dynamicRefs) << " dynamic";
  out << "\n";
}

}  // namespace

void dumpSlices(const ProgramModel& model, std::ostream& out, const SliceDumpOptions& o) {
  const ir::Program& program = model.program;
  const TracePlan plan = planTrace(program, o.profile);
  SliceStats total;
  size_t procs = 0;
  std::string broken;
  for (const ir::Procedure& p : program.procs) {
    if (!p.isMovable() || p.blocks.empty()) continue;
    if (!o.only.empty() && p.name != o.only) continue;
    const DataSlices s = computeDataSlices(program, p, model.decoder, &plan.procs[p.id]);
    const SliceStats st = sliceStats(p, s, o.profile);
    total.add(st);
    ++procs;
    if (std::string why = checkSlices(p, s); !why.empty() && broken.empty()) broken = why;
    if (o.table) {
      out << "proc " << hex(p.start) << " " << p.name << "\n";
      for (size_t b = 0; b < p.blocks.size(); ++b)
        // (The oracle receives the registers carried in as if recorded: the
        // data oracle, tests/trace, checks the caller's side end to end.)
        if (s.entrySite[b]) out << "entry " << hex(p.blocks[b].start) << " " << (s.recordAtEntry[b] | s.carriedIn[b]) << "\n";
      for (size_t i = 0; i < p.insns.size(); ++i) {
        const InsnSlice& is = s.insns[i];
        const uint64_t pc = p.insns[i].address;
        for (unsigned k = 0; k < is.memCount; ++k)
          out << "mem " << hex(pc) << " " << k << " " << "SCR"[unsigned(is.source[k])] << "\n";
        if (is.emulated || is.storesSlot) {
          int64_t w[3];
          is.op.encode(w);
          out << "emu " << hex(pc) << " " << w[0] << " " << w[1] << " " << w[2] << "\n";
        }
        if (is.recordAfter) out << "after " << hex(pc) << " " << is.recordAfter << "\n";
      }
      continue;
    }
    summary(out, "proc " + p.name, st, o.profile);
    if (!o.verbose) continue;
    const uint8_t* bytes = model.image.bytesAt(p.start, p.size());
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      if (b == 0 && !s.slots.empty()) {
        out << "  slots";
        for (size_t k = 0; k < s.slots.size(); ++k)
          out << " " << k << ":" << s.slots[k].offset << "/" << unsigned(s.slots[k].width);
        out << "\n";
      }
      out << "  block " << b << " " << hex(p.blocks[b].start) << " needed-in " << regNames(s.neededIn[b]);
      if (s.entrySite[b]) {
        out << " ENTRY-SITE record " << regNames(s.recordAtEntry[b]);
        if (s.carriedIn[b]) out << " carried-in " << regNames(s.carriedIn[b]);
      }
      out << "\n";
      for (uint32_t i = p.blocks[b].firstInsn; i < p.blocks[b].firstInsn + p.blocks[b].insnCount; ++i) {
        const x86::Insn& in = p.insns[i];
        const InsnSlice& is = s.insns[i];
        out << "    " << hex(in.address) << "  " << model.decoder.format(bytes + (in.address - p.start), in.length, in.address);
        for (unsigned k = 0; k < is.memCount; ++k) out << (k ? "," : "  mem ") << addressSourceName(is.source[k]);
        if (is.neededBefore) out << "  need " << regNames(is.neededBefore);
        if (is.emulated) out << "  emulate " << regNames(is.emulated);
        if (is.op.kind == x86::EmuKind::SlotLoad && is.emulated) out << " from slot " << unsigned(is.op.slot);
        if (is.storesSlot) out << "  store slot " << unsigned(is.op.slot);
        if (is.recordAfter) out << "  RECORD-AFTER " << regNames(is.recordAfter);
        out << "\n";
      }
    }
  }
  if (o.table) return;
  summary(out, "total (" + std::to_string(procs) + " procedures)", total, o.profile);
  // Where the values come from, per reference.
  for (int dyn = 0; dyn < (o.profile ? 2 : 1); ++dyn) {
    const double* v = dyn ? total.dynamicValues : total.staticValues;
    const double refs = dyn ? total.dynamicRefs : total.staticRefs;
    out << "values per reference, " << (dyn ? "dynamic" : "static") << ": at entry "
        << ratio(v[SliceStats::AtEntry], refs) << ", after calls " << ratio(v[SliceStats::AfterCall], refs)
        << ", after loads " << ratio(v[SliceStats::AfterLoad], refs) << ", after other instructions "
        << ratio(v[SliceStats::AfterOther], refs) << ", addresses "
        << ratio(v[SliceStats::Address], refs) << "\n";
  }
  if (!broken.empty()) out << "invariant FAILS " << broken << "\n";
}

}  // namespace atomx::analysis
