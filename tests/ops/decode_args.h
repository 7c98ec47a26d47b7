// The arguments of a one-token decode_layers step for the op tests: the scratch tensors sized
// from the stack (hidden from x, the intermediate size from the first layer's gate), and
// RoPE's default inverse frequencies.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "anvil/tensor.h"
#include "ops/ops.h"

namespace anvil::test {

inline Tensor rope_inv_freq(int64_t dim) {
  std::vector<float> freq(static_cast<size_t>(dim / 2));
  for (size_t i = 0; i < freq.size(); ++i) {
    freq[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(dim));
  }
  return Tensor::from_f32(freq, {dim / 2});
}

struct DecodeStep {
  int64_t heads, kv_heads, dim, past;
  float scale;
  Tensor positions, inv_freq, key_mask, past_on_device;
};

/// decode_layers' arguments for batch 1, one token; scratch of `scratch_dtype` on x's device.
inline ops::DecodeLayersArgs decode_args(const Tensor& x,
                                         std::span<const ops::DecoderLayerTensors> layers,
                                         const DecodeStep& s, DType scratch_dtype) {
  const int64_t hidden = x.size(1), inter = layers[0].gate.size(0);
  const int64_t nq = s.heads * s.dim, nkv = s.kv_heads * s.dim;
  const auto scratch = [&](int64_t n) { return Tensor::empty({1, n}, scratch_dtype, x.device()); };
  return ops::DecodeLayersArgs{x,
                               layers,
                               1,
                               1,
                               s.heads,
                               s.kv_heads,
                               s.dim,
                               1e-6f,
                               s.scale,
                               s.positions,
                               s.inv_freq,
                               1.0f,
                               s.key_mask,
                               s.past,
                               s.past_on_device,
                               ops::AttentionImpl::sdpa,
                               scratch(hidden),
                               scratch(nq),
                               scratch(nkv),
                               scratch(nkv),
                               scratch(nq),
                               scratch(hidden),
                               scratch(inter),
                               scratch(inter)};
}

}  // namespace anvil::test
