// CounterPromotion: counters kept in a register through a loop, where that
// is exact -- the one place that decides it (instrument/CountPlan asks).
//
// A counter inside a short loop is a memory increment on every iteration,
// and each waits for the previous one's store to reach it (store
// forwarding: several cycles), which can be slower than the loop itself.
// LLVM's PGO instrumentation promotes such counters to registers; so does
// atomx, for a counter (a chord of the placement, CounterPlacement.h) on
// a block or an edge of a natural loop that
//   - calls nothing and is left only by edges of the procedure: no block of
//     it ends in a call, a return, a tail call, an indirect jump or a stop,
//     and no instruction in it is a system call (a process that ends, or a
//     thread that exits, inside the loop would lose what the register holds);
//   - is entered only through its header (dead code that falls into it
//     aside), by edges of the procedure: no block of it is the procedure's
//     entry, a landing pad, taken by address or entered from another
//     procedure, and no edge into or out of it is a jump-table edge (those
//     sit at the target, outside the loop);
//   - has a general register other than %rsp and %rax (which an increment
//     keeping the flags needs) that no instruction of the loop reads or
//     writes.
// Then the counter's register is zeroed on every entry edge, stepped at
// the counter's place, and added to the counter on every exit edge; the
// count at the end of the run is the same.  Loops are taken inner ones
// first: a counter goes to the innermost such loop around it that has a
// register left, and an outer loop's registers are none of those of the
// loops inside it (which zero and flush theirs on every pass of the outer
// loop).  A register that is dead where
// the loop is entered and left is taken as it is; one that holds a value
// across the loop (`spilled`, only where the caller allows it) is saved in
// a memory slot on entry and restored on exit.  What it gives up: a signal
// handler that leaves the loop without returning (siglongjmp) loses that
// entry's iterations, as it loses the rest of a block it interrupts; and
// while the loop runs, a spilled register holds the count, not the
// program's value, for anything that reads another thread's or an
// interrupted context's registers (a signal handler's ucontext, a
// debugger, an analysis routine asking for that register in the loop).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "analysis/CounterPlacement.h"
#include "analysis/RegisterLiveness.h"
#include "ir/Program.h"

namespace atomx::analysis {

struct PromotedCounter {
  uint32_t chord = 0;    // a count-graph edge; with `state`, which of promoteCounters' `states`
  unsigned reg = 0;      // the register's hardware number
  bool spilled = false;  // the register holds a value across the loop: saved on entry, restored on exit
  bool state = false;    // a branch's state (below), not a chord
  // A block's own count that an induction variable gives (below): the
  // register holds that variable's value at the loop's entry, and nothing
  // is done where the block runs.  step 0: an ordinary counter.
  int32_t step = 0;
  unsigned variable = 0;  // the induction variable's register
};

// A loop's induction variable: general register `reg` changes inside the
// loop only when block `block` runs, by the constant `step` (one add, sub,
// inc, dec or lea on the whole 64-bit register: x86::Semantics stepReg).
// So the block ran (value when the loop is left - value when it was
// entered) / step times in that pass through the loop, whatever the loop
// computes and however it leaves: ease's trip count, taken where it
// ends instead of where it starts (a pass cut short by a signal handler
// that leaves the loop loses that pass, as a promoted counter does, and
// nothing is added that did not run).  Exact while a run of the block
// stays below 2^64 / |step| in total.
struct Induction {
  uint32_t header = 0;  // the loop's
  uint32_t block = 0;
  unsigned reg = 0;
  int32_t step = 0;
};

struct PromotedLoop {
  std::vector<uint32_t> blocks;                        // the loop's, ascending
  std::vector<std::pair<uint32_t, uint32_t>> entries;  // (block, succ): edges from outside into the header
  std::vector<std::pair<uint32_t, uint32_t>> exits;    // (block, succ): edges from the loop to outside it
  std::vector<PromotedCounter> counters;
};

// At most one induction variable per loop of `proc` that may hold a
// counter (the conditions above but the register), each measuring a
// different block: one not inside an inner loop, the header where it can.
// `live` as promoteCounters' (asked only where a loop may hold one).
std::vector<Induction> findInductions(const ir::Procedure& proc,
                                      const std::function<const RegisterLiveness&()>& live);

// The loops of `proc` whose chords (plan.chord) go in registers, and
// which: as many of each loop's chords as it has registers (dead ones
// first; `spill`: then live ones it does not touch).  `live` gives the
// procedure's register liveness, asked only when a loop holds a chord.
//
// `states` (block ids, one per state) are branches' states: a value that the
// edges out of the block update, as a branch predictor's 2-bit counter
// (atomx::Counters::predict) is, a load, a few instructions and a store
// that the next update waits on.  Such a state goes in a register through
// the innermost eligible loop around its block on the same terms as a
// chord, ahead of the chords: loaded on the loop's entry edges, stored on
// its exit edges (after the update on an exit edge of its own block), and
// what the run computes is the same.
//
// `inductions` (findInductions): a chord that is the own count of an
// induction's block is held first, by the induction (PromotedCounter step):
// its register takes the variable's value on the entry edges, and on the
// exit edges what the variable moved by goes into the counter.  A procedure without a count passes
// an empty graph and plan.
std::vector<PromotedLoop> promoteCounters(const ir::Procedure& proc, const CountGraph& graph, const CounterPlan& plan,
                                          const std::function<const RegisterLiveness&()>& live, bool spill,
                                          const std::vector<uint32_t>& states = {},
                                          const std::vector<Induction>& inductions = {});

// The loops of `proc` through which a register holds the thread's trace
// cursor instead of %fs:ATOMX_TRACE_CURSOR_OFFSET (docs/trace.md, "What the
// program writes"): the outermost loops that may hold a counter (the
// conditions above but the register) and have a block of `wanted` (one
// that stores trace bytes), where no block of the loop, none an entry edge
// comes from and none an exit edge goes to is `refused` (inserted calls or
// counters there: a signal inside a call would see the cursor stale), each
// with the register (counters[0].reg and .spilled; nothing else of
// counters[0] is meant) touched by no instruction of it, never %r12
// (runtime/trace/stores.h): one dead where the loop is entered and left,
// else one that holds a value across it (`spilled`: the caller saves it
// around the loop).  A loop without one is skipped for the loops inside
// it.
std::vector<PromotedLoop> promoteCursor(const ir::Procedure& proc,
                                        const std::function<const RegisterLiveness&()>& live,
                                        const std::vector<bool>& wanted, const std::vector<bool>& refused);

}  // namespace atomx::analysis
