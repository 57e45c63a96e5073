#include "instrument/CountPlan.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "analysis/CounterPlacement.h"
#include "analysis/CounterPromotion.h"
#include "support/Error.h"

namespace atomx::instrument {

namespace {

// A prediction's state (array, counter) that a register may hold through
// a loop: only predictions on the edges out of one block update it (the
// increments()[k] of `requests`), and nothing else names it.
struct HeldState {
  const detail::BlockData* block = nullptr;
  std::vector<size_t> requests;
};
using StateKey = std::pair<uint32_t, uint64_t>;

std::map<StateKey, HeldState> statesToHold(const Engine& engine) {
  std::map<StateKey, HeldState> states;
  std::set<StateKey> other;
  const std::vector<IncrementRequest>& incs = engine.increments();
  for (size_t k = 0; k < incs.size(); ++k) {
    const IncrementRequest& r = incs[k];
    if (r.predict == IncrementRequest::Predict::None) {
      other.insert({r.counters, r.index});
      continue;
    }
    other.insert({r.counters, r.miss});
    const detail::BlockData* from = static_cast<const detail::EdgeData*>(r.where)->from;
    auto [it, fresh] = states.emplace(StateKey{r.counters, r.index}, HeldState{from, {}});
    if (it->second.block != from) it->second.block = nullptr;  // two branches share it
    it->second.requests.push_back(k);
  }
  for (auto it = states.begin(); it != states.end();)
    it = !it->second.block || other.count(it->first) ? states.erase(it) : std::next(it);
  return states;
}

// One procedure with counts or held states: its count graph, the placement,
// and each edge's slot in the hidden array (without counts: all empty).
struct Counted {
  const detail::ProcData* proc = nullptr;
  analysis::CountGraph graph;
  analysis::CounterPlan plan;
  std::unique_ptr<analysis::RegisterLiveness> live;  // made when a loop asks
  std::vector<analysis::Induction> inductions;     // what promoteCounters' `inductions` name
  std::vector<const HeldState*> states;          // what promoteCounters' `states` name
  std::vector<analysis::PromotedLoop> promoted;  // chords and states kept in registers through their loops
  std::vector<uint64_t> slot;                    // per graph edge
  std::vector<std::vector<uint32_t>> succEdge;   // per block, per succ: its graph edge
};

const detail::ProcData* procOf(const CountRequest& c) {
  if (c.point == Point::BlockBefore) return static_cast<const detail::BlockData*>(c.where)->proc;
  return static_cast<const detail::EdgeData*>(c.where)->from->proc;
}

}  // namespace

CountPlanSummary placeCounts(Engine& engine, const analysis::BlockProfile* profile, bool spill) {
  CountPlanSummary summary;
  const std::map<StateKey, HeldState> states = spill ? statesToHold(engine) : std::map<StateKey, HeldState>{};
  if (engine.counts().empty() && states.empty()) return summary;
  std::set<std::pair<uint32_t, uint64_t>> incremented;
  for (const IncrementRequest& r : engine.increments()) {
    incremented.insert({r.counters, r.index});
    if (r.predict != IncrementRequest::Predict::None) incremented.insert({r.counters, r.miss});
  }
  for (const CountRequest& c : engine.counts())
    if (incremented.count({c.counters, c.index}))
      throw Error("Counters::count at " + engine.describe(c.point, c.where) + ": counter " + std::to_string(c.index) +
                  " of that array is also incremented; a counter is either counted or incremented");

  // The procedures asked about, in program order.
  const detail::ProcData* base = engine.procs().data();
  std::vector<int64_t> countedAt(engine.procs().size(), -1);
  std::vector<bool> hasCounts(engine.procs().size(), false);
  for (const CountRequest& c : engine.counts()) {
    const size_t p = size_t(procOf(c) - base);
    countedAt[p] = 0, hasCounts[p] = true;
  }
  for (const auto& [key, held] : states) countedAt[size_t(held.block->proc - base)] = 0;
  auto liveness = [&](Counted& c) {
    return [&engine, &c]() -> const analysis::RegisterLiveness& {
      if (!c.live) c.live = std::make_unique<analysis::RegisterLiveness>(engine.program(), *c.proc->proc, engine.decoder());
      return *c.live;
    };
  };
  std::vector<Counted> counted;
  uint64_t chords = 0, edges = 0;
  for (size_t p = 0; p < countedAt.size(); ++p) {
    if (countedAt[p] < 0) continue;
    countedAt[p] = int64_t(counted.size());
    Counted& c = counted.emplace_back();
    c.proc = base + p;
    if (hasCounts[p]) {
      const ir::Procedure& proc = *c.proc->proc;
      c.inductions = analysis::findInductions(proc, liveness(c));
      std::vector<uint32_t> free;
      for (const analysis::Induction& v : c.inductions) free.push_back(v.block);
      c.graph = analysis::countGraph(proc);
      std::vector<double> weights;
      if (profile) {
        weights = analysis::blockCounts(proc, *profile);
        if (std::all_of(weights.begin(), weights.end(), [](double w) { return w == 0; })) weights.clear();  // did not run
        else ++summary.profiledProcs;
      }
      c.plan = analysis::placeCounters(proc, c.graph, weights, free);
      chords += c.plan.chords;
      edges += c.graph.edges.size();
      summary.blocks += c.graph.blocks;
      ++summary.procs;
    }
  }
  for (const auto& [key, held] : states) counted[size_t(countedAt[size_t(held.block->proc - base)])].states.push_back(&held);
  for (Counted& c : counted) {
    std::vector<uint32_t> stateBlocks;
    for (const HeldState* h : c.states) stateBlocks.push_back(h->block->block);
    c.promoted = analysis::promoteCounters(*c.proc->proc, c.graph, c.plan, liveness(c), spill, stateBlocks, c.inductions);
    for (const analysis::PromotedLoop& l : c.promoted)
      for (const analysis::PromotedCounter& k : l.counters) {
        if (k.state) ++summary.heldStates, summary.spilledStates += k.spilled;
        else ++summary.promoted, summary.spilled += k.spilled, summary.inductions += k.step != 0;
      }
  }
  summary.requests = engine.counts().size();
  summary.counters = chords;

  // Slots: the chords first (what the run increments), then the rest.
  uint64_t nextChord = 0, nextDerived = chords;
  for (Counted& c : counted) {
    c.slot.resize(c.graph.edges.size());
    c.succEdge.resize(c.graph.blocks);
    for (uint32_t k = 0; k < c.graph.edges.size(); ++k) {
      const analysis::CountEdge& e = c.graph.edges[k];
      c.slot[k] = c.plan.chord[k] ? nextChord++ : nextDerived++;
      if (e.kind == analysis::CountEdge::Kind::Flow || e.kind == analysis::CountEdge::Kind::Return) {
        auto& s = c.succEdge[e.block];
        if (s.size() <= e.succ) s.resize(e.succ + 1);
        s[e.succ] = k;
      }
    }
  }
  const uint64_t hidden = edges + summary.spilled + summary.spilledStates;  // then a slot per spilled register
  if (hidden > Engine::kMaxCounters)
    throw Error("Counters::count: the counted procedures need more counters than atomx places (2^28)");
  const uint32_t slots = hidden ? engine.addCounters(hidden) : 0;

  // A promoted counter's register is flushed on its loop's exit edges and
  // zeroed on its entry edges, a held state's stored and loaded, exits
  // first where one edge is both (one loop's exit, the next one's entry, in
  // the same register).  On an exit edge of the state's own block, its
  // update (the tool's request, added earlier) comes before the store.
  // A spilled register's slot follows the edges' (the same for both passes).
  using Acc = IncrementRequest::Accumulate;
  for (bool exits : {true, false}) {
    uint64_t spillSlot = edges;
    for (const Counted& c : counted)
      for (const analysis::PromotedLoop& l : c.promoted)
        for (const analysis::PromotedCounter& k : l.counters) {
          const uint64_t* spill = k.spilled ? &spillSlot : nullptr;
          for (auto [b, s] : exits ? l.exits : l.entries) {
            const detail::EdgeData* at = c.proc->firstBlock[b].firstEdge + s;
            if (k.step != 0) {
              engine.addAccumulate(exits ? Acc::Measure : Acc::Mark, k.reg, slots, c.slot[k.chord], Point::Edge, at,
                                   spill, nullptr, k.variable);
              continue;
            }
            if (!k.state) {
              engine.addAccumulate(exits ? Acc::Flush : Acc::Zero, k.reg, slots, c.slot[k.chord], Point::Edge, at, spill);
              continue;
            }
            const IncrementRequest& update = engine.increments()[c.states[k.chord]->requests.front()];
            engine.addAccumulate(exits ? Acc::Store : Acc::Load, k.reg, update.counters, update.index, Point::Edge, at,
                                 spill, &slots);
          }
          spillSlot += k.spilled;
        }
  }
  for (const Counted& c : counted)
    for (const analysis::PromotedLoop& l : c.promoted) {
      RegisterReservation r{c.proc->proc, {}, {}};
      for (uint32_t b : l.blocks) r.insns.push_back({c.proc->proc->blocks[b].firstInsn, c.proc->proc->blocks[b].insnCount});
      for (const analysis::PromotedCounter& k : l.counters) {
        r.regs |= x86::RegSet::gpr(k.reg);
        if (k.state)
          for (size_t request : c.states[k.chord]->requests) engine.holdPrediction(request, k.reg);
      }
      engine.reserveRegisters(std::move(r));
    }
  if (engine.counts().empty()) return summary;

  // The increments, and the derivation's program (runtime/analysis/counts.c):
  // first the chords an induction gives, with their step and the exit edges
  // where they are added.
  std::vector<int32_t> program{int32_t(chords), int32_t(summary.inductions)};
  for (const Counted& c : counted)
    for (const analysis::PromotedLoop& l : c.promoted)
      for (const analysis::PromotedCounter& k : l.counters) {
        if (k.step == 0) continue;
        program.push_back(int32_t(c.slot[k.chord]));
        program.push_back(k.step);
        program.push_back(int32_t(l.exits.size()));
        for (auto [b, s] : l.exits) program.push_back(int32_t(c.slot[c.succEdge[b][s]]));
      }
  const size_t stepsAt = program.size();
  program.push_back(0);
  int64_t steps = 0;
  for (const Counted& c : counted) {
    std::map<uint32_t, const analysis::PromotedCounter*> inRegister;  // promoted chord -> how
    for (const analysis::PromotedLoop& l : c.promoted)
      for (const analysis::PromotedCounter& k : l.counters)
        if (!k.state) inRegister[k.chord] = &k;
    for (uint32_t k = 0; k < c.graph.edges.size(); ++k) {
      if (!c.plan.chord[k]) continue;
      const auto r = inRegister.find(k);
      if (r != inRegister.end() && r->second->step) continue;  // an induction: nothing where it counts
      const analysis::CountEdge& e = c.graph.edges[k];
      const detail::BlockData* b = c.proc->firstBlock + e.block;
      const Point point = e.atBlockStart() ? Point::BlockBefore : Point::Edge;
      const void* where = e.atBlockStart() ? static_cast<const void*>(b) : b->firstEdge + e.succ;
      if (r != inRegister.end())
        engine.addAccumulate(Acc::Step, r->second->reg, slots, c.slot[k], point, where);
      else
        engine.addIncrement(slots, c.slot[k], point, where);
    }
    for (const analysis::SolveStep& s : c.plan.steps) {
      program.push_back(int32_t(c.slot[s.edge]));
      program.push_back(int32_t(s.terms.size()));
      for (auto [k, negated] : s.terms) program.push_back(int32_t(2 * c.slot[k] + (negated ? 1 : 0)));
      ++steps;
    }
  }
  program[stepsAt] = int32_t(steps);
  program.push_back(int32_t(summary.blocks));
  for (const Counted& c : counted)
    for (uint32_t b = 0; b < c.graph.blocks; ++b) program.push_back(int32_t(c.slot[c.graph.blockEdge(b)]));

  // Where each count goes: per array, (counter, slot) pairs.
  std::map<uint32_t, std::vector<int32_t>> copies;
  for (const CountRequest& r : engine.counts()) {
    const Counted& c = counted[size_t(countedAt[size_t(procOf(r) - base)])];
    uint32_t k = 0;
    if (r.point == Point::BlockBefore) {
      k = c.graph.blockEdge(static_cast<const detail::BlockData*>(r.where)->block);
    } else {
      auto* e = static_cast<const detail::EdgeData*>(r.where);
      k = c.succEdge[e->from->block][size_t(e - e->from->firstEdge)];
    }
    std::vector<int32_t>& pairs = copies[r.counters];
    if (pairs.empty()) pairs.push_back(0);
    pairs.push_back(int32_t(r.index));
    pairs.push_back(c.plan.known[k] ? int32_t(c.slot[k]) : -1);
    summary.unknown += !c.plan.known[k];
    ++pairs[0];
  }
  const uint32_t solve = engine.declare("atomx_counts_solve(int[], long*)");
  const uint32_t copy = engine.declare("atomx_counts_copy(int[], long*, long*)");
  engine.addFirst(solve, Point::ProgramAfter, {Arg(program), Arg(Arg::Kind::Counters, slots)});
  for (auto& [array, pairs] : copies)
    engine.addFirst(copy, Point::ProgramAfter, {Arg(pairs), Arg(Arg::Kind::Counters, slots), Arg(Arg::Kind::Counters, array)});
  return summary;
}

}  // namespace atomx::instrument
