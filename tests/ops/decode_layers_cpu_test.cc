// The CPU's decode_layers kernel (a one-token step's layers as one team region) against the
// composed ops from identical inputs: the residual stream and every layer's KV cache after the
// step, for the int8 kernels' block types and float32 / bf16 / f16 weights (alone and mixed with
// blocks in one layer), f32 and f16 caches, biases, Qwen3's q/k norms, query groups of 1 to 6
// heads, an empty past and pasts split into several key ranges, windows, GeGLU and per-layer
// RoPE, OLMo 2's layers (no input norms, whole-projection q/k norms), Granite's residual
// multiplier.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "backends/cpu/cpu_isa.h"
#include "core/kernels.h"
#include "decode_args.h"
#include "ops/ops.h"
#include "tensor_compare.h"

namespace anvil {
namespace {

using test::clone;
using test::max_abs;
using test::max_abs_diff;

struct Stack {
  int64_t hidden, inter, heads, kv_heads, dim, layers, past, cap;
  bool biases, qk_norm;
  int64_t window = 0;  // the last layer's sliding window (0: none)
  // Gemma's GeGLU, Gemma 2's score softcapping (a cap of 1.5 that bites), Gemma 2 / 3's output
  // norms (both on every layer but the last, which has the MLP's only), and the first layer
  // rotating with frequencies of its own (Gemma 3's sliding layers' rope_local_base_freq).
  bool gemma = false;
  // OLMo 2: no input or post-attention norms, q and k RMS-normalised over whole projections,
  // both output norms on every layer.
  bool olmo = false;
  // Granite's residual multiplier on every block's output (with OLMo's output norms too).
  float residual_scale = 1.0f;
};

class CpuDecodeLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu::isa() < cpu::Isa::avx2) {
      GTEST_SKIP() << "the CPU team kernel needs AVX2 or AVX-512 (this CPU runs the composed ops)";
    }
  }
  Tensor normal(const Shape& shape, float scale) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (float& x : v) x = dist(rng_);
    return Tensor::from_f32(v, shape);
  }
  // Random blocks with sane f16 scales (d, and the minimum's scale where the type has one; the
  // 256-value types' scales are small so their six-bit sub-scales keep the sums in range).
  Tensor blocks(DType type, int64_t rows, int64_t k) {
    Tensor t = Tensor::empty({rows, k}, type);
    auto* bytes = static_cast<uint8_t*>(t.raw());
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng_));
    const int64_t elems = dtype_block_elems(type);
    const size_t block = dtype_nbytes(type, elems);
    const float scale = elems == 256 ? 0.0002f : 0.002f;
    std::uniform_real_distribution<float> d(scale, 5 * scale), m(-25 * scale, 0.0f);
    size_t d_at = 0, m_at = 0;  // m_at 0: no minimum
    if (type == DType::q4_1 || type == DType::q5_1 || type == DType::q4_k || type == DType::q5_k) {
      m_at = 2;
    }
    if (type == DType::q6_k) d_at = 208;
    if (type == DType::q3_k) d_at = 108;
    if (type == DType::q2_k) d_at = 80, m_at = 82;
    for (size_t at = 0; at < t.nbytes(); at += block) {
      const uint16_t dh = f32_to_f16(d(rng_));
      std::memcpy(bytes + at + d_at, &dh, 2);
      if (m_at) {
        const uint16_t mh = f32_to_f16(m(rng_));
        std::memcpy(bytes + at + m_at, &mh, 2);
      }
    }
    return t;
  }
  // Weights of any type the team kernel takes: blocks, or normal values of float32 / bf16 / f16.
  Tensor weights(DType type, int64_t rows, int64_t k) {
    if (is_quantized(type)) return blocks(type, rows, k);
    return normal({rows, k}, 1.0f / std::sqrt(static_cast<float>(k))).to(type);
  }
  std::mt19937 rng_{11};
};

