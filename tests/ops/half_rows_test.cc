// The F16C row conversion that the CPU's KV-cache writes take must round exactly as the
// portable f32_to_f16 does, so that caches (and the team kernel against the composed ops) do
// not depend on the ISA level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "anvil/dtype.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/half_rows_f16c.h"

namespace anvil {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(HalfRows, F16cRoundsAsThePortableConversion) {
  if (cpu::isa() < cpu::Isa::avx2) GTEST_SKIP() << "this CPU has no F16C (below the avx2 level)";
  std::vector<float> values = {0.0f,     -0.0f, 1.0f,     -1.0f,    65504.0f, 65519.0f, 65520.0f,
                               1e6f,     -1e6f, 6.1e-5f,  5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-10f,
                               -3.0e-6f, 0.1f,  1.0f / 3, 2049.0f,  2051.0f,  -2050.0f, 1.0009766f};
  values.push_back(std::numeric_limits<float>::infinity());
  values.push_back(-std::numeric_limits<float>::infinity());
  values.push_back(std::numeric_limits<float>::denorm_min());
  // Every mantissa with its low 8 bits zero, at exponents giving subnormal halves (0x33, 0x38),
  // normal ones (0x3f) and the top of the range (0x46): among them every exact tie of the 13
  // bits the conversion drops (bit 12 set, bits 0-11 clear) and its neighbours 256 units away.
  for (uint32_t e : {0x33u, 0x38u, 0x3fu, 0x46u}) {
    for (uint32_t m = 0; m < (1u << 15); ++m) values.push_back(from_bits(e << 23 | m << 8));
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int i = 0; i < 100000; ++i) values.push_back(normal(rng) * std::exp(normal(rng)));
  // Lengths with and without a tail after the 8-value vectors, from unaligned starts too.
  for (size_t at : {size_t{0}, size_t{3}}) {
    for (size_t n : {values.size() - at, size_t{1}, size_t{7}, size_t{9}}) {
      std::vector<uint16_t> got(n);
      cpu::f32_to_f16_row_f16c(values.data() + at, static_cast<int64_t>(n), got.data());
      for (size_t i = 0; i < n; ++i) {
        const float x = values[at + i];
        uint32_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        ASSERT_EQ(got[i], f32_to_f16(x)) << "value " << x << " (bits 0x" << std::hex << bits << ")";
      }
    }
  }
}

}  // namespace
}  // namespace anvil
