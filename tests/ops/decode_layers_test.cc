// decode_layers on a device whose kernel runs a decoder's whole stack in one launch, against the
// same device's composed ops (the op's definition) from identical inputs: the residual stream
// and every layer's KV cache after the step. Shapes cover biases, Qwen3's q/k norms, grouped
// kv heads, head sizes 32-256 (powers of two and not: 80, 96), an empty past, masked keys
// (whole splits of them), a past longer than one round of the kernel's scores, the past read
// from device memory, blocks with few but long rows, and few blocks with many rows (chunks of
// up to 60 rows); each in both of the kernel's ways of handing a phase's outputs to the next
// (grid barriers, flagged words); Granite's residual multiplier and RoPE per layer (a NoPE
// layer, a layer's own table); Gemma's layers (heads of 256, GeGLU, softcapped scores, output
// norms); OLMo 2's (no input norms, whole-projection q/k norms).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "anvil/backend.h"
#include "anvil/error.h"
#include "core/kernels.h"
#include "decode_args.h"
#include "ops/ops.h"
#include "tensor_compare.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::clone;
using test::max_abs;
using test::max_abs_diff;

struct StackShape {
  int64_t hidden, inter, heads, kv_heads, dim, layers, past, cap;
  bool biases, qk_norm, past_on_device;
  const char* splits;           // ANVIL_CUDA_DECODE_SPLITS, or nullptr for the kernel's choice
  const char* split_keys;       // ANVIL_CUDA_DECODE_SPLIT_KEYS, or nullptr
  const char* blocks;           // ANVIL_CUDA_DECODE_BLOCKS, or nullptr for one per SM
  const char* items;            // ANVIL_CUDA_DECODE_ITEMS, or nullptr for the default placement
  int64_t window = 0;           // the last layer's sliding window (0: none)
  float residual_scale = 1.0f;  // Granite's residual multiplier
  // Layer 0 without RoPE (SmolLM3's NoPE layers: frequencies all 0), layer 1 with its own
  // frequencies and scaling (Gemma 3's sliding layers' table); the rest the model's.
  bool layer_rope = false;
  // Gemma: GeGLU, softcapped scores, and the attention's and MLP's outputs through norms of
  // their own before the residual add.
  bool gelu = false;
  float softcap = 0.0f;
  bool out_norms = false;
  // OLMo 2: no input norms, q/k norms over the whole projection (with output norms).
  bool olmo2 = false;
};

class DecodeLayers : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
      GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
    }
    if (!supports(ops::kDecodeLayers, GetParam(), DType::bf16, DType::bf16)) {
      GTEST_SKIP() << device_type_name(GetParam())
                   << " has no one-launch decode_layers kernel (its ops run composed)";
    }
    device_ = Device::parse(test::device_name(std::string(device_type_name(GetParam()))));
  }

  Tensor random(const Shape& shape, float scale, DType dtype = DType::bf16) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (float& x : v) x = dist(rng_);
    return Tensor::from_f32(v, shape).to(dtype).to(device_);
  }

  Device device_;
  std::mt19937 rng_{77};
};