TEST_F(CpuDecodeLayers, TeamKernelMatchesTheComposedOps) {
  const Stack stacks[] = {
      {64, 128, 4, 2, 16, 2, 37, 64, true, true},     // q/k norms and biases, one part
      {96, 192, 6, 1, 32, 2, 0, 8, false, false},     // an empty past
      {192, 96, 3, 3, 64, 1, 200, 256, true, false},  // key ranges merged from two parts
      {64, 96, 4, 2, 32, 2, 150, 160, false, true},   // two parts, q/k norms, two q per kv head
      {256, 512, 4, 2, 64, 1, 20, 32, true, true},    // widths for the 256-value types
      // A window on the last layer only (Qwen2's max_window_layers): its keys split over fewer
      // parts than the first layer's, then a window of one key.
      {192, 96, 3, 3, 64, 2, 200, 256, true, false, 37},
      {64, 96, 4, 2, 32, 2, 150, 160, false, true, 1},
      {64, 128, 4, 2, 16, 2, 37, 64, false, true, 9, true},
      {96, 192, 6, 1, 32, 3, 0, 8, true, false, 0, true},
      {64, 128, 4, 2, 16, 2, 37, 64, false, false, 0, false, true},
      {192, 96, 3, 3, 64, 2, 200, 256, true, false, 37, false, true},
      {64, 128, 4, 2, 16, 2, 37, 64, true, false, 0, false, false, 0.22f},
      {64, 128, 4, 2, 16, 2, 37, 64, false, false, 0, false, true, 0.5f},
  };
  for (const Stack& c : stacks) {
    const bool super = c.hidden % 256 == 0 && c.inter % 256 == 0 && c.heads * c.dim % 256 == 0;
    std::vector<DType> types = {DType::q8_0,   DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1,
                                DType::iq4_nl, DType::f32,  DType::bf16, DType::f16};
    if (super) {
      types = {DType::q4_0, DType::q2_k,   DType::q3_k, DType::q4_k, DType::q5_k,
               DType::q6_k, DType::iq4_xs, DType::bf16, DType::f16};
    }
    // With dense weights, o and down (the residual adds) and k take Q8_0 blocks in a second
    // round: a layer's products of both kinds, each phase's row made in every form it needs.
    std::vector<std::pair<DType, bool>> runs;
    for (DType wt : types) {
      runs.push_back({wt, false});
      if (!is_quantized(wt)) runs.push_back({wt, true});
    }
    for (const auto& [wt, mixed] : runs) {
      const DType other = mixed ? DType::q8_0 : wt;
      for (DType cache : {DType::f32, DType::f16}) {
        const std::string what = std::string(dtype_name(wt)) + (mixed ? " with q8_0" : "") +
                                 " cache " + std::string(dtype_name(cache)) + " hidden " +
                                 std::to_string(c.hidden) + " heads " + std::to_string(c.heads) +
                                 "/" + std::to_string(c.kv_heads) + " past " +
                                 std::to_string(c.past) + " window " + std::to_string(c.window);
        const int64_t nq = c.heads * c.dim, nkv = c.kv_heads * c.dim;
        std::vector<ops::DecoderLayerTensors> team_layers, composed_layers;
        for (int64_t l = 0; l < c.layers; ++l) {
          ops::DecoderLayerTensors L;
          if (!c.olmo) {
            L.input_norm = normal({c.hidden}, 1.0f);
            L.post_norm = normal({c.hidden}, 1.0f);
          } else {
            L.q_full_norm = normal({nq}, 1.0f);
            L.k_full_norm = normal({nkv}, 1.0f);
            L.attn_out_norm = normal({c.hidden}, 1.0f);
            L.mlp_out_norm = normal({c.hidden}, 1.0f);
          }
          L.q = weights(wt, nq, c.hidden);
          L.k = weights(other, nkv, c.hidden);
          L.v = weights(wt, nkv, c.hidden);
          L.o = weights(other, c.hidden, nq);
          L.gate = weights(wt, c.inter, c.hidden);
          L.up = weights(wt, c.inter, c.hidden);
          L.down = weights(other, c.hidden, c.inter);
          if (c.biases) {
            L.q_bias = normal({nq}, 0.1f);
            L.k_bias = normal({nkv}, 0.1f);
            L.v_bias = normal({nkv}, 0.1f);
            L.o_bias = normal({c.hidden}, 0.1f);
            L.gate_bias = normal({c.inter}, 0.1f);
            L.up_bias = normal({c.inter}, 0.1f);
            L.down_bias = normal({c.hidden}, 0.1f);
          }
          if (c.qk_norm) {
            L.q_norm = normal({c.dim}, 1.0f);
            L.k_norm = normal({c.dim}, 1.0f);
          }
          L.k_cache = normal({1, c.kv_heads, c.cap, c.dim}, 1.0f).to(cache);
          L.v_cache = normal({1, c.kv_heads, c.cap, c.dim}, 1.0f).to(cache);
          L.window = l == c.layers - 1 ? c.window : 0;
          if (c.gemma) {
            if (l < c.layers - 1) L.attn_out_norm = normal({c.hidden}, 1.0f);
            L.mlp_out_norm = normal({c.hidden}, 1.0f);
          }
          if (c.gemma && l == 0) {
            std::vector<float> inv(static_cast<size_t>(c.dim / 2));
            for (size_t i = 0; i < inv.size(); ++i) {
              inv[i] = std::pow(1000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(c.dim));
            }
            L.inv_freq = Tensor::from_f32(inv, {c.dim / 2});
            L.rope_scaling = 0.9f;
          }
          ops::DecoderLayerTensors C = L;
          C.k_cache = clone(L.k_cache);
          C.v_cache = clone(L.v_cache);
          team_layers.push_back(L);
          composed_layers.push_back(C);
        }
        // Every 5th past key masked, and a run of them.
        Tensor mask = Tensor::empty({1, c.past + 1}, DType::i32);
        for (int64_t t = 0; t <= c.past; ++t) {
          const bool masked = t < c.past && (t % 5 == 3 || (t >= 10 && t < 30));
          mask.data<int32_t>()[t] = masked ? 0 : 1;
        }
        const Tensor x = normal({1, c.hidden}, 1.0f);
        Tensor pos = Tensor::empty({1}, DType::i32);
        pos.data<int32_t>()[0] = static_cast<int32_t>(c.past);
        const test::DecodeStep step{c.heads,
                                    c.kv_heads,
                                    c.dim,
                                    c.past,
                                    1.0f / std::sqrt(static_cast<float>(c.dim)),
                                    pos,
                                    test::rope_inv_freq(c.dim),
                                    mask,
                                    Tensor()};
        const auto args = [&](const std::vector<ops::DecoderLayerTensors>& layers,
                              const Tensor& xs) {
          ops::DecodeLayersArgs d = test::decode_args(xs, layers, step, DType::f32);
          if (c.gemma) {
            d.act = ops::GluActivation::gelu_tanh;
            d.softcap = 1.5f;
          }
          d.residual_scale = c.residual_scale;
          return d;
        };
        Tensor team_x = clone(x), composed_x = clone(x);
        ::setenv("ANVIL_CPU_DECODE_LAYERS", "require", 1);  // a fallback is an error
        EXPECT_NO_THROW(ops::decode_layers(args(team_layers, team_x))) << what;
        ::unsetenv("ANVIL_CPU_DECODE_LAYERS");
        ops::composed_decode_layers(args(composed_layers, composed_x));
        // The same kernels over the same quantized activations: equal up to SwiGLU's vector
        // exp on other boundaries.
        const float scale = std::max(1.0f, max_abs(composed_x));
        EXPECT_LE(max_abs_diff(team_x, composed_x), 1e-4f * scale) << what;
        for (int64_t l = 0; l < c.layers; ++l) {
          const auto& T = team_layers[static_cast<size_t>(l)];
          const auto& C = composed_layers[static_cast<size_t>(l)];
          const float ks = std::max(1.0f, max_abs(C.k_cache));
          EXPECT_LE(max_abs_diff(T.k_cache, C.k_cache), 1e-4f * ks) << what << " layer " << l;
          EXPECT_LE(max_abs_diff(T.v_cache, C.v_cache), 1e-4f * ks) << what << " layer " << l;
        }
      }
    }
  }
}

