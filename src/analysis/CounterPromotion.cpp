#include "analysis/CounterPromotion.h"

#include <algorithm>
#include <optional>

#include "analysis/Dominators.h"
#include "analysis/Loops.h"
#include "x86/Semantics.h"

namespace atomx::analysis {

namespace {

// The registers a promoted counter may use, in the order tried: caller-saved
// scratch ones first (r11 r10 r9 r8 rdi rsi rcx rdx), then callee-saved
// ones (rbx rbp r12-r15).  Never %rsp, nor %rax (an increment that keeps
// the live flags holds them there).
constexpr unsigned kOrder[] = {11, 10, 9, 8, 7, 6, 1, 2, 3, 5, 12, 13, 14, 15};

bool plainEdge(ir::EdgeKind k) { return k == ir::EdgeKind::FallThrough || k == ir::EdgeKind::Taken; }

// Per block: whether control can reach it, from the procedure's entry or
// any other way in (a landing pad, a taken address, a branch from another
// procedure).  The rest is dead code (padding after a jump, say), whose
// edges never run.
std::vector<bool> liveBlocks(const ir::Procedure& proc) {
  std::vector<uint32_t> ways;
  for (uint32_t b = 0; b < proc.blocks.size(); ++b) {
    const ir::Block& blk = proc.blocks[b];
    if (blk.isEntry || blk.isLandingPad || blk.isAddressTaken || blk.isExternalEntry) ways.push_back(b);
  }
  return reachableFrom(procedureGraph(proc), ways);
}

// The loop as a PromotedLoop without counters, or false when it may not
// hold one (the header comment's conditions but the register).  Edges
// from dead code are no way in.
bool eligible(const ir::Procedure& proc, const Loop& loop, const std::vector<bool>& live, PromotedLoop& out) {
  out.blocks = loop.body;
  for (uint32_t b : loop.body) {
    const ir::Block& blk = proc.blocks[b];
    if (!blk.outs.empty() || blk.isEntry || blk.isLandingPad || blk.isAddressTaken || blk.isExternalEntry) return false;
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i)
      if (x86::entersKernel(ZydisMnemonic(proc.insns[i].mnemonic))) return false;
    for (uint32_t s = 0; s < blk.succs.size(); ++s) {
      if (!plainEdge(blk.succs[s].kind)) return false;
      if (!loop.contains(blk.succs[s].to)) out.exits.push_back({b, s});
    }
    for (const ir::PredEdge& p : blk.preds) {
      if (loop.contains(p.from) || !live[p.from]) continue;
      if (b != loop.header || !plainEdge(p.kind)) return false;
    }
  }
  for (const ir::PredEdge& p : proc.blocks[loop.header].preds) {
    if (loop.contains(p.from) || !live[p.from]) continue;
    const ir::Block& from = proc.blocks[p.from];
    for (uint32_t s = 0; s < from.succs.size(); ++s)
      if (from.succs[s].to == loop.header && from.succs[s].kind == p.kind) out.entries.push_back({p.from, s});
  }
  std::sort(out.entries.begin(), out.entries.end());
  out.entries.erase(std::unique(out.entries.begin(), out.entries.end()), out.entries.end());
  return !out.entries.empty() && !out.exits.empty();
}

// The registers an instruction of the loop reads or writes.
x86::RegSet touchedIn(const ir::Procedure& proc, const Loop& loop, const RegisterLiveness& registers) {
  x86::RegSet touched;
  for (uint32_t b : loop.body) {
    const ir::Block& blk = proc.blocks[b];
    for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) touched |= registers.touched(i);
  }
  return touched;
}

// `touched`, and the registers live at the loop's header or where one of
// its exits arrives: a register outside it is free through the loop.
x86::RegSet busyAround(const ir::Procedure& proc, const Loop& loop, const PromotedLoop& p,
                       const RegisterLiveness& registers, x86::RegSet touched) {
  touched |= registers.at(proc.blocks[loop.header].start);
  for (auto [b, s] : p.exits) touched |= registers.at(proc.blocks[proc.blocks[b].succs[s].to].start);
  return touched;
}

}  // namespace

