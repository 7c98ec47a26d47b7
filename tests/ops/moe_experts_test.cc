// ops::moe_experts on every device against a double-precision reference: the router's softmax
// and top-k (ties to the lower expert), the renormalised weights, each picked expert's gated
// MLP and the shared expert. Where a device has its own kernel (the picks made on the device)
// it runs for up to kMoeDeviceMaxRows rows; more rows take the host's picks on any device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "anvil/backend.h"
#include "anvil/dtype.h"
#include "anvil/error.h"
#include "ops/ops.h"
#include "tensor_compare.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::random_tensor;

struct MoeCase {
  int64_t rows, experts, top_k, hidden, width;
  bool norm_topk, shared, shared_gated, gelu;
  int tied_rows;         // rows whose logits are all equal (the picks are then experts 0..top_k-1)
  float residual_scale;  // 0: no residual add; else the sum times it, added into a residual
};

std::string describe(const MoeCase& c) {
  return std::to_string(c.rows) + " rows, " + std::to_string(c.top_k) + " of " +
         std::to_string(c.experts) + " experts, hidden " + std::to_string(c.hidden) + ", width " +
         std::to_string(c.width) + (c.norm_topk ? ", norm_topk" : "") +
         (c.shared ? (c.shared_gated ? ", gated shared expert" : ", shared expert") : "") +
         (c.gelu ? ", GeGLU" : "") +
         (c.residual_scale != 0.0f ? ", residual add times " + std::to_string(c.residual_scale)
                                   : "");
}

std::vector<float> rounded(const std::vector<float>& v, DType dtype) {
  return Tensor::from_f32(v, {static_cast<int64_t>(v.size())}).to(dtype).to_f32_vector();
}

// Row r of `m` ([rows, cols]) times v.
std::vector<double> times(const std::vector<float>& m, int64_t rows, int64_t cols,
                          const std::vector<double>& v) {
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(m[r * cols + c]) * v[c];
    out[r] = s;
  }
  return out;
}

double gate_activation(double g, bool gelu) {
  if (!gelu) return g / (1.0 + std::exp(-g));
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * g * (1.0 + std::tanh(k * (g + 0.044715 * g * g * g)));
}

// One gated MLP: down(act(gate x) * up x).
std::vector<double> mlp(const std::vector<float>& gate, const std::vector<float>& up,
                        const std::vector<float>& down, int64_t hidden, int64_t width,
                        const std::vector<double>& x, bool gelu) {
  const auto g = times(gate, width, hidden, x), u = times(up, width, hidden, x);
  std::vector<double> a(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) a[i] = gate_activation(g[i], gelu) * u[i];
  return times(down, hidden, width, a);
}

