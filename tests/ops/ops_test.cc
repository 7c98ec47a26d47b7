// Every op on every device this build has, for every weight dtype its kernels are registered
// for, against the double-precision reference. Devices that are absent skip with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "anvil/backend.h"
#include "anvil/dtype.h"
#include "anvil/error.h"
#include "backends/cpu/cpu_isa.h"
#include "descending_order.h"
#include "generate/logits_processor.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "quant_blocks.h"
#include "tensor_compare.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::max_abs_diff;
using test::q8_round_trip;
using test::random_blocks;
using test::random_tensor;

constexpr DeviceType kDeviceTypes[] = {DeviceType::cpu, DeviceType::cuda, DeviceType::opencl};
constexpr DType kWeightTypes[] = {DType::f32, DType::bf16, DType::f16};

// RoPE's default inverse frequencies (base 10000) for heads of `dim` values.
Tensor rope_inverse_frequencies(int64_t dim) {
  std::vector<float> freq(static_cast<size_t>(dim / 2));
  for (size_t i = 0; i < freq.size(); ++i)
    freq[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(dim));
  return Tensor::from_f32(freq, {dim / 2});
}

// A decode step's key mask [rows, width]: keys past `past` hidden, and row 1's keys where
// `hidden_in_row1` says so (a left-padded row).
template <class F>
Tensor decode_mask(int64_t rows, int64_t width, int64_t past, F hidden_in_row1) {
  Tensor mask = Tensor::empty({rows, width}, DType::i32);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < width; ++t) {
      mask.data<int32_t>()[r * width + t] = (r == 1 && hidden_in_row1(t)) || t > past ? 0 : 1;
    }
  }
  return mask;
}

class Ops : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
      GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
    }
    device_ = Device::parse(test::device_name(std::string(device_type_name(GetParam()))));
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

// True when this device multiplies bf16 weights by `rows` bf16-rounded activation rows (the
// CPU's AMX tiles and pair products: cpu_isa.h, bf16_rows_rounded); the reference then takes the
// rounded activations, so the test still checks every product and sum.
bool bf16_activations(DeviceType d, DType weight, int64_t rows) {
  return d == DeviceType::cpu && weight == DType::bf16 && cpu::bf16_rows_rounded(rows);
}

TEST_P(Ops, Linear) {
  for (DType w : kWeightTypes) {
    if (!has(ops::kLinear, w)) continue;
    // Decode shapes (up to four rows) with k not a multiple of 4 and odd o, long rows (which
    // a GPU kernel may split across teams, with a tail), then larger ones; one row against
    // many outputs, an odd count (a head: the GPU takes two rows per warp there); two rows (the
    // CPU's two-row tiles) against a partial tile of outputs; batches of 5-15 (the CPU's 2 x 8
    // tiles, then a 4 x 4 or 4 x 2 tile or a second 2 x 8 for the rows left).
    for (auto [n, k, o] : {std::tuple{1, 64, 96},
                           {1, 96, 32771},
                           {2, 37, 23},
                           {3, 7, 10},
                           {4, 70, 9},
                           {1, 4864, 37},
                           {3, 2050, 9},
                           {5, 160, 33},
                           {8, 48, 13},
                           {10, 17, 6},
                           {11, 33, 10},
                           {13, 100, 7},
                           {15, 70, 5},
                           {17, 7, 1000}}) {
      const Tensor x = random_tensor({n, k}, rng_);
      const Tensor weight = random_tensor({o, k}, rng_, 0.1f).to(w);
      const Tensor bias = random_tensor({o}, rng_).to(w);
      const Tensor x_ref =
          bf16_activations(device_.type, w, n) ? x.to(DType::bf16).to(DType::f32) : x;
      Tensor out = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), bias.to(device_), out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({x_ref, weight, bias, want});
      EXPECT_LE(max_abs_diff(out, want), tolerance(1e-4f)) << dtype_name(w) << " " << n << "x" << k;
      Tensor no_bias = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), Tensor(), no_bias);
      ops::reference::linear({x_ref, weight, Tensor(), want});
      EXPECT_LE(max_abs_diff(no_bias, want), tolerance(1e-4f));
    }
  }
}

// True when this device's products with `weight` blocks use int8 activations (the CPU's int8
// kernels).
bool int8_activations(DeviceType d, DType weight = DType::q8_0) {
  return d == DeviceType::cpu && test::cpu_int8_activations(weight);
}

TEST_P(Ops, LinearWithQuantizedWeights) {
  for (DType w :
       {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q2_k, DType::q3_k,
        DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_nl, DType::iq4_xs}) {
    if (!has(ops::kLinear, w)) continue;
    const bool k_type = dtype_block_elems(w) == 256;  // super-blocks
    // Odd shapes: rows not a multiple of the register tiles (8-row groups, 4 or 6 activation
    // rows, their leftovers in tiles of 4, 2 and 1), a single row and a single output; one row
    // against 38 groups, the last partial, so each thread's decode streams (four runs side by
    // side) have groups left over.
    using Shape3 = std::tuple<int64_t, int64_t, int64_t>;
    const std::vector<Shape3> shapes =
        k_type ? std::vector<Shape3>{{1, 256, 40}, {3, 512, 33},  {6, 768, 9},
                                     {1, 1536, 1}, {11, 512, 24}, {1, 256, 301}}
               : std::vector<Shape3>{{1, 64, 40}, {3, 576, 33}, {2, 1536, 17}, {17, 96, 37},
                                     {5, 32, 1},  {1, 160, 7},  {1, 96, 301}};
    for (auto [n, k, o] : shapes) {
      const Tensor x = random_tensor({n, k}, rng_);
      const Tensor weight = random_blocks(w, o, k, rng_);
      const Tensor bias = random_tensor({o}, rng_);
      Tensor out = empty({n, o});
      ops::linear(on_device(x, act_), weight.to(device_), bias.to(device_), out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      // Exact dequantization, double sums; on the CPU, of the inputs the kernel actually
      // multiplies (int8 activations: the loss of quantizing them is llama.cpp's, by design;
      // bf16 inputs on AMX).
      const test::ProductInputs used = GetParam() == DeviceType::cpu
                                           ? test::cpu_product_inputs(x, weight)
                                           : test::ProductInputs{x, weight};
      ops::reference::linear({used.x, used.weight, bias, want});
      // float32 accumulation in another order: relative to the size of the terms (the largest
      // sum of |w x| over every output).
      EXPECT_LE(max_abs_diff(out, want), 1e-5f * test::product_magnitude(weight, x) + 1e-5f)
          << dtype_name(w) << " " << n << "x" << k << "x" << o;
    }
  }
}

// The CPU multiplies a repacked copy of quantized weights, cached by address: a new tensor at
// the address of a freed one (another model loaded into reused memory) must not get the old
// copy. Both tensors wrap the same bytes buffer, with different owners.
TEST_P(Ops, QuantizedWeightsAtAReusedAddress) {
  if (!has(ops::kLinear, DType::q8_0)) GTEST_SKIP() << "no q8_0 products here";
  const int64_t n = 1, k = 576, o = 40;
  const Tensor x = random_tensor({n, k}, rng_);
  const Tensor bias = random_tensor({o}, rng_);
  std::vector<uint8_t> bytes(dtype_nbytes(DType::q8_0, o * k));
  const Tensor x_used = int8_activations(GetParam()) ? q8_round_trip(x) : x;
  for (int round = 0; round < 2; ++round) {
    const Tensor blocks = random_blocks(DType::q8_0, o, k, rng_);
    std::memcpy(bytes.data(), blocks.raw(), bytes.size());
    const Tensor weight = Tensor::from_blob(bytes.data(), {o, k}, DType::q8_0, Device::cpu(),
                                            std::make_shared<int>(round));
    Tensor out = empty({n, o});
    ops::linear(on_device(x, act_), weight.to(device_), bias.to(device_), out);
    Tensor want = Tensor::empty({n, o}, DType::f32);
    ops::reference::linear({x_used, blocks, bias, want});
    // Summation order only (terms of up to ~6 x 4 over 576 products); the other weights would
    // miss by tens.
    EXPECT_LE(max_abs_diff(out, want), 5e-2f) << "round " << round;
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
    // Scaled rows (Gemma's sqrt(hidden_size)): one product in float32, rounded once.
    ops::embedding(ids.to(device_), table.to(device_), out, 45.25f);
    ops::reference::embedding({ids, table, want, 45.25f});
    EXPECT_LE(max_abs_diff(out, want), act_ == DType::f32 ? 1e-5f : 0.5f) << dtype_name(w);
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

// Shapes whose element count no vector width divides, and views that start mid-vector: devices
// move several elements per thread where the memory is aligned, one where it is not.
TEST_P(Ops, SwigluAndAdd) {
  for (int64_t start : {0, 1}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 40}, {3, 37}}) {
      const Tensor g = random_tensor({rows + 1, cols}, rng_, 2.0f);
      const Tensor u = random_tensor({rows + 1, cols}, rng_);
      // Rows [start, start + rows) of a larger tensor: an offset of start * cols elements.
      const auto part = [&](const Tensor& t) { return t.narrow(0, start, rows); };
      const Tensor gd = on_device(g, act_), ud = on_device(u, act_);
      Tensor out_full = empty({rows + 1, cols});
      Tensor out = part(out_full);
      ops::swiglu(part(gd), part(ud), out);
      Tensor want = Tensor::empty({rows, cols}, DType::f32);
      ops::reference::swiglu({part(g).contiguous(), part(u).contiguous(), want});
      EXPECT_LE(max_abs_diff(out, want), tolerance(1e-5f)) << rows << "x" << cols << " +" << start;
      ops::add(part(gd), part(ud), out);
      ops::reference::add({part(g).contiguous(), part(u).contiguous(), want});
      EXPECT_LE(max_abs_diff(out, want), tolerance(1e-6f)) << rows << "x" << cols << " +" << start;
    }
  }
}

