// Every op on every device this build has, for every weight dtype its kernels are registered
// for, against the double-precision reference. Devices that are absent skip with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "anvil/backend.h"
#include "anvil/error.h"
#include "backends/cpu/cpu_isa.h"
#include "ops/ops.h"
#include "ops/reference.h"

namespace anvil {
namespace {

constexpr DeviceType kDeviceTypes[] = {DeviceType::cpu, DeviceType::cuda, DeviceType::opencl};
constexpr DType kWeightTypes[] = {DType::f32, DType::bf16, DType::f16};

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_f32(v, shape);
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  EXPECT_EQ(x.size(), y.size());
  float m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

class Ops : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    for (const auto& r : report_backends()) {
      if (r.type == GetParam() && !r.available) {
        GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << r.reason;
      }
    }
    device_ = Device{GetParam(), 0};
    act_ = backend_for(device_).activation_dtype(DType::f32);
  }
  Tensor on_device(const Tensor& host, DType dtype) const { return host.to(dtype).to(device_); }
  Tensor empty(const Shape& shape) const { return Tensor::empty(shape, act_, device_); }
  // Activations stored in bf16/f16 on a device lose precision before any kernel runs.
  float tolerance(float f32_tol) const { return act_ == DType::f32 ? f32_tol : 2e-2f; }
  bool has(const char* op, DType weight) const { return supports(op, device_.type, act_, weight); }

  Device device_;
  DType act_ = DType::f32;
  std::mt19937 rng_{1234};
};

TEST_P(Ops, Linear) {
  for (DType w : kWeightTypes) {
    if (!has(ops::kLinear, w)) continue;
    for (auto [n, k, o] : {std::tuple{1, 64, 96}, {5, 160, 33}, {17, 7, 1000}}) {
      const Tensor x = random_tensor({n, k}, rng_);
      const Tensor weight = random_tensor({o, k}, rng_, 0.1f).to(w);
      const Tensor bias = random_tensor({o}, rng_).to(w);
      Tensor out = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), bias.to(device_), out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({x, weight, bias, want});
      EXPECT_LE(max_abs_diff(out, want), tolerance(1e-4f)) << dtype_name(w) << " " << n << "x" << k;
      Tensor no_bias = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), Tensor(), no_bias);
      ops::reference::linear({x, weight, Tensor(), want});
      EXPECT_LE(max_abs_diff(no_bias, want), tolerance(1e-4f));
    }
  }
}

// Random GGUF blocks with sane f16 scales (random bytes elsewhere), `rows` x `k` values.
Tensor random_blocks(DType type, int64_t rows, int64_t k, std::mt19937& rng) {
  Tensor t = Tensor::empty({rows, k}, type);
  auto* bytes = static_cast<uint8_t*>(t.raw());
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
  const size_t block = dtype_nbytes(type, dtype_block_elems(type));
  // The f16 fields: d (and m / dmin for Q4_1 / Q4_K) lead each block; Q6_K's d ends it.
  std::vector<size_t> f16_at = {0};
  if (type == DType::q4_1 || type == DType::q4_k) f16_at = {0, 2};
  if (type == DType::q6_k) f16_at = {208};
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t b = 0; b < t.nbytes(); b += block) {
    for (size_t at : f16_at) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(bytes + b + at, &h, 2);
    }
  }
  return t;
}

// x with each 32-value block rounded to int8 as llama.cpp's Q8 activation format does it
// (d = max|x| / 127, q = round-half-even(x * 127 / max|x|)), back in float32: what the CPU's
// AVX-512 VNNI kernels multiply quantized weights with.
Tensor q8_round_trip(const Tensor& x) {
  std::vector<float> v = x.to_f32_vector();
  for (size_t b = 0; b + 32 <= v.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
    for (size_t i = 0; i < 32; ++i) v[b + i] = std::nearbyint(v[b + i] * id) * d;
  }
  return Tensor::from_f32(v, x.shape());
}

// True when this device's quantized matrix products use int8 activations.
bool int8_activations(DeviceType d) {
  return d == DeviceType::cpu && cpu::isa() == cpu::Isa::avx512;
}

