#include "analysis/TracePlan.h"

#include <elf.h>

#include <cstdlib>
#include <string>
#include <unordered_set>

#include "analysis/Entries.h"
#include "analysis/Loops.h"
#include "support/Fnv.h"

namespace atomx::analysis {

namespace {

bool leaves(ir::EdgeKind k) { return k == ir::EdgeKind::TailCall || k == ir::EdgeKind::UnknownIndirect; }

// The witness values first readable after each arc of each predicate.
void findFirstWitnesses(ProcTrace& t) {
  const TraceGraph& g = t.graph;
  t.firstWitnesses.assign(g.arcs.size(), {});
  std::vector<uint32_t> seenAt(g.nodes(), UINT32_MAX), stack;
  for (uint32_t p = 0; p < g.nodes(); ++p) {
    if (!g.isPredicate(p)) continue;
    for (uint32_t k : g.out[p]) {
      std::vector<uint32_t>& first = t.firstWitnesses[k];
      if (t.plan.witness[k] >= 0) {
        first.push_back(uint32_t(t.plan.witness[k]));
        continue;
      }
      stack.assign(1, g.arcs[k].to);
      while (!stack.empty()) {
        const uint32_t x = stack.back();
        stack.pop_back();
        if (seenAt[x] == k) continue;
        seenAt[x] = k;
        for (uint32_t j : g.out[x]) {
          if (t.plan.witness[j] >= 0) first.push_back(uint32_t(t.plan.witness[j]));
          else stack.push_back(g.arcs[j].to);
        }
      }
    }
  }
}

// The libc::kFunctions index of the function the last instruction of block
// b of p calls or tail-jumps to (TracePlan.h, kLibraryArguments), or -1.
int libraryCall(const ir::Program& program, const ir::Procedure& p, uint32_t b, const std::unordered_set<std::string>& own) {
  const ir::Block& blk = p.blocks[b];
  const x86::Insn& in = p.insns[blk.firstInsn + blk.insnCount - 1];
  std::string name;
  if (in.flow == x86::Flow::Call || in.flow == x86::Flow::Jump) {
    if (auto it = program.pltNames.find(in.target); it != program.pltNames.end()) name = it->second.substr(0, it->second.rfind("@plt"));
  } else if ((in.flow == x86::Flow::IndirectCall || in.flow == x86::Flow::IndirectJump) && in.isRipRelative()) {
    if (auto it = program.gotNames.find(in.target); it != program.gotNames.end()) name = it->second;
  }
  const libc::Function* f = name.empty() || own.count(name) ? nullptr : libc::find(name);
  if (!f) return -1;
  const size_t k = size_t(f - libc::kFunctions);
  const bool tail = in.flow == x86::Flow::Jump || in.flow == x86::Flow::IndirectJump;
  return tail && libc::needsResult(f->kind) ? -1 : int(k);  // calloc's block is its result: not the trace's
}

// Whether a value recorded in block `site` would be stored once per
// iteration of a loop holding block `predicate`: some natural loop holds
// both.
bool sharesLoop(const LoopForest& loops, uint32_t predicate, uint32_t site) {
  for (int32_t l = loops.innermost[predicate]; l >= 0; l = loops.loops[size_t(l)].parent)
    if (loops.loops[size_t(l)].contains(site)) return true;
  return false;
}

// Whether block b may go more than one way inside its procedure: a
// conditional branch to another block, or an indirect jump.
bool branches(const ir::Procedure& p, uint32_t b) {
  const ir::Block& blk = p.blocks[b];
  const x86::Insn& last = p.insns[blk.firstInsn + blk.insnCount - 1];
  if (last.flow == x86::Flow::IndirectJump) return true;
  if (last.flow != x86::Flow::CondBranch) return false;
  for (const ir::Edge& e : blk.succs)
    if (e.to != blk.succs.front().to) return true;
  return !blk.outs.empty();
}

// A data trace's slices with the evaluated predicates that pay (TracePlan.h):
// every conditional branch in a loop is a candidate; a candidate is dropped
// while a value the slices with it record that the slices without any do
// not is stored in a loop that holds it (recorded per iteration: no
// witness saved).  Dropping one can only remove needed registers, so this
// ends.
DataSlices slicesWithEvaluated(const ir::Program& program, const ir::Procedure& p, const x86::Decoder& decoder,
                               const ProcTrace& t) {
  DataSlices base = computeDataSlices(program, p, decoder, &t);
  if (!evaluatedPredicates()) return base;
  const LoopForest loops = procedureLoops(p);
  std::vector<bool> candidate(p.blocks.size(), false);
  bool any = false;
  for (uint32_t b = 0; b < p.blocks.size(); ++b) {
    const ir::Block& blk = p.blocks[b];
    candidate[b] = loops.depth[b] > 0 && p.insns[blk.firstInsn + blk.insnCount - 1].flow == x86::Flow::CondBranch;
    any |= candidate[b];
  }
  // First from the instructions alone: a candidate that cannot be
  // evaluated goes, and so does one whose innermost loop has a branch
  // that is no candidate (the second rule below); only a procedure with
  // candidates left computes its slices again.
  if (any) candidate = evaluableBranches(program, p, decoder, candidate);
  for (bool changed = any; changed;) {
    changed = any = false;
    for (uint32_t c = 0; c < p.blocks.size(); ++c) {
      if (!candidate[c]) continue;
      for (uint32_t x : loops.loops[size_t(loops.innermost[c])].body)
        if (!candidate[x] && branches(p, x)) candidate[c] = false, changed = true;
      any |= candidate[c];
    }
  }
  while (any) {
    DataSlices s = computeDataSlices(program, p, decoder, &t, candidate);
    std::vector<uint32_t> newSites;  // blocks that record a value the base does not
    for (uint32_t b = 0; b < p.blocks.size(); ++b) {
      bool added = s.recordAtEntry[b] & ~base.recordAtEntry[b];
      const ir::Block& blk = p.blocks[b];
      for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount && !added; ++i)
        added = s.insns[i].recordAfter & ~base.insns[i].recordAfter;
      if (added) newSites.push_back(b);
    }
    bool dropped = false;
    for (uint32_t c = 0; c < p.blocks.size(); ++c) {
      if (!candidate[c]) continue;
      if (s.evaluated[c] == x86::kNoCondition) {
        candidate[c] = false;  // it cannot be evaluated: no need to ask again
        continue;
      }
      // Its loop must need no witness per iteration once it is evaluated:
      // every other conditional branch of it is evaluated too.
      bool pays = true;
      for (uint32_t x : loops.loops[size_t(loops.innermost[c])].body)
        if (s.evaluated[x] == x86::kNoCondition && branches(p, x)) pays = false;
      for (size_t k = 0; k < newSites.size() && pays; ++k) pays = !sharesLoop(loops, c, newSites[k]);
      if (!pays) candidate[c] = false, dropped = true;
    }
    if (!dropped) return s;
  }
  return base;
}

}  // namespace

