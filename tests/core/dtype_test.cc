// Scalar conversions: exact where the format allows, round-to-nearest-even elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "anvil/dtype.h"

namespace anvil {
namespace {

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3*2^-8 is halfway too: ties to even rounds up.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(f32_to_bf16(-2.5f), 0xc020);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(INFINITY)), INFINITY);
}

TEST(DType, F16RoundTrip) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);             // overflow to inf
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);  // halfway: ties to even
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    EXPECT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(DType, F16SpecialValuesKeepTheirBits) {
  EXPECT_EQ(f16_to_f32(0x7c00), INFINITY);
  EXPECT_EQ(f16_to_f32(0xfc00), -INFINITY);
  const float nan = f16_to_f32(0x7e01);
  uint32_t bits;
  std::memcpy(&bits, &nan, sizeof bits);
  EXPECT_EQ(bits, 0x7fc02000u);  // the payload survives, as in a hardware conversion
}

TEST(DType, Float8) {
  EXPECT_EQ(f8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0x7e), 448.0f);  // largest e4m3fn value
  EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0x7f)));
  EXPECT_EQ(f8_e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(f8_e5m2_to_f32(0x3c), 1.0f);
  EXPECT_EQ(f8_e5m2_to_f32(0x7b), 57344.0f);
}

TEST(DType, Names) {
  EXPECT_EQ(parse_compute_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_compute_dtype("f32"), DType::f32);
  EXPECT_EQ(parse_compute_dtype("int8"), std::nullopt);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  for (DType t :
       {DType::f32, DType::bf16, DType::boolean, DType::q8_0, DType::q4_k, DType::iq4_xs}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  }
  EXPECT_EQ(dtype_from_name("q4_k_m"), std::nullopt);  // a GGUF file type, not an element type
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
}

}  // namespace
}  // namespace anvil
