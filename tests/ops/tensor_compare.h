// Helpers shared by the op tests: random inputs, copies, the largest magnitude and the largest
// elementwise difference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "anvil/tensor.h"

namespace anvil::test {

inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_f32(v, shape);
}

inline float max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  EXPECT_EQ(x.size(), y.size());
  float m = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    m = std::max(m, std::fabs(x[i] - y[i]));
  }
  return m;
}

// A copy of t on its device.
inline Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype(), t.device());
  c.copy_from(t);
  return c;
}

inline float max_abs(const Tensor& t) {
  float m = 0;
  for (float v : t.to_f32_vector()) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace anvil::test