// GeGLU (Gemma's gelu_pytorch_tanh gate) on the same shapes, with gates far enough out that
// the approximation's tails (-0 and g) are reached; and the final logits' softcap.
TEST_P(Ops, GegluAndSoftcap) {
  if (!has(ops::kGluGeluTanh, act_)) GTEST_SKIP() << "no GeGLU kernel on this device";
  for (int64_t start : {0, 1}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 40}, {3, 37}}) {
      Tensor g = random_tensor({rows + 1, cols}, rng_, 3.0f);
      g.data<float>()[0] = -120.0f;
      g.data<float>()[1] = 95.0f;
      const Tensor u = random_tensor({rows + 1, cols}, rng_);
      const auto part = [&](const Tensor& t) { return t.narrow(0, start, rows); };
      Tensor out_full = empty({rows + 1, cols});
      Tensor out = part(out_full);
      ops::swiglu(part(on_device(g, act_)), part(on_device(u, act_)), out,
                  ops::GluActivation::gelu_tanh);
      Tensor want = Tensor::empty({rows, cols}, DType::f32);
      ops::reference::swiglu(
          {part(g).contiguous(), part(u).contiguous(), want, ops::GluActivation::gelu_tanh});
      EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f)) << rows << "x" << cols << " +" << start;
    }
  }
  // The reference's formula at a few points (torch.nn.functional.gelu(approximate="tanh")).
  Tensor x = Tensor::from_f32({-3.0f, -0.5f, 0.0f, 1.0f, 2.5f}, {1, 5});
  Tensor ones = Tensor::from_f32({1, 1, 1, 1, 1}, {1, 5});
  Tensor y = Tensor::empty({1, 5}, DType::f32);
  ops::reference::swiglu({x, ones, y, ops::GluActivation::gelu_tanh});
  const std::vector<float> torch_values = {-0.00363739f, -0.15428599f, 0.0f, 0.84119199f,
                                           2.48491573f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(y.to_f32_vector()[i], torch_values[i], 1e-6f) << i;

  if (!has(ops::kSoftcap, DType::f32) || act_ != DType::f32) return;
  const Tensor logits = random_tensor({3, 1001}, rng_, 40.0f);
  Tensor want = Tensor::from_f32(logits.to_f32_vector(), logits.shape());
  Tensor got = Tensor::from_f32(logits.to_f32_vector(), logits.shape()).to(device_);  // own copy
  ops::softcap(got, 30.0f);
  ops::reference::softcap({want, 30.0f});
  EXPECT_LE(max_abs_diff(got, want), 2e-5f);
  EXPECT_THROW(ops::softcap(got, 0.0f), Error);
}

// A normalised block output added into the residual (Gemma 2 / 3, OLMo 2): a device's fused
// kernel gives exactly what its rms_norm and add give, and both the reference within tolerance.
TEST_P(Ops, RmsNormAddMatchesNormThenAdd) {
  for (int64_t rows : {1, 3}) {
    const Tensor y = random_tensor({rows, 1152}, rng_, 3.0f), w = random_tensor({1152}, rng_);
    const Tensor resid = random_tensor({rows, 1152}, rng_);
    // Own copies: on the CPU on_device may hand back the tensor itself, and these are written.
    const auto copy = [&](const Tensor& t) {
      return on_device(Tensor::from_f32(t.to_f32_vector(), t.shape()), act_);
    };
    Tensor fused = copy(resid), scratch = copy(y);
    ops::rms_norm_add(scratch, on_device(w, act_), 1e-6f, fused);
    Tensor composed = copy(resid), normed = copy(y);
    ops::rms_norm(normed, on_device(w, act_), 1e-6f, normed);
    ops::add(composed, normed, composed);
    EXPECT_EQ(fused.to_f32_vector(), composed.to_f32_vector()) << "rows " << rows;
    Tensor want = Tensor::empty({rows, 1152}, DType::f32);
    Tensor ref_norm = Tensor::empty({rows, 1152}, DType::f32);
    ops::reference::rms_norm({y, w, ref_norm, 1e-6f});
    ops::reference::add({resid, ref_norm, want});
    EXPECT_LE(max_abs_diff(fused, want), tolerance(2e-5f)) << "rows " << rows;
  }
}

// Granite's multipliers: x * factor in place, rounded to x's dtype (half-precision devices'
// results are the reference's rounded once, as torch's `h * m` is).
TEST_P(Ops, ScaleInPlace) {
  if (!has(ops::kScale, act_)) GTEST_SKIP() << "no scale kernel on " << device_.str();
  const Tensor x = random_tensor({3, 333}, rng_, 5.0f);
  Tensor got = on_device(x, act_);
  Tensor want = Tensor::from_f32(got.to_f32_vector(), x.shape());  // x as the device holds it
  ops::scale(got, 0.22f);
  ops::reference::scale({want, 0.22f});
  const auto w = want.to_f32_vector();
  std::vector<float> rounded(w.size());
  for (size_t i = 0; i < w.size(); ++i) rounded[i] = round_to_dtype(w[i], act_);
  EXPECT_LE(max_abs_diff(got, Tensor::from_f32(rounded, x.shape())), 1e-6f);
  EXPECT_THROW(ops::scale(got, std::numeric_limits<float>::infinity()), Error);
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
  // a head dimension that is not a multiple of the vector width, 7 heads per KV head; a
  // speculative check step (11 positions of 3 heads per KV head over a long past: tasks of 16
  // rows across heads, and one of a single row); 20 heads on one KV head (a task each for fewer
  // rows, so that every thread has work); and 70 queries, where devices switch to their prefill
  // path.
  struct Case {
    int64_t batch, seq, past, heads, kv_heads, dim;
  };
  for (const Case c :
       {Case{2, 5, 0, 4, 2, 16}, Case{2, 3, 4, 4, 2, 16}, Case{3, 1, 9, 4, 2, 16},
        Case{2, 37, 0, 14, 2, 24}, Case{1, 1, 50, 14, 2, 64}, Case{2, 20, 13, 3, 1, 72},
        Case{1, 3, 2, 2, 1, 6}, Case{1, 11, 300, 9, 3, 64}, Case{1, 2, 40, 20, 1, 16},
        Case{2, 70, 6, 4, 2, 16}}) {
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

// Larger products take other paths on devices (the decode GEMV for a few rows, cuBLASLt for
// more, unaligned shapes): every one must match the reference.
TEST_P(Ops, LinearShapesOfRealModels) {
  for (auto [n, k, o] : {std::tuple{1, 896, 1152},
                         {4, 896, 300},
                         {8, 256, 64},
                         {9, 896, 200},
                         {1, 20, 33},
                         {2, 1000, 77}}) {
    const Tensor x = random_tensor({n, k}, rng_);
    const Tensor weight = random_tensor({o, k}, rng_, 0.05f);
    const Tensor bias = random_tensor({o}, rng_);
    Tensor out = empty({n, o});
    ops::linear(on_device(x, act_), on_device(weight, act_), on_device(bias, act_), out);
    Tensor want = Tensor::empty({n, o}, DType::f32);
    ops::reference::linear({x, weight, bias, want});
    EXPECT_LE(max_abs_diff(out, want), tolerance(2e-4f)) << n << "x" << k << "x" << o;
  }
}

// Half-precision activations, where a device keeps them (bf16/f16 weights on a GPU): results
// within the storage type's rounding of the float32 reference.
TEST_P(Ops, HalfPrecisionActivations) {
  for (DType half : {DType::bf16, DType::f16}) {
    if (backend_for(device_).activation_dtype(half) != half) continue;
    if (!supports(ops::kLinear, device_.type, half, half)) continue;
    const float tol = half == DType::bf16 ? 3e-2f : 5e-3f;
    for (auto [n, k, o] : {std::tuple{1, 896, 1152}, {5, 128, 40}, {17, 64, 1000}}) {
      const Tensor x = random_tensor({n, k}, rng_).to(half).to(DType::f32);
      const Tensor weight = random_tensor({o, k}, rng_, 0.05f).to(half).to(DType::f32);
      Tensor out = Tensor::empty({n, o}, half, device_);
      ops::linear(x.to(half).to(device_), weight.to(half).to(device_), Tensor(), out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({x, weight, Tensor(), want});
      EXPECT_LE(max_abs_diff(out, want), tol) << dtype_name(half) << " " << n << "x" << k;
    }
    const Tensor x = random_tensor({6, 64}, rng_).to(half).to(DType::f32);
    const Tensor w = random_tensor({64}, rng_).to(half).to(DType::f32);
    Tensor normed = Tensor::empty({6, 64}, half, device_);
    ops::rms_norm(x.to(half).to(device_), w.to(half).to(device_), 1e-6f, normed);
    Tensor want = Tensor::empty({6, 64}, DType::f32);
    ops::reference::rms_norm({x, w, want, 1e-6f});
    EXPECT_LE(max_abs_diff(normed, want), 4 * tol) << dtype_name(half);
  }
}

// Prefill attention in half precision over 64-query tiles and 64-key tiles (the CUDA flash
// kernel's shapes: head_dim 64 and 128, GQA, a partial last tile, keys already cached, left
// padding whose queries see no key at all), against the float32 reference on the same rounded
// inputs.
TEST_P(Ops, HalfPrecisionPrefillAttention) {
  for (DType half : {DType::bf16, DType::f16}) {
    if (backend_for(device_).activation_dtype(half) != half) continue;
    const float tol = half == DType::bf16 ? 3e-2f : 5e-3f;
    for (auto [seq, past, dim] :
         {std::tuple{130, 0, 64}, {70, 37, 128}, {64, 5, 64}, {300, 20, 128}}) {
      const int64_t batch = 2, heads = 8, kv_heads = 2, cap = past + seq + 9;
      const auto rounded = [&](const Shape& shape, float scale) {
        return random_tensor(shape, rng_, scale).to(half).to(DType::f32);
      };
      const Tensor q = rounded({batch, seq, heads, dim}, 1.0f);
      const Tensor k = rounded({batch, kv_heads, cap, dim}, 0.3f);
      const Tensor v = rounded({batch, kv_heads, cap, dim}, 1.0f);
      // One mask column per key so far (the cache holds more rows than that).
      const int64_t total = past + seq;
      Tensor mask = Tensor::empty({batch, total}, DType::i32);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < total; ++t) {
          mask.data<int32_t>()[b * total + t] = b == 1 && t < past + 3 ? 0 : 1;  // row 1 padded
        }
      }
      Tensor want = Tensor::empty({batch, seq, heads, dim}, DType::f32);
      ops::reference::attention({q, k, v, mask, want, past, 0.09f, ops::AttentionImpl::eager});
      Tensor out = Tensor::empty({batch, seq, heads, dim}, half, device_);
      ops::attention({q.to(half).to(device_), k.to(half).to(device_), v.to(half).to(device_),
                      mask.to(device_), out, past, 0.09f, ops::AttentionImpl::sdpa});
      EXPECT_LE(max_abs_diff(out, want), tol)
          << dtype_name(half) << " seq " << seq << " past " << past << " dim " << dim;
    }
  }
}

// Decode over many keys and with a head size no vector width divides: devices switch kernels
// at such sizes, and every path must match the reference.
TEST_P(Ops, AttentionLongContextsAndOddHeadSizes) {
  for (auto [past, dim] : {std::tuple{9000, 16}, {40, 80}, {300, 128}}) {
    const int64_t batch = 1, heads = 2, kv_heads = 1, cap = past + 1;
    const Tensor q = random_tensor({batch, 1, heads, dim}, rng_);
    const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_, 0.3f);
    const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
    Tensor mask = Tensor::empty({batch, cap}, DType::i32);
    for (int64_t t = 0; t < cap; ++t) mask.data<int32_t>()[t] = t % 7 == 3 ? 0 : 1;
    Tensor want = Tensor::empty({batch, 1, heads, dim}, DType::f32);
    ops::reference::attention({q, k, v, mask, want, past, 0.125f, ops::AttentionImpl::eager});
    Tensor out = empty({batch, 1, heads, dim});
    ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_),
                    out, past, 0.125f, ops::AttentionImpl::sdpa});
    EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f)) << "past " << past << " dim " << dim;
  }
}

