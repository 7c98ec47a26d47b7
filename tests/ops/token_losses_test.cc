// ops::token_nll and ops::token_kl on every device this build has (OpenCL through its copy to
// the host) against their double-precision definitions: vocabulary-sized rows and short ones
// whose width is no multiple of the vector width, ignored targets, -inf and huge logits, NaN;
// bad operands refused by name. Devices that are absent skip with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "anvil/error.h"
#include "anvil/perplexity.h"
#include "expect_error.h"
#include "ops/ops.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

constexpr DeviceType kDeviceTypes[] = {DeviceType::cpu, DeviceType::cuda, DeviceType::opencl};

class TokenNll : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
      GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
    }
    device_ = Device::parse(test::device_name(std::string(device_type_name(GetParam()))));
  }
  // The op's losses for rows x cols logits and one target a row.
  std::vector<float> run(const std::vector<float>& logits, int64_t cols,
                         const std::vector<int64_t>& targets) const {
    const auto rows = static_cast<int64_t>(targets.size());
    const Tensor out = Tensor::empty({rows}, DType::f32, device_);
    ops::token_nll(Tensor::from_f32(logits, {rows, cols}).to(device_),
                   Tensor::from_i64(targets, {rows}).to(device_), out);
    return out.to_f32_vector();
  }
  Device device_;
};

TEST_P(TokenNll, IsMinusLogSoftmaxOfTheTarget) {
  std::mt19937_64 gen(11);
  for (int64_t cols : {int64_t{151936}, int64_t{49152}, int64_t{37}, int64_t{3}, int64_t{1}}) {
    const int64_t rows = cols > 1000 ? 5 : 9;
    std::vector<float> x(static_cast<size_t>(rows * cols));
    std::normal_distribution<float> d(0.0f, 4.0f);
    for (float& v : x) v = d(gen);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    std::uniform_int_distribution<int64_t> pick(0, cols - 1);
    for (int64_t& t : targets) t = pick(gen);
    if (cols > 8) {
      x[static_cast<size_t>(cols) + 2] = -std::numeric_limits<float>::infinity();  // masked
      x[static_cast<size_t>(2 * cols) + 5] = 3.0e4f;  // one logit that dominates the sum
      targets[3] = -1;                                // ignored (torch's ignore_index)
    }
    const std::vector<float> got = run(x, cols, targets);
    for (int64_t r = 0; r < rows; ++r) {
      const std::span<const float> row(x.data() + r * cols, static_cast<size_t>(cols));
      const int64_t t = targets[static_cast<size_t>(r)];
      const double want = t < 0 ? 0.0 : token_nll(row, t);
      const double tolerance = 2e-6 * std::max(1.0, std::abs(want)) + 1e-6;
      EXPECT_NEAR(got[static_cast<size_t>(r)], want, tolerance)
          << cols << " columns, row " << r << ", target " << t;
    }
  }
}

TEST_P(TokenNll, NanAnywhereInARowGivesNan) {
  const int64_t cols = 1000;
  std::vector<float> x(static_cast<size_t>(2 * cols), 0.5f);
  x[700] = std::numeric_limits<float>::quiet_NaN();  // row 0, not its target
  const std::vector<float> got = run(x, cols, {3, 3});
  EXPECT_TRUE(std::isnan(got[0])) << got[0];
  EXPECT_NEAR(got[1], std::log(1000.0), 1e-5);
}

TEST_P(TokenNll, RefusesBadOperandsByName) {
  const Tensor logits = Tensor::zeros({2, 5}, DType::f32).to(device_);
  const Tensor targets = Tensor::zeros({2}, DType::i64).to(device_);
  const Tensor out = Tensor::empty({2}, DType::f32, device_);
  expect_error([&] { ops::token_nll(logits, Tensor::zeros({3}, DType::i64).to(device_), out); },
               "token_nll:");
  expect_error([&] { ops::token_nll(logits, Tensor::zeros({2}, DType::i32).to(device_), out); },
               "token_nll:");
  expect_error([&] { ops::token_nll(logits, targets, Tensor::empty({2}, DType::f64, device_)); },
               "token_nll:");
}

// KL(softmax(p) || softmax(q)) in double, and whether the rows' first largest entries agree.
std::pair<double, bool> kl_reference(const float* p, const float* q, int64_t n) {
  const auto lse = [n](const float* x) {
    double m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(x[i]));
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
    return m + std::log(s);
  };
  const double lp = lse(p), lq = lse(q);
  double kl = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = p[i] - lp, prob = std::exp(a);
    if (prob > 0.0) kl += prob * (a - (q[i] - lq));
  }
  return {kl, std::max_element(p, p + n) - p == std::max_element(q, q + n) - q};
}

