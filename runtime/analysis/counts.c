/* Exact counts from the fewest counters: the run-time half of
 * atomx::Counters::count (src/instrument/CountPlan.cpp writes the programs
 * these read; src/analysis/CounterPlacement.h says why they are right).
 *
 * `slots` holds one count per edge of every counted procedure's count
 * graph: the chords' (slots 0 .. chords-1), which inline increments kept
 * during the run, then the others', which atomx_counts_solve fills in.
 * The program, as 32-bit numbers (slots are below 2^28):
 *   chords, steps, then each step: slot, terms, then each term: 2 * slot + negated,
 *   blocks, then each block's slot (what AtomxCountCost adds up). */
#include "atomx/analysis.h"

static long costIncrements, costBlocks;

void atomx_counts_solve(const int *program, long *slots) {
  const long chords = *program++;
  long increments = 0, blocks = 0;
  for (long k = 0; k < chords; ++k) increments += slots[k];
  for (long steps = *program++; steps > 0; --steps) {
    const int slot = *program++;
    long value = 0;
    for (long terms = *program++; terms > 0; --terms) {
      const int term = *program++;
      value += (term & 1) ? -slots[term >> 1] : slots[term >> 1];
    }
    slots[slot] = value;
  }
  for (long n = *program++; n > 0; --n) blocks += slots[*program++];
  costIncrements = increments;
  costBlocks = blocks;
}

/* pairs: n, then n (counter, slot) pairs; a counter named twice (counted at
 * two places) gets the sum; slot -1: a count no counter gives, -1. */
void atomx_counts_copy(const int *pairs, const long *slots, long *out) {
  const long n = pairs[0];
  for (long k = 0; k < n; ++k) out[pairs[1 + 2 * k]] = 0;
  for (long k = 0; k < n; ++k) {
    long *o = &out[pairs[1 + 2 * k]];
    const int slot = pairs[2 + 2 * k];
    *o = slot < 0 || *o < 0 ? -1 : *o + slots[slot];
  }
}

void AtomxCountCost(long *increments, long *blocks) {
  if (increments) *increments = costIncrements;
  if (blocks) *blocks = costBlocks;
}
