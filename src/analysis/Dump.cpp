#include "analysis/Dump.h"

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