std::vector<Induction> findInductions(const ir::Procedure& proc,
                                      const std::function<const RegisterLiveness&()>& liveness) {
  std::vector<Induction> out;
  if (proc.blocks.empty()) return out;
  const LoopForest forest = procedureLoops(proc);
  const std::vector<bool> reachable = liveBlocks(proc);
  std::vector<bool> measured(proc.blocks.size(), false);
  for (size_t k = forest.loops.size(); k-- > 0;) {  // inner loops first
    const Loop& loop = forest.loops[k];
    PromotedLoop p;
    if (loop.header >= proc.blocks.size() || !eligible(proc, loop, reachable, p)) continue;
    const RegisterLiveness& live = liveness();
    // Per register: the instructions of the loop that write it.
    uint32_t writes[16] = {}, last[16] = {}, lastBlock[16] = {};
    for (uint32_t b : loop.body) {
      const ir::Block& blk = proc.blocks[b];
      for (uint32_t i = blk.firstInsn; i < blk.firstInsn + blk.insnCount; ++i) {
        const uint16_t w = live.written(i).gprs();
        for (unsigned r = 0; r < 16; ++r)
          if (w & (1u << r)) ++writes[r], last[r] = i, lastBlock[r] = b;
      }
    }
    std::optional<Induction> best;
    auto rank = [&](uint32_t b) { return b == loop.header ? 0 : 1; };
    for (unsigned r = 0; r < 16; ++r) {
      if (writes[r] != 1) continue;
      const auto [reg, by] = live.step(last[r]);
      if (reg != int8_t(r)) continue;
      const uint32_t b = lastBlock[r];
      if (measured[b] || forest.innermost[b] != int32_t(k)) continue;
      if (!best || rank(b) < rank(best->block)) best = Induction{loop.header, b, r, by};
    }
    if (!best) continue;
    measured[best->block] = true;
    out.push_back(*best);
  }
  return out;
}