// Decode whose first keys are padding: a device that splits a step's keys over threads gets
// ranges where no key is visible, and must merge them with the others (or give zeros when the
// row sees none at all).
TEST_P(Ops, AttentionDecodeWithWholeKeyRangesMasked) {
  const int64_t batch = 3, heads = 6, kv_heads = 1, dim = 64, past = 400, cap = past + 1;
  const Tensor q = random_tensor({batch, 1, heads, dim}, rng_);
  const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_, 0.3f);
  const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
  Tensor mask = Tensor::empty({batch, cap}, DType::i32);
  for (int64_t t = 0; t < cap; ++t) {
    mask.data<int32_t>()[t] = t >= 300 ? 1 : 0;      // row 0: the last 101 keys
    mask.data<int32_t>()[cap + t] = t < 50 ? 1 : 0;  // row 1: the first 50 keys
    mask.data<int32_t>()[2 * cap + t] = 0;           // row 2: no key
  }
  Tensor want = Tensor::empty({batch, 1, heads, dim}, DType::f32);
  ops::reference::attention({q, k, v, mask, want, past, 0.125f, ops::AttentionImpl::eager});
  Tensor out = empty({batch, 1, heads, dim});
  ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_), out,
                  past, 0.125f, ops::AttentionImpl::sdpa});
  EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f));
}

// Graph replay reads positions from device memory and uses a mask as wide as the cache.
TEST_P(Ops, PositionsFromDeviceMemory) {
  const Tensor src = random_tensor({2, 1, 2, 8}, rng_);
  Tensor cache = Tensor::zeros({2, 2, 10, 8}, act_, device_);
  const Tensor start = Tensor::from_i64({6}, {1}).to(DType::i32).to(device_);
  ops::store_kv(on_device(src, act_), cache, 6, start);
  Tensor want = Tensor::zeros({2, 2, 10, 8}, DType::f32);
  ops::reference::store_kv({src, want, 6});
  EXPECT_LE(max_abs_diff(cache, want), 0.0f);

  const int64_t batch = 2, heads = 4, kv_heads = 2, dim = 32, cap = 700, past = 600;
  const Tensor q = random_tensor({batch, 1, heads, dim}, rng_);
  const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_);
  const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
  const int64_t width = device_.type == DeviceType::cpu ? past + 1 : cap;
  Tensor mask = Tensor::zeros({batch, width}, DType::i32);
  for (int64_t t = 0; t <= past; ++t) mask.data<int32_t>()[t] = 1;
  for (int64_t t = 3; t <= past; ++t) mask.data<int32_t>()[width + t] = 1;  // row 1: padding
  Tensor exact = Tensor::empty({batch, past + 1}, DType::i32);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t <= past; ++t) {
      exact.data<int32_t>()[b * (past + 1) + t] = mask.data<int32_t>()[b * width + t];
    }
  }
  Tensor expected = Tensor::empty({batch, 1, heads, dim}, DType::f32);
  ops::reference::attention({q, k, v, exact, expected, past, 0.2f, ops::AttentionImpl::eager});
  Tensor out = empty({batch, 1, heads, dim});
  const Tensor past_dev = Tensor::from_i64({past}, {1}).to(DType::i32).to(device_);
  ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_), out,
                  past, 0.2f, ops::AttentionImpl::sdpa, past_dev});
  EXPECT_LE(max_abs_diff(out, expected), tolerance(2e-5f));
}

// A sliding window (Mistral, Qwen2's windowed layers): query s sees keys (past + s - window,
// past + s]. Decode over long and short caches, prompts whose queries' windows start in
// different key blocks (16-key blocks, 16-query tiles, the devices' 64-key prefill tiles),
// windows of one key, of a block, and wider than the cache, left padding inside and outside the
// window; both implementations, and a graph replay's past read from device memory.
TEST_P(Ops, AttentionSlidingWindow) {
  struct Case {
    int64_t batch, seq, past, heads, kv_heads, dim, window;
  };
  for (const Case c :
       {Case{1, 1, 9000, 2, 1, 64, 300}, Case{3, 1, 40, 4, 2, 16, 1}, Case{2, 1, 130, 8, 2, 64, 64},
        Case{2, 5, 0, 4, 2, 16, 3}, Case{2, 37, 4, 14, 2, 24, 16}, Case{2, 70, 6, 4, 2, 16, 17},
        Case{1, 200, 30, 8, 2, 64, 65}, Case{2, 150, 0, 4, 1, 128, 500},
        Case{1, 20, 13, 3, 1, 72, 7}, Case{5, 1, 700, 32, 4, 64, 300}}) {
    const int64_t batch = c.batch, seq = c.seq, past = c.past, dim = c.dim;
    const int64_t cap = past + seq + 2, total = past + seq;
    const Tensor q = random_tensor({batch, seq, c.heads, dim}, rng_);
    const Tensor k = random_tensor({batch, c.kv_heads, cap, dim}, rng_, 0.3f);
    const Tensor v = random_tensor({batch, c.kv_heads, cap, dim}, rng_);
    Tensor mask = Tensor::empty({batch, total}, DType::i32);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < total; ++t) {
        mask.data<int32_t>()[b * total + t] = t >= 3 * b ? 1 : 0;  // row b: 3b padded keys
      }
    }
    Tensor want = Tensor::empty({batch, seq, c.heads, dim}, DType::f32);
    ops::reference::attention(
        {q, k, v, mask, want, past, 0.2f, ops::AttentionImpl::eager, Tensor(), c.window});
    for (auto impl : {ops::AttentionImpl::eager, ops::AttentionImpl::sdpa}) {
      Tensor out = empty({batch, seq, c.heads, dim});
      ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_),
                      out, past, 0.2f, impl, Tensor(), c.window});
      EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f))
          << "impl " << static_cast<int>(impl) << " seq " << seq << " past " << past << " window "
          << c.window;
    }
    if (seq == 1 && device_.type != DeviceType::cpu) {  // a replayed step: past on the device
      Tensor wide = Tensor::zeros({batch, cap}, DType::i32);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < total; ++t) {
          wide.data<int32_t>()[b * cap + t] = mask.data<int32_t>()[b * total + t];
        }
      }
      const Tensor past_dev = Tensor::from_i64({past}, {1}).to(DType::i32).to(device_);
      Tensor out = empty({batch, 1, c.heads, dim});
      ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), wide.to(device_),
                      out, past, 0.2f, ops::AttentionImpl::sdpa, past_dev, c.window});
      EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f)) << "replayed, window " << c.window;
    }
  }
  // The reference itself, on a case small enough to state: one key per query.
  const Tensor q = random_tensor({1, 3, 1, 4}, rng_);
  const Tensor k = random_tensor({1, 1, 3, 4}, rng_);
  const Tensor v = random_tensor({1, 1, 3, 4}, rng_);
  Tensor ones = Tensor::empty({1, 3}, DType::i32);
  for (int t = 0; t < 3; ++t) ones.data<int32_t>()[t] = 1;
  Tensor out = Tensor::empty({1, 3, 1, 4}, DType::f32);
  ops::reference::attention({q, k, v, ones, out, 0, 1.0f, ops::AttentionImpl::eager, Tensor(), 1});
  EXPECT_EQ(out.to_f32_vector(), v.to_f32_vector());  // each query its own key's value
}

// Gemma 2's logit softcapping: every score through tanh(s / cap) * cap before the mask and the
// softmax, with scores large enough that the cap bites, in decode and prefill, with a window;
// a device without it says so instead of computing uncapped scores.
TEST_P(Ops, AttentionSoftcap) {
  const int64_t batch = 2, heads = 4, kv_heads = 2, dim = 16;
  for (auto [seq, past, window] : {std::tuple<int64_t, int64_t, int64_t>{1, 30, 0},
                                   {1, 50, 9},
                                   {23, 4, 0},
                                   {40, 0, 7},
                                   {70, 5, 0},
                                   {90, 0, 30}}) {
    const int64_t cap = past + seq + 1, total = past + seq;
    const Tensor q = random_tensor({batch, seq, heads, dim}, rng_, 2.0f);
    const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_, 2.0f);
    const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
    Tensor mask = Tensor::empty({batch, total}, DType::i32);
    for (int64_t t = 0; t < batch * total; ++t) mask.data<int32_t>()[t] = t % total >= 2 ? 1 : 0;
    Tensor want = Tensor::empty({batch, seq, heads, dim}, DType::f32);
    ops::reference::attention(
        {q, k, v, mask, want, past, 0.5f, ops::AttentionImpl::eager, Tensor(), window, 2.0f});
    Tensor uncapped = Tensor::empty({batch, seq, heads, dim}, DType::f32);
    ops::reference::attention(
        {q, k, v, mask, uncapped, past, 0.5f, ops::AttentionImpl::eager, Tensor(), window});
    EXPECT_GT(max_abs_diff(want, uncapped), 0.05f) << "the cap must change these scores";
    for (auto impl : {ops::AttentionImpl::eager, ops::AttentionImpl::sdpa}) {
      Tensor out = empty({batch, seq, heads, dim});
      const ops::AttentionArgs args{on_device(q, act_),
                                    on_device(k, act_),
                                    on_device(v, act_),
                                    mask.to(device_),
                                    out,
                                    past,
                                    0.5f,
                                    impl,
                                    Tensor(),
                                    window,
                                    2.0f};
      if (!supports(ops::kAttentionSoftcap, device_.type, act_, act_)) {
        EXPECT_THROW(ops::attention(args), Error);
        continue;
      }
      ops::attention(args);
      EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f))
          << "impl " << static_cast<int>(impl) << " seq " << seq << " window " << window;
    }
  }
}

// The same cap over 160 decode rows (2 x 80 heads: CUDA's one-pass kernel, which takes a
// block per head and row where there are as many as SMs).
TEST_P(Ops, AttentionSoftcapManyHeads) {
  if (!supports(ops::kAttentionSoftcap, device_.type, act_, act_)) {
    GTEST_SKIP() << "no softcapped attention on " << device_.str();
  }
  const int64_t batch = 2, heads = 80, kv_heads = 4, dim = 32, past = 90, cap = past + 2;
  const Tensor q = random_tensor({batch, 1, heads, dim}, rng_, 2.0f);
  const Tensor k = random_tensor({batch, kv_heads, cap, dim}, rng_, 2.0f);
  const Tensor v = random_tensor({batch, kv_heads, cap, dim}, rng_);
  Tensor mask = Tensor::empty({batch, past + 1}, DType::i32);
  for (int64_t t = 0; t < batch * (past + 1); ++t) mask.data<int32_t>()[t] = t % 7 != 3 ? 1 : 0;
  Tensor want = Tensor::empty({batch, 1, heads, dim}, DType::f32);
  ops::reference::attention(
      {q, k, v, mask, want, past, 0.5f, ops::AttentionImpl::eager, Tensor(), 0, 2.0f});
  Tensor out = empty({batch, 1, heads, dim});
  ops::attention({on_device(q, act_), on_device(k, act_), on_device(v, act_), mask.to(device_), out,
                  past, 0.5f, ops::AttentionImpl::sdpa, Tensor(), 0, 2.0f});
  EXPECT_LE(max_abs_diff(out, want), tolerance(2e-5f));
}

