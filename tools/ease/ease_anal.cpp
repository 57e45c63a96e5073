// Analysis routines of the ease tool (ease_inst.cpp): nothing runs here
// until the program ends; then every report is the facts of each executed
// block's instructions (ease_facts.h, from atomx's embedded facts) times
// the block's count, and each conditional branch's taken count, written as
// ease.out, ease.json, ease.html and ease.cg.
#include "ease_anal.h"

#include "ease_facts.h"
#include <atomx/ease_html.hpp>
#include <atomx/ease_report.hpp>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

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
// Each procedure's block addresses are read once, when a branch of it is
// first asked about.
class TakenEdges {
 public:
  bool has(const AtomxInstFacts& branch) {
    const uint32_t proc = AtomxBlock(branch.block)->proc;
    auto [it, fresh] = starts_.try_emplace(proc);
    if (fresh) {
      const AtomxProcFacts* p = AtomxProc(proc);
      for (uint32_t b = p->firstBlock; b < p->firstBlock + p->blockCount; ++b) it->second.push_back(AtomxBlock(b)->pc);
      std::sort(it->second.begin(), it->second.end());
    }
    return std::binary_search(it->second.begin(), it->second.end(), branch.target);
  }

 private:
  std::unordered_map<uint32_t, std::vector<uint64_t>> starts_;  // procedure -> its blocks' addresses
};

// Into key: what describe() and events() read of an instruction, as bytes,
// and nothing else: its facts but where it is (pc, block, file, line,
// target, its operands' place) and the registers it reads and writes
// (counted by bit, apart: of them only whether it touches a vector
// register), of its flags live after only whether its flag
// write is ever read, of each operand what it is, how it is accessed and
// its addressing mode.  Equal keys give equal facts, so each shape is
// described once however many instructions of the run share it (a few
// thousand executed instructions, a few hundred shapes): the end of a
// short process costs what it ran, not more.  Strings are compared by
// pointer (<atomx/facts.h> keeps each once).  `apart` (--naive): the
// instruction's id too, so that each is described on its own.
void shapeOf(long id, const AtomxInstFacts& f, bool apart, std::string& key) {
  key.clear();
  auto put = [&](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  if (apart) put(id);
  put(f.size), put(f.kind), put(f.mnemonic), put(f.category), put(f.flagsRead), put(f.flagsWritten),
      put(f.flagsMaybeWritten), put(ease::flagWriteNeverRead(f)), put(ease::touchesVectors(f)), put(f.condition),
      put(f.traits), put(f.operandCount);
  for (uint32_t k = 0; k < f.operandCount; ++k) {
    const ease::Operand& o = *AtomxOperand(long(f.firstOperand + k));
    put(o.kind), put(o.regKind), put(o.type), put(o.access), put(o.regBits), put(o.bits), put(o.elements), put(o.size),
        put(o.memAccess), put(ease::addressingModeId(o)), put(o.cause);
  }
}

// `takenCounts` null: the static measurements (every block counted once;
// no branch has a taken count).
ease::Data compute(bool naive, const long* blockCounts, const long* takenCounts, ease::RunCosts& run) {
  ease::Data d;
  d.isStatic = takenCounts == nullptr;
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
  std::string key;
  long regsRead[64] = {}, regsWritten[64] = {};  // runs per register bit
  TakenEdges takenEdges;
  for (long b = 0; b < AtomxBlockCount(); ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    const AtomxBlockFacts& block = *AtomxBlock(b);
    ease::ProcRow& row = procs[block.proc];
    for (uint32_t k = block.firstInst; k < block.firstInst + block.instCount; ++k) {
      const AtomxInstFacts& f = *AtomxInst(k);
      shapeOf(k, f, naive, key);
      auto [it, fresh] = shapeIds.try_emplace(key, shapes.size());
      if (fresh) shapes.push_back({long(k)}), run.shapes.push_back(ease::events(ease::Inst(f)));
      shapes[it->second].runs += n;
      run.inst.push_back(uint32_t(it->second));
      for (uint64_t r = f.regsRead; r; r &= r - 1) regsRead[__builtin_ctzll(r)] += n;
      for (uint64_t w = f.regsWritten; w; w &= w - 1) regsWritten[__builtin_ctzll(w)] += n;
      const ease::Events& e = run.shapes[it->second];
      row.insts += n, row.bytes += n * f.size, row.dr += n * e.dr, row.dw += n * e.dw, row.bc += n * e.bc;
      for (uint32_t o = 0; o < f.operandCount; ++o)
        if (const ease::Operand& op = *AtomxOperand(long(f.firstOperand + o)); ease::isMemory(op)) row.causes[ease::causeName(op)] += n;
    }
    const AtomxInstFacts* branch = condBranchOf(block);
    if (!branch) continue;
    ease::BranchRow r;
    r.program = program, r.pc = branch->pc, r.condition = ease::branchCondition(ease::Inst(*branch));
    r.proc = AtomxProc(block.proc)->name;
    r.executed = n;
    r.counted = takenCounts && takenEdges.has(*branch);
    r.taken = r.counted ? takenCounts[b] : 0;
    d.tables["branches executed"][r.condition] += r.executed;
    if (r.counted) d.tables["branches taken"][r.condition] += r.taken;
    d.branches.push_back(r);
  }
  for (const Shape& shape : shapes)
    for (const ease::Fact& f : ease::describe(ease::Inst(*AtomxInst(shape.inst)))) d.tables[f.table][f.key] += shape.runs * f.weight;
  for (int bit = 0; bit < 64; ++bit)
    for (const std::string& r : ease::registerNames(uint64_t(1) << bit)) {
      if (regsRead[bit]) d.tables["register read"][r] += regsRead[bit];
      if (regsWritten[bit]) d.tables["register written"][r] += regsWritten[bit];
    }
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

// --static: the reports with every block counted once, at program start;
// then the process ends before the program's own code runs (what follows
// the tools' start routines is the program).
extern "C" void EaseStatic(long top) {
  const std::vector<long> once(size_t(AtomxBlockCount()) + 1, 1);
  ease::RunCosts run;
  const ease::Data d = compute(false, once.data(), nullptr, run);
  if (FILE* out = atomx::openToolOutput("ease.out")) ease::writeText(out, d, top), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.json"))
    ease::writeJson(out, d, [&](atomx::JsonWriter& j) { writeBlocks(j, once.data(), run); }), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.html")) ease::writeHtml(out, d), std::fclose(out);
  std::fflush(nullptr);
  _exit(0);
}

extern "C" void EaseFini(long top, long naive, const long* blockCounts, const long* takenCounts) {
  ease::RunCosts run;
  const ease::Data d = compute(naive != 0, blockCounts, takenCounts, run);
  if (FILE* out = atomx::openToolOutput("ease.out")) ease::writeText(out, d, top), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.json"))
    ease::writeJson(out, d, [&](atomx::JsonWriter& j) { writeBlocks(j, blockCounts, run); }), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.html")) ease::writeHtml(out, d), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.cg")) ease::writeCachegrind(out, blockCounts, run), std::fclose(out);
}
