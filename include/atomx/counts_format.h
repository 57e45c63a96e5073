/* The counts program: the one definition of what atomx::Counters::count's
 * exit-time derivation reads, shared by its writer (src/instrument/
 * CountPlan.cpp, which places the counters and writes the program) and its
 * reader (runtime/analysis/counts.c, which runs it at ProgramAfter), as
 * trace_format.h is for traces.  analysis/CounterPlacement.h says why the
 * derivation is right.  C and C++.
 *
 * `slots` (the hidden counter array, one long per slot) holds one count
 * per edge of every counted procedure's count graph: the chords' (slots
 * 0 .. chords-1), which inline increments kept during the run, then the
 * others', which the program fills in.  A slot number is below
 * ATOMX_COUNTS_MAX_SLOTS.
 *
 * Both programs are arrays of 32-bit words (AtomxCountsWord), each a list
 * of sections, each section a count n and then n records:
 *
 * The solve program (ATOMX_COUNTS_SOLVE):
 *   chords                       the number of chords
 *   inductions: n, then each     a chord an induction variable gives
 *     slot, step, exits, then each exit edge's slot
 *   steps: n, then each          a derived edge, in the order to compute them
 *     slot, terms, then each term: ATOMX_COUNTS_TERM(slot, negated)
 *   blocks: n, then each         a counted block's slot (what AtomxCountCost
 *     slot                         adds up)
 * An induction's slot (analysis/CounterPromotion.h, Induction) holds the
 * sum of what its variable moved by, its count times `step` modulo 2^64:
 * the count is that divided by the step, exactly (the count times |step|
 * is below 2^64).  It cost an update on each of its loop's exits.
 *
 * The copy program (ATOMX_COUNTS_COPY), one per array of the tool's that
 * is counted into:
 *   pairs: n, then each          a count asked for
 *     counter, slot              the tool's counter, and the slot that holds
 *                                its count, or ATOMX_COUNTS_UNKNOWN
 * A counter named twice (counted at two places) gets the sum; one whose
 * slot is ATOMX_COUNTS_UNKNOWN (a count no counter gives) gets -1. */
#ifndef ATOMX_COUNTS_FORMAT_H
#define ATOMX_COUNTS_FORMAT_H

#include <stdint.h>

typedef int32_t AtomxCountsWord;

/* Slot numbers fit a word with a bit to spare (a term's sign). */
#define ATOMX_COUNTS_MAX_SLOTS (1 << 28)

/* A term of a derived edge's sum: + or - slot's count. */
#define ATOMX_COUNTS_TERM(slot, negated) (2 * (slot) + ((negated) ? 1 : 0))
#define ATOMX_COUNTS_TERM_SLOT(term) ((term) >> 1)
#define ATOMX_COUNTS_TERM_NEGATED(term) ((term) & 1)

/* A copy pair's slot for a count no counter gives. */
#define ATOMX_COUNTS_UNKNOWN (-1)

/* The runtime's routines that run the programs at ProgramAfter, ahead of the
 * tool's calls, as CountPlan declares them to the engine (their names, then
 * the prototypes in the engine's syntax). */
#define ATOMX_COUNTS_SOLVE "atomx_counts_solve"
#define ATOMX_COUNTS_SOLVE_PROTOTYPE ATOMX_COUNTS_SOLVE "(int[], long*)"
#define ATOMX_COUNTS_COPY "atomx_counts_copy"
#define ATOMX_COUNTS_COPY_PROTOTYPE ATOMX_COUNTS_COPY "(int[], long*, long*)"

#ifdef __cplusplus
extern "C" {
#endif
/* Fills in the derived slots; keeps what AtomxCountCost reports. */
void atomx_counts_solve(const AtomxCountsWord *program, long *slots);
/* Puts each asked-for count into its place in the tool's array `out`. */
void atomx_counts_copy(const AtomxCountsWord *pairs, const long *slots, long *out);
#ifdef __cplusplus
}
#endif

#endif