// Mixture-of-experts rows: a gather, and the weighted scatter-add into rows that already hold
// values (index_add_ of y * w); out-of-range indices and mismatched shapes are errors.
TEST_P(Ops, GatherAndScatterAddRows) {
  if (!has(ops::kGatherRows, act_) || !has(ops::kScatterAddRows, act_)) {
    GTEST_SKIP() << "no mixture-of-experts row kernels on " << device_.str();
  }
  const Tensor x = random_tensor({5, 12}, rng_);
  const std::vector<int64_t> rows = {4, 0, 2};
  const auto index_of = [&](const std::vector<int64_t>& r) {
    return Tensor::from_i64(r, {static_cast<int64_t>(r.size())}).to(DType::i32).to(device_);
  };
  Tensor got = empty({3, 12});
  ops::gather_rows(on_device(x, act_), index_of(rows), got);
  const auto xs = x.to_f32_vector(), g = got.to_f32_vector();
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < 12; ++j) {
      EXPECT_FLOAT_EQ(g[i * 12 + j], xs[rows[i] * 12 + j]) << "row " << i;
    }
  }
  const Tensor y = random_tensor({3, 12}, rng_);
  const std::vector<float> w = {0.5f, -1.25f, 2.0f};
  Tensor out = on_device(x, act_);
  ops::scatter_add_rows(on_device(y, act_), index_of(rows), Tensor::from_f32(w, {3}).to(device_),
                        out);
  std::vector<float> want = xs;
  const auto ys = y.to_f32_vector();
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < 12; ++j) want[rows[i] * 12 + j] += w[i] * ys[i * 12 + j];
  }
  EXPECT_LE(max_abs_diff(out, Tensor::from_f32(want, {5, 12})), tolerance(1e-6f));
  EXPECT_THROW(ops::gather_rows(on_device(x, act_), index_of({0, 1}), got), Error);
  if (device_.type == DeviceType::cpu) {  // devices' kernels skip such rows (host-made indices)
    EXPECT_THROW(ops::gather_rows(on_device(x, act_), index_of({0, 5, 1}), got), Error);
    EXPECT_THROW(ops::gather_rows(on_device(x, act_), index_of({0, -1, 1}), got), Error);
    EXPECT_THROW(ops::scatter_add_rows(on_device(y, act_), index_of({1, 7, 2}),
                                       Tensor::from_f32(w, {3}).to(device_), out),
                 Error);
  }
  EXPECT_THROW(ops::scatter_add_rows(on_device(y, act_), index_of(rows),
                                     Tensor::from_f32({1.0f, 2.0f}, {2}).to(device_), out),
               Error);
}

// Gemma 2 / 3's output norms: residual += rms_norm(x @ W^T + b) * out_norm.
TEST_P(Ops, LinearAddWithOutputNorm) {
  for (int64_t n : {1, 3}) {
    const Tensor x = random_tensor({n, 64}, rng_), w = random_tensor({48, 64}, rng_, 0.2f);
    const Tensor b = random_tensor({48}, rng_), nw = random_tensor({48}, rng_);
    const Tensor resid = random_tensor({n, 48}, rng_);
    Tensor got = on_device(Tensor::from_f32(resid.to_f32_vector(), resid.shape()), act_);
    Tensor scratch = empty({n, 48});
    ops::linear_add({on_device(x, act_), on_device(w, act_), on_device(b, act_), got, scratch,
                     on_device(nw, act_), 1e-6f});
    Tensor prod = Tensor::empty({n, 48}, DType::f32), want = Tensor::empty({n, 48}, DType::f32);
    ops::reference::linear({x, w, b, prod});
    ops::reference::rms_norm({prod, nw, prod, 1e-6f});
    ops::reference::add({resid, prod, want});
    EXPECT_LE(max_abs_diff(got, want), tolerance(2e-5f)) << "rows " << n;
  }
}

// Granite's residual multiplier: residual += round(round(x @ W^T + b) * m), through the output
// norm where one is given; the fused epilogue (CUDA's GEMV, up to its row limit) must round
// exactly as the ops one by one do, and both must match the float32 reference.
TEST_P(Ops, LinearAddScaledMatchesSeparateOps) {
  const float m = 0.22f;
  for (int64_t n : {1, 3, 7}) {
    for (bool norm : {false, true}) {
      const Tensor x = random_tensor({n, 64}, rng_), w = random_tensor({48, 64}, rng_, 0.2f);
      const Tensor b = random_tensor({48}, rng_), nw = random_tensor({48}, rng_);
      const Tensor resid = random_tensor({n, 48}, rng_);
      const Tensor out_norm = norm ? on_device(nw, act_) : Tensor();
      Tensor got = on_device(Tensor::from_f32(resid.to_f32_vector(), resid.shape()), act_);
      Tensor scratch = empty({n, 48});
      ops::linear_add({on_device(x, act_), on_device(w, act_), on_device(b, act_), got, scratch,
                       out_norm, 1e-6f, m});

      Tensor prod = Tensor::empty({n, 48}, DType::f32), want = Tensor::empty({n, 48}, DType::f32);
      ops::reference::linear({x, w, b, prod});
      if (norm) ops::reference::rms_norm({prod, nw, prod, 1e-6f});
      std::vector<float> scaled = prod.to_f32_vector();
      for (float& v : scaled) v *= m;
      ops::reference::add({resid, Tensor::from_f32(scaled, {n, 48}), want});
      EXPECT_LE(max_abs_diff(got, want), tolerance(2e-5f)) << "rows " << n << " norm " << norm;

      Tensor sep = on_device(Tensor::from_f32(resid.to_f32_vector(), resid.shape()), act_);
      Tensor p = empty({n, 48});
      ops::linear(on_device(x, act_), on_device(w, act_), on_device(b, act_), p);
      if (norm) ops::rms_norm(p, out_norm, 1e-6f, p);
      ops::scale(p, m);
      ops::add(sep, p, sep);
      EXPECT_LE(max_abs_diff(got, sep), 0.0f) << "rows " << n << " norm " << norm;
    }
  }
}

// A router's group (its norm, its E rows and a one-row shared-expert gate) that keeps the
// normalised rows for the experts: `normed` must hold them on every device, whether a kernel
// fused the norm (CUDA's GEMV, staged in shared memory for k = 64, read in place for k = 12800)
// or the op ran composed (7 rows).
TEST_P(Ops, LinearGroupKeepsNormedRows) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 64}, {3, 64}, {7, 64}, {1, 12800}}) {
    const Tensor x = random_tensor({n, k}, rng_), nw = random_tensor({k}, rng_);
    const Tensor router = random_tensor({8, k}, rng_, 0.1f),
                 gate = random_tensor({1, k}, rng_, 0.1f);
    Tensor logits = empty({n, 8}), gate_logit = empty({n, 1}), normed = empty({n, k});
    ops::LinearGroupArgs g{.x = on_device(x, act_),
                           .weights = {on_device(router, act_), on_device(gate, act_)},
                           .biases = {},
                           .outs = {logits, gate_logit},
                           .count = 2,
                           .norm_weight = on_device(nw, act_),
                           .eps = 1e-6f,
                           .normed = normed,
                           .keep_normed = true};
    ops::linear_group(g);
    Tensor want_normed = Tensor::empty({n, k}, DType::f32);
    ops::reference::rms_norm({x, nw, want_normed, 1e-6f});
    EXPECT_LE(max_abs_diff(normed, want_normed), tolerance(1e-5f)) << n << " rows, k " << k;
    const float product_tol = k > 1000 ? tolerance(1e-3f) : tolerance(1e-4f);
    Tensor want = Tensor::empty({n, 8}, DType::f32), want_gate = Tensor::empty({n, 1}, DType::f32);
    ops::reference::linear({want_normed, router, Tensor(), want});
    ops::reference::linear({want_normed, gate, Tensor(), want_gate});
    EXPECT_LE(max_abs_diff(logits, want), product_tol) << n << " rows, k " << k;
    EXPECT_LE(max_abs_diff(gate_logit, want_gate), product_tol) << n << " rows, k " << k;
    // The kept rows are the ones the products read: multiplied again, the same logits.
    Tensor again = empty({n, 8});
    ops::linear(normed, on_device(router, act_), Tensor(), again);
    EXPECT_LE(max_abs_diff(again, logits), act_ == DType::f32 ? 1e-5f : 0.0f)
        << n << " rows, k " << k;
  }
}

// Half precision over the prefill tiles with a window (the CUDA flash kernel skips the tiles
// before every query's window).
TEST_P(Ops, HalfPrecisionPrefillAttentionSlidingWindow) {
  for (DType half : {DType::bf16, DType::f16}) {
    if (backend_for(device_).activation_dtype(half) != half) continue;
    const float tol = half == DType::bf16 ? 3e-2f : 5e-3f;
    for (auto [seq, past, dim, window] :
         {std::tuple{300, 20, 128, 100}, {130, 0, 64, 64}, {70, 37, 128, 1}, {200, 0, 64, 65}}) {
      const int64_t batch = 2, heads = 8, kv_heads = 2, cap = past + seq + 9, total = past + seq;
      const auto rounded = [&](const Shape& shape, float scale) {
        return random_tensor(shape, rng_, scale).to(half).to(DType::f32);
      };
      const Tensor q = rounded({batch, seq, heads, dim}, 1.0f);
      const Tensor k = rounded({batch, kv_heads, cap, dim}, 0.3f);
      const Tensor v = rounded({batch, kv_heads, cap, dim}, 1.0f);
      Tensor mask = Tensor::empty({batch, total}, DType::i32);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < total; ++t) {
          mask.data<int32_t>()[b * total + t] = b == 1 && t < past + 3 ? 0 : 1;
        }
      }
      Tensor want = Tensor::empty({batch, seq, heads, dim}, DType::f32);
      ops::reference::attention(
          {q, k, v, mask, want, past, 0.09f, ops::AttentionImpl::eager, Tensor(), window});
      Tensor out = Tensor::empty({batch, seq, heads, dim}, half, device_);
      ops::attention({q.to(half).to(device_), k.to(half).to(device_), v.to(half).to(device_),
                      mask.to(device_), out, past, 0.09f, ops::AttentionImpl::sdpa, Tensor(),
                      window});
      EXPECT_LE(max_abs_diff(out, want), tol)
          << dtype_name(half) << " seq " << seq << " past " << past << " window " << window;
    }
  }
}

