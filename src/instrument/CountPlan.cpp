#include "instrument/CountPlan.h"

#include <atomx/counts_format.h>

#include <algorithm>
#include <functional>
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

using Acc = IncrementRequest::Accumulate;

// placeCounts, phase by phase: the state the phases share and pass on.
class CountPlanner {
 public:
  CountPlanner(Engine& engine, const analysis::BlockProfile* profile, bool spill)
      : engine_(engine), profile_(profile), spill_(spill), base_(engine.procs().data()) {}

  CountPlanSummary run() {
    if (spill_) states_ = statesToHold(engine_);
    if (engine_.counts().empty() && states_.empty()) return summary_;  // nothing to place
    refuseIncrementedCounts();
    chooseProcedures();
    placeChords();
    promoteChords();
    assignSlots();
    addLoopEntriesAndExits();
    reserveLoopRegisters();
    if (engine_.counts().empty()) return summary_;  // held states only: no count to derive
    addChordIncrements();
    const std::vector<AtomxCountsWord> solve = solveProgram();
    const std::map<uint32_t, std::vector<AtomxCountsWord>> copies = copyPrograms();
    addExitCalls(solve, copies);
    return summary_;
  }

 private:
  // A counter is either counted or incremented by the tool: a count's
  // counter that an increment or a prediction also names is an error.
  void refuseIncrementedCounts() const {
    std::set<std::pair<uint32_t, uint64_t>> incremented;
    for (const IncrementRequest& r : engine_.increments()) {
      incremented.insert({r.counters, r.index});
      if (r.predict != IncrementRequest::Predict::None) incremented.insert({r.counters, r.miss});
    }
    for (const CountRequest& c : engine_.counts())
      if (incremented.count({c.counters, c.index}))
        throw Error("Counters::count at " + engine_.describe(c.point, c.where) + ": counter " + std::to_string(c.index) +
                    " of that array is also incremented; a counter is either counted or incremented");
  }

  // Which procedures are planned, in program order: those a count was asked
  // in, and those a held state's branch is in.
  void chooseProcedures() {
    countedAt_.assign(engine_.procs().size(), -1);
    hasCounts_.assign(engine_.procs().size(), false);
    for (const CountRequest& c : engine_.counts()) {
      const size_t p = size_t(procOf(c) - base_);
      countedAt_[p] = 0, hasCounts_[p] = true;
    }
    for (const auto& [key, held] : states_) countedAt_[size_t(held.block->proc - base_)] = 0;
    for (size_t p = 0; p < countedAt_.size(); ++p) {
      if (countedAt_[p] < 0) continue;
      countedAt_[p] = int64_t(counted_.size());
      counted_.emplace_back().proc = base_ + p;
    }
    for (const auto& [key, held] : states_) planOf(held.block->proc).states.push_back(&held);
  }

  // Which edges of a procedure with counts get a counter (the chords of its
  // count graph), weighed by the profile where it saw the procedure run;
  // blocks whose count an induction variable gives need none.
  void placeChords() {
    for (Counted& c : counted_) {
      if (!hasCounts_[size_t(c.proc - base_)]) continue;
      const ir::Procedure& proc = *c.proc->proc;
      c.inductions = analysis::findInductions(proc, liveness(c));
      std::vector<uint32_t> free;
      for (const analysis::Induction& v : c.inductions) free.push_back(v.block);
      c.graph = analysis::countGraph(proc);
      std::vector<double> weights;
      if (profile_) {
        weights = analysis::blockCounts(proc, *profile_);
        if (std::all_of(weights.begin(), weights.end(), [](double w) { return w == 0; })) weights.clear();  // did not run
        else ++summary_.profiledProcs;
      }
      c.plan = analysis::placeCounters(proc, c.graph, weights, free);
      chords_ += c.plan.chords;
      edges_ += c.graph.edges.size();
      summary_.blocks += c.graph.blocks;
      ++summary_.procs;
    }
    summary_.requests = engine_.counts().size();
    summary_.counters = chords_;
  }

  // Which chords and held states live in a register through their loop
  // (CounterPromotion.h), and which of those an induction gives.
  void promoteChords() {
    for (Counted& c : counted_) {
      std::vector<uint32_t> stateBlocks;
      for (const HeldState* h : c.states) stateBlocks.push_back(h->block->block);
      c.promoted = analysis::promoteCounters(*c.proc->proc, c.graph, c.plan, liveness(c), spill_, stateBlocks, c.inductions);
      for (const analysis::PromotedLoop& l : c.promoted)
        for (const analysis::PromotedCounter& k : l.counters) {
          if (k.state) ++summary_.heldStates, summary_.spilledStates += k.spilled;
          else ++summary_.promoted, summary_.spilled += k.spilled, summary_.inductions += k.step != 0;
        }
    }
  }

