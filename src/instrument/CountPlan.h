// CountPlan: the increments behind atomx::Counters::count, and the calls
// that turn them into the counts the tool asked for.
//
// For every procedure a count was asked in, the counter placement
// (analysis/CounterPlacement.h) chooses the chords of its count graph; each
// chord becomes an inline increment of one hidden counter array (at a
// block's start, or on an edge) -- or, in a loop that calls nothing, a
// register stepped there and added on the loop's exits, or nothing at all
// where the loop's induction variable gives the count
// (analysis/CounterPromotion.h) -- and at ProgramAfter, ahead of the tool's
// calls, atomx_counts_solve (runtime/analysis/counts.c) derives the count
// of every other edge of those graphs and atomx_counts_copy puts each
// asked-for count into its place in the tool's array.
#pragma once

#include <cstdint>

#include "analysis/BlockProfile.h"
#include "instrument/Engine.h"

namespace atomx::instrument {

struct CountPlanSummary {
  uint64_t requests = 0;  // counts asked for
  uint64_t procs = 0;     // procedures counted
  uint64_t counters = 0;  // increments placed (chords)
  uint64_t blocks = 0;    // blocks of those procedures (a counter per block would place as many)
  uint64_t unknown = 0;   // counts asked for that no counters give (-1 at run time)
  uint64_t profiledProcs = 0;  // counted procedures the profile saw run (their counters follow it)
  uint64_t promoted = 0;  // of the counters, those kept in a register through a loop (CounterPromotion.h),
  uint64_t spilled = 0;   // and of those, the ones whose register is saved around the loop
  uint64_t inductions = 0;  // and of those, the ones an induction variable gives (nothing where they count)
  uint64_t heldStates = 0;     // predictions' states (Counters::predict) kept in a register through a loop,
  uint64_t spilledStates = 0;  // and of those, the ones whose register is saved around the loop
};

// Adds the increments and the ProgramAfter calls to `engine`; nothing
// when the tool asked for no count and `spill` is false.  With `spill`, a
// prediction's state that only one branch's edges update goes in a
// register through a loop around that branch where one is free
// (CounterPromotion.h), and the tool's predictions there update it in
// the register.  With `profile` (an earlier run's block
// counts) the counters of a procedure that ran in it go where it ran least;
// elsewhere, where loops and branches suggest.  `spill`: a loop may borrow a
// register that holds a program value across it (saved in a slot of the
// hidden counters, so only where those are the thread's own or no thread
// shares them: not with CounterMode::Atomic).
CountPlanSummary placeCounts(Engine& engine, const analysis::BlockProfile* profile = nullptr, bool spill = false);

}  // namespace atomx::instrument