// Half precision prefill with Gemma 2's logit softcap (the CUDA flash kernel caps its tiles'
// scores), head sizes 64 and 128, left padding and a window.
TEST_P(Ops, HalfPrecisionPrefillAttentionSoftcap) {
  for (DType half : {DType::bf16, DType::f16}) {
    if (backend_for(device_).activation_dtype(half) != half) continue;
    if (!supports(ops::kAttentionSoftcap, device_.type, half, half)) {
      GTEST_SKIP() << "no softcapped attention over " << dtype_name(half) << " on "
                   << device_.str();
    }
    const float tol = half == DType::bf16 ? 3e-2f : 5e-3f;
    for (auto [seq, past, dim, window] :
         {std::tuple{150, 10, 128, 0}, {130, 0, 64, 40}, {96, 33, 64, 0}}) {
      const int64_t batch = 2, heads = 4, kv_heads = 2, cap = past + seq + 3, total = past + seq;
      const auto rounded = [&](const Shape& shape, float scale) {
        return random_tensor(shape, rng_, scale).to(half).to(DType::f32);
      };
      const Tensor q = rounded({batch, seq, heads, dim}, 1.0f);
      const Tensor k = rounded({batch, kv_heads, cap, dim}, 1.0f);
      const Tensor v = rounded({batch, kv_heads, cap, dim}, 1.0f);
      Tensor mask = Tensor::empty({batch, total}, DType::i32);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < total; ++t) {
          mask.data<int32_t>()[b * total + t] = b == 1 && t < 5 ? 0 : 1;
        }
      }
      Tensor want = Tensor::empty({batch, seq, heads, dim}, DType::f32);
      ops::reference::attention(
          {q, k, v, mask, want, past, 0.25f, ops::AttentionImpl::eager, Tensor(), window, 3.0f});
      Tensor uncapped = Tensor::empty({batch, seq, heads, dim}, DType::f32);
      ops::reference::attention(
          {q, k, v, mask, uncapped, past, 0.25f, ops::AttentionImpl::eager, Tensor(), window});
      ASSERT_GT(max_abs_diff(want, uncapped), 0.1f) << "the cap must change these scores";
      Tensor out = Tensor::empty({batch, seq, heads, dim}, half, device_);
      ops::attention({q.to(half).to(device_), k.to(half).to(device_), v.to(half).to(device_),
                      mask.to(device_), out, past, 0.25f, ops::AttentionImpl::sdpa, Tensor(),
                      window, 3.0f});
      EXPECT_LE(max_abs_diff(out, want), tol)
          << dtype_name(half) << " seq " << seq << " past " << past << " window " << window;
    }
  }
}

TEST_P(Ops, CastArgmaxAndMaskColumn) {
  if (has(ops::kCast, DType::bf16)) {
    const Tensor x = random_tensor({3, 50}, rng_);
    Tensor half = Tensor::empty({3, 50}, DType::bf16, device_);
    ops::cast(x.to(device_), half);
    EXPECT_EQ(half.to_f32_vector(), x.to(DType::bf16).to_f32_vector());
  }
  if (supports(ops::kArgmax, device_.type, DType::f32, DType::f32)) {
    // Devices split long rows into parts: ties and NaN must resolve across parts as in torch.
    Tensor x = random_tensor({4, 70000}, rng_);
    x.data<float>()[12345] = 100.0f;
    x.data<float>()[60000] = 100.0f;  // a tie in another part: the first index wins
    x.data<float>()[70000 + 69999] = 100.0f;
    x.data<float>()[140000 + 5] = 100.0f;
    x.data<float>()[140000 + 6] = 100.0f;  // a tie: the first index wins
    x.data<float>()[210000 + 10] = 100.0f;
    x.data<float>()[210000 + 50000] = std::numeric_limits<float>::quiet_NaN();  // NaN wins
    x.data<float>()[210000 + 60000] = std::numeric_limits<float>::quiet_NaN();
    Tensor ids = Tensor::empty({4}, DType::i64, device_);
    ops::argmax(x.to(device_), ids);
    EXPECT_EQ(ids.to_i64_vector(), (std::vector<int64_t>{12345, 69999, 5, 50000}));
  }
  if (supports(ops::kMaskColumn, device_.type, DType::i32, DType::i32)) {
    Tensor mask = Tensor::zeros({2, 5}, DType::i32, device_);
    const Tensor vals = Tensor::from_i64({1, 7}, {2}).to(DType::i32).to(device_);
    const Tensor index = Tensor::from_i64({3}, {1}).to(DType::i32).to(device_);
    ops::write_mask_column(mask, vals, index);
    EXPECT_EQ(mask.to_i64_vector(), (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 0, 0, 7, 0}));
  }
}

// The queued copies (to the device, on it, back to the host) keep every byte, whatever the
// size and alignment: CUDA runs the small ones as kernels, in words or bytes.
TEST_P(Ops, QueuedCopiesOfAnySizeAndAlignment) {
  Backend& backend = backend_for(device_);
  constexpr size_t kRoom = 8192;
  const Tensor first = Tensor::empty({kRoom + 16}, DType::u8, device_);
  const Tensor second = Tensor::empty({kRoom + 16}, DType::u8, device_);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const size_t n : {1, 3, 8, 13, 64, 1000, 4095, 4096, 4097, 5000, 8192}) {
    for (const size_t off : {0, 1, 8}) {
      std::vector<uint8_t> in(n), out(n, 0);
      for (uint8_t& b : in) b = static_cast<uint8_t>(byte(rng_));
      auto* a = static_cast<uint8_t*>(first.raw()) + off;
      auto* b = static_cast<uint8_t*>(second.raw()) + (off + 8) % 16;
      backend.copy_from_host_queued(a, in.data(), n, device_);
      backend.copy_on_device(b, a, n, device_);
      backend.copy_to_host_async(out.data(), b, n, device_)->wait();
      EXPECT_EQ(out, in) << n << " bytes at offset " << off;
    }
  }
}

// The fused ops against the reference composition of the ops they fuse.
TEST_P(Ops, FusedOpsMatchTheirComposition) {
  const float eps = 1e-6f;
  for (int64_t n : {1, 3, 11}) {
    // add_rms_norm
    const Tensor x = random_tensor({n, 96}, rng_), d = random_tensor({n, 96}, rng_);
    const Tensor w = random_tensor({96}, rng_);
    // Copies: on the CPU on_device would return x itself, which the op updates in place.
    Tensor xd = on_device(Tensor::from_f32(x.to_f32_vector(), x.shape()), act_);
    Tensor out = empty({n, 96});
    ops::add_rms_norm(xd, on_device(d, act_), on_device(w, act_), eps, out);
    Tensor sum = Tensor::empty({n, 96}, DType::f32), want = Tensor::empty({n, 96}, DType::f32);
    ops::reference::add({x, d, sum});
    ops::reference::rms_norm({sum, w, want, eps});
    EXPECT_LE(max_abs_diff(xd, sum), tolerance(1e-6f));
    EXPECT_LE(max_abs_diff(out, want), tolerance(1e-5f));

    // linear_group (q, k, v with biases) and linear_swiglu
    const Tensor in = random_tensor({n, 128}, rng_);
    Tensor ws[3], bs[3], outs[3];
    for (int i = 0; i < 3; ++i) {
      ws[i] = random_tensor({i == 0 ? 64 : 32, 128}, rng_, 0.1f);
      bs[i] = random_tensor({ws[i].size(0)}, rng_);
      outs[i] = empty({n, ws[i].size(0)});
    }
    ops::LinearGroupArgs g{on_device(in, act_), {}, {}, {}, 3};
    for (int i = 0; i < 3; ++i) {
      g.weights[i] = on_device(ws[i], act_);
      g.biases[i] = on_device(bs[i], act_);
      g.outs[i] = outs[i];
    }
    ops::linear_group(g);
    for (int i = 0; i < 3; ++i) {
      Tensor ref = Tensor::empty({n, ws[i].size(0)}, DType::f32);
      ops::reference::linear({in, ws[i], bs[i], ref});
      EXPECT_LE(max_abs_diff(outs[i], ref), tolerance(1e-4f)) << "product " << i;
    }
    const Tensor gate = random_tensor({80, 128}, rng_, 0.1f),
                 up = random_tensor({80, 128}, rng_, 0.1f);
    Tensor act_out = empty({n, 80}), scratch = empty({n, 80});
    ops::linear_swiglu({on_device(in, act_), on_device(gate, act_), Tensor(), on_device(up, act_),
                        Tensor(), act_out, scratch});
    Tensor gr = Tensor::empty({n, 80}, DType::f32), ur = Tensor::empty({n, 80}, DType::f32);
    ops::reference::linear({in, gate, Tensor(), gr});
    ops::reference::linear({in, up, Tensor(), ur});
    ops::reference::swiglu({gr, ur, gr});
    EXPECT_LE(max_abs_diff(act_out, gr), tolerance(1e-4f));
  }
  // The products with the input norm in front and the residual add behind (a decode layer's
  // whole dataflow), and the head (a single product with a norm).
  for (int64_t n : {1, 2, 4, 6}) {
    const Tensor x = random_tensor({n, 256}, rng_), nw = random_tensor({256}, rng_);
    const Tensor wq = random_tensor({96, 256}, rng_, 0.1f), bq = random_tensor({96}, rng_);
    const Tensor wk = random_tensor({40, 256}, rng_, 0.1f);
    Tensor q = empty({n, 96}), k = empty({n, 40}), normed = empty({n, 256});
    ops::linear_group({on_device(x, act_),
                       {on_device(wq, act_), on_device(wk, act_)},
                       {on_device(bq, act_), Tensor()},
                       {q, k},
                       2,
                       on_device(nw, act_),
                       eps,
                       normed});
    Tensor xn = Tensor::empty({n, 256}, DType::f32);
    ops::reference::rms_norm({x, nw, xn, eps});
    Tensor qr = Tensor::empty({n, 96}, DType::f32), kr = Tensor::empty({n, 40}, DType::f32);
    ops::reference::linear({xn, wq, bq, qr});
    ops::reference::linear({xn, wk, Tensor(), kr});
    EXPECT_LE(max_abs_diff(q, qr), tolerance(2e-4f)) << "normed group, rows " << n;
    EXPECT_LE(max_abs_diff(k, kr), tolerance(2e-4f)) << "normed group, rows " << n;

    const Tensor g = random_tensor({64, 256}, rng_, 0.1f), u = random_tensor({64, 256}, rng_, 0.1f);
    Tensor h = empty({n, 64}), hs = empty({n, 64});
    ops::linear_swiglu({on_device(x, act_), on_device(g, act_), Tensor(), on_device(u, act_),
                        Tensor(), h, hs, on_device(nw, act_), eps, normed});
    Tensor gr = Tensor::empty({n, 64}, DType::f32), ur = Tensor::empty({n, 64}, DType::f32);
    ops::reference::linear({xn, g, Tensor(), gr});
    ops::reference::linear({xn, u, Tensor(), ur});
    // GeGLU (Gemma) through the same fused product.
    Tensor hg = empty({n, 64}), hgs = empty({n, 64});
    ops::linear_swiglu({on_device(x, act_), on_device(g, act_), Tensor(), on_device(u, act_),
                        Tensor(), hg, hgs, on_device(nw, act_), eps, normed,
                        ops::GluActivation::gelu_tanh});
    Tensor geglu = Tensor::empty({n, 64}, DType::f32);
    ops::reference::swiglu({gr, ur, geglu, ops::GluActivation::gelu_tanh});
    EXPECT_LE(max_abs_diff(hg, geglu), tolerance(2e-4f)) << "normed geglu, rows " << n;
    ops::reference::swiglu({gr, ur, gr});
    EXPECT_LE(max_abs_diff(h, gr), tolerance(2e-4f)) << "normed swiglu, rows " << n;

    const Tensor wd = random_tensor({256, 64}, rng_, 0.1f), bd = random_tensor({256}, rng_);
    Tensor resid = on_device(Tensor::from_f32(x.to_f32_vector(), x.shape()), act_);
    Tensor scratch = empty({n, 256});
    ops::linear_add(
        {on_device(gr, act_), on_device(wd, act_), on_device(bd, act_), resid, scratch});
    Tensor prod = Tensor::empty({n, 256}, DType::f32), want = Tensor::empty({n, 256}, DType::f32);
    ops::reference::linear({gr, wd, bd, prod});
    ops::reference::add({x, prod, want});
    EXPECT_LE(max_abs_diff(resid, want), tolerance(2e-4f)) << "linear_add, rows " << n;
  }
  // rope_store with and without q/k norms, head_dim 64 and 80 (partner in another lane)
  for (int64_t dim : {64, 80}) {
    for (bool norms : {false, true}) {
      const int64_t b = 2, s = 3, heads = 4, kv = 2, cap = 8, start = 2;
      const Tensor q = random_tensor({b * s, heads, dim}, rng_);
      const Tensor k = random_tensor({b, s, kv, dim}, rng_),
                   v = random_tensor({b, s, kv, dim}, rng_);
      const Tensor qn = random_tensor({dim}, rng_), kn = random_tensor({dim}, rng_);
      const Tensor inv = rope_inverse_frequencies(dim);
      Tensor pos = Tensor::empty({b * s}, DType::i32);
      for (int i = 0; i < b * s; ++i) pos.data<int32_t>()[i] = 5 + 7 * i;
      Tensor qd = on_device(Tensor::from_f32(q.to_f32_vector(), q.shape()), act_),
             kc = Tensor::zeros({b, kv, cap, dim}, act_, device_);
      Tensor vc = Tensor::zeros({b, kv, cap, dim}, act_, device_);
      const Tensor kd = on_device(Tensor::from_f32(k.to_f32_vector(), k.shape()), act_);
      ops::rope_store({qd, kd, on_device(v, act_), norms ? on_device(qn, act_) : Tensor(),
                       norms ? on_device(kn, act_) : Tensor(), eps, pos.to(device_),
                       inv.to(device_), 1.0f, kc, vc, start});
      Tensor qr = Tensor::from_f32(q.to_f32_vector(), q.shape());
      Tensor kr = Tensor::from_f32(k.to_f32_vector(), {b * s, kv, dim});
      if (norms) {
        ops::reference::rms_norm(
            {qr.view({b * s * heads, dim}), qn, qr.view({b * s * heads, dim}), eps});
        ops::reference::rms_norm({kr.view({b * s * kv, dim}), kn, kr.view({b * s * kv, dim}), eps});
      }
      ops::reference::rope({qr, pos, inv, 1.0f});
      ops::reference::rope({kr, pos, inv, 1.0f});
      Tensor kw = Tensor::zeros({b, kv, cap, dim}, DType::f32),
             vw = Tensor::zeros({b, kv, cap, dim}, DType::f32);
      ops::reference::store_kv({kr.view({b, s, kv, dim}), kw, start});
      ops::reference::store_kv({v, vw, start});
      EXPECT_LE(max_abs_diff(qd, qr), tolerance(3e-5f)) << dim << " norms " << norms;
      EXPECT_LE(max_abs_diff(kc, kw), tolerance(3e-5f)) << dim << " norms " << norms;
      EXPECT_LE(max_abs_diff(vc, vw), tolerance(0.0f));
    }
  }
}

