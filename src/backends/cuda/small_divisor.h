// Division by a small divisor through a multiplier, for device code that divides by the same
// value many times: the decode kernel shares a chunk's rows out among its warps by a divisor
// known only at run time, and the integer divisions it took had cost a warp ~100 instructions
// per chunk. Plain C++ (host and device), so that its exact range is tested on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ANVIL_HOST_DEVICE __host__ __device__
#else
#define ANVIL_HOST_DEVICE
#endif

namespace anvil::cuda {

/// x / d exactly for 1 <= d <= kMaxDivisor and 0 <= x < kDividendEnd (checked for every pair by
/// SmallDivisor.ExactOverItsRange): one 32 x 32 -> high 32 multiply by ceil(2^32 / d).
struct SmallDivisor {
  static constexpr uint32_t kMaxDivisor = 64;
  static constexpr uint32_t kDividendEnd = 1u << 17;

  uint32_t d, magic;

  ANVIL_HOST_DEVICE constexpr explicit SmallDivisor(uint32_t divisor)
      : d(divisor), magic(divisor > 1 ? 0xffffffffu / divisor + 1 : 0) {}

  // The high half of x * magic: __umulhi on the device (one IMAD.HI), the same value computed
  // in 64 bits on the host.
  ANVIL_HOST_DEVICE constexpr uint32_t divide(uint32_t x) const {
    if (d == 1) return x;
#if defined(__CUDA_ARCH__)
    return __umulhi(x, magic);
#else
    return static_cast<uint32_t>((static_cast<uint64_t>(x) * magic) >> 32);
#endif
  }
};

}  // namespace anvil::cuda