TEST_P(DecodeLayers, OneLaunchMatchesTheComposedOps) {
  const StackShape shapes[] = {
      // Splits of 4 keys: some wholly masked, combined by the last split to finish.
      {128, 320, 4, 2, 32, 3, 37, 64, true, false, false, nullptr, "4", nullptr, nullptr},
      {256, 512, 8, 4, 128, 2, 300, 512, false, true, true, nullptr, nullptr, nullptr, nullptr},
      {64, 128, 2, 1, 64, 2, 0, 16, false, true, true, nullptr, nullptr, nullptr, nullptr},
      // 151 keys at head size 64 (the default split of one round is 120 keys): one split of two
      // rounds, written without a combine.
      {256, 512, 4, 2, 64, 2, 150, 256, true, false, true, nullptr, nullptr, nullptr, nullptr},
      // One split over 2,501 keys: many rounds of the kernel's keys.
      {896, 4864, 14, 2, 64, 1, 2500, 2600, true, false, true, "1", nullptr, nullptr, nullptr},
      // Few rows per block (down_proj's 2 or 4) of 2,048 values: chunks shared out in part rows.
      {512, 2048, 8, 2, 64, 2, 50, 64, true, false, true, nullptr, nullptr, nullptr, nullptr},
      // Eight blocks (ANVIL_CUDA_DECODE_BLOCKS, the count then started over for the grid): chunks
      // of up to 60 rows, several per warp; more items than half the grid, so they run on every
      // block, the q/k/v rows too.
      {256, 1024, 8, 2, 64, 2, 40, 64, true, false, false, nullptr, nullptr, "8", nullptr},
      // The other placements of the attention items: on the first blocks, and on the last ones
      // with the q/k/v rows on every block (splits of 8 keys: several items a head).
      {128, 320, 4, 2, 32, 2, 37, 64, true, true, false, nullptr, "8", nullptr, "0"},
      {128, 320, 4, 2, 32, 2, 37, 64, true, true, false, nullptr, "8", nullptr, "1"},
      // A sliding window on the last layer: over splits of 4 keys (some wholly before the
      // window), over one split of many rounds, and of one key (every other split empty).
      {128, 320, 4, 2, 32, 3, 37, 64, true, false, false, nullptr, "4", nullptr, nullptr, 9},
      {896, 4864, 14, 2, 64, 1, 2500, 2600, true, false, true, "1", nullptr, nullptr, nullptr, 700},
      {256, 512, 8, 4, 128, 2, 300, 512, false, true, true, nullptr, "8", nullptr, nullptr, 1},
      // Granite's residual multiplier, and RoPE per layer (none, then a table of its own).
      {128, 320, 4, 2, 32, 3, 37, 64, true, true, false, nullptr, "4", nullptr, nullptr, 0, 0.22f,
       true},
      {896, 4864, 14, 2, 64, 2, 300, 512, true, false, true, nullptr, nullptr, nullptr, nullptr, 0,
       0.5f, true},
      // Gemma's layers (the wide kernel: heads of 256, output norms): Gemma 3's shape (q/k
      // norms, RoPE per layer, a window), Gemma 2's (softcapped scores, splits of 8 keys),
      // Gemma 1's (heads of 256, no output norms), output norms over heads of 64.
      {1152,    6912,    4,       1,       256, 3,    300,  512,  false, true, true,
       nullptr, nullptr, nullptr, nullptr, 9,   1.0f, true, true, 0.0f,  true},
      {512,     1024, 4,       2,       256, 2,    37,    64,   false, false, false,
       nullptr, "8",  nullptr, nullptr, 0,   1.0f, false, true, 2.0f,  true},
      {256,     512,     2,       1,       256, 2,    37,    64,   true, false, false,
       nullptr, nullptr, nullptr, nullptr, 0,   1.0f, false, true, 0.0f, false},
      {256,     512,     8,       4,       64, 2,    40,    64,    true, false, false,
       nullptr, nullptr, nullptr, nullptr, 0,  1.0f, false, false, 0.0f, true},
      // Heads whose chunks are not a power of two (a key's last threads idle): Phi-3's 96
      // values (no grouping, a window), 80 over many rounds of one split.
      {384, 1024, 4, 4, 96, 2, 300, 512, false, false, true, nullptr, nullptr, nullptr, nullptr,
       33},
      {320, 640, 4, 2, 80, 2, 700, 800, true, true, false, "1", nullptr, nullptr, nullptr},
      // OLMo 2's layers: its 1B's heads (no grouping), and grouped heads over splits of 8 keys.
      {512,     1024,    4,       4,       128, 2,    300,   512,   false, false, true,
       nullptr, nullptr, nullptr, nullptr, 0,   1.0f, false, false, 0.0f,  true,  true},
      {256,     512, 8,       2,       64, 3,    37,    64,    false, false, false,
       nullptr, "8", nullptr, nullptr, 0,  1.0f, false, false, 0.0f,  true,  true},
  };
  // Each shape in bf16 then f16: the two kernels ask for the same shared memory, which each must
  // be granted on its own. The caller's ANVIL_CUDA_DECODE_SYNC is restored afterwards.
  const char* caller_sync = std::getenv("ANVIL_CUDA_DECODE_SYNC");
  const std::string restore = caller_sync ? caller_sync : "";
  for (const StackShape& c : shapes) {
    for (const char* sync : {"barrier", "flags"}) {
      for (DType dt : {DType::bf16, DType::f16}) {
        const std::string what =
            std::string(sync) + " " + std::string(dtype_name(dt)) + " hidden " +
            std::to_string(c.hidden) + " heads " + std::to_string(c.heads) + "/" +
            std::to_string(c.kv_heads) + " dim " + std::to_string(c.dim) + " past " +
            std::to_string(c.past) + " window " + std::to_string(c.window) + " residual scale " +
            std::to_string(c.residual_scale) + (c.layer_rope ? " RoPE per layer" : "") +
            (c.gelu ? " GeGLU" : "") + (c.softcap > 0 ? " softcap" : "") +
            (c.out_norms ? " output norms" : "") + (c.olmo2 ? " OLMo 2" : "");
        const float wscale = 1.0f / std::sqrt(static_cast<float>(c.hidden));
        const int64_t nq = c.heads * c.dim, nkv = c.kv_heads * c.dim;
        std::vector<ops::DecoderLayerTensors> fused_layers, composed_layers;
        for (int64_t l = 0; l < c.layers; ++l) {
          ops::DecoderLayerTensors L;
          L.input_norm = random({c.hidden}, 1.0f, dt);
          L.post_norm = random({c.hidden}, 1.0f, dt);
          L.q = random({nq, c.hidden}, wscale, dt);
          L.k = random({nkv, c.hidden}, wscale, dt);
          L.v = random({nkv, c.hidden}, wscale, dt);
          L.o = random({c.hidden, nq}, 1.0f / std::sqrt(static_cast<float>(nq)), dt);
          L.gate = random({c.inter, c.hidden}, wscale, dt);
          L.up = random({c.inter, c.hidden}, wscale, dt);
          L.down = random({c.hidden, c.inter}, 1.0f / std::sqrt(static_cast<float>(c.inter)), dt);
          if (c.biases) {
            L.q_bias = random({nq}, 0.1f, dt);
            L.k_bias = random({nkv}, 0.1f, dt);
            L.v_bias = random({nkv}, 0.1f, dt);
            L.o_bias = random({c.hidden}, 0.1f, dt);
            L.gate_bias = random({c.inter}, 0.1f, dt);
            L.up_bias = random({c.inter}, 0.1f, dt);
            L.down_bias = random({c.hidden}, 0.1f, dt);
          }
          if (c.qk_norm) {
            L.q_norm = random({c.dim}, 1.0f, dt);
            L.k_norm = random({c.dim}, 1.0f, dt);
          }
          if (c.out_norms) {
            L.attn_out_norm = random({c.hidden}, 1.0f, dt);
            L.mlp_out_norm = random({c.hidden}, 1.0f, dt);
          }
          if (c.olmo2) {
            L.input_norm = Tensor();
            L.post_norm = Tensor();
            L.q_full_norm = random({nq}, 1.0f, dt);
            L.k_full_norm = random({nkv}, 1.0f, dt);
          }
          L.k_cache = random({1, c.kv_heads, c.cap, c.dim}, 1.0f, dt);
          L.v_cache = random({1, c.kv_heads, c.cap, c.dim}, 1.0f, dt);
          L.window = l == c.layers - 1 ? c.window : 0;
          if (c.layer_rope && l == 0) {
            L.inv_freq = Tensor::zeros({c.dim / 2}, DType::f32).to(device_);
          } else if (c.layer_rope && l == 1) {
            L.inv_freq = random({c.dim / 2}, 0.3f, DType::f32);
            L.rope_scaling = 1.25f;
          }
          ops::DecoderLayerTensors C = L;
          C.k_cache = clone(L.k_cache);
          C.v_cache = clone(L.v_cache);
          fused_layers.push_back(L);
          composed_layers.push_back(C);
        }
        // Every 5th key masked, and a run of them long enough to cover whole splits.
        const int64_t width = c.past_on_device ? c.cap : c.past + 1;
        Tensor mask = Tensor::empty({1, width}, DType::i32);
        for (int64_t t = 0; t < width; ++t) {
          const bool masked = t < c.past && (t % 5 == 3 || (t >= 10 && t < 30));
          mask.data<int32_t>()[t] = t > c.past || masked ? 0 : 1;
        }
        const Tensor x = random({1, c.hidden}, 1.0f, dt);
        const test::DecodeStep step{c.heads,
                                    c.kv_heads,
                                    c.dim,
                                    c.past,
                                    1.0f / std::sqrt(static_cast<float>(c.dim)),
                                    Tensor::from_i64({c.past}, {1}).to(DType::i32).to(device_),
                                    test::rope_inv_freq(c.dim).to(device_),
                                    mask.to(device_),
                                    c.past_on_device
                                        ? Tensor::from_i64({c.past}, {1}).to(DType::i32).to(device_)
                                        : Tensor()};
        const auto args = [&](const std::vector<ops::DecoderLayerTensors>& layers,
                              const Tensor& xs) {
          ops::DecodeLayersArgs a = test::decode_args(xs, layers, step, dt);
          a.residual_scale = c.residual_scale;
          a.softcap = c.softcap;
          if (c.gelu) a.act = ops::GluActivation::gelu_tanh;
          return a;
        };
        Tensor fused_x = clone(x), composed_x = clone(x);
        // The fused run must really be the one-launch kernel: "require" turns a fallback into an
        // error.
        ::setenv("ANVIL_CUDA_DECODE_KERNEL", "require", 1);
        ::setenv("ANVIL_CUDA_DECODE_SYNC", sync, 1);
        if (c.splits) ::setenv("ANVIL_CUDA_DECODE_SPLITS", c.splits, 1);
        if (c.split_keys) ::setenv("ANVIL_CUDA_DECODE_SPLIT_KEYS", c.split_keys, 1);
        if (c.blocks) ::setenv("ANVIL_CUDA_DECODE_BLOCKS", c.blocks, 1);
        if (c.items) ::setenv("ANVIL_CUDA_DECODE_ITEMS", c.items, 1);
        EXPECT_NO_THROW(ops::decode_layers(args(fused_layers, fused_x))) << what;
        ::unsetenv("ANVIL_CUDA_DECODE_KERNEL");
        ::unsetenv("ANVIL_CUDA_DECODE_SPLITS");
        ::unsetenv("ANVIL_CUDA_DECODE_SPLIT_KEYS");
        ::unsetenv("ANVIL_CUDA_DECODE_BLOCKS");
        ::unsetenv("ANVIL_CUDA_DECODE_ITEMS");
        ops::composed_decode_layers(args(composed_layers, composed_x));

        // The two differ by float summation order only, amplified through bf16 roundings.
        const float scale = std::max(1.0f, max_abs(composed_x));
        EXPECT_LE(max_abs_diff(fused_x, composed_x), 0.03f * scale) << what;
        for (int64_t l = 0; l < c.layers; ++l) {
          const auto& F = fused_layers[static_cast<size_t>(l)];
          const auto& C = composed_layers[static_cast<size_t>(l)];
          const float ks = std::max(1.0f, max_abs(C.k_cache));
          EXPECT_LE(max_abs_diff(F.k_cache, C.k_cache), 0.03f * ks) << what << " layer " << l;
          EXPECT_LE(max_abs_diff(F.v_cache, C.v_cache), 0.03f * ks) << what << " layer " << l;
        }
      }
    }
  }
  if (caller_sync) {
    ::setenv("ANVIL_CUDA_DECODE_SYNC", restore.c_str(), 1);
  } else {
    ::unsetenv("ANVIL_CUDA_DECODE_SYNC");
  }
}