// top_k against the definition (a stable sort of the whole row): long and short rows, ties at
// and inside the cut, -inf, NaN, K from 1 to 128 (the most sampling asks a device for). Which
// entries equal to the K-th are returned is unspecified, so indices are compared where the value
// differs from the K-th value.
TEST_P(Ops, TopK) {
  if (!supports(ops::kTopK, device_.type, DType::f32, DType::f32))
    GTEST_SKIP() << "no top_k kernel";
  std::mt19937_64 gen(3);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 151936}, {4, 37}, {2, 600}}) {
    std::vector<float> x(static_cast<size_t>(rows * cols));
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (float& v : x) v = std::round(d(gen) * 8.0f) / 8.0f;  // many ties
    x[5] = -std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(cols) + 7] = std::numeric_limits<float>::quiet_NaN();
    x[static_cast<size_t>(cols) + 3] = -0.0f;
    const Tensor xt = Tensor::from_f32(x, {rows, cols});
    for (int64_t k : {int64_t{1}, int64_t{21}, int64_t{37}, int64_t{128}}) {
      if (k > cols) continue;
      Tensor values = Tensor::empty({rows, k}, DType::f32, device_);
      Tensor indices = Tensor::empty({rows, k}, DType::i64, device_);
      ops::top_k(xt.to(device_), values, indices);
      const auto v = values.to_f32_vector();
      const auto ix = indices.to_i64_vector();
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = x.data() + r * cols;
        const std::vector<int64_t> order = test::descending_order(row, cols);
        const float last = row[order[static_cast<size_t>(k - 1)]];
        for (int64_t j = 0; j < k; ++j) {
          const float want = row[order[static_cast<size_t>(j)]];
          const size_t at = static_cast<size_t>(r * k + j);
          const bool same_value = (std::isnan(want) && std::isnan(v[at])) || want == v[at];
          ASSERT_TRUE(same_value) << rows << "x" << cols << " K " << k << " row " << r << " at "
                                  << j << ": " << v[at] << " vs " << want;
          if (!(want == last) && !std::isnan(want)) {
            EXPECT_EQ(ix[at], order[static_cast<size_t>(j)])
                << "K " << k << " row " << r << " at " << j;
          }
          EXPECT_TRUE(ix[at] >= 0 && ix[at] < cols && (row[ix[at]] == v[at] || std::isnan(v[at])));
          if (j > 0 && v[at] == v[at - 1]) {
            EXPECT_LT(ix[at - 1], ix[at]) << "ties in index order";
          }
        }
      }
    }
  }
}

// repetition_penalty against its definition (each listed id's logit multiplied by the penalty
// where negative, divided otherwise): a vocabulary-sized row and short ones, padding (-1),
// out-of-range ids skipped, a zero and -inf logit, penalties above and below 1; the logits
// outside the lists untouched, bit for bit.
TEST_P(Ops, RepetitionPenalty) {
  if (!supports(ops::kRepetitionPenalty, device_.type, DType::f32, DType::f32))
    GTEST_SKIP() << "no repetition_penalty kernel";
  std::mt19937_64 gen(9);
  for (auto [rows, cols, m] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 151936, 700}, {3, 40, 12}, {1, 5, 0}}) {
    std::vector<float> x(static_cast<size_t>(rows * cols));
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (float& v : x) v = d(gen);
    x[0] = 0.0f;
    x[1] = -std::numeric_limits<float>::infinity();
    std::vector<int64_t> ids(static_cast<size_t>(rows * m), -1);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> pool(static_cast<size_t>(cols));
      std::iota(pool.begin(), pool.end(), int64_t{0});
      std::shuffle(pool.begin(), pool.end(), gen);
      const int64_t listed = std::min(cols, m * 3 / 4);  // the rest stays padding
      for (int64_t j = 0; j < listed; ++j) ids[static_cast<size_t>(r * m + j)] = pool[j];
      if (m > 2) {
        ids[static_cast<size_t>(r * m + m - 1)] = cols + 5;  // skipped
        ids[static_cast<size_t>(r * m + m - 2)] = 0;         // the zero logit (row 0) or another
      }
    }
    for (float penalty : {1.3f, 0.8f}) {
      std::vector<float> want(x);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<bool> seen(static_cast<size_t>(cols), false);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t id = ids[static_cast<size_t>(r * m + j)];
          if (id < 0 || id >= cols || seen[static_cast<size_t>(id)]) continue;
          seen[static_cast<size_t>(id)] = true;
          float& s = want[static_cast<size_t>(r * cols + id)];
          s = s < 0 ? s * penalty : s / penalty;
        }
      }
      // The lists must hold distinct ids: drop a repeated 0 the way the caller would.
      std::vector<int64_t> listed(ids);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<bool> seen(static_cast<size_t>(cols), false);
        for (int64_t j = 0; j < m; ++j) {
          int64_t& id = listed[static_cast<size_t>(r * m + j)];
          if (id >= 0 && id < cols) {
            if (seen[static_cast<size_t>(id)])
              id = -1;
            else
              seen[static_cast<size_t>(id)] = true;
          }
        }
      }
      Tensor logits = Tensor::from_f32(x, {rows, cols}).to(device_);
      ops::repetition_penalty(logits, Tensor::from_i64(listed, {rows, m}).to(device_), penalty);
      const std::vector<float> got = logits.to_f32_vector();
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
            << rows << "x" << cols << " penalty " << penalty << " at " << i << ": " << got[i]
            << " vs " << want[i];
      }
    }
  }
}

TEST_P(Ops, RepetitionPenaltyRejectsBadArguments) {
  if (!supports(ops::kRepetitionPenalty, device_.type, DType::f32, DType::f32))
    GTEST_SKIP() << "no repetition_penalty kernel";
  Tensor logits = Tensor::zeros({2, 10}, DType::f32, device_);
  const Tensor ids = Tensor::from_i64({1, 2, 3, 4}, {2, 2}).to(device_);
  EXPECT_THROW(ops::repetition_penalty(logits, ids, 0.0f), Error);
  EXPECT_THROW(ops::repetition_penalty(logits, ids, std::numeric_limits<float>::quiet_NaN()),
               Error);
  EXPECT_THROW(ops::repetition_penalty(logits, Tensor::from_i64({1, 2}, {1, 2}).to(device_), 1.2f),
               Error);
  EXPECT_THROW(ops::repetition_penalty(logits, Tensor::zeros({2, 2}, DType::i32, device_), 1.2f),
               Error);
}