TEST_P(TokenNll, KlDivergenceAndTopAgreement) {
  std::mt19937_64 gen(5);
  for (int64_t cols : {int64_t{151936}, int64_t{1000}, int64_t{37}, int64_t{1}}) {
    const int64_t rows = cols > 1000 ? 4 : 12;
    std::vector<float> p(static_cast<size_t>(rows * cols)), q(p.size());
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] = d(gen);
      // A model near the reference (a quantized one), except row 1: unrelated.
      q[i] = static_cast<int64_t>(i) / cols == 1 ? d(gen) : p[i] + 0.05f * d(gen);
    }
    if (cols > 8) {
      p[5] = q[5] = -std::numeric_limits<float>::infinity();  // masked in both: adds nothing
      p[static_cast<size_t>(2 * cols) + 3] = 40.0f;           // one sure token in the reference
    }
    const Tensor kl = Tensor::empty({rows}, DType::f32, device_);
    const Tensor same = Tensor::empty({rows}, DType::i64, device_);
    ops::token_kl(Tensor::from_f32(p, {rows, cols}).to(device_),
                  Tensor::from_f32(q, {rows, cols}).to(device_), kl, same);
    const std::vector<float> got = kl.to_f32_vector();
    const std::vector<int64_t> got_same = same.to_i64_vector();
    for (int64_t r = 0; r < rows; ++r) {
      const auto [want, agree] = kl_reference(p.data() + r * cols, q.data() + r * cols, cols);
      EXPECT_NEAR(got[static_cast<size_t>(r)], want, 2e-5 + 2e-5 * want)
          << cols << " columns, row " << r;
      EXPECT_EQ(got_same[static_cast<size_t>(r)], agree ? 1 : 0) << cols << " columns, row " << r;
    }
  }
  // A row against itself: nothing apart, the same top; a NaN anywhere: NaN.
  std::vector<float> x(300, 0.25f);
  x[17] = 2.0f;
  x[150] = -1.0f;
  std::vector<float> y = x;
  y[200] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> both = x;
  both.insert(both.end(), x.begin(), x.end());
  std::vector<float> other = x;
  other.insert(other.end(), y.begin(), y.end());
  const Tensor kl = Tensor::empty({2}, DType::f32, device_);
  const Tensor same = Tensor::empty({2}, DType::i64, device_);
  ops::token_kl(Tensor::from_f32(both, {2, 300}).to(device_),
                Tensor::from_f32(other, {2, 300}).to(device_), kl, same);
  const std::vector<float> got = kl.to_f32_vector();
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(same.to_i64_vector()[0], 1);
  EXPECT_TRUE(std::isnan(got[1])) << got[1];
}

TEST_P(TokenNll, KlRefusesBadOperandsByName) {
  const Tensor a = Tensor::zeros({2, 5}, DType::f32).to(device_);
  const Tensor kl = Tensor::empty({2}, DType::f32, device_);
  const Tensor same = Tensor::empty({2}, DType::i64, device_);
  expect_error(
      [&] {
        ops::token_kl(Tensor::zeros({2, 6}, DType::f32).to(device_), a, kl, same);
      },
      "token_kl: reference");
  expect_error([&] { ops::token_kl(a, a, kl, Tensor::empty({2}, DType::i32, device_)); },
               "token_kl: same_top");
  expect_error([&] { ops::token_kl(a, a, Tensor::empty({3}, DType::f32, device_), same); },
               "token_kl: kl");
}

INSTANTIATE_TEST_SUITE_P(Devices, TokenNll, ::testing::ValuesIn(kDeviceTypes),
                         [](const auto& param_info) {
                           return std::string(device_type_name(param_info.param));
                         });

// The host's kernel refuses a target past the vocabulary (a device's gives NaN: it cannot
// throw, and perplexity() checks every id before it runs).
TEST(TokenNllCpu, RefusesATargetPastTheVocabulary) {
  const Tensor out = Tensor::empty({1}, DType::f32);
  expect_error(
      [&] {
        ops::token_nll(Tensor::zeros({1, 4}, DType::f32), Tensor::from_i64({4}, {1}), out);
      },
      "target 4 of row 0 is outside the 4-token vocabulary");
  expect_error(
      [&] {
        ops::token_nll(Tensor::zeros({1, 0}, DType::f32), Tensor::from_i64({0}, {1}), out);
      },
      "rows are empty");
}

}  // namespace
}  // namespace anvil
