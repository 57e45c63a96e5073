// runtime/analysis/counts.c, the derivation atomx_counts_solve runs at
// exit, on hand-made programs: a count an induction variable gives (the sum
// of what the variable moved by, modulo 2^64) divided by its step, for
// steps odd, even, negative and counts near the limit, before the other
// counts are derived from it; and its cost (AtomxCountCost) counted on its
// loop's exits, not its iterations.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

extern "C" {
void atomx_counts_solve(const int* program, long* slots);
void AtomxCountCost(long* increments, long* blocks);
}

namespace {

long moved(uint64_t count, int32_t step) { return long(count * uint64_t(int64_t(step))); }

TEST(CountsSolve, InductionsAreDividedByTheirStep) {
  struct Case {
    uint64_t count;
    int32_t step;
  };
  for (const Case c : std::vector<Case>{{5, 1}, {5, -1}, {7, 12}, {7, -24}, {1000003, 8}, {(uint64_t(1) << 60) - 3, 8},
                                        {(uint64_t(1) << 62) + 11, -3}, {0, 40}, {123456789, 2147483647}}) {
    // Slots: 0 the induction's chord, 1 a plain chord; derived: 2 the
    // loop's exit edge (= slot 1), 3 = slot 0 + slot 1.
    const std::vector<int> program{2, 1, 0, c.step, 1, 2,  // chords; an induction: slot, step, its exit
                                   2, 2, 1, 2, 3, 2, 0, 2,  // derived: 2 = +1, 3 = +0 +1
                                   0};                      // no block
    std::vector<long> slots{moved(c.count, c.step), 4, 0, 0};
    atomx_counts_solve(program.data(), slots.data());
    EXPECT_EQ(uint64_t(slots[0]), c.count) << "step " << c.step;
    EXPECT_EQ(uint64_t(slots[3]), c.count + 4) << "step " << c.step;
    long increments = 0, blocks = 0;
    AtomxCountCost(&increments, &blocks);
    EXPECT_EQ(increments, 4 + 4) << "the plain chord's 4 and its exit's 4, not the count";
  }
}

}  // namespace