// sample_candidates against the host's sample_from_candidates, which defines it: candidates from
// the CPU's top_k over bf16-rounded logits (ties at the cut), rows whose candidates are all
// one value (undecided), a row with -inf logits past its best few, every warper on and off,
// draws spread over [0, 1); the same token, or -1 exactly where the host decides nothing.
TEST_P(Ops, SampleCandidatesMatchesTheHostSampler) {
  if (!supports(ops::kSampleCandidates, device_.type, DType::f32, DType::f32))
    GTEST_SKIP() << "no sample_candidates kernel";
  std::mt19937_64 gen(21);
  const int64_t rows = 48, vocab = 3000;
  struct Warpers {
    float temperature, top_p, min_p;
  };
  int64_t decided = 0, undecided = 0;
  for (const Warpers w :
       {Warpers{1.0f, 1.0f, 0.0f}, Warpers{0.7f, 0.8f, 0.0f}, Warpers{1.3f, 0.95f, 0.05f},
        Warpers{0.7f, 1.0f, 0.1f}, Warpers{0.5f, 0.3f, 0.0f}}) {
    for (int64_t top_k : {1, 5, 20, 50}) {
      const int64_t cands = std::min<int64_t>(128, 2 * top_k + 16);
      std::vector<float> x(static_cast<size_t>(rows * vocab));
      for (int64_t r = 0; r < rows; ++r) {
        std::normal_distribution<float> d(0.0f, 0.5f + static_cast<float>(r % 4));
        for (int64_t c = 0; c < vocab; ++c) x[static_cast<size_t>(r * vocab + c)] = d(gen);
      }
      for (int64_t c = 0; c < vocab; ++c) {
        x[static_cast<size_t>(3 * vocab + c)] = 1.5f;                   // all tied: undecided
        if (c >= 4) x[static_cast<size_t>(5 * vocab + c)] = -INFINITY;  // few finite logits
      }
      const Tensor logits = Tensor::from_f32(x, {rows, vocab}).to(DType::bf16).to(DType::f32);
      Tensor values = Tensor::empty({rows, cands}, DType::f32);
      Tensor indices = Tensor::empty({rows, cands}, DType::i64);
      ops::top_k(logits, values, indices);
      std::vector<double> u(static_cast<size_t>(rows));
      std::uniform_real_distribution<double> ud(0.0, 1.0);
      for (double& v : u) v = ud(gen);
      u[0] = 0.0;
      u[1] = std::nextafter(1.0, 0.0);
      Tensor uniforms = Tensor::empty({rows}, DType::f64);
      std::copy(u.begin(), u.end(), uniforms.data<double>());
      Tensor out = Tensor::empty({rows}, DType::i64, device_);
      ops::sample_candidates(values.to(device_), indices.to(device_), uniforms.to(device_),
                             w.temperature, top_k, w.top_p, w.min_p, out);
      const std::vector<int64_t> got = out.to_i64_vector();
      // With `decided`: the same tokens, the first candidate where undecided, and the flags.
      Tensor out2 = Tensor::empty({rows}, DType::i64, device_);
      Tensor flags = Tensor::empty({rows}, DType::i64, device_);
      ops::sample_candidates(values.to(device_), indices.to(device_), uniforms.to(device_),
                             w.temperature, top_k, w.top_p, w.min_p, out2, flags);
      const std::vector<int64_t> got2 = out2.to_i64_vector(), flag = flags.to_i64_vector();
      const std::vector<float> vs = values.to_f32_vector();
      const std::vector<int64_t> is = indices.to_i64_vector();
      SamplingParams p;
      p.do_sample = true;
      p.temperature = w.temperature;
      p.top_k = top_k;
      p.top_p = w.top_p;
      p.min_p = w.min_p;
      for (int64_t r = 0; r < rows; ++r) {
        const auto at = static_cast<size_t>(r * cands), n = static_cast<size_t>(cands);
        const std::optional<int64_t> want = sample_from_candidates(
            std::span(vs).subspan(at, n), std::span(is).subspan(at, n), p, u[r]);
        ASSERT_EQ(got[static_cast<size_t>(r)], want.value_or(-1))
            << "row " << r << " top_k " << top_k << " T " << w.temperature << " top_p " << w.top_p
            << " min_p " << w.min_p << " u " << u[r];
        ASSERT_EQ(got2[static_cast<size_t>(r)], want.value_or(is[at])) << "row " << r;
        ASSERT_EQ(flag[static_cast<size_t>(r)], want ? 1 : 0) << "row " << r;
        ++(want ? decided : undecided);
      }
    }
  }
  EXPECT_GT(undecided, 0);  // the tied rows, at least
  EXPECT_GT(decided, 10 * undecided);
}

TEST_P(Ops, SampleCandidatesRejectsBadArguments) {
  if (!supports(ops::kSampleCandidates, device_.type, DType::f32, DType::f32))
    GTEST_SKIP() << "no sample_candidates kernel";
  const Tensor values = Tensor::zeros({2, 8}, DType::f32, device_);
  const Tensor indices = Tensor::zeros({2, 8}, DType::i64, device_);
  const Tensor u = Tensor::zeros({2}, DType::f64, device_);
  Tensor out = Tensor::empty({2}, DType::i64, device_);
  EXPECT_THROW(ops::sample_candidates(values, indices, u, 0.0f, 3, 1.0f, 0.0f, out), Error);
  EXPECT_THROW(ops::sample_candidates(values, indices, u, 1.0f, 8, 1.0f, 0.0f, out), Error);
  EXPECT_THROW(ops::sample_candidates(values, indices, u, 1.0f, 3, 0.0f, 0.0f, out), Error);
  EXPECT_THROW(ops::sample_candidates(values, indices, u, 1.0f, 3, 1.0f, 1.5f, out), Error);
  EXPECT_THROW(ops::sample_candidates(values, indices, Tensor::zeros({2}, DType::f32, device_),
                                      1.0f, 3, 1.0f, 0.0f, out),
               Error);
  EXPECT_THROW(ops::sample_candidates(Tensor::zeros({2, 130}, DType::f32, device_),
                                      Tensor::zeros({2, 130}, DType::i64, device_), u, 1.0f, 3,
                                      1.0f, 0.0f, out),
               Error);
}

// rope_attention (rope_store then attention as one op; OpenCL fuses it for decode rows on GPUs,
// and ctest forces the fused kernels on PoCL): one decode token per row over a cache with keys
// already in it, with and without q/k norms, GQA, a padded row, the past from the host or from
// device memory (graph replay), against the reference ops composed on the CPU. 8 heads a row
// over a few keys (CUDA: fewer blocks than SMs, but few key passes: the one-pass fused kernel)
// and over 400 (rope_store and the split kernel), and 80 (160 blocks: the one-pass kernel).
TEST_P(Ops, RopeAttentionDecode) {
  const float eps = 1e-6f;
  for (const auto& [dim, heads, past] : {std::tuple<int64_t, int64_t, int64_t>{64, 8, 37},
                                         {128, 8, 37},
                                         {64, 8, 400},
                                         {64, 80, 37}}) {
    for (bool norms : {false, true}) {
      for (bool past_on_device : {false, true}) {
        if (past_on_device && device_.type == DeviceType::cpu) continue;
        const int64_t b = 2, kv = 2, cap = past + 5;
        const Tensor q = random_tensor({b, heads, dim}, rng_);
        const Tensor k = random_tensor({b, 1, kv, dim}, rng_),
                     v = random_tensor({b, 1, kv, dim}, rng_);
        const Tensor qn = random_tensor({dim}, rng_), kn = random_tensor({dim}, rng_);
        const Tensor k0 = random_tensor({b, kv, cap, dim}, rng_, 0.3f);
        const Tensor v0 = random_tensor({b, kv, cap, dim}, rng_);
        const Tensor inv = rope_inverse_frequencies(dim);
        const Tensor pos = Tensor::from_i64({past, past + 3}, {b}).to(DType::i32);
        // Graph replay keeps a mask as wide as the cache; otherwise one column per key so far.
        const int64_t width = past_on_device ? cap : past + 1;
        const Tensor mask = decode_mask(b, width, past, [](int64_t t) { return t < 3; });
        const float scale = 1.0f / std::sqrt(static_cast<float>(dim));

        // Copies: on the CPU a tensor already in place is not copied, and the op writes q and k.
        const auto fresh = [&](const Tensor& t) {
          return on_device(Tensor::from_f32(t.to_f32_vector(), t.shape()), act_);
        };
        Tensor qd = fresh(q), kc = fresh(k0), vc = fresh(v0);
        Tensor out = empty({b, 1, heads, dim});
        const Tensor past_dev =
            past_on_device ? Tensor::from_i64({past}, {1}).to(DType::i32).to(device_) : Tensor();
        ops::rope_attention({{qd, fresh(k), fresh(v), norms ? on_device(qn, act_) : Tensor(),
                              norms ? on_device(kn, act_) : Tensor(), eps, pos.to(device_),
                              inv.to(device_), 1.0f, kc, vc, past, past_dev},
                             {qd.view({b, 1, heads, dim}), kc, vc, mask.to(device_), out, past,
                              scale, ops::AttentionImpl::sdpa, past_dev}});

        Tensor qr = Tensor::from_f32(q.to_f32_vector(), q.shape());
        Tensor kr = Tensor::from_f32(k.to_f32_vector(), {b, kv, dim});
        if (norms) {
          ops::reference::rms_norm({qr.view({b * heads, dim}), qn, qr.view({b * heads, dim}), eps});
          ops::reference::rms_norm({kr.view({b * kv, dim}), kn, kr.view({b * kv, dim}), eps});
        }
        ops::reference::rope({qr, pos, inv, 1.0f});
        ops::reference::rope({kr, pos, inv, 1.0f});
        Tensor kw = Tensor::from_f32(k0.to_f32_vector(), k0.shape());
        Tensor vw = Tensor::from_f32(v0.to_f32_vector(), v0.shape());
        ops::reference::store_kv({kr.view({b, 1, kv, dim}), kw, past});
        ops::reference::store_kv({v, vw, past});
        Tensor want = Tensor::empty({b, 1, heads, dim}, DType::f32);
        ops::reference::attention({qr.view({b, 1, heads, dim}), kw, vw,
                                   mask.narrow(1, 0, past + 1).contiguous(), want, past, scale,
                                   ops::AttentionImpl::eager});
        const std::string what = "dim " + std::to_string(dim) + " heads " + std::to_string(heads) +
                                 " past " + std::to_string(past) + (norms ? " norms" : "") +
                                 (past_on_device ? " past on device" : "");
        EXPECT_LE(max_abs_diff(out, want), tolerance(5e-5f)) << what;
        EXPECT_LE(max_abs_diff(kc, kw), tolerance(3e-5f)) << what;
        EXPECT_LE(max_abs_diff(vc, vw), tolerance(0.0f)) << what;
      }
    }
  }
}

