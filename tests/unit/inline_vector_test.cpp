// support/InlineVector.h against std::vector, the obvious implementation:
// the same random pushes, clears, copies and moves on both, compared after
// every step, for inline capacities 1 and 2 and elements of 8 and 16 bytes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ir/Program.h"
#include "support/InlineVector.h"

namespace atomx {
namespace {

struct Wide {
  uint8_t kind = 0;
  uint64_t target = 0;
  bool operator==(const Wide& o) const { return kind == o.kind && target == o.target; }
};

template <class T>
T make(std::mt19937& rng) {
  if constexpr (std::is_same_v<T, Wide>) return {uint8_t(rng()), rng()};
  else return T(rng());
}

template <class T, uint32_t N>
void againstStdVector(unsigned seed) {
  std::mt19937 rng(seed);
  InlineVector<T, N> v;
  std::vector<T> oracle;
  auto same = [&](const InlineVector<T, N>& got, const std::vector<T>& want) {
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.empty(), want.empty());
    ASSERT_GE(got.capacity(), got.size());
    size_t i = 0;
    for (const T& x : got) ASSERT_EQ(x, want[i++]);
    for (i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]);
    if (!want.empty()) {
      ASSERT_EQ(got.front(), want.front());
      ASSERT_EQ(got.back(), want.back());
    }
  };
  for (int step = 0; step < 4000; ++step) {
    switch (rng() % 10) {
      case 0:
        v.clear(), oracle.clear();
        break;
      case 1: {  // copy out and back
        InlineVector<T, N> copy(v);
        same(copy, oracle);
        v = copy;
        break;
      }
      case 2: {  // move out and back; the source is left empty
        InlineVector<T, N> moved(std::move(v));
        EXPECT_TRUE(v.empty());
        for (int k = 0; k < 3; ++k) v.push_back(make<T>(rng));  // over what v held
        same(moved, oracle);
        v = std::move(moved);
        break;
      }
      case 3:  // push an element of its own (aliasing across a growth)
        if (!oracle.empty()) {
          const size_t k = rng() % oracle.size();
          v.push_back(v[k]);
          oracle.push_back(oracle[k]);
          break;
        }
        [[fallthrough]];
      default: {
        const T x = make<T>(rng);
        if (rng() % 2) v.push_back(x);
        else v.emplace_back(x);
        oracle.push_back(x);
      }
    }
    same(v, oracle);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(InlineVector, AgainstStdVector) {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    againstStdVector<uint64_t, 1>(seed);
    againstStdVector<uint64_t, 2>(seed);
    againstStdVector<Wide, 1>(seed);
    againstStdVector<Wide, 2>(seed);
  }
}

// Moving takes the elements whether they are inside or on the heap, and
// the source can be used again.
TEST(InlineVector, MoveTakesInlineAndHeapElements) {
  for (uint32_t n : {0u, 1u, 2u, 3u, 9u}) {
    InlineVector<uint64_t, 2> a;
    for (uint32_t i = 0; i < n; ++i) a.push_back(100 + i);
    InlineVector<uint64_t, 2> b(std::move(a));
    EXPECT_TRUE(a.empty());
    for (uint64_t x : {1, 2, 3}) a.push_back(x);
    InlineVector<uint64_t, 2> c = {7, 7, 7};
    c = std::move(b);
    ASSERT_EQ(c.size(), n);
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(c[i], 100 + i) << "n " << n << ", element " << i;
    EXPECT_EQ(a.size(), 3u);
    EXPECT_EQ(a[2], 3u);
  }
}

TEST(InlineVector, InitializerListAndEquality) {
  const InlineVector<uint32_t, 2> a = {1, 2, 3};
  InlineVector<uint32_t, 2> b;
  for (uint32_t x : {1u, 2u, 3u}) b.push_back(x);
  EXPECT_TRUE(a == b);
  b.push_back(4);
  EXPECT_FALSE(a == b);
}

// The CFG's edge lists take no more room than std::vector's did.
TEST(InlineVector, BlockEdgeListsAreVectorSized) {
  EXPECT_EQ(sizeof(ir::Block{}.succs), sizeof(std::vector<ir::Edge>));
  EXPECT_EQ(sizeof(ir::Block{}.preds), sizeof(std::vector<ir::PredEdge>));
  EXPECT_EQ(sizeof(ir::Block{}.outs), sizeof(std::vector<ir::OutEdge>));
}

}  // namespace
}  // namespace atomx