TEST_P(Ops, LinearWithQuantizedWeights) {
  for (DType w : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q4_k, DType::q6_k}) {
    if (!has(ops::kLinear, w)) continue;
    const bool k_type = w == DType::q4_k || w == DType::q6_k;  // 256-value super-blocks
    // Odd shapes: rows not a multiple of the register tiles (8-row groups, 4 activation rows),
    // a single row and a single output.
    using Shape3 = std::tuple<int64_t, int64_t, int64_t>;
    const std::vector<Shape3> shapes =
        k_type ? std::vector<Shape3>{{1, 256, 40}, {3, 512, 33}, {6, 768, 9}, {1, 1536, 1}}
               : std::vector<Shape3>{{1, 64, 40},  {3, 576, 33}, {2, 1536, 17},
                                     {17, 96, 37}, {5, 32, 1},   {1, 160, 7}};
    for (auto [n, k, o] : shapes) {
      const Tensor x = random_tensor({n, k}, rng_);
      const Tensor weight = random_blocks(w, o, k, rng_);
      const Tensor bias = random_tensor({o}, rng_);
      Tensor out = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), bias.to(device_), out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      // Exact dequantization, double sums; for int8 activations, of the activations the
      // kernel actually multiplies (the loss of quantizing them is llama.cpp's, by design).
      const Tensor x_used = int8_activations(GetParam()) ? q8_round_trip(x) : x;
      ops::reference::linear({x_used, weight, bias, want});
      // float32 accumulation in another order: relative to the size of the terms (the largest
      // sum of |w x| over every output).
      const auto wf = weight.to_f32_vector(), xf = x.to_f32_vector();
      float magnitude = 0;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t r = 0; r < o; ++r) {
          float m = 0;
          for (int64_t i = 0; i < k; ++i) m += std::fabs(wf[r * k + i] * xf[j * k + i]);
          magnitude = std::max(magnitude, m);
        }
      }
      EXPECT_LE(max_abs_diff(out, want), 1e-5f * magnitude + 1e-5f)
          << dtype_name(w) << " " << n << "x" << k << "x" << o;
    }
  }
}

TEST_P(Ops, RmsNorm) {
  for (DType w : kWeightTypes) {
    if (!has(ops::kRmsNorm, w)) continue;
    const Tensor x = random_tensor({6, 72}, rng_, 3.0f);
    const Tensor weight = random_tensor({72}, rng_).to(w);
    Tensor out = empty({6, 72});
    ops::rms_norm(on_device(x, act_), weight.to(device_), 1e-6f, out);
    Tensor want = Tensor::empty({6, 72}, DType::f32);
    ops::reference::rms_norm({x, weight, want, 1e-6f});
    EXPECT_LE(max_abs_diff(out, want), tolerance(1e-5f)) << dtype_name(w);
  }
}

TEST_P(Ops, Embedding) {
  for (DType w : kWeightTypes) {
    if (!has(ops::kEmbedding, w)) continue;
    const Tensor table = random_tensor({50, 24}, rng_).to(w);
    const Tensor ids = Tensor::from_i64({3, 0, 49, 3}, {4});
    Tensor out = empty({4, 24});
    ops::embedding(ids.to(device_), table.to(device_), out);
    Tensor want = Tensor::empty({4, 24}, DType::f32);
    ops::reference::embedding({ids, table, want});
    EXPECT_LE(max_abs_diff(out, want), tolerance(0.0f)) << dtype_name(w);
  }
}

TEST_P(Ops, Rope) {
  const Tensor x = random_tensor({5, 3, 32}, rng_);
  Tensor pos = Tensor::empty({5}, DType::i32);
  for (int i = 0; i < 5; ++i) pos.data<int32_t>()[i] = i * 977 + 1;  // far positions stress angles
  std::vector<float> inv(16);
  for (int i = 0; i < 16; ++i)
    inv[i] = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 32.0f);
  const Tensor inv_freq = Tensor::from_f32(inv, {16});
  Tensor want = Tensor::from_f32(x.to_f32_vector(), x.shape());  // rope works in place
  Tensor got = on_device(x, act_);
  ops::rope(got, pos.to(device_), inv_freq.to(device_), 1.0f);
  ops::reference::rope({want, pos, inv_freq, 1.0f});
  EXPECT_LE(max_abs_diff(got, want), tolerance(2e-5f));
}

