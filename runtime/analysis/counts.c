/* Exact counts from the fewest counters: the run-time half of
 * atomx::Counters::count (src/instrument/CountPlan.cpp writes the programs
 * these read; src/analysis/CounterPlacement.h says why they are right).
 *
 * `slots` holds one count per edge of every counted procedure's count
 * graph: the chords' (slots 0 .. chords-1), which inline increments kept
 * during the run, then the others', which atomx_counts_solve fills in.
 * The program, as 32-bit numbers (slots are below 2^28):
 *   chords,
 *   inductions, then each: slot, step, exits, then each exit edge's slot,
 *   steps, then each step: slot, terms, then each term: 2 * slot + negated,
 *   blocks, then each block's slot (what AtomxCountCost adds up).
 * An induction's slot (analysis/CounterPromotion.h, Induction) holds the sum
 * of what its variable moved by, its count times `step` modulo 2^64: the
 * count is that divided by the step, exactly (the count times |step| is
 * below 2^64).  It cost an update on each of its loop's exits. */
#include "atomx/analysis.h"

static long costIncrements, costBlocks;

/* n / step where n is a multiple of step modulo 2^64. */
static unsigned long divideExactly(unsigned long n, long step) {
  unsigned long s = (unsigned long)step;
  if (step < 0) n = -n, s = -s;
  const int k = __builtin_ctzl(s);
  const unsigned long odd = s >> k;
  unsigned long inverse = odd; /* odd * inverse == 1 modulo 2^64: Newton, 3 -> 6 -> ... -> 96 bits */
  for (int i = 0; i < 5; ++i) inverse *= 2 - odd * inverse;
  return (n >> k) * inverse & (k ? (~0UL >> k) : ~0UL);
}

void atomx_counts_solve(const int *program, long *slots) {
  const long chords = *program++;
  long increments = 0, blocks = 0;
  const int *inductions = program;
  for (long n = *program++; n > 0; --n) {
    const int slot = *program++, step = *program++;
    slots[slot] = (long)divideExactly((unsigned long)slots[slot], step);
    program += 1 + *program;
  }
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
  for (long n = *inductions++; n > 0; --n) {  /* not counted where they run: added up on the exits */
    increments -= slots[*inductions];
    inductions += 2;
    for (long exits = *inductions++; exits > 0; --exits) increments += slots[*inductions++];
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