  // Each graph edge's slot in the hidden array: the chords first (what the
  // run increments), then the rest, then a slot per spilled register.
  void assignSlots() {
    uint64_t nextChord = 0, nextDerived = chords_;
    for (Counted& c : counted_) {
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
    const uint64_t hidden = edges_ + summary_.spilled + summary_.spilledStates;
    static_assert(Engine::kMaxCounters == ATOMX_COUNTS_MAX_SLOTS);
    if (hidden > Engine::kMaxCounters)
      throw Error("Counters::count: the counted procedures need more counters than atomx places (2^28)");
    slots_ = hidden ? engine_.addCounters(hidden) : 0;
  }

  // What runs on a promoted loop's edges: a promoted counter's register is
  // flushed on its loop's exit edges and zeroed on its entry edges, a held
  // state's stored and loaded, exits first where one edge is both (one
  // loop's exit, the next one's entry, in the same register).  On an exit
  // edge of the state's own block, its update (the tool's request, added
  // earlier) comes before the store.  A spilled register's slot follows
  // the edges' (the same for both passes).
  void addLoopEntriesAndExits() {
    for (bool exits : {true, false}) {
      uint64_t spillSlot = edges_;
      for (const Counted& c : counted_)
        for (const analysis::PromotedLoop& l : c.promoted)
          for (const analysis::PromotedCounter& k : l.counters) {
            const uint64_t* spill = k.spilled ? &spillSlot : nullptr;
            for (auto [b, s] : exits ? l.exits : l.entries) {
              const detail::EdgeData* at = c.proc->firstBlock[b].firstEdge + s;
              if (k.step != 0) {
                engine_.addAccumulate(exits ? Acc::Measure : Acc::Mark, k.reg, slots_, c.slot[k.chord], Point::Edge, at,
                                      spill, nullptr, k.variable);
                continue;
              }
              if (!k.state) {
                engine_.addAccumulate(exits ? Acc::Flush : Acc::Zero, k.reg, slots_, c.slot[k.chord], Point::Edge, at,
                                      spill);
                continue;
              }
              const IncrementRequest& update = engine_.increments()[c.states[k.chord]->requests.front()];
              engine_.addAccumulate(exits ? Acc::Store : Acc::Load, k.reg, update.counters, update.index, Point::Edge,
                                    at, spill, &slots_);
            }
            spillSlot += k.spilled;
          }
    }
  }

  // Which registers each promoted loop takes from the inserted code in it,
  // and which predictions update a state held in one.
  void reserveLoopRegisters() {
    for (const Counted& c : counted_)
      for (const analysis::PromotedLoop& l : c.promoted) {
        RegisterReservation r{c.proc->proc, {}, {}};
        for (uint32_t b : l.blocks) r.insns.push_back({c.proc->proc->blocks[b].firstInsn, c.proc->proc->blocks[b].insnCount});
        for (const analysis::PromotedCounter& k : l.counters) {
          r.regs |= x86::RegSet::gpr(k.reg);
          if (k.state)
            for (size_t request : c.states[k.chord]->requests) engine_.holdPrediction(request, k.reg);
        }
        engine_.reserveRegisters(std::move(r));
      }
  }

  // What runs where each chord counts: an increment of its slot, a step of
  // its register where it is promoted, nothing where an induction gives it.
  void addChordIncrements() {
    for (const Counted& c : counted_) {
      const std::map<uint32_t, const analysis::PromotedCounter*> inRegister = promotedChords(c);
      for (uint32_t k = 0; k < c.graph.edges.size(); ++k) {
        if (!c.plan.chord[k]) continue;
        const auto r = inRegister.find(k);
        if (r != inRegister.end() && r->second->step) continue;  // an induction: nothing where it counts
        const analysis::CountEdge& e = c.graph.edges[k];
        const detail::BlockData* b = c.proc->firstBlock + e.block;
        const Point point = e.atBlockStart() ? Point::BlockBefore : Point::Edge;
        const void* where = e.atBlockStart() ? static_cast<const void*>(b) : b->firstEdge + e.succ;
        if (r != inRegister.end())
          engine_.addAccumulate(Acc::Step, r->second->reg, slots_, c.slot[k], point, where);
        else
          engine_.addIncrement(slots_, c.slot[k], point, where);
      }
    }
  }

  // The solve program (<atomx/counts_format.h>): how the run's chords give
  // every other edge's count, and the blocks AtomxCountCost adds up.
  std::vector<AtomxCountsWord> solveProgram() const {
    std::vector<AtomxCountsWord> program{AtomxCountsWord(chords_), AtomxCountsWord(summary_.inductions)};
    for (const Counted& c : counted_)
      for (const analysis::PromotedLoop& l : c.promoted)
        for (const analysis::PromotedCounter& k : l.counters) {
          if (k.step == 0) continue;
          program.push_back(AtomxCountsWord(c.slot[k.chord]));
          program.push_back(k.step);
          program.push_back(AtomxCountsWord(l.exits.size()));
          for (auto [b, s] : l.exits) program.push_back(AtomxCountsWord(c.slot[c.succEdge[b][s]]));
        }
    const size_t stepsAt = program.size();
    program.push_back(0);
    int64_t steps = 0;
    for (const Counted& c : counted_)
      for (const analysis::SolveStep& s : c.plan.steps) {
        program.push_back(AtomxCountsWord(c.slot[s.edge]));
        program.push_back(AtomxCountsWord(s.terms.size()));
        for (auto [k, negated] : s.terms) program.push_back(AtomxCountsWord(ATOMX_COUNTS_TERM(c.slot[k], negated)));
        ++steps;
      }
    program[stepsAt] = AtomxCountsWord(steps);
    program.push_back(AtomxCountsWord(summary_.blocks));
    for (const Counted& c : counted_)
      for (uint32_t b = 0; b < c.graph.blocks; ++b) program.push_back(AtomxCountsWord(c.slot[c.graph.blockEdge(b)]));
    return program;
  }

  // The copy programs (<atomx/counts_format.h>), per array of the tool's:
  // where each asked-for count goes, and which slot holds it.
  std::map<uint32_t, std::vector<AtomxCountsWord>> copyPrograms() {
    std::map<uint32_t, std::vector<AtomxCountsWord>> copies;
    for (const CountRequest& r : engine_.counts()) {
      const Counted& c = planOf(procOf(r));
      uint32_t k = 0;
      if (r.point == Point::BlockBefore) {
        k = c.graph.blockEdge(static_cast<const detail::BlockData*>(r.where)->block);
      } else {
        auto* e = static_cast<const detail::EdgeData*>(r.where);
        k = c.succEdge[e->from->block][size_t(e - e->from->firstEdge)];
      }
      std::vector<AtomxCountsWord>& pairs = copies[r.counters];
      if (pairs.empty()) pairs.push_back(0);
      pairs.push_back(AtomxCountsWord(r.index));
      pairs.push_back(c.plan.known[k] ? AtomxCountsWord(c.slot[k]) : ATOMX_COUNTS_UNKNOWN);
      summary_.unknown += !c.plan.known[k];
      ++pairs[0];
    }
    return copies;
  }

  // The runtime's calls that run the programs at ProgramAfter, ahead of the
  // tool's: solve, then a copy per array.
  void addExitCalls(const std::vector<AtomxCountsWord>& solve,
                    const std::map<uint32_t, std::vector<AtomxCountsWord>>& copies) {
    const uint32_t solver = engine_.declare(ATOMX_COUNTS_SOLVE_PROTOTYPE);
    const uint32_t copier = engine_.declare(ATOMX_COUNTS_COPY_PROTOTYPE);
    engine_.addFirst(solver, Point::ProgramAfter, {Arg(solve), Arg(Arg::Kind::Counters, slots_)});
    for (const auto& [array, pairs] : copies)
      engine_.addFirst(copier, Point::ProgramAfter,
                       {Arg(pairs), Arg(Arg::Kind::Counters, slots_), Arg(Arg::Kind::Counters, array)});
  }

  Counted& planOf(const detail::ProcData* proc) { return counted_[size_t(countedAt_[size_t(proc - base_)])]; }

  // A promoted chord (not a state) -> how it is kept.
  static std::map<uint32_t, const analysis::PromotedCounter*> promotedChords(const Counted& c) {
    std::map<uint32_t, const analysis::PromotedCounter*> inRegister;
    for (const analysis::PromotedLoop& l : c.promoted)
      for (const analysis::PromotedCounter& k : l.counters)
        if (!k.state) inRegister[k.chord] = &k;
    return inRegister;
  }

  // The procedure's register liveness, made the first time a loop asks.
  std::function<const analysis::RegisterLiveness&()> liveness(Counted& c) const {
    return [this, &c]() -> const analysis::RegisterLiveness& {
      if (!c.live) c.live = std::make_unique<analysis::RegisterLiveness>(engine_.program(), *c.proc->proc, engine_.decoder());
      return *c.live;
    };
  }

  Engine& engine_;
  const analysis::BlockProfile* const profile_;
  const bool spill_;
  const detail::ProcData* const base_;  // the first procedure: ProcData's index
  CountPlanSummary summary_;
  std::map<StateKey, HeldState> states_;
  std::vector<int64_t> countedAt_;  // per procedure: its index in counted_, or -1
  std::vector<bool> hasCounts_;     // per procedure: a count was asked in it
  std::vector<Counted> counted_;
  uint64_t chords_ = 0, edges_ = 0;  // over all counted procedures
  uint32_t slots_ = 0;               // the hidden array
};

}  // namespace

CountPlanSummary placeCounts(Engine& engine, const analysis::BlockProfile* profile, bool spill) {
  return CountPlanner(engine, profile, spill).run();
}

}  // namespace atomx::instrument