std::vector<PromotedLoop> promoteCounters(const ir::Procedure& proc, const CountGraph& graph, const CounterPlan& plan,
                                          const std::function<const RegisterLiveness&()>& liveness, bool spill,
                                          const std::vector<uint32_t>& states,
                                          const std::vector<Induction>& inductions) {
  std::vector<PromotedLoop> out;
  const bool chordsToo = !plan.everyBlock && !plan.chord.empty();
  if (proc.blocks.empty() || (!chordsToo && states.empty())) return out;
  const LoopForest forest = procedureLoops(proc);
  const std::vector<bool> live = liveBlocks(proc);
  // Inner loops first (the forest lists a loop before those inside it):
  // a loop's registers are kept from the loops around it, and a chord an
  // inner loop holds is not the outer loop's.
  std::vector<x86::RegSet> taken(forest.loops.size());  // per loop: its registers and its inner loops'
  std::vector<bool> held(chordsToo ? graph.edges.size() : 0, false);
  std::vector<bool> heldState(states.size(), false);
  auto promote = [&](size_t k) {
    const Loop& loop = forest.loops[k];
    if (loop.header >= proc.blocks.size()) return;
    // What the loop may hold: the states of its branches, then the chords
    // inside it (a block's own count, or an edge between two of its blocks).
    std::vector<PromotedCounter> wants;
    for (size_t s = 0; s < states.size(); ++s)
      if (!heldState[s] && loop.contains(states[s])) wants.push_back({uint32_t(s), 0, false, true});
    for (const Induction& v : inductions) {
      const uint32_t e = graph.blockEdge(v.block);
      if (v.header != loop.header || e >= held.size() || !plan.chord[e] || held[e]) continue;
      PromotedCounter c{e, 0, false, false};
      c.step = v.step, c.variable = v.reg;
      wants.push_back(c);
    }
    for (uint32_t e = 0; e < held.size(); ++e) {
      if (!plan.chord[e] || held[e]) continue;
      if (std::any_of(wants.begin(), wants.end(), [&](const PromotedCounter& w) { return !w.state && w.chord == e; }))
        continue;
      const CountEdge& c = graph.edges[e];
      if (!c.measurable || !loop.contains(c.block)) continue;
      if (c.kind == CountEdge::Kind::Block ||
          (c.kind == CountEdge::Kind::Flow && loop.contains(proc.blocks[c.block].succs[c.succ].to)))
        wants.push_back({e, 0, false, false});
    }
    PromotedLoop p;
    if (wants.empty() || !eligible(proc, loop, live, p)) return;
    x86::RegSet touched = touchedIn(proc, loop, liveness());
    touched |= taken[k];  // the inner loops' counters
    const x86::RegSet busy = busyAround(proc, loop, p, liveness(), touched);
    size_t next = 0;
    for (int pass = 0; pass < (spill ? 2 : 1); ++pass)
      for (unsigned hw : kOrder) {
        if (next == wants.size()) break;
        const bool spilled = pass == 1;
        if (!(spilled ? touched : busy).has(hw) && (!spilled || busy.has(hw))) {
          PromotedCounter c = wants[next++];
          c.reg = hw, c.spilled = spilled;
          p.counters.push_back(c);
        }
      }
    for (PromotedCounter& c : p.counters) {
      taken[k] |= x86::RegSet::gpr(c.reg);
      (c.state ? heldState : held)[c.chord] = true;
    }
    if (!p.counters.empty()) out.push_back(std::move(p));
  };
  for (size_t k = forest.loops.size(); k-- > 0;) {
    promote(k);
    if (forest.loops[k].parent >= 0) taken[size_t(forest.loops[k].parent)] |= taken[k];
  }
  return out;
}

std::vector<PromotedLoop> promoteCursor(const ir::Procedure& proc,
                                        const std::function<const RegisterLiveness&()>& liveness,
                                        const std::vector<bool>& wanted, const std::vector<bool>& refused) {
  std::vector<PromotedLoop> out;
  if (proc.blocks.empty()) return out;
  const LoopForest forest = procedureLoops(proc);
  const std::vector<bool> live = liveBlocks(proc);
  std::vector<bool> covered(proc.blocks.size(), false);  // inside a loop already promoted
  for (const Loop& loop : forest.loops) {  // outer loops first
    if (loop.header >= proc.blocks.size() || covered[loop.header]) continue;
    if (std::none_of(loop.body.begin(), loop.body.end(), [&](uint32_t b) { return wanted[b]; })) continue;
    PromotedLoop p;
    if (!eligible(proc, loop, live, p)) continue;
    auto refuses = [&](uint32_t b) { return refused[b]; };
    if (std::any_of(loop.body.begin(), loop.body.end(), refuses) ||
        std::any_of(p.entries.begin(), p.entries.end(), [&](auto e) { return refused[e.first]; }) ||
        std::any_of(p.exits.begin(), p.exits.end(), [&](auto e) { return refused[proc.blocks[e.first].succs[e.second].to]; }))
      continue;
    const RegisterLiveness& registers = liveness();
    const x86::RegSet touched = touchedIn(proc, loop, registers);
    const x86::RegSet busy = busyAround(proc, loop, p, registers, touched);
    for (int pass = 0; pass < 2 && p.counters.empty(); ++pass)  // dead ones first, then ones to spill
      for (unsigned hw : kOrder)
        if (hw != 12 && !(pass ? touched : busy).has(hw)) {  // the stores' disp8(%r) has no room for %r12's SIB byte
          p.counters.push_back({0, hw, pass == 1, false});
          break;
        }
    if (p.counters.empty()) continue;
    for (uint32_t b : loop.body) covered[b] = true;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace atomx::analysis
