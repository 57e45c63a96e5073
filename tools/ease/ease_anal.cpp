// Analysis routines of the ease tool (ease_inst.cpp): nothing runs here
// until the program ends; then every report is the facts of each executed
// block's instructions (ease_facts.h, from atomx's embedded facts) times
// the block's count, and each conditional branch's taken count, written as
// ease.out, ease.json, ease.html and ease.cg.
#include "ease_anal.h"

#include "ease_facts.h"
#include "ease_html.h"
#include "ease_report.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace {

// The conditional branch that ends block b, or null (the block's facts say
// how it ends: no other block's last record is read).
const AtomxInstFacts* condBranchOf(const AtomxBlockFacts& b) {
  if (!b.instCount || b.lastKind != ATOMX_INST_COND_BRANCH) return nullptr;
  return AtomxInst(long(b.firstInst + b.instCount - 1));
}

// Whether a conditional branch has a taken edge, which ease_inst.cpp
// counted: its target starts a block of its own procedure (a branch to
// another procedure's code has none, and its taken count is unknown).
bool hasTakenEdge(const AtomxInstFacts& branch) {
  const AtomxProcFacts* p = AtomxProc(AtomxBlock(branch.block)->proc);
  for (uint32_t b = p->firstBlock; b < p->firstBlock + p->blockCount; ++b)
    if (AtomxBlock(b)->pc == branch.target) return true;
  return false;
}

// What describe() and events() read of an instruction, as bytes: all of
// its facts but where it is (pc, block, file, line, target, its operands'
// place), and of each operand all but its displacement's value (only
// whether it is 0 counts: "base" or "base+disp") and target.  Equal shapes
// give equal facts, so each is described once however many instructions
// of the run share it (a few thousand executed instructions, a few hundred
// shapes): the end of a short process costs what it ran, not more.
std::string shapeOf(const ease::Inst& i) {
  std::string key;
  key.reserve(64 + 32 * i.ops.size());
  auto put = [&](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  const AtomxInstFacts& f = i.f;
  put(f.size), put(f.kind), put(f.memOperands), put(f.access), put(f.accessSize), put(f.regsRead),
      put(f.regsWritten), put(f.mnemonic), put(f.category), put(f.flagsRead), put(f.flagsWritten),
      put(f.flagsMaybeWritten), put(f.flagsLiveAfter), put(f.condition), put(f.traits), put(f.operandCount);
  for (const ease::Operand& o : i.ops) {
    put(o.kind), put(o.regKind), put(o.type), put(o.access), put(o.reg), put(o.memIndex), put(o.regBits), put(o.bits),
        put(o.elementBits), put(o.elements), put(o.base), put(o.index), put(o.scale), put(o.segment), put(o.size),
        put(o.memAccess), put(o.ripRelative);
    put(bool(o.disp != 0));
  }
  return key;
}

ease::Data compute(const long* blockCounts, const long* takenCounts, ease::RunCosts& run) {
  ease::Data d;
  const std::string program = AtomxProgramFile();
  d.programs.push_back(program);
  std::vector<ease::ProcRow> procs(static_cast<size_t>(AtomxProcCount()));
  for (long p = 0; p < AtomxProcCount(); ++p) procs[size_t(p)].program = program, procs[size_t(p)].name = AtomxProc(p)->name;
  // Only the blocks that ran are read: a short process of a big program
  // pays at its end for what it executed, not for every instruction.
  struct Shape {
    long inst;  // one instruction of this shape (its costs: run.shapes)
    long runs = 0;
  };
  std::unordered_map<std::string, size_t> shapeIds;
  std::vector<Shape> shapes;
  for (long b = 0; b < AtomxBlockCount(); ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    const AtomxBlockFacts& block = *AtomxBlock(b);
    ease::ProcRow& row = procs[block.proc];
    for (uint32_t k = block.firstInst; k < block.firstInst + block.instCount; ++k) {
      const ease::Inst i(*AtomxInst(k));
      auto [it, fresh] = shapeIds.try_emplace(shapeOf(i), shapes.size());
      if (fresh) shapes.push_back({long(k)}), run.shapes.push_back(ease::events(i));
      shapes[it->second].runs += n;
      run.inst.push_back(uint32_t(it->second));
      const ease::Events& e = run.shapes[it->second];
      row.insts += n, row.bytes += n * i.f.size, row.dr += n * e.dr, row.dw += n * e.dw, row.bc += n * e.bc;
    }
    const AtomxInstFacts* branch = condBranchOf(block);
    if (!branch) continue;
    ease::BranchRow r;
    r.program = program, r.pc = branch->pc, r.condition = ease::branchCondition(ease::Inst(*branch));
    r.proc = AtomxProc(block.proc)->name;
    r.executed = n;
    r.counted = hasTakenEdge(*branch);
    r.taken = r.counted ? takenCounts[b] : 0;
    d.tables["branches executed"][r.condition] += r.executed;
    if (r.counted) d.tables["branches taken"][r.condition] += r.taken;
    d.branches.push_back(r);
  }
  for (const Shape& shape : shapes)
    for (const ease::Fact& f : ease::describe(ease::Inst(*AtomxInst(shape.inst)))) d.tables[f.table][f.key] += shape.runs * f.weight;
  for (const ease::ProcRow& r : procs)
    if (r.insts) d.procs.push_back(r);
  return d;
}

// Every block that ran: its count and one execution's costs (for programs
// and the oracle tests).
void writeBlocks(atomx::JsonWriter& j, const long* blockCounts, const ease::RunCosts& run) {
  j.key("blocks").beginArray();
  size_t next = 0;
  for (long b = 0; b < AtomxBlockCount(); ++b) {
    if (!blockCounts[b]) continue;
    const AtomxBlockFacts& block = *AtomxBlock(b);
    ease::Events cost{0, 0, 0, 0};  // of one execution
    for (uint32_t k = 0; k < block.instCount; ++k) {
      const ease::Events& e = run.at(next++);
      cost.ir += e.ir, cost.dr += e.dr, cost.dw += e.dw, cost.bc += e.bc;
    }
    j.beginObject().key("pc").hex(block.pc).key("end").hex(block.endPc);
    j.key("proc").value(AtomxProc(block.proc)->name).key("count").value(blockCounts[b]);
    j.key("insts").value(cost.ir).key("Dr").value(cost.dr).key("Dw").value(cost.dw).key("Bc").value(cost.bc);
    j.endObject();
  }
  j.endArray();
}

}  // namespace

extern "C" void EaseFini(long top, const long* blockCounts, const long* takenCounts) {
  ease::RunCosts run;
  const ease::Data d = compute(blockCounts, takenCounts, run);
  if (FILE* out = atomx::openToolOutput("ease.out")) ease::writeText(out, d, top), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.json"))
    ease::writeJson(out, d, [&](atomx::JsonWriter& j) { writeBlocks(j, blockCounts, run); }), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.html")) ease::writeHtml(out, d), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.cg")) ease::writeCachegrind(out, blockCounts, run), std::fclose(out);
}