class MoeExperts : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
      GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
    }
    device_ = Device::parse(test::device_name(std::string(device_type_name(GetParam()))));
  }

  // Runs the case in `act` on the device and checks it against the reference.
  void check(const MoeCase& c, DType act) {
    SCOPED_TRACE(describe(c) + " in " + std::string(dtype_name(act)));
    const int64_t n = c.rows, h = c.hidden, w = c.width, e_count = c.experts;
    const float ws = 1.0f / std::sqrt(static_cast<float>(h));
    // Inputs and weights as the device holds them (rounded to act), the reference from those.
    const auto held = [&](const Shape& shape, float scale) {
      return Tensor::from_f32(rounded(random_tensor(shape, rng_, scale).to_f32_vector(), act),
                              shape);
    };
    const Tensor in = held({n, h}, 1.0f);
    std::vector<float> logit_values = held({n, e_count}, 1.5f).to_f32_vector();
    for (int t = 0; t < c.tied_rows && t < n; ++t) {
      std::fill_n(logit_values.begin() + t * e_count, e_count, 0.25f);
    }
    const Tensor logits = Tensor::from_f32(logit_values, {n, e_count});
    ops::MoeTensors m;
    m.router = Tensor::zeros({e_count, h}, act, device_);  // only its row count is read
    m.top_k = c.top_k;
    m.norm_topk = c.norm_topk;
    m.weights_in_act_dtype = true;
    std::vector<std::vector<float>> gates, ups, downs;
    for (int64_t e = 0; e < e_count; ++e) {
      const Tensor g = held({w, h}, ws), u = held({w, h}, ws);
      const Tensor d = held({h, w}, 1.0f / std::sqrt(static_cast<float>(w)));
      gates.push_back(g.to_f32_vector());
      ups.push_back(u.to_f32_vector());
      downs.push_back(d.to_f32_vector());
      m.gate.push_back(g.to(act).to(device_));
      m.up.push_back(u.to(act).to(device_));
      m.down.push_back(d.to(act).to(device_));
    }
    const Tensor shared = held({n, h}, 1.0f), shared_logit = held({n, 1}, 2.0f);
    ops::MoeExpertsArgs a{.in = in.to(act).to(device_),
                          .logits = logits.to(act).to(device_),
                          .moe = &m,
                          .act = c.gelu ? ops::GluActivation::gelu_tanh : ops::GluActivation::silu,
                          .out = Tensor::empty({n, h}, act, device_)};
    if (c.shared) a.shared = shared.to(act).to(device_);
    if (c.shared && c.shared_gated) a.shared_logit = shared_logit.to(act).to(device_);
    const Tensor residual = held({n, h}, 1.0f);
    // Read now: on the CPU in float32 the argument may be this very tensor, updated in place.
    std::vector<float> want_residual = residual.to_f32_vector();
    if (c.residual_scale != 0.0f) {
      a.residual = residual.to(act).to(device_);
      a.residual_scale = c.residual_scale;
    }
    const DType weight = act;
    const bool on_device =
        ops::moe_experts_on_device(device_.type, act, weight, n, e_count, c.top_k, h, w);
    if (on_device) {
      const int64_t picks = n * c.top_k;
      a.rows = Tensor::empty({picks, h}, act, device_);
      a.hidden = Tensor::empty({picks, w}, act, device_);
      a.y = Tensor::empty({picks, h}, act, device_);
      a.plan = Tensor::empty({ops::moe_plan_words(n, e_count, c.top_k)}, DType::i32, device_);
    }
    ops::moe_experts(a);

    const auto x = in.to_f32_vector(), shared_v = shared.to_f32_vector();
    const auto shared_l = shared_logit.to_f32_vector();
    std::vector<float> want(static_cast<size_t>(n * h));
    const double scale = c.residual_scale != 0.0f ? c.residual_scale : 1.0;
    double largest = 1.0;
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> p(static_cast<size_t>(e_count));
      const float* l = logit_values.data() + t * e_count;
      const double top = *std::max_element(l, l + e_count);
      double sum = 0;
      for (int64_t e = 0; e < e_count; ++e) sum += p[e] = std::exp(l[e] - top);
      for (double& v : p) v /= sum;
      std::vector<int64_t> order(static_cast<size_t>(e_count));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return p[i] > p[j]; });
      double picked = 0;
      for (int64_t j = 0; j < c.top_k; ++j) picked += p[order[j]];
      const std::vector<double> xt(x.begin() + t * h, x.begin() + (t + 1) * h);
      std::vector<double> acc(static_cast<size_t>(h), 0.0);
      for (int64_t j = 0; j < c.top_k; ++j) {
        const int64_t e = order[j];
        const double weight_e = c.norm_topk ? p[e] / picked : p[e];
        const auto y = mlp(gates[e], ups[e], downs[e], h, w, xt, c.gelu);
        for (int64_t i = 0; i < h; ++i) acc[i] += weight_e * y[i];
      }
      if (c.shared) {
        const double sw = c.shared_gated ? 1.0 / (1.0 + std::exp(-shared_l[t])) : 1.0;
        for (int64_t i = 0; i < h; ++i) acc[i] += sw * shared_v[t * h + i];
      }
      for (int64_t i = 0; i < h; ++i) {
        want[t * h + i] = static_cast<float>(acc[i] * scale);
        want_residual[t * h + i] += static_cast<float>(acc[i] * scale);
        largest = std::max(largest, std::fabs(acc[i]));
      }
    }
    // float32: the sums' order; bf16 / f16: each stored product and the weights' rounding.
    const double tol = act == DType::f32 ? 2e-5 : (act == DType::bf16 ? 3e-2 : 6e-3);
    EXPECT_LE(test::max_abs_diff(a.out, Tensor::from_f32(want, {n, h})), tol * largest)
        << (on_device ? "picks on the device" : "picks on the host");
    if (c.residual_scale != 0.0f) {
      EXPECT_LE(test::max_abs_diff(a.residual, Tensor::from_f32(want_residual, {n, h})),
                tol * (largest + 4.0))
          << "the residual add";
    }
  }

  Device device_;
  std::mt19937 rng_{4321};
};

