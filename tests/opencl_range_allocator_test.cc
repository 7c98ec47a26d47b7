// The sub-allocator behind the OpenCL backend's memory pools.
#include "backends/opencl/range_allocator.h"

#include <gtest/gtest.h>

namespace anvil::opencl {
namespace {

constexpr size_t kAlign = RangeAllocator::kAlign;

TEST(RangeAllocator, HandsOutAlignedDisjointRanges) {
  RangeAllocator r(64 * kAlign);
  const auto a = r.allocate(1), b = r.allocate(kAlign + 1), c = r.allocate(0);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, kAlign);      // a took one aligned unit
  EXPECT_EQ(*c, 3 * kAlign);  // b took two; an empty request takes one
  EXPECT_EQ(*b % kAlign, 0u);
  EXPECT_FALSE(r.empty());
}

TEST(RangeAllocator, RefusesWhatDoesNotFit) {
  RangeAllocator r(4 * kAlign);
  EXPECT_FALSE(r.allocate(4 * kAlign + 1));
  const auto all = r.allocate(4 * kAlign);
  ASSERT_TRUE(all);
  EXPECT_FALSE(r.allocate(1));
  r.release(*all);
  EXPECT_TRUE(r.empty());
  EXPECT_TRUE(r.allocate(4 * kAlign));
}

TEST(RangeAllocator, CoalescesFreedNeighbours) {
  RangeAllocator r(3 * kAlign);
  const auto a = r.allocate(kAlign), b = r.allocate(kAlign), c = r.allocate(kAlign);
  ASSERT_TRUE(a && b && c);
  r.release(*a);
  r.release(*c);
  EXPECT_FALSE(r.allocate(2 * kAlign));  // two free units, not adjacent
  r.release(*b);                         // joins both neighbours
  const auto whole = r.allocate(3 * kAlign);
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole, 0u);
}

TEST(RangeAllocator, ReusesTheFirstFreeRangeThatFits) {
  RangeAllocator r(8 * kAlign);
  const auto a = r.allocate(2 * kAlign), b = r.allocate(kAlign), c = r.allocate(2 * kAlign);
  ASSERT_TRUE(a && b && c);
  r.release(*a);
  const auto d = r.allocate(kAlign);  // first fit: a's old range
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, *a);
  const auto e = r.allocate(2 * kAlign);  // a's remainder is one unit: after c
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, *c + 2 * kAlign);
}

TEST(RangeAllocator, IgnoresUnknownAndDoubleReleases) {
  RangeAllocator r(4 * kAlign);
  const auto a = r.allocate(kAlign);
  ASSERT_TRUE(a);
  r.release(12345);
  r.release(*a);
  r.release(*a);
  EXPECT_TRUE(r.empty());
  const auto whole = r.allocate(4 * kAlign);
  ASSERT_TRUE(whole);
}

TEST(RangeAllocator, RefusesSizesThatOverflow) {
  RangeAllocator r(4 * kAlign);
  EXPECT_FALSE(r.allocate(~size_t{0}));
}

}  // namespace
}  // namespace anvil::opencl
