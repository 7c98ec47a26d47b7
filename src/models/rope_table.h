// RoPE inverse frequencies (default and llama3-scaled), computed in float32 exactly as
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

}  // namespace anvil
