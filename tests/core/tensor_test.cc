// Tensor views and copies.
#include <gtest/gtest.h>

#include "anvil/error.h"
#include "anvil/tensor.h"

namespace anvil {
namespace {

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_f32({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_TRUE(t.is_contiguous());
  Tensor col = t.narrow(1, 1, 2);
  EXPECT_EQ(col.shape(), (Shape{2, 2}));
  EXPECT_FALSE(col.is_contiguous());
  EXPECT_EQ(col.contiguous().to_f32_vector(), (std::vector<float>{1, 2, 4, 5}));
  Tensor tr = t.transpose(0, 1);
  EXPECT_EQ(tr.shape(), (Shape{3, 2}));
  EXPECT_EQ(tr.to_f32_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.select(0, 1).to_f32_vector(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(t.view({3, -1}).shape(), (Shape{3, 2}));
  t.data<float>()[0] = 9;
  EXPECT_EQ(t.view({6}).to_f32_vector()[0], 9);
}

TEST(Tensor, ConvertsDtypes) {
  Tensor t = Tensor::from_f32({1.5f, -2.25f, 3.0f}, {3});
  EXPECT_EQ(t.to(DType::bf16).to(DType::f32).to_f32_vector(), t.to_f32_vector());
  EXPECT_EQ(t.to(DType::f16).to_f32_vector(), t.to_f32_vector());
}

TEST(Tensor, IntegerConversionsAreExact) {
  const int64_t big = (int64_t{1} << 40) + 1;  // not representable in float32
  const Tensor t = Tensor::from_i64({big, -3, 7}, {3});
  EXPECT_EQ(t.transpose(0, 0).to(DType::i32).to(DType::i64).to_i64_vector()[1], -3);
  Tensor wide = Tensor::empty({3}, DType::i64);
  wide.copy_from(t.view({3, 1}).transpose(0, 1).view({3}));
  EXPECT_EQ(wide.to_i64_vector()[0], big);
  Tensor as_i32 = t.narrow(0, 1, 2).to(DType::i32);
  EXPECT_EQ(as_i32.to_i64_vector(), (std::vector<int64_t>{-3, 7}));
}

TEST(Tensor, RejectsBadViews) {
  Tensor t = Tensor::from_f32({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_THROW(t.view({4, 2}), Error);
  EXPECT_THROW(t.narrow(1, 2, 2), Error);
  EXPECT_THROW(t.transpose(0, 1).view({6}), Error);
  EXPECT_THROW(t.size(2), Error);
}

}  // namespace
}  // namespace anvil