// Under ANVIL_CUDA_DECODE_KERNEL=require (the caller sets it), the one-launch kernel refuses
// `a` with an error naming `reason`; `stack` says what was offered.
template <class Kernel>
void expect_refused(const Kernel& kernel, const ops::DecodeLayersArgs& a, const std::string& reason,
                    const std::string& stack) {
  try {
    kernel(a);
    ADD_FAILURE() << stack << " was taken by the one-launch kernel";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

// The stack's shapes are checked before any launch: one the kernel cannot take (f32 here) runs
// composed, and "require" names the reason instead.
TEST_P(DecodeLayers, UnsupportedStacksRunComposedOrSayWhy) {
  const int64_t hidden = 64, inter = 128, heads = 2, kv = 1, dim = 32;
  ops::DecoderLayerTensors L;
  const auto f32 = [&](const Shape& s) { return random(s, 0.1f, DType::f32); };
  L.input_norm = f32({hidden});
  L.post_norm = f32({hidden});
  L.q = f32({heads * dim, hidden});
  L.k = f32({kv * dim, hidden});
  L.v = f32({kv * dim, hidden});
  L.o = f32({hidden, heads * dim});
  L.gate = f32({inter, hidden});
  L.up = f32({inter, hidden});
  L.down = f32({hidden, inter});
  L.k_cache = f32({1, kv, 8, dim});
  L.v_cache = f32({1, kv, 8, dim});
  const Tensor x = f32({1, hidden});
  const std::vector<ops::DecoderLayerTensors> stack{L};
  const test::DecodeStep step{heads,
                              kv,
                              dim,
                              0,
                              0.1f,
                              Tensor::from_i64({0}, {1}).to(DType::i32).to(device_),
                              random({dim / 2}, 1.0f, DType::f32),
                              Tensor::from_i64({1}, {1, 1}).to(DType::i32).to(device_),
                              Tensor()};
  const ops::DecodeLayersArgs a = test::decode_args(x, stack, step, DType::f32);
  EXPECT_NO_THROW(ops::decode_layers(a));
  // f32 has no registered one-launch kernel, so "require" cannot reach it: call the bf16 entry
  // point with an f32 stack through the registry's lookup instead.
  auto kernel =
      get_kernel<ops::DecodeLayersArgs>(ops::kDecodeLayers, GetParam(), DType::bf16, DType::bf16);
  ::setenv("ANVIL_CUDA_DECODE_KERNEL", "require", 1);
  expect_refused(kernel, a, "bf16/f16 activations only", "an f32 stack");
  // The CUDA kernel takes every extension on every layer (the residual multiplier, RoPE per
  // layer, Gemma's and OLMo 2's layers) and names what it hands back: a layer with an MLP
  // input norm but no attention input norm here.
  if (GetParam() == DeviceType::cuda) {
    ops::DecoderLayerTensors B = L;
    for (Tensor* w : {&B.input_norm, &B.post_norm, &B.q, &B.k, &B.v, &B.o, &B.gate, &B.up, &B.down,
                      &B.k_cache, &B.v_cache}) {
      *w = random(w->shape(), 0.1f);
    }
    B.input_norm = Tensor();
    B.attn_out_norm = random({hidden}, 1.0f);
    B.mlp_out_norm = random({hidden}, 1.0f);
    const std::vector<ops::DecoderLayerTensors> half_normed{B};
    const ops::DecodeLayersArgs g =
        test::decode_args(random({1, hidden}, 1.0f), half_normed, step, DType::bf16);
    ::unsetenv("ANVIL_CUDA_DECODE_KERNEL");
    EXPECT_NO_THROW(ops::decode_layers(g));
    ::setenv("ANVIL_CUDA_DECODE_KERNEL", "require", 1);
    const auto extended = get_kernel<ops::DecodeLayersArgs>(ops::kDecodeLayersExtended, GetParam(),
                                                            DType::bf16, DType::bf16);
    expect_refused(extended, g, "input norms on some layers or blocks only",
                   "a stack with half its input norms");
    // The wide kernel (Gemma's layers here) takes heads of a power of two of 8-value chunks
    // only; the head size is refused before any shape is read.
    ops::DecoderLayerTensors C = B;
    C.input_norm = random({hidden}, 1.0f);
    const std::vector<ops::DecoderLayerTensors> gemma_like{C};
    ops::DecodeLayersArgs w =
        test::decode_args(random({1, hidden}, 1.0f), gemma_like, step, DType::bf16);
    w.head_dim = 192;
    expect_refused(extended, w, "need a power of two of 8-value chunks", "heads of 192 values");
  }
  ::unsetenv("ANVIL_CUDA_DECODE_KERNEL");
}

INSTANTIATE_TEST_SUITE_P(Devices, DecodeLayers,
                         ::testing::Values(DeviceType::cpu, DeviceType::cuda, DeviceType::opencl),
                         [](const auto& param_info) {
                           return std::string(device_type_name(param_info.param));
                         });

}  // namespace
}  // namespace anvil
