// RoPE inverse frequencies (default, linear, llama3 and yarn), computed in float32 exactly as
// transformers' rope initialisation functions compute them.
#pragma once

#include <vector>

#include "anvil/config.h"

namespace anvil {

struct RopeFrequencies {
  std::vector<float> inv_freq;  ///< head_dim / 2 entries
  float attention_scaling = 1.0f;
};

RopeFrequencies rope_frequencies(const RopeConfig& rope, int64_t head_dim);

/// YaRN's factor on cos and sin: rope.attention_factor when set, else derived from the scaling
/// factor (and mscale / mscale_all_dim when both are set) as transformers derives it.
double yarn_attention_factor(const RopeConfig& rope);

}  // namespace anvil