TEST_P(Ops, SwigluAndAdd) {
  const Tensor g = random_tensor({4, 40}, rng_, 2.0f), u = random_tensor({4, 40}, rng_);
  Tensor out = empty({4, 40});
  ops::swiglu(on_device(g, act_), on_device(u, act_), out);
  Tensor want = Tensor::empty({4, 40}, DType::f32);
  ops::reference::swiglu({g, u, want});
  EXPECT_LE(max_abs_diff(out, want), tolerance(1e-5f));
  ops::add(on_device(g, act_), on_device(u, act_), out);
  ops::reference::add({g, u, want});
  EXPECT_LE(max_abs_diff(out, want), tolerance(1e-6f));
}

TEST_P(Ops, StoreKv) {
  const Tensor src = random_tensor({2, 3, 2, 8}, rng_);
  Tensor cache = Tensor::zeros({2, 2, 10, 8}, act_, device_);
  ops::store_kv(on_device(src, act_), cache, 4);
  Tensor want = Tensor::zeros({2, 2, 10, 8}, DType::f32);
  ops::reference::store_kv({src, want, 4});
  EXPECT_LE(max_abs_diff(cache, want), tolerance(0.0f));
  EXPECT_THROW(ops::store_kv(on_device(src, act_), cache, 8), Error);
}

TEST_P(Ops, AttentionBothImplementationsGqaMaskedCausal) {
  // Small cases, then ones that cross the CPU kernels' blocks: 16-key blocks, 16-query tiles,
  // a head dimension that is not a multiple of the vector width, 7 heads per KV head.
  struct Case {
    int64_t batch, seq, past, heads, kv_heads, dim;
  };
  for (const Case c :
       {Case{2, 5, 0, 4, 2, 16}, Case{2, 3, 4, 4, 2, 16}, Case{3, 1, 9, 4, 2, 16},
        Case{2, 37, 0, 14, 2, 24}, Case{1, 1, 50, 14, 2, 64}, Case{2, 20, 13, 3, 1, 72}}) {
    const int64_t heads = c.heads, kv_heads = c.kv_heads, dim = c.dim;
    const int64_t batch = c.batch, seq = c.seq, past = c.past;
    const int64_t cap = past + seq + 3, total = past + seq;
    const Tensor q = random_tensor({batch, seq, heads, dim}, rng_);
    const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_);
    const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
    Tensor mask = Tensor::empty({batch, total}, DType::i32);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < total; ++t) {
        mask.data<int32_t>()[b * total + t] = t >= b ? 1 : 0;  // row b has b padded keys
      }
    }
    Tensor want = Tensor::empty({batch, seq, heads, dim}, DType::f32);
    ops::reference::attention({q, k, v, mask, want, past, 0.25f, ops::AttentionImpl::eager});
    for (auto impl : {ops::AttentionImpl::eager, ops::AttentionImpl::sdpa}) {
      Tensor out = empty({batch, seq, heads, dim});
      ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_),
                      out, past, 0.25f, impl});
      EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f))
          << "impl " << static_cast<int>(impl) << " past " << past << " seq " << seq << " dim "
          << dim;
    }
  }
}

TEST_P(Ops, FrontEndsRejectBadShapes) {
  Tensor x = empty({2, 8}), w = on_device(random_tensor({4, 9}, rng_), act_), out = empty({2, 4});
  EXPECT_THROW(ops::linear(x, w, Tensor(), out), Error);
  EXPECT_THROW(ops::rms_norm(x, on_device(random_tensor({7}, rng_), act_), 1e-6f, x), Error);
  try {
    ops::linear(x, w, Tensor(), out);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear:"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Ops, ::testing::ValuesIn(kDeviceTypes),
                         [](const auto& param_info) {
                           return std::string(device_type_name(param_info.param));
                         });

TEST(KernelRegistry, MissingKernelIsAClearError) {
  EXPECT_FALSE(supports(ops::kRmsNorm, DeviceType::cpu, DType::i8, DType::i8));
  Tensor x = Tensor::zeros({2, 4}, DType::f32);
  Tensor w = Tensor::zeros({4}, DType::f64);
  try {
    ops::rms_norm(x, w, 1e-6f, x);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rms_norm is not implemented for f32 activations with f64 weights on cpu");
  }
}

}  // namespace
}  // namespace anvil
