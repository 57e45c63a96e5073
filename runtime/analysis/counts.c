/* Exact counts from the fewest counters: the run-time half of
 * atomx::Counters::count.  It runs the programs src/instrument/CountPlan.cpp
 * writes, whose format <atomx/counts_format.h> defines. */
#include "atomx/counts_format.h"
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

void atomx_counts_solve(const AtomxCountsWord *program, long *slots) {
  const long chords = *program++;
  long increments = 0, blocks = 0;
  const AtomxCountsWord *inductions = program;
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
      value += ATOMX_COUNTS_TERM_NEGATED(term) ? -slots[ATOMX_COUNTS_TERM_SLOT(term)] : slots[ATOMX_COUNTS_TERM_SLOT(term)];
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

void atomx_counts_copy(const AtomxCountsWord *pairs, const long *slots, long *out) {
  const long n = pairs[0];
  for (long k = 0; k < n; ++k) out[pairs[1 + 2 * k]] = 0;
  for (long k = 0; k < n; ++k) {
    long *o = &out[pairs[1 + 2 * k]];
    const int slot = pairs[2 + 2 * k];
    *o = slot < 0 /* ATOMX_COUNTS_UNKNOWN */ || *o < 0 ? -1 : *o + slots[slot];
  }
}

void AtomxCountCost(long *increments, long *blocks) {
  if (increments) *increments = costIncrements;
  if (blocks) *blocks = costBlocks;
}