// CUDA's decode attention copies the cached rows and mask words into shared memory before its
// wait (the one-pass kernel with few items, the split kernel); reading them from memory instead
// (ANVIL_CUDA_NO_KV_STAGE=1) must give the same bits, with and without a sliding window.
TEST_P(Ops, DecodeAttentionStagedRowsAreTheUnstagedBits) {
  if (device_.type != DeviceType::cuda) GTEST_SKIP() << "CUDA's staging; " << device_.str();
  for (const auto& [dim, heads, past, window] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{64, 8, 37, 0},
        {128, 8, 90, 0},
        {64, 8, 400, 0},
        {64, 8, 1500, 0},
        {64, 8, 400, 100},
        {32, 4, 60, 17}}) {
    for (bool past_on_device : {false, true}) {
      const int64_t b = 2, kv = 2, cap = past + 5;
      const Tensor q = random_tensor({b, heads, dim}, rng_);
      const Tensor k = random_tensor({b, 1, kv, dim}, rng_),
                   v = random_tensor({b, 1, kv, dim}, rng_);
      const Tensor k0 = random_tensor({b, kv, cap, dim}, rng_, 0.3f);
      const Tensor v0 = random_tensor({b, kv, cap, dim}, rng_);
      const Tensor inv = rope_inverse_frequencies(dim);
      const Tensor pos = Tensor::from_i64({past, past + 3}, {b}).to(DType::i32);
      const int64_t width = past_on_device ? cap : past + 1;
      const Tensor mask = decode_mask(b, width, past, [](int64_t t) { return t % 7 == 3; });
      const auto fresh = [&](const Tensor& t) {
        return on_device(Tensor::from_f32(t.to_f32_vector(), t.shape()), act_);
      };
      const auto run = [&](bool staged, Tensor& kc, Tensor& vc) {
        if (staged) {
          ::unsetenv("ANVIL_CUDA_NO_KV_STAGE");
        } else {
          ::setenv("ANVIL_CUDA_NO_KV_STAGE", "1", 1);
        }
        Tensor qd = fresh(q);
        kc = fresh(k0);
        vc = fresh(v0);
        Tensor out = empty({b, 1, heads, dim});
        const Tensor past_dev =
            past_on_device ? Tensor::from_i64({past}, {1}).to(DType::i32).to(device_) : Tensor();
        ops::AttentionArgs att{qd.view({b, 1, heads, dim}),
                               kc,
                               vc,
                               mask.to(device_),
                               out,
                               past,
                               1.0f / std::sqrt(static_cast<float>(dim)),
                               ops::AttentionImpl::sdpa,
                               past_dev};
        att.window = window;
        ops::rope_attention({{qd, fresh(k), fresh(v), Tensor(), Tensor(), 1e-6f, pos.to(device_),
                              inv.to(device_), 1.0f, kc, vc, past, past_dev},
                             att});
        ::unsetenv("ANVIL_CUDA_NO_KV_STAGE");
        return out;
      };
      Tensor kc1, vc1, kc2, vc2;
      const Tensor staged = run(true, kc1, vc1), unstaged = run(false, kc2, vc2);
      const std::string what = "dim " + std::to_string(dim) + " heads " + std::to_string(heads) +
                               " past " + std::to_string(past) + " window " +
                               std::to_string(window) + (past_on_device ? " past on device" : "");
      EXPECT_EQ(max_abs_diff(staged, unstaged), 0.0) << what;
      EXPECT_EQ(max_abs_diff(kc1, kc2), 0.0) << what;
      EXPECT_EQ(max_abs_diff(vc1, vc2), 0.0) << what;
    }
  }
}

// linear_add (the residual added by the product's own tasks on the CPU) gives exactly what the
// product followed by the add gives, for every weight type and for the decode and prefill paths.
TEST_P(Ops, LinearAddMatchesProductThenAdd) {
  if (device_.type != DeviceType::cpu) GTEST_SKIP() << "checks the CPU's fused epilogue";
  for (DType w : {DType::f32, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1}) {
    if (!has(ops::kLinear, w)) continue;
    for (int64_t n : {1, 3, 9}) {
      const Tensor x = random_tensor({n, 256}, rng_), bias = random_tensor({72}, rng_);
      const Tensor weight = is_quantized(w) ? random_blocks(w, 72, 256, rng_)
                                            : random_tensor({72, 256}, rng_, 0.1f).to(w);
      const Tensor resid0 = random_tensor({n, 72}, rng_);
      Tensor resid = on_device(Tensor::from_f32(resid0.to_f32_vector(), resid0.shape()), act_);
      Tensor scratch = empty({n, 72});
      ops::linear_add(
          {on_device(x, act_), weight.to(device_), on_device(bias, act_), resid, scratch});
      Tensor want = on_device(Tensor::from_f32(resid0.to_f32_vector(), resid0.shape()), act_);
      Tensor prod = empty({n, 72});
      ops::linear(on_device(x, act_), weight.to(device_), on_device(bias, act_), prod);
      ops::add(want, prod, want);
      EXPECT_LE(max_abs_diff(resid, want), 0.0f) << dtype_name(w) << " rows " << n;
    }
  }
}

// Fused products whose norm weight and biases are stored in the weights' half-precision type
// beside float32 activations (OpenCL with bf16/f16 weights, the CPU with bf16): the same values
// as the ops one by one, for decode row counts and a prompt's (23 rows: the CPU's grouped bf16
// prefill, on AMX tiles or pair products, over 72- and 70-row products: a whole 64-row panel and
// a partial one), and a k that is not a multiple of 4.
TEST_P(Ops, FusedProductsWithHalfPrecisionWeightsMatchSeparateOnes) {
  for (DType w : {DType::bf16, DType::f16}) {
    if (!has(ops::kLinearGroup, w) || !has(ops::kLinearSwiglu, w)) continue;
    for (int64_t n : {1, 3, 23}) {
      const int64_t k = 70;
      const Tensor x = on_device(random_tensor({n, k}, rng_), act_);
      const Tensor nw = random_tensor({k}, rng_).to(w).to(device_);
      const Tensor wq = random_tensor({72, k}, rng_, 0.1f).to(w).to(device_);
      const Tensor wk = random_tensor({9, k}, rng_, 0.1f).to(w).to(device_);
      const Tensor bq = random_tensor({72}, rng_).to(w).to(device_);
      Tensor q = empty({n, 72}), kk = empty({n, 9}), normed = empty({n, k});
      ops::linear_group({x, {wq, wk}, {bq, Tensor()}, {q, kk}, 2, nw, 1e-6f, normed});
      Tensor ref_normed = empty({n, k}), q1 = empty({n, 72}), k1 = empty({n, 9});
      ops::rms_norm(x, nw, 1e-6f, ref_normed);
      ops::linear(ref_normed, wq, bq, q1);
      ops::linear(ref_normed, wk, Tensor(), k1);
      EXPECT_LE(max_abs_diff(q, q1), 1e-5f) << dtype_name(w) << " rows " << n;
      EXPECT_LE(max_abs_diff(kk, k1), 1e-5f) << dtype_name(w) << " rows " << n;

      const Tensor g = random_tensor({70, k}, rng_, 0.1f).to(w).to(device_);
      const Tensor u = random_tensor({70, k}, rng_, 0.1f).to(w).to(device_);
      const Tensor gb = random_tensor({70}, rng_).to(w).to(device_);
      Tensor h = empty({n, 70}), scratch = empty({n, 70});
      ops::linear_swiglu({x, g, gb, u, Tensor(), h, scratch, nw, 1e-6f, normed});
      Tensor g1 = empty({n, 70}), u1 = empty({n, 70});
      ops::linear(ref_normed, g, gb, g1);
      ops::linear(ref_normed, u, Tensor(), u1);
      ops::swiglu(g1, u1, g1);
      EXPECT_LE(max_abs_diff(h, g1), 1e-5f) << dtype_name(w) << " rows " << n;
    }
  }
}

// The grouped products over quantized weights (one activation quantization, one parallel
// region on the CPU) give exactly what the products one by one give.
// Decode's few rows (1, 3) and a prompt's (23: the prefill tiles of 8, 8, 4, 2 and 1 rows, or 6,
// 6, 6, 4 and 1 where they take four groups), every repacked type; 64-row products make two
// four-group spans, 24-row ones an odd number of 8-row groups.
TEST_P(Ops, GroupedQuantizedProductsMatchSeparateOnes) {
  for (DType w : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q4_k,
                  DType::q5_k, DType::q6_k}) {
    if (!has(ops::kLinear, w)) continue;
    for (int64_t n : {1, 3, 23}) {
      const Tensor x = random_tensor({n, 256}, rng_), nw = random_tensor({256}, rng_);
      Tensor ws[3] = {random_blocks(w, 64, 256, rng_), random_blocks(w, 24, 256, rng_),
                      random_blocks(w, 24, 256, rng_)};
      const Tensor bq = random_tensor({64}, rng_);
      Tensor outs[3] = {empty({n, 64}), empty({n, 24}), empty({n, 24})};
      Tensor normed = empty({n, 256});
      ops::LinearGroupArgs g{on_device(x, act_), {}, {}, {}, 3, on_device(nw, act_), 1e-6f, normed};
      for (int i = 0; i < 3; ++i) {
        g.weights[i] = ws[i].to(device_);
        g.outs[i] = outs[i];
      }
      g.biases[0] = on_device(bq, act_);
      ops::linear_group(g);
      Tensor ref_normed = empty({n, 256});
      ops::rms_norm(on_device(x, act_), on_device(nw, act_), 1e-6f, ref_normed);
      for (int i = 0; i < 3; ++i) {
        Tensor one = empty({n, ws[i].size(0)});
        ops::linear(ref_normed, ws[i].to(device_), i == 0 ? on_device(bq, act_) : Tensor(), one);
        EXPECT_LE(max_abs_diff(outs[i], one), 1e-6f)
            << dtype_name(w) << " product " << i << ", " << n << " rows";
      }
      Tensor h = empty({n, 64}), up = empty({n, 64});
      ops::linear_swiglu({on_device(x, act_), ws[0].to(device_), Tensor(),
                          random_blocks(w, 64, 256, rng_).to(device_), Tensor(), h, up,
                          on_device(nw, act_), 1e-6f, normed});
      Tensor gate1 = empty({n, 64});
      ops::linear(ref_normed, ws[0].to(device_), Tensor(), gate1);
      ops::swiglu(gate1, up, gate1);  // up holds the up product where the op was grouped
      EXPECT_LE(max_abs_diff(h, gate1), 1e-6f) << dtype_name(w) << ", " << n << " rows";
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