bool evaluatedPredicates() {
  static const bool on = [] {
    const char* v = std::getenv("ATOMX_TRACE_NO_EVALUATED");
    return !(v && *v && std::string(v) != "0");
  }();
  return on;
}

LibraryLength libraryLength(size_t f, bool tail) {
  const libc::Function& fn = libc::kFunctions[f];
  if (fn.kind == libc::Kind::Calloc) return LibraryLength::Result;
  if (!libc::measuredBy(fn.kind)) return LibraryLength::Arguments;
  const std::string_view n = fn.name;
  const bool resultSays = fn.kind == libc::Kind::Strlen || fn.kind == libc::Kind::Strnlen || n == "stpcpy" || n == "__stpcpy_chk";
  return resultSays && !tail ? LibraryLength::Result : LibraryLength::Measured;
}

bool isSetjmp(const std::string& name) {
  for (const char* s : {"setjmp@plt", "_setjmp@plt", "__sigsetjmp@plt", "sigsetjmp@plt"})
    if (name == s) return true;
  return false;
}

const ir::Procedure* tracedCode(const ir::Program& program, const TracePlan& plan, uint64_t target) {
  const ir::Procedure* p = program.procAt(target);
  if (!p || p->id >= plan.procs.size() || !plan.procs[p->id].traced) return nullptr;
  const int64_t b = p->blockIndexAt(target);
  return b >= 0 && p->blocks[size_t(b)].start == target ? p : nullptr;
}

