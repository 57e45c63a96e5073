// support/PhaseTimes.h: the report's seconds per phase (rewrite/Report.cpp).
#include "support/PhaseTimes.h"

#include <gtest/gtest.h>

#include <thread>

namespace {

using atomx::PhaseTimes;

TEST(PhaseTimes, InOrderNonNegativeAndWithinTotal) {
  PhaseTimes t;
  EXPECT_EQ(t.total(), 0);
  EXPECT_EQ(t.time("a", [] { return 7; }), 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a gap between phases counts in total only
  t.time("b", [] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
  ASSERT_EQ(t.phases().size(), 2u);
  EXPECT_EQ(t.phases()[0].name, "a");
  EXPECT_EQ(t.phases()[1].name, "b");
  double sum = 0;
  for (const PhaseTimes::Phase& p : t.phases()) {
    EXPECT_GE(p.seconds, 0);
    sum += p.seconds;
  }
  EXPECT_GE(t.seconds("b"), 0.003);
  EXPECT_LE(sum, t.total());
  EXPECT_GE(t.total(), 0.005);
}

TEST(PhaseTimes, ARepeatedPhaseAddsUpAndAThrowingOneIsTimed) {
  PhaseTimes t;
  const auto t0 = PhaseTimes::Clock::now();
  t.add("x", t0, t0 + std::chrono::milliseconds(10));
  t.add("x", t0 + std::chrono::milliseconds(20), t0 + std::chrono::milliseconds(25));
  EXPECT_EQ(t.phases().size(), 1u);
  EXPECT_NEAR(t.seconds("x"), 0.015, 1e-9);
  EXPECT_NEAR(t.total(), 0.025, 1e-9);
  EXPECT_THROW(t.time("y", [] { throw 1; }), int);
  EXPECT_EQ(t.phases().size(), 2u);
  EXPECT_EQ(t.seconds("nothing"), 0);
}

}  // namespace