// Stacks outside the path run composed, and "require" says why.
TEST_F(CpuDecodeLayers, OtherStacksRunComposedOrSayWhy) {
  const int64_t hidden = 64, inter = 96, heads = 2, kv = 1, dim = 32;
  ops::DecoderLayerTensors L;
  L.input_norm = normal({hidden}, 1.0f);
  L.post_norm = normal({hidden}, 1.0f);
  L.q = blocks(DType::q8_0, heads * dim, hidden);
  L.k = blocks(DType::q8_0, kv * dim, hidden);
  L.v = blocks(DType::q8_0, kv * dim, hidden);
  L.o = blocks(DType::q8_0, hidden, heads * dim);
  L.gate = blocks(DType::q8_0, inter, hidden);
  L.up = blocks(DType::q8_0, inter, hidden);
  L.down = blocks(DType::q8_0, hidden, inter);
  L.down_bias = normal({hidden}, 0.1f).to(DType::bf16);  // a bf16 bias: outside the path
  L.k_cache = Tensor::zeros({1, kv, 8, dim}, DType::f16);
  L.v_cache = Tensor::zeros({1, kv, 8, dim}, DType::f16);
  const std::vector<ops::DecoderLayerTensors> layers = {L};
  Tensor mask = Tensor::empty({1, 1}, DType::i32);
  mask.data<int32_t>()[0] = 1;
  const Tensor x = normal({1, hidden}, 1.0f);
  const test::DecodeStep step{
      heads, kv,      dim, 0, 0.2f, Tensor::zeros({1}, DType::i32), test::rope_inv_freq(dim),
      mask,  Tensor()};
  const ops::DecodeLayersArgs a = test::decode_args(x, layers, step, DType::f32);
  ::setenv("ANVIL_CPU_DECODE_LAYERS", "require", 1);
  try {
    ops::decode_layers(a);
    ADD_FAILURE() << "a bf16 bias took the team kernel";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the team kernel's path"), std::string::npos)
        << e.what();
  }
  ::unsetenv("ANVIL_CPU_DECODE_LAYERS");
  EXPECT_NO_THROW(ops::decode_layers(a));  // composed

  // An output norm of another dtype is outside the path too.
  std::vector<ops::DecoderLayerTensors> normed = {L};
  normed[0].down_bias = Tensor();
  normed[0].attn_out_norm = normal({hidden}, 1.0f).to(DType::bf16);
  const ops::DecodeLayersArgs b = test::decode_args(x, normed, step, DType::f32);
  ::setenv("ANVIL_CPU_DECODE_LAYERS", "require", 1);
  EXPECT_THROW(ops::decode_layers(b), Error);
  ::unsetenv("ANVIL_CPU_DECODE_LAYERS");
}

}  // namespace
}  // namespace anvil