bool callWritesReturn(const ir::Program& program, const TracePlan& plan, uint64_t target) {
  const ir::Procedure* q = target ? tracedCode(program, plan, target) : nullptr;
  return !q || q->start != target || plan.procs[q->id].leavesOutside;
}

TracePlan planTrace(const ir::Program& program, const BlockProfile* profile, const x86::Decoder* data) {
  TracePlan plan;
  plan.data = data != nullptr;
  plan.procs.resize(program.procs.size());
  for (const ir::Procedure& p : program.procs) {
    ProcTrace& t = plan.procs[p.id];
    t.traced = p.isMovable() && !p.blocks.empty();
    if (!t.traced) continue;
    for (uint32_t b = 0; b < p.blocks.size(); ++b)
      if (p.blocks[b].isEntry) t.entryBlock = b;
    t.tableWidth = p.blocks.size() <= 0xffff ? 2 : 4;
  }
  // Code that runs before the entry point, and every procedure it reaches
  // by direct branches, stays untraced (outside code).
  if (program.image) {
    std::vector<const ir::Procedure*> work;
    for (uint64_t a : earlyCode(*program.image))
      if (const ir::Procedure* p = program.procAt(a); p && plan.procs[p->id].traced) {
        plan.procs[p->id].traced = false;
        plan.procs[p->id].early = true;
        work.push_back(p);
      }
    while (!work.empty()) {
      const ir::Procedure* p = work.back();
      work.pop_back();
      for (const x86::Insn& in : p->insns)
        if (in.isDirectBranch())
          if (const ir::Procedure* q = program.procAt(in.target); q && q != p && plan.procs[q->id].traced) {
            plan.procs[q->id].traced = false;
            plan.procs[q->id].early = true;
            work.push_back(q);
          }
    }
  }
  // Outside code may enter a traced procedure: through its address, as
  // the entry point, or by a branch from code left in place or run early.
  std::vector<bool> traced(program.procs.size());
  for (const ir::Procedure& p : program.procs) traced[p.id] = plan.procs[p.id].traced;
  const std::vector<bool> entered = enteredFromOutside(program, traced);
  for (const ir::Procedure& p : program.procs) plan.procs[p.id].enterable = entered[p.id];
  // leavesOutside, to a fixed point (through tail calls between traced code).
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::Procedure& p : program.procs) {
      ProcTrace& t = plan.procs[p.id];
      if (!t.traced || t.leavesOutside) continue;
      for (const ir::Block& b : p.blocks)
        for (const ir::OutEdge& e : b.outs) {
          if (!leaves(e.kind) || t.leavesOutside) continue;
          const ir::Procedure* q = e.target ? tracedCode(program, plan, e.target) : nullptr;
          if (!q || plan.procs[q->id].leavesOutside) t.leavesOutside = changed = true;
        }
    }
  }
  // Jump tables that reach other procedures' blocks.
  for (const ir::Procedure& p : program.procs) {
    ProcTrace& t = plan.procs[p.id];
    t.tagged.assign(p.blocks.size(), false);
    t.resumes.assign(p.blocks.size(), false);
  }
  for (const ir::Procedure& p : program.procs) {
    if (!plan.procs[p.id].traced) continue;
    for (const ir::JumpTable& jt : p.jumpTables)
      for (uint64_t target : jt.entryTargets) {
        if (p.contains(target)) continue;
        plan.procs[p.id].crossTables = true;
        if (const ir::Procedure* q = tracedCode(program, plan, target))
          plan.procs[q->id].tagged[size_t(q->blockIndexAt(target))] = true;
      }
  }
  std::unordered_set<std::string> own;  // the program's procedures' names: no library call to those
  if (data)
    for (const ir::Procedure& p : program.procs) own.insert(p.name);
  Fnv64 d;  // of every decision: TracePlan::digest
  for (const ir::Procedure& p : program.procs) {
    ProcTrace& t = plan.procs[p.id];
    d.addWord(uint64_t(t.traced) | uint64_t(t.enterable) << 1 | uint64_t(t.leavesOutside) << 2 | uint64_t(t.crossTables) << 3 |
          uint64_t(t.tableWidth) << 8);
    if (!t.traced) continue;
    bool computedGoto = false;
    for (const ir::Block& b : p.blocks)
      for (const ir::OutEdge& e : b.outs) computedGoto |= e.kind == ir::EdgeKind::UnknownIndirect;
    std::vector<bool> records(p.blocks.size(), false);
    for (uint32_t b = 0; b < p.blocks.size(); ++b) {
      const ir::Block& blk = p.blocks[b];
      if ((blk.isLandingPad || (computedGoto && blk.isAddressTaken)) && !blk.isEntry) t.tagged[b] = true;
      records[b] = t.tagged[b] || (t.enterable && b == t.entryBlock);
      const x86::Insn& last = p.insns[blk.firstInsn + blk.insnCount - 1];
      if (last.flow == x86::Flow::Call)
        if (auto plt = program.pltNames.find(last.target); plt != program.pltNames.end() && isSetjmp(plt->second))
          t.resumes[b] = true;
      if (t.tagged[b]) d.addWord(b);
      if (t.resumes[b]) d.addWord(uint64_t(b) << 32);
    }
    if (data) {
      t.slices = slicesWithEvaluated(program, p, *data, t);
      for (uint32_t b = 0; b < p.blocks.size(); ++b) {
        if (!recordsData(p, t.slices, b)) continue;
        records[b] = true;
        d.addWord(uint64_t(b) << 32 | t.slices.recordAtEntry[b]);
      }
      for (const InsnSlice& in : t.slices.insns)
        d.addWord(uint64_t(in.recordAfter) << 16 | in.emulated | uint64_t(in.valueBytes) << 32 | uint64_t(in.valueExtend) << 40 |
                  uint64_t(in.flagOp.kind) << 48);
      t.library.assign(p.blocks.size(), -1);
      for (uint32_t b = 0; b < p.blocks.size(); ++b) {
        const int f = libraryCall(program, p, b, own);
        if (f < 0) continue;
        t.library[b] = int16_t(f);
        records[b] = true;  // its arguments are values, which no look-ahead may take for a witness
        d.addWord(uint64_t(b) << 16 | uint64_t(f) | 0x11cull << 48);  // 0x11c: measured lengths
      }
    }
    std::vector<bool> evaluated(p.blocks.size(), false);
    if (data)
      for (uint32_t b = 0; b < p.blocks.size(); ++b)
        if (t.slices.evaluated[b] != x86::kNoCondition) {
          evaluated[b] = true;
          d.addWord(uint64_t(b) << 8 | t.slices.evaluated[b] | 0xe7ull << 56);
        }
    t.graph = traceGraph(p, records, evaluated);
    const std::vector<double> counts = profile ? blockCounts(p, *profile) : std::vector<double>{};
    t.plan = placeWitnesses(p, t.graph, counts);
    findFirstWitnesses(t);
    d.addWord(p.start);
    d.addWord(t.plan.width);
    for (int32_t w : t.plan.witness) d.addWord(uint64_t(int64_t(w)));
  }
  if (data) d.addWord(0xda7a);
  plan.digest = d.h;
  return plan;
}

}  // namespace atomx::analysis