const MoeCase kCases[] = {
    // rows, experts, top_k, hidden, width, norm_topk, shared, gated, gelu, tied rows, residual
    {1, 8, 2, 64, 32, true, false, false, false, 0, 0.0f},     // Mixtral's routing
    {1, 60, 4, 64, 48, false, true, true, false, 0, 1.0f},     // Qwen2-MoE: gated shared expert
    {3, 64, 8, 32, 16, false, false, false, false, 1, 1.0f},   // OLMoE, a row of tied logits
    {5, 40, 8, 64, 24, true, true, false, false, 2, 0.22f},    // GraniteMoeShared
    {32, 128, 8, 64, 32, true, false, false, true, 3, 0.22f},  // the most rows the device takes
    {4, 256, 16, 32, 16, true, false, false, false, 0, 0.0f},  // the most experts and picks
    {40, 16, 4, 32, 16, true, true, true, false, 1, 0.5f},     // too many rows: host's picks
    // One token (CUDA's down and combine in one launch): Granite's shared expert and multiplier
    // with GeGLU and tied logits, and the most picks (the kernel's wider variant).
    {1, 40, 8, 64, 24, true, true, false, true, 1, 0.22f},
    {1, 256, 16, 32, 16, false, false, false, false, 0, 1.0f},
    // One token's down rows loaded ahead of the gate/up launch's end: two rounds of chunks a lane
    // in registers (bf16, f16; f32 through L2), then more than two (through L2 for every type).
    {1, 16, 8, 48, 512, true, false, false, false, 0, 1.0f},
    {1, 12, 3, 32, 520, false, true, true, true, 0, 0.22f},
};

TEST_P(MoeExperts, MatchTheReference) {
  const DeviceType d = device_.type;
  std::vector<DType> types = {DType::f32};
  if (d != DeviceType::cpu) types = {DType::f32, DType::bf16, DType::f16};
  for (DType act : types) {
    if (!supports(ops::kLinear, d, act, act) || !supports(ops::kGatherRows, d, act, act) ||
        !supports(ops::kScatterAddRows, d, act, act)) {
      std::cout << "moe_experts in " << dtype_name(act) << " skipped on " << device_.str()
                << ": no expert product kernels\n";
      continue;
    }
    for (const MoeCase& c : kCases) check(c, act);
  }
}

// The front end names what is wrong: too many picks a row, missing expert weights, the scratch
// of another shape.
TEST_P(MoeExperts, BadArgumentsAreNamed) {
  std::mt19937 rng(7);
  const DType act = DType::f32;
  ops::MoeTensors m;
  m.router = Tensor::zeros({4, 16}, act, device_);
  m.top_k = 5;
  for (int e = 0; e < 4; ++e) {
    m.gate.push_back(random_tensor({8, 16}, rng).to(device_));
    m.up.push_back(random_tensor({8, 16}, rng).to(device_));
    m.down.push_back(random_tensor({16, 8}, rng).to(device_));
  }
  ops::MoeExpertsArgs a{.in = random_tensor({2, 16}, rng).to(device_),
                        .logits = random_tensor({2, 4}, rng).to(device_),
                        .moe = &m,
                        .out = Tensor::empty({2, 16}, act, device_)};
  const auto message = [&] {
    try {
      ops::moe_experts(a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message().find("top_k 5 of 4 experts"), std::string::npos) << message();
  m.top_k = 2;
  m.down.pop_back();
  EXPECT_NE(message().find("the router has 4 experts but there are 4 / 4 / 3"), std::string::npos)
      << message();
  m.down.push_back(random_tensor({16, 8}, rng).to(device_));
  a.logits = random_tensor({2, 5}, rng).to(device_);
  EXPECT_NE(message().find("logits"), std::string::npos) << message();
  a.logits = random_tensor({2, 4}, rng).to(device_);
  if (ops::moe_experts_on_device(device_.type, act, act, 2, 4, 2, 16, 8)) {
    a.rows = Tensor::empty({4, 16}, act, device_);
    a.hidden = Tensor::empty({4, 8}, act, device_);
    a.y = Tensor::empty({4, 16}, act, device_);
    a.plan = Tensor::empty({ops::moe_plan_words(2, 4, 2) - 1}, DType::i32, device_);
    EXPECT_NE(message().find("plan"), std::string::npos) << message();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, MoeExperts,
                         ::testing::Values(DeviceType::cpu, DeviceType::cuda, DeviceType::opencl),
                         [](const auto& param_info) {
                           return std::string(device_type_name(param_info.param));
                         });

}  // namespace
}  // namespace anvil
