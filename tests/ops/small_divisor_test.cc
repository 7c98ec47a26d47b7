// The CUDA decode kernel divides by a chunk's row share through SmallDivisor's multiplier; its
// exact range is a claim about integers, checked here on the host for every divisor and
// dividend in it (the device computes the same high half with __umulhi).
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/cuda/small_divisor.h"

namespace anvil::cuda {
namespace {

TEST(SmallDivisor, ExactOverItsRange) {
  for (uint32_t d = 1; d <= SmallDivisor::kMaxDivisor; ++d) {
    const SmallDivisor by(d);
    for (uint32_t x = 0; x < SmallDivisor::kDividendEnd; ++x) {
      ASSERT_EQ(by.divide(x), x / d) << x << " / " << d;
    }
  }
}

// The range is not a formality: past it the multiplier's rounding shows (2^32 / 7 rounded up
// overshoots by 4/7 per 2^32, enough to carry x / 7 over an integer for large x).
TEST(SmallDivisor, InexactPastItsRange) {
  const SmallDivisor by(7);
  bool wrong = false;
  for (uint32_t x = 0xfff00000u; x < 0xfff10000u && !wrong; ++x) wrong = by.divide(x) != x / 7;
  EXPECT_TRUE(wrong);
}

}  // namespace
}  // namespace anvil::cuda
