// RoPE inverse frequencies (default, linear, llama3, yarn, dynamic NTK and longrope), computed in
// float32 exactly as transformers' rope initialisation functions compute them.
#pragma once

#include <vector>

#include "anvil/config.h"

namespace anvil {

struct RopeFrequencies {
  std::vector<float> inv_freq;  ///< head_dim / 2 entries
  float attention_scaling = 1.0f;
};

RopeFrequencies rope_frequencies(const RopeConfig& rope, int64_t head_dim);

/// The frequencies for a step whose sequence has `seq_len` positions, for the scalings that
/// depend on it (rope_frequencies' otherwise). Dynamic NTK: the original ones up to
/// rope.original_max_position_embeddings, beyond it a base grown as
/// _compute_dynamic_ntk_parameters grows it (in float32, as from a position tensor); the decoder
/// follows transformers' dynamic_rope_update (recomputed whenever a step's sequence is longer
/// than any since the last reset, reset when a shorter-than-original one follows a longer).
/// longrope: the long factors past the original context, the short ones within it, per step.
std::vector<float> frequencies_for_length(const RopeConfig& rope, int64_t head_dim,
                                          int64_t seq_len);

/// YaRN's factor on cos and sin: rope.attention_factor when set, else derived from the scaling
/// factor (and mscale / mscale_all_dim when both are set) as transformers derives it.
double yarn_attention_factor(const RopeConfig& rope);

}  // namespace anvil
